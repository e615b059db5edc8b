//! Who may call what: the credential each route needs ([`access`], the one
//! table of it), the relying parties' API keys ([`ApiKeys`]), and the
//! middleware that checks them before a handler runs ([`guard`]).
//!
//! Credentials travel in `Authorization`:
//!
//! * `Bearer <api key>`: a relying party's backend (`--api-key-file`);
//! * `Ticket <ticket>`: an enrollment ticket, one-time, bound to a user
//!   (the handler takes it: `PUT .../template`);
//! * `Verdict <jws>`: a fresh accept verdict for the user in the path
//!   (re-enrolling or deleting oneself, login mode).
//!
//! A refused request's body is drained (up to a bound) and nothing runs.

use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::server::routes;
use crate::server::verdict::Claims;

use super::extract::drain;
use super::state::db;
use super::{ApiError, ApiResult, AppState, ErrorCode};

/// The relying parties' API keys, as SHA-256 digests.
#[derive(Clone, Default)]
pub struct ApiKeys(Vec<[u8; 32]>);

impl std::fmt::Debug for ApiKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ApiKeys({} keys)", self.0.len())
    }
}

/// Shortest API key accepted (a 128-bit key in base64 is 22 characters).
pub const MIN_API_KEY_LEN: usize = 20;

impl ApiKeys {
    /// The keys of `path`: one per line; blank lines and `#` comments
    /// skipped; each at least [`MIN_API_KEY_LEN`] characters.
    pub fn load(path: &Path) -> Result<Self, String> {
        let text = zeroize::Zeroizing::new(
            std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?,
        );
        Self::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    fn parse(text: &str) -> Result<Self, String> {
        let mut keys = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let key = line.trim();
            if key.is_empty() || key.starts_with('#') {
                continue;
            }
            if key.len() < MIN_API_KEY_LEN || key.chars().any(|c| c.is_whitespace()) {
                return Err(format!(
                    "line {}: an API key is at least {MIN_API_KEY_LEN} characters, without spaces",
                    i + 1
                ));
            }
            keys.push(Sha256::digest(key.as_bytes()).into());
        }
        if keys.is_empty() {
            return Err("no API key in the file".into());
        }
        Ok(Self(keys))
    }

    /// No keys: the management API is open.
    pub fn is_open(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `presented` is one of the keys, compared in constant time
    /// (on digests, against every key).
    pub fn accepts(&self, presented: &str) -> bool {
        self.find(presented).is_some()
    }

    /// Which key `presented` is (its place in the file), compared in
    /// constant time against every key.
    pub fn find(&self, presented: &str) -> Option<usize> {
        let digest: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
        let (found, at) = self.0.iter().enumerate().fold(
            (subtle::Choice::from(0), 0u64),
            |(found, at), (i, k)| {
                let hit = k.ct_eq(&digest);
                (
                    found | hit,
                    subtle::ConditionallySelectable::conditional_select(&at, &(i as u64), hit),
                )
            },
        );
        bool::from(found).then_some(at as usize)
    }
}

/// What a route needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Anyone.
    Public,
    /// An API key.
    ApiKey,
    /// An API key, an enrollment ticket, or (login mode) an accept verdict
    /// for the user in the path.
    Enroll,
    /// An API key or (login mode) an accept verdict for the user.
    Owner,
}

/// The credential each route needs: the one table of it (docs/API.md,
/// "Authorization", lists the same).
pub fn access(path: &str, method: &Method, metrics_public: bool) -> Access {
    use Access::*;
    match (path, method.as_str()) {
        (routes::HEALTHZ | routes::PARAMS, _) => Public,
        (routes::METRICS, _) if metrics_public => Public,
        (routes::USER_VERIFY | routes::USER_LOGIN | routes::USER_PUBLIC_KEY, _) => Public,
        (routes::JWKS | routes::SERVICE_PUBLIC_KEY | routes::GALLERY_PUBLIC_KEY, _) => Public,
        (routes::CLUSTER_KEYS, _) => Public,
        (routes::USER_KEYS | routes::USER_TEMPLATE, _) => Enroll,
        (routes::USER, "DELETE") => Owner,
        // Users' metadata, tickets, challenges, galleries, metrics.
        _ => ApiKey,
    }
}

/// Who the caller proved to be (a request extension for the handlers).
#[derive(Clone, Debug)]
pub enum Caller {
    /// No API keys are configured: the management API is open.
    Open,
    /// A relying party's backend, by its key's place in the key file.
    ApiKey(usize),
    /// Holds an enrollment ticket, not yet taken (the handler takes it).
    Ticket(String),
    /// The user in the path, by a fresh accept verdict.
    Verdict(Box<Claims>),
    /// A public route: nobody in particular.
    Anyone,
}

/// The client's address (a request extension set by the accept loop).
#[derive(Clone, Copy, Debug)]
pub struct PeerAddr(pub IpAddr);

/// The address a request counts against: its peer's, or the last hop of
/// `X-Forwarded-For` when the peer is a trusted proxy.
pub fn client_addr(
    st: &AppState,
    req_headers: &axum::http::HeaderMap,
    peer: Option<PeerAddr>,
) -> IpAddr {
    let peer = peer.map_or(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED), |p| p.0);
    if !st.trusted_proxies.contains(&peer) {
        return peer;
    }
    req_headers
        .get("x-forwarded-for")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.rsplit(',').next())
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(peer)
}

fn credential(headers: &axum::http::HeaderMap) -> Option<(&str, &str)> {
    let v = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, value) = v.split_once(' ')?;
    Some((scheme, value.trim()))
}

/// The middleware: checks the credential the route needs, then passes the
/// request on with its [`Caller`].
pub(super) async fn guard(State(st): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    let Some(path) = req
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_string())
    else {
        return next.run(req).await;
    };
    let (mut parts, body) = req.into_parts();
    let need = access(&path, &parts.method, st.metrics_public);
    let user = path_user(parts.uri.path());
    match authorize(&st, need, credential(&parts.headers), user).await {
        Ok(caller) => {
            parts.extensions.insert(caller);
            next.run(Request::from_parts(parts, body)).await
        }
        Err(e) => {
            drain(body).await;
            e.into_response()
        }
    }
}

/// The user named in a request's path (`/v1/users/{user}/...`), if any.
fn path_user(path: &str) -> Option<&str> {
    path.strip_prefix("/v1/users/")?.split('/').next()
}

async fn authorize(
    st: &AppState,
    need: Access,
    presented: Option<(&str, &str)>,
    user: Option<&str>,
) -> ApiResult<Caller> {
    if need == Access::Public {
        return Ok(Caller::Anyone);
    }
    if st.api_keys.is_open() {
        return Ok(Caller::Open);
    }
    let unauthorized = |why: &str| ApiError::new(ErrorCode::Unauthorized, why.to_string());
    let Some((scheme, value)) = presented else {
        return Err(unauthorized(match need {
            Access::ApiKey => "this route needs the API key (Authorization: Bearer)",
            Access::Enroll => "this route needs the API key or an enrollment ticket",
            _ => "this route needs the API key or an accept verdict",
        }));
    };
    match (scheme, need) {
        ("Bearer", _) => match st.api_keys.find(value) {
            Some(key) => Ok(Caller::ApiKey(key)),
            None => Err(unauthorized("wrong API key")),
        },
        ("Ticket", Access::Enroll) => Ok(Caller::Ticket(value.to_string())),
        ("Verdict", Access::Enroll | Access::Owner) => {
            let (Some(login), Some(user)) = (&st.login, user) else {
                return Err(unauthorized("verdicts are credentials in login mode only"));
            };
            let now = crate::server::store::now_secs() as u64;
            let claims = login.check_verdict(value, user, now).await?;
            // Once only, across restarts too.
            let (nonce, exp) = (claims.nonce.clone(), claims.exp);
            if !db(&st.store, move |s| s.use_verdict(&nonce, exp, now)).await? {
                return Err(ApiError::new(
                    ErrorCode::InvalidVerdict,
                    "the verdict was used already",
                ));
            }
            Ok(Caller::Verdict(Box::new(claims)))
        }
        _ => Err(unauthorized("this credential is not accepted here")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_key_files_are_parsed_and_checked() {
        let keys = ApiKeys::parse(
            "# relying party A\nk-aaaaaaaaaaaaaaaaaaaaaaaa\n\n  k-bbbbbbbbbbbbbbbbbbbbbbbb  \n",
        )
        .unwrap();
        assert!(keys.accepts("k-aaaaaaaaaaaaaaaaaaaaaaaa"));
        assert!(keys.accepts("k-bbbbbbbbbbbbbbbbbbbbbbbb"));
        assert!(!keys.accepts("k-aaaaaaaaaaaaaaaaaaaaaaab"));
        assert!(!keys.accepts(""));
        assert_eq!(keys.find("k-bbbbbbbbbbbbbbbbbbbbbbbb"), Some(1));
        assert_eq!(keys.find("k-aaaaaaaaaaaaaaaaaaaaaaaa"), Some(0));
        assert!(!keys.is_open());
        assert!(ApiKeys::parse("# none\n\n").is_err());
        assert!(ApiKeys::parse("short\n").is_err());
        assert!(ApiKeys::parse("has a space in the middle ok\n").is_err());
        assert!(ApiKeys::default().is_open());
    }

    #[test]
    fn the_access_table() {
        let get = Method::GET;
        let post = Method::POST;
        assert_eq!(access(routes::HEALTHZ, &get, false), Access::Public);
        assert_eq!(access(routes::METRICS, &get, false), Access::ApiKey);
        assert_eq!(access(routes::METRICS, &get, true), Access::Public);
        assert_eq!(access(routes::USER, &get, false), Access::ApiKey);
        assert_eq!(access(routes::USER, &Method::DELETE, false), Access::Owner);
        assert_eq!(
            access(routes::USER_TEMPLATE, &Method::PUT, false),
            Access::Enroll
        );
        assert_eq!(access(routes::USER_TICKETS, &post, false), Access::ApiKey);
        assert_eq!(
            access(routes::USER_CHALLENGES, &post, false),
            Access::ApiKey
        );
        assert_eq!(access(routes::USER_LOGIN, &post, false), Access::Public);
        assert_eq!(
            access(routes::GALLERY_IDENTIFY, &post, false),
            Access::ApiKey
        );
        assert_eq!(access(routes::GALLERIES, &get, false), Access::ApiKey);
        assert_eq!(access(routes::GALLERY, &Method::PUT, false), Access::ApiKey);
        assert_eq!(
            access(routes::GALLERY_PUBLIC_KEY, &get, false),
            Access::Public
        );
    }
}
