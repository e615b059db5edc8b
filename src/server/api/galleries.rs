//! 1:N (`serve --service-key`): the service public key and the galleries
//! under `/v1/galleries`, as a router of their own, merged only when the
//! server has a service key ([`disabled_router`] answers otherwise).

use std::sync::Arc;

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{DefaultBodyLimit, FromRef, Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};

use crate::matching::{pack, Gallery};
use crate::server::routes;

use super::extract::{BinaryBody, CiphertextBody, GalleryName};
use super::router::JSON_LIMIT;
use super::users::{check_count, CountQuery};
use super::wire::parse_fresh_ciphertext;
use super::{ApiError, ApiResult, AppState, ErrorCode, Limits, Service};

/// The 1:N routes' state: the server's, and the service key with the
/// galleries (present: these routes are routed only with them).
#[derive(Debug)]
pub struct GalleryState {
    pub app: Arc<AppState>,
    pub service: Arc<Service>,
}

impl FromRef<Arc<GalleryState>> for Limits {
    fn from_ref(st: &Arc<GalleryState>) -> Self {
        st.app.limits
    }
}

/// The 1:N routes over `service`.
pub(super) fn router(app: Arc<AppState>, service: Arc<Service>) -> Router<Arc<AppState>> {
    Router::new()
        .route(routes::SERVICE_PUBLIC_KEY, get(service_public_key))
        .route(routes::GALLERIES, get(gallery_list))
        .route(routes::GALLERY, get(gallery_info).delete(gallery_delete))
        .route(routes::GALLERY_TEMPLATES, post(gallery_add))
        .route(routes::GALLERY_TEMPLATE, delete(gallery_erase))
        .route(
            routes::GALLERY_IDENTIFY,
            post(gallery_identify).layer(DefaultBodyLimit::max(JSON_LIMIT)),
        )
        .with_state(Arc::new(GalleryState { app, service }))
}

/// The same routes without `--service-key`: 404 `identify_disabled`, after
/// reading the body as the route with galleries would (so a body over the
/// limit is still 413).
pub(super) fn disabled_router() -> Router<Arc<AppState>> {
    Router::new()
        .route(routes::SERVICE_PUBLIC_KEY, get(disabled))
        .route(routes::GALLERIES, get(disabled))
        .route(routes::GALLERY, get(disabled).delete(disabled))
        .route(routes::GALLERY_TEMPLATES, post(disabled_upload))
        .route(routes::GALLERY_TEMPLATE, delete(disabled))
        .route(
            routes::GALLERY_IDENTIFY,
            post(disabled_json).layer(DefaultBodyLimit::max(JSON_LIMIT)),
        )
}

fn identify_disabled() -> ApiError {
    ApiError::new(
        ErrorCode::IdentifyDisabled,
        "1:N identification is off: start the server with --service-key",
    )
}

async fn disabled() -> ApiError {
    identify_disabled()
}

async fn disabled_upload(_: CiphertextBody) -> ApiError {
    identify_disabled()
}

async fn disabled_json(_: Result<Json<IgnoredAny>, JsonRejection>) -> ApiError {
    identify_disabled()
}

/// The service public key (1:N mode), for encrypting gallery templates.
async fn service_public_key(State(st): State<Arc<GalleryState>>) -> Response {
    (
        [(header::CONTENT_TYPE, "application/octet-stream")],
        st.service.pk.to_bytes(),
    )
        .into_response()
}

#[derive(Debug, Serialize)]
pub(super) struct GalleryAdded {
    gallery: String,
    /// Index of the first template of this ciphertext in the gallery.
    first_index: usize,
    count: u32,
    templates: usize,
}

async fn gallery_add(
    State(st): State<Arc<GalleryState>>,
    gallery: ApiResult<GalleryName>,
    query: Result<Query<CountQuery>, QueryRejection>,
    BinaryBody(body, _): CiphertextBody,
) -> ApiResult<(StatusCode, Json<GalleryAdded>)> {
    let GalleryName(gallery) = gallery?;
    let count = check_count(&st.app, query)?;
    let params = st.app.params.clone();
    let body2 = body.clone();
    let ct = st
        .app
        .compute(move || parse_fresh_ciphertext(&params, "gallery template", &body2))
        .await??;
    // Appends are serialized, so memory and disk agree on the order.
    let g = gallery.clone();
    let store = st.app.store.clone();
    let (first_index, templates) = st
        .service
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
async fn gallery_list(State(st): State<Arc<GalleryState>>) -> ApiResult<Json<serde_json::Value>> {
    let galleries = st.service.galleries.list(gallery_counts)?;
    Ok(Json(serde_json::json!({ "galleries": galleries })))
}

/// `GET /v1/galleries/{gallery}`: counts, no ciphertext bytes.
async fn gallery_info(
    State(st): State<Arc<GalleryState>>,
    gallery: ApiResult<GalleryName>,
) -> ApiResult<Json<serde_json::Value>> {
    let GalleryName(gallery) = gallery?;
    let (params, dim) = (&st.app.params, st.app.dim);
    let info = st.service.galleries.with(&gallery, |g| {
        let mut v = gallery_counts(&gallery, g);
        v["templates_per_ciphertext"] = pack::templates_per_ciphertext(params, dim).into();
        v["memory_bytes"] = g.memory_bytes().into();
        Ok(v)
    })?;
    Ok(Json(info))
}

/// `DELETE /v1/galleries/{gallery}/templates/{index}`: erases one template
/// (its ciphertext is replaced by one without it); the others keep their
/// indices.
async fn gallery_erase(
    State(st): State<Arc<GalleryState>>,
    gallery: ApiResult<GalleryName>,
    path: Result<Path<(String, String)>, axum::extract::rejection::PathRejection>,
) -> ApiResult<StatusCode> {
    let GalleryName(gallery) = gallery?;
    let Path((_, index)) = path?;
    let index: usize = index.parse().map_err(|_| {
        ApiError::new(
            ErrorCode::BadIndex,
            "a template index is a non-negative integer",
        )
    })?;
    let svc = &st.service;
    let store = st.app.store.clone();
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
async fn gallery_delete(
    State(st): State<Arc<GalleryState>>,
    gallery: ApiResult<GalleryName>,
) -> ApiResult<StatusCode> {
    let GalleryName(gallery) = gallery?;
    let store = st.app.store.clone();
    let g = gallery.clone();
    st.service
        .galleries
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

async fn gallery_identify(
    State(st): State<Arc<GalleryState>>,
    gallery: ApiResult<GalleryName>,
    body: Result<Json<IdentifyRequest>, JsonRejection>,
) -> ApiResult<Json<serde_json::Value>> {
    let GalleryName(gallery) = gallery?;
    let Json(req) = body?;
    if req.top_k == 0 || req.top_k > 100 {
        return Err(ApiError::new(
            ErrorCode::BadTopK,
            "top_k must be in 1..=100",
        ));
    }
    let svc = st.service.clone();
    let g = gallery.clone();
    let matches = st
        .app
        .compute(move || -> ApiResult<_> {
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
