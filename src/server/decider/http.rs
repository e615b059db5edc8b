//! The decider's HTTP API (docs/API.md, "The decider"): the matcher asks it
//! for a user's keys and for verdicts; anyone may read its JWK set.
//!
//! | route | who | what |
//! |---|---|---|
//! | `GET /healthz` | anyone | liveness |
//! | `GET /.well-known/jwks.json` | anyone | the verdict keys (RFC 7517) |
//! | `GET /v1/user-keys/{user}?epoch=E` | the matcher | the user's public and relinearization keys, in the keys framing |
//! | `POST /v1/verdicts?user=&epoch=&samples=&aud=&nonce=&template_checked=` | the matcher | a compact reply and the probe's check replies in, a signed verdict out |
//! | `POST /v1/template-checks?user=&epoch=&samples=` (or `gallery=`) | the matcher | a template's check replies in, 204 or 422 `malformed_template` out |
//! | `GET /v1/gallery-keys/{gallery}?epoch=E` | the matcher | the gallery's public and relinearization keys |
//! | `POST /v1/identifications?gallery=&epoch=&top_k=&aud=&nonce=` | the matcher | a score reply list and the probe's check replies in, a signed identification (or 422 `malformed_probe`) out |
//! | `POST /v1/erasures?gallery=&epoch=&block=` | the matcher | a masked gallery ciphertext in, a fresh one without the block out |
//!
//! The matcher authenticates with `Authorization: Bearer <token>`, the
//! shared token of `matcher.token`, compared in constant time.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{FromRef, FromRequest, FromRequestParts, Path, Query, Request, State};
use axum::http::{header, request::Parts, HeaderName, HeaderValue};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::matching::wellformed::{split, CheckReplies};
use crate::matching::ScoreReply;
use crate::server::api::extract::{
    drain, BinaryBody, CiphertextLimit, RepliesLimit, ReplyLimit, RouteLimit, TemplateChecksLimit,
    VerdictLimit,
};
use crate::server::api::{
    check_claim, check_name, frame_keys, ApiError, ApiResult, ErrorCode, Limits,
};

use super::identify::IdentifyRequest;
use super::{replies, DecideError, Decider, KeyKind, KeyLabel, Request as VerdictRequest};

pub const HEALTHZ: &str = "/healthz";
pub const JWKS: &str = "/.well-known/jwks.json";
pub const USER_KEYS: &str = "/v1/user-keys/{user}";
pub const VERDICTS: &str = "/v1/verdicts";
pub const TEMPLATE_CHECKS: &str = "/v1/template-checks";
pub const GALLERY_KEYS: &str = "/v1/gallery-keys/{gallery}";
pub const IDENTIFICATIONS: &str = "/v1/identifications";
pub const ERASURES: &str = "/v1/erasures";
/// The header carrying the decider's signed statement of a user's public
/// key (from the decider to the matcher, and from the matcher to the page).
pub const KEY_STATEMENT_HEADER: &str = "x-key-statement";

/// The decider process's state.
#[derive(Debug)]
pub struct DeciderState {
    pub decider: Decider,
    /// SHA-256 of the matcher's token.
    pub matcher_token: [u8; 32],
    pub limits: Limits,
}

impl DeciderState {
    /// `token` is the shared secret the matcher presents.
    pub fn new(decider: Decider, token: &[u8], limits: Limits) -> Self {
        Self {
            decider,
            matcher_token: Sha256::digest(token).into(),
            limits,
        }
    }
}

impl FromRef<Arc<DeciderState>> for Limits {
    fn from_ref(st: &Arc<DeciderState>) -> Self {
        st.limits
    }
}

/// The decider's routes.
pub fn router(state: Arc<DeciderState>) -> Router {
    Router::new()
        .route(HEALTHZ, get(healthz))
        .route(JWKS, get(jwks))
        .route(USER_KEYS, get(user_keys))
        .route(VERDICTS, post(verdict))
        .route(TEMPLATE_CHECKS, post(template_checks))
        .route(GALLERY_KEYS, get(gallery_keys))
        .route(IDENTIFICATIONS, post(identification))
        .route(ERASURES, post(erasure))
        .fallback(|| async { ApiError::not_found("no such route") })
        .method_not_allowed_fallback(|req: Request| async move {
            drop(req);
            ApiError::method_not_allowed()
        })
        .with_state(state)
}

/// A request from the matcher: its bearer token checked in constant time
/// (on digests, so the comparison does not depend on the token's length).
#[derive(Debug)]
pub struct FromMatcher;

impl FromRequestParts<Arc<DeciderState>> for FromMatcher {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, st: &Arc<DeciderState>) -> ApiResult<Self> {
        let presented = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .ok_or_else(|| {
                ApiError::new(
                    ErrorCode::Unauthorized,
                    "the matcher's bearer token is required",
                )
            })?;
        let digest: [u8; 32] = Sha256::digest(presented.trim().as_bytes()).into();
        if bool::from(digest.ct_eq(&st.matcher_token)) {
            Ok(Self)
        } else {
            Err(ApiError::new(ErrorCode::Unauthorized, "wrong bearer token"))
        }
    }
}

/// The reply body of a request from the matcher. The token is checked
/// first; a request without it is refused once its body has been drained
/// (at most 1 MiB past the limit), so that a client that writes its whole
/// body before reading reads the 401 rather than a reset connection.
#[derive(Debug)]
pub struct MatcherBody<L = ReplyLimit>(pub Bytes, std::marker::PhantomData<L>);

impl<L: RouteLimit + Send> FromRequest<Arc<DeciderState>> for MatcherBody<L> {
    type Rejection = ApiError;

    async fn from_request(req: Request, st: &Arc<DeciderState>) -> ApiResult<Self> {
        let (mut parts, body) = req.into_parts();
        if let Err(e) = FromMatcher::from_request_parts(&mut parts, st).await {
            drain(body).await;
            return Err(e);
        }
        let req = Request::from_parts(parts, body);
        let BinaryBody(bytes, _) = BinaryBody::<L>::from_request(req, st).await?;
        Ok(Self(bytes, std::marker::PhantomData))
    }
}

#[derive(Serialize)]
struct Health {
    role: &'static str,
    status: &'static str,
}

async fn healthz() -> Json<Health> {
    Json(Health {
        role: "decider",
        status: "ok",
    })
}

async fn jwks(State(st): State<Arc<DeciderState>>) -> impl IntoResponse {
    (
        [
            (header::CACHE_CONTROL, "public, max-age=300"),
            (header::CONTENT_TYPE, "application/jwk-set+json"),
        ],
        Json(st.decider.verdict_keys().jwks()),
    )
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EpochQuery {
    #[serde(default)]
    epoch: u32,
}

async fn user_keys(
    State(st): State<Arc<DeciderState>>,
    _auth: FromMatcher,
    path: Result<Path<String>, PathRejection>,
    query: Result<Query<EpochQuery>, QueryRejection>,
) -> ApiResult<impl IntoResponse> {
    let Path(user) = path?;
    let Query(q) = query?;
    check_name(&user)?;
    keys_answer(st, KeyKind::User, user, q.epoch).await
}

async fn gallery_keys(
    State(st): State<Arc<DeciderState>>,
    _auth: FromMatcher,
    path: Result<Path<String>, PathRejection>,
    query: Result<Query<EpochQuery>, QueryRejection>,
) -> ApiResult<impl IntoResponse> {
    let Path(gallery) = path?;
    let Query(q) = query?;
    check_name(&gallery)?;
    keys_answer(st, KeyKind::Gallery, gallery, q.epoch).await
}

/// The keys framing of `name`'s public and relinearization keys of
/// `epoch`, with the decider's key statement in its header.
async fn keys_answer(
    st: Arc<DeciderState>,
    kind: KeyKind,
    name: String,
    epoch: u32,
) -> ApiResult<impl IntoResponse> {
    let work = tokio::task::spawn_blocking(move || {
        let label = KeyLabel {
            kind,
            name: &name,
            epoch,
        };
        let (pk, rk) = st
            .decider
            .matcher_keys(&label)
            .map_err(|e| ApiError::internal(&e.to_string()))?;
        let statement =
            st.decider
                .key_statement(&label, &pk, crate::server::store::now_secs() as u64);
        Ok::<_, ApiError>((frame_keys(&pk.to_bytes(), Some(&rk.to_bytes())), statement))
    });
    let (body, statement) = work
        .await
        .map_err(|_| ApiError::internal("key derivation failed"))??;
    let statement = HeaderValue::from_str(&statement)
        .map_err(|_| ApiError::internal("the key statement is not a header value"))?;
    Ok((
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/octet-stream"),
            ),
            (HeaderName::from_static(KEY_STATEMENT_HEADER), statement),
        ],
        body,
    ))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct VerdictQuery {
    user: String,
    #[serde(default)]
    epoch: u32,
    samples: usize,
    aud: String,
    nonce: String,
    /// Whether the template passed the check at enrollment; without it the
    /// verdict is a reject `malformed_template`.
    #[serde(default)]
    template_checked: bool,
}

#[derive(Serialize)]
struct VerdictReply {
    verdict: String,
}

async fn verdict(
    State(st): State<Arc<DeciderState>>,
    query: Result<Query<VerdictQuery>, QueryRejection>,
    MatcherBody(body, _): MatcherBody<VerdictLimit>,
) -> ApiResult<Json<VerdictReply>> {
    let Query(q) = query?;
    check_name(&q.user)?;
    check_claims(&q.aud, &q.nonce)?;
    let work = tokio::task::spawn_blocking(move || {
        let d = &st.decider;
        let items = split(&body).map_err(|e| ApiError::format("verdict request", e))?;
        let (first, rest) = items
            .split_first()
            .ok_or_else(|| ApiError::new(ErrorCode::Truncated, "verdict request: no reply"))?;
        let reply =
            ScoreReply::from_bytes(d.params(), first).map_err(|e| ApiError::format("reply", e))?;
        if q.samples == 0 || q.samples > reply.len() {
            return Err(ApiError::new(
                ErrorCode::BadCount,
                format!("samples: 1 to {} at this dimension", reply.len()),
            ));
        }
        let checks = CheckReplies::from_items(d.params(), rest, 1, d.one_hot_per_sample())
            .map_err(|e| ApiError::format("check replies", e))?;
        let req = VerdictRequest {
            label: KeyLabel::user(&q.user, q.epoch),
            audience: &q.aud,
            nonce: &q.nonce,
            samples: q.samples,
            template_checked: q.template_checked,
        };
        d.decide(
            &req,
            &reply,
            &checks,
            crate::server::store::now_secs() as u64,
        )
        .map_err(refusal)
    });
    let verdict = work
        .await
        .map_err(|_| ApiError::internal("decision failed"))??;
    Ok(Json(VerdictReply { verdict }))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TemplateChecksQuery {
    /// Whose key: a user's (a template at enrollment) or a gallery's (a
    /// gallery ciphertext's templates), one of the two.
    user: Option<String>,
    gallery: Option<String>,
    #[serde(default)]
    epoch: u32,
    samples: usize,
}

/// A template's check replies: 204 when every sample is well-formed under
/// the user's or the gallery's key, 422 `malformed_template` (with the
/// reason) otherwise.
async fn template_checks(
    State(st): State<Arc<DeciderState>>,
    query: Result<Query<TemplateChecksQuery>, QueryRejection>,
    MatcherBody(body, _): MatcherBody<TemplateChecksLimit>,
) -> ApiResult<axum::http::StatusCode> {
    let Query(q) = query?;
    let (kind, name) = match (q.user, q.gallery) {
        (Some(user), None) => (KeyKind::User, user),
        (None, Some(gallery)) => (KeyKind::Gallery, gallery),
        _ => {
            return Err(ApiError::new(
                ErrorCode::BadQuery,
                "name either user or gallery",
            ))
        }
    };
    check_name(&name)?;
    let max = st.decider.params().degree() / st.decider.dim();
    if q.samples == 0 || q.samples > max {
        return Err(ApiError::new(
            ErrorCode::BadCount,
            format!("samples: 1 to {max} at this dimension"),
        ));
    }
    let work = tokio::task::spawn_blocking(move || {
        let d = &st.decider;
        let items = split(&body).map_err(|e| ApiError::format("template checks", e))?;
        let checks =
            CheckReplies::from_items(d.params(), &items, q.samples, d.one_hot_per_sample())
                .map_err(|e| ApiError::format("check replies", e))?;
        let label = KeyLabel {
            kind,
            name: &name,
            epoch: q.epoch,
        };
        match d.check_template(&label, &checks).map_err(refusal)? {
            Ok(()) => Ok(axum::http::StatusCode::NO_CONTENT),
            Err(m) => Err(ApiError::new(ErrorCode::MalformedTemplate, m.to_string())),
        }
    });
    work.await
        .map_err(|_| ApiError::internal("template check failed"))?
}

/// `aud` and `nonce`: valid claims ([`check_claim`]).
fn check_claims(aud: &str, nonce: &str) -> ApiResult<()> {
    check_claim("aud", aud)?;
    check_claim("nonce", nonce)
}

/// Why the decider gives no answer, as an HTTP error.
fn refusal(e: DecideError) -> ApiError {
    match e {
        DecideError::Match(m) => ApiError::from(m),
        e @ DecideError::NotUnderKey { .. } => ApiError::new(ErrorCode::NotUnderKey, e.to_string()),
        DecideError::Replies(r) => ApiError::new(ErrorCode::BadBody, r.to_string()),
        e @ DecideError::MalformedProbe(_) => {
            ApiError::new(ErrorCode::MalformedProbe, e.to_string())
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct IdentificationQuery {
    gallery: String,
    #[serde(default)]
    epoch: u32,
    top_k: usize,
    aud: String,
    nonce: String,
}

/// Most indices an identification names.
pub const MAX_TOP_K: usize = 100;

#[derive(Serialize)]
struct IdentificationReply {
    identification: String,
}

async fn identification(
    State(st): State<Arc<DeciderState>>,
    query: Result<Query<IdentificationQuery>, QueryRejection>,
    MatcherBody(body, _): MatcherBody<RepliesLimit>,
) -> ApiResult<Json<IdentificationReply>> {
    let Query(q) = query?;
    check_name(&q.gallery)?;
    check_claims(&q.aud, &q.nonce)?;
    if q.top_k == 0 || q.top_k > MAX_TOP_K {
        return Err(ApiError::new(
            ErrorCode::BadTopK,
            format!("top_k must be in 1..={MAX_TOP_K}"),
        ));
    }
    let work = tokio::task::spawn_blocking(move || {
        let d = &st.decider;
        // A list: the score reply list, then the probe's check replies.
        let items = split(&body).map_err(|e| ApiError::format("identification request", e))?;
        let (first, rest) = items.split_first().ok_or_else(|| {
            ApiError::new(
                ErrorCode::Truncated,
                "identification request: no reply list",
            )
        })?;
        let list =
            replies::from_bytes(d.params(), d.dim(), first).map_err(|e| refusal(e.into()))?;
        let checks = CheckReplies::from_items(d.params(), rest, 1, d.one_hot_per_sample())
            .map_err(|e| ApiError::format("check replies", e))?;
        let req = IdentifyRequest {
            label: KeyLabel::gallery(&q.gallery, q.epoch),
            audience: &q.aud,
            nonce: &q.nonce,
            top_k: q.top_k,
        };
        d.identify(
            &req,
            &list,
            &checks,
            crate::server::store::now_secs() as u64,
        )
        .map_err(refusal)
    });
    let identification = work
        .await
        .map_err(|_| ApiError::internal("identification failed"))??;
    Ok(Json(IdentificationReply { identification }))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ErasureQuery {
    gallery: String,
    #[serde(default)]
    epoch: u32,
    block: usize,
}

async fn erasure(
    State(st): State<Arc<DeciderState>>,
    query: Result<Query<ErasureQuery>, QueryRejection>,
    MatcherBody(body, _): MatcherBody<CiphertextLimit>,
) -> ApiResult<impl IntoResponse> {
    let Query(q) = query?;
    check_name(&q.gallery)?;
    let work = tokio::task::spawn_blocking(move || {
        let d = &st.decider;
        let masked = crate::bfv::Ciphertext::from_bytes(d.params(), &body)
            .map_err(|e| ApiError::format("gallery ciphertext", e))?;
        d.erase_block(&KeyLabel::gallery(&q.gallery, q.epoch), &masked, q.block)
            .map(|ct| ct.to_bytes())
            .map_err(refusal)
    });
    let ct = work
        .await
        .map_err(|_| ApiError::internal("erasure failed"))??;
    Ok(([(header::CONTENT_TYPE, "application/octet-stream")], ct))
}
