//! Asking another replica for its shard's result: one HTTP/1.1 call on a
//! fresh connection, with the caller's `Authorization` header passed on
//! (the holder checks it as it would the caller's own request).

use std::time::Duration;

use axum::body::Bytes;
use http_body_util::Full;
use hyper::header;
use serde::{Deserialize, Serialize};

use crate::server::http1;

/// A call's deadline, connecting included.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// Largest answer read (a result is a few hundred bytes).
const MAX_ANSWER: usize = 64 << 10;

/// The body of `POST /v1/galleries/{gallery}/shards/{shard}/identify`.
#[derive(Debug, Serialize, Deserialize)]
pub struct ShardQuery {
    pub embedding: Vec<f32>,
    pub top_k: usize,
    /// The merging replica's nonce, signed back in the result.
    pub nonce: String,
    /// The gallery's revision when the merge began: the holder catches up
    /// at least to it.
    pub rev: i64,
}

/// Its answer.
#[derive(Debug, Serialize, Deserialize)]
pub struct ShardAnswer {
    pub result: String,
}

/// Why a call failed: the holder's JSON error code when it answered with
/// one.
#[derive(Debug)]
pub struct PeerError {
    pub code: Option<String>,
    pub message: String,
}

pub use crate::server::http1::authority;

/// Asks the holder at `url` for shard `shard` of `gallery`.
pub async fn shard_identify(
    url: &str,
    gallery: &str,
    shard: u32,
    query: &ShardQuery,
    authorization: Option<&str>,
) -> Result<ShardAnswer, PeerError> {
    let fail = |m: String| PeerError {
        code: None,
        message: format!("{url}: {m}"),
    };
    let host = authority(url).ok_or_else(|| fail("not an http://host:port URL".into()))?;
    let body = serde_json::to_vec(query).map_err(|e| fail(e.to_string()))?;
    let path = format!("/v1/galleries/{gallery}/shards/{shard}/identify");
    let call = async {
        let mut sender = http1::connect(host).await.map_err(fail)?;
        let mut req = hyper::Request::builder()
            .method("POST")
            .uri(&path)
            .header(header::HOST, host)
            .header(header::CONTENT_TYPE, "application/json");
        if let Some(a) = authorization {
            req = req.header(header::AUTHORIZATION, a);
        }
        let req = req
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| fail(e.to_string()))?;
        let (status, _, bytes) = http1::send(&mut sender, req, MAX_ANSWER)
            .await
            .map_err(fail)?;
        if status.is_success() {
            return serde_json::from_slice(&bytes).map_err(|e| fail(format!("answer: {e}")));
        }
        Err(match http1::refusal(&bytes) {
            Some((code, message)) => PeerError {
                code: Some(code),
                message: format!("{url}: {message}"),
            },
            None => fail(format!("status {status}")),
        })
    };
    tokio::time::timeout(CALL_TIMEOUT, call)
        .await
        .map_err(|_| fail("timed out".into()))?
}
