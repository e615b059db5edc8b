//! The body deadline: a request's body must arrive in full within
//! `--body-timeout-ms` of its head, however it trickles in. Reading it past
//! that fails with [`BodyTimeout`], which the extractors answer with 408
//! `body_timeout`; the connection is then closed, its body unread.
//!
//! tower-http's `RequestBodyTimeoutLayer` restarts its timer on every frame,
//! so a body sent a byte at a time never trips it; this deadline is fixed
//! when the head has been read.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::Request;
use http_body::{Body as HttpBody, Frame, SizeHint};

/// The error a body yields once its deadline has passed.
#[derive(Debug)]
pub struct BodyTimeout;

impl std::fmt::Display for BodyTimeout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the body did not arrive within the body deadline")
    }
}

impl std::error::Error for BodyTimeout {}

/// Whether `e` or an error under it is a [`BodyTimeout`] (axum's
/// rejections keep their cause's message, not always the cause itself).
pub(super) fn is_timeout(e: &(dyn std::error::Error + 'static)) -> bool {
    let message = BodyTimeout.to_string();
    let mut cur = Some(e);
    while let Some(e) = cur {
        if e.is::<BodyTimeout>() || e.to_string().contains(&message) {
            return true;
        }
        cur = e.source();
    }
    false
}

/// `req` with its body bounded by a deadline `timeout` from now.
pub(super) fn bound(req: Request, timeout: Duration) -> Request {
    let at = tokio::time::Instant::now() + timeout;
    req.map(|inner| {
        Body::new(Deadlined {
            inner,
            at,
            timer: None,
        })
    })
}

/// A body that fails with [`BodyTimeout`] once `at` has passed. The timer
/// is made the first time the body has to wait, so a body that is already
/// there (most are) never arms one.
struct Deadlined {
    inner: Body,
    at: tokio::time::Instant,
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl HttpBody for Deadlined {
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if let Poll::Ready(frame) = Pin::new(&mut self.inner).poll_frame(cx) {
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        let at = self.at;
        let timer = self
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(at)));
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err(Box::new(BodyTimeout)))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
