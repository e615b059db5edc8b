//! The router in process (`tower::ServiceExt::oneshot`): how refusals map
//! to statuses and JSON codes, and that every route of the table is routed.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::Router;
use http_body_util::BodyExt;
use tower::ServiceExt;

use crate::bfv::{PublicKey, SecretKey};
use crate::matching::{Identifier, Verifier};
use crate::server::cache::UserCache;
use crate::server::gallery::Galleries;
use crate::server::metrics::Metrics;
use crate::server::routes::ROUTES;
use crate::server::store::{AuditLog, Store};
use crate::server::test_dir::TestDir;

use super::{frame_keys, router, AppState, Limits, Quotas, Service};

/// A server's state over a fresh database in a directory of its own, 1:N
/// off, and that directory (removed when dropped).
fn state(tag: &str) -> (Arc<AppState>, TestDir) {
    state_with(tag, None)
}

/// As [`state`], 1:N on with a fresh service key and no gallery.
fn state_1ton(tag: &str) -> (Arc<AppState>, TestDir) {
    let params = crate::server::params();
    let sk = SecretKey::generate(&params).unwrap();
    let service = Service {
        keys: super::ServiceKeys::Local {
            pk: PublicKey::new(&sk).unwrap(),
            sk,
        },
        identifier: Identifier::new(&params, 128).unwrap(),
        galleries: Galleries::new(&params, 128, Quotas::DEFAULT),
        shards: None,
        mirror: None,
    };
    state_with(tag, Some(Arc::new(service)))
}

fn state_with(tag: &str, service: Option<Arc<Service>>) -> (Arc<AppState>, TestDir) {
    let dir = TestDir::new(&format!("router-{tag}"));
    let params = crate::server::params();
    let store = Arc::new(Store::open(&dir.join("blindmatch.db")).unwrap());
    let state = Arc::new(AppState {
        audit: AuditLog::start(store.clone(), None).unwrap(),
        cache: UserCache::new(4),
        limits: Limits::new(&params),
        quotas: Quotas::DEFAULT,
        verifier: Verifier::new(&params, 128).unwrap(),
        params,
        dim: 128,
        store: store.clone(),
        pool: rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap(),
        permits: super::Gate::new("work", 4, 32),
        slots: super::Gate::new("verify", 1, 64),
        www: dir.join("www"),
        pkg: dir.join("pkg"),
        face: None,
        service,
        metrics: Metrics::default(),
        body_timeout: std::time::Duration::from_secs(15),
        api_keys: Default::default(),
        metrics_public: false,
        tickets: crate::server::login::Tokens::new(
            &store,
            "ticket",
            std::time::Duration::from_secs(60),
            16,
            4,
        ),
        login: None,
        trusted_proxies: Vec::new(),
    });
    (state, dir)
}

/// The status and the JSON error code of one request, its body of the
/// route's type (JSON for identify, binary elsewhere).
async fn call(app: &Router, method: &str, path: &str, body: Vec<u8>) -> (StatusCode, String) {
    let media = if path.contains("/identify") {
        "application/json"
    } else {
        "application/octet-stream"
    };
    let req = Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", media)
        .body(Body::from(body))
        .unwrap();
    let resp = app.clone().oneshot(req).await.unwrap();
    let status = resp.status();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    let code = serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .and_then(|v| v["code"].as_str().map(str::to_string))
        .unwrap_or_default();
    (status, code)
}

/// A request (method, path, body) and the status and JSON code expected.
type Case = (
    &'static str,
    &'static str,
    Vec<u8>,
    StatusCode,
    &'static str,
);

/// `PATCH` on a gallery: 405 whether 1:N is on or off.
fn gallery_patch_refused() -> Case {
    (
        "PATCH",
        "/v1/galleries/g",
        vec![],
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
    )
}

/// Sends each case's request and checks its status and code.
async fn expect_all(app: &Router, cases: Vec<Case>) {
    for (method, path, body, status, code) in cases {
        assert_eq!(
            call(app, method, path, body).await,
            (status, code.to_string()),
            "{method} {path}"
        );
    }
}

#[tokio::test]
async fn refusals_map_to_their_status_and_code() {
    let (st, _dir) = state("refusals");
    let keys_limit = st.limits.keys;
    let app = router(st);
    let cases: Vec<Case> = vec![
        (
            "GET",
            "/v1/nothing",
            vec![],
            StatusCode::NOT_FOUND,
            "not_found",
        ),
        ("GET", "/v1", vec![], StatusCode::NOT_FOUND, "not_found"),
        // No `--face`: the face model is not served.
        (
            "GET",
            "/face/VERSION",
            vec![],
            StatusCode::NOT_FOUND,
            "not_found",
        ),
        (
            "PATCH",
            "/v1/users/carol/verify",
            b"x".to_vec(),
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
        ),
        (
            "POST",
            "/index.html",
            vec![],
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
        ),
        (
            "GET",
            "/v1/users/.hidden",
            vec![],
            StatusCode::BAD_REQUEST,
            "bad_name",
        ),
        (
            "PUT",
            "/v1/users/a%20b/keys",
            frame_keys(b"pk", None),
            StatusCode::BAD_REQUEST,
            "bad_name",
        ),
        (
            "PUT",
            "/v1/users/erin/keys",
            vec![0; keys_limit + 1],
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
        ),
        (
            "PUT",
            "/v1/users/erin/keys",
            frame_keys(&[], None),
            StatusCode::BAD_REQUEST,
            "malformed",
        ),
        (
            "PUT",
            "/v1/users/erin/keys",
            vec![1, 0],
            StatusCode::BAD_REQUEST,
            "truncated",
        ),
        (
            "PUT",
            "/v1/users/erin/template?count=x",
            vec![],
            StatusCode::BAD_REQUEST,
            "bad_query",
        ),
        (
            "DELETE",
            "/v1/users/nobody",
            vec![],
            StatusCode::NOT_FOUND,
            "unknown_user",
        ),
        (
            "POST",
            "/v1/galleries/g/identify",
            b"{".to_vec(),
            StatusCode::NOT_FOUND,
            "identify_disabled",
        ),
        gallery_patch_refused(),
    ];
    expect_all(&app, cases).await;
}

/// Each route of the table answers its methods (with anything but 404
/// `not_found` or 405) and refuses another with 405.
#[tokio::test]
async fn every_route_of_the_table_is_routed() {
    let (st, _dir) = state("table");
    let app = router(st);
    for route in ROUTES {
        let path = route
            .path
            .replace("{user}", "ann")
            .replace("{gallery}", "g")
            .replace("{index}", "0");
        for method in route.methods {
            let (status, code) = call(&app, method, &path, vec![]).await;
            assert_ne!(code, "not_found", "{method} {path}");
            assert_ne!(status, StatusCode::METHOD_NOT_ALLOWED, "{method} {path}");
        }
        let other = ["PATCH", "PUT", "POST"]
            .into_iter()
            .find(|m| !route.methods.contains(m))
            .unwrap();
        let (status, code) = call(&app, other, &path, vec![]).await;
        assert_eq!(
            (status, code.as_str()),
            (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed"),
            "{other} {path}"
        );
    }
}

/// With a service key the 1:N routes are the galleries' (a gallery that
/// does not exist is 404 `unknown_gallery`), and still refuse other methods
/// with 405.
#[tokio::test]
async fn one_to_n_routes_answer_with_a_service_key() {
    let (st, _dir) = state_1ton("1ton");
    let app = router(st);
    let cases: Vec<Case> = vec![
        (
            "GET",
            "/v1/galleries/g",
            vec![],
            StatusCode::NOT_FOUND,
            "unknown_gallery",
        ),
        (
            "DELETE",
            "/v1/galleries/g/templates/x",
            vec![],
            StatusCode::BAD_REQUEST,
            "bad_index",
        ),
        (
            "DELETE",
            "/v1/galleries/.g/templates/0",
            vec![],
            StatusCode::BAD_REQUEST,
            "bad_name",
        ),
        (
            "POST",
            "/v1/galleries/g/identify",
            br#"{"embedding": [], "top_k": 0}"#.to_vec(),
            StatusCode::BAD_REQUEST,
            "bad_top_k",
        ),
        gallery_patch_refused(),
    ];
    expect_all(&app, cases).await;
    let (status, _) = call(&app, "GET", "/v1/galleries", vec![]).await;
    assert_eq!(status, StatusCode::OK);
}
