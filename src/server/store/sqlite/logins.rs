//! Login mode's state that must outlive a restart: each user's failed
//! logins in a row (so that a restart lifts no wait and no lockout), and
//! the verdicts used as credentials (so that none works twice).

use rusqlite::{params, OptionalExtension};

use super::SqliteStore;
use crate::server::store::{Failures, StoreError};

impl SqliteStore {
    /// Counts one more failure of `user` (the last at `last_ms`); returns
    /// its failures in a row now.
    pub fn add_failure(&self, user: &str, last_ms: i64) -> Result<u32, StoreError> {
        self.write(|tx| {
            Ok(tx.query_row(
                "INSERT INTO login_failures (user, count, last_ms) VALUES (?1, 1, ?2)
                 ON CONFLICT (user) DO UPDATE SET count = count + 1, last_ms = excluded.last_ms
                 RETURNING count",
                params![user, last_ms],
                |r| r.get(0),
            )?)
        })
    }

    /// `user`'s failures in a row, if any.
    pub fn failures_of(&self, user: &str) -> Result<Option<Failures>, StoreError> {
        self.with(|c| {
            Ok(c.query_row(
                "SELECT count, last_ms FROM login_failures WHERE user = ?1",
                [user],
                |r| {
                    Ok(Failures {
                        user: user.to_string(),
                        count: r.get(0)?,
                        last_ms: r.get(1)?,
                    })
                },
            )
            .optional()?)
        })
    }

    /// Forgets `user`'s failures (a success, a new enrollment, a deletion).
    pub fn clear_failures(&self, user: &str) -> Result<(), StoreError> {
        self.write(|tx| {
            tx.execute("DELETE FROM login_failures WHERE user = ?1", [user])?;
            Ok(())
        })
    }

    /// Every user's failures, for the throttle at start.
    pub fn load_failures(&self) -> Result<Vec<Failures>, StoreError> {
        self.with(|c| {
            let mut st = c.prepare("SELECT user, count, last_ms FROM login_failures")?;
            let rows = st.query_map([], |r| {
                Ok(Failures {
                    user: r.get(0)?,
                    count: r.get(1)?,
                    last_ms: r.get(2)?,
                })
            })?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })
    }

    /// Marks the verdict of challenge `nonce` (valid until `exp`, seconds)
    /// as used; false if it was already. Verdicts expired at `now` are
    /// dropped first.
    pub fn use_verdict(&self, nonce: &str, exp: u64, now: u64) -> Result<bool, StoreError> {
        self.write(|tx| {
            tx.execute("DELETE FROM used_verdicts WHERE exp <= ?1", [now as i64])?;
            let added = tx.execute(
                "INSERT OR IGNORE INTO used_verdicts (nonce, exp) VALUES (?1, ?2)",
                params![nonce, exp as i64],
            )?;
            Ok(added == 1)
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::server::store::Store;
    use crate::server::test_dir::TestDir;

    use super::Failures;

    #[test]
    fn failures_and_used_verdicts_survive_reopening() {
        let dir = TestDir::new("logins");
        let path = dir.join("t.db");
        {
            let s = Store::open(&path).unwrap();
            for count in 1..=3 {
                assert_eq!(s.add_failure("ann", 10 * count as i64).unwrap(), count);
            }
            s.add_failure("bob", 5).unwrap();
            s.clear_failures("bob").unwrap();
            assert!(s.use_verdict("n1", 100, 50).unwrap());
            assert!(!s.use_verdict("n1", 100, 60).unwrap());
        }
        let s = Store::open(&path).unwrap();
        assert_eq!(
            s.load_failures().unwrap(),
            [Failures {
                user: "ann".into(),
                count: 3,
                last_ms: 30
            }]
        );
        assert!(
            !s.use_verdict("n1", 100, 70).unwrap(),
            "used before the restart"
        );
        // Expired ones are dropped: the nonce is free again past its expiry.
        assert!(s.use_verdict("n1", 300, 100).unwrap());
    }
}
