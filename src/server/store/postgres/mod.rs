//! The PostgreSQL store (`--db postgres://…`): one database that any
//! number of servers share.
//!
//! The client is `tokio-postgres` behind a `deadpool-postgres` pool, on a
//! small runtime of the store's own; the store's methods block on it (they
//! run on tokio's blocking pool, like the SQLite store's). Every write is
//! one transaction, committed before the method returns; with PostgreSQL's
//! default `synchronous_commit = on` a commit is in the server's WAL on
//! disk when it is acknowledged (docs/SCALE.md says what a replica setup
//! needs beyond that). Audit rows are committed as they are recorded: no
//! journal beside the process.
//!
//! When the database cannot be reached, a call fails within
//! [`CALL_TIMEOUT`] with [`StoreError::Unavailable`] (a 503 over HTTP),
//! having acknowledged nothing; the pool connects again by itself once the
//! database is back.
//!
//! By subject, as in the SQLite store: [`schema`], [`users`], [`galleries`],
//! [`logins`], [`audit`].

pub mod audit;
pub mod galleries;
pub mod logins;
pub mod schema;
pub mod shards;
pub mod tokens;
pub mod users;

use std::future::Future;
use std::str::FromStr;
use std::time::{Duration, Instant};

use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, PoolError, RecyclingMethod};
use tokio_postgres::error::SqlState;
use tokio_postgres::NoTls;

use super::StoreError;

/// The longest a store call waits (for a connection, and for its
/// statements): past it the call is [`StoreError::Unavailable`].
pub const CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// Connections per server (the homomorphic work happens outside them; a
/// statement takes a millisecond or two).
pub const POOL_SIZE: usize = 16;

/// The PostgreSQL store.
pub struct PgStore {
    pool: Pool,
    /// Runs the connections and the calls' futures; shut down in the
    /// background when the store is dropped (which may happen on a
    /// runtime thread, where dropping a runtime in place is refused).
    rt: Option<tokio::runtime::Runtime>,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PgStore")
    }
}

impl Drop for PgStore {
    fn drop(&mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

impl PgStore {
    /// Connects to the database at `url` and migrates its schema. While
    /// the database cannot be reached, tries again with backoff (100 ms,
    /// doubling to 2 s, each attempt logged) for up to `wait`, then fails
    /// with the last reason. A malformed URL, a refused password, a missing
    /// database or missing permissions fail at once, naming what is wrong.
    pub fn connect(url: &str, wait: Duration) -> Result<Self, StoreError> {
        let config = tokio_postgres::Config::from_str(url)
            .map_err(|e| StoreError::Postgres(format!("bad --db URL {}: {e}", redact(url))))?;
        let mut config = config;
        config
            .connect_timeout(Duration::from_secs(3))
            .keepalives(true)
            .keepalives_idle(Duration::from_secs(10))
            .application_name("blindmatch");
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("postgres")
            .enable_all()
            .build()
            .map_err(|e| StoreError::Postgres(format!("store runtime: {e}")))?;
        let manager = Manager::from_config(
            config,
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .wait_timeout(Some(CALL_TIMEOUT))
            .create_timeout(Some(CALL_TIMEOUT))
            .recycle_timeout(Some(CALL_TIMEOUT))
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .build()
            .map_err(|e| StoreError::Postgres(format!("connection pool: {e}")))?;
        let store = Self { pool, rt: Some(rt) };
        let start = Instant::now();
        let mut delay = Duration::from_millis(100);
        let mut attempt = 1u32;
        loop {
            match store.migrate() {
                Ok(()) => return Ok(store),
                Err(StoreError::Unavailable(why)) if start.elapsed() + delay < wait => {
                    tracing::warn!(
                        attempt,
                        retry_in_ms = delay.as_millis() as u64,
                        db = %redact(url),
                        reason = %why,
                        "PostgreSQL unreachable"
                    );
                    std::thread::sleep(delay);
                    delay = (delay * 2).min(Duration::from_secs(2));
                    attempt += 1;
                }
                Err(StoreError::Unavailable(why)) => {
                    return Err(StoreError::Unavailable(format!(
                        "{why} (gave up after {attempt} attempts in {:.1} s)",
                        start.elapsed().as_secs_f64()
                    )))
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Runs a call's future on the store's runtime, within [`CALL_TIMEOUT`].
    fn run<T>(&self, f: impl Future<Output = Result<T, StoreError>>) -> Result<T, StoreError> {
        self.run_unbounded(async { within_call_timeout(f).await? })
    }

    /// Runs a future on the store's runtime with no overall deadline (its
    /// steps bound themselves).
    fn run_unbounded<T>(&self, f: impl Future<Output = T>) -> T {
        let rt = self
            .rt
            .as_ref()
            .expect("the runtime lives as long as the store");
        rt.block_on(f)
    }

    /// A connection from the pool.
    async fn client(&self) -> Result<Object, StoreError> {
        self.pool.get().await.map_err(|e| match e {
            PoolError::Backend(e) => pg(e),
            PoolError::Timeout(_) => StoreError::Unavailable("no connection to PostgreSQL".into()),
            other => StoreError::Unavailable(other.to_string()),
        })
    }

    /// One round trip.
    pub fn ping(&self) -> Result<(), StoreError> {
        self.run(async {
            self.client()
                .await?
                .simple_query("SELECT 1")
                .await
                .map_err(pg)?;
            Ok(())
        })
    }
}

/// `f`, or [`StoreError::Unavailable`] past [`CALL_TIMEOUT`].
async fn within_call_timeout<T>(f: impl Future<Output = T>) -> Result<T, StoreError> {
    tokio::time::timeout(CALL_TIMEOUT, f).await.map_err(|_| {
        StoreError::Unavailable(format!("no answer within {} s", CALL_TIMEOUT.as_secs()))
    })
}

/// A PostgreSQL error as a store error: the connection's failures (closed,
/// refused, the server shutting down or starting) are
/// [`StoreError::Unavailable`]; what the server refused names its SQLSTATE.
pub(super) fn pg(e: tokio_postgres::Error) -> StoreError {
    let Some(db) = e.as_db_error() else {
        // No server answer: I/O, a closed connection, a timeout.
        return StoreError::Unavailable(e.to_string());
    };
    let code = db.code();
    let unavailable = code.code().starts_with("08")
        || [
            SqlState::ADMIN_SHUTDOWN,
            SqlState::CRASH_SHUTDOWN,
            SqlState::CANNOT_CONNECT_NOW,
            SqlState::TOO_MANY_CONNECTIONS,
        ]
        .contains(code);
    let what = format!("{} ({})", db.message(), code.code());
    if unavailable {
        StoreError::Unavailable(what)
    } else {
        StoreError::Postgres(what)
    }
}

/// `url` without its password (for logs and errors).
pub fn redact(url: &str) -> String {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else {
        return url.to_string();
    };
    let rest = &url[scheme_end..];
    let Some(at) = rest.rfind('@') else {
        return url.to_string();
    };
    match rest[..at].find(':') {
        Some(colon) => format!(
            "{}{}:***{}",
            &url[..scheme_end],
            &rest[..colon],
            &rest[at..]
        ),
        None => url.to_string(),
    }
}

#[test]
fn urls_lose_their_password() {
    assert_eq!(
        redact("postgres://bm:secret@db:5432/blindmatch"),
        "postgres://bm:***@db:5432/blindmatch"
    );
    assert_eq!(redact("postgres://bm@db/x"), "postgres://bm@db/x");
    assert_eq!(redact("postgres://db/x"), "postgres://db/x");
}
