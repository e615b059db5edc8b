//! The router: the routes of [`crate::server::routes::ROUTES`], their body
//! limits and deadline, the fallbacks, the request-logging layer, and (as
//! `serve` runs it) the browser policy: the `Host` check and CORS.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{DefaultBodyLimit, Request, State};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{get, post, put};
use axum::Router;

use crate::server::routes;

use super::extract::drain;
use super::origin::{self, BrowserPolicy};
use super::{
    auth, deadline, galleries, log, login, meta, static_files, users, verify, ApiError, AppState,
};

/// Largest JSON body (identify).
pub(super) const JSON_LIMIT: usize = 64 * 1024;

/// Builds the router without the browser policy (any `Host`, no CORS), for
/// requests made in process. The 1:N routes are the galleries' own router
/// with a service key, and answer 404 `identify_disabled` without one.
pub fn router(state: Arc<AppState>) -> Router {
    build(state, None)
}

/// The router `serve` runs: [`router`] behind `policy` (the `Host` check,
/// then CORS if origins are listed), both inside the request log.
pub fn guarded_router(state: Arc<AppState>, policy: &BrowserPolicy) -> Router {
    build(state, Some(policy))
}

fn build(state: Arc<AppState>, policy: Option<&BrowserPolicy>) -> Router {
    let one_to_n = match &state.service {
        Some(service) => galleries::router(state.clone(), service.clone()),
        None => galleries::disabled_router(),
    };
    // Binary routes enforce `state.limits` in their body extractor; JSON
    // routes use axum's DefaultBodyLimit. Every body has the deadline.
    let mut app = Router::new()
        .route(routes::HEALTHZ, get(meta::healthz))
        .route(routes::METRICS, get(meta::metrics))
        .route(routes::PARAMS, get(meta::params_info))
        .route(
            routes::USER,
            get(users::user_info).delete(users::delete_user),
        )
        .route(routes::USER_KEYS, put(users::put_keys))
        .route(routes::USER_TEMPLATE, put(users::put_template))
        .route(routes::USER_VERIFY, post(verify::verify))
        .route(routes::USER_TICKETS, post(login::issue_ticket))
        .route(routes::USER_PUBLIC_KEY, get(login::public_key))
        .route(routes::USER_CHALLENGES, post(login::issue_challenge))
        .route(routes::USER_LOGIN, post(login::login_user))
        .route(routes::JWKS, get(login::jwks))
        .merge(one_to_n)
        // Every route's credential (`auth::access`), checked once routed.
        .route_layer(middleware::from_fn_with_state(state.clone(), auth::guard))
        .fallback(static_files::static_files)
        // After the merge: it reaches the 1:N routes too.
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(JSON_LIMIT));
    if let Some(cors) = policy.and_then(BrowserPolicy::cors) {
        app = app.layer(cors);
    }
    let guard = Guard {
        body_timeout: state.body_timeout,
        policy: policy.cloned(),
    };
    app.layer(middleware::from_fn_with_state(guard, guarded))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            log::request_log,
        ))
        .with_state(state)
}

/// What every request passes inside the request log: its body bounded by
/// the deadline (`deadline`), then, as `serve` runs it, the `Host` check
/// (whose refusal discards the body, so it is bounded too). One middleware
/// for both: each layer costs a hand-off on every request.
#[derive(Clone)]
struct Guard {
    body_timeout: Duration,
    policy: Option<BrowserPolicy>,
}

async fn guarded(State(g): State<Guard>, req: Request, next: Next) -> Response {
    let req = deadline::bound(req, g.body_timeout);
    let req = match &g.policy {
        Some(policy) => match origin::check_host(policy, req).await {
            Ok(req) => req,
            Err(refused) => return refused,
        },
        None => req,
    };
    next.run(req).await
}

async fn method_not_allowed(req: Request) -> ApiError {
    drain(req.into_body()).await;
    ApiError::method_not_allowed()
}
