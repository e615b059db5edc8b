//! The matcher's calls to the decider (docs/API.md, "The decider"): HTTP/1.1
//! over TCP, each call with the matcher's bearer token, on a connection
//! kept for the next call when it can be.

use std::sync::Mutex;
use std::time::Duration;

use axum::body::Bytes;
use http_body_util::Full;
use hyper::header::{self, HeaderMap};
use serde::Deserialize;
use zeroize::Zeroizing;

use crate::server::api::{ApiError, ErrorCode};
use crate::server::decider::http::KEY_STATEMENT_HEADER;
use crate::server::decider::{KeyKind, KeyLabel};
use crate::server::http1::{self, Sender};

/// Connections kept open for later calls.
const IDLE_CONNECTIONS: usize = 8;
/// Largest answer read from the decider (a keys framing is about 230 KB).
const MAX_ANSWER: usize = 1 << 20;
/// A call's deadline, connecting included.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a call to the decider failed.
#[derive(Debug, thiserror::Error)]
pub enum DeciderError {
    /// No connection, a broken one, a timeout, an unreadable answer.
    #[error("decider unreachable: {0}")]
    Transport(String),
    /// The decider answered with a JSON error.
    #[error("decider refused ({status} {code}): {message}")]
    Refused {
        status: u16,
        code: String,
        message: String,
    },
}

impl DeciderError {
    /// The decider's error code, when it answered with one.
    pub fn code(&self) -> Option<&str> {
        match self {
            Self::Refused { code, .. } => Some(code),
            Self::Transport(_) => None,
        }
    }
}

impl From<DeciderError> for ApiError {
    fn from(e: DeciderError) -> Self {
        // The decider's `not_under_key` is the client's fault (a probe
        // under another key); everything else is the matcher's problem and
        // is reported as such, its detail in the log only.
        match &e {
            DeciderError::Refused { code, message, .. } if code == "not_under_key" => {
                ApiError::new(ErrorCode::NotUnderKey, message.clone())
            }
            DeciderError::Refused { code, message, .. } if code == "malformed_template" => {
                ApiError::new(ErrorCode::MalformedTemplate, message.clone())
            }
            DeciderError::Refused { code, message, .. } if code == "malformed_probe" => {
                ApiError::new(ErrorCode::MalformedProbe, message.clone())
            }
            _ => {
                tracing::error!(error = %e, "call to the decider");
                ApiError::new(
                    ErrorCode::DeciderUnavailable,
                    "the decider could not be reached",
                )
            }
        }
    }
}

/// A client of one decider.
pub struct DeciderClient {
    /// `host:port`, for connecting and for the `Host` header.
    authority: String,
    /// The `Authorization` header's value.
    bearer: Zeroizing<String>,
    idle: Mutex<Vec<Sender>>,
}

impl std::fmt::Debug for DeciderClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeciderClient")
            .field("authority", &self.authority)
            .finish_non_exhaustive()
    }
}

impl DeciderClient {
    /// A client of the decider at `url` (`http://host:port`, no path), which
    /// presents `token`.
    pub fn new(url: &str, token: &str) -> Result<Self, String> {
        let authority = http1::authority(url).ok_or_else(|| {
            format!("--decider {url}: http://host:port, with no path, is expected")
        })?;
        let token = token.trim();
        if token.is_empty() {
            return Err("the decider token file is empty".into());
        }
        Ok(Self {
            authority: authority.to_string(),
            bearer: Zeroizing::new(format!("Bearer {token}")),
            idle: Mutex::new(Vec::new()),
        })
    }

    /// `GET /v1/user-keys/{user}?epoch=E`: the keys framing of the user's
    /// public and relinearization keys, and the decider's signed key
    /// statement.
    pub async fn user_keys(&self, user: &str, epoch: u32) -> Result<(Bytes, String), DeciderError> {
        self.keys(&format!("/v1/user-keys/{user}?epoch={epoch}"))
            .await
    }

    /// `GET /v1/gallery-keys/{gallery}?epoch=E`: as [`Self::user_keys`],
    /// for a gallery.
    pub async fn gallery_keys(
        &self,
        gallery: &str,
        epoch: u32,
    ) -> Result<(Bytes, String), DeciderError> {
        self.keys(&format!("/v1/gallery-keys/{gallery}?epoch={epoch}"))
            .await
    }

    async fn keys(&self, path: &str) -> Result<(Bytes, String), DeciderError> {
        let (headers, body) = self.call("GET", path, Bytes::new()).await?;
        let statement = headers
            .get(KEY_STATEMENT_HEADER)
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| {
                DeciderError::Transport("the keys came without a key statement".into())
            })?;
        Ok((body, statement.to_string()))
    }

    /// `POST /v1/identifications`: the score reply list and the probe's
    /// check replies in (framed as a list), the signed identification out.
    pub async fn identification(
        &self,
        query: &IdentificationQuery<'_>,
        replies: Vec<u8>,
    ) -> Result<String, DeciderError> {
        #[derive(Deserialize)]
        struct Answer {
            identification: String,
        }
        let path = format!("/v1/identifications?{}", query.encode());
        let (_, body) = self.call("POST", &path, Bytes::from(replies)).await?;
        let a: Answer = serde_json::from_slice(&body)
            .map_err(|e| DeciderError::Transport(format!("identification answer: {e}")))?;
        Ok(a.identification)
    }

    /// `POST /v1/erasures`: a masked gallery ciphertext in, a fresh
    /// encryption of it with block `block` zeroed out.
    pub async fn erasure(
        &self,
        gallery: &str,
        epoch: u32,
        block: usize,
        masked: Vec<u8>,
    ) -> Result<Bytes, DeciderError> {
        let path = format!("/v1/erasures?gallery={gallery}&epoch={epoch}&block={block}");
        Ok(self.call("POST", &path, Bytes::from(masked)).await?.1)
    }

    /// `POST /v1/verdicts`: the compact reply in, the signed verdict out.
    pub async fn verdict(
        &self,
        query: &VerdictQuery<'_>,
        reply: Vec<u8>,
    ) -> Result<String, DeciderError> {
        #[derive(Deserialize)]
        struct Answer {
            verdict: String,
        }
        let path = format!("/v1/verdicts?{}", query.encode());
        let (_, body) = self.call("POST", &path, Bytes::from(reply)).await?;
        let a: Answer = serde_json::from_slice(&body)
            .map_err(|e| DeciderError::Transport(format!("verdict answer: {e}")))?;
        Ok(a.verdict)
    }

    /// `POST /v1/template-checks`: `Ok` when the decider finds every sample
    /// of a template well-formed under `owner`'s key, a user's or a
    /// gallery's (the check replies in `body`, framed as a list); 422
    /// `malformed_template` otherwise.
    pub async fn check_template(
        &self,
        owner: &KeyLabel<'_>,
        samples: u32,
        body: Vec<u8>,
    ) -> Result<(), DeciderError> {
        let kind = match owner.kind {
            KeyKind::User => "user",
            KeyKind::Gallery => "gallery",
        };
        let path = format!(
            "/v1/template-checks?{kind}={}&epoch={}&samples={samples}",
            percent(owner.name),
            owner.epoch
        );
        self.call("POST", &path, Bytes::from(body)).await.map(drop)
    }

    /// `GET /.well-known/jwks.json`: the verdict keys.
    pub async fn jwks(&self) -> Result<Bytes, DeciderError> {
        Ok(self
            .call("GET", "/.well-known/jwks.json", Bytes::new())
            .await?
            .1)
    }

    async fn call(
        &self,
        method: &str,
        path: &str,
        body: Bytes,
    ) -> Result<(HeaderMap, Bytes), DeciderError> {
        tokio::time::timeout(CALL_TIMEOUT, self.exchange(method, path, body))
            .await
            .map_err(|_| DeciderError::Transport(format!("{method} {path}: timed out")))?
    }

    async fn exchange(
        &self,
        method: &str,
        path: &str,
        body: Bytes,
    ) -> Result<(HeaderMap, Bytes), DeciderError> {
        let transport =
            |e: &dyn std::fmt::Display| DeciderError::Transport(format!("{method} {path}: {e}"));
        let mut sender = match self.take_idle() {
            Some(s) => s,
            None => self.connect().await?,
        };
        let req = hyper::Request::builder()
            .method(method)
            .uri(path)
            .header(header::HOST, &self.authority)
            .header(header::AUTHORIZATION, self.bearer.as_str())
            .header(header::CONTENT_TYPE, "application/octet-stream")
            .body(Full::new(body))
            .map_err(|e| transport(&e))?;
        let (status, headers, bytes) = http1::send(&mut sender, req, MAX_ANSWER)
            .await
            .map_err(|e| transport(&e))?;
        self.put_idle(sender);
        if status.is_success() {
            return Ok((headers, bytes));
        }
        let (code, message) = http1::refusal(&bytes)
            .unwrap_or_else(|| (String::new(), String::from_utf8_lossy(&bytes).into_owned()));
        Err(DeciderError::Refused {
            status: status.as_u16(),
            code,
            message,
        })
    }

    async fn connect(&self) -> Result<Sender, DeciderError> {
        http1::connect(&self.authority)
            .await
            .map_err(DeciderError::Transport)
    }

    fn take_idle(&self) -> Option<Sender> {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        while let Some(s) = idle.pop() {
            if !s.is_closed() {
                return Some(s);
            }
        }
        None
    }

    fn put_idle(&self, sender: Sender) {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < IDLE_CONNECTIONS && !sender.is_closed() {
            idle.push(sender);
        }
    }
}

/// The query of a verdict request.
#[derive(Clone, Debug)]
pub struct VerdictQuery<'a> {
    pub user: &'a str,
    pub epoch: u32,
    pub samples: u32,
    pub aud: &'a str,
    pub nonce: &'a str,
    /// Whether the user's template passed the check at enrollment.
    pub template_checked: bool,
}

impl VerdictQuery<'_> {
    fn encode(&self) -> String {
        format!(
            "user={}&epoch={}&samples={}&aud={}&nonce={}&template_checked={}",
            percent(self.user),
            self.epoch,
            self.samples,
            percent(self.aud),
            percent(self.nonce),
            self.template_checked
        )
    }
}

/// The query of an identification request.
#[derive(Clone, Debug)]
pub struct IdentificationQuery<'a> {
    pub gallery: &'a str,
    pub epoch: u32,
    pub top_k: usize,
    pub aud: &'a str,
    pub nonce: &'a str,
}

impl IdentificationQuery<'_> {
    fn encode(&self) -> String {
        format!(
            "gallery={}&epoch={}&top_k={}&aud={}&nonce={}",
            percent(self.gallery),
            self.epoch,
            self.top_k,
            percent(self.aud),
            percent(self.nonce)
        )
    }
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
fn percent(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_percent_encoded() {
        let q = VerdictQuery {
            user: "alice",
            epoch: 2,
            samples: 3,
            aud: "https://rp.example/a b&c",
            nonce: "n0~_.-",
            template_checked: true,
        };
        assert_eq!(
            q.encode(),
            "user=alice&epoch=2&samples=3&aud=https%3A%2F%2Frp.example%2Fa%20b%26c&nonce=n0~_.-\
             &template_checked=true"
        );
    }

    #[test]
    fn only_http_host_port_urls_are_accepted() {
        assert!(DeciderClient::new("http://127.0.0.1:8081", "t").is_ok());
        assert!(DeciderClient::new("http://127.0.0.1:8081/", "t").is_ok());
        for bad in [
            "127.0.0.1:8081",
            "https://h:1",
            "http://h",
            "http://h:1/x",
            "http://",
        ] {
            assert!(DeciderClient::new(bad, "t").is_err(), "{bad}");
        }
        assert!(DeciderClient::new("http://h:1", " \n").is_err());
    }
}
