//! 1:N (`serve --service-key`): the service public key and the galleries
//! under `/v1/galleries`.

use std::sync::Arc;

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};

use crate::matching::{pack, Gallery};

use super::extract::{BinaryBody, CiphertextBody, GalleryName};
use super::users::{check_count, CountQuery};
use super::wire::parse_fresh_ciphertext;
use super::{ApiError, ApiResult, AppState, ErrorCode, Service};

fn service(st: &AppState) -> ApiResult<&Service> {
    st.service.as_ref().ok_or_else(|| {
        ApiError::new(
            ErrorCode::IdentifyDisabled,
            "1:N identification is off: start the server with --service-key",
        )
    })
}

/// The service public key (1:N mode), for encrypting gallery templates.
pub(super) async fn service_public_key(State(st): State<Arc<AppState>>) -> ApiResult<Response> {
    let svc = service(&st)?;
    Ok((
        [(header::CONTENT_TYPE, "application/octet-stream")],
        svc.pk.to_bytes(),
    )
        .into_response())
}

#[derive(Debug, Serialize)]
pub(super) struct GalleryAdded {
    gallery: String,
    /// Index of the first template of this ciphertext in the gallery.
    first_index: usize,
    count: u32,
    templates: usize,
}

pub(super) async fn gallery_add(
    State(st): State<Arc<AppState>>,
    gallery: ApiResult<GalleryName>,
    query: Result<Query<CountQuery>, QueryRejection>,
    BinaryBody(body, _): CiphertextBody,
) -> ApiResult<(StatusCode, Json<GalleryAdded>)> {
    service(&st)?;
    let GalleryName(gallery) = gallery?;
    let count = check_count(&st, query)?;
    let params = st.params.clone();
    let body2 = body.clone();
    let ct = st
        .compute(move || parse_fresh_ciphertext(&params, "gallery template", &body2))
        .await??;
    let svc = service(&st)?;
    // Appends are serialized, so memory and disk agree on the order.
    let g = gallery.clone();
    let store = st.store.clone();
    let (first_index, templates) = svc
        .galleries
        .append(&gallery, ct, count, move || {
            store.add_gallery_template(&g, &body, count).map(drop)
        })
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(GalleryAdded {
            gallery,
            first_index,
            count,
            templates,
        }),
    ))
}

/// A gallery's counts, as `GET /v1/galleries[/{gallery}]` report them.
fn gallery_counts(name: &str, g: &Gallery) -> serde_json::Value {
    serde_json::json!({
        "gallery": name,
        "templates": g.len(),
        "erased": g.erased(),
        "ciphertexts": g.ciphertexts(),
    })
}

/// `GET /v1/galleries`: every gallery with its counts, by name.
pub(super) async fn gallery_list(
    State(st): State<Arc<AppState>>,
) -> ApiResult<Json<serde_json::Value>> {
    let galleries = service(&st)?.galleries.list(gallery_counts)?;
    Ok(Json(serde_json::json!({ "galleries": galleries })))
}

/// `GET /v1/galleries/{gallery}`: counts, no ciphertext bytes.
pub(super) async fn gallery_info(
    State(st): State<Arc<AppState>>,
    gallery: ApiResult<GalleryName>,
) -> ApiResult<Json<serde_json::Value>> {
    let svc = service(&st)?;
    let GalleryName(gallery) = gallery?;
    let info = svc.galleries.with(&gallery, |g| {
        let mut v = gallery_counts(&gallery, g);
        v["templates_per_ciphertext"] = pack::templates_per_ciphertext(&st.params, st.dim).into();
        v["memory_bytes"] = g.memory_bytes().into();
        Ok(v)
    })?;
    Ok(Json(info))
}

/// `DELETE /v1/galleries/{gallery}/templates/{index}`: erases one template
/// (its ciphertext is replaced by one without it); the others keep their
/// indices.
pub(super) async fn gallery_erase(
    State(st): State<Arc<AppState>>,
    gallery: ApiResult<GalleryName>,
    path: Result<Path<(String, String)>, axum::extract::rejection::PathRejection>,
) -> ApiResult<StatusCode> {
    let svc = service(&st)?;
    let GalleryName(gallery) = gallery?;
    let Path((_, index)) = path?;
    let index: usize = index.parse().map_err(|_| {
        ApiError::new(
            ErrorCode::BadIndex,
            "a template index is a non-negative integer",
        )
    })?;
    let store = st.store.clone();
    let g = gallery.clone();
    let left = svc
        .galleries
        .erase(&gallery, index, (&svc.sk, &svc.pk), move |seq, ct, mask| {
            store.erase_gallery_template(&g, seq, &ct, mask)
        })
        .await?;
    tracing::info!(gallery = %gallery, index, templates = left, "template erased");
    Ok(StatusCode::NO_CONTENT)
}

/// `DELETE /v1/galleries/{gallery}`: removes the gallery and its templates.
pub(super) async fn gallery_delete(
    State(st): State<Arc<AppState>>,
    gallery: ApiResult<GalleryName>,
) -> ApiResult<StatusCode> {
    let svc = service(&st)?;
    let GalleryName(gallery) = gallery?;
    let store = st.store.clone();
    let g = gallery.clone();
    svc.galleries
        .remove(&gallery, move || store.delete_gallery(&g))
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Deserialize)]
pub(super) struct IdentifyRequest {
    embedding: Vec<f32>,
    #[serde(default = "default_top_k")]
    top_k: usize,
}

fn default_top_k() -> usize {
    5
}

pub(super) async fn gallery_identify(
    State(st): State<Arc<AppState>>,
    gallery: ApiResult<GalleryName>,
    body: Result<Json<IdentifyRequest>, JsonRejection>,
) -> ApiResult<Json<serde_json::Value>> {
    service(&st)?;
    let GalleryName(gallery) = gallery?;
    let Json(req) = body?;
    if req.top_k == 0 || req.top_k > 100 {
        return Err(ApiError::new(
            ErrorCode::BadTopK,
            "top_k must be in 1..=100",
        ));
    }
    let st2 = st.clone();
    let g = gallery.clone();
    let matches = st
        .compute(move || -> ApiResult<_> {
            let svc = service(&st2)?;
            svc.galleries.with(&g, |gal| {
                Ok(svc
                    .identifier
                    .identify(gal, &svc.sk, &req.embedding, req.top_k)?)
            })
        })
        .await??;
    Ok(Json(serde_json::json!({
        "gallery": gallery,
        "matches": matches.iter().map(|m| serde_json::json!({
            "index": m.index, "score": m.score, "cosine": m.cosine,
        })).collect::<Vec<_>>(),
    })))
}
