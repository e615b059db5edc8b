//! Sharded galleries (`serve --shards`): the replicas' leases, the shard
//! map, and the gallery writes and reads a replica makes when it holds only
//! some of a gallery's ciphertexts (docs/SCALE.md, "Sharded galleries").
//!
//! Ciphertext `seq` of every gallery belongs to shard `seq % shards`. Each
//! write to a gallery row takes the next value of the `gallery_revs`
//! sequence as the row's `rev`, under the gallery's advisory lock, so the
//! revisions of one gallery commit in order and a holder that has read
//! every row up to revision `r` has missed none below it. A deleted gallery
//! leaves a tombstone at its revision in `gallery_deletions`.

use super::{pg, PgStore};
use crate::server::store::{now_secs, GalleryRowRef, StoreError};

/// `pg_advisory_xact_lock` key of the shard map ("bm-shrd").
const SHARD_LOCK: i64 = 0x0062_6d2d_7368_7264;

/// A gallery's latest revision (`NULL`: it has no rows).
const GALLERY_REV: &str = "SELECT max(rev) FROM gallery_templates WHERE gallery = $1";

/// A replica in the shard map: its id (the URL it is reached at) and the
/// Ed25519 public key its shard results are signed with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Replica {
    pub id: String,
    pub public_key: Vec<u8>,
}

/// One row of the shard map: who holds the shard (a replica whose lease is
/// live, or nobody) and who is loading it to take it over.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardRow {
    pub shard: u32,
    pub holder: Option<String>,
    pub taker: Option<String>,
}

/// A gallery row with its revision (what a holder catches up on).
#[derive(Clone, Debug)]
pub struct RevRow {
    pub seq: i64,
    pub ciphertext: Vec<u8>,
    pub count: u32,
    pub erased: u64,
    pub rev: i64,
}

impl RevRow {
    /// A row selected as `seq, ciphertext, count, erased, rev`.
    fn of(r: &tokio_postgres::Row) -> Self {
        Self {
            seq: r.get(0),
            ciphertext: r.get(1),
            count: r.get::<_, i64>(2) as u32,
            erased: r.get::<_, i64>(3) as u64,
            rev: r.get(4),
        }
    }
}

/// What a gallery's rows are as of now, for a shard's holder, read in one
/// snapshot: the gallery's latest revision (`None`: it has no rows), its
/// latest deletion past `since` (its rows before it are gone) and at most
/// a page of the shard's rows written past `since` (or past that
/// deletion) and past a cursor revision, by revision.
#[derive(Debug, Default)]
pub struct ShardChanges {
    pub rev: Option<i64>,
    pub deleted_at: Option<i64>,
    pub rows: Vec<RevRow>,
}

/// Rows one [`PgStore::shard_changes`] call returns at most (64 KiB each at
/// auth4096: 64 MiB): a replica far behind catches up in calls that each
/// finish well within the store's call timeout, where one call for
/// everything (a gigabyte for a replica 500,000 templates behind) could
/// outlast it on every try.
pub const CHANGES_PAGE: usize = 1024;

/// A gallery's counts as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredCounts {
    pub gallery: String,
    pub ciphertexts: usize,
    pub templates: usize,
    pub erased: usize,
}

/// What an append did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Appended {
    /// Stored as row `seq`; the gallery has `templates` that can match.
    Row { seq: i64, templates: usize },
    /// Refused: the gallery would hold this many templates (erased ones
    /// included).
    TooManyTemplates(usize),
    /// Refused: a new gallery past this many.
    TooManyGalleries(usize),
}

/// Takes gallery `$1`'s lock until the transaction ends: its writes, and
/// so its revisions, commit one after another.
pub(super) const GALLERY_LOCK: &str =
    "SELECT pg_advisory_xact_lock(hashtextextended('gallery:' || $1, 0))";

impl PgStore {
    /// Makes sure the shard map has `shards` rows (creating them on a new
    /// database) and that this replica holds none of them yet (a restarted
    /// replica loads what it takes again). Fails, naming the number, when
    /// the cluster was made with another shard count.
    pub fn join_shards(&self, id: &str, shards: u32) -> Result<(), StoreError> {
        self.run(async {
            let mut c = self.client().await?;
            let tx = c.transaction().await.map_err(pg)?;
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SHARD_LOCK])
                .await
                .map_err(pg)?;
            let n: i64 = tx
                .query_one("SELECT count(*) FROM shard_map", &[])
                .await
                .map_err(pg)?
                .get(0);
            if n == 0 {
                tx.execute(
                    "INSERT INTO shard_map (shard) SELECT generate_series(0, $1 - 1)",
                    &[&(shards as i32)],
                )
                .await
                .map_err(pg)?;
            } else if n != shards as i64 {
                return Err(StoreError::Postgres(format!(
                    "the cluster's galleries have {n} shards; start every replica with --shards {n}"
                )));
            }
            tx.execute(
                "UPDATE shard_map SET holder = NULL WHERE holder = $1",
                &[&id],
            )
            .await
            .map_err(pg)?;
            tx.execute("UPDATE shard_map SET taker = NULL WHERE taker = $1", &[&id])
                .await
                .map_err(pg)?;
            tx.commit().await.map_err(pg)?;
            Ok(())
        })
    }

    /// Renews this replica's lease to `until_ms` and applies `plan` to the
    /// shard map in one transaction under the map's lock: `plan` sees the
    /// live replicas (lease past `now_ms`, this one included) and the map,
    /// and returns the rows to write. Returns the map as written.
    pub fn renew_and_plan(
        &self,
        me: &Replica,
        now_ms: i64,
        until_ms: i64,
        plan: impl FnOnce(&[String], &[ShardRow]) -> Vec<ShardRow>,
    ) -> Result<Vec<ShardRow>, StoreError> {
        self.run(async {
            let mut c = self.client().await?;
            let tx = c.transaction().await.map_err(pg)?;
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SHARD_LOCK])
                .await
                .map_err(pg)?;
            tx.execute(
                "INSERT INTO replicas (id, public_key, lease_until_ms) VALUES ($1, $2, $3)
                 ON CONFLICT (id) DO UPDATE SET public_key = $2, lease_until_ms = $3",
                &[&me.id, &me.public_key, &until_ms],
            )
            .await
            .map_err(pg)?;
            let live: Vec<String> = tx
                .query(
                    "SELECT id FROM replicas WHERE lease_until_ms > $1 ORDER BY id",
                    &[&now_ms],
                )
                .await
                .map_err(pg)?
                .iter()
                .map(|r| r.get(0))
                .collect();
            let map: Vec<ShardRow> = tx
                .query(
                    "SELECT shard, holder, taker FROM shard_map ORDER BY shard",
                    &[],
                )
                .await
                .map_err(pg)?
                .iter()
                .map(|r| ShardRow {
                    shard: r.get::<_, i32>(0) as u32,
                    holder: r.get(1),
                    taker: r.get(2),
                })
                .collect();
            let next = plan(&live, &map);
            for row in next.iter().filter(|r| !map.contains(r)) {
                tx.execute(
                    "UPDATE shard_map SET holder = $2, taker = $3 WHERE shard = $1",
                    &[&(row.shard as i32), &row.holder, &row.taker],
                )
                .await
                .map_err(pg)?;
            }
            tx.commit().await.map_err(pg)?;
            Ok(next)
        })
    }

    /// Makes `id` the holder of `shard` if it is still its taker. Returns
    /// whether it is.
    pub fn finish_taking(&self, id: &str, shard: u32) -> Result<bool, StoreError> {
        self.run(async {
            let c = self.client().await?;
            let n = c
                .execute(
                    "UPDATE shard_map SET holder = $1, taker = NULL WHERE shard = $2 AND taker = $1",
                    &[&id, &(shard as i32)],
                )
                .await
                .map_err(pg)?;
            Ok(n == 1)
        })
    }

    /// Ends this replica's lease (at a clean stop): its shards go to the
    /// others at their next renewal.
    pub fn leave_shards(&self, id: &str) -> Result<(), StoreError> {
        self.run(async {
            let c = self.client().await?;
            c.execute("DELETE FROM replicas WHERE id = $1", &[&id])
                .await
                .map_err(pg)?;
            c.execute(
                "UPDATE shard_map SET holder = NULL WHERE holder = $1",
                &[&id],
            )
            .await
            .map_err(pg)?;
            Ok(())
        })
    }

    /// Each shard with its holder when that holder's lease is live at
    /// `now_ms`, by shard.
    pub fn shard_holders(&self, now_ms: i64) -> Result<Vec<(u32, Option<Replica>)>, StoreError> {
        self.run(async {
            let c = self.client().await?;
            let rows = c
                .query(
                    "SELECT m.shard, r.id, r.public_key FROM shard_map m
                     LEFT JOIN replicas r ON r.id = m.holder AND r.lease_until_ms > $1
                     ORDER BY m.shard",
                    &[&now_ms],
                )
                .await
                .map_err(pg)?;
            Ok(rows
                .iter()
                .map(|r| {
                    let id: Option<String> = r.get(1);
                    (
                        r.get::<_, i32>(0) as u32,
                        id.map(|id| Replica {
                            id,
                            public_key: r.get(2),
                        }),
                    )
                })
                .collect())
        })
    }

    /// The replicas whose lease is live at `now_ms` (their keys sign shard
    /// results and merged identifications), by id.
    pub fn live_replicas(&self, now_ms: i64) -> Result<Vec<Replica>, StoreError> {
        self.run(async {
            let c = self.client().await?;
            let rows = c
                .query(
                    "SELECT id, public_key FROM replicas WHERE lease_until_ms > $1 ORDER BY id",
                    &[&now_ms],
                )
                .await
                .map_err(pg)?;
            Ok(rows
                .iter()
                .map(|r| Replica {
                    id: r.get(0),
                    public_key: r.get(1),
                })
                .collect())
        })
    }

    /// Every row of shard `shard` of `shards`, by gallery and sequence
    /// number, streamed to `f` with its revision.
    pub fn for_each_shard_row<E>(
        &self,
        shard: u32,
        shards: u32,
        f: impl FnMut(GalleryRowRef<'_>, i64) -> Result<(), E>,
    ) -> Result<Result<(), E>, StoreError> {
        self.stream_gallery_rows(
            "SELECT gallery, seq, ciphertext, count, erased, rev
             FROM gallery_templates WHERE seq % $1 = $2 ORDER BY gallery, seq",
            &[shards as i64, shard as i64],
            f,
        )
    }

    /// What changed in shard `shard` of `gallery` after revision `since`,
    /// the rows past revision `after` (at least `since`), at most `page` of
    /// them, by revision: one statement (so one snapshot, and one round
    /// trip on a prepared statement), whose first row carries the gallery's
    /// latest revision and deletion and whose rows the changed ones (none:
    /// a row of nulls). Fewer than `page` rows: nothing past them.
    pub fn shard_changes(
        &self,
        gallery: &str,
        shard: u32,
        shards: u32,
        since: i64,
        after: i64,
        page: usize,
    ) -> Result<ShardChanges, StoreError> {
        self.run(async {
            let c = self.client().await?;
            let st = c
                .prepare_cached(
                    "WITH latest AS (SELECT max(rev) AS rev FROM gallery_templates WHERE gallery = $1),
                          deleted AS (SELECT max(rev) AS rev FROM gallery_deletions
                                      WHERE gallery = $1 AND rev > $2)
                     SELECT latest.rev, deleted.rev, t.seq, t.ciphertext, t.count, t.erased, t.rev
                     FROM latest CROSS JOIN deleted
                     LEFT JOIN gallery_templates t
                       ON t.gallery = $1 AND t.rev > greatest(deleted.rev, $2, $5) AND t.seq % $3 = $4
                     ORDER BY t.rev
                     LIMIT $6",
                )
                .await
                .map_err(pg)?;
            let rows = c
                .query(
                    &st,
                    &[
                        &gallery,
                        &since,
                        &(shards as i64),
                        &(shard as i64),
                        &after,
                        &(page.max(1) as i64),
                    ],
                )
                .await
                .map_err(pg)?;
            let mut changes = ShardChanges::default();
            for (i, r) in rows.iter().enumerate() {
                if i == 0 {
                    changes.rev = r.try_get(0).map_err(pg)?;
                    changes.deleted_at = r.try_get(1).map_err(pg)?;
                }
                let Some(seq) = r.try_get::<_, Option<i64>>(2).map_err(pg)? else {
                    continue;
                };
                changes.rows.push(RevRow {
                    seq,
                    ciphertext: r.try_get(3).map_err(pg)?,
                    count: r.try_get::<_, i64>(4).map_err(pg)? as u32,
                    erased: r.try_get::<_, i64>(5).map_err(pg)? as u64,
                    rev: r.try_get(6).map_err(pg)?,
                });
            }
            Ok(changes)
        })
    }

    /// The latest revision of `gallery`'s rows, `None` when it has none (no
    /// such gallery).
    pub fn gallery_rev(&self, gallery: &str) -> Result<Option<i64>, StoreError> {
        self.run(async {
            let c = self.client().await?;
            Ok(c.query_one(GALLERY_REV, &[&gallery])
                .await
                .map_err(pg)?
                .get(0))
        })
    }

    /// Appends a ciphertext of `count` templates to `gallery` as its next
    /// row, unless the gallery would then hold more than `max_templates`
    /// templates (erased ones included) or a new gallery would pass
    /// `max_galleries` (nothing written then).
    pub fn append_gallery_row(
        &self,
        gallery: &str,
        ciphertext: &[u8],
        count: u32,
        max_templates: usize,
        max_galleries: usize,
    ) -> Result<Appended, StoreError> {
        self.run(async {
            let mut c = self.client().await?;
            let tx = c.transaction().await.map_err(pg)?;
            tx.execute(GALLERY_LOCK, &[&gallery]).await.map_err(pg)?;
            let seq: i64 = tx
                .query_one(
                    "SELECT coalesce(max(seq) + 1, 0) FROM gallery_templates WHERE gallery = $1",
                    &[&gallery],
                )
                .await
                .map_err(pg)?
                .get(0);
            let counts = tx
                .query_opt(
                    "SELECT templates, erased FROM gallery_counts WHERE gallery = $1",
                    &[&gallery],
                )
                .await
                .map_err(pg)?;
            let (all, erased) = counts.map_or((0, 0), |r| (r.get::<_, i64>(0), r.get::<_, i64>(1)));
            let all = all as usize + count as usize;
            let templates = all - erased as usize;
            // Its first row: a new gallery.
            if seq == 0 {
                let galleries: i64 = tx
                    .query_one("SELECT count(*) FROM gallery_counts", &[])
                    .await
                    .map_err(pg)?
                    .get(0);
                if galleries as usize >= max_galleries {
                    return Ok(Appended::TooManyGalleries(galleries as usize));
                }
            }
            if all > max_templates {
                return Ok(Appended::TooManyTemplates(all));
            }
            tx.execute(
                "INSERT INTO gallery_templates (gallery, seq, ciphertext, count, created)
                 VALUES ($1, $2, $3, $4, $5)",
                &[&gallery, &seq, &ciphertext, &(count as i64), &now_secs()],
            )
            .await
            .map_err(pg)?;
            tx.commit().await.map_err(pg)?;
            Ok(Appended::Row { seq, templates })
        })
    }

    /// Row `seq` of `gallery`, with its revision.
    pub fn gallery_row(&self, gallery: &str, seq: i64) -> Result<Option<RevRow>, StoreError> {
        self.run(async {
            let c = self.client().await?;
            Ok(c.query_opt(
                "SELECT seq, ciphertext, count, erased, rev FROM gallery_templates
                 WHERE gallery = $1 AND seq = $2",
                &[&gallery, &seq],
            )
            .await
            .map_err(pg)?
            .as_ref()
            .map(RevRow::of))
        })
    }

    /// Replaces row `seq` of `gallery` (an erasure) if it is still at
    /// revision `rev`. Returns whether it was.
    pub fn replace_gallery_row(
        &self,
        gallery: &str,
        seq: i64,
        rev: i64,
        ciphertext: &[u8],
        erased: u64,
    ) -> Result<bool, StoreError> {
        self.run(async {
            let mut c = self.client().await?;
            let tx = c.transaction().await.map_err(pg)?;
            tx.execute(GALLERY_LOCK, &[&gallery]).await.map_err(pg)?;
            let n = tx
                .execute(
                    "UPDATE gallery_templates
                     SET ciphertext = $4, erased = $5, rev = nextval('gallery_revs')
                     WHERE gallery = $1 AND seq = $2 AND rev = $3",
                    &[&gallery, &seq, &rev, &ciphertext, &(erased as i64)],
                )
                .await
                .map_err(pg)?;
            tx.commit().await.map_err(pg)?;
            Ok(n == 1)
        })
    }

    /// The stored counts of `gallery` (all galleries when `None`), by name.
    pub fn stored_counts(&self, gallery: Option<&str>) -> Result<Vec<StoredCounts>, StoreError> {
        self.run(async {
            let c = self.client().await?;
            let rows = c
                .query(
                    "SELECT gallery, ciphertexts, templates, erased FROM gallery_counts
                     WHERE $1::TEXT IS NULL OR gallery = $1 ORDER BY gallery",
                    &[&gallery],
                )
                .await
                .map_err(pg)?;
            Ok(rows
                .iter()
                .map(|r| {
                    let (all, erased): (i64, i64) = (r.get(2), r.get(3));
                    StoredCounts {
                        gallery: r.get(0),
                        ciphertexts: r.get::<_, i64>(1) as usize,
                        templates: (all - erased) as usize,
                        erased: erased as usize,
                    }
                })
                .collect())
        })
    }
}
