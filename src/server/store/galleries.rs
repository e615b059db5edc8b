//! 1:N gallery ciphertexts (templates encrypted under the service key).

use rusqlite::params;

use super::{now_secs, Store, StoreError};

/// A gallery ciphertext as stored.
#[derive(Clone, Debug)]
pub struct GalleryRow {
    pub gallery: String,
    pub seq: i64,
    pub ciphertext: Vec<u8>,
    pub count: u32,
    /// Erased templates of the ciphertext (bit k: template k).
    pub erased: u64,
}

/// A gallery ciphertext as read from the store, borrowed from the row
/// being read.
#[derive(Clone, Copy, Debug)]
pub struct GalleryRowRef<'a> {
    pub gallery: &'a str,
    pub seq: i64,
    pub ciphertext: &'a [u8],
    pub count: u32,
    pub erased: u64,
}

impl Store {
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

    /// Removes every ciphertext of a gallery. Returns whether it had any.
    pub fn delete_gallery(&self, gallery: &str) -> Result<bool, StoreError> {
        self.write_and_scrub(|tx| {
            let n = tx.execute(
                "DELETE FROM gallery_templates WHERE gallery = ?1",
                [gallery],
            )?;
            Ok(n > 0)
        })
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

    /// Every gallery ciphertext, by gallery and sequence number.
    #[cfg(test)]
    pub fn gallery_rows(&self) -> Result<Vec<GalleryRow>, StoreError> {
        let mut out = Vec::new();
        self.for_each_gallery_row(|r| {
            out.push(GalleryRow {
                gallery: r.gallery.to_string(),
                seq: r.seq,
                ciphertext: r.ciphertext.to_vec(),
                count: r.count,
                erased: r.erased,
            });
            Ok::<_, ()>(())
        })?
        .expect("pushing cannot fail");
        Ok(out)
    }
}
