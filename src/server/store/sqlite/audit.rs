//! The audit log of verifications: rows journaled on the request's thread
//! ([`journal`]), moved into the database in batches by a flusher thread,
//! and pruned past their retention.

pub mod journal;

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::Ordering;

use rusqlite::{params, Connection};

use super::{write_in, SqliteStore};
use crate::server::store::{AuditRow, StoreError};
use journal::Batch;

/// Audit rows removed per transaction when pruning, so the store is never
/// held long.
pub(super) const PRUNE_CHUNK: i64 = 10_000;

/// Audit rows removed per transaction when a user is deleted (a few
/// milliseconds of the store each, with `secure_delete`).
pub(super) const DELETE_CHUNK: i64 = 1_000;

/// The user ids of the rows journaled and not yet committed, in the
/// journal's order, and how many each user has: a flush commits a batch's
/// rows under the ids they were recorded for, and a user read counts a
/// user's journaled rows without flushing.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    ids: VecDeque<i64>,
    by_user: HashMap<i64, usize>,
}

impl Pending {
    fn push(&mut self, id: i64) {
        self.ids.push_back(id);
        *self.by_user.entry(id).or_default() += 1;
    }

    /// Forgets the oldest `n` rows (committed).
    fn pop(&mut self, n: usize) {
        for id in self.ids.drain(..n.min(self.ids.len())) {
            if let Some(c) = self.by_user.get_mut(&id) {
                *c -= 1;
                if *c == 0 {
                    self.by_user.remove(&id);
                }
            }
        }
    }

    /// Journaled rows of user `id`.
    pub(crate) fn count(&self, id: i64) -> usize {
        self.by_user.get(&id).copied().unwrap_or(0)
    }
}

impl SqliteStore {
    /// Appends `row` of user `user_id` to the journal, and its id to the
    /// pending ids (under their lock, so both keep one order).
    pub(crate) fn journal_audit(&self, row: AuditRow, user_id: i64) -> Result<(), StoreError> {
        let mut pending = self.pending()?;
        self.journal.append(row)?;
        pending.push(user_id);
        Ok(())
    }

    /// Journaled rows of user `id` not yet committed.
    pub(super) fn journaled_rows_of(&self, id: i64) -> Result<usize, StoreError> {
        Ok(self.pending()?.count(id))
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
            // The rows stay journaled: get them onto the disk now.
            if let Err(e) = self.journal.sync() {
                tracing::error!(error = %e, "fsync of the audit journal");
            }
        }
        flushed
    }

    fn flush_queued(&self) -> Result<usize, StoreError> {
        let mut queue = self.flushing.lock().map_err(|_| StoreError::Poisoned)?;
        // A batch left by a failed commit goes first; while it fails, no
        // new journal file is started.
        let mut rows = commit_queued(self, &mut queue)?;
        if let Some(batch) = self.journal.take()? {
            self.queued_rows
                .fetch_add(batch.rows.len(), Ordering::Relaxed);
            queue.push(batch);
        }
        rows += commit_queued(self, &mut queue)?;
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
        self.delete_audit_chunked(PRUNE_CHUNK, |c| {
            c.prepare_cached(
                "DELETE FROM audit WHERE id IN
                 (SELECT id FROM audit WHERE ts < ?1 ORDER BY ts LIMIT ?2)",
            )?
            .execute(params![before, PRUNE_CHUNK])
        })
    }

    /// Removes the audit rows of deleted users, [`DELETE_CHUNK`] per
    /// transaction, the store free between them, then forgets the users.
    /// Returns the rows removed.
    pub(crate) fn remove_audit_of_deleted(&self) -> Result<usize, StoreError> {
        let ids: Vec<i64> = self.with(|c| {
            let mut st = c.prepare("SELECT id FROM deleted_users")?;
            let ids = st.query_map([], |r| r.get(0))?.collect::<Result<_, _>>()?;
            Ok(ids)
        })?;
        let mut total = 0;
        for id in ids {
            total += self.delete_audit_chunked(DELETE_CHUNK, |c| {
                c.prepare_cached(
                    "DELETE FROM audit WHERE id IN
                     (SELECT id FROM audit WHERE user_id = ?1 LIMIT ?2)",
                )?
                .execute(params![id, DELETE_CHUNK])
            })?;
            self.with(|c| Ok(c.execute("DELETE FROM deleted_users WHERE id = ?1", [id])?))?;
        }
        Ok(total)
    }

    /// Runs `delete` (which removes at most `chunk` audit rows) in
    /// transactions of its own until it removes fewer, the store free
    /// between them; each chunk's pages are scrubbed from the WAL before the
    /// store is let go, so that no single checkpoint has to copy the whole
    /// deletion (one of 200,000 rows held the store for 300 ms). Returns the
    /// rows removed.
    pub(super) fn delete_audit_chunked(
        &self,
        chunk: i64,
        delete: impl Fn(&Connection) -> rusqlite::Result<usize>,
    ) -> Result<usize, StoreError> {
        let mut total = 0;
        loop {
            let n = self.with(|c| {
                let n = delete(c)?;
                if n > 0 {
                    Self::scrub(c);
                }
                Ok(n)
            })?;
            total += n;
            if (n as i64) < chunk {
                break;
            }
            // The store's mutex is not fair: locked again at once, it would
            // go back to this loop before a waiting request thread wakes
            // (a /healthz waited out all 200 chunks of a 200,000-row
            // deletion, 700 ms). A pause lets each waiter in between chunks.
            std::thread::sleep(std::time::Duration::from_micros(500));
        }
        Ok(total)
    }
}

/// Commits the queued batches in order, each then removed from the journal
/// and the queue; stops at the first failure. Returns the rows committed.
fn commit_queued(store: &SqliteStore, queue: &mut Vec<Batch>) -> Result<usize, StoreError> {
    let mut rows = 0;
    while let Some(batch) = queue.first() {
        // Appends only add ids at the back: the front ones are this batch's
        // until it is committed.
        let ids: Vec<i64> = store
            .pending()?
            .ids
            .iter()
            .take(batch.rows.len())
            .copied()
            .collect();
        {
            let mut c = store.lock()?;
            commit_audit(&mut c, batch, &ids)?;
            // Still holding the connection: a user read never counts a row
            // both committed and pending.
            store.pending()?.pop(batch.rows.len());
        }
        store.journal.remove(batch.generation);
        rows += batch.rows.len();
        store
            .queued_rows
            .fetch_sub(batch.rows.len(), Ordering::Relaxed);
        queue.remove(0);
    }
    Ok(rows)
}

/// Commits one journal batch and records its generation as applied. Row
/// `i` belongs to the user with id `ids[i]` (recorded with it, and kept only
/// if that user still exists); rows past `ids` (replayed after a crash, or
/// committed into a backup) belong to the user of their name registered at
/// or before the row's time, if any.
pub(super) fn commit_audit(
    c: &mut Connection,
    batch: &Batch,
    ids: &[i64],
) -> Result<(), StoreError> {
    write_in(c, |tx| {
        let mut by_id = tx.prepare_cached(
            "INSERT INTO audit (user_id, user, ts, outcome, duration_us)
             SELECT id, user, ?3, ?4, ?5 FROM users WHERE id = ?1 AND user = ?2",
        )?;
        let mut by_name = tx.prepare_cached(
            "INSERT INTO audit (user_id, user, ts, outcome, duration_us)
             SELECT id, user, ?2, ?3, ?4 FROM users WHERE user = ?1 AND created_ms <= ?2",
        )?;
        for (i, r) in batch.rows.iter().enumerate() {
            let d = r.duration_us as i64;
            match ids.get(i) {
                Some(id) => by_id.execute(params![id, r.user, r.ts, r.outcome, d])?,
                None => by_name.execute(params![r.user, r.ts, r.outcome, d])?,
            };
        }
        tx.execute(
            "UPDATE audit_journal SET applied = ?1",
            [batch.generation as i64],
        )?;
        Ok(())
    })
}
