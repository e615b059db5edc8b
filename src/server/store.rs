//! The embedded store: one SQLite file in WAL mode with `synchronous=FULL`.
//!
//! Every write is one `IMMEDIATE` transaction, committed before the HTTP
//! reply is sent: a write acknowledged with 2xx is on disk, and a request that
//! is refused writes nothing. (The audit log alone goes through a journal
//! file first and into the database in batches: see [`super::journal`] and
//! [`Store::flush_audit`].)
//! The schema is created and migrated here (`schema_version` holds the
//! version applied).
//!
//! Byte columns hold the wire format of docs/FORMAT.md exactly as validated
//! on the way in (keys and ciphertexts stay in NTT form).

use std::borrow::Cow;
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use super::journal::{Batch, Journal, JournalError};

/// The schema, one migration per version. Never edit an applied step; append.
const MIGRATIONS: &[&str] = &[
    // 1: users, their keys and templates, and the verification audit log.
    "CREATE TABLE users (
        user TEXT PRIMARY KEY NOT NULL,
        params_id TEXT NOT NULL,
        public_key BLOB NOT NULL,
        relin_key BLOB,
        created INTEGER NOT NULL
    );
    CREATE TABLE templates (
        user TEXT PRIMARY KEY NOT NULL REFERENCES users(user) ON DELETE CASCADE,
        ciphertext BLOB NOT NULL,
        count INTEGER NOT NULL,
        updated INTEGER NOT NULL
    );
    CREATE TABLE audit (
        id INTEGER PRIMARY KEY,
        user TEXT NOT NULL,
        ts INTEGER NOT NULL,
        outcome TEXT NOT NULL,
        duration_us INTEGER NOT NULL
    );
    CREATE INDEX audit_user ON audit(user);",
    // 2: 1:N galleries (templates encrypted under the service key).
    "CREATE TABLE gallery_templates (
        gallery TEXT NOT NULL,
        seq INTEGER NOT NULL,
        ciphertext BLOB NOT NULL,
        count INTEGER NOT NULL,
        created INTEGER NOT NULL,
        PRIMARY KEY (gallery, seq)
    );",
    // 3: erased gallery templates (bit k: template k of the ciphertext).
    "ALTER TABLE gallery_templates ADD COLUMN erased INTEGER NOT NULL DEFAULT 0;",
    // 4: the last audit journal generation committed (see `super::journal`).
    "CREATE TABLE audit_journal (applied INTEGER NOT NULL);
    INSERT INTO audit_journal (applied) VALUES (0);",
    // 5: audit rows by time, for retention.
    "CREATE INDEX audit_ts ON audit(ts);",
];

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Store errors.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The user has no keys registered.
    #[error("unknown user")]
    UnknownUser,
    /// Keys are already registered for this user.
    #[error("user already exists")]
    UserExists,
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
}

/// A user's keys and template, as stored.
#[derive(Clone)]
pub struct UserRecord {
    /// Parameter id (hex) the keys were made for.
    pub params_id: String,
    /// Serialized public key.
    pub public_key: Vec<u8>,
    /// Serialized relinearization key, if one was registered.
    pub relin_key: Option<Vec<u8>>,
    /// Serialized template ciphertext and its sample count.
    pub template: Option<(Vec<u8>, u32)>,
}

impl std::fmt::Debug for UserRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Sizes only: no key or ciphertext bytes in logs.
        f.debug_struct("UserRecord")
            .field("params_id", &self.params_id)
            .field("public_key_len", &self.public_key.len())
            .field("relin_key_len", &self.relin_key.as_ref().map(Vec::len))
            .field("template_len", &self.template.as_ref().map(|t| t.0.len()))
            .finish()
    }
}

/// What `GET /v1/users/{user}` reports (no key or ciphertext bytes).
#[derive(Clone, Debug, serde::Serialize)]
pub struct UserInfo {
    pub user: String,
    pub params_id: String,
    pub created: i64,
    pub public_key_bytes: usize,
    pub relin_key_bytes: Option<usize>,
    pub template_count: Option<u32>,
    pub template_bytes: Option<usize>,
    pub template_updated: Option<i64>,
    pub verifications: i64,
}

/// One audit row (a verification).
#[derive(Clone, Debug)]
pub struct AuditRow {
    pub user: String,
    /// Milliseconds since the Unix epoch.
    pub ts: i64,
    pub outcome: Cow<'static, str>,
    pub duration_us: u64,
}

/// How often the audit flusher moves journaled rows into the database.
pub const AUDIT_FLUSH_INTERVAL: Duration = Duration::from_millis(100);

/// How often the audit flusher removes rows past their retention (and once
/// when it starts).
pub const AUDIT_PRUNE_INTERVAL: Duration = Duration::from_secs(3600);

/// Audit rows removed per transaction when pruning, so the store is never
/// held long.
const PRUNE_CHUNK: i64 = 10_000;

/// The audit log: [`AuditLog::record`] appends a row to the store's journal
/// (one `write`, on the calling thread), and a flusher thread moves the
/// journaled rows into the database every [`AUDIT_FLUSH_INTERVAL`], in one
/// transaction per batch (see [`Store::flush_audit`]). Reads of the audit
/// table through the store flush first, so they see every recorded row.
pub struct AuditLog {
    store: Arc<Store>,
}

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AuditLog")
    }
}

impl AuditLog {
    /// Starts the flusher thread over `store`. It runs for the life of the
    /// process; the server flushes once more when it stops. With a
    /// `retention`, the thread also removes older rows (see
    /// [`Store::prune_audit`]) when it starts and every
    /// [`AUDIT_PRUNE_INTERVAL`].
    pub fn start(store: Arc<Store>, retention: Option<Duration>) -> std::io::Result<Self> {
        let flusher = store.clone();
        std::thread::Builder::new()
            .name("audit".into())
            .spawn(move || {
                // A failure is logged once, not every interval, until a
                // flush succeeds again (the rows stay journaled meanwhile).
                let mut failing = false;
                let mut pruned: Option<Instant> = None;
                loop {
                    if let Some(keep) = retention {
                        if pruned.is_none_or(|t| t.elapsed() >= AUDIT_PRUNE_INTERVAL) {
                            pruned = Some(Instant::now());
                            let before = now_millis() - keep.as_millis() as i64;
                            match flusher.prune_audit(before) {
                                Ok(0) => {}
                                Ok(rows) => tracing::info!(
                                    rows,
                                    retention_days = keep.as_secs() / 86_400,
                                    "audit rows past their retention removed"
                                ),
                                Err(e) => tracing::error!(error = %e, "audit retention"),
                            }
                        }
                    }
                    std::thread::sleep(AUDIT_FLUSH_INTERVAL);
                    match flusher.flush_audit() {
                        Ok(_) if failing => {
                            tracing::info!("audit flush recovered");
                            failing = false;
                        }
                        Ok(_) => {}
                        Err(e) if !failing => {
                            tracing::error!(error = %e, "audit flush");
                            failing = true;
                        }
                        Err(_) => {}
                    }
                }
            })?;
        Ok(Self { store })
    }

    /// Journals `row`; once this returns `Ok` the row survives a crash of
    /// the server. Returns how long the append took.
    pub fn record(&self, row: AuditRow) -> Result<Duration, StoreError> {
        let start = Instant::now();
        self.store.journal.append(row)?;
        Ok(start.elapsed())
    }
}

/// A gallery ciphertext as stored.
#[derive(Clone, Debug)]
pub struct GalleryRow {
    pub gallery: String,
    pub seq: i64,
    pub ciphertext: Vec<u8>,
    pub count: u32,
    /// Erased templates of the ciphertext (bit k: template k).
    pub erased: u64,
}

/// The SQLite store: one connection behind a mutex (SQLite serializes
/// writers anyway, and every statement here is short: the homomorphic work
/// happens outside it), and the audit journal beside the database file.
pub struct Store {
    conn: Mutex<Connection>,
    journal: Journal,
    /// Batches taken from the journal and not yet committed (a failed
    /// commit is retried by the next flush); one flush at a time.
    flushing: Mutex<Vec<Batch>>,
    /// Rows in `flushing` (readable while a flush holds it).
    queued_rows: AtomicUsize,
    /// Flushes that failed.
    flush_failures: AtomicU64,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Store")
    }
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
    /// Opens (creating if needed) the database at `path`, sets WAL mode and
    /// `synchronous=FULL`, migrates the schema, and commits the audit rows
    /// left in journals by a server that stopped without flushing them.
    /// Refused while another process has the database open through a store.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let mut conn = Connection::open(path)?;
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Sql(rusqlite::Error::InvalidQuery));
        }
        // `secure_delete`: deleted and replaced rows are overwritten with
        // zeros, not left in free pages (see [`Store::scrub`]).
        conn.execute_batch(
            "PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON; PRAGMA secure_delete=ON;",
        )?;
        migrate(&mut conn)?;
        let applied: i64 = conn.query_row("SELECT applied FROM audit_journal", [], |r| r.get(0))?;
        let (journal, leftovers) = Journal::open(path, applied as u64)?;
        let replayed: usize = leftovers.iter().map(|b| b.rows.len()).sum();
        for batch in &leftovers {
            commit_audit(&mut conn, batch)?;
            journal.remove(batch.generation);
        }
        if replayed > 0 {
            tracing::info!(rows = replayed, "audit rows recovered from the journal");
        }
        Ok(Self {
            conn: Mutex::new(conn),
            journal,
            flushing: Mutex::new(Vec::new()),
            queued_rows: AtomicUsize::new(0),
            flush_failures: AtomicU64::new(0),
        })
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, Connection>, StoreError> {
        self.conn.lock().map_err(|_| StoreError::Poisoned)
    }

    fn with<T>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        f(&mut *self.lock()?)
    }

    /// The schema version of the open database.
    pub fn schema_version(&self) -> Result<i64, StoreError> {
        self.with(|c| Ok(c.query_row("SELECT version FROM schema_version", [], |r| r.get(0))?))
    }

    /// Registers a new user's keys. Refuses an existing user.
    pub fn put_keys(
        &self,
        user: &str,
        params_id: &str,
        public_key: &[u8],
        relin_key: Option<&[u8]>,
    ) -> Result<(), StoreError> {
        self.with(|c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let exists: bool = tx.query_row(
                "SELECT EXISTS(SELECT 1 FROM users WHERE user = ?1)",
                [user],
                |r| r.get(0),
            )?;
            if exists {
                return Err(StoreError::UserExists);
            }
            tx.execute(
                "INSERT INTO users (user, params_id, public_key, relin_key, created)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![user, params_id, public_key, relin_key, now_secs()],
            )?;
            tx.commit()?;
            Ok(())
        })
    }

    /// Stores (or replaces) a user's template ciphertext.
    pub fn put_template(
        &self,
        user: &str,
        ciphertext: &[u8],
        count: u32,
    ) -> Result<(), StoreError> {
        self.with(|c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let exists: bool = tx.query_row(
                "SELECT EXISTS(SELECT 1 FROM users WHERE user = ?1)",
                [user],
                |r| r.get(0),
            )?;
            if !exists {
                return Err(StoreError::UnknownUser);
            }
            tx.execute(
                "INSERT INTO templates (user, ciphertext, count, updated) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(user) DO UPDATE SET
                   ciphertext = excluded.ciphertext, count = excluded.count, updated = excluded.updated",
                params![user, ciphertext, count, now_secs()],
            )?;
            tx.commit()?;
            Ok(())
        })
    }

    /// A user's keys and template.
    pub fn load_user(&self, user: &str) -> Result<Option<UserRecord>, StoreError> {
        self.with(|c| {
            let tx = c.transaction()?;
            let rec = tx
                .query_row(
                    "SELECT u.params_id, u.public_key, u.relin_key, t.ciphertext, t.count
                     FROM users u LEFT JOIN templates t ON t.user = u.user WHERE u.user = ?1",
                    [user],
                    |r| {
                        let ct: Option<Vec<u8>> = r.get(3)?;
                        let count: Option<u32> = r.get(4)?;
                        Ok(UserRecord {
                            params_id: r.get(0)?,
                            public_key: r.get(1)?,
                            relin_key: r.get(2)?,
                            template: ct.zip(count),
                        })
                    },
                )
                .optional()?;
            tx.finish()?;
            Ok(rec)
        })
    }

    /// Metadata of a user (sizes and counts, no bytes). Flushes the audit
    /// journal first, so `verifications` counts every recorded row.
    pub fn user_info(&self, user: &str) -> Result<Option<UserInfo>, StoreError> {
        self.flush_audit()?;
        self.with(|c| {
            let tx = c.transaction()?;
            let info = tx
                .query_row(
                    "SELECT u.params_id, u.created, length(u.public_key), length(u.relin_key),
                            t.count, length(t.ciphertext), t.updated,
                            (SELECT count(*) FROM audit a WHERE a.user = u.user)
                     FROM users u LEFT JOIN templates t ON t.user = u.user WHERE u.user = ?1",
                    [user],
                    |r| {
                        Ok(UserInfo {
                            user: user.to_string(),
                            params_id: r.get(0)?,
                            created: r.get(1)?,
                            public_key_bytes: r.get::<_, i64>(2)? as usize,
                            relin_key_bytes: r.get::<_, Option<i64>>(3)?.map(|v| v as usize),
                            template_count: r.get(4)?,
                            template_bytes: r.get::<_, Option<i64>>(5)?.map(|v| v as usize),
                            template_updated: r.get(6)?,
                            verifications: r.get(7)?,
                        })
                    },
                )
                .optional()?;
            tx.finish()?;
            Ok(info)
        })
    }

    /// Moves the journaled audit rows into the database: the journal starts
    /// a new file, and the old file's rows are committed in one transaction
    /// (with `synchronous=FULL`, each only if its user still exists) that
    /// also records the file's generation as applied; then the file is
    /// removed. Returns the number of rows committed. A batch whose commit
    /// fails stays queued (its file stays too) and is retried first.
    pub fn flush_audit(&self) -> Result<usize, StoreError> {
        let flushed = self.flush_queued();
        if flushed.is_err() {
            self.flush_failures.fetch_add(1, Ordering::Relaxed);
        }
        flushed
    }

    fn flush_queued(&self) -> Result<usize, StoreError> {
        let mut queue = self.flushing.lock().map_err(|_| StoreError::Poisoned)?;
        if let Some(batch) = self.journal.take()? {
            self.queued_rows
                .fetch_add(batch.rows.len(), Ordering::Relaxed);
            queue.push(batch);
        }
        let mut rows = 0;
        while let Some(batch) = queue.first() {
            commit_audit(&mut *self.lock()?, batch)?;
            self.journal.remove(batch.generation);
            rows += batch.rows.len();
            self.queued_rows
                .fetch_sub(batch.rows.len(), Ordering::Relaxed);
            queue.remove(0);
        }
        Ok(rows)
    }

    /// Audit rows recorded and not yet in the database.
    pub fn audit_journaled(&self) -> usize {
        self.journal.pending().unwrap_or(0) + self.queued_rows.load(Ordering::Relaxed)
    }

    /// Audit flushes that failed since the store opened.
    pub fn audit_flush_failures(&self) -> u64 {
        self.flush_failures.load(Ordering::Relaxed)
    }

    /// Removes the audit rows older than `before` (ms since the Unix epoch),
    /// 10,000 per transaction. Returns how many. Like every
    /// deletion here, the rows are zeroed in the file (`secure_delete`) and
    /// the WAL is truncated after.
    pub fn prune_audit(&self, before: i64) -> Result<usize, StoreError> {
        let mut total = 0;
        loop {
            let n = self.with(|c| {
                Ok(c.execute(
                    "DELETE FROM audit WHERE id IN
                     (SELECT id FROM audit WHERE ts < ?1 ORDER BY ts LIMIT ?2)",
                    params![before, PRUNE_CHUNK],
                )?)
            })?;
            total += n;
            if (n as i64) < PRUNE_CHUNK {
                break;
            }
        }
        if total > 0 {
            Self::scrub(&*self.lock()?);
        }
        Ok(total)
    }

    /// Removes a user's keys, template and audit rows (journaled ones
    /// included: the journal is flushed first). Returns whether the user
    /// existed.
    pub fn delete_user(&self, user: &str) -> Result<bool, StoreError> {
        self.flush_audit()?;
        self.with(|c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let n = tx.execute("DELETE FROM users WHERE user = ?1", [user])?;
            if n == 0 {
                return Err(StoreError::UnknownUser);
            }
            tx.execute("DELETE FROM templates WHERE user = ?1", [user])?;
            tx.execute("DELETE FROM audit WHERE user = ?1", [user])?;
            tx.commit()?;
            Self::scrub(c);
            Ok(true)
        })
        .or_else(|e| match e {
            StoreError::UnknownUser => Ok(false),
            e => Err(e),
        })
    }

    /// Appends a gallery ciphertext; returns its sequence number (0, 1, ...).
    pub fn add_gallery_template(
        &self,
        gallery: &str,
        ciphertext: &[u8],
        count: u32,
    ) -> Result<i64, StoreError> {
        self.with(|c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let seq: i64 = tx.query_row(
                "SELECT COALESCE(MAX(seq) + 1, 0) FROM gallery_templates WHERE gallery = ?1",
                [gallery],
                |r| r.get(0),
            )?;
            tx.execute(
                "INSERT INTO gallery_templates (gallery, seq, ciphertext, count, created)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![gallery, seq, ciphertext, count, now_secs()],
            )?;
            tx.commit()?;
            Ok(seq)
        })
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
        self.with(|c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let n = tx.execute(
                "UPDATE gallery_templates SET ciphertext = ?3, erased = ?4
                 WHERE gallery = ?1 AND seq = ?2",
                params![gallery, seq, ciphertext, erased as i64],
            )?;
            tx.commit()?;
            Self::scrub(c);
            Ok(n == 1)
        })
    }

    /// Removes every ciphertext of a gallery. Returns whether it had any.
    pub fn delete_gallery(&self, gallery: &str) -> Result<bool, StoreError> {
        self.with(|c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let n = tx.execute(
                "DELETE FROM gallery_templates WHERE gallery = ?1",
                [gallery],
            )?;
            tx.commit()?;
            Self::scrub(c);
            Ok(n > 0)
        })
    }

    /// After a deletion (committed): copies the WAL into the database and
    /// truncates it, so the deleted bytes, zeroed in the database by
    /// `secure_delete`, are not left behind in the WAL either. The deletion
    /// stands if this cannot finish (another process reading the database):
    /// the next checkpoint overwrites them.
    fn scrub(c: &Connection) {
        match c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
            r.get::<_, i64>(0)
        }) {
            Ok(0) => {}
            Ok(_) => tracing::warn!("checkpoint after a deletion was blocked by a reader"),
            Err(e) => tracing::warn!(error = %e, "checkpoint after a deletion"),
        }
    }

    /// Every gallery ciphertext, by gallery and sequence number.
    pub fn gallery_rows(&self) -> Result<Vec<GalleryRow>, StoreError> {
        self.with(|c| {
            let mut st = c.prepare(
                "SELECT gallery, seq, ciphertext, count, erased
                 FROM gallery_templates ORDER BY gallery, seq",
            )?;
            let rows = st
                .query_map([], |r| {
                    Ok(GalleryRow {
                        gallery: r.get(0)?,
                        seq: r.get(1)?,
                        ciphertext: r.get(2)?,
                        count: r.get(3)?,
                        erased: r.get::<_, i64>(4)? as u64,
                    })
                })?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(rows)
        })
    }
}

/// Commits one journal batch and records its generation as applied.
fn commit_audit(c: &mut Connection, batch: &Batch) -> Result<(), StoreError> {
    let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
    {
        let mut st = tx.prepare_cached(
            "INSERT INTO audit (user, ts, outcome, duration_us)
             SELECT ?1, ?2, ?3, ?4 WHERE EXISTS (SELECT 1 FROM users WHERE user = ?1)",
        )?;
        for r in &batch.rows {
            st.execute(params![r.user, r.ts, r.outcome, r.duration_us as i64])?;
        }
    }
    tx.execute(
        "UPDATE audit_journal SET applied = ?1",
        [batch.generation as i64],
    )?;
    tx.commit()?;
    Ok(())
}

/// What [`backup`] copied.
#[derive(Clone, Copy, Debug)]
pub struct Backup {
    pub schema_version: i64,
    pub users: i64,
    pub gallery_ciphertexts: i64,
    /// Size of the new file.
    pub bytes: u64,
}

/// Why a command that reads a database beside its server (`backup`,
/// `audit`) failed.
#[derive(Debug, thiserror::Error)]
pub enum OfflineError {
    #[error("the database does not exist")]
    NoDatabase,
    #[error("the output file already exists")]
    OutputExists,
    #[error("not a blindmatch database (no schema_version table)")]
    NotBlindmatch,
    #[error(transparent)]
    Sql(#[from] rusqlite::Error),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Copies the database at `db` into a new file `out` with `VACUUM INTO`:
/// one read transaction, so the copy is a consistent snapshot even while a
/// server writes, and the source is opened read-only (never migrated or
/// changed). The copy is compact: no free pages, so nothing deleted in the
/// source travels with it. Audit rows a running server has journaled but not
/// yet flushed (see [`super::journal`]) are read first and committed into
/// the copy, unless the snapshot already holds their journal file's rows.
pub fn backup(db: &Path, out: &Path) -> Result<Backup, OfflineError> {
    use rusqlite::OpenFlags;
    if !db.is_file() {
        return Err(OfflineError::NoDatabase);
    }
    if out.exists() {
        return Err(OfflineError::OutputExists);
    }
    // Before the snapshot: a file flushed in between is then in the
    // snapshot (and skipped below), never in neither.
    let journaled = super::journal::journaled(db)?;
    let c = open_read_only(db)?;
    // Written under a temporary name and renamed once complete: a failed
    // or interrupted backup never leaves a partial file under `out`.
    let mut partial = out.as_os_str().to_owned();
    partial.push(format!(".partial-{}", std::process::id()));
    let partial = std::path::PathBuf::from(partial);
    let target = partial
        .to_str()
        .ok_or_else(|| std::io::Error::other("the output path is not UTF-8"))?;
    let written = c
        .execute("VACUUM INTO ?1", [target])
        .map_err(OfflineError::from)
        .and_then(|_| add_journaled(&partial, &journaled))
        .and_then(|_| {
            std::fs::File::open(&partial)?.sync_all()?;
            std::fs::rename(&partial, out).map_err(OfflineError::from)
        });
    if let Err(e) = written {
        let _ = std::fs::remove_file(&partial);
        return Err(e);
    }
    // The figures are read from the copy: exactly what it holds.
    let copy = Connection::open_with_flags(out, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let schema_version = copy.query_row("SELECT version FROM schema_version", [], |r| r.get(0))?;
    let users = copy.query_row("SELECT count(*) FROM users", [], |r| r.get(0))?;
    let gallery_ciphertexts = if schema_version >= 2 {
        copy.query_row("SELECT count(*) FROM gallery_templates", [], |r| r.get(0))?
    } else {
        0
    };
    Ok(Backup {
        schema_version,
        users,
        gallery_ciphertexts,
        bytes: std::fs::metadata(out)?.len(),
    })
}

/// Opens an existing blindmatch database read-only (never created, migrated
/// or changed).
fn open_read_only(db: &Path) -> Result<Connection, OfflineError> {
    use rusqlite::OpenFlags;
    if !db.is_file() {
        return Err(OfflineError::NoDatabase);
    }
    let c = Connection::open_with_flags(
        db,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    c.busy_timeout(Duration::from_secs(10))?;
    let has_schema: bool = c.query_row(
        "SELECT EXISTS(SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version')",
        [],
        |r| r.get(0),
    )?;
    if !has_schema {
        return Err(OfflineError::NotBlindmatch);
    }
    Ok(c)
}

/// The generation a database records as applied (0 before schema 4, which
/// had no journal).
fn applied_generation(c: &Connection) -> Result<u64, rusqlite::Error> {
    let has_journal: bool = c.query_row(
        "SELECT EXISTS(SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'audit_journal')",
        [],
        |r| r.get(0),
    )?;
    if !has_journal {
        return Ok(0);
    }
    let applied: i64 = c.query_row("SELECT applied FROM audit_journal", [], |r| r.get(0))?;
    Ok(applied as u64)
}

/// One row of the audit log, as `blindmatch-server audit` prints it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct AuditEntry {
    pub user: String,
    /// Milliseconds since the Unix epoch.
    pub ts: i64,
    pub outcome: String,
    pub duration_us: u64,
    /// Still in the journal (recorded less than a flush interval ago, or
    /// left by a server that stopped without flushing).
    pub journaled: bool,
}

/// The last `limit` audit rows of the database at `db` (of `user` only, if
/// given; from `since` ms on), oldest first, read while a server may be
/// serving it: the database read-only, and the rows of its journal not yet
/// committed (those of users that no longer exist left out, as a flush
/// would).
pub fn audit_log(
    db: &Path,
    user: Option<&str>,
    since: i64,
    limit: usize,
) -> Result<Vec<AuditEntry>, OfflineError> {
    // The journal first, as in [`backup`].
    let journaled = super::journal::journaled(db)?;
    let mut c = open_read_only(db)?;
    let tx = c.transaction()?;
    let applied = applied_generation(&tx)?;
    let limit_sql = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut out: Vec<AuditEntry> = {
        let mut st = tx.prepare(
            "SELECT user, ts, outcome, duration_us FROM audit
             WHERE (?1 IS NULL OR user = ?1) AND ts >= ?2 ORDER BY id DESC LIMIT ?3",
        )?;
        let rows = st.query_map(params![user, since, limit_sql], |r| {
            Ok(AuditEntry {
                user: r.get(0)?,
                ts: r.get(1)?,
                outcome: r.get(2)?,
                duration_us: r.get::<_, i64>(3)? as u64,
                journaled: false,
            })
        })?;
        rows.collect::<Result<_, _>>()?
    };
    out.reverse();
    {
        let mut exists = tx.prepare_cached("SELECT EXISTS(SELECT 1 FROM users WHERE user = ?1)")?;
        for batch in journaled.iter().filter(|b| b.generation > applied) {
            for r in &batch.rows {
                if user.is_some_and(|u| u != r.user) || r.ts < since {
                    continue;
                }
                if !exists.query_row([&r.user], |x| x.get::<_, bool>(0))? {
                    continue;
                }
                out.push(AuditEntry {
                    user: r.user.clone(),
                    ts: r.ts,
                    outcome: r.outcome.to_string(),
                    duration_us: r.duration_us,
                    journaled: true,
                });
            }
        }
    }
    tx.finish()?;
    let skip = out.len().saturating_sub(limit);
    out.drain(..skip);
    Ok(out)
}

/// Commits into the backup copy at `copy` the journaled batches newer than
/// the generation it records as applied (none before schema 4).
fn add_journaled(copy: &Path, journaled: &[Batch]) -> Result<(), OfflineError> {
    let mut c = Connection::open(copy)?;
    let applied = applied_generation(&c)?;
    for batch in journaled.iter().filter(|b| b.generation > applied) {
        commit_audit(&mut c, batch).map_err(|e| match e {
            StoreError::Sql(e) => OfflineError::Sql(e),
            e => OfflineError::Io(std::io::Error::other(e.to_string())),
        })?;
    }
    Ok(())
}

/// Creates the schema or brings it up to [`SCHEMA_VERSION`], one transaction
/// per step.
fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute_batch("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);")?;
        let n: i64 = tx.query_row("SELECT count(*) FROM schema_version", [], |r| r.get(0))?;
        if n == 0 {
            tx.execute("INSERT INTO schema_version (version) VALUES (0)", [])?;
        }
        tx.commit()?;
    }
    loop {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let version: i64 = tx.query_row("SELECT version FROM schema_version", [], |r| r.get(0))?;
        if version > SCHEMA_VERSION {
            return Err(StoreError::TooNew {
                found: version,
                supported: SCHEMA_VERSION,
            });
        }
        if version == SCHEMA_VERSION {
            return Ok(());
        }
        tx.execute_batch(MIGRATIONS[version as usize])?;
        tx.execute("UPDATE schema_version SET version = ?1", [version + 1])?;
        tx.commit()?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh directory for one test's database.
    fn temp_dir(tag: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("blindmatch-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn row(user: &str) -> AuditRow {
        AuditRow {
            user: user.into(),
            ts: now_millis(),
            outcome: "ok".into(),
            duration_us: 1,
        }
    }

    /// A database written by schema 2 (before erasures) opens, is migrated
    /// in place, and reads its gallery rows with nothing erased; a mask with
    /// its top bit set (template 63 at d = 64) reads back as written.
    #[test]
    fn schema_2_migrates_and_erasure_masks_round_trip() {
        let dir = temp_dir("mig");
        let path = dir.join("t.db");
        {
            let c = Connection::open(&path).unwrap();
            c.execute_batch(
                "CREATE TABLE schema_version (version INTEGER NOT NULL);
                             INSERT INTO schema_version (version) VALUES (2);",
            )
            .unwrap();
            c.execute_batch(MIGRATIONS[0]).unwrap();
            c.execute_batch(MIGRATIONS[1]).unwrap();
            c.execute(
                "INSERT INTO gallery_templates (gallery, seq, ciphertext, count, created)
                 VALUES ('g', 0, x'0102', 32, 0)",
                [],
            )
            .unwrap();
        }
        let store = Store::open(&path).unwrap();
        assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
        let rows = store.gallery_rows().unwrap();
        assert_eq!((rows.len(), rows[0].erased, rows[0].count), (1, 0, 32));
        let mask = 1u64 << 63 | 1;
        assert!(store.erase_gallery_template("g", 0, b"new", mask).unwrap());
        assert!(!store.erase_gallery_template("g", 1, b"new", mask).unwrap());
        let rows = store.gallery_rows().unwrap();
        assert_eq!(
            (rows[0].erased, rows[0].ciphertext.as_slice()),
            (mask, &b"new"[..])
        );
        assert!(store.delete_gallery("g").unwrap());
        assert!(!store.delete_gallery("g").unwrap());
        assert!(store.gallery_rows().unwrap().is_empty());
        drop(store);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Retention removes exactly the rows older than the cut, however many
    /// chunks that takes, and nothing else.
    #[test]
    fn prune_audit_removes_only_rows_past_the_cut() {
        let dir = temp_dir("prune");
        let store = Store::open(&dir.join("t.db")).unwrap();
        store.put_keys("ann", "00", b"pk", None).unwrap();
        let old = PRUNE_CHUNK as usize + 5;
        for (i, ts) in (0..old as i64).chain(1_000_000..1_000_010).enumerate() {
            store
                .journal
                .append(AuditRow {
                    ts,
                    duration_us: i as u64,
                    ..row("ann")
                })
                .unwrap();
        }
        store.flush_audit().unwrap();
        assert_eq!(store.prune_audit(0).unwrap(), 0);
        assert_eq!(store.prune_audit(1_000_000).unwrap(), old);
        assert_eq!(store.prune_audit(1_000_000).unwrap(), 0);
        let left: Vec<i64> = {
            let c = store.lock().unwrap();
            let mut st = c.prepare("SELECT ts FROM audit ORDER BY ts").unwrap();
            st.query_map([], |r| r.get(0))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap()
        };
        assert_eq!(left, (1_000_000..1_000_010).collect::<Vec<_>>());
        drop(store);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// `audit_log` reads committed and journaled rows alike, each once,
    /// newest `limit` of them, oldest first; rows of a deleted user that are
    /// still journaled are left out, as a flush would.
    #[test]
    fn audit_log_reads_the_database_and_the_journal() {
        let dir = temp_dir("auditlog");
        let path = dir.join("t.db");
        let store = Store::open(&path).unwrap();
        store.put_keys("ann", "00", b"pk", None).unwrap();
        store.put_keys("bob", "00", b"pk", None).unwrap();
        let at = |user: &str, ts: i64| AuditRow { ts, ..row(user) };
        for ts in 1..=3 {
            store.journal.append(at("ann", ts)).unwrap();
        }
        store.flush_audit().unwrap();
        store.journal.append(at("bob", 4)).unwrap();
        store.journal.append(at("ann", 5)).unwrap();
        store.journal.append(at("gone", 6)).unwrap();
        let read = |user: Option<&str>, since: i64, limit: usize| -> Vec<(String, i64, bool)> {
            audit_log(&path, user, since, limit)
                .unwrap()
                .into_iter()
                .map(|e| (e.user, e.ts, e.journaled))
                .collect()
        };
        let all = read(None, 0, 100);
        assert_eq!(
            all,
            vec![
                ("ann".into(), 1, false),
                ("ann".into(), 2, false),
                ("ann".into(), 3, false),
                ("bob".into(), 4, true),
                ("ann".into(), 5, true),
            ]
        );
        assert_eq!(read(None, 0, 2), all[3..].to_vec());
        assert_eq!(read(Some("ann"), 2, 100).len(), 3);
        assert_eq!(read(Some("bob"), 0, 100), vec![("bob".into(), 4, true)]);
        store.flush_audit().unwrap();
        assert_eq!(
            read(None, 0, 100).iter().map(|r| r.1).collect::<Vec<_>>(),
            vec![1, 2, 3, 4, 5]
        );
        assert!(read(None, 0, 100).iter().all(|r| !r.2));
        assert!(matches!(
            audit_log(&dir.join("none.db"), None, 0, 1),
            Err(OfflineError::NoDatabase)
        ));
        drop(store);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A recorded row is in the journal at once and in the database after a
    /// flush (user reads flush first); a row for a user who no longer exists
    /// is dropped; rows left in the journal by a crash are committed, once,
    /// when the store opens again.
    #[test]
    fn audit_rows_go_through_the_journal_and_survive_a_crash() {
        let dir = temp_dir("audit");
        let path = dir.join("t.db");
        let rows_in_db = |c: &Connection| -> i64 {
            c.query_row("SELECT count(*) FROM audit", [], |r| r.get(0))
                .unwrap()
        };
        {
            let store = std::sync::Arc::new(Store::open(&path).unwrap());
            store.put_keys("ann", "00", b"pk", None).unwrap();
            let log = AuditLog::start(store.clone(), None).unwrap();
            log.record(row("ann")).unwrap();
            assert_eq!(rows_in_db(&store.lock().unwrap()), 0);
            assert_eq!(store.user_info("ann").unwrap().unwrap().verifications, 1);
            assert_eq!(rows_in_db(&store.lock().unwrap()), 1);
            // The flusher thread moves rows without being asked.
            log.record(row("ann")).unwrap();
            let start = Instant::now();
            while rows_in_db(&store.lock().unwrap()) < 2 {
                assert!(start.elapsed() < Duration::from_secs(10), "never flushed");
                std::thread::sleep(Duration::from_millis(10));
            }
            assert_eq!(store.flush_audit().unwrap(), 0);
            // A row for a user who no longer exists is not written.
            log.record(row("bob")).unwrap();
            assert_eq!(store.flush_audit().unwrap(), 1);
            assert_eq!(store.user_info("ann").unwrap().unwrap().verifications, 2);
        }
        // A crash: rows journaled, never flushed. (The store above lives on
        // in its flusher thread, holding its database's lock, so the crash is
        // played on a second database.)
        let dir2 = dir.join("crash");
        std::fs::create_dir_all(&dir2).unwrap();
        let path2 = dir2.join("t.db");
        {
            let store = Store::open(&path2).unwrap();
            store.put_keys("ann", "00", b"pk", None).unwrap();
            for _ in 0..3 {
                store.journal.append(row("ann")).unwrap();
            }
            assert_eq!(rows_in_db(&store.lock().unwrap()), 0);
            // Dropped without a flush.
        }
        let store = Store::open(&path2).unwrap();
        assert_eq!(rows_in_db(&store.lock().unwrap()), 3);
        assert_eq!(store.flush_audit().unwrap(), 0);
        drop(store);
        let store = Store::open(&path2).unwrap();
        assert_eq!(store.user_info("ann").unwrap().unwrap().verifications, 3);
        // Deleting the user takes its journaled rows too.
        store.journal.append(row("ann")).unwrap();
        assert!(store.delete_user("ann").unwrap());
        assert_eq!(rows_in_db(&store.lock().unwrap()), 0);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
