//! The embedded store: one SQLite file in WAL mode with `synchronous=FULL`.
//!
//! Every write is one `IMMEDIATE` transaction, committed before the HTTP
//! reply is sent: a write acknowledged with 2xx is on disk, and a request that
//! is refused writes nothing. (The audit log alone commits with
//! `synchronous=NORMAL`, on a second connection: see [`Store::audit_many`].)
//! The schema is created and migrated here (`schema_version` holds the
//! version applied).
//!
//! Byte columns hold the wire format of docs/FORMAT.md exactly as validated
//! on the way in (keys and ciphertexts stay in NTT form).

use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

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
    pub outcome: &'static str,
    pub duration_us: u64,
}

/// The audit log's writes. [`AuditLog::record`] commits a row on the calling
/// (matching) thread when the store is free at that moment, which is the
/// usual case and costs no thread hand-off; when another thread holds the
/// store, the row goes to a writer thread instead, which commits all the
/// rows waiting together in one transaction (group commit), so that under
/// load the commits do not queue on the store one by one. Either way the
/// caller gets an [`AuditAck`] that resolves once the row is committed, and
/// the handler awaits it before it replies.
pub struct AuditLog {
    tx: std::sync::mpsc::Sender<Pending>,
    store: std::sync::Arc<Store>,
}

/// A row waiting for the writer thread, with its caller's answer channel.
struct Pending {
    row: AuditRow,
    submitted: Instant,
    reply: tokio::sync::oneshot::Sender<Result<Committed, String>>,
}

/// The writer thread's answer for one row.
#[derive(Clone, Copy, Debug)]
pub struct Committed {
    /// False if the user no longer existed (nothing was written).
    pub written: bool,
    /// From [`AuditLog::submit`] to the commit of the row's batch.
    pub latency: Duration,
}

/// Resolves once a submitted row is committed.
#[derive(Debug)]
pub struct AuditAck(tokio::sync::oneshot::Receiver<Result<Committed, String>>);

impl AuditAck {
    /// Waits for the commit of the row.
    pub async fn committed(self) -> Result<Committed, String> {
        self.0
            .await
            .map_err(|_| "audit writer stopped".to_string())?
    }
}

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AuditLog")
    }
}

/// Most rows per audit transaction.
const AUDIT_BATCH: usize = 256;

impl AuditLog {
    /// Starts the writer thread over `store`.
    pub fn start(store: std::sync::Arc<Store>) -> std::io::Result<Self> {
        let (tx, rx) = std::sync::mpsc::channel::<Pending>();
        let writer_store = store.clone();
        std::thread::Builder::new()
            .name("audit".into())
            .spawn(move || {
                while let Ok(first) = rx.recv() {
                    let mut batch = vec![first];
                    while batch.len() < AUDIT_BATCH {
                        match rx.try_recv() {
                            Ok(item) => batch.push(item),
                            Err(_) => break,
                        }
                    }
                    let rows: Vec<&AuditRow> = batch.iter().map(|p| &p.row).collect();
                    match writer_store.audit_many(&rows) {
                        Ok(written) => {
                            for (p, written) in batch.into_iter().zip(written) {
                                let latency = p.submitted.elapsed();
                                let _ = p.reply.send(Ok(Committed { written, latency }));
                            }
                        }
                        Err(e) => {
                            let msg = e.to_string();
                            for p in batch {
                                let _ = p.reply.send(Err(msg.clone()));
                            }
                        }
                    }
                }
            })?;
        Ok(Self { tx, store })
    }

    /// Commits `row` here if the store is free, else hands it to the writer
    /// thread (see [`AuditLog`]); the returned [`AuditAck`] resolves once the
    /// row is committed (at once, in the first case).
    pub fn record(&self, row: AuditRow) -> Result<AuditAck, String> {
        let submitted = Instant::now();
        match self.store.try_audit(&row) {
            None => self.submit(row),
            Some(result) => {
                let (reply, rx) = tokio::sync::oneshot::channel();
                let _ = reply.send(
                    result
                        .map(|written| Committed {
                            written,
                            latency: submitted.elapsed(),
                        })
                        .map_err(|e| e.to_string()),
                );
                Ok(AuditAck(rx))
            }
        }
    }

    /// Hands a row to the writer thread without waiting (callable from any
    /// thread); the returned [`AuditAck`] resolves once it is committed.
    pub fn submit(&self, row: AuditRow) -> Result<AuditAck, String> {
        let (reply, rx) = tokio::sync::oneshot::channel();
        self.tx
            .send(Pending {
                row,
                submitted: Instant::now(),
                reply,
            })
            .map_err(|_| "audit writer stopped".to_string())?;
        Ok(AuditAck(rx))
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

/// The SQLite store: two connections to the one file behind one mutex.
/// SQLite serializes writers anyway, every statement here is short (the
/// homomorphic work happens outside it), and with the mutex the two never
/// wait for each other's locks.
pub struct Store {
    conns: Mutex<Conns>,
}

struct Conns {
    /// Everything but the audit log, with `synchronous=FULL`.
    main: Connection,
    /// The audit log's inserts, with `synchronous=NORMAL` (see
    /// [`Store::audit_many`]); its own connection, so a commit sets no
    /// pragma back and forth.
    audit: Connection,
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
    /// `synchronous=FULL`, and migrates the schema.
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
        let audit = Connection::open(path)?;
        audit.busy_timeout(std::time::Duration::from_secs(10))?;
        audit.execute_batch("PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;")?;
        Ok(Self {
            conns: Mutex::new(Conns { main: conn, audit }),
        })
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, Conns>, StoreError> {
        self.conns.lock().map_err(|_| StoreError::Poisoned)
    }

    fn with<T>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        f(&mut self.lock()?.main)
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

    /// Metadata of a user (sizes and counts, no bytes).
    pub fn user_info(&self, user: &str) -> Result<Option<UserInfo>, StoreError> {
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

    /// Appends several audit rows in one transaction (group commit); each
    /// only if its user still exists. Returns, per row, whether it was
    /// written.
    ///
    /// The audit log trades the last fsync for latency: its transactions run
    /// with `synchronous=NORMAL`, which in WAL mode survives a crash of the
    /// server process (`kill -9`) but not necessarily a power cut; the next
    /// `FULL` commit (any enrollment) flushes them too. Writes that a client
    /// asked for (keys, templates, deletions, galleries) stay `FULL`.
    pub fn audit_many(&self, rows: &[&AuditRow]) -> Result<Vec<bool>, StoreError> {
        Self::audit_rows(&mut self.lock()?.audit, rows)
    }

    /// [`Store::audit_many`] for one row, if no other thread holds the
    /// connection at this moment (`None` otherwise: the caller does not
    /// wait for it).
    pub fn try_audit(&self, row: &AuditRow) -> Option<Result<bool, StoreError>> {
        let mut conns = match self.conns.try_lock() {
            Ok(c) => c,
            Err(std::sync::TryLockError::WouldBlock) => return None,
            Err(std::sync::TryLockError::Poisoned(_)) => return Some(Err(StoreError::Poisoned)),
        };
        Some(Self::audit_rows(&mut conns.audit, &[row]).map(|w| w[0]))
    }

    fn audit_rows(c: &mut Connection, rows: &[&AuditRow]) -> Result<Vec<bool>, StoreError> {
        {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let mut out = Vec::with_capacity(rows.len());
            {
                let mut st = tx.prepare_cached(
                    "INSERT INTO audit (user, ts, outcome, duration_us)
                     SELECT ?1, ?2, ?3, ?4 WHERE EXISTS (SELECT 1 FROM users WHERE user = ?1)",
                )?;
                for r in rows {
                    let n = st.execute(params![r.user, r.ts, r.outcome, r.duration_us as i64])?;
                    out.push(n == 1);
                }
            }
            tx.commit()?;
            Ok(out)
        }
    }

    /// Removes a user's keys, template and audit rows. Returns whether the
    /// user existed.
    pub fn delete_user(&self, user: &str) -> Result<bool, StoreError> {
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

/// What [`backup`] copied.
#[derive(Clone, Copy, Debug)]
pub struct Backup {
    pub schema_version: i64,
    pub users: i64,
    pub gallery_ciphertexts: i64,
    /// Size of the new file.
    pub bytes: u64,
}

/// Why a backup failed.
#[derive(Debug, thiserror::Error)]
pub enum BackupError {
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
/// source travels with it.
pub fn backup(db: &Path, out: &Path) -> Result<Backup, BackupError> {
    use rusqlite::OpenFlags;
    if !db.is_file() {
        return Err(BackupError::NoDatabase);
    }
    if out.exists() {
        return Err(BackupError::OutputExists);
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
        return Err(BackupError::NotBlindmatch);
    }
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
        .map_err(BackupError::from)
        .and_then(|_| {
            std::fs::File::open(&partial)?.sync_all()?;
            std::fs::rename(&partial, out).map_err(BackupError::from)
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

    fn row(user: &str) -> AuditRow {
        AuditRow {
            user: user.into(),
            ts: now_millis(),
            outcome: "ok",
            duration_us: 1,
        }
    }

    /// A database written by schema 2 (before erasures) opens, is migrated
    /// in place, and reads its gallery rows with nothing erased; a mask with
    /// its top bit set (template 63 at d = 64) reads back as written.
    #[test]
    fn schema_2_migrates_and_erasure_masks_round_trip() {
        let dir = std::env::temp_dir().join(format!("blindmatch-mig-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
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

    /// Both ways of committing an audit row: on the caller's thread when the
    /// store is free, through the writer thread when it is held; either way
    /// the row is there once its acknowledgement resolves.
    #[test]
    fn audit_rows_commit_here_or_on_the_writer_thread() {
        let dir = std::env::temp_dir().join(format!("blindmatch-audit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let store = std::sync::Arc::new(Store::open(&dir.join("t.db")).unwrap());
        store.put_keys("ann", "00", b"pk", None).unwrap();
        let log = AuditLog::start(store.clone()).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let count = || store.user_info("ann").unwrap().unwrap().verifications;

        // Free store: committed before `record` returns.
        let ack = log.record(row("ann")).unwrap();
        assert_eq!(count(), 1);
        assert!(rt.block_on(ack.committed()).unwrap().written);

        // Held store: handed to the writer thread, committed once released.
        let held = store.conns.lock().unwrap();
        // Client-requested writes on FULL, the audit log on NORMAL, each on
        // its own connection (no pragma toggled per commit).
        let sync = |c: &Connection| {
            c.query_row("PRAGMA synchronous", [], |r| r.get::<_, i64>(0))
                .unwrap()
        };
        assert_eq!((sync(&held.main), sync(&held.audit)), (2, 1));
        let ack = log.record(row("ann")).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(50));
        drop(held);
        assert!(rt.block_on(ack.committed()).unwrap().written);
        assert_eq!(count(), 2);

        // A row for a user who no longer exists is not written.
        let ack = log.record(row("bob")).unwrap();
        assert!(!rt.block_on(ack.committed()).unwrap().written);
        assert_eq!(count(), 2);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
