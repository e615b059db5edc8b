//! 1:N gallery ciphertexts and login mode's gallery keys.

use futures_util::{pin_mut, TryStreamExt};

use super::{pg, PgStore};
use crate::server::store::{now_millis, now_secs, GalleryKeyRow, GalleryRowRef, StoreError};

/// A row selected as `gallery, epoch, keys, statement`.
fn key_row(r: &tokio_postgres::Row) -> GalleryKeyRow {
    GalleryKeyRow {
        gallery: r.get(0),
        epoch: r.get::<_, i64>(1) as u32,
        keys: r.get(2),
        statement: r.get(3),
    }
}

impl PgStore {
    /// See [`crate::server::store::Store::insert_gallery_template`].
    pub fn insert_gallery_template(
        &self,
        gallery: &str,
        seq: i64,
        ciphertext: &[u8],
        count: u32,
    ) -> Result<(), StoreError> {
        self.run(async {
            let c = self.client().await?;
            c.execute(
                "INSERT INTO gallery_templates (gallery, seq, ciphertext, count, created)
                 VALUES ($1, $2, $3, $4, $5)",
                &[&gallery, &seq, &ciphertext, &(count as i64), &now_secs()],
            )
            .await
            .map_err(pg)?;
            Ok(())
        })
    }

    /// See [`crate::server::store::Store::erase_gallery_template`].
    pub fn erase_gallery_template(
        &self,
        gallery: &str,
        seq: i64,
        ciphertext: &[u8],
        erased: u64,
    ) -> Result<bool, StoreError> {
        self.run(async {
            let c = self.client().await?;
            let n = c
                .execute(
                    "UPDATE gallery_templates SET ciphertext = $3, erased = $4, rev = nextval('gallery_revs')
                     WHERE gallery = $1 AND seq = $2",
                    &[&gallery, &seq, &ciphertext, &(erased as i64)],
                )
                .await
                .map_err(pg)?;
            Ok(n == 1)
        })
    }

    /// See [`crate::server::store::Store::delete_gallery`]: under the
    /// gallery's lock, leaving a tombstone at the next gallery revision
    /// (replicas holding the gallery forget it, and a login-mode gallery's
    /// key, when they next catch up: `crate::server::mirror`).
    pub fn delete_gallery(&self, gallery: &str) -> Result<bool, StoreError> {
        self.run(async {
            let mut c = self.client().await?;
            let tx = c.transaction().await.map_err(pg)?;
            tx.execute(super::shards::GALLERY_LOCK, &[&gallery])
                .await
                .map_err(pg)?;
            let n = tx
                .execute(
                    "DELETE FROM gallery_templates WHERE gallery = $1",
                    &[&gallery],
                )
                .await
                .map_err(pg)?;
            let k = tx
                .execute("DELETE FROM gallery_keys WHERE gallery = $1", &[&gallery])
                .await
                .map_err(pg)?;
            if n + k > 0 {
                tx.execute(
                    "INSERT INTO gallery_deletions (gallery, rev) VALUES ($1, nextval('gallery_revs'))",
                    &[&gallery],
                )
                .await
                .map_err(pg)?;
            }
            tx.commit().await.map_err(pg)?;
            Ok(n + k > 0)
        })
    }

    /// Gallery `gallery`'s key (login mode), if it has one.
    pub fn gallery_key(&self, gallery: &str) -> Result<Option<GalleryKeyRow>, StoreError> {
        self.run(async {
            let c = self.client().await?;
            let row = c
                .query_opt(
                    "SELECT gallery, epoch, keys, statement FROM gallery_keys WHERE gallery = $1",
                    &[&gallery],
                )
                .await
                .map_err(pg)?;
            Ok(row.as_ref().map(key_row))
        })
    }

    /// Every gallery's name: those with rows and those with a key only.
    pub fn gallery_names(&self) -> Result<Vec<String>, StoreError> {
        self.run(async {
            let c = self.client().await?;
            let rows = c
                .query(
                    "SELECT gallery FROM gallery_counts UNION SELECT gallery FROM gallery_keys
                     ORDER BY 1",
                    &[],
                )
                .await
                .map_err(pg)?;
            Ok(rows.iter().map(|r| r.get(0)).collect())
        })
    }

    /// See [`crate::server::store::Store::insert_gallery_key`].
    pub fn insert_gallery_key(&self, row: &GalleryKeyRow) -> Result<bool, StoreError> {
        self.run(async {
            let c = self.client().await?;
            let n = c
                .execute(
                    "INSERT INTO gallery_keys (gallery, epoch, keys, statement, created_ms)
                     VALUES ($1, $2, $3, $4, $5) ON CONFLICT (gallery) DO NOTHING",
                    &[
                        &row.gallery,
                        &(row.epoch as i64),
                        &row.keys,
                        &row.statement,
                        &now_millis(),
                    ],
                )
                .await
                .map_err(pg)?;
            Ok(n == 1)
        })
    }

    /// See [`crate::server::store::Store::gallery_keys`].
    pub fn gallery_keys(&self) -> Result<Vec<GalleryKeyRow>, StoreError> {
        self.run(async {
            let c = self.client().await?;
            let rows = c
                .query(
                    "SELECT gallery, epoch, keys, statement FROM gallery_keys ORDER BY gallery",
                    &[],
                )
                .await
                .map_err(pg)?;
            Ok(rows.iter().map(key_row).collect())
        })
    }

    /// See [`crate::server::store::Store::for_each_gallery_row`]: the rows
    /// stream from the server, each passed to `f` borrowed from the row
    /// read and dropped after.
    pub fn for_each_gallery_row<E>(
        &self,
        mut f: impl FnMut(GalleryRowRef<'_>) -> Result<(), E>,
    ) -> Result<Result<(), E>, StoreError> {
        self.stream_gallery_rows(
            "SELECT gallery, seq, ciphertext, count, erased, rev
             FROM gallery_templates ORDER BY gallery, seq",
            &[],
            |row, _| f(row),
        )
    }

    /// The rows `sql` selects (`gallery, seq, ciphertext, count, erased,
    /// rev`, with `params` as `$1, $2, ...`), streamed to `f` with their
    /// revision. A gallery of gigabytes takes longer than one call's
    /// timeout to read: the stream is bounded per row instead.
    pub(super) fn stream_gallery_rows<E>(
        &self,
        sql: &str,
        params: &[i64],
        mut f: impl FnMut(GalleryRowRef<'_>, i64) -> Result<(), E>,
    ) -> Result<Result<(), E>, StoreError> {
        self.run_unbounded(async {
            let c = self.client().await?;
            let rows = c.query_raw(sql, params.iter()).await.map_err(pg)?;
            pin_mut!(rows);
            while let Some(r) = super::within_call_timeout(rows.try_next())
                .await?
                .map_err(pg)?
            {
                let row = GalleryRowRef {
                    gallery: r.try_get(0).map_err(pg)?,
                    seq: r.try_get(1).map_err(pg)?,
                    ciphertext: r.try_get(2).map_err(pg)?,
                    count: r.try_get::<_, i64>(3).map_err(pg)? as u32,
                    erased: r.try_get::<_, i64>(4).map_err(pg)? as u64,
                };
                if let Err(e) = f(row, r.try_get(5).map_err(pg)?) {
                    return Ok(Err(e));
                }
            }
            Ok(Ok(()))
        })
    }
}
