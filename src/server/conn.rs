//! Connections whose exchanges are timed on the wire: from the first byte of
//! a request read off the socket to the last byte of its reply written to
//! it, the server's whole share of a request's round trip.
//!
//! The accept loop (`listen`) wraps each TCP connection in a
//! [`TimedStream`]. Each stream notes when a request's first bytes are read
//! and when reply bytes are written; HTTP/1.1 answers a connection's requests
//! in order, so an exchange ends with the last write before the next
//! request's first read (or the connection's end). The request log
//! middleware names the request of the exchange in flight
//! ([`ConnTiming::reply_handed_over`]); when that exchange ends, the stream
//! writes the request's `sent` log line with `wire_us`, the time between the
//! two.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// The timing state of one connection, shared between its stream and the
/// requests made on it (as their `ConnectInfo`).
#[derive(Debug, Default)]
pub struct ConnTiming(Mutex<Exchange>);

#[derive(Debug, Default)]
struct Exchange {
    /// When the exchange's first request bytes were read.
    start: Option<Instant>,
    /// When reply bytes were last written, if any were since `start`.
    last_write: Option<Instant>,
    /// The request whose reply this exchange carries, once handed over.
    request: Option<u64>,
}

impl ConnTiming {
    fn lock(&self) -> std::sync::MutexGuard<'_, Exchange> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn on_read(&self, now: Instant) {
        let mut x = self.lock();
        if x.last_write.is_some() {
            // The previous reply is complete: a new request begins.
            Self::finish(&mut x);
        }
        if x.start.is_none() {
            x.start = Some(now);
        }
    }

    fn on_write(&self, now: Instant) {
        self.lock().last_write = Some(now);
    }

    /// The request log middleware names the request whose reply is now
    /// being written; its `sent` line follows when the exchange ends.
    pub fn reply_handed_over(&self, request: u64) {
        self.lock().request = Some(request);
    }

    /// Since when the connection has waited for a request with none
    /// started: its previous reply's last write, or `opened` before its
    /// first request. `None` while a request is being read or answered.
    pub fn idle_since(&self, opened: Instant) -> Option<Instant> {
        let x = self.lock();
        match (x.start, x.last_write) {
            (_, Some(written)) => Some(written),
            (None, None) => Some(opened),
            (Some(_), None) => None,
        }
    }

    fn finish(x: &mut Exchange) {
        if let (Some(start), Some(end), Some(id)) = (x.start, x.last_write, x.request) {
            let wire_us = end.saturating_duration_since(start).as_micros() as u64;
            tracing::info!(id, wire_us, "sent");
        }
        *x = Exchange::default();
    }
}

/// The connection info requests see: their connection's [`ConnTiming`].
#[derive(Clone, Debug)]
pub struct ConnInfo(pub Arc<ConnTiming>);

/// A TCP stream that reports its reads and writes to its [`ConnTiming`].
#[derive(Debug)]
pub struct TimedStream {
    io: TcpStream,
    timing: Arc<ConnTiming>,
}

impl TimedStream {
    /// Wraps an accepted connection.
    pub fn new(io: TcpStream) -> Self {
        Self {
            io,
            timing: Arc::default(),
        }
    }

    /// The connection's timing state, shared with its requests.
    pub fn timing(&self) -> Arc<ConnTiming> {
        self.timing.clone()
    }
}

impl Drop for TimedStream {
    fn drop(&mut self) {
        ConnTiming::finish(&mut self.timing.lock());
    }
}

impl AsyncRead for TimedStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.io).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.timing.on_read(Instant::now());
        }
        polled
    }
}

impl AsyncWrite for TimedStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write(cx, buf);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.timing.on_write(Instant::now());
        }
        polled
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.timing.on_write(Instant::now());
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}
