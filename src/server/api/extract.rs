//! Extractors: validated user and gallery names, and binary bodies read
//! against their route's limit.

use std::marker::PhantomData;

use axum::body::{Body, Bytes};
use axum::extract::{FromRef, FromRequest, FromRequestParts, Path, Request};
use axum::http::{header, request::Parts, HeaderMap};

use super::{ApiError, ApiResult, ErrorCode, Limits};

/// Longest user or gallery name.
pub const MAX_NAME_LEN: usize = 64;

/// How far past a route's limit a body is still read (and discarded) before
/// the 413 is sent, so that a client that writes its whole body before
/// reading the reply sees the JSON error instead of a reset connection. A
/// body declared longer than that is refused without reading it.
const DRAIN_CAP: usize = 1 << 20;

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
        Err(ApiError::new(ErrorCode::BadName, format!("names are 1 to {MAX_NAME_LEN} characters of A-Z a-z 0-9 . _ - (not starting with a dot)"),
        ))
    }
}

/// Longest `aud` and `nonce` a verdict or an identification may name.
pub const MAX_CLAIM_LEN: usize = 256;

/// A claim the caller names (`aud`, `nonce`; `what` says which): 1 to
/// [`MAX_CLAIM_LEN`] printable characters, else 400 `bad_query`.
pub fn check_claim(what: &str, value: &str) -> ApiResult<()> {
    if value.is_empty() || value.len() > MAX_CLAIM_LEN || value.chars().any(char::is_control) {
        return Err(ApiError::new(
            ErrorCode::BadQuery,
            format!("{what}: 1 to {MAX_CLAIM_LEN} printable characters"),
        ));
    }
    Ok(())
}

/// The path parameter `key`, percent-decoded, as a checked name.
async fn path_name<S: Send + Sync>(parts: &mut Parts, state: &S, key: &str) -> ApiResult<String> {
    let Path(params) = Path::<Vec<(String, String)>>::from_request_parts(parts, state).await?;
    let name = params
        .into_iter()
        .find_map(|(k, v)| (k == key).then_some(v))
        .ok_or_else(|| ApiError::internal("route without its name parameter"))?;
    check_name(&name)?;
    Ok(name)
}

/// Declares the extractor of one name parameter of a route (`{user}`,
/// `{gallery}`), checked by [`check_name`].
macro_rules! name_extractor {
    ($(#[$doc:meta])* $name:ident, $key:literal) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name(pub String);

        impl<S: Send + Sync> FromRequestParts<S> for $name {
            type Rejection = ApiError;

            async fn from_request_parts(parts: &mut Parts, state: &S) -> ApiResult<Self> {
                path_name(parts, state, $key).await.map(Self)
            }
        }
    };
}

name_extractor!(
    /// The `{user}` of a route, checked by [`check_name`].
    UserName,
    "user"
);

name_extractor!(
    /// The `{gallery}` of a route, checked by [`check_name`].
    GalleryName,
    "gallery"
);

/// The media type of every binary body.
pub const OCTETS: &str = "application/octet-stream";

/// Which of [`Limits`] bounds a binary body.
pub trait RouteLimit {
    fn limit(limits: &Limits) -> usize;
}

/// Bodies that hold one compact score reply (the decider's).
#[derive(Debug)]
pub struct ReplyLimit;

impl RouteLimit for ReplyLimit {
    fn limit(limits: &Limits) -> usize {
        limits.reply
    }
}

/// Bodies that hold an identification's score replies (the decider's).
#[derive(Debug)]
pub struct RepliesLimit;

impl RouteLimit for RepliesLimit {
    fn limit(limits: &Limits) -> usize {
        limits.replies
    }
}

/// Bodies that hold one ciphertext.
#[derive(Debug)]
pub struct CiphertextLimit;

impl RouteLimit for CiphertextLimit {
    fn limit(limits: &Limits) -> usize {
        limits.ciphertext
    }
}

/// A template upload (a bundle in login mode).
#[derive(Debug)]
pub struct TemplateLimit;

impl RouteLimit for TemplateLimit {
    fn limit(limits: &Limits) -> usize {
        limits.template
    }
}

/// A login probe (a bundle).
#[derive(Debug)]
pub struct ProbeLimit;

impl RouteLimit for ProbeLimit {
    fn limit(limits: &Limits) -> usize {
        limits.probe
    }
}

/// What a decider reads for a verdict.
#[derive(Debug)]
pub struct VerdictLimit;

impl RouteLimit for VerdictLimit {
    fn limit(limits: &Limits) -> usize {
        limits.verdict
    }
}

/// What a decider reads to check a template.
#[derive(Debug)]
pub struct TemplateChecksLimit;

impl RouteLimit for TemplateChecksLimit {
    fn limit(limits: &Limits) -> usize {
        limits.template_checks
    }
}

/// The keys body (a public key and an optional relinearization key).
#[derive(Debug)]
pub struct KeysLimit;

impl RouteLimit for KeysLimit {
    fn limit(limits: &Limits) -> usize {
        limits.keys
    }
}

/// A binary body of at most `L`'s limit; a longer one is refused with 413
/// (read up to 1 MiB past the limit and discarded first, so that the
/// client reads the JSON error rather than a reset connection). A body
/// whose `Content-Type` is not `application/octet-stream` is refused with
/// 415 before it is read.
#[derive(Debug)]
pub struct BinaryBody<L>(pub Bytes, pub PhantomData<L>);

/// A body that holds one ciphertext.
pub type CiphertextBody = BinaryBody<CiphertextLimit>;

/// A keys body.
pub type KeysBody = BinaryBody<KeysLimit>;

impl<S, L> FromRequest<S> for BinaryBody<L>
where
    S: Send + Sync,
    Limits: FromRef<S>,
    L: RouteLimit,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> ApiResult<Self> {
        let limit = L::limit(&Limits::from_ref(state));
        let (parts, body) = req.into_parts();
        if let Err(e) = super::origin::require_media_type(&parts.headers, OCTETS) {
            // Read and discarded, as for 413, so the client sees the error.
            drain(body).await;
            return Err(e);
        }
        let bytes = read_body(&parts.headers, body, limit).await?;
        Ok(Self(bytes, PhantomData))
    }
}

/// Reads and discards a body (up to [`DRAIN_CAP`]) that a route does not
/// use, so the client reads the reply instead of a reset connection.
pub(crate) async fn drain(body: Body) {
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
        return Err(ApiError::too_large(limit));
    }
    let mut buf: Vec<u8> = Vec::with_capacity(declared.map_or(0, |n| n.min(limit as u64) as usize));
    let mut seen = 0usize;
    let mut body = body;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| {
            if super::deadline::is_timeout(&e) {
                ApiError::body_timeout()
            } else {
                ApiError::new(ErrorCode::BadBody, format!("reading the body: {e}"))
            }
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
        return Err(ApiError::too_large(limit));
    }
    Ok(Bytes::from(buf))
}
