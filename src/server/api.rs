//! The HTTP API (docs/API.md): routes, handlers, JSON errors, static files.
//!
//! Handlers never run homomorphic work or SQLite on a thread that is doing
//! the runtime's I/O: a verification computes on its own thread after handing
//! the I/O duties to another ([`AppState::compute_here`]), other parsing and
//! 1:N matching go to the rayon pool ([`AppState::compute`]), store calls to
//! tokio's blocking pool; a verification's audit row is journaled by its own
//! thread (one `write`) and moved into the database by the audit flusher.

use std::path::{Path as FsPath, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::extract::{DefaultBodyLimit, Path, Query, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use tracing::Instrument;

use crate::bfv::{Ciphertext, Params, PublicKey, RelinKey, SecretKey};
use crate::error::{FormatError, MatchError};
use crate::matching::{pack, Gallery, Identifier, Quantizer, Verifier};

use super::cache::{Loaded, UserCache};
use super::gallery::Galleries;
use super::metrics::{Gauges, Metrics};
use super::store::{AuditLog, AuditRow, Store, StoreError};

/// The Content-Security-Policy sent with every response: same-origin
/// everything, plus `'wasm-unsafe-eval'` so the page can compile the package's
/// WebAssembly. Nothing broader.
pub const CSP: &str = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; \
object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'";

/// Longest user or gallery name.
pub const MAX_NAME_LEN: usize = 64;

/// Largest JSON body (identify).
const JSON_LIMIT: usize = 64 * 1024;

/// Per-route body limits, derived from the parameters: the largest valid
/// object of each kind (anything longer is refused with 413 and never
/// buffered past the limit).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Limits {
    /// A ciphertext of size 3 over every prime of Q, unseeded.
    pub ciphertext: usize,
    /// The keys framing: two length prefixes, an unseeded public key and an
    /// unseeded relinearization key.
    pub keys: usize,
}

impl Limits {
    /// The limits for `params`.
    pub fn new(params: &Params) -> Self {
        let n = params.degree();
        let bits = |q: u32| (32 - q.leading_zeros()) as usize;
        let poly_q: usize = params
            .ciphertext_primes()
            .iter()
            .map(|&q| n * bits(q) / 8)
            .sum();
        let poly_qp = poly_q + n * bits(params.special_prime()) / 8;
        let header = crate::bfv::HEADER_LEN;
        let ciphertext = header + 2 + 3 * poly_q;
        let pk = header + 2 * poly_q;
        let rk = header + params.limbs() * 2 * poly_qp;
        Self {
            ciphertext,
            keys: 8 + pk + rk,
        }
    }
}

/// Shared state of the handlers.
#[derive(Debug)]
pub struct AppState {
    pub params: Params,
    pub dim: usize,
    pub verifier: Verifier,
    pub store: Arc<Store>,
    /// The audit log (see [`AuditLog::record`]).
    pub audit: AuditLog,
    /// Parsed keys and templates of recent users.
    pub cache: UserCache,
    pub pool: rayon::ThreadPool,
    /// Jobs queued on or running on `pool`.
    pub permits: tokio::sync::Semaphore,
    /// Verifications computing at once ([`AppState::compute_here`]); one
    /// per matching thread.
    pub slots: tokio::sync::Semaphore,
    pub limits: Limits,
    pub www: PathBuf,
    pub pkg: PathBuf,
    /// 1:N mode: the service key and the galleries (`serve --service-key`).
    pub service: Option<Service>,
    /// Request counters for `GET /metrics`.
    pub metrics: Metrics,
}

/// 1:N state: the operator's service key and the in-memory galleries.
pub struct Service {
    pub sk: SecretKey,
    pub pk: PublicKey,
    pub identifier: Identifier,
    pub galleries: Galleries,
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Service { .. }")
    }
}

impl AppState {
    /// Runs `f` on the rayon pool (bounded by the semaphore), so slow
    /// homomorphic work never blocks an I/O thread.
    pub async fn compute<T, F>(&self, f: F) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let _permit = self
            .permits
            .acquire()
            .await
            .map_err(|_| ApiError::internal("worker pool closed"))?;
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.pool.spawn(move || {
            // A panic must not reach rayon (whose default is to abort the
            // process): it becomes a 500 for this request only.
            let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
            if out.is_err() {
                tracing::error!("a matching task panicked");
            }
            let _ = tx.send(out.ok());
        });
        rx.await
            .ok()
            .flatten()
            .ok_or_else(|| ApiError::internal("worker task failed"))
    }

    /// Runs `f` on the current thread once one of the `--threads` matching
    /// slots is free, after handing this thread's I/O duties (tokio's worker
    /// core) to another thread with `block_in_place`: no other request waits
    /// behind `f`, and neither the job nor its result crosses to another
    /// thread. This is the verify path: handing a verification to the pool
    /// and its result back cost 40–80 µs per request on a 2-core machine,
    /// a sixth of the matching. Outside a multi-threaded runtime it is
    /// [`AppState::compute`].
    pub async fn compute_here<T, F>(&self, f: F) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let multi_thread = tokio::runtime::Handle::try_current()
            .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
        if !multi_thread {
            return self.compute(f).await;
        }
        let _slot = self
            .slots
            .acquire()
            .await
            .map_err(|_| ApiError::internal("worker pool closed"))?;
        tokio::task::block_in_place(|| {
            // As on the pool: a panic is a 500 for this request only.
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|_| {
                tracing::error!("a matching task panicked");
                ApiError::internal("worker task failed")
            })
        })
    }
}

/// Runs a store call on tokio's blocking pool.
async fn db<T, F>(store: &Arc<Store>, f: F) -> Result<T, ApiError>
where
    T: Send + 'static,
    F: FnOnce(&Store) -> Result<T, StoreError> + Send + 'static,
{
    let store = store.clone();
    tokio::task::spawn_blocking(move || f(&store))
        .await
        .map_err(|_| ApiError::internal("store task failed"))?
        .map_err(ApiError::from)
}

/// A JSON error: `{"error": "...", "code": "..."}` with its status.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
}

/// The error code of a response, for the request log.
#[derive(Clone, Copy, Debug)]
struct ErrorCode(&'static str);

#[derive(Serialize)]
struct ErrorBody<'a> {
    error: &'a str,
    code: &'a str,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
        }
    }

    fn internal(message: &str) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
    }

    fn unknown_user() -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "unknown_user",
            "no keys are registered for this user",
        )
    }

    /// A wire-format error of the object `what`.
    fn format(what: &str, e: FormatError) -> Self {
        let (status, code) = match e {
            FormatError::Truncated { .. } => (StatusCode::BAD_REQUEST, "truncated"),
            FormatError::ParamsMismatch { .. } => {
                (StatusCode::UNPROCESSABLE_ENTITY, "wrong_params")
            }
            FormatError::TransparentCiphertext => (StatusCode::UNPROCESSABLE_ENTITY, "transparent"),
            FormatError::WrongKind { .. } => (StatusCode::BAD_REQUEST, "wrong_kind"),
            _ => (StatusCode::BAD_REQUEST, "malformed"),
        };
        Self::new(status, code, format!("{what}: {e}"))
    }

    /// A stored object that no longer parses (should not happen).
    fn corrupt(what: &str, e: FormatError) -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "corrupt_store",
            format!("stored {what} does not parse: {e}"),
        )
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::UnknownUser => Self::unknown_user(),
            StoreError::UserExists => Self::new(
                StatusCode::CONFLICT,
                "user_exists",
                "keys are already registered for this user; DELETE the user first",
            ),
            e => {
                tracing::error!(error = %e, "store error");
                Self::new(StatusCode::INTERNAL_SERVER_ERROR, "store", "database error")
            }
        }
    }
}

impl From<MatchError> for ApiError {
    fn from(e: MatchError) -> Self {
        match e {
            MatchError::TransparentCiphertext => Self::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "transparent",
                e.to_string(),
            ),
            MatchError::UnknownTemplate { .. } => {
                Self::new(StatusCode::NOT_FOUND, "unknown_template", e.to_string())
            }
            MatchError::Bfv(crate::error::BfvError::ParamsMismatch { .. }) => Self::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "wrong_params",
                e.to_string(),
            ),
            MatchError::Bfv(crate::error::BfvError::Rng { .. }) => {
                Self::internal("system random number generator failed")
            }
            MatchError::Bfv(_) => Self::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "bad_ciphertext",
                e.to_string(),
            ),
            _ => Self::new(StatusCode::BAD_REQUEST, "bad_input", e.to_string()),
        }
    }
}

impl From<PathRejection> for ApiError {
    fn from(r: PathRejection) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad_name", r.body_text())
    }
}

impl From<QueryRejection> for ApiError {
    fn from(r: QueryRejection) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad_query", r.body_text())
    }
}

impl From<JsonRejection> for ApiError {
    fn from(r: JsonRejection) -> Self {
        if r.status() == StatusCode::PAYLOAD_TOO_LARGE {
            Self::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "body_too_large",
                "request body exceeds this route's limit",
            )
        } else {
            Self::new(StatusCode::BAD_REQUEST, "bad_json", r.body_text())
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::to_vec(&ErrorBody {
            error: &self.message,
            code: self.code,
        })
        .unwrap_or_default();
        let mut resp = (
            self.status,
            [(header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response();
        resp.extensions_mut().insert(ErrorCode(self.code));
        resp
    }
}

type ApiResult<T> = Result<T, ApiError>;

/// How far past a route's limit a body is still read (and discarded) before
/// the 413 is sent, so that a client that writes its whole body before
/// reading the reply sees the JSON error instead of a reset connection. A
/// body declared longer than that is refused without reading it.
const DRAIN_CAP: usize = 1 << 20;

fn too_large(limit: usize) -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "body_too_large",
        format!("request body exceeds this route's limit of {limit} bytes"),
    )
}

/// Reads and discards a body (up to [`DRAIN_CAP`]) that a route does not
/// use, so the client reads the reply instead of a reset connection.
async fn drain(body: Body) {
    use http_body_util::BodyExt;
    let mut body = body;
    let mut seen = 0usize;
    while let Some(Ok(frame)) = body.frame().await {
        if let Ok(data) = frame.into_data() {
            seen = seen.saturating_add(data.len());
            if seen > DRAIN_CAP {
                break;
            }
        }
    }
}

/// Reads a binary body of at most `limit` bytes (the route's limit).
async fn read_body(headers: &HeaderMap, body: Body, limit: usize) -> ApiResult<Bytes> {
    use http_body_util::BodyExt;
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > (limit + DRAIN_CAP) as u64) {
        return Err(too_large(limit));
    }
    let mut buf: Vec<u8> = Vec::with_capacity(declared.map_or(0, |n| n.min(limit as u64) as usize));
    let mut seen = 0usize;
    let mut body = body;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "bad_body",
                format!("reading the body: {e}"),
            )
        })?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        seen = seen.saturating_add(data.len());
        if seen > limit + DRAIN_CAP {
            break;
        }
        if seen <= limit {
            buf.extend_from_slice(&data);
        }
    }
    if seen > limit {
        return Err(too_large(limit));
    }
    Ok(Bytes::from(buf))
}

/// User and gallery names: 1 to 64 of `A-Z a-z 0-9 . _ -`, not starting
/// with a dot.
pub fn check_name(name: &str) -> ApiResult<()> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_name",
            format!("names are 1 to {MAX_NAME_LEN} characters of A-Z a-z 0-9 . _ - (not starting with a dot)"),
        ))
    }
}

fn name(p: Result<Path<String>, PathRejection>) -> ApiResult<String> {
    let Path(n) = p?;
    check_name(&n)?;
    Ok(n)
}

/// Splits the keys body: `u32 LE pk_len`, pk, `u32 LE rk_len`, rk (`rk_len`
/// may be 0: no relinearization key), and nothing after.
pub fn split_keys(body: &[u8]) -> ApiResult<(&[u8], Option<&[u8]>)> {
    fn field<'a>(body: &'a [u8], pos: &mut usize, what: &str) -> ApiResult<&'a [u8]> {
        let truncated = || {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "truncated",
                format!("keys body ends inside the {what}"),
            )
        };
        let len_bytes = body.get(*pos..*pos + 4).ok_or_else(truncated)?;
        let len = u32::from_le_bytes(len_bytes.try_into().expect("4 bytes")) as usize;
        let start = *pos + 4;
        let end = start.checked_add(len).ok_or_else(truncated)?;
        let out = body.get(start..end).ok_or_else(truncated)?;
        *pos = end;
        Ok(out)
    }
    let mut pos = 0;
    let pk = field(body, &mut pos, "public key")?;
    let rk = field(body, &mut pos, "relinearization key")?;
    if pos != body.len() {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "malformed",
            format!("keys body: {} trailing bytes", body.len() - pos),
        ));
    }
    if pk.is_empty() {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "malformed",
            "keys body: the public key is required",
        ));
    }
    Ok((pk, if rk.is_empty() { None } else { Some(rk) }))
}

/// Frames a public key and an optional relinearization key as the keys body.
pub fn frame_keys(pk: &[u8], rk: Option<&[u8]>) -> Vec<u8> {
    let rk = rk.unwrap_or(&[]);
    let mut out = Vec::with_capacity(8 + pk.len() + rk.len());
    out.extend_from_slice(&(pk.len() as u32).to_le_bytes());
    out.extend_from_slice(pk);
    out.extend_from_slice(&(rk.len() as u32).to_le_bytes());
    out.extend_from_slice(rk);
    out
}

/// A client ciphertext for matching: untrusted parse (refuses transparent
/// ones), then size 2 over every prime of Q.
fn parse_fresh_ciphertext(params: &Params, what: &str, bytes: &[u8]) -> ApiResult<Ciphertext> {
    let ct =
        Ciphertext::from_bytes_untrusted(params, bytes).map_err(|e| ApiError::format(what, e))?;
    if ct.size() != 2 || ct.limbs() != params.limbs() {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "bad_ciphertext",
            format!(
                "{what}: a fresh ciphertext of size 2 over {} primes is expected (got size {}, {} primes)",
                params.limbs(),
                ct.size(),
                ct.limbs()
            ),
        ));
    }
    Ok(ct)
}

/// Builds the router.
pub fn router(state: Arc<AppState>) -> Router {
    // Binary routes enforce `state.limits` in `read_body`; JSON routes use
    // axum's DefaultBodyLimit.
    Router::new()
        .route("/healthz", get(healthz))
        .route("/metrics", get(metrics))
        .route("/v1/params", get(params_info))
        .route("/v1/users/{user}", get(user_info).delete(delete_user))
        .route("/v1/users/{user}/keys", put(put_keys))
        .route("/v1/users/{user}/template", put(put_template))
        .route("/v1/users/{user}/verify", post(verify))
        .route("/v1/galleries", get(gallery_list))
        .route(
            "/v1/galleries/{gallery}",
            get(gallery_info).delete(gallery_delete),
        )
        .route("/v1/galleries/{gallery}/templates", post(gallery_add))
        .route(
            "/v1/galleries/{gallery}/templates/{index}",
            axum::routing::delete(gallery_erase),
        )
        .route("/v1/service/public-key", get(service_public_key))
        .route(
            "/v1/galleries/{gallery}/identify",
            post(gallery_identify).layer(DefaultBodyLimit::max(JSON_LIMIT)),
        )
        .fallback(static_files)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(JSON_LIMIT))
        .layer(middleware::from_fn_with_state(state.clone(), request_log))
        .with_state(state)
}

static NEXT_REQUEST_ID: AtomicU64 = AtomicU64::new(1);

/// Request ids, timings and security headers. Logs the method, path, status,
/// error code and duration; never a body.
async fn request_log(State(st): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    let id = NEXT_REQUEST_ID.fetch_add(1, Ordering::Relaxed);
    let route = Metrics::route_index(
        req.extensions()
            .get::<axum::extract::MatchedPath>()
            .map(|p| p.as_str()),
    );
    let span = tracing::info_span!("req", id, method = %req.method(), path = %req.uri().path());
    let conn = req
        .extensions()
        .get::<axum::extract::ConnectInfo<super::conn::ConnInfo>>()
        .map(|c| c.0 .0.clone());
    let start = Instant::now();
    let resp = next.run(req).instrument(span.clone()).await;
    let code = resp.extensions().get::<ErrorCode>().map(|c| c.0);
    let status = resp.status().as_u16();
    let times = resp.extensions().get::<VerifyTimes>().copied();
    // The line is written once the reply body has been handed to the
    // connection (or dropped unsent), so `us` spans the whole request on the
    // server: reading the body, the work, and sending the reply.
    let log = move |sent: bool| {
        let us = start.elapsed().as_micros() as u64;
        st.metrics.request(route, status, us);
        if let (true, Some(conn)) = (sent, &conn) {
            // The connection writes the request's `sent` line (with
            // `wire_us`) once the reply's last byte is written.
            conn.reply_handed_over(id);
        }
        span.in_scope(|| match (code, times) {
            (Some(code), _) => tracing::info!(status, code, us, sent, "done"),
            (None, Some(t)) => tracing::info!(
                status,
                us,
                sent,
                count = t.count,
                queue_us = t.queue_us,
                parse_us = t.parse_us,
                match_us = t.match_us,
                audit_us = t.audit_us,
                db_us = t.db_us,
                "done"
            ),
            (None, None) => tracing::info!(status, us, sent, "done"),
        })
    };
    let mut resp = resp.map(|body| {
        Body::new(LoggedBody {
            inner: body,
            on_end: Some(log),
        })
    });
    let h = resp.headers_mut();
    h.insert("x-request-id", HeaderValue::from(id));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    resp
}

/// A response body that calls `on_end(true)` once its last frame has been
/// taken (or `on_end(false)` if it is dropped before that, for example when
/// the client goes away).
struct LoggedBody<F: FnOnce(bool)> {
    inner: Body,
    on_end: Option<F>,
}

impl<F: FnOnce(bool) + Unpin> axum::body::HttpBody for LoggedBody<F> {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        let polled = std::pin::Pin::new(&mut self.inner).poll_frame(cx);
        if matches!(polled, std::task::Poll::Ready(None)) || self.inner.is_end_stream() {
            if let Some(f) = self.on_end.take() {
                f(true);
            }
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

impl<F: FnOnce(bool)> Drop for LoggedBody<F> {
    fn drop(&mut self) {
        if let Some(f) = self.on_end.take() {
            f(axum::body::HttpBody::is_end_stream(&self.inner));
        }
    }
}

async fn method_not_allowed(req: Request) -> ApiError {
    drain(req.into_body()).await;
    method_not_allowed_error()
}

fn method_not_allowed_error() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "method not allowed on this route",
    )
}

/// `GET /metrics`: Prometheus text format.
async fn metrics(State(st): State<Arc<AppState>>) -> Response {
    let gauges = Gauges {
        backend: crate::Backend::detect().name(),
        params_id: st.params.id_hex(),
        threads: st.pool.current_num_threads(),
        slots_free: st.slots.available_permits(),
        cached_users: st.cache.len(),
        audit_journaled: st.store.audit_journaled(),
        audit_flush_failures: st.store.audit_flush_failures(),
        galleries: st.service.as_ref().map(|s| s.galleries.stats()),
    };
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        st.metrics.render(&gauges),
    )
        .into_response()
}

async fn healthz(State(st): State<Arc<AppState>>) -> ApiResult<Json<serde_json::Value>> {
    let version = db(&st.store, |s| s.schema_version()).await?;
    Ok(Json(serde_json::json!({
        "status": "ok",
        "schema_version": version,
        "backend": crate::Backend::detect().name(),
        "threads": st.pool.current_num_threads(),
        "identify": st.service.is_some(),
    })))
}

/// The parameters' id and a readable description.
pub fn params_description(params: &Params, dim: usize, reply_limbs: usize) -> serde_json::Value {
    let scale = Quantizer::new(params, dim).map(|q| q.scale()).unwrap_or(0);
    serde_json::json!({
        "id": params.id_hex(),
        "name": "auth4096",
        "degree": params.degree(),
        "plaintext_modulus": params.plaintext_modulus(),
        "ciphertext_primes": params.ciphertext_primes(),
        "special_prime": params.special_prime(),
        "log2_qp": params.modulus_bits(),
        "security": "128-bit classical (HomomorphicEncryption.org table, ternary secret)",
        "dimension": dim,
        "templates_per_ciphertext": pack::templates_per_ciphertext(params, dim),
        "quantizer_scale": scale,
        "reply_limbs": reply_limbs,
        "format_version": crate::bfv::FORMAT_VERSION,
    })
}

async fn params_info(State(st): State<Arc<AppState>>) -> Json<serde_json::Value> {
    let mut v = params_description(&st.params, st.dim, st.verifier.reply_limbs());
    v["limits"] = serde_json::to_value(st.limits).unwrap_or_default();
    Json(v)
}

async fn user_info(
    State(st): State<Arc<AppState>>,
    user: Result<Path<String>, PathRejection>,
) -> ApiResult<Json<super::store::UserInfo>> {
    let user = name(user)?;
    let info = db(&st.store, move |s| s.user_info(&user)).await?;
    info.map(Json).ok_or_else(ApiError::unknown_user)
}

async fn put_keys(
    State(st): State<Arc<AppState>>,
    user: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<StatusCode> {
    let body = read_body(&headers, body, st.limits.keys).await?;
    let user = name(user)?;
    let params = st.params.clone();
    // Parse both keys (on the pool: expanding seeds and checking residues is
    // real work), then store the bytes exactly as received.
    let body2 = body.clone();
    st.compute(move || -> ApiResult<()> {
        let (pk, rk) = split_keys(&body2)?;
        PublicKey::from_bytes(&params, pk).map_err(|e| ApiError::format("public key", e))?;
        if let Some(rk) = rk {
            RelinKey::from_bytes(&params, rk)
                .map_err(|e| ApiError::format("relinearization key", e))?;
        }
        Ok(())
    })
    .await??;
    let params_id = st.params.id_hex();
    let u = user.clone();
    db(&st.store, move |s| {
        let (pk, rk) = split_keys(&body).expect("checked above");
        s.put_keys(&u, &params_id, pk, rk)
    })
    .await?;
    st.cache.invalidate(&user);
    Ok(StatusCode::CREATED)
}

#[derive(Debug, Deserialize)]
struct CountQuery {
    count: Option<u32>,
}

fn check_count(st: &AppState, count: Option<u32>) -> ApiResult<u32> {
    let max = pack::templates_per_ciphertext(&st.params, st.dim) as u32;
    let count = count.unwrap_or(max);
    if count == 0 || count > max {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_count",
            format!("count must be in 1..={max}"),
        ));
    }
    Ok(count)
}

async fn put_template(
    State(st): State<Arc<AppState>>,
    user: Result<Path<String>, PathRejection>,
    query: Result<Query<CountQuery>, QueryRejection>,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<StatusCode> {
    let body = read_body(&headers, body, st.limits.ciphertext).await?;
    let user = name(user)?;
    let count = check_count(&st, query?.0.count)?;
    let params = st.params.clone();
    let body2 = body.clone();
    st.compute(move || parse_fresh_ciphertext(&params, "template", &body2).map(drop))
        .await??;
    let u = user.clone();
    db(&st.store, move |s| s.put_template(&u, &body, count)).await?;
    st.cache.invalidate(&user);
    Ok(StatusCode::NO_CONTENT)
}

async fn verify(
    State(st): State<Arc<AppState>>,
    user: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<Response> {
    let body = read_body(&headers, body, st.limits.ciphertext).await?;
    let user = name(user)?;
    let mut db_us = 0;
    // The user's parsed objects: from the cache, or read and parsed below.
    let cached = st.cache.get(&user);
    let (stamp, record) = match &cached {
        Some(_) => (None, None),
        None => {
            let t_db = Instant::now();
            let stamp = st.cache.stamp();
            let u = user.clone();
            let rec = db(&st.store, move |s| s.load_user(&u))
                .await?
                .ok_or_else(ApiError::unknown_user)?;
            if rec.template.is_none() {
                return Err(ApiError::new(
                    StatusCode::NOT_FOUND,
                    "no_template",
                    "this user has no enrolled template",
                ));
            }
            db_us += t_db.elapsed().as_micros() as u64;
            (Some(stamp), Some(rec))
        }
    };
    let state = Arc::clone(&st);
    let audit_user = user.clone();
    let queued = Instant::now();
    let (reply, loaded, mut t) = st
        .compute_here(move || -> ApiResult<(Vec<u8>, Arc<Loaded>, VerifyTimes)> {
            let start = Instant::now();
            let queue_us = queued.elapsed().as_micros() as u64;
            let (params, verifier) = (&state.params, &state.verifier);
            let probe = parse_fresh_ciphertext(params, "probe", &body)?;
            let loaded = match (cached, record) {
                (Some(l), _) => l,
                (None, Some(rec)) => Arc::new(parse_record(params, verifier, rec)?),
                (None, None) => return Err(ApiError::internal("no user record")),
            };
            let parse_us = start.elapsed().as_micros() as u64;
            let reply = verifier.verify_prepared(
                &loaded.template,
                &probe,
                &loaded.pk,
                loaded.rk.as_ref(),
            )?;
            // Relinearized, the reply goes out in its compact form.
            let bytes = match loaded.rk {
                Some(_) => verifier.compact(&reply)?.to_bytes(),
                None => reply.to_bytes(),
            };
            let total = start.elapsed().as_micros() as u64;
            // The audit row, journaled before the reply is sent (see
            // `AuditLog`). Its time is storage time, not part of `match`.
            let audit = state
                .audit
                .record(AuditRow {
                    user: audit_user,
                    ts: super::store::now_millis(),
                    outcome: "ok".into(),
                    duration_us: total,
                })
                .map_err(audit_error)?;
            let audit_us = audit.as_micros() as u64;
            Ok((
                bytes,
                loaded,
                VerifyTimes {
                    queue_us,
                    parse_us,
                    match_us: total - parse_us,
                    audit_us,
                    db_us: audit_us,
                    count: 0,
                },
            ))
        })
        .await??;
    let count = loaded.count;
    t.count = count;
    if let Some(stamp) = stamp {
        st.cache.insert(&user, stamp, loaded);
    }
    t.db_us += db_us;
    st.metrics
        .verify_phases([t.queue_us, t.parse_us, t.match_us, t.audit_us, t.db_us]);
    let ms = |us: u64| us as f64 / 1000.0;
    let timing = format!(
        "db;dur={:.3}, audit;dur={:.3}, queue;dur={:.3}, parse;dur={:.3}, match;dur={:.3}",
        ms(t.db_us),
        ms(t.audit_us),
        ms(t.queue_us),
        ms(t.parse_us),
        ms(t.match_us)
    );
    let mut resp = (
        StatusCode::OK,
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/octet-stream"),
            ),
            (
                header::HeaderName::from_static("x-template-count"),
                HeaderValue::from(count),
            ),
            (
                header::HeaderName::from_static("server-timing"),
                HeaderValue::from_str(&timing).unwrap_or(HeaderValue::from_static("")),
            ),
        ],
        reply,
    )
        .into_response();
    // Logged with the request's one line (see `request_log`).
    resp.extensions_mut().insert(t);
    Ok(resp)
}

fn audit_error(e: StoreError) -> ApiError {
    tracing::error!(error = %e, "audit");
    ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "store", "database error")
}

/// Parses a stored user record (keys and template) and prepares the
/// template for repeated verifications.
fn parse_record(
    params: &Params,
    verifier: &Verifier,
    rec: super::store::UserRecord,
) -> ApiResult<Loaded> {
    let (template, count) = rec
        .template
        .ok_or_else(|| ApiError::internal("no template"))?;
    let pk = PublicKey::from_bytes(params, &rec.public_key)
        .map_err(|e| ApiError::corrupt("public key", e))?;
    let rk = match &rec.relin_key {
        Some(b) => Some(
            RelinKey::from_bytes(params, b)
                .map_err(|e| ApiError::corrupt("relinearization key", e))?,
        ),
        None => None,
    };
    let template =
        Ciphertext::from_bytes(params, &template).map_err(|e| ApiError::corrupt("template", e))?;
    let template = verifier.prepare_template(&template)?;
    Ok(Loaded {
        pk,
        rk,
        template,
        count,
    })
}

/// Where a verification's time went (reported in `Server-Timing` and in
/// the request's log line).
#[derive(Clone, Copy, Debug)]
struct VerifyTimes {
    /// Waiting for a matching thread.
    queue_us: u64,
    /// Parsing the probe and the stored keys and template.
    parse_us: u64,
    /// `Verifier::verify` and serializing the reply.
    match_us: u64,
    /// Journaling the audit row.
    audit_us: u64,
    /// Store reads and journaling the audit row: storage time on the
    /// request's path.
    db_us: u64,
    /// Scores in the reply.
    count: u32,
}

async fn delete_user(
    State(st): State<Arc<AppState>>,
    user: Result<Path<String>, PathRejection>,
) -> ApiResult<StatusCode> {
    let user = name(user)?;
    let u = user.clone();
    let existed = db(&st.store, move |s| s.delete_user(&u)).await?;
    st.cache.invalidate(&user);
    if existed {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::unknown_user())
    }
}

fn service(st: &AppState) -> ApiResult<&Service> {
    st.service.as_ref().ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "identify_disabled",
            "1:N identification is off: start the server with --service-key",
        )
    })
}

/// The service public key (1:N mode), for encrypting gallery templates.
async fn service_public_key(State(st): State<Arc<AppState>>) -> ApiResult<Response> {
    let svc = service(&st)?;
    Ok((
        [(header::CONTENT_TYPE, "application/octet-stream")],
        svc.pk.to_bytes(),
    )
        .into_response())
}

#[derive(Debug, Serialize)]
struct GalleryAdded {
    gallery: String,
    /// Index of the first template of this ciphertext in the gallery.
    first_index: usize,
    count: u32,
    templates: usize,
}

async fn gallery_add(
    State(st): State<Arc<AppState>>,
    gallery: Result<Path<String>, PathRejection>,
    query: Result<Query<CountQuery>, QueryRejection>,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<(StatusCode, Json<GalleryAdded>)> {
    let body = read_body(&headers, body, st.limits.ciphertext).await?;
    service(&st)?;
    let gallery = name(gallery)?;
    let count = check_count(&st, query?.0.count)?;
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
async fn gallery_list(State(st): State<Arc<AppState>>) -> ApiResult<Json<serde_json::Value>> {
    let galleries = service(&st)?.galleries.list(gallery_counts)?;
    Ok(Json(serde_json::json!({ "galleries": galleries })))
}

/// `GET /v1/galleries/{gallery}`: counts, no ciphertext bytes.
async fn gallery_info(
    State(st): State<Arc<AppState>>,
    gallery: Result<Path<String>, PathRejection>,
) -> ApiResult<Json<serde_json::Value>> {
    let svc = service(&st)?;
    let gallery = name(gallery)?;
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
async fn gallery_erase(
    State(st): State<Arc<AppState>>,
    path: Result<Path<(String, String)>, PathRejection>,
) -> ApiResult<StatusCode> {
    let svc = service(&st)?;
    let Path((gallery, index)) = path?;
    check_name(&gallery)?;
    let index: usize = index.parse().map_err(|_| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_index",
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
async fn gallery_delete(
    State(st): State<Arc<AppState>>,
    gallery: Result<Path<String>, PathRejection>,
) -> ApiResult<StatusCode> {
    let svc = service(&st)?;
    let gallery = name(gallery)?;
    let store = st.store.clone();
    let g = gallery.clone();
    svc.galleries
        .remove(&gallery, move || store.delete_gallery(&g))
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Deserialize)]
struct IdentifyRequest {
    embedding: Vec<f32>,
    #[serde(default = "default_top_k")]
    top_k: usize,
}

fn default_top_k() -> usize {
    5
}

async fn gallery_identify(
    State(st): State<Arc<AppState>>,
    gallery: Result<Path<String>, PathRejection>,
    body: Result<Json<IdentifyRequest>, JsonRejection>,
) -> ApiResult<Json<serde_json::Value>> {
    service(&st)?;
    let gallery = name(gallery)?;
    let Json(req) = body?;
    if req.top_k == 0 || req.top_k > 100 {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_top_k",
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

/// GET/HEAD of a file under `--www` (at `/`) or `--pkg` (at `/pkg/`).
async fn static_files(State(st): State<Arc<AppState>>, method: Method, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    drain(body).await;
    let path = parts.uri.path();
    if path == "/v1" || path.starts_with("/v1/") || path == "/healthz" {
        return ApiError::new(StatusCode::NOT_FOUND, "not_found", "no such route").into_response();
    }
    if method != Method::GET && method != Method::HEAD {
        return method_not_allowed_error().into_response();
    }
    let (root, rel) = match path.strip_prefix("/pkg/") {
        Some(rest) => (&st.pkg, rest),
        None => (&st.www, path.trim_start_matches('/')),
    };
    let Some(file) = resolve(root, rel) else {
        return ApiError::new(StatusCode::NOT_FOUND, "not_found", "no such file").into_response();
    };
    let data = match tokio::fs::read(&file).await {
        Ok(d) => d,
        Err(_) => {
            return ApiError::new(StatusCode::NOT_FOUND, "not_found", "no such file")
                .into_response()
        }
    };
    let body = if method == Method::HEAD {
        Body::empty()
    } else {
        Body::from(data)
    };
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, content_type(&file)),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

/// The file for a request path under `root`, refusing anything but plain
/// names (no `..`, no hidden files, no encoded characters); a directory
/// resolves to its `index.html`.
fn resolve(root: &FsPath, rel: &str) -> Option<PathBuf> {
    let mut p = root.to_path_buf();
    for seg in rel.split('/').filter(|s| !s.is_empty()) {
        let ok = !seg.starts_with('.')
            && seg
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
        if !ok {
            return None;
        }
        p.push(seg);
    }
    if p.is_dir() {
        p.push("index.html");
    }
    p.is_file().then_some(p)
}

fn content_type(p: &FsPath) -> &'static str {
    match p.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "wasm" => "application/wasm",
        "css" => "text/css; charset=utf-8",
        "json" | "map" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "ico" => "image/x-icon",
        "txt" | "md" | "ts" => "text/plain; charset=utf-8",
        "onnx" | "bin" => "application/octet-stream",
        _ => "application/octet-stream",
    }
}
