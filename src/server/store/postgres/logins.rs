//! Login mode's state that must outlive a restart and be the same on every
//! replica: failed logins in a row, and the verdicts used as credentials.

use super::{pg, PgStore};
use crate::server::store::{Failures, StoreError};

impl PgStore {
    /// See [`crate::server::store::Store::add_failure`]: one statement, so
    /// failures counted by two replicas at once are both counted.
    pub fn add_failure(&self, user: &str, last_ms: i64) -> Result<u32, StoreError> {
        self.run(async {
            let c = self.client().await?;
            let row = c
                .query_one(
                    "INSERT INTO login_failures (user_name, count, last_ms) VALUES ($1, 1, $2)
                     ON CONFLICT (user_name) DO UPDATE SET
                       count = login_failures.count + 1, last_ms = excluded.last_ms
                     RETURNING count",
                    &[&user, &last_ms],
                )
                .await
                .map_err(pg)?;
            Ok(row.get::<_, i64>(0) as u32)
        })
    }

    /// See [`crate::server::store::Store::failures_of`].
    pub fn failures_of(&self, user: &str) -> Result<Option<Failures>, StoreError> {
        self.run(async {
            let c = self.client().await?;
            let row = c
                .query_opt(
                    "SELECT count, last_ms FROM login_failures WHERE user_name = $1",
                    &[&user],
                )
                .await
                .map_err(pg)?;
            Ok(row.map(|r| Failures {
                user: user.to_string(),
                count: r.get::<_, i64>(0) as u32,
                last_ms: r.get(1),
            }))
        })
    }

    /// See [`crate::server::store::Store::clear_failures`].
    pub fn clear_failures(&self, user: &str) -> Result<(), StoreError> {
        self.run(async {
            let c = self.client().await?;
            c.execute("DELETE FROM login_failures WHERE user_name = $1", &[&user])
                .await
                .map_err(pg)?;
            Ok(())
        })
    }

    /// See [`crate::server::store::Store::load_failures`].
    pub fn load_failures(&self) -> Result<Vec<Failures>, StoreError> {
        self.run(async {
            let c = self.client().await?;
            let rows = c
                .query("SELECT user_name, count, last_ms FROM login_failures", &[])
                .await
                .map_err(pg)?;
            Ok(rows
                .iter()
                .map(|r| Failures {
                    user: r.get(0),
                    count: r.get::<_, i64>(1) as u32,
                    last_ms: r.get(2),
                })
                .collect())
        })
    }

    /// See [`crate::server::store::Store::use_verdict`]: the insert is one
    /// statement, so two replicas offered one verdict at once let one of
    /// them have it.
    pub fn use_verdict(&self, nonce: &str, exp: u64, now: u64) -> Result<bool, StoreError> {
        self.run(async {
            let mut c = self.client().await?;
            let tx = c.transaction().await.map_err(pg)?;
            tx.execute(
                "DELETE FROM used_verdicts WHERE exp <= $1",
                &[&(now as i64)],
            )
            .await
            .map_err(pg)?;
            let added = tx
                .execute(
                    "INSERT INTO used_verdicts (nonce, exp) VALUES ($1, $2)
                     ON CONFLICT (nonce) DO NOTHING",
                    &[&nonce, &(exp as i64)],
                )
                .await
                .map_err(pg)?;
            tx.commit().await.map_err(pg)?;
            Ok(added == 1)
        })
    }
}
