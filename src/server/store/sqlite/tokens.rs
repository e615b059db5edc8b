//! One-time tokens (enrollment tickets, login challenges) by their SHA-256.

use rusqlite::{params, OptionalExtension};

use super::SqliteStore;
use crate::server::store::{NewToken, StoreError};

impl SqliteStore {
    /// See [`crate::server::store::Store::issue_token`].
    pub fn issue_token(&self, t: &NewToken<'_>) -> Result<bool, StoreError> {
        self.write(|tx| {
            tx.execute(
                "DELETE FROM one_time_tokens WHERE kind = ?1 AND expires_ms <= ?2",
                params![t.kind, t.now_ms],
            )?;
            // The user's newest `per_user - 1` stay; the new one makes
            // `per_user`.
            tx.execute(
                "DELETE FROM one_time_tokens WHERE digest IN
                 (SELECT digest FROM one_time_tokens WHERE kind = ?1 AND user = ?2
                  ORDER BY expires_ms DESC LIMIT -1 OFFSET ?3)",
                params![t.kind, t.user, t.per_user.max(1) as i64 - 1],
            )?;
            let live: i64 = tx.query_row(
                "SELECT count(*) FROM one_time_tokens WHERE kind = ?1",
                [t.kind],
                |r| r.get(0),
            )?;
            if live as u64 >= t.capacity as u64 {
                return Ok(false);
            }
            tx.execute(
                "INSERT INTO one_time_tokens (digest, kind, user, value, expires_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![&t.digest[..], t.kind, t.user, t.value, t.expires_ms],
            )?;
            Ok(true)
        })
    }

    /// See [`crate::server::store::Store::take_token`].
    pub fn take_token(
        &self,
        kind: &str,
        digest: &[u8; 32],
        user: &str,
        now_ms: i64,
    ) -> Result<Option<String>, StoreError> {
        self.write(|tx| {
            let row: Option<(String, String, i64)> = tx
                .query_row(
                    "DELETE FROM one_time_tokens WHERE digest = ?1 AND kind = ?2
                     RETURNING user, value, expires_ms",
                    params![&digest[..], kind],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                )
                .optional()?;
            Ok(row.and_then(|(u, v, exp)| (u == user && exp > now_ms).then_some(v)))
        })
    }

    /// See [`crate::server::store::Store::peek_token`].
    pub fn peek_token(
        &self,
        kind: &str,
        digest: &[u8; 32],
        user: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        self.with(|c| {
            Ok(c.query_row(
                "SELECT EXISTS(SELECT 1 FROM one_time_tokens
                 WHERE digest = ?1 AND kind = ?2 AND user = ?3 AND expires_ms > ?4)",
                params![&digest[..], kind, user, now_ms],
                |r| r.get(0),
            )?)
        })
    }
}
