//! The audit journal: a verification's audit row is appended to a file with
//! one `write` before its reply is sent, and moved into the database in
//! batches by [`Store::flush_audit`](crate::server::store::Store::flush_audit).
//!
//! A row is acknowledged once its bytes are in the file: the operating system
//! holds them, so they survive a crash of the server (`kill -9`), as a commit
//! with `synchronous=NORMAL` would, for a fraction of a SQLite commit's cost.
//! The rows of one journal file go into the database in one transaction that
//! also records the file's generation as applied (`audit_journal.applied`);
//! only then is the file removed. When the store opens, files newer than the
//! applied generation are replayed, each up to its first record that is
//! incomplete or fails its checksum (a torn tail), and older ones removed, so
//! no row is applied twice.
//!
//! File `<db file>-audit-<generation>` beside the database: a 16-byte header
//! (`BMAUDIT1`, the generation as u64 LE), then records
//! `[payload length: u32 LE][CRC-32 of the payload: u32 LE][payload]`, where
//! the payload is `ts: i64 LE, duration_us: u64 LE, outcome length: u8,
//! outcome, user length: u16 LE, user`.
//!
//! Durability: a journal file is fsynced (with its directory) when the
//! flusher takes it, and the file being appended to whenever a flush fails
//! ([`Journal::sync`]), so a power cut loses at most the rows of the last
//! flush interval however long the database refuses them. While a taken
//! batch is not committed, no new file is started (see
//! [`Store::flush_audit`](crate::server::store::Store::flush_audit)).
//!
//! `<db file>-audit.lock` is held (an exclusive file lock) while the store is
//! open: a second server on the same database is refused instead of
//! replaying the first one's live journal. A lock still held is waited for
//! up to [`LOCK_WAIT`] before the refusal: a process that forked while the
//! store was open shares its lock until the child `exec`s or exits, so a
//! store reopened right after it closed could otherwise be refused by its
//! own process's child (seen under qemu, where that window is long).

use std::borrow::Cow;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::AuditRow;

const MAGIC: &[u8; 8] = b"BMAUDIT1";
const HEADER: u64 = 16;
/// Largest payload a record may declare (a user name is at most 64 bytes;
/// anything larger is a torn or foreign record).
const MAX_PAYLOAD: usize = 1024;
/// How long [`Journal::open`] waits for a lock held elsewhere before it
/// answers [`JournalError::InUse`].
pub const LOCK_WAIT: Duration = Duration::from_secs(2);

/// Journal errors.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// Another process holds the database's journal lock.
    #[error("the database is in use by another blindmatch-server (lock file {0})")]
    InUse(PathBuf),
    /// Reading or writing a journal file failed.
    #[error("audit journal: {0}")]
    Io(#[from] std::io::Error),
    /// The journal's mutex was poisoned by a panic.
    #[error("audit journal poisoned")]
    Poisoned,
}

/// Rows taken out of one journal file, to be committed to the database.
#[derive(Debug)]
pub struct Batch {
    /// The file's generation (recorded as applied with the rows).
    pub generation: u64,
    pub rows: Vec<AuditRow>,
}

/// The audit journal of one database (see the module documentation).
pub struct Journal {
    dir: PathBuf,
    /// File names start with this: `<db file>-audit-`.
    prefix: String,
    active: Mutex<Active>,
    /// Held for the journal's lifetime.
    _lock: File,
    #[cfg(test)]
    faults: Mutex<tests::Faults>,
}

/// The file being appended to and the rows it holds.
struct Active {
    file: File,
    generation: u64,
    /// Bytes of whole records (and the header): where a failed write is cut
    /// back to.
    len: u64,
    /// Bytes known to be on disk (fsynced).
    synced: u64,
    /// A failed write left a partial record after `len` and cutting it off
    /// failed too: no record is appended until the cut succeeds (or the
    /// file is taken), since replay would stop at the torn one.
    torn: bool,
    rows: Vec<AuditRow>,
}

impl Active {
    fn new(file: File, generation: u64) -> Self {
        Self {
            file,
            generation,
            len: HEADER,
            synced: 0,
            torn: false,
            rows: Vec::new(),
        }
    }
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Journal")
    }
}

impl Journal {
    /// Opens the journal of the database at `db`, whose `audit_journal`
    /// records `applied` as the last generation committed. Returns the
    /// journal (appending to a new file) and the rows of every leftover file
    /// newer than `applied`, oldest first, to be committed and then
    /// [`removed`](Journal::remove); older leftovers are removed here.
    pub fn open(db: &Path, applied: u64) -> Result<(Self, Vec<Batch>), JournalError> {
        Self::open_waiting(db, applied, LOCK_WAIT)
    }

    /// [`Journal::open`], waiting `wait` at most for the lock.
    fn open_waiting(
        db: &Path,
        applied: u64,
        wait: Duration,
    ) -> Result<(Self, Vec<Batch>), JournalError> {
        let (dir, name) = split(db);
        let lock_path = dir.join(format!("{name}-audit.lock"));
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)?;
        let since = Instant::now();
        loop {
            match lock.try_lock() {
                Ok(()) => break,
                Err(std::fs::TryLockError::WouldBlock) if since.elapsed() < wait => {
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(std::fs::TryLockError::WouldBlock) => {
                    return Err(JournalError::InUse(lock_path))
                }
                Err(std::fs::TryLockError::Error(e)) => return Err(e.into()),
            }
        }
        let prefix = format!("{name}-audit-");
        let found = generations(&dir, &prefix)?;
        let mut leftovers = Vec::new();
        for &g in &found {
            let path = dir.join(format!("{prefix}{g}"));
            if g <= applied {
                std::fs::remove_file(&path)?;
            } else {
                leftovers.push(Batch {
                    generation: g,
                    rows: read_rows(&path, g)?,
                });
            }
        }
        let generation = found.last().copied().unwrap_or(0).max(applied) + 1;
        let file = create(&dir.join(format!("{prefix}{generation}")), generation)?;
        let journal = Self {
            dir,
            prefix,
            active: Mutex::new(Active::new(file, generation)),
            _lock: lock,
            #[cfg(test)]
            faults: Mutex::default(),
        };
        Ok((journal, leftovers))
    }

    fn active(&self) -> Result<MutexGuard<'_, Active>, JournalError> {
        self.active.lock().map_err(|_| JournalError::Poisoned)
    }

    fn path(&self, generation: u64) -> PathBuf {
        self.dir.join(format!("{}{generation}", self.prefix))
    }

    /// Appends `row` to the file with one `write`; once this returns `Ok`
    /// the row survives a crash of this process. On a failed write the file
    /// is cut back to its last whole record, so later rows are not lost
    /// behind a torn one; if the cut fails too, appends are refused until a
    /// retried cut succeeds or the file is taken.
    pub fn append(&self, row: AuditRow) -> Result<(), JournalError> {
        let record = encode(&row)?;
        let mut a = self.active()?;
        if a.torn {
            let len = a.len;
            self.set_len(&a.file, len)?;
            a.torn = false;
        }
        if let Err(e) = self.write(&mut a.file, &record) {
            let len = a.len;
            if let Err(cut) = self.set_len(&a.file, len) {
                tracing::error!(error = %cut, "cutting a torn audit record off");
                a.torn = true;
            }
            return Err(e.into());
        }
        a.len += record.len() as u64;
        a.rows.push(row);
        Ok(())
    }

    /// Makes the records of the file being appended to durable (fsync of
    /// the file and its directory). For when a flush failed: its rows stay
    /// journaled, and must not wait for a later flush to reach the disk.
    pub fn sync(&self) -> Result<(), JournalError> {
        let (file, generation, len) = {
            let a = self.active()?;
            if a.synced == a.len {
                return Ok(());
            }
            (a.file.try_clone()?, a.generation, a.len)
        };
        self.sync_file(&file, generation, len)?;
        let mut a = self.active()?;
        if a.generation == generation {
            a.synced = a.synced.max(len);
        }
        Ok(())
    }

    /// Rows appended and not yet taken.
    pub fn pending(&self) -> Result<usize, JournalError> {
        Ok(self.active()?.rows.len())
    }

    /// Starts a new file and returns the rows of the one it replaces (`None`
    /// when there are none; nothing changes then). The old file is fsynced
    /// before its rows are returned (a failure to is logged: the rows are
    /// committed with `synchronous=FULL` next).
    pub fn take(&self) -> Result<Option<Batch>, JournalError> {
        let old = {
            let mut a = self.active()?;
            if a.rows.is_empty() && !a.torn {
                return Ok(None);
            }
            let generation = a.generation + 1;
            let file = self.create(&self.path(generation), generation)?;
            std::mem::replace(&mut *a, Active::new(file, generation))
        };
        if old.synced < old.len {
            if let Err(e) = self.sync_file(&old.file, old.generation, old.len) {
                tracing::warn!(error = %e, generation = old.generation, "fsync of an audit journal");
            }
        }
        Ok(Some(Batch {
            generation: old.generation,
            rows: old.rows,
        }))
    }

    /// fsync of `file` (generation `generation`, `len` bytes) and of the
    /// directory that holds its name.
    fn sync_file(&self, file: &File, generation: u64, len: u64) -> std::io::Result<()> {
        file.sync_data()?;
        #[cfg(unix)]
        File::open(&self.dir)?.sync_all()?;
        #[cfg(test)]
        self.faults().synced.push((generation, len));
        let _ = (generation, len);
        Ok(())
    }

    fn write(&self, file: &mut File, record: &[u8]) -> std::io::Result<()> {
        #[cfg(test)]
        if let Some(n) = self.faults().short_write.take() {
            file.write_all(&record[..n])?;
            return Err(std::io::Error::other("injected: short write"));
        }
        file.write_all(record)
    }

    fn set_len(&self, file: &File, len: u64) -> std::io::Result<()> {
        #[cfg(test)]
        if self.faults().set_len {
            return Err(std::io::Error::other("injected: set_len"));
        }
        file.set_len(len)
    }

    fn create(&self, path: &Path, generation: u64) -> std::io::Result<File> {
        #[cfg(test)]
        if self.faults().create {
            return Err(std::io::Error::other("injected: create"));
        }
        create(path, generation)
    }

    /// Removes the file of `generation`, once its rows are committed.
    pub fn remove(&self, generation: u64) {
        if let Err(e) = std::fs::remove_file(self.path(generation)) {
            tracing::warn!(error = %e, generation, "removing an applied audit journal");
        }
    }
}

/// The rows journaled for database `db`, by file, oldest first, read
/// without taking the journal's lock (a live server may be appending; a
/// record it is still writing reads as a torn tail and is left out). For
/// backups.
pub fn journaled(db: &Path) -> std::io::Result<Vec<Batch>> {
    let (dir, name) = split(db);
    let prefix = format!("{name}-audit-");
    let mut out = Vec::new();
    for g in generations(&dir, &prefix)? {
        match read_rows(&dir.join(format!("{prefix}{g}")), g) {
            Ok(rows) => out.push(Batch {
                generation: g,
                rows,
            }),
            // Flushed and removed since the directory was listed.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

/// The directory and file name of database `db`.
fn split(db: &Path) -> (PathBuf, String) {
    let dir = match db.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = db
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "db".into());
    (dir, name)
}

/// The generations of the journal files in `dir` named `<prefix><n>`,
/// ascending.
fn generations(dir: &Path, prefix: &str) -> std::io::Result<Vec<u64>> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let file_name = entry?.file_name();
        let Some(rest) = file_name.to_str().and_then(|n| n.strip_prefix(prefix)) else {
            continue;
        };
        if let Ok(g) = rest.parse::<u64>() {
            found.push(g);
        }
    }
    found.sort_unstable();
    Ok(found)
}

/// Creates journal file `path` (which must not exist) with its header. A
/// file whose header could not be written is removed, so that a retry can
/// create it again.
fn create(path: &Path, generation: u64) -> std::io::Result<File> {
    let mut file = OpenOptions::new()
        .create_new(true)
        .append(true)
        .open(path)?;
    let mut header = [0u8; HEADER as usize];
    header[..8].copy_from_slice(MAGIC);
    header[8..].copy_from_slice(&generation.to_le_bytes());
    if let Err(e) = file.write_all(&header) {
        drop(file);
        let _ = std::fs::remove_file(path);
        return Err(e);
    }
    Ok(file)
}

/// One record: length, checksum, payload.
fn encode(row: &AuditRow) -> std::io::Result<Vec<u8>> {
    let too_long = |what| std::io::Error::new(std::io::ErrorKind::InvalidInput, what);
    let outcome = u8::try_from(row.outcome.len()).map_err(|_| too_long("outcome too long"))?;
    let user = u16::try_from(row.user.len()).map_err(|_| too_long("user name too long"))?;
    let payload_len = 8 + 8 + 1 + outcome as usize + 2 + user as usize;
    if payload_len > MAX_PAYLOAD {
        return Err(too_long("audit row too long"));
    }
    let mut out = Vec::with_capacity(8 + payload_len);
    out.extend_from_slice(&(payload_len as u32).to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&row.ts.to_le_bytes());
    out.extend_from_slice(&row.duration_us.to_le_bytes());
    out.push(outcome);
    out.extend_from_slice(row.outcome.as_bytes());
    out.extend_from_slice(&user.to_le_bytes());
    out.extend_from_slice(row.user.as_bytes());
    let crc = crc32(&out[8..]);
    out[4..8].copy_from_slice(&crc.to_le_bytes());
    Ok(out)
}

/// The payload's row, or `None` if it does not parse.
fn decode(p: &[u8]) -> Option<AuditRow> {
    let ts = i64::from_le_bytes(p.get(0..8)?.try_into().ok()?);
    let duration_us = u64::from_le_bytes(p.get(8..16)?.try_into().ok()?);
    let n = *p.get(16)? as usize;
    let outcome = std::str::from_utf8(p.get(17..17 + n)?).ok()?;
    let at = 17 + n;
    let m = u16::from_le_bytes(p.get(at..at + 2)?.try_into().ok()?) as usize;
    let user = std::str::from_utf8(p.get(at + 2..at + 2 + m)?).ok()?;
    (at + 2 + m == p.len()).then(|| AuditRow {
        user: user.to_string(),
        ts,
        outcome: match outcome {
            "ok" => Cow::Borrowed("ok"),
            other => Cow::Owned(other.to_string()),
        },
        duration_us,
    })
}

/// The rows of journal file `path`, up to its first incomplete or corrupt
/// record. A file whose header is missing or names another generation holds
/// no rows (it was cut short while being created).
fn read_rows(path: &Path, generation: u64) -> std::io::Result<Vec<AuditRow>> {
    let mut bytes = Vec::new();
    File::open(path)?.read_to_end(&mut bytes)?;
    let mut rows = Vec::new();
    let header_ok = bytes.len() >= HEADER as usize
        && &bytes[..8] == MAGIC
        && bytes[8..16] == generation.to_le_bytes();
    if !header_ok {
        tracing::warn!(path = %path.display(), "audit journal without a valid header");
        return Ok(rows);
    }
    let mut at = HEADER as usize;
    while let Some(head) = bytes.get(at..at + 8) {
        let len = u32::from_le_bytes(head[..4].try_into().unwrap_or_default()) as usize;
        let crc = u32::from_le_bytes(head[4..].try_into().unwrap_or_default());
        let Some(payload) = bytes
            .get(at + 8..at + 8 + len)
            .filter(|_| len <= MAX_PAYLOAD)
        else {
            break;
        };
        if crc32(payload) != crc {
            break;
        }
        let Some(row) = decode(payload) else { break };
        rows.push(row);
        at += 8 + len;
    }
    if at != bytes.len() {
        tracing::warn!(
            path = %path.display(),
            kept = rows.len(),
            dropped_bytes = bytes.len() - at,
            "audit journal ends in an incomplete record"
        );
    }
    Ok(rows)
}

/// CRC-32 (IEEE 802.3, reflected, as in zlib and PNG).
fn crc32(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::store::sqlite::SqliteStore as Store;
    use crate::server::test_dir::TestDir;

    /// Failures injected into a journal's file operations, and the fsyncs
    /// it made.
    #[derive(Debug, Default)]
    pub(super) struct Faults {
        /// The next record write stops after this many bytes and fails.
        pub short_write: Option<usize>,
        /// Every `set_len` fails.
        pub set_len: bool,
        /// Every creation of a journal file fails.
        pub create: bool,
        /// (generation, bytes) of each fsync.
        pub synced: Vec<(u64, u64)>,
    }

    impl Journal {
        pub(super) fn faults(&self) -> MutexGuard<'_, Faults> {
            self.faults.lock().unwrap()
        }
    }

    fn files(d: &TestDir) -> Vec<u64> {
        generations(&d.join("."), "t.db-audit-").unwrap()
    }

    /// A write that fails halfway and whose cut-back fails too must not
    /// leave a torn record in front of later acknowledged rows: the next
    /// append retries the cut, and while the cut keeps failing appends are
    /// refused (not acknowledged) until the file is taken.
    #[test]
    fn a_failed_cut_does_not_hide_later_rows() {
        let d = dir("cut");
        let db = d.join("t.db");
        let (j, _) = Journal::open(&db, 0).unwrap();
        j.append(row("ann", 1)).unwrap();
        j.faults().short_write = Some(7);
        j.faults().set_len = true;
        assert!(j.append(row("ann", 2)).is_err());
        // The disk recovers: the next row is acknowledged after the cut.
        j.faults().set_len = false;
        j.append(row("ann", 3)).unwrap();
        // It fails again and stays failing: nothing is acknowledged until
        // the file is taken, then rows go to the new file.
        j.faults().short_write = Some(9);
        j.faults().set_len = true;
        assert!(j.append(row("ann", 4)).is_err());
        assert!(j.append(row("ann", 5)).is_err());
        let batch = j.take().unwrap().unwrap();
        let got: Vec<_> = batch.rows.iter().map(key).collect();
        assert_eq!(got, vec![key(&row("ann", 1)), key(&row("ann", 3))]);
        j.append(row("ann", 6)).unwrap();
        drop(j);
        // What a restart replays is exactly what was acknowledged.
        let (_j, left) = Journal::open(&db, 0).unwrap();
        let got: Vec<Vec<_>> = left
            .iter()
            .map(|b| b.rows.iter().map(key).collect())
            .collect();
        assert_eq!(
            got,
            vec![
                vec![key(&row("ann", 1)), key(&row("ann", 3))],
                vec![key(&row("ann", 6))]
            ]
        );
    }

    /// While the database refuses the flushes, the journal does not grow a
    /// file per flush, and every failed flush leaves the journaled rows
    /// fsynced; once the database accepts again, one flush commits all.
    #[test]
    fn failing_flushes_keep_two_files_and_fsync_each_time() {
        let d = dir("failing");
        let store = Store::open(&d.join("t.db")).unwrap();
        store.put_keys("ann", "00", b"pk", None, None, 10).unwrap();
        // Rows journaled without a user id attach to the user of their name
        // registered before them: stamp them after the registration.
        let after = crate::server::store::now_millis();
        let row = |user: &str, ts: i64| row(user, after + ts);
        let j = &store.journal;
        let synced_all = || {
            let a = j.active().unwrap();
            let want = (a.generation, a.len);
            drop(a);
            j.faults().synced.last() == Some(&want)
        };
        store
            .lock()
            .unwrap()
            .execute_batch("PRAGMA query_only=ON")
            .unwrap();
        for ts in 1..=5 {
            j.append(row("ann", ts)).unwrap();
            assert!(store.flush_audit().is_err());
            assert!(synced_all(), "flush {ts}: journaled rows not fsynced");
        }
        assert_eq!(files(&d).len(), 2, "journal files: {:?}", files(&d));
        // A journal file that cannot be created fails the flush too.
        store
            .lock()
            .unwrap()
            .execute_batch("PRAGMA query_only=OFF")
            .unwrap();
        assert_eq!(store.flush_audit().unwrap(), 5);
        j.faults().create = true;
        for ts in 6..=8 {
            j.append(row("ann", ts)).unwrap();
            assert!(store.flush_audit().is_err());
            assert!(synced_all(), "flush {ts}: journaled rows not fsynced");
        }
        assert_eq!(files(&d).len(), 1, "journal files: {:?}", files(&d));
        j.faults().create = false;
        assert_eq!(store.flush_audit().unwrap(), 3);
        assert_eq!(store.user_info("ann").unwrap().unwrap().verifications, 8);
        assert_eq!(files(&d).len(), 1);
    }

    fn row(user: &str, ts: i64) -> AuditRow {
        AuditRow {
            user: user.into(),
            ts,
            outcome: "ok".into(),
            duration_us: ts as u64 * 3,
        }
    }

    fn dir(tag: &str) -> TestDir {
        TestDir::new(&format!("journal-{tag}"))
    }

    fn key(r: &AuditRow) -> (String, i64, String, u64) {
        (r.user.clone(), r.ts, r.outcome.to_string(), r.duration_us)
    }

    #[test]
    fn crc32_known_answer() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    /// Rows left in a journal by a crash come back once, in order; a torn
    /// last record is dropped and the rows before it kept; a file already
    /// applied is removed, not replayed.
    #[test]
    fn leftovers_replay_up_to_a_torn_record_and_applied_files_go() {
        let d = dir("replay");
        let db = d.join("t.db");
        let (j, left) = Journal::open(&db, 0).unwrap();
        assert!(left.is_empty());
        for ts in 1..=3 {
            j.append(row("ann", ts)).unwrap();
        }
        // Generation 1 taken (as if committed, not yet removed), two more
        // rows in generation 2, then a crash mid-record.
        let first = j.take().unwrap().unwrap();
        assert_eq!((first.generation, first.rows.len()), (1, 3));
        j.append(row("bob", 4)).unwrap();
        j.append(row("bob", 5)).unwrap();
        assert_eq!(j.pending().unwrap(), 2);
        drop(j);
        let torn = encode(&row("eve", 6)).unwrap();
        let mut f = OpenOptions::new()
            .append(true)
            .open(d.join("t.db-audit-2"))
            .unwrap();
        f.write_all(&torn[..torn.len() - 3]).unwrap();
        drop(f);

        // Applied up to 1: generation 1 is removed, 2 replayed without the
        // torn row; the new file is 3.
        let (j, left) = Journal::open(&db, 1).unwrap();
        assert!(!d.join("t.db-audit-1").exists());
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].generation, 2);
        let got: Vec<_> = left[0].rows.iter().map(key).collect();
        assert_eq!(got, vec![key(&row("bob", 4)), key(&row("bob", 5))]);
        assert!(d.join("t.db-audit-3").exists());
        // Nothing appended: nothing to take.
        assert!(j.take().unwrap().is_none());
        drop(j);

        // Not applied at all: both leftovers come back, oldest first.
        let (_j, left) = Journal::open(&db, 0).unwrap();
        let gens: Vec<u64> = left.iter().map(|b| b.generation).collect();
        assert_eq!(gens, vec![2, 3]);
        assert_eq!(left[0].rows.len(), 2);
        assert!(left[1].rows.is_empty());
    }

    /// A flipped bit in a record's payload ends the replay there.
    #[test]
    fn a_corrupt_record_ends_the_replay() {
        let d = dir("corrupt");
        let db = d.join("t.db");
        let (j, _) = Journal::open(&db, 0).unwrap();
        for ts in 1..=3 {
            j.append(row("carol", ts)).unwrap();
        }
        drop(j);
        let path = d.join("t.db-audit-1");
        let mut bytes = std::fs::read(&path).unwrap();
        let second = HEADER as usize + encode(&row("carol", 1)).unwrap().len();
        bytes[second + 12] ^= 0x10;
        std::fs::write(&path, &bytes).unwrap();
        let (_j, left) = Journal::open(&db, 0).unwrap();
        assert_eq!(left[0].rows.len(), 1);
    }

    /// One journal per database: a second open is refused while the first
    /// is alive (after waiting for it), and allowed once it is gone.
    #[test]
    fn a_second_open_of_the_same_database_is_refused() {
        let d = dir("lock");
        let db = d.join("t.db");
        let (j, _) = Journal::open(&db, 0).unwrap();
        let since = Instant::now();
        let wait = Duration::from_millis(200);
        let second = Journal::open_waiting(&db, 0, wait);
        assert!(matches!(second, Err(JournalError::InUse(_))));
        assert!(since.elapsed() >= wait);
        drop(j);
        assert!(Journal::open(&db, 0).is_ok());
    }

    /// A lock released while the open waits (as when a forked child that
    /// shared it execs) is taken: the open succeeds instead of answering
    /// `InUse`.
    #[test]
    fn an_open_waits_for_a_lock_released_meanwhile() {
        let d = dir("lock-wait");
        let db = d.join("t.db");
        let lock = File::create(d.join("t.db-audit.lock")).unwrap();
        lock.lock().unwrap();
        let holder = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            drop(lock);
        });
        assert!(Journal::open(&db, 0).is_ok());
        holder.join().unwrap();
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
        /// Whatever a crash or a bad disk leaves in a journal file (cut
        /// anywhere, bytes overwritten, garbage appended), replay never
        /// panics and returns a prefix of the rows written, in order.
        #[test]
        fn replay_of_a_damaged_file_is_a_prefix_of_what_was_written(
            rows in proptest::collection::vec((0i64..1 << 40, "[a-z0-9._-]{1,64}"), 1..20),
            cut in proptest::prelude::any::<proptest::sample::Index>(),
            flips in proptest::collection::vec(
                (proptest::prelude::any::<proptest::sample::Index>(), 1u8..=255), 0..3),
            tail in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..40),
        ) {
            let d = dir("prop");
            let path = d.join("t.db-audit-7");
            let written: Vec<AuditRow> = rows.iter().map(|(ts, u)| row(u, *ts)).collect();
            let mut bytes = Vec::new();
            bytes.extend_from_slice(MAGIC);
            bytes.extend_from_slice(&7u64.to_le_bytes());
            for r in &written {
                bytes.extend_from_slice(&encode(r).unwrap());
            }
            bytes.truncate(HEADER as usize + cut.index(bytes.len() - HEADER as usize + 1));
            if !bytes.is_empty() {
                for (at, x) in &flips {
                    let i = at.index(bytes.len());
                    bytes[i] ^= x;
                }
            }
            bytes.extend_from_slice(&tail);
            std::fs::write(&path, &bytes).unwrap();
            let got = read_rows(&path, 7).unwrap();
            proptest::prop_assert!(got.len() <= written.len());
            for (g, w) in got.iter().zip(&written) {
                proptest::prop_assert_eq!(key(g), key(w));
            }
            }
    }

    /// Names and outcomes too long for the record format are refused, not
    /// truncated.
    #[test]
    fn oversized_rows_are_refused() {
        let d = dir("long");
        let (j, _) = Journal::open(&d.join("t.db"), 0).unwrap();
        let mut r = row("x", 1);
        r.user = "u".repeat(2000);
        assert!(j.append(r).is_err());
        assert_eq!(j.pending().unwrap(), 0);
    }
}
