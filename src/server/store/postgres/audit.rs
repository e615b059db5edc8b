//! The audit log: rows committed as they are recorded (each its own
//! transaction, so a row acknowledged is durable with nothing journaled
//! beside the process), removed in chunks past their retention and when
//! their user is deleted.

use super::{pg, PgStore};
use crate::server::store::{AuditRow, StoreError};

/// Rows removed per statement when pruning or deleting a user's rows.
const DELETE_CHUNK: i64 = 10_000;

impl PgStore {
    /// Commits `row` under the user with id `user_id`, if that user still
    /// exists (a row of a user deleted meanwhile is dropped).
    pub fn insert_audit(&self, row: AuditRow, user_id: i64) -> Result<(), StoreError> {
        self.run(async {
            let c = self.client().await?;
            let st = c
                .prepare_cached(
                    "INSERT INTO audit (user_id, user_name, ts, outcome, duration_us)
                     SELECT id, name, $3, $4, $5 FROM users WHERE id = $1 AND name = $2",
                )
                .await
                .map_err(pg)?;
            c.execute(
                &st,
                &[
                    &user_id,
                    &row.user,
                    &row.ts,
                    &row.outcome.as_ref(),
                    &(row.duration_us as i64),
                ],
            )
            .await
            .map_err(pg)?;
            Ok(())
        })
    }

    /// See [`crate::server::store::Store::prune_audit`].
    pub fn prune_audit(&self, before: i64) -> Result<usize, StoreError> {
        self.delete_chunked(
            "DELETE FROM audit WHERE id IN
             (SELECT id FROM audit WHERE ts < $1 ORDER BY ts LIMIT $2)",
            before,
        )
    }

    /// See [`crate::server::store::Store::remove_audit_of_deleted`].
    pub fn remove_audit_of_deleted(&self) -> Result<usize, StoreError> {
        let ids: Vec<i64> = self.run(async {
            let c = self.client().await?;
            let rows = c
                .query("SELECT id FROM deleted_users", &[])
                .await
                .map_err(pg)?;
            Ok(rows.iter().map(|r| r.get(0)).collect())
        })?;
        let mut total = 0;
        for id in ids {
            total += self.delete_chunked(
                "DELETE FROM audit WHERE id IN
                 (SELECT id FROM audit WHERE user_id = $1 LIMIT $2)",
                id,
            )?;
            self.run(async {
                let c = self.client().await?;
                c.execute("DELETE FROM deleted_users WHERE id = $1", &[&id])
                    .await
                    .map_err(pg)?;
                Ok(())
            })?;
        }
        Ok(total)
    }

    /// Runs `delete` (`$1` = `arg`, `$2` = the chunk) until it removes
    /// fewer than a chunk. Returns the rows removed.
    fn delete_chunked(&self, delete: &str, arg: i64) -> Result<usize, StoreError> {
        let mut total = 0;
        loop {
            let n = self.run(async {
                let c = self.client().await?;
                c.execute(delete, &[&arg, &DELETE_CHUNK]).await.map_err(pg)
            })?;
            total += n as usize;
            if (n as i64) < DELETE_CHUNK {
                return Ok(total);
            }
        }
    }
}
