//! The request-logging middleware: one log line per request, request ids,
//! the security headers, the route's counters.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;
use tracing::Instrument;

use crate::server::metrics::Metrics;

use super::error::LoggedCode;
use super::verify::VerifyTimes;
use super::{AppState, CSP};

static NEXT_REQUEST_ID: AtomicU64 = AtomicU64::new(1);

/// Request ids, timings and security headers. Logs the method, path, status,
/// error code and duration; never a body.
pub(super) async fn request_log(
    State(st): State<Arc<AppState>>,
    req: Request,
    next: Next,
) -> Response {
    let id = NEXT_REQUEST_ID.fetch_add(1, Ordering::Relaxed);
    let route = Metrics::route_index(
        req.extensions()
            .get::<axum::extract::MatchedPath>()
            .map(|p| p.as_str()),
    );
    let span = tracing::info_span!("req", id, method = %req.method(), path = %req.uri().path());
    let conn = req
        .extensions()
        .get::<axum::extract::ConnectInfo<crate::server::conn::ConnInfo>>()
        .map(|c| c.0 .0.clone());
    let start = Instant::now();
    let resp = next.run(req).instrument(span.clone()).await;
    let code = resp.extensions().get::<LoggedCode>().map(|c| c.0.as_str());
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
/// the client goes away). Written here because `tower-http`'s trace layer
/// reports the end of a body's stream but not a body dropped before its end,
/// and the log line, the metrics and the connection's wire timing need both.
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
