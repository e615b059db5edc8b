//! Users: their keys and template (1:1).

use rusqlite::{params, OptionalExtension, Transaction};

use super::{now_secs, Store, StoreError};

/// A user's keys and template, as stored.
#[derive(Clone)]
pub struct UserRecord {
    /// Parameter id (hex) the keys were made for.
    pub params_id: String,
    /// Serialized public key.
    pub public_key: Vec<u8>,
    /// Serialized relinearization key, if one was registered.
    pub relin_key: Option<Vec<u8>>,
    /// Serialized template ciphertext and its sample count.
    pub template: Option<(Vec<u8>, u32)>,
}

impl std::fmt::Debug for UserRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Sizes only: no key or ciphertext bytes in logs.
        f.debug_struct("UserRecord")
            .field("params_id", &self.params_id)
            .field("public_key_len", &self.public_key.len())
            .field("relin_key_len", &self.relin_key.as_ref().map(Vec::len))
            .field("template_len", &self.template.as_ref().map(|t| t.0.len()))
            .finish()
    }
}

/// What `GET /v1/users/{user}` reports (no key or ciphertext bytes).
#[derive(Clone, Debug, serde::Serialize)]
pub struct UserInfo {
    pub user: String,
    pub params_id: String,
    pub created: i64,
    pub public_key_bytes: usize,
    pub relin_key_bytes: Option<usize>,
    pub template_count: Option<u32>,
    pub template_bytes: Option<usize>,
    pub template_updated: Option<i64>,
    pub verifications: i64,
}

impl Store {
    /// Registers a new user's keys. Refuses an existing user.
    pub fn put_keys(
        &self,
        user: &str,
        params_id: &str,
        public_key: &[u8],
        relin_key: Option<&[u8]>,
    ) -> Result<(), StoreError> {
        self.write(|tx| {
            if user_exists(tx, user)? {
                return Err(StoreError::UserExists);
            }
            tx.execute(
                "INSERT INTO users (user, params_id, public_key, relin_key, created)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![user, params_id, public_key, relin_key, now_secs()],
            )?;
            Ok(())
        })
    }

    /// Stores (or replaces) a user's template ciphertext.
    pub fn put_template(
        &self,
        user: &str,
        ciphertext: &[u8],
        count: u32,
    ) -> Result<(), StoreError> {
        self.write(|tx| {
            if !user_exists(tx, user)? {
                return Err(StoreError::UnknownUser);
            }
            tx.execute(
                "INSERT INTO templates (user, ciphertext, count, updated) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(user) DO UPDATE SET
                   ciphertext = excluded.ciphertext, count = excluded.count, updated = excluded.updated",
                params![user, ciphertext, count, now_secs()],
            )?;
            Ok(())
        })
    }

    /// A user's keys and template.
    pub fn load_user(&self, user: &str) -> Result<Option<UserRecord>, StoreError> {
        self.with(|c| {
            let tx = c.transaction()?;
            let rec = tx
                .query_row(
                    "SELECT u.params_id, u.public_key, u.relin_key, t.ciphertext, t.count
                     FROM users u LEFT JOIN templates t ON t.user = u.user WHERE u.user = ?1",
                    [user],
                    |r| {
                        let ct: Option<Vec<u8>> = r.get(3)?;
                        let count: Option<u32> = r.get(4)?;
                        Ok(UserRecord {
                            params_id: r.get(0)?,
                            public_key: r.get(1)?,
                            relin_key: r.get(2)?,
                            template: ct.zip(count),
                        })
                    },
                )
                .optional()?;
            tx.finish()?;
            Ok(rec)
        })
    }

    /// Metadata of a user (sizes and counts, no bytes). Flushes the audit
    /// journal first, so `verifications` counts every recorded row.
    pub fn user_info(&self, user: &str) -> Result<Option<UserInfo>, StoreError> {
        self.flush_audit()?;
        self.with(|c| {
            let tx = c.transaction()?;
            let info = tx
                .query_row(
                    "SELECT u.params_id, u.created, length(u.public_key), length(u.relin_key),
                            t.count, length(t.ciphertext), t.updated,
                            (SELECT count(*) FROM audit a WHERE a.user = u.user)
                     FROM users u LEFT JOIN templates t ON t.user = u.user WHERE u.user = ?1",
                    [user],
                    |r| {
                        Ok(UserInfo {
                            user: user.to_string(),
                            params_id: r.get(0)?,
                            created: r.get(1)?,
                            public_key_bytes: r.get::<_, i64>(2)? as usize,
                            relin_key_bytes: r.get::<_, Option<i64>>(3)?.map(|v| v as usize),
                            template_count: r.get(4)?,
                            template_bytes: r.get::<_, Option<i64>>(5)?.map(|v| v as usize),
                            template_updated: r.get(6)?,
                            verifications: r.get(7)?,
                        })
                    },
                )
                .optional()?;
            tx.finish()?;
            Ok(info)
        })
    }

    /// Removes a user's keys, template and audit rows (journaled ones
    /// included: the journal is flushed first). Returns whether the user
    /// existed.
    pub fn delete_user(&self, user: &str) -> Result<bool, StoreError> {
        self.flush_audit()?;
        self.write_and_scrub(|tx| {
            let n = tx.execute("DELETE FROM users WHERE user = ?1", [user])?;
            if n == 0 {
                return Err(StoreError::UnknownUser);
            }
            tx.execute("DELETE FROM templates WHERE user = ?1", [user])?;
            tx.execute("DELETE FROM audit WHERE user = ?1", [user])?;
            Ok(true)
        })
        .or_else(|e| match e {
            StoreError::UnknownUser => Ok(false),
            e => Err(e),
        })
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
