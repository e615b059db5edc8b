//! The server's outgoing HTTP/1.1 calls (to the decider, to other
//! replicas): `http://host:port` addresses, a connection over TCP, one
//! request and its size-limited answer, and the JSON error body every
//! blindmatch process answers refusals with.

use axum::body::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::client::conn::http1::{self, SendRequest};
use hyper::header::HeaderMap;
use hyper::StatusCode;
use hyper_util::rt::TokioIo;
use serde::Deserialize;
use tokio::net::TcpStream;

/// A connection's request half (its driver runs as a task of its own).
pub type Sender = SendRequest<Full<Bytes>>;

/// `http://host:port` (no path) → `host:port`.
pub fn authority(url: &str) -> Option<&str> {
    let a = url.strip_prefix("http://")?.trim_end_matches('/');
    (!a.is_empty() && !a.contains('/') && a.contains(':')).then_some(a)
}

/// A new connection to `authority`.
pub async fn connect(authority: &str) -> Result<Sender, String> {
    let stream = TcpStream::connect(authority)
        .await
        .map_err(|e| format!("connect {authority}: {e}"))?;
    let _ = stream.set_nodelay(true);
    let (sender, conn) = http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("handshake: {e}"))?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(sender)
}

/// Sends `req` on `sender` and reads its answer, at most `max_answer`
/// bytes of body.
pub async fn send(
    sender: &mut Sender,
    req: hyper::Request<Full<Bytes>>,
    max_answer: usize,
) -> Result<(StatusCode, HeaderMap, Bytes), String> {
    let resp = sender.send_request(req).await.map_err(|e| e.to_string())?;
    let status = resp.status();
    let (parts, body) = resp.into_parts();
    let bytes = Limited::new(body, max_answer)
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    Ok((status, parts.headers, bytes))
}

/// A refusal's `{error, code}` body: its code and message, `None` when
/// the body is not one.
pub fn refusal(body: &[u8]) -> Option<(String, String)> {
    #[derive(Deserialize)]
    struct ErrorBody {
        error: String,
        code: String,
    }
    serde_json::from_slice::<ErrorBody>(body)
        .ok()
        .map(|e| (e.code, e.error))
}

#[cfg(test)]
mod tests {
    use super::refusal;

    #[test]
    fn refusals_are_read_from_the_json_error_body() {
        assert_eq!(
            refusal(br#"{"error":"no such gallery","code":"unknown_gallery"}"#),
            Some(("unknown_gallery".into(), "no such gallery".into()))
        );
        assert_eq!(refusal(b"<html>"), None);
    }
}
