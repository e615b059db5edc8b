//! Users: their keys and template (1:1).

use tokio_postgres::error::SqlState;

use super::{pg, PgStore};
use crate::server::store::{now_millis, now_secs, DeciderKey, StoreError, UserInfo, UserRecord};

/// `pg_advisory_xact_lock` key of registrations ("bm-users"): taken by
/// each, so the `--max-users` count and the insert are one step across
/// replicas.
const REGISTRATION_LOCK: i64 = 0x626d_2d75_7365_7273;

impl PgStore {
    /// See [`crate::server::store::Store::put_keys`].
    pub fn put_keys(
        &self,
        user: &str,
        params_id: &str,
        public_key: &[u8],
        relin_key: Option<&[u8]>,
        decider: Option<DeciderKey<'_>>,
        max_users: usize,
    ) -> Result<(), StoreError> {
        self.run(async {
            let mut c = self.client().await?;
            let tx = c.transaction().await.map_err(pg)?;
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&REGISTRATION_LOCK])
                .await
                .map_err(pg)?;
            let exists: bool = tx
                .query_one("SELECT EXISTS(SELECT 1 FROM users WHERE name = $1)", &[&user])
                .await
                .map_err(pg)?
                .get(0);
            if exists {
                return Err(StoreError::UserExists);
            }
            let users: i64 = tx
                .query_one("SELECT count(*) FROM users", &[])
                .await
                .map_err(pg)?
                .get(0);
            if users as u64 >= max_users as u64 {
                return Err(StoreError::TooManyUsers { max: max_users });
            }
            let ms = now_millis();
            let epoch = decider.map(|d| d.epoch as i64);
            let statement = decider.map(|d| d.statement);
            tx.execute(
                "INSERT INTO users (id, name, params_id, public_key, relin_key, created, created_ms,
                                    key_epoch, key_statement)
                 VALUES (nextval('user_ids'), $1, $2, $3, $4, $5, $6, $7, $8)",
                &[&user, &params_id, &public_key, &relin_key, &(ms / 1000), &ms, &epoch, &statement],
            )
            .await
            .map_err(|e| match e.code() {
                Some(c) if *c == SqlState::UNIQUE_VIOLATION => StoreError::UserExists,
                _ => pg(e),
            })?;
            tx.commit().await.map_err(pg)
        })
    }

    /// See [`crate::server::store::Store::rotate_keys`].
    pub fn rotate_keys(
        &self,
        user: &str,
        public_key: &[u8],
        relin_key: Option<&[u8]>,
        key: DeciderKey<'_>,
    ) -> Result<(), StoreError> {
        self.run(async {
            let mut c = self.client().await?;
            let tx = c.transaction().await.map_err(pg)?;
            let id = tx
                .query_opt(
                    "UPDATE users SET public_key = $2, relin_key = $3, key_epoch = $4,
                            key_statement = $5, rev = rev + 1
                     WHERE name = $1 RETURNING id",
                    &[
                        &user,
                        &public_key,
                        &relin_key,
                        &(key.epoch as i64),
                        &key.statement,
                    ],
                )
                .await
                .map_err(pg)?
                .map(|r| r.get::<_, i64>(0))
                .ok_or(StoreError::UnknownUser)?;
            tx.execute("DELETE FROM templates WHERE user_id = $1", &[&id])
                .await
                .map_err(pg)?;
            tx.commit().await.map_err(pg)
        })
    }

    /// See [`crate::server::store::Store::put_template`].
    pub fn put_template(
        &self,
        user: &str,
        ciphertext: &[u8],
        count: u32,
        checked: bool,
    ) -> Result<(), StoreError> {
        self.run(async {
            let mut c = self.client().await?;
            let tx = c.transaction().await.map_err(pg)?;
            let id: i64 = tx
                .query_opt(
                    "UPDATE users SET rev = rev + 1 WHERE name = $1 RETURNING id",
                    &[&user],
                )
                .await
                .map_err(pg)?
                .ok_or(StoreError::UnknownUser)?
                .get(0);
            tx.execute(
                "INSERT INTO templates (user_id, ciphertext, count, updated, checked)
                 VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (user_id) DO UPDATE SET
                   ciphertext = excluded.ciphertext, count = excluded.count,
                   updated = excluded.updated, checked = excluded.checked",
                &[&id, &ciphertext, &(count as i64), &now_secs(), &checked],
            )
            .await
            .map_err(pg)?;
            tx.commit().await.map_err(pg)
        })
    }

    /// See [`crate::server::store::Store::user_rev`].
    pub fn user_rev(&self, user: &str) -> Result<Option<(i64, i64)>, StoreError> {
        self.run(async {
            let c = self.client().await?;
            let st = c
                .prepare_cached("SELECT id, rev FROM users WHERE name = $1")
                .await
                .map_err(pg)?;
            let row = c.query_opt(&st, &[&user]).await.map_err(pg)?;
            Ok(row.map(|r| (r.get(0), r.get(1))))
        })
    }

    /// See [`crate::server::store::Store::load_user`].
    pub fn load_user(&self, user: &str) -> Result<Option<UserRecord>, StoreError> {
        self.run(async {
            let c = self.client().await?;
            let row = c
                .query_opt(
                    "SELECT u.id, u.params_id, u.public_key, u.relin_key, t.ciphertext, t.count,
                            u.key_epoch, u.key_statement, t.checked, u.rev
                     FROM users u LEFT JOIN templates t ON t.user_id = u.id WHERE u.name = $1",
                    &[&user],
                )
                .await
                .map_err(pg)?;
            Ok(row.map(|r| {
                let ct: Option<Vec<u8>> = r.get(4);
                let count: Option<i64> = r.get(5);
                UserRecord {
                    id: r.get(0),
                    rev: r.get(9),
                    params_id: r.get(1),
                    public_key: r.get(2),
                    relin_key: r.get(3),
                    template: ct.zip(count.map(|c| c as u32)),
                    key_epoch: r.get::<_, Option<i64>>(6).map(|e| e as u32),
                    key_statement: r.get(7),
                    template_checked: r.get::<_, Option<bool>>(8).unwrap_or(false),
                }
            }))
        })
    }

    /// See [`crate::server::store::Store::user_info`].
    pub fn user_info(&self, user: &str) -> Result<Option<UserInfo>, StoreError> {
        self.run(async {
            let c = self.client().await?;
            let row = c
                .query_opt(
                    "SELECT u.params_id, u.created, length(u.public_key), length(u.relin_key),
                            t.count, length(t.ciphertext), t.updated,
                            (SELECT count(*) FROM audit a WHERE a.user_id = u.id), u.key_epoch
                     FROM users u LEFT JOIN templates t ON t.user_id = u.id WHERE u.name = $1",
                    &[&user],
                )
                .await
                .map_err(pg)?;
            Ok(row.map(|r| UserInfo {
                user: user.to_string(),
                params_id: r.get(0),
                created: r.get(1),
                public_key_bytes: r.get::<_, i32>(2) as usize,
                relin_key_bytes: r.get::<_, Option<i32>>(3).map(|v| v as usize),
                template_count: r.get::<_, Option<i64>>(4).map(|v| v as u32),
                template_bytes: r.get::<_, Option<i32>>(5).map(|v| v as usize),
                template_updated: r.get(6),
                verifications: r.get(7),
                key_epoch: r.get::<_, Option<i64>>(8).map(|e| e as u32),
            }))
        })
    }

    /// See [`crate::server::store::Store::delete_user`]: the user, its
    /// template and a `deleted_users` row in one transaction, then its
    /// audit rows in chunks.
    pub fn delete_user(&self, user: &str) -> Result<bool, StoreError> {
        let deleted = self.run(async {
            let mut c = self.client().await?;
            let tx = c.transaction().await.map_err(pg)?;
            let id: Option<i64> = tx
                .query_opt("DELETE FROM users WHERE name = $1 RETURNING id", &[&user])
                .await
                .map_err(pg)?
                .map(|r| r.get(0));
            if let Some(id) = id {
                tx.execute("INSERT INTO deleted_users (id) VALUES ($1)", &[&id])
                    .await
                    .map_err(pg)?;
            }
            tx.commit().await.map_err(pg)?;
            Ok(id.is_some())
        })?;
        if deleted {
            self.remove_audit_of_deleted()?;
        }
        Ok(deleted)
    }
}
