//! The store: what outlives a restart. One interface, [`Store`], over two
//! implementations chosen by the `--db` value ([`DbTarget`]):
//!
//! - [`sqlite`]: one SQLite file, embedded, the default (one server per
//!   file: a second one is refused);
//! - [`postgres`]: a PostgreSQL database that any number of servers share
//!   (`--db postgres://…`).
//!
//! Both keep the same promises: every write is one transaction, committed
//! before the HTTP reply is sent (a write acknowledged with 2xx is durable,
//! a refused one writes nothing); byte columns hold the wire format of
//! docs/FORMAT.md exactly as validated on the way in; the schema is
//! migrated at start. The contract tests (tests/server/store.rs) run
//! against both.
//!
//! Every method blocks: handlers call them on tokio's blocking pool (see
//! `api::state::db`).

pub mod audit_log;
pub mod postgres;
pub mod rows;
pub mod sqlite;

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

pub use audit_log::AuditLog;
pub use rows::{
    AuditRow, DeciderKey, Failures, GalleryKeyRow, GalleryRow, GalleryRowRef, NewToken, UserInfo,
    UserRecord, AUDIT_FLUSH_INTERVAL, AUDIT_PRUNE_INTERVAL,
};
pub use sqlite::audit::journal;
pub use sqlite::offline::{audit_log, backup, AuditEntry, Backup, OfflineError};
pub use sqlite::SCHEMA_VERSION;

use journal::JournalError;
use postgres::PgStore;
use sqlite::SqliteStore;

/// Store errors.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The user has no keys registered.
    #[error("unknown user")]
    UnknownUser,
    /// Keys are already registered for this user.
    #[error("user already exists")]
    UserExists,
    /// The server holds as many users as `--max-users` allows.
    #[error("the server holds its maximum of {max} users")]
    TooManyUsers { max: usize },
    /// The database was written by a newer build.
    #[error("database schema version {found} is newer than this build's {supported}")]
    TooNew { found: i64, supported: i64 },
    /// SQLite failed.
    #[error("database error: {0}")]
    Sql(#[from] rusqlite::Error),
    /// The connection mutex was poisoned by a panic.
    #[error("database connection poisoned")]
    Poisoned,
    /// The audit journal failed (or another server holds the database).
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// The database cannot be reached (PostgreSQL down, or no connection
    /// within the pool's wait): nothing was written. A 503.
    #[error("the database is unavailable: {0}")]
    Unavailable(String),
    /// PostgreSQL refused a statement (a constraint, a permission, a bug):
    /// the transaction was rolled back.
    #[error("database error: {0}")]
    Postgres(String),
}

/// Where the store is: the `--db` value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DbTarget {
    /// A SQLite file (any value that is not a `postgres://` or
    /// `postgresql://` URL).
    Sqlite(PathBuf),
    /// A PostgreSQL connection URL.
    Postgres(String),
}

impl DbTarget {
    /// Reads a `--db` value.
    pub fn parse(value: &str) -> Self {
        if value.starts_with("postgres://") || value.starts_with("postgresql://") {
            Self::Postgres(value.to_string())
        } else {
            Self::Sqlite(PathBuf::from(value))
        }
    }

    /// The value for logs and errors: a URL without its password.
    pub fn display(&self) -> String {
        match self {
            Self::Sqlite(p) => p.display().to_string(),
            Self::Postgres(url) => postgres::redact(url),
        }
    }
}

impl std::str::FromStr for DbTarget {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(Self::parse(s))
    }
}

/// The store: SQLite or PostgreSQL, the same methods on both.
// One per process, behind an `Arc`: the variants' sizes do not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Store {
    Sqlite(SqliteStore),
    Postgres(PgStore),
}

/// Calls the same method on whichever store this is.
macro_rules! each {
    ($self:ident, $s:ident => $e:expr) => {
        match $self {
            Store::Sqlite($s) => $e,
            Store::Postgres($s) => $e,
        }
    };
}

/// Seconds since the Unix epoch.
pub fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// Milliseconds since the Unix epoch.
pub fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

impl Store {
    /// Opens (creating if needed) the SQLite database at `path`.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        Ok(Self::Sqlite(SqliteStore::open(path)?))
    }

    /// Opens the store `--db` names: a SQLite file, or a PostgreSQL
    /// database (connected within `wait`, retried with backoff meanwhile;
    /// see [`PgStore::connect`]).
    pub fn connect(target: &DbTarget, wait: std::time::Duration) -> Result<Self, StoreError> {
        match target {
            DbTarget::Sqlite(path) => Self::open(path),
            DbTarget::Postgres(url) => Ok(Self::Postgres(PgStore::connect(url, wait)?)),
        }
    }

    /// Which store this is: `sqlite` or `postgres` (for `/healthz`).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Sqlite(_) => "sqlite",
            Self::Postgres(_) => "postgres",
        }
    }

    /// Whether the database answers now (one round trip to PostgreSQL; a
    /// SQLite file is there while it is open).
    pub fn ping(&self) -> Result<(), StoreError> {
        match self {
            Self::Sqlite(_) => Ok(()),
            Self::Postgres(s) => s.ping(),
        }
    }

    /// The schema version of the open database.
    pub fn schema_version(&self) -> Result<i64, StoreError> {
        each!(self, s => s.schema_version())
    }

    /// Registers a new user's keys under a new id (`decider`: the epoch and
    /// statement of keys the decider derived, `None` for keys the user
    /// holds). Refuses an existing user, and a new one when `max_users` are
    /// registered.
    pub fn put_keys(
        &self,
        user: &str,
        params_id: &str,
        public_key: &[u8],
        relin_key: Option<&[u8]>,
        decider: Option<DeciderKey<'_>>,
        max_users: usize,
    ) -> Result<(), StoreError> {
        each!(self, s => s.put_keys(user, params_id, public_key, relin_key, decider, max_users))
    }

    /// Moves a user to the decider's keys `key`, in one transaction: the
    /// new keys replace the old, and the template (under the old key) is
    /// removed. The user keeps their id.
    pub fn rotate_keys(
        &self,
        user: &str,
        public_key: &[u8],
        relin_key: Option<&[u8]>,
        key: DeciderKey<'_>,
    ) -> Result<(), StoreError> {
        each!(self, s => s.rotate_keys(user, public_key, relin_key, key))
    }

    /// Stores (or replaces) a user's template ciphertext.
    pub fn put_template(
        &self,
        user: &str,
        ciphertext: &[u8],
        count: u32,
        checked: bool,
    ) -> Result<(), StoreError> {
        each!(self, s => s.put_template(user, ciphertext, count, checked))
    }

    /// A user's keys and template.
    pub fn load_user(&self, user: &str) -> Result<Option<UserRecord>, StoreError> {
        each!(self, s => s.load_user(user))
    }

    /// Metadata of a user (sizes and counts, no bytes); `verifications`
    /// counts every recorded audit row of the user's id.
    pub fn user_info(&self, user: &str) -> Result<Option<UserInfo>, StoreError> {
        each!(self, s => s.user_info(user))
    }

    /// Removes a user's keys and template, then its audit rows. Returns
    /// whether the user existed.
    pub fn delete_user(&self, user: &str) -> Result<bool, StoreError> {
        each!(self, s => s.delete_user(user))
    }

    /// Stores a gallery ciphertext as row `seq` (its position in the
    /// gallery, assigned by the caller, who serializes the writes).
    pub fn insert_gallery_template(
        &self,
        gallery: &str,
        seq: i64,
        ciphertext: &[u8],
        count: u32,
    ) -> Result<(), StoreError> {
        each!(self, s => s.insert_gallery_template(gallery, seq, ciphertext, count))
    }

    /// Replaces gallery ciphertext `seq` with `ciphertext` (the same
    /// templates but the erased ones) and records its erased templates.
    /// Returns whether the row existed.
    pub fn erase_gallery_template(
        &self,
        gallery: &str,
        seq: i64,
        ciphertext: &[u8],
        erased: u64,
    ) -> Result<bool, StoreError> {
        each!(self, s => s.erase_gallery_template(gallery, seq, ciphertext, erased))
    }

    /// Removes every ciphertext of a gallery, and its key (login mode).
    /// Returns whether it had either.
    pub fn delete_gallery(&self, gallery: &str) -> Result<bool, StoreError> {
        each!(self, s => s.delete_gallery(gallery))
    }

    /// Stores a new gallery's key. Returns false, writing nothing, when the
    /// gallery already has one.
    pub fn insert_gallery_key(&self, row: &GalleryKeyRow) -> Result<bool, StoreError> {
        each!(self, s => s.insert_gallery_key(row))
    }

    /// Every gallery key, by gallery.
    pub fn gallery_keys(&self) -> Result<Vec<GalleryKeyRow>, StoreError> {
        each!(self, s => s.gallery_keys())
    }

    /// Every gallery ciphertext, by gallery and sequence number, passed to
    /// `f` one row at a time (a gallery of gigabytes is never in memory
    /// twice). Stops at the first error of `f`, which is returned inside.
    pub fn for_each_gallery_row<E>(
        &self,
        f: impl FnMut(GalleryRowRef<'_>) -> Result<(), E>,
    ) -> Result<Result<(), E>, StoreError> {
        each!(self, s => s.for_each_gallery_row(f))
    }

    /// Every gallery ciphertext, by gallery and sequence number, copied
    /// (for tests and tools; the server streams them).
    pub fn gallery_rows(&self) -> Result<Vec<GalleryRow>, StoreError> {
        let mut out = Vec::new();
        self.for_each_gallery_row(|r| {
            out.push(GalleryRow {
                gallery: r.gallery.to_string(),
                seq: r.seq,
                ciphertext: r.ciphertext.to_vec(),
                count: r.count,
                erased: r.erased,
            });
            Ok::<_, ()>(())
        })?
        .expect("pushing cannot fail");
        Ok(out)
    }

    /// Counts one more failed login of `user` (the last at `last_ms`);
    /// returns its failures in a row now.
    pub fn add_failure(&self, user: &str, last_ms: i64) -> Result<u32, StoreError> {
        each!(self, s => s.add_failure(user, last_ms))
    }

    /// `user`'s failed logins in a row, if any.
    pub fn failures_of(&self, user: &str) -> Result<Option<Failures>, StoreError> {
        each!(self, s => s.failures_of(user))
    }

    /// Stores a one-time token. Returns false, storing nothing, when
    /// `capacity` live tokens of its kind are stored (expired ones are
    /// dropped first); the user's oldest past `per_user` are dropped.
    pub fn issue_token(&self, t: &NewToken<'_>) -> Result<bool, StoreError> {
        each!(self, s => s.issue_token(t))
    }

    /// Takes the token with SHA-256 `digest`: its value if it is `user`'s
    /// and live at `now_ms`. The token is gone afterwards whatever the
    /// answer.
    pub fn take_token(
        &self,
        kind: &str,
        digest: &[u8; 32],
        user: &str,
        now_ms: i64,
    ) -> Result<Option<String>, StoreError> {
        each!(self, s => s.take_token(kind, digest, user, now_ms))
    }

    /// Whether the token with SHA-256 `digest` would be taken for `user`
    /// at `now_ms` (it stays).
    pub fn peek_token(
        &self,
        kind: &str,
        digest: &[u8; 32],
        user: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        each!(self, s => s.peek_token(kind, digest, user, now_ms))
    }

    /// A user's id and revision: the revision changes with every write to
    /// the user's keys or template (a cached copy of another replica's
    /// write is told by it).
    pub fn user_rev(&self, user: &str) -> Result<Option<(i64, i64)>, StoreError> {
        each!(self, s => s.user_rev(user))
    }

    /// Whether other servers may share this store (PostgreSQL): what they
    /// write is not seen in this process's memory, so state kept there
    /// (cached users, tokens, failed logins) is read from the store.
    pub fn is_shared(&self) -> bool {
        matches!(self, Self::Postgres(_))
    }

    /// Forgets `user`'s failures (a success, a new enrollment, a deletion).
    pub fn clear_failures(&self, user: &str) -> Result<(), StoreError> {
        each!(self, s => s.clear_failures(user))
    }

    /// Every user's failures, for the throttle at start.
    pub fn load_failures(&self) -> Result<Vec<Failures>, StoreError> {
        each!(self, s => s.load_failures())
    }

    /// Marks the verdict of challenge `nonce` (valid until `exp`, seconds)
    /// as used; false if it was already. Verdicts expired at `now` are
    /// dropped first.
    pub fn use_verdict(&self, nonce: &str, exp: u64, now: u64) -> Result<bool, StoreError> {
        each!(self, s => s.use_verdict(nonce, exp, now))
    }

    /// Records audit row `row` of the user with id `user_id`, durably
    /// (journaled beside a SQLite file, committed to PostgreSQL); dropped
    /// if that user is deleted before it reaches the database.
    pub fn record_audit(&self, row: AuditRow, user_id: i64) -> Result<(), StoreError> {
        match self {
            Self::Sqlite(s) => s.journal_audit(row, user_id),
            Self::Postgres(s) => s.insert_audit(row, user_id),
        }
    }

    /// Moves journaled audit rows into the database (SQLite; PostgreSQL
    /// journals nothing). Returns the rows committed.
    pub fn flush_audit(&self) -> Result<usize, StoreError> {
        match self {
            Self::Sqlite(s) => s.flush_audit(),
            Self::Postgres(_) => Ok(0),
        }
    }

    /// Audit rows recorded and not yet in the database.
    pub fn audit_journaled(&self) -> usize {
        match self {
            Self::Sqlite(s) => s.audit_journaled(),
            Self::Postgres(_) => 0,
        }
    }

    /// Audit flushes that failed since the store opened.
    pub fn audit_flush_failures(&self) -> u64 {
        match self {
            Self::Sqlite(s) => s.audit_flush_failures(),
            Self::Postgres(_) => 0,
        }
    }

    /// Removes the audit rows older than `before` (ms since the Unix
    /// epoch), in chunks. Returns how many.
    pub fn prune_audit(&self, before: i64) -> Result<usize, StoreError> {
        each!(self, s => s.prune_audit(before))
    }

    /// Removes the audit rows of deleted users, in chunks. Returns how many.
    pub(crate) fn remove_audit_of_deleted(&self) -> Result<usize, StoreError> {
        each!(self, s => s.remove_audit_of_deleted())
    }
}
