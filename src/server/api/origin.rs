//! What a browser page on another site may do with the server
//! ([`BrowserPolicy`]): the `Host` check against DNS rebinding, the media
//! type every body must declare against cross-site form posts, and CORS
//! (none unless origins are listed).
//!
//! * `Host`: a page of `evil.example` whose name is made to resolve to the
//!   server's address sends `Host: evil.example`; only the allowed hosts
//!   are answered, anything else gets 421 `misdirected_host`.
//! * A cross-site page can send, without a CORS preflight, a body of type
//!   `text/plain`, `application/x-www-form-urlencoded` or
//!   `multipart/form-data` (or none): binary routes take only
//!   `application/octet-stream` and JSON routes only `application/json`
//!   (415 `unsupported_media_type`), so such a request writes nothing.
//! * CORS: without `--cors-origin` no response carries an
//!   `Access-Control-*` header and a preflight `OPTIONS` is refused (405),
//!   so a page of another origin can neither read a reply nor send any
//!   other request. With it, tower-http's `CorsLayer` answers the listed
//!   origins.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderValue, Method};
use axum::response::{IntoResponse, Response};
use tower_http::cors::{AllowOrigin, CorsLayer};

use super::extract::drain;
use super::{ApiError, ApiResult, ErrorCode};

/// The allowed `Host` values and the CORS origins.
#[derive(Clone, Debug)]
pub struct BrowserPolicy {
    hosts: Arc<Hosts>,
    cors: Vec<HeaderValue>,
}

/// Allowed `Host` values, lowercase: `name:port` entries match exactly,
/// entries without a port match the name with any port.
#[derive(Debug)]
struct Hosts {
    exact: Vec<String>,
    any_port: Vec<String>,
}

impl BrowserPolicy {
    /// The policy of a server bound to `addr`: `allowed` hosts (default:
    /// the bind address and the loopback names with its port) and `cors`
    /// origins (default none).
    pub fn new(addr: SocketAddr, allowed: &[String], cors: &[String]) -> Result<Self, String> {
        let mut hosts = Hosts {
            exact: Vec::new(),
            any_port: Vec::new(),
        };
        let names: Vec<String> = if allowed.is_empty() {
            let port = addr.port();
            vec![
                addr.to_string(),
                format!("localhost:{port}"),
                format!("127.0.0.1:{port}"),
                format!("[::1]:{port}"),
            ]
        } else {
            allowed.iter().map(|h| h.trim().to_string()).collect()
        };
        for name in names.into_iter().filter(|n| !n.is_empty()) {
            let name = name.to_ascii_lowercase();
            if name.contains('/') || name.contains(char::is_whitespace) {
                return Err(format!("--allowed-host {name}: not a host name"));
            }
            let list = if has_port(&name) {
                &mut hosts.exact
            } else {
                &mut hosts.any_port
            };
            if !list.contains(&name) {
                list.push(name);
            }
        }
        let cors = cors
            .iter()
            .map(|o| o.trim())
            .filter(|o| !o.is_empty())
            .map(|o| {
                let ok =
                    (o.starts_with("https://") || o.starts_with("http://")) && !o.ends_with('/');
                ok.then(|| HeaderValue::from_str(o).ok())
                    .flatten()
                    .ok_or_else(|| format!("--cors-origin {o}: want scheme://host[:port]"))
            })
            .collect::<Result<_, _>>()?;
        Ok(Self {
            hosts: Arc::new(hosts),
            cors,
        })
    }

    /// The allowed hosts, for the start-up log line.
    pub fn hosts(&self) -> String {
        let h = &self.hosts;
        h.exact
            .iter()
            .chain(&h.any_port)
            .cloned()
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Bound to every address with only the default hosts, the server
    /// answers loopback names only: says so at start.
    pub fn warn_if_unreachable(&self, addr: SocketAddr) {
        let loopback = |h: &String| {
            let name = strip_port(h);
            name == "localhost"
                || name == "127.0.0.1"
                || name == "[::1]"
                || name == addr.ip().to_string()
                || name == format!("[{}]", addr.ip())
        };
        let h = &self.hosts;
        let defaults = h.exact.iter().chain(&h.any_port).all(loopback);
        if addr.ip().is_unspecified() && defaults {
            tracing::warn!(
                "bound to every address but answering only Host localhost, 127.0.0.1 and [::1]: \
                 list the names clients use with --allowed-host"
            );
        }
    }

    fn allows(&self, host: &str) -> bool {
        let h = &self.hosts;
        let name = strip_port(host);
        h.exact.iter().any(|e| e.eq_ignore_ascii_case(host))
            || h.any_port.iter().any(|e| e.eq_ignore_ascii_case(name))
    }

    /// The CORS layer, if origins were listed.
    pub(super) fn cors(&self) -> Option<CorsLayer> {
        if self.cors.is_empty() {
            return None;
        }
        Some(
            CorsLayer::new()
                .allow_origin(AllowOrigin::list(self.cors.clone()))
                .allow_methods([Method::GET, Method::PUT, Method::POST, Method::DELETE])
                .allow_headers([header::CONTENT_TYPE])
                .expose_headers([
                    header::HeaderName::from_static("x-template-count"),
                    header::HeaderName::from_static("x-request-id"),
                    header::HeaderName::from_static("server-timing"),
                ])
                .max_age(std::time::Duration::from_secs(600)),
        )
    }
}

/// Whether a host value ends in `:port` (an IPv6 literal's colons are in
/// brackets).
fn has_port(host: &str) -> bool {
    match host.rfind(':') {
        Some(i) => !host[i..].contains(']') && host[i + 1..].bytes().all(|b| b.is_ascii_digit()),
        None => false,
    }
}

fn strip_port(host: &str) -> &str {
    if has_port(host) {
        host.rsplit_once(':').map_or(host, |(h, _)| h)
    } else {
        host
    }
}

/// `req` if its `Host` is allowed; else the 421 `misdirected_host` reply
/// (its body read and discarded up to 1 MiB first).
pub(super) async fn check_host(policy: &BrowserPolicy, req: Request) -> Result<Request, Response> {
    let allowed = req
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|h| policy.allows(h));
    if allowed {
        return Ok(req);
    }
    drain(req.into_body()).await;
    Err(ApiError::new(
        ErrorCode::MisdirectedHost,
        "this server does not answer for that Host",
    )
    .into_response())
}

/// Refuses a request with a body unless it declares `want` as its
/// `Content-Type` (parameters such as `charset` are ignored). A request
/// without a body (no `Content-Length`, or 0, and no `Transfer-Encoding`)
/// passes.
pub(super) fn require_media_type(headers: &HeaderMap, want: &str) -> ApiResult<()> {
    let declared_empty = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .is_none_or(|v| v.trim() == "0");
    if declared_empty && !headers.contains_key(header::TRANSFER_ENCODING) {
        return Ok(());
    }
    let essence = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(str::trim);
    match essence {
        Some(t) if t.eq_ignore_ascii_case(want) => Ok(()),
        _ => Err(ApiError::media_type(want)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_hosts_are_the_bind_address_and_loopback_names() {
        let p = BrowserPolicy::new("127.0.0.1:8080".parse().unwrap(), &[], &[]).unwrap();
        for ok in ["127.0.0.1:8080", "LOCALHOST:8080", "[::1]:8080"] {
            assert!(p.allows(ok), "{ok}");
        }
        for no in [
            "evil.example",
            "evil.example:8080",
            "localhost:8081",
            "localhost",
            "",
        ] {
            assert!(!p.allows(no), "{no}");
        }
        let p = BrowserPolicy::new(
            "0.0.0.0:80".parse().unwrap(),
            &["match.example".into(), "10.0.0.5:8080".into()],
            &[],
        )
        .unwrap();
        assert!(p.allows("match.example") && p.allows("match.example:443"));
        assert!(p.allows("10.0.0.5:8080") && !p.allows("10.0.0.5:8081"));
        assert!(!p.allows("localhost:80"));
    }

    #[test]
    fn bodies_must_declare_the_route_type() {
        let mut h = HeaderMap::new();
        assert!(require_media_type(&h, "application/json").is_ok());
        h.insert(header::CONTENT_LENGTH, HeaderValue::from_static("5"));
        assert!(require_media_type(&h, "application/json").is_err());
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
        assert!(require_media_type(&h, "application/json").is_err());
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("Application/JSON; charset=utf-8"),
        );
        assert!(require_media_type(&h, "application/json").is_ok());
    }
}
