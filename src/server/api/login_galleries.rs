//! 1:N in login mode: each gallery under its own key, which the decider
//! derives; this process holds no secret key. An identification is the
//! gallery's scores computed under encryption, masked and flooded as a 1:1
//! login's reply is ([`crate::matching::Verifier::for_decider`]), and sent
//! to the decider, which answers with the indices at or above its
//! threshold, signed; no score leaves the decider. An erasure goes through
//! the decider too, which sees only a masked plaintext.
//!
//! * `PUT /v1/galleries/{gallery}`: creates the gallery, its key epoch
//!   drawn at random and its keys fetched from the decider.
//! * `GET /v1/galleries/{gallery}/public-key`: the key a page encrypts
//!   templates and probes under, with the decider's statement of it.
//! * `POST /v1/galleries/{gallery}/templates?count=`: a template bundle
//!   (the packed templates and their one-hot ciphertexts) in; stored only
//!   once the decider finds every template well-formed
//!   ([`super::checks`]).
//! * `POST /v1/galleries/{gallery}/identify?aud=&nonce=&top_k=`: a probe
//!   bundle in, `{gallery, identification}` out; the probe's check replies
//!   go to the decider with the gallery's score replies, and a probe that
//!   is not well-formed gets 422 `malformed_probe`, no identification.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use axum::{Extension, Json};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::bfv::{Ciphertext, Plaintext, Prng};
use crate::error::MatchError;
use crate::matching::wellformed::{frame, Bundle, Packed};
use crate::server::decider::http::{KEY_STATEMENT_HEADER, MAX_TOP_K};
use crate::server::decider::replies::{self, Candidate};
use crate::server::login::{GalleryKey, GalleryKeys, IdentificationQuery, Login};
use crate::server::store::postgres::PgStore;
use crate::server::store::GalleryKeyRow;

use super::auth::Caller;
use super::extract::{BinaryBody, GalleryName, ProbeLimit};
use super::galleries::{octets, GalleryState};
use super::state::to_completion;
use super::wire::parse_fresh_ciphertext;
use super::{check_claim, ApiError, ApiResult, ErrorCode, ServiceKeys};

fn parts(st: &GalleryState) -> ApiResult<(&Arc<Login>, &GalleryKeys)> {
    match (&st.app.login, &st.service.keys) {
        (Some(login), ServiceKeys::Decider(keys)) => Ok((login, keys)),
        _ => Err(ApiError::login_disabled()),
    }
}

fn unknown_gallery() -> ApiError {
    ApiError::new(ErrorCode::UnknownGallery, "no such gallery")
}

#[derive(Debug, Serialize)]
pub(super) struct Created {
    gallery: String,
    epoch: u32,
}

/// `PUT /v1/galleries/{gallery}`: 201 with the new gallery's key epoch, or
/// 200 with the epoch of the one there is.
pub(super) async fn create(
    State(st): State<Arc<GalleryState>>,
    gallery: ApiResult<GalleryName>,
) -> ApiResult<(StatusCode, Json<Created>)> {
    let GalleryName(gallery) = gallery?;
    let (login, keys) = parts(&st)?;
    st.fresh(&gallery).await?;
    if let Some(k) = keys.get(&gallery) {
        let epoch = k.epoch;
        return Ok((StatusCode::OK, Json(Created { gallery, epoch })));
    }
    // Drawn at random, as a user's first epoch: a gallery deleted and
    // created again under its name gets an unrelated key.
    let mut raw = [0u8; 4];
    getrandom::fill(&mut raw).map_err(|_| ApiError::internal("no randomness for the key epoch"))?;
    let epoch = u32::from_le_bytes(raw);
    let (framed, statement) = login.decider.gallery_keys(&gallery, epoch).await?;
    let row = GalleryKeyRow {
        gallery: gallery.clone(),
        epoch,
        keys: framed.to_vec(),
        statement,
    };
    let params = st.app.params.clone();
    let checked = row.clone();
    let key = st
        .app
        .compute(move || GalleryKey::from_row(&params, &checked))
        .await?
        .map_err(|e| {
            tracing::error!(error = %e, "the decider's gallery keys");
            ApiError::new(
                ErrorCode::DeciderUnavailable,
                "the decider's gallery keys do not parse",
            )
        })?;
    let (svc, store, name) = (st.service.clone(), st.app.store.clone(), gallery.clone());
    let created = to_completion(async move {
        let held = svc.clone();
        let g = name.clone();
        svc.galleries
            .create(&name, move || {
                let stored = store.insert_gallery_key(&row)?;
                if let (true, ServiceKeys::Decider(keys)) = (stored, &held.keys) {
                    keys.insert(&g, key);
                }
                Ok(stored)
            })
            .await
    })
    .await?;
    if !created {
        // Another replica stored its key first: that one is the gallery's.
        st.fresh(&gallery).await?;
    }
    let epoch = keys.get(&gallery).map_or(epoch, |k| k.epoch);
    if created {
        tracing::info!(gallery = %gallery, epoch, "gallery created");
    }
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(Created { gallery, epoch })))
}

/// The gallery's public key, its epoch and the decider's statement.
pub(super) fn public_key(keys: &GalleryKeys, gallery: &str) -> ApiResult<Response> {
    let k = keys.get(gallery).ok_or_else(unknown_gallery)?;
    let mut resp = octets(k.pk.to_bytes());
    resp.headers_mut().insert(
        header::HeaderName::from_static("x-key-epoch"),
        HeaderValue::from(k.epoch),
    );
    if let Ok(v) = HeaderValue::from_str(&k.statement) {
        resp.headers_mut()
            .insert(header::HeaderName::from_static(KEY_STATEMENT_HEADER), v);
    }
    Ok(resp)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct IdentifyQuery {
    aud: String,
    nonce: String,
    #[serde(default = "default_top_k")]
    top_k: usize,
}

fn default_top_k() -> usize {
    5
}

#[derive(Debug, Serialize)]
pub(super) struct Identified {
    gallery: String,
    /// The decider's signed identification (a JWS).
    identification: String,
}

/// `POST /v1/galleries/{gallery}/identify?aud=&nonce=&top_k=`: the body is
/// a probe bundle encrypted under the gallery's public key.
pub(super) async fn identify(
    State(st): State<Arc<GalleryState>>,
    Extension(caller): Extension<Caller>,
    gallery: ApiResult<GalleryName>,
    query: Result<Query<IdentifyQuery>, QueryRejection>,
    BinaryBody(body, _): BinaryBody<ProbeLimit>,
) -> ApiResult<Json<Identified>> {
    let GalleryName(gallery) = gallery?;
    let (login, keys) = parts(&st)?;
    let Query(q) = query?;
    login.check_audience(&q.aud)?;
    check_claim("nonce", &q.nonce)?;
    if q.top_k == 0 || q.top_k > MAX_TOP_K {
        return Err(ApiError::new(
            ErrorCode::BadTopK,
            format!("top_k must be in 1..={MAX_TOP_K}"),
        ));
    }
    st.fresh(&gallery).await?;
    let key = keys.get(&gallery).ok_or_else(unknown_gallery)?;
    if let Caller::ApiKey(k) = caller {
        if let Err(seconds) = login.identify_rate.take(k, Instant::now()) {
            let mut e = ApiError::new(
                ErrorCode::Throttled,
                format!(
                    "this API key's identifications are over --identify-rate: retry in {seconds} s"
                ),
            );
            e.retry_after = Some(seconds);
            return Err(e);
        }
    }
    let (svc, app, k, g, checker) = (
        st.service.clone(),
        st.app.clone(),
        key.clone(),
        gallery.clone(),
        login.clone(),
    );
    let request = st
        .app
        .compute(move || -> ApiResult<Vec<u8>> {
            // Sizes and levels are the checker's to refuse.
            let bundle = Bundle::from_bytes_untrusted(&app.params, &body)
                .map_err(|e| ApiError::format("probe bundle", e))?;
            let probe = bundle.packed;
            let checks = checker
                .checker
                .check(&probe, Packed::Probe, &bundle.one_hot, &k.pk, &k.rk)?
                .items();
            let v = &app.verifier;
            // The product is symmetric: the probe takes the template's place
            // and is prepared once for the whole gallery.
            let prepared = v.prepare_template(&probe)?;
            let list = svc.galleries.with(&g, |gal| {
                let replies = gal
                    .stored()
                    .par_iter()
                    .enumerate()
                    .map(|(i, ct)| {
                        let mut rng = Prng::from_os()?;
                        let r =
                            v.verify_prepared_with(&prepared, ct, &k.pk, Some(&k.rk), &mut rng)?;
                        Ok(Candidate {
                            candidates: gal.candidates(i),
                            reply: v.compact(&r)?,
                        })
                    })
                    .collect::<Result<Vec<_>, MatchError>>()?;
                Ok(replies::to_bytes(&replies))
            })?;
            // The reply list, then the probe's check replies.
            Ok(frame(
                std::iter::once(list.as_slice()).chain(checks.iter().map(|c| c.as_slice())),
            ))
        })
        .await??;
    let query = IdentificationQuery {
        gallery: &gallery,
        epoch: key.epoch,
        top_k: q.top_k,
        aud: &q.aud,
        nonce: &q.nonce,
    };
    let identification = login.decider.identification(&query, request).await?;
    tracing::info!(gallery = %gallery, "identification signed");
    Ok(Json(Identified {
        gallery,
        identification,
    }))
}

/// Erases template `index` through the decider: the ciphertext holding it
/// is masked with a uniform plaintext `R` on every coefficient (so the
/// decider decrypts uniform values), the decider returns a fresh
/// encryption with the template's block zeroed, and `R` (its block zeroed
/// too) is taken off here.
pub(super) async fn erase(st: &GalleryState, gallery: &str, index: usize) -> ApiResult<usize> {
    let (login, keys) = parts(st)?;
    let key = keys.get(gallery).ok_or_else(unknown_gallery)?;
    let (login, app, svc) = (login.clone(), st.app.clone(), st.service.clone());
    let (store, g) = (st.app.store.clone(), gallery.to_string());
    to_completion(async move {
        let name = g.clone();
        svc.galleries
            .erase_with(
                &name,
                index,
                |ct, block| without_block(login, app, key, name.clone(), ct, block),
                move |seq, ct, mask| store.erase_gallery_template(&g, seq, &ct, mask),
            )
            .await
    })
    .await
}

/// [`erase`] where replicas share the database: the stored ciphertext's
/// row is what is erased, and written back only if no other write changed
/// it meanwhile (`super::replicated::erase_row`).
pub(super) async fn erase_stored(st: &GalleryState, gallery: &str, index: usize) -> ApiResult<()> {
    let (login, keys) = parts(st)?;
    let key = keys.get(gallery).ok_or_else(unknown_gallery)?;
    let (login, app, g) = (login.clone(), st.app.clone(), gallery.to_string());
    let per = crate::matching::pack::templates_per_ciphertext(&app.params, app.dim);
    super::replicated::erase_row(
        st,
        gallery,
        index,
        per,
        true,
        move |one, local| async move {
            let (ct, block) = one.holding(local)?;
            let replacement = without_block(login, app, key, g, ct.clone(), block).await?;
            Ok(one.erasure_with(local, replacement)?)
        },
    )
    .await
}

/// A fresh encryption of `ct` with template block `block` zeroed, made
/// through the decider (which sees `ct` masked with a uniform plaintext).
async fn without_block(
    login: Arc<Login>,
    app: Arc<super::AppState>,
    key: Arc<GalleryKey>,
    gallery: String,
    ct: Ciphertext,
    block: usize,
) -> ApiResult<Ciphertext> {
    let (params, pk, dim) = (app.params.clone(), key.clone(), app.dim);
    let (masked, mask) = app
        .compute(move || mask(&params, &pk.pk, ct, block * dim..(block + 1) * dim))
        .await??;
    let answer = login
        .decider
        .erasure(&gallery, key.epoch, block, masked)
        .await?;
    let params = app.params.clone();
    app.compute(move || -> ApiResult<Ciphertext> {
        let mut ct =
            parse_fresh_ciphertext(&params, "the decider's erasure", &answer).map_err(|e| {
                tracing::error!(error = %e.message, "the decider's erasure");
                ApiError::new(
                    ErrorCode::DeciderUnavailable,
                    "the decider's erasure does not parse",
                )
            })?;
        crate::bfv::Evaluator::new(&params)
            .add_plain_assign(&mut ct, &mask)
            .map_err(MatchError::from)?;
        Ok(ct)
    })
    .await?
}

/// Reads `gallery`'s key from the database into `keys` (another replica
/// created the gallery, or created it again after a deletion), and the
/// gallery into memory with it. Nothing when it has no key.
pub(super) fn load_key(
    st: &GalleryState,
    pg: &PgStore,
    keys: &GalleryKeys,
    gallery: &str,
) -> ApiResult<()> {
    tokio::task::block_in_place(|| {
        let Some(row) = pg.gallery_key(gallery)? else {
            return Ok(());
        };
        let key = GalleryKey::from_row(&st.app.params, &row)
            .map_err(|e| ApiError::new(ErrorCode::CorruptStore, e))?;
        keys.insert(gallery, key);
        st.service.galleries.ensure(gallery)
    })
}

/// `ct` plus a fresh encryption under `pk` of a uniform plaintext `R`, and
/// what takes `R` off again outside `block`: `-R` there, zero in it.
fn mask(
    params: &crate::bfv::Params,
    pk: &crate::bfv::PublicKey,
    ct: Ciphertext,
    block: std::ops::Range<usize>,
) -> Result<(Vec<u8>, Plaintext), MatchError> {
    let mut rng = Prng::from_os()?;
    let t = params.plaintext_modulus();
    let mut r = vec![0u32; params.degree()];
    crate::bfv::sample::fill_uniform(&mut rng, t, &mut r);
    let mut masked = ct;
    let fresh = pk.encrypt_with(&Plaintext::from_coeffs(params, &r)?, &mut rng)?;
    crate::bfv::Evaluator::new(params).add_assign(&mut masked, &fresh)?;
    for (i, c) in r.iter_mut().enumerate() {
        *c = if block.contains(&i) { 0 } else { (t - *c) % t };
    }
    Ok((masked.to_bytes(), Plaintext::from_coeffs(params, &r)?))
}
