//! Users: their keys and template (1:1).

use rusqlite::{params, OptionalExtension, Transaction};

use super::SqliteStore;
use crate::server::store::rows::*;
use crate::server::store::{now_millis, now_secs, StoreError};

impl SqliteStore {
    /// Registers a new user's keys under a new id (`decider`: the epoch and
    /// statement of keys the decider derived, `None` for keys the user
    /// holds).
    /// Refuses an existing user, and a new one when `max_users` are
    /// registered.
    pub fn put_keys(
        &self,
        user: &str,
        params_id: &str,
        public_key: &[u8],
        relin_key: Option<&[u8]>,
        decider: Option<DeciderKey<'_>>,
        max_users: usize,
    ) -> Result<(), StoreError> {
        self.write(|tx| {
            if user_exists(tx, user)? {
                return Err(StoreError::UserExists);
            }
            let users: i64 = tx.query_row("SELECT count(*) FROM users", [], |r| r.get(0))?;
            if users as u64 >= max_users as u64 {
                return Err(StoreError::TooManyUsers { max: max_users });
            }
            let id: i64 = tx.query_row(
                "UPDATE user_ids SET next = next + 1 RETURNING next - 1",
                [],
                |r| r.get(0),
            )?;
            let ms = now_millis();
            let (epoch, statement) = (decider.map(|d| d.epoch), decider.map(|d| d.statement));
            tx.execute(
                "INSERT INTO users (id, user, params_id, public_key, relin_key, created, created_ms,
                                    key_epoch, key_statement)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                params![id, user, params_id, public_key, relin_key, ms / 1000, ms, epoch, statement],
            )?;
            Ok(())
        })
    }

    /// Moves a user to the decider's keys `key`, in one
    /// transaction: the new keys replace the old, and the template (under
    /// the old key) is removed. The user keeps their id.
    pub fn rotate_keys(
        &self,
        user: &str,
        public_key: &[u8],
        relin_key: Option<&[u8]>,
        key: DeciderKey<'_>,
    ) -> Result<(), StoreError> {
        self.write(|tx| {
            let changed = tx.execute(
                "UPDATE users SET public_key = ?2, relin_key = ?3, key_epoch = ?4, key_statement = ?5,
                                  rev = rev + 1
                 WHERE user = ?1",
                params![user, public_key, relin_key, key.epoch, key.statement],
            )?;
            if changed == 0 {
                return Err(StoreError::UnknownUser);
            }
            tx.execute("DELETE FROM templates WHERE user = ?1", [user])?;
            Ok(())
        })
    }

    /// Stores (or replaces) a user's template ciphertext.
    pub fn put_template(
        &self,
        user: &str,
        ciphertext: &[u8],
        count: u32,
        checked: bool,
    ) -> Result<(), StoreError> {
        self.write(|tx| {
            if !user_exists(tx, user)? {
                return Err(StoreError::UnknownUser);
            }
            tx.execute(
                "INSERT INTO templates (user, ciphertext, count, updated, checked)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT(user) DO UPDATE SET
                   ciphertext = excluded.ciphertext, count = excluded.count,
                   updated = excluded.updated, checked = excluded.checked",
                params![user, ciphertext, count, now_secs(), checked],
            )?;
            tx.execute("UPDATE users SET rev = rev + 1 WHERE user = ?1", [user])?;
            Ok(())
        })
    }

    /// A user's id and revision (bumped by every write to its keys or
    /// template).
    pub fn user_rev(&self, user: &str) -> Result<Option<(i64, i64)>, StoreError> {
        self.with(|c| {
            Ok(
                c.query_row("SELECT id, rev FROM users WHERE user = ?1", [user], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .optional()?,
            )
        })
    }

    /// A user's keys and template.
    pub fn load_user(&self, user: &str) -> Result<Option<UserRecord>, StoreError> {
        self.with(|c| {
            let tx = c.transaction()?;
            let rec = tx
                .query_row(
                    "SELECT u.params_id, u.public_key, u.relin_key, t.ciphertext, t.count, u.id,
                            u.key_epoch, u.key_statement, t.checked, u.rev
                     FROM users u LEFT JOIN templates t ON t.user = u.user WHERE u.user = ?1",
                    [user],
                    |r| {
                        let ct: Option<Vec<u8>> = r.get(3)?;
                        let count: Option<u32> = r.get(4)?;
                        Ok(UserRecord {
                            id: r.get(5)?,
                            rev: r.get(9)?,
                            params_id: r.get(0)?,
                            public_key: r.get(1)?,
                            relin_key: r.get(2)?,
                            template: ct.zip(count),
                            key_epoch: r.get(6)?,
                            key_statement: r.get(7)?,
                            template_checked: r.get::<_, Option<bool>>(8)?.unwrap_or(false),
                        })
                    },
                )
                .optional()?;
            tx.finish()?;
            Ok(rec)
        })
    }

    /// Metadata of a user (sizes and counts, no bytes). `verifications`
    /// counts the committed rows of the user's id and its rows still in the
    /// journal, without flushing it (no fsync on a read).
    pub fn user_info(&self, user: &str) -> Result<Option<UserInfo>, StoreError> {
        self.with(|c| {
            let tx = c.transaction()?;
            let info = tx
                .query_row(
                    "SELECT u.params_id, u.created, length(u.public_key), length(u.relin_key),
                            t.count, length(t.ciphertext), t.updated,
                            (SELECT count(*) FROM audit a WHERE a.user_id = u.id), u.id, u.key_epoch
                     FROM users u LEFT JOIN templates t ON t.user = u.user WHERE u.user = ?1",
                    [user],
                    |r| {
                        let info = UserInfo {
                            user: user.to_string(),
                            params_id: r.get(0)?,
                            created: r.get(1)?,
                            public_key_bytes: r.get::<_, i64>(2)? as usize,
                            relin_key_bytes: r.get::<_, Option<i64>>(3)?.map(|v| v as usize),
                            template_count: r.get(4)?,
                            template_bytes: r.get::<_, Option<i64>>(5)?.map(|v| v as usize),
                            template_updated: r.get(6)?,
                            verifications: r.get(7)?,
                            key_epoch: r.get(9)?,
                        };
                        Ok((info, r.get::<_, i64>(8)?))
                    },
                )
                .optional()?;
            tx.finish()?;
            // Counted while the connection is held: a flush moves rows from
            // pending to committed under it, so none is counted twice.
            info.map(|(mut info, id)| {
                info.verifications += self.journaled_rows_of(id)? as i64;
                Ok(info)
            })
            .transpose()
        })
    }

    /// Removes a user's keys and template in one transaction, which also
    /// records the user's id in `deleted_users`, then its audit rows
    /// (`DELETE_CHUNK` per transaction, the store free between them: the
    /// rows belong to an id no user has any more, so no reader sees them
    /// meanwhile; a server stopped midway finishes when it starts again).
    /// Rows still journaled are dropped when flushed. Returns whether the
    /// user existed.
    pub fn delete_user(&self, user: &str) -> Result<bool, StoreError> {
        let id = self.write_and_scrub(|tx| {
            let id: Option<i64> = tx
                .query_row("SELECT id FROM users WHERE user = ?1", [user], |r| r.get(0))
                .optional()?;
            if id.is_some() {
                tx.execute("DELETE FROM templates WHERE user = ?1", [user])?;
                tx.execute("DELETE FROM users WHERE user = ?1", [user])?;
                tx.execute("INSERT INTO deleted_users (id) VALUES (?1)", [id])?;
            }
            Ok(id)
        })?;
        if id.is_none() {
            return Ok(false);
        }
        self.remove_audit_of_deleted()?;
        Ok(true)
    }
}

/// Whether `user` has keys registered (read inside the write that depends
/// on it, so no other writer comes between).
fn user_exists(tx: &Transaction<'_>, user: &str) -> Result<bool, StoreError> {
    Ok(tx.query_row(
        "SELECT EXISTS(SELECT 1 FROM users WHERE user = ?1)",
        [user],
        |r| r.get(0),
    )?)
}
