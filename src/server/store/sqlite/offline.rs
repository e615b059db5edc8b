//! Reads of a database that a server may be serving: `backup` (a
//! consistent copy) and `audit` (the log, journaled rows included). The
//! database is opened read-only, never migrated or changed.

use std::path::Path;
use std::time::Duration;

use rusqlite::{params, Connection};

use super::audit::{
    commit_audit,
    journal::{self, Batch},
};
use crate::server::store::StoreError;

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
    #[error("database schema {found} is older than this build's {supported}: serve it once to migrate it")]
    OldSchema { found: i64, supported: i64 },
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
/// yet flushed (see [`journal`]) are read first and committed into
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
    let journaled = journal::journaled(db)?;
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
/// committed. Only rows of users that exist are listed: committed rows by
/// their user's id, journaled ones by name, if that user was registered at
/// or before the row's time (as a flush after a restart would attach them).
pub fn audit_log(
    db: &Path,
    user: Option<&str>,
    since: i64,
    limit: usize,
) -> Result<Vec<AuditEntry>, OfflineError> {
    // The journal first, as in [`backup`].
    let journaled = journal::journaled(db)?;
    let mut c = open_read_only(db)?;
    let tx = c.transaction()?;
    let found: i64 = tx.query_row("SELECT version FROM schema_version", [], |r| r.get(0))?;
    if found < super::SCHEMA_VERSION {
        // Rows were by name before schema 6.
        return Err(OfflineError::OldSchema {
            found,
            supported: super::SCHEMA_VERSION,
        });
    }
    let applied = applied_generation(&tx)?;
    let limit_sql = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut out: Vec<AuditEntry> = {
        let mut st = tx.prepare(
            "SELECT u.user, a.ts, a.outcome, a.duration_us FROM audit a
             JOIN users u ON u.id = a.user_id
             WHERE (?1 IS NULL OR u.user = ?1) AND a.ts >= ?2 ORDER BY a.id DESC LIMIT ?3",
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
        let mut exists = tx.prepare_cached(
            "SELECT EXISTS(SELECT 1 FROM users WHERE user = ?1 AND created_ms <= ?2)",
        )?;
        for batch in journaled.iter().filter(|b| b.generation > applied) {
            for r in &batch.rows {
                if user.is_some_and(|u| u != r.user) || r.ts < since {
                    continue;
                }
                if !exists.query_row(params![r.user, r.ts], |x| x.get::<_, bool>(0))? {
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
        commit_audit(&mut c, batch, &[]).map_err(|e| match e {
            StoreError::Sql(e) => OfflineError::Sql(e),
            e => OfflineError::Io(std::io::Error::other(e.to_string())),
        })?;
    }
    Ok(())
}
