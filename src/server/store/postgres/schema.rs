//! The PostgreSQL schema, one migration per version, applied at start under
//! an advisory lock (replicas starting together apply each step once).
//!
//! Version numbers are the SQLite store's ([`crate::server::store::SCHEMA_VERSION`]):
//! one number names one schema in both. A new database gets the current
//! schema in one step; a later change appends a step here and one to
//! the SQLite list, under the same version.

use super::{pg, PgStore};
use crate::server::store::{StoreError, SCHEMA_VERSION};

/// `pg_advisory_xact_lock` key of the migrations ("bm-schm").
const MIGRATION_LOCK: i64 = 0x0062_6d2d_7363_686d;

/// `(version, SQL)`: the schema after the step is `version`.
const MIGRATIONS: &[(i64, &str)] = &[
    (
        10,
        // Users by id (never reused: audit rows belong to it) and name; a
        // template per user; the audit log; ids of deleted users whose audit
        // rows are still being removed; 1:N gallery ciphertexts and login
        // mode's gallery keys; failed logins in a row and used verdicts; one-time
        // tokens (enrollment tickets, login challenges) by their SHA-256.
        // A user's `rev` is bumped by every write to its keys or template, so a
        // replica's cached copy can be checked.
        "CREATE SEQUENCE user_ids;
     CREATE TABLE users (
        id BIGINT PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        params_id TEXT NOT NULL,
        public_key BYTEA NOT NULL,
        relin_key BYTEA,
        created BIGINT NOT NULL,
        created_ms BIGINT NOT NULL,
        key_epoch BIGINT,
        key_statement TEXT,
        rev BIGINT NOT NULL DEFAULT 0
     );
     CREATE TABLE templates (
        user_id BIGINT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
        ciphertext BYTEA NOT NULL,
        count BIGINT NOT NULL,
        updated BIGINT NOT NULL,
        checked BOOLEAN NOT NULL
     );
     CREATE TABLE audit (
        id BIGSERIAL PRIMARY KEY,
        user_id BIGINT NOT NULL,
        user_name TEXT NOT NULL,
        ts BIGINT NOT NULL,
        outcome TEXT NOT NULL,
        duration_us BIGINT NOT NULL
     );
     CREATE INDEX audit_user_id ON audit(user_id);
     CREATE INDEX audit_ts ON audit(ts);
     CREATE TABLE deleted_users (id BIGINT PRIMARY KEY);
     CREATE TABLE gallery_templates (
        gallery TEXT NOT NULL,
        seq BIGINT NOT NULL,
        ciphertext BYTEA NOT NULL,
        count BIGINT NOT NULL,
        created BIGINT NOT NULL,
        erased BIGINT NOT NULL DEFAULT 0,
        PRIMARY KEY (gallery, seq)
     );
     CREATE TABLE gallery_keys (
        gallery TEXT PRIMARY KEY,
        epoch BIGINT NOT NULL,
        keys BYTEA NOT NULL,
        statement TEXT NOT NULL,
        created_ms BIGINT NOT NULL
     );
     CREATE TABLE login_failures (
        user_name TEXT PRIMARY KEY,
        count BIGINT NOT NULL,
        last_ms BIGINT NOT NULL
     );
     CREATE TABLE used_verdicts (
        nonce TEXT PRIMARY KEY,
        exp BIGINT NOT NULL
     );
     CREATE TABLE one_time_tokens (
        digest BYTEA PRIMARY KEY,
        kind TEXT NOT NULL,
        user_name TEXT NOT NULL,
        value TEXT NOT NULL,
        expires_ms BIGINT NOT NULL
     );
     CREATE INDEX one_time_tokens_user ON one_time_tokens(kind, user_name);",
    ),
    (
        11,
        // Sharded galleries: every write to a gallery row takes the next
        // gallery revision (holders catch up on what is past theirs), a
        // deleted gallery leaves a tombstone; the replicas' leases and the
        // shard map (`postgres::shards`); each gallery's counts, kept by a
        // trigger (an append reads them instead of summing its gallery).
        "CREATE SEQUENCE gallery_revs;
     ALTER TABLE gallery_templates ADD COLUMN rev BIGINT NOT NULL DEFAULT nextval('gallery_revs');
     CREATE INDEX gallery_templates_rev ON gallery_templates(gallery, rev);
     CREATE TABLE gallery_deletions (
        gallery TEXT NOT NULL,
        rev BIGINT NOT NULL,
        PRIMARY KEY (gallery, rev)
     );
     CREATE TABLE replicas (
        id TEXT PRIMARY KEY,
        public_key BYTEA NOT NULL,
        lease_until_ms BIGINT NOT NULL
     );
     CREATE TABLE shard_map (
        shard INT PRIMARY KEY,
        holder TEXT,
        taker TEXT
     );
     CREATE TABLE gallery_counts (
        gallery TEXT PRIMARY KEY,
        ciphertexts BIGINT NOT NULL,
        templates BIGINT NOT NULL,
        erased BIGINT NOT NULL
     );
     INSERT INTO gallery_counts
        SELECT gallery, count(*), sum(count), sum(bit_count(erased::bit(64)))
        FROM gallery_templates GROUP BY gallery;
     CREATE FUNCTION gallery_counts_follow() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN
        IF TG_OP IN ('UPDATE', 'DELETE') THEN
           UPDATE gallery_counts SET ciphertexts = ciphertexts - 1,
              templates = templates - OLD.count,
              erased = erased - bit_count(OLD.erased::bit(64))
           WHERE gallery = OLD.gallery;
           DELETE FROM gallery_counts WHERE gallery = OLD.gallery AND ciphertexts = 0;
        END IF;
        IF TG_OP IN ('INSERT', 'UPDATE') THEN
           INSERT INTO gallery_counts
              VALUES (NEW.gallery, 1, NEW.count, bit_count(NEW.erased::bit(64)))
           ON CONFLICT (gallery) DO UPDATE SET
              ciphertexts = gallery_counts.ciphertexts + 1,
              templates = gallery_counts.templates + EXCLUDED.templates,
              erased = gallery_counts.erased + EXCLUDED.erased;
        END IF;
        RETURN NULL;
     END $$;
     CREATE TRIGGER gallery_counts_follow
        AFTER INSERT OR UPDATE OR DELETE ON gallery_templates
        FOR EACH ROW EXECUTE FUNCTION gallery_counts_follow();",
    ),
];

impl PgStore {
    /// Creates the schema or brings it up to [`SCHEMA_VERSION`], in one
    /// transaction holding the migration lock: a replica that starts
    /// meanwhile waits, then finds the schema current.
    pub(super) fn migrate(&self) -> Result<(), StoreError> {
        self.run(async {
            let mut c = self.client().await?;
            let tx = c.transaction().await.map_err(pg)?;
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
                .await
                .map_err(pg)?;
            tx.batch_execute("CREATE TABLE IF NOT EXISTS schema_version (version BIGINT NOT NULL)")
                .await
                .map_err(pg)?;
            let found: Option<i64> = tx
                .query_opt("SELECT version FROM schema_version", &[])
                .await
                .map_err(pg)?
                .map(|r| r.get(0));
            let mut version = match found {
                Some(v) => v,
                None => {
                    tx.execute("INSERT INTO schema_version (version) VALUES (0)", &[])
                        .await
                        .map_err(pg)?;
                    0
                }
            };
            if version > SCHEMA_VERSION {
                return Err(StoreError::TooNew {
                    found: version,
                    supported: SCHEMA_VERSION,
                });
            }
            let from = version;
            for (to, sql) in MIGRATIONS.iter().filter(|(to, _)| *to > from) {
                tx.batch_execute(sql).await.map_err(pg)?;
                tx.execute("UPDATE schema_version SET version = $1", &[to])
                    .await
                    .map_err(pg)?;
                tracing::info!(from = version, to, "PostgreSQL schema migrated");
                version = *to;
            }
            tx.commit().await.map_err(pg)?;
            Ok(())
        })
    }

    /// The schema version of the database.
    pub fn schema_version(&self) -> Result<i64, StoreError> {
        self.run(async {
            let c = self.client().await?;
            let row = c
                .query_one("SELECT version FROM schema_version", &[])
                .await
                .map_err(pg)?;
            Ok(row.get(0))
        })
    }
}

#[test]
fn the_last_step_is_this_builds_schema() {
    assert_eq!(MIGRATIONS.last().map(|m| m.0), Some(SCHEMA_VERSION));
}
