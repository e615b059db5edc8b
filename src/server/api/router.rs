//! The router: every route, its body limit, the fallbacks and the
//! request-logging layer.

use std::sync::Arc;

use axum::extract::{DefaultBodyLimit, Request};
use axum::middleware;
use axum::routing::{delete, get, post, put};
use axum::Router;

use super::extract::drain;
use super::{galleries, log, meta, static_files, users, verify, ApiError, AppState};

/// Largest JSON body (identify).
const JSON_LIMIT: usize = 64 * 1024;

/// Builds the router.
pub fn router(state: Arc<AppState>) -> Router {
    // Binary routes enforce `state.limits` in their body extractor; JSON
    // routes use axum's DefaultBodyLimit.
    Router::new()
        .route("/healthz", get(meta::healthz))
        .route("/metrics", get(meta::metrics))
        .route("/v1/params", get(meta::params_info))
        .route(
            "/v1/users/{user}",
            get(users::user_info).delete(users::delete_user),
        )
        .route("/v1/users/{user}/keys", put(users::put_keys))
        .route("/v1/users/{user}/template", put(users::put_template))
        .route("/v1/users/{user}/verify", post(verify::verify))
        .route("/v1/galleries", get(galleries::gallery_list))
        .route(
            "/v1/galleries/{gallery}",
            get(galleries::gallery_info).delete(galleries::gallery_delete),
        )
        .route(
            "/v1/galleries/{gallery}/templates",
            post(galleries::gallery_add),
        )
        .route(
            "/v1/galleries/{gallery}/templates/{index}",
            delete(galleries::gallery_erase),
        )
        .route("/v1/service/public-key", get(galleries::service_public_key))
        .route(
            "/v1/galleries/{gallery}/identify",
            post(galleries::gallery_identify).layer(DefaultBodyLimit::max(JSON_LIMIT)),
        )
        .fallback(static_files::static_files)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(JSON_LIMIT))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            log::request_log,
        ))
        .with_state(state)
}

async fn method_not_allowed(req: Request) -> ApiError {
    drain(req.into_body()).await;
    ApiError::method_not_allowed()
}
