//! The embedded store (`--db PATH`, the default): one SQLite file in WAL mode with `synchronous=FULL`.
//!
//! Every write is one `IMMEDIATE` transaction, committed before the HTTP
//! reply is sent: a write acknowledged with 2xx is on disk, and a request that
//! is refused writes nothing. (The audit log alone goes through a journal
//! file first and into the database in batches: see [`audit`]; and a
//! user's deletion removes its audit rows, which belong to its id, in
//! chunks after the transaction that removes the user.)
//! The schema is created and migrated here (`schema_version` holds the
//! version applied).
//!
//! Byte columns hold the wire format of docs/FORMAT.md exactly as validated
//! on the way in (keys and ciphertexts stay in NTT form).
//!
//! By subject: [`users`] (keys and templates), [`galleries`] (1:N
//! ciphertexts), [`logins`] (failed logins, used verdicts), [`audit`] (the
//! audit log and its [`journal`]), and [`offline`] (`backup` and `audit`
//! beside a running server).

pub mod audit;
pub mod galleries;
pub mod logins;
pub mod offline;
pub mod tokens;
pub mod users;

use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize};
use std::sync::{Mutex, MutexGuard};

use rusqlite::{Connection, Transaction, TransactionBehavior};

pub use audit::journal;
use audit::Pending;

use super::StoreError;
use audit::commit_audit;
use journal::{Batch, Journal};

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
    // 4: the last audit journal generation committed (see `audit::journal`).
    "CREATE TABLE audit_journal (applied INTEGER NOT NULL);
    INSERT INTO audit_journal (applied) VALUES (0);",
    // 5: audit rows by time, for retention.
    "CREATE INDEX audit_ts ON audit(ts);",
    // 6: users get ids that are never reused; audit rows belong to an id
    // (rows of names with no user are dropped), so a user registered again
    // under a deleted user's name never sees the old rows. `deleted_users`:
    // ids whose audit rows are still being removed.
    "ALTER TABLE users ADD COLUMN id INTEGER;
    ALTER TABLE users ADD COLUMN created_ms INTEGER NOT NULL DEFAULT 0;
    UPDATE users SET id = rowid, created_ms = created * 1000;
    CREATE UNIQUE INDEX users_id ON users(id);
    CREATE TABLE user_ids (next INTEGER NOT NULL);
    INSERT INTO user_ids (next) SELECT coalesce(max(id), 0) + 1 FROM users;
    ALTER TABLE audit ADD COLUMN user_id INTEGER;
    UPDATE audit SET user_id = (SELECT id FROM users WHERE users.user = audit.user);
    DELETE FROM audit WHERE user_id IS NULL;
    DROP INDEX audit_user;
    CREATE INDEX audit_user_id ON audit(user_id);
    CREATE TABLE deleted_users (id INTEGER PRIMARY KEY);",
    // 7: login mode: the decider's key epoch of a user whose keys the
    // decider derived (NULL: keys the user holds), and the decider's signed
    // statement that the public key is that user's of that epoch.
    // Also what must outlive a restart: failed logins in a row per user,
    // and the verdicts used as credentials.
    "ALTER TABLE users ADD COLUMN key_epoch INTEGER;
     ALTER TABLE users ADD COLUMN key_statement TEXT;
     CREATE TABLE login_failures (
        user TEXT PRIMARY KEY NOT NULL,
        count INTEGER NOT NULL,
        last_ms INTEGER NOT NULL
     );
     CREATE TABLE used_verdicts (
        nonce TEXT PRIMARY KEY NOT NULL,
        exp INTEGER NOT NULL
     );",
    // 8: login mode's galleries: each one's key epoch at the decider, its
    // public and relinearization keys (the keys framing) and the decider's
    // signed statement of the public key. A gallery is created with its row
    // and removed with it.
    "CREATE TABLE gallery_keys (
        gallery TEXT PRIMARY KEY NOT NULL,
        epoch INTEGER NOT NULL,
        keys BLOB NOT NULL,
        statement TEXT NOT NULL,
        created_ms INTEGER NOT NULL
     );",
    // 9: whether a template passed the decider's well-formedness check at
    // enrollment (login mode; templates stored before it did not, and get
    // a signed reject `malformed_template` until the user enrolls again).
    "ALTER TABLE templates ADD COLUMN checked INTEGER NOT NULL DEFAULT 0;",
    // 10: what replicas on one database share: a user's revision (bumped
    // by every write to its keys or template, so a cached copy can be
    // checked), and one-time tokens (enrollment tickets, login challenges)
    // by their SHA-256.
    "ALTER TABLE users ADD COLUMN rev INTEGER NOT NULL DEFAULT 0;
     CREATE TABLE one_time_tokens (
        digest BLOB PRIMARY KEY NOT NULL,
        kind TEXT NOT NULL,
        user TEXT NOT NULL,
        value TEXT NOT NULL,
        expires_ms INTEGER NOT NULL
     );
     CREATE INDEX one_time_tokens_user ON one_time_tokens(kind, user);",
    // 11: sharded galleries, which are PostgreSQL's (its gallery revisions,
    // leases and shard map); a SQLite file is one process's and has no
    // shards, so this step changes nothing here.
    "",
];

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// The SQLite store: one connection behind a mutex (SQLite serializes
/// writers anyway, and every statement here is short: the homomorphic work
/// happens outside it), and the audit journal beside the database file.
pub struct SqliteStore {
    conn: Mutex<Connection>,
    journal: Journal,
    /// Batches taken from the journal and not yet committed (a failed
    /// commit is retried by the next flush); one flush at a time.
    flushing: Mutex<Vec<Batch>>,
    /// Rows in `flushing` (readable while a flush holds it).
    queued_rows: AtomicUsize,
    /// The user ids of the journaled rows not yet committed, in journal
    /// order (see [`SqliteStore::journal_audit`]).
    pending: Mutex<Pending>,
    /// Flushes that failed.
    flush_failures: AtomicU64,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SqliteStore")
    }
}

impl SqliteStore {
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
        // zeros, not left in free pages (see [`SqliteStore::scrub`]).
        conn.execute_batch(
            "PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON; PRAGMA secure_delete=ON;",
        )?;
        migrate(&mut conn)?;
        let applied: i64 = conn.query_row("SELECT applied FROM audit_journal", [], |r| r.get(0))?;
        let (journal, leftovers) = Journal::open(path, applied as u64)?;
        let replayed: usize = leftovers.iter().map(|b| b.rows.len()).sum();
        for batch in &leftovers {
            commit_audit(&mut conn, batch, &[])?;
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
            pending: Mutex::new(Pending::default()),
            flush_failures: AtomicU64::new(0),
        })
    }

    fn lock(&self) -> Result<MutexGuard<'_, Connection>, StoreError> {
        self.conn.lock().map_err(|_| StoreError::Poisoned)
    }

    fn pending(&self) -> Result<MutexGuard<'_, Pending>, StoreError> {
        self.pending.lock().map_err(|_| StoreError::Poisoned)
    }

    fn with<T>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        f(&mut *self.lock()?)
    }

    /// Runs `f` in one `IMMEDIATE` transaction and commits it. An error
    /// drops the transaction, which rolls it back: a refused write writes
    /// nothing.
    fn write<T>(
        &self,
        f: impl FnOnce(&Transaction<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.with(|c| write_in(c, f))
    }

    /// [`SqliteStore::write`] for one that deletes or overwrites bytes: once it is
    /// committed, the old bytes are scrubbed from the WAL (see [`SqliteStore::scrub`]).
    fn write_and_scrub<T>(
        &self,
        f: impl FnOnce(&Transaction<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.with(|c| {
            let out = write_in(c, f)?;
            Self::scrub(c);
            Ok(out)
        })
    }

    /// The schema version of the open database.
    pub fn schema_version(&self) -> Result<i64, StoreError> {
        self.with(|c| Ok(c.query_row("SELECT version FROM schema_version", [], |r| r.get(0))?))
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
}

/// [`SqliteStore::write`] on a connection the caller holds already (the audit
/// commits: at open, in a flush, and offline).
fn write_in<T>(
    c: &mut Connection,
    f: impl FnOnce(&Transaction<'_>) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let out = f(&tx)?;
    tx.commit()?;
    Ok(out)
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
    use std::time::{Duration, Instant};

    use super::audit::PRUNE_CHUNK;
    use super::*;
    use crate::server::store::{audit_log, now_millis, AuditLog, AuditRow, OfflineError, Store};
    use crate::server::test_dir::TestDir;

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
        let dir = TestDir::new("mig");
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
    }

    /// Retention removes exactly the rows older than the cut, however many
    /// chunks that takes, and nothing else.
    #[test]
    fn prune_audit_removes_only_rows_past_the_cut() {
        let dir = TestDir::new("prune");
        let store = SqliteStore::open(&dir.join("t.db")).unwrap();
        store.put_keys("ann", "00", b"pk", None, None, 10).unwrap();
        let old = PRUNE_CHUNK as usize + 5;
        for (i, ts) in (0..old as i64).chain(1_000_000..1_000_010).enumerate() {
            let r = AuditRow {
                ts,
                duration_us: i as u64,
                ..row("ann")
            };
            store.journal_audit(r, 1).unwrap();
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
    }

    /// `audit_log` reads committed and journaled rows alike, each once,
    /// newest `limit` of them, oldest first; rows of a deleted user that are
    /// still journaled are left out, as a flush would.
    #[test]
    fn audit_log_reads_the_database_and_the_journal() {
        let dir = TestDir::new("auditlog");
        let path = dir.join("t.db");
        let store = SqliteStore::open(&path).unwrap();
        store.put_keys("ann", "00", b"pk", None, None, 10).unwrap();
        store.put_keys("bob", "00", b"pk", None, None, 10).unwrap();
        // Registered at the epoch: journaled rows belong to a user of their
        // name registered at or before their time.
        store
            .lock()
            .unwrap()
            .execute("UPDATE users SET created_ms = 0", [])
            .unwrap();
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
    }

    /// A recorded row is in the journal at once and in the database after a
    /// flush; a row for a user who no longer exists
    /// is dropped; rows left in the journal by a crash are committed, once,
    /// when the store opens again.
    #[test]
    fn audit_rows_go_through_the_journal_and_survive_a_crash() {
        let dir = TestDir::new("audit");
        let path = dir.join("t.db");
        let rows_in_db = |c: &Connection| -> i64 {
            c.query_row("SELECT count(*) FROM audit", [], |r| r.get(0))
                .unwrap()
        };
        {
            let shared = std::sync::Arc::new(Store::open(&path).unwrap());
            let Store::Sqlite(store) = &*shared else {
                unreachable!()
            };
            store.put_keys("ann", "00", b"pk", None, None, 10).unwrap();
            let log = AuditLog::start(shared.clone(), None).unwrap();
            log.record(row("ann"), 1).unwrap();
            assert_eq!(rows_in_db(&store.lock().unwrap()), 0);
            assert_eq!(store.user_info("ann").unwrap().unwrap().verifications, 1);
            // The flusher thread moves rows without being asked.
            log.record(row("ann"), 1).unwrap();
            let start = Instant::now();
            while rows_in_db(&store.lock().unwrap()) < 2 {
                assert!(start.elapsed() < Duration::from_secs(10), "never flushed");
                std::thread::sleep(Duration::from_millis(10));
            }
            assert_eq!(store.flush_audit().unwrap(), 0);
            // A row for a user who no longer exists is not written.
            log.record(row("bob"), 2).unwrap();
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
            let store = SqliteStore::open(&path2).unwrap();
            store.put_keys("ann", "00", b"pk", None, None, 10).unwrap();
            for _ in 0..3 {
                store.journal.append(row("ann")).unwrap();
            }
            assert_eq!(rows_in_db(&store.lock().unwrap()), 0);
            // Dropped without a flush.
        }
        let store = SqliteStore::open(&path2).unwrap();
        assert_eq!(rows_in_db(&store.lock().unwrap()), 3);
        assert_eq!(store.flush_audit().unwrap(), 0);
        drop(store);
        let store = SqliteStore::open(&path2).unwrap();
        assert_eq!(store.user_info("ann").unwrap().unwrap().verifications, 3);
        // Deleting the user takes its journaled rows too.
        store.journal.append(row("ann")).unwrap();
        assert!(store.delete_user("ann").unwrap());
        assert_eq!(rows_in_db(&store.lock().unwrap()), 0);
    }

    /// A user read counts the user's journaled rows without flushing them
    /// (no fsync), and counts none twice once they are flushed.
    #[test]
    fn user_reads_count_journaled_rows_without_flushing() {
        let dir = TestDir::new("readcount");
        let store = SqliteStore::open(&dir.join("t.db")).unwrap();
        store.put_keys("ann", "00", b"pk", None, None, 10).unwrap();
        store.put_keys("bob", "00", b"pk", None, None, 10).unwrap();
        for _ in 0..3 {
            store.journal_audit(row("ann"), 1).unwrap();
        }
        store.journal_audit(row("bob"), 2).unwrap();
        assert_eq!(store.user_info("ann").unwrap().unwrap().verifications, 3);
        assert_eq!(
            store.audit_journaled(),
            4,
            "a user read flushed the journal"
        );
        assert_eq!(store.flush_audit().unwrap(), 4);
        assert_eq!(store.user_info("ann").unwrap().unwrap().verifications, 3);
        assert_eq!(store.user_info("bob").unwrap().unwrap().verifications, 1);
    }

    /// A user deleted and registered again gets a new id: the rows of the
    /// old one (committed, or journaled for the old id by a verification
    /// still running) never count for the new one. Deleting takes the rows
    /// in chunks, leaving other users' rows alone.
    #[test]
    fn a_namesake_gets_a_new_id_and_none_of_the_old_rows() {
        let dir = TestDir::new("namesake");
        let path = dir.join("t.db");
        let store = SqliteStore::open(&path).unwrap();
        store.put_keys("ann", "00", b"pk", None, None, 10).unwrap();
        store.put_keys("bob", "00", b"pk", None, None, 10).unwrap();
        let old = store.load_user("ann").unwrap().unwrap().id;
        let n = super::audit::DELETE_CHUNK as usize * 2 + 7;
        for _ in 0..n {
            store.journal_audit(row("ann"), old).unwrap();
        }
        store.journal_audit(row("bob"), 2).unwrap();
        store.flush_audit().unwrap();
        store.journal_audit(row("ann"), old).unwrap();
        assert_eq!(
            store.user_info("ann").unwrap().unwrap().verifications,
            n as i64 + 1
        );
        assert!(store.delete_user("ann").unwrap());
        assert!(!store.delete_user("ann").unwrap());
        store.put_keys("ann", "00", b"pk", None, None, 10).unwrap();
        let new = store.load_user("ann").unwrap().unwrap().id;
        assert!(new > old, "id {new} reused");
        store.journal_audit(row("ann"), old).unwrap();
        assert_eq!(store.user_info("ann").unwrap().unwrap().verifications, 0);
        store.flush_audit().unwrap();
        assert_eq!(store.user_info("ann").unwrap().unwrap().verifications, 0);
        assert_eq!(store.user_info("bob").unwrap().unwrap().verifications, 1);
        let rows: i64 = store
            .lock()
            .unwrap()
            .query_row("SELECT count(*) FROM audit", [], |r| r.get(0))
            .unwrap();
        assert_eq!(rows, 1);
        assert!(audit_log(&path, Some("ann"), 0, 100).unwrap().is_empty());
        // A deletion cut short (the server stopped between its chunks) is
        // finished by the next start's flusher thread.
        store
            .lock()
            .unwrap()
            .execute_batch(&format!(
                "INSERT INTO audit (user_id, user, ts, outcome, duration_us)
                   VALUES ({old}, 'ann', 1, 'ok', 1), ({old}, 'ann', 2, 'ok', 1);
                 INSERT INTO deleted_users (id) VALUES ({old});"
            ))
            .unwrap();
        assert_eq!(store.remove_audit_of_deleted().unwrap(), 2);
        let left: i64 = store
            .lock()
            .unwrap()
            .query_row(
                "SELECT (SELECT count(*) FROM audit) + (SELECT count(*) FROM deleted_users)",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(left, 1);
    }

    /// A database of schema 5 (audit rows by name) is migrated: each user
    /// gets an id, its rows are attached to it, rows of names with no user
    /// go, and the next user gets an id past every one given.
    #[test]
    fn schema_5_migrates_audit_rows_to_user_ids() {
        let dir = TestDir::new("mig5");
        let path = dir.join("t.db");
        {
            let c = Connection::open(&path).unwrap();
            c.execute_batch(
                "CREATE TABLE schema_version (version INTEGER NOT NULL);
                 INSERT INTO schema_version (version) VALUES (5);",
            )
            .unwrap();
            for m in &MIGRATIONS[..5] {
                c.execute_batch(m).unwrap();
            }
            c.execute_batch(
                "INSERT INTO users (user, params_id, public_key, created) VALUES
                   ('ann', '00', x'01', 1000), ('bob', '00', x'01', 1000);
                 INSERT INTO audit (user, ts, outcome, duration_us) VALUES
                   ('ann', 1, 'ok', 1), ('ann', 2, 'ok', 1), ('bob', 3, 'ok', 1),
                   ('gone', 4, 'ok', 1);",
            )
            .unwrap();
        }
        let store = SqliteStore::open(&path).unwrap();
        assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
        assert_eq!(store.user_info("ann").unwrap().unwrap().verifications, 2);
        assert_eq!(store.user_info("bob").unwrap().unwrap().verifications, 1);
        let ann = store.load_user("ann").unwrap().unwrap().id;
        let bob = store.load_user("bob").unwrap().unwrap().id;
        assert_ne!(ann, bob);
        store.put_keys("cid", "00", b"pk", None, None, 10).unwrap();
        assert!(store.load_user("cid").unwrap().unwrap().id > ann.max(bob));
        let rows: i64 = store
            .lock()
            .unwrap()
            .query_row("SELECT count(*) FROM audit", [], |r| r.get(0))
            .unwrap();
        assert_eq!(rows, 3);
        assert_eq!(audit_log(&path, Some("ann"), 0, 100).unwrap().len(), 2);
    }

    /// A new user past `max_users` is refused, and nothing is written.
    #[test]
    fn registration_past_max_users_is_refused() {
        let dir = TestDir::new("maxusers");
        let store = SqliteStore::open(&dir.join("t.db")).unwrap();
        store.put_keys("ann", "00", b"pk", None, None, 1).unwrap();
        assert!(matches!(
            store.put_keys("bob", "00", b"pk", None, None, 1),
            Err(StoreError::TooManyUsers { max: 1 })
        ));
        assert!(store.load_user("bob").unwrap().is_none());
        assert!(store.delete_user("ann").unwrap());
        store.put_keys("bob", "00", b"pk", None, None, 1).unwrap();
    }
}
