//! The accept loop: HTTP/1.1 connections (hyper) served up to a cap, each
//! with a header deadline and an idle timeout, stopped gracefully.
//!
//! * The connection cap is a semaphore: a permit is taken before each
//!   `accept` and held by the connection's task, so when every permit is
//!   out the loop stops accepting and further connections wait in the
//!   kernel's accept backlog until one closes (nothing is accepted only to
//!   be closed).
//! * The header deadline is hyper's `header_read_timeout`: a request's
//!   head must arrive in full within it of the connection becoming ready
//!   for a request (accepted, or its previous reply sent), or the
//!   connection is closed without a reply.
//! * The idle timeout: a connection that waits that long with no request
//!   started (see [`ConnTiming::idle_since`]) is shut down gracefully.
//!   Every reply says so in a `Keep-Alive: timeout=<whole seconds>` header,
//!   which HTTP clients (Node's agent and `fetch`, browsers) take to close
//!   an idle connection about a second earlier themselves: a client then
//!   never sends a request on a connection the server is closing (a reset
//!   that clients do not retry for a POST, and Node's agent not even for a
//!   GET).
//! * The body deadline is a layer of the router (`api::deadline`).

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::ConnectInfo;
use axum::http::header::{HeaderName, HeaderValue};
use axum::Router;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};

use super::api::auth::PeerAddr;
use super::conn::{ConnInfo, ConnTiming, TimedStream};

/// Open files the server keeps for itself beyond its connections (the
/// database and its journals, the log, static files being sent).
pub const FD_RESERVE: u64 = 64;

/// The accept backlog asked of the kernel (which caps it at
/// `net.core.somaxconn`): connections that arrive faster than they are
/// accepted, or while the cap is reached, wait there instead of having
/// their SYNs dropped (and retried a second later).
const BACKLOG: u32 = 4096;

/// The `Keep-Alive` response header (the `http` crate has no constant for
/// it; browsers, Node's agent and `fetch` read its `timeout`).
const KEEP_ALIVE: HeaderName = HeaderName::from_static("keep-alive");

/// How long a graceful stop waits for open connections to finish.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// The accept loop's limits (`serve` flags).
#[derive(Clone, Copy, Debug)]
pub struct ConnLimits {
    pub max_connections: usize,
    pub header_timeout: Duration,
    pub idle_timeout: Duration,
}

/// Raises the soft open-file limit to the hard one (as servers do: the
/// usual soft default of 1,024 is below what a server must hold), and
/// returns the connection cap `wanted` clamped to the limit less
/// [`FD_RESERVE`].
pub fn raise_open_files(wanted: usize) -> usize {
    let limit = match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(n) => n,
        Err(e) => {
            tracing::warn!(error = %e, "could not raise the open-file limit");
            rlimit::getrlimit(rlimit::Resource::NOFILE).map_or(1024, |(soft, _)| soft)
        }
    };
    let room = usize::try_from(limit.saturating_sub(FD_RESERVE).max(1)).unwrap_or(usize::MAX);
    let cap = wanted.clamp(1, room);
    if cap < wanted {
        tracing::warn!(
            open_files = limit,
            max_connections = cap,
            "--max-connections lowered to fit the open-file limit"
        );
    }
    tracing::info!(
        open_files = limit,
        max_connections = cap,
        "connection limits"
    );
    cap
}

/// A listening socket on `addr` with a backlog of [`BACKLOG`].
pub fn bind(addr: std::net::SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    #[cfg(unix)]
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(BACKLOG)
}

/// Serves `app` on `listener` until `stop` completes, then lets open
/// connections finish (at most [`STOP_GRACE`]).
pub async fn run(
    listener: TcpListener,
    app: Router,
    limits: ConnLimits,
    stop: impl Future<Output = ()>,
) {
    let cap = limits.max_connections.clamp(1, Semaphore::MAX_PERMITS);
    let slots = Arc::new(Semaphore::new(cap));
    let (stopping, stop_rx) = watch::channel(false);
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(true);
    let keep_alive = keep_alive_hint(limits.idle_timeout);
    let mut stop = std::pin::pin!(stop);
    loop {
        let permit = tokio::select! {
            () = &mut stop => break,
            p = slots.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
        };
        let tcp = tokio::select! {
            () = &mut stop => break,
            r = listener.accept() => match r {
                Ok((tcp, _)) => tcp,
                Err(e) => {
                    accept_error(e).await;
                    continue;
                }
            },
        };
        let conn = Conn {
            http: http.clone(),
            app: app.clone(),
            idle: limits.idle_timeout,
            keep_alive: keep_alive.clone(),
            stop: stop_rx.clone(),
        };
        tokio::spawn(async move {
            conn.serve(tcp).await;
            drop(permit);
        });
    }
    drop(listener);
    let _ = stopping.send(true);
    let open = cap - slots.available_permits();
    if open > 0 {
        tracing::info!(connections = open, "waiting for open connections");
    }
    let all = u32::try_from(cap).unwrap_or(u32::MAX);
    if tokio::time::timeout(STOP_GRACE, slots.acquire_many(all))
        .await
        .is_err()
    {
        let open = cap - slots.available_permits();
        tracing::warn!(connections = open, "connections still open at stop");
    }
}

/// An accept that failed: a connection reset before it was accepted is
/// skipped; anything else (out of file descriptors) is logged and retried
/// after a pause, so the loop does not spin.
async fn accept_error(e: std::io::Error) {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(
        e.kind(),
        ConnectionAborted | ConnectionRefused | ConnectionReset
    ) {
        return;
    }
    tracing::error!(error = %e, "accept");
    tokio::time::sleep(Duration::from_millis(50)).await;
}

/// The `Keep-Alive` header that announces an idle timeout of `idle`, in
/// whole seconds (rounded down, so a client never counts on more).
fn keep_alive_hint(idle: Duration) -> HeaderValue {
    HeaderValue::from_str(&format!("timeout={}", idle.as_secs()))
        .expect("digits are a header value")
}

/// What a connection's task needs.
struct Conn {
    http: http1::Builder,
    app: Router,
    idle: Duration,
    keep_alive: HeaderValue,
    stop: watch::Receiver<bool>,
}

impl Conn {
    async fn serve(mut self, tcp: TcpStream) {
        // Replies go out as soon as they are written: no Nagle delay behind
        // a reply's last segment.
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "TCP_NODELAY");
        }
        let peer = tcp.peer_addr().ok().map(|a| PeerAddr(a.ip()));
        let stream = TimedStream::new(tcp);
        let timing = stream.timing();
        let info = ConnectInfo(ConnInfo(timing.clone()));
        let (app, keep_alive) = (self.app, self.keep_alive);
        let service = hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
            req.extensions_mut().insert(info.clone());
            if let Some(peer) = peer {
                req.extensions_mut().insert(peer);
            }
            let reply = tower::ServiceExt::oneshot(app.clone(), req);
            let keep_alive = keep_alive.clone();
            async move {
                let mut reply = reply.await?;
                reply.headers_mut().insert(KEEP_ALIVE, keep_alive);
                Ok::<_, Infallible>(reply)
            }
        });
        let conn = self.http.serve_connection(TokioIo::new(stream), service);
        let mut conn = std::pin::pin!(conn);
        let opened = Instant::now();
        let idle_check = tokio::time::sleep(self.idle);
        let mut idle_check = std::pin::pin!(idle_check);
        let mut closing = false;
        loop {
            tokio::select! {
                r = conn.as_mut() => {
                    if let Err(e) = r {
                        tracing::debug!(error = %e, "connection");
                    }
                    break;
                }
                _ = self.stop.wait_for(|s| *s), if !closing => {
                    conn.as_mut().graceful_shutdown();
                    closing = true;
                }
                () = &mut idle_check, if !closing => {
                    match idle_deadline(&timing, opened, self.idle) {
                        Some(at) if at <= Instant::now() => {
                            conn.as_mut().graceful_shutdown();
                            closing = true;
                        }
                        Some(at) => idle_check.as_mut().reset(at.into()),
                        None => idle_check.as_mut().reset((Instant::now() + self.idle).into()),
                    }
                }
            }
        }
    }
}

/// When the connection's idle time runs out, if it is idle.
fn idle_deadline(timing: &ConnTiming, opened: Instant, idle: Duration) -> Option<Instant> {
    timing.idle_since(opened).map(|t| t + idle)
}
