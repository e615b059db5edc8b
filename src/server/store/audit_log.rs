//! The audit log of verifications over either store: a row is durable once
//! [`AuditLog::record`] returns (journaled beside a SQLite file, or
//! committed to PostgreSQL), and a flusher thread moves journaled rows into
//! the database and prunes rows past their retention.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{now_millis, AuditRow, Store, StoreError, AUDIT_FLUSH_INTERVAL, AUDIT_PRUNE_INTERVAL};

/// The audit log: [`AuditLog::record`] appends a row to the store's journal
/// (one `write`, on the calling thread), and a flusher thread moves the
/// journaled rows into the database every [`AUDIT_FLUSH_INTERVAL`], in one
/// transaction per batch (see [`Store::flush_audit`]). A user read counts
/// the committed rows and the journaled ones (by their user's id) without
/// flushing, so it sees every recorded row.
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
                match flusher.remove_audit_of_deleted() {
                    Ok(0) => {}
                    Ok(rows) => tracing::info!(rows, "audit rows of deleted users removed"),
                    Err(e) => tracing::error!(error = %e, "audit rows of deleted users"),
                }
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

    /// Journals `row` of the user with id `user_id`; once this returns `Ok`
    /// the row survives a crash of the server. Returns how long the append
    /// took.
    pub fn record(&self, row: AuditRow, user_id: i64) -> Result<Duration, StoreError> {
        let start = Instant::now();
        self.store.record_audit(row, user_id)?;
        Ok(start.elapsed())
    }
}
