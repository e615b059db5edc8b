//! 1:N gallery ciphertexts (templates encrypted under the service key, or
//! in login mode under the gallery's key), and login mode's gallery keys.

use rusqlite::params;

use super::SqliteStore;
use crate::server::store::rows::*;
use crate::server::store::{now_millis, now_secs, StoreError};

impl SqliteStore {
    /// Stores a gallery ciphertext as row `seq` (its position in the
    /// gallery, assigned by the caller, who serializes the writes).
    pub fn insert_gallery_template(
        &self,
        gallery: &str,
        seq: i64,
        ciphertext: &[u8],
        count: u32,
    ) -> Result<(), StoreError> {
        self.write(|tx| {
            tx.execute(
                "INSERT INTO gallery_templates (gallery, seq, ciphertext, count, created)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![gallery, seq, ciphertext, count, now_secs()],
            )?;
            Ok(())
        })
    }

    /// Replaces gallery ciphertext `seq` with `ciphertext` (the same
    /// templates but the erased ones) and records its erased templates.
    /// Returns whether the row existed.
    pub fn erase_gallery_template(
        &self,
        gallery: &str,
        seq: i64,
        ciphertext: &[u8],
        erased: u64,
    ) -> Result<bool, StoreError> {
        self.write_and_scrub(|tx| {
            let n = tx.execute(
                "UPDATE gallery_templates SET ciphertext = ?3, erased = ?4
                 WHERE gallery = ?1 AND seq = ?2",
                params![gallery, seq, ciphertext, erased as i64],
            )?;
            Ok(n == 1)
        })
    }

    /// Removes every ciphertext of a gallery, and its key (login mode).
    /// Returns whether it had either.
    pub fn delete_gallery(&self, gallery: &str) -> Result<bool, StoreError> {
        self.write_and_scrub(|tx| {
            let n = tx.execute(
                "DELETE FROM gallery_templates WHERE gallery = ?1",
                [gallery],
            )?;
            let k = tx.execute("DELETE FROM gallery_keys WHERE gallery = ?1", [gallery])?;
            Ok(n + k > 0)
        })
    }

    /// Stores a new gallery's key. Returns false, writing nothing, when the
    /// gallery already has one.
    pub fn insert_gallery_key(&self, row: &GalleryKeyRow) -> Result<bool, StoreError> {
        self.write(|tx| {
            let n = tx.execute(
                "INSERT OR IGNORE INTO gallery_keys (gallery, epoch, keys, statement, created_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![
                    row.gallery,
                    row.epoch,
                    row.keys,
                    row.statement,
                    now_millis()
                ],
            )?;
            Ok(n == 1)
        })
    }

    /// Every gallery key, by gallery.
    pub fn gallery_keys(&self) -> Result<Vec<GalleryKeyRow>, StoreError> {
        let c = self.lock()?;
        let mut st =
            c.prepare("SELECT gallery, epoch, keys, statement FROM gallery_keys ORDER BY gallery")?;
        let rows = st
            .query_map([], |r| {
                Ok(GalleryKeyRow {
                    gallery: r.get(0)?,
                    epoch: r.get(1)?,
                    keys: r.get(2)?,
                    statement: r.get(3)?,
                })
            })?
            .collect::<Result<_, _>>()?;
        Ok(rows)
    }

    /// Every gallery ciphertext, by gallery and sequence number, passed to
    /// `f` one row at a time, borrowed from SQLite's row (a gallery of
    /// gigabytes is never in memory twice, and no row is copied but by
    /// `f`). Stops at the first error of `f`, which is returned inside.
    pub fn for_each_gallery_row<E>(
        &self,
        mut f: impl FnMut(GalleryRowRef<'_>) -> Result<(), E>,
    ) -> Result<Result<(), E>, StoreError> {
        let c = self.lock()?;
        let mut st = c.prepare(
            "SELECT gallery, seq, ciphertext, count, erased
             FROM gallery_templates ORDER BY gallery, seq",
        )?;
        let mut rows = st.query([])?;
        while let Some(r) = rows.next()? {
            let blob_err = |i, e| {
                rusqlite::Error::FromSqlConversionFailure(
                    i,
                    rusqlite::types::Type::Blob,
                    Box::new(e),
                )
            };
            let row = GalleryRowRef {
                gallery: r.get_ref(0)?.as_str().map_err(|e| blob_err(0, e))?,
                seq: r.get(1)?,
                ciphertext: r.get_ref(2)?.as_blob().map_err(|e| blob_err(2, e))?,
                count: r.get(3)?,
                erased: r.get::<_, i64>(4)? as u64,
            };
            if let Err(e) = f(row) {
                return Ok(Err(e));
            }
        }
        Ok(Ok(()))
    }
}
