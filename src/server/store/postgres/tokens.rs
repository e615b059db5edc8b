//! One-time tokens (enrollment tickets, login challenges) by their SHA-256,
//! shared by the replicas: a ticket issued through one is taken through
//! another, once.

use super::{pg, PgStore};
use crate::server::store::{NewToken, StoreError};

impl PgStore {
    /// See [`crate::server::store::Store::issue_token`].
    pub fn issue_token(&self, t: &NewToken<'_>) -> Result<bool, StoreError> {
        self.run(async {
            let mut c = self.client().await?;
            let tx = c.transaction().await.map_err(pg)?;
            tx.execute(
                "DELETE FROM one_time_tokens WHERE kind = $1 AND expires_ms <= $2",
                &[&t.kind, &t.now_ms],
            )
            .await
            .map_err(pg)?;
            tx.execute(
                "DELETE FROM one_time_tokens WHERE digest IN
                 (SELECT digest FROM one_time_tokens WHERE kind = $1 AND user_name = $2
                  ORDER BY expires_ms DESC OFFSET $3)",
                &[&t.kind, &t.user, &(t.per_user.max(1) as i64 - 1)],
            )
            .await
            .map_err(pg)?;
            let live: i64 = tx
                .query_one(
                    "SELECT count(*) FROM one_time_tokens WHERE kind = $1",
                    &[&t.kind],
                )
                .await
                .map_err(pg)?
                .get(0);
            if live as u64 >= t.capacity as u64 {
                tx.commit().await.map_err(pg)?;
                return Ok(false);
            }
            tx.execute(
                "INSERT INTO one_time_tokens (digest, kind, user_name, value, expires_ms)
                 VALUES ($1, $2, $3, $4, $5)",
                &[&&t.digest[..], &t.kind, &t.user, &t.value, &t.expires_ms],
            )
            .await
            .map_err(pg)?;
            tx.commit().await.map_err(pg)?;
            Ok(true)
        })
    }

    /// See [`crate::server::store::Store::take_token`]: one `DELETE …
    /// RETURNING`, so of two replicas taking one token at once only one
    /// gets it.
    pub fn take_token(
        &self,
        kind: &str,
        digest: &[u8; 32],
        user: &str,
        now_ms: i64,
    ) -> Result<Option<String>, StoreError> {
        self.run(async {
            let c = self.client().await?;
            let row = c
                .query_opt(
                    "DELETE FROM one_time_tokens WHERE digest = $1 AND kind = $2
                     RETURNING user_name, value, expires_ms",
                    &[&&digest[..], &kind],
                )
                .await
                .map_err(pg)?;
            Ok(row.and_then(|r| {
                let (u, v, exp): (String, String, i64) = (r.get(0), r.get(1), r.get(2));
                (u == user && exp > now_ms).then_some(v)
            }))
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
        self.run(async {
            let c = self.client().await?;
            let row = c
                .query_one(
                    "SELECT EXISTS(SELECT 1 FROM one_time_tokens
                     WHERE digest = $1 AND kind = $2 AND user_name = $3 AND expires_ms > $4)",
                    &[&&digest[..], &kind, &user, &now_ms],
                )
                .await
                .map_err(pg)?;
            Ok(row.get(0))
        })
    }
}
