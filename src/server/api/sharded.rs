//! 1:N over sharded galleries (`serve --shards`, `crate::server::shards`):
//! writes straight to the database from whichever replica takes them, and
//! identifications fanned out to every shard's holder and merged.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures_util::future::join_all;

use crate::matching::Match;
use crate::server::gallery::Counts;
use crate::server::shards::peer::{self, ShardAnswer, ShardQuery};
use crate::server::shards::result::{
    self, Expected, Scored, ShardResult, ShardedIdentification, SHARDED_IDENTIFICATION_TYP,
    SHARD_RESULT_TYP,
};
use crate::server::shards::Sharding;
use crate::server::store::postgres::PgStore;
use crate::server::store::{now_millis, now_secs, StoreError};
use crate::server::verdict::keys::{Jwk, JwkSet};

use super::extract::check_name;
use super::galleries::GalleryState;
use super::state::{db, to_completion};
use super::{replicated, ApiError, ApiResult, ErrorCode, ServiceKeys};

/// A PostgreSQL call on the sharded cluster's store.
async fn pg<T, F>(sh: &Arc<Sharding>, f: F) -> ApiResult<T>
where
    T: Send + 'static,
    F: FnOnce(&PgStore) -> Result<T, StoreError> + Send + 'static,
{
    replicated::pg(sh.store(), f).await
}

fn unknown_gallery() -> ApiError {
    ApiError::new(ErrorCode::UnknownGallery, "no such gallery")
}

/// Appends a gallery ciphertext as the gallery's next row. Returns the
/// index of its first template and the gallery's template count.
pub(super) async fn add(
    st: &GalleryState,
    sh: &Arc<Sharding>,
    gallery: &str,
    body: Bytes,
    count: u32,
) -> ApiResult<(usize, usize)> {
    let per = sh.per() as usize;
    replicated::append(st, gallery, body, count, st.app.quotas, per).await
}

/// Every gallery's counts (one when `gallery` is named), as stored; the
/// memory is what this replica holds of it.
pub(super) async fn counts(
    sh: &Arc<Sharding>,
    gallery: Option<&str>,
) -> ApiResult<Vec<(String, Counts)>> {
    let g = gallery.map(str::to_string);
    let rows = pg(sh, move |s| s.stored_counts(g.as_deref())).await?;
    Ok(rows
        .into_iter()
        .map(|r| {
            let memory_bytes = sh.memory_bytes(&r.gallery);
            let c = Counts {
                ciphertexts: r.ciphertexts,
                templates: r.templates,
                erased: r.erased,
                memory_bytes,
            };
            (r.gallery, c)
        })
        .collect())
}

/// Erases template `index`: its ciphertext is read from the database,
/// decrypted, the template's block zeroed, encrypted again and written
/// back if no other write changed it meanwhile. Returns the gallery's
/// remaining template count.
pub(super) async fn erase(
    st: &GalleryState,
    sh: &Arc<Sharding>,
    gallery: &str,
    index: usize,
) -> ApiResult<usize> {
    replicated::erase_under_service_key(st, gallery, index, sh.per() as usize).await?;
    let left = counts(sh, Some(gallery)).await?;
    Ok(left.first().map_or(0, |(_, c)| c.templates))
}

/// Deletes a gallery's rows (its holders forget it at their next look).
pub(super) async fn delete(sh: &Arc<Sharding>, gallery: &str) -> ApiResult<()> {
    let g = gallery.to_string();
    let store = sh.store().clone();
    to_completion(async move {
        if db(&store, move |s| s.delete_gallery(&g)).await? {
            Ok(())
        } else {
            Err(unknown_gallery())
        }
    })
    .await
}

/// This replica's result for shard `shard` of `gallery`: caught up to the
/// database, ranked, signed.
async fn local_result(
    st: &GalleryState,
    sh: &Arc<Sharding>,
    gallery: &str,
    shard: u32,
    q: ShardQuery,
) -> ApiResult<String> {
    let held = sh.held(shard).ok_or_else(|| {
        ApiError::new(
            ErrorCode::ShardUnavailable,
            format!("this replica does not hold shard {shard}"),
        )
    })?;
    let rev = sh.catch_up(&held, gallery).await?.unwrap_or(0);
    let (svc, held2, g) = (st.service.clone(), held.clone(), gallery.to_string());
    let (embedding, top_k) = (q.embedding, q.top_k);
    let local: Vec<Match> = st
        .app
        .compute(move || -> ApiResult<_> {
            let ServiceKeys::Local { sk, .. } = &svc.keys else {
                return Err(ApiError::internal("no service key"));
            };
            // Validates the probe even where the shard has no ciphertext.
            svc.identifier.prepare_probe(&embedding)?;
            if held2.galleries.counts(&g).is_err() {
                return Ok(Vec::new());
            }
            held2.galleries.with(&g, |gal| {
                Ok(svc.identifier.identify(gal, sk, &embedding, top_k)?)
            })
        })
        .await??;
    let claims = ShardResult {
        iss: sh.config.id.clone(),
        sub: gallery.to_string(),
        shard,
        shards: sh.config.shards,
        nonce: q.nonce,
        rev,
        iat: now_secs() as u64,
        matches: local
            .iter()
            .map(|m| Scored {
                index: sh.global_index(shard, m.index),
                score: m.score,
            })
            .collect(),
    };
    Ok(sh.key().sign_typed(SHARD_RESULT_TYP, &claims))
}

/// `POST /v1/galleries/{gallery}/shards/{shard}/identify` (API key): this
/// replica's signed result for one shard, asked by the replica merging.
pub(super) async fn shard_identify(
    State(st): State<Arc<GalleryState>>,
    Path((gallery, shard)): Path<(String, String)>,
    body: Result<Json<ShardQuery>, JsonRejection>,
) -> ApiResult<Json<ShardAnswer>> {
    check_name(&gallery)?;
    let sh = sharding(&st)?;
    let shard: u32 = shard
        .parse()
        .ok()
        .filter(|s| *s < sh.config.shards)
        .ok_or_else(|| {
            ApiError::new(
                ErrorCode::BadIndex,
                format!("a shard is a number below {}", sh.config.shards),
            )
        })?;
    let Json(q) = body?;
    check_top_k(q.top_k)?;
    let result = local_result(&st, &sh, &gallery, shard, q).await?;
    Ok(Json(ShardAnswer { result }))
}

pub(super) fn check_top_k(top_k: usize) -> ApiResult<()> {
    if top_k == 0 || top_k > 100 {
        return Err(ApiError::new(
            ErrorCode::BadTopK,
            "top_k must be in 1..=100",
        ));
    }
    Ok(())
}

fn sharding(st: &GalleryState) -> ApiResult<Arc<Sharding>> {
    st.service.shards.clone().ok_or_else(|| {
        ApiError::new(
            ErrorCode::NotFound,
            "this server's galleries are not sharded (serve --shards)",
        )
    })
}

/// An identification over every shard: each shard's holder (this replica
/// included) ranks its part, the results are checked against the holders'
/// leased keys and merged. Returns the matches and the signed merged
/// identification.
pub(super) async fn identify(
    st: &GalleryState,
    sh: &Arc<Sharding>,
    gallery: &str,
    embedding: Vec<f32>,
    top_k: usize,
    headers: &HeaderMap,
) -> ApiResult<(Vec<Match>, String)> {
    let g = gallery.to_string();
    let (rev, holders) = pg(sh, move |s| {
        Ok((s.gallery_rev(&g)?, s.shard_holders(now_millis())?))
    })
    .await?;
    let rev = rev.ok_or_else(unknown_gallery)?;
    if let Some((s, _)) = holders.iter().find(|(_, h)| h.is_none()) {
        return Err(ApiError::new(
            ErrorCode::ShardUnavailable,
            format!("shard {s} has no live holder yet: retry shortly"),
        ));
    }
    let mut nonce = [0u8; 16];
    getrandom::fill(&mut nonce).map_err(|e| ApiError::internal(&e.to_string()))?;
    let nonce: String = nonce.iter().map(|b| format!("{b:02x}")).collect();
    let authorization = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let calls = holders.iter().map(|(shard, holder)| {
        let holder = holder.as_ref().expect("checked above");
        let q = ShardQuery {
            embedding: embedding.clone(),
            top_k,
            nonce: nonce.clone(),
            rev,
        };
        async move {
            if holder.id == sh.config.id {
                return local_result(st, sh, gallery, *shard, q).await;
            }
            peer::shard_identify(&holder.id, gallery, *shard, &q, authorization)
                .await
                .map(|a| a.result)
                .map_err(|e| match e.code.as_deref() {
                    // The probe's own faults, as the holder found them.
                    Some(c @ ("bad_input" | "bad_top_k" | "unknown_gallery")) => {
                        let code = super::ErrorCode::ALL
                            .into_iter()
                            .find(|k| k.as_str() == c)
                            .unwrap_or(ErrorCode::BadInput);
                        ApiError::new(code, e.message)
                    }
                    _ => {
                        tracing::warn!(shard, holder = %holder.id, error = %e.message, "shard holder");
                        ApiError::new(
                            ErrorCode::ShardUnavailable,
                            format!("the holder of shard {shard} did not answer: retry shortly"),
                        )
                    }
                })
        }
    });
    let answers = join_all(calls).await;
    let per = sh.per();
    let mut merged: Vec<Scored> = Vec::new();
    let mut digests = Vec::with_capacity(answers.len());
    for ((shard, holder), jws) in holders.iter().zip(answers) {
        let jws = jws?;
        let holder = holder.as_ref().expect("checked above");
        let expected = Expected {
            holder: &holder.id,
            holder_key: &holder.public_key,
            gallery,
            shard: *shard,
            shards: sh.config.shards,
            nonce: &nonce,
            rev,
            top_k,
            per,
        };
        let r = result::check(&jws, &expected).map_err(|e| {
            tracing::error!(shard, holder = %holder.id, error = %e, "shard result refused");
            ApiError::new(
                ErrorCode::BadShardResult,
                format!("shard {shard}'s result does not check: {e}"),
            )
        })?;
        merged.extend(r.matches);
        digests.push(result::digest(&jws));
    }
    result::rank(&mut merged, top_k);
    let quantizer = crate::matching::Quantizer::new(&st.app.params, st.app.dim)?;
    let matches = merged
        .iter()
        .map(|m| Match {
            index: m.index as usize,
            score: m.score,
            cosine: quantizer.cosine(m.score),
        })
        .collect();
    let claims = ShardedIdentification {
        iss: sh.config.id.clone(),
        sub: gallery.to_string(),
        iat: now_secs() as u64,
        shards: sh.config.shards,
        rev,
        matches: merged,
        results: digests,
    };
    Ok((
        matches,
        sh.key().sign_typed(SHARDED_IDENTIFICATION_TYP, &claims),
    ))
}

/// `GET /v1/cluster/keys`: the JWK set of the replicas whose lease is live
/// (their keys sign shard results and merged identifications).
pub(super) async fn cluster_keys(State(st): State<Arc<GalleryState>>) -> ApiResult<Response> {
    let sh = sharding(&st)?;
    let live = pg(&sh, |s| s.live_replicas(now_millis())).await?;
    let keys = live
        .iter()
        .filter_map(|r| <[u8; 32]>::try_from(r.public_key.as_slice()).ok())
        .map(|k| Jwk::of(&k))
        .collect();
    Ok((
        [
            (header::CACHE_CONTROL, "no-store"),
            (header::CONTENT_TYPE, "application/jwk-set+json"),
        ],
        Json(JwkSet { keys }),
    )
        .into_response())
}
