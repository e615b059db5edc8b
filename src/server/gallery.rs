//! 1:N galleries in memory, loaded from the store at start-up and appended
//! to (store first, then memory) under one lock per server.
//!
//! A gallery ciphertext's row in the store is numbered by its position in
//! memory (`seq` = position), assigned under that lock, so the two never
//! drift apart and an erasure addresses the row of the ciphertext it
//! rewrote. Callers run each mutation as a task of its own (see
//! `api::state::to_completion`): a dropped request cannot stop one between
//! its store write and its memory update.

use std::collections::HashMap;
use std::sync::RwLock;

use crate::bfv::{Ciphertext, Params, PublicKey, SecretKey};
use crate::matching::{pack, Gallery};

use super::api::{ApiError, ErrorCode};
use super::store::{GalleryRow, StoreError};

/// Every gallery, by name.
pub struct Galleries {
    params: Params,
    dim: usize,
    map: RwLock<HashMap<String, Gallery>>,
    /// Serializes appends (the store write and the push).
    append_lock: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for Galleries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Galleries { .. }")
    }
}

fn poisoned() -> ApiError {
    ApiError::new(ErrorCode::Internal, "gallery lock poisoned")
}

impl Galleries {
    /// Galleries rebuilt from stored rows (in gallery, sequence order).
    pub fn load(params: &Params, dim: usize, rows: Vec<GalleryRow>) -> Result<Self, String> {
        let mut map: HashMap<String, Gallery> = HashMap::new();
        for row in rows {
            let ct = Ciphertext::from_bytes(params, &row.ciphertext)
                .map_err(|e| format!("gallery {} #{}: {e}", row.gallery, row.seq))?;
            let g = match map.entry(row.gallery.clone()) {
                std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
                std::collections::hash_map::Entry::Vacant(v) => {
                    v.insert(Gallery::new(params, dim).map_err(|e| e.to_string())?)
                }
            };
            g.restore(ct, row.count as usize, row.erased)
                .map_err(|e| format!("gallery {} #{}: {e}", row.gallery, row.seq))?;
        }
        Ok(Self {
            params: params.clone(),
            dim,
            map: RwLock::new(map),
            append_lock: tokio::sync::Mutex::new(()),
        })
    }

    /// `f(name, gallery)` for every gallery, in name order (read-locked).
    pub fn list<T>(&self, f: impl Fn(&str, &Gallery) -> T) -> Result<Vec<T>, ApiError> {
        let map = self.map.read().map_err(|_| poisoned())?;
        let mut names: Vec<&String> = map.keys().collect();
        names.sort();
        Ok(names.into_iter().map(|n| f(n, &map[n])).collect())
    }

    /// Number of galleries and of templates in all of them.
    pub fn stats(&self) -> (usize, usize) {
        self.map
            .read()
            .map(|m| (m.len(), m.values().map(Gallery::len).sum()))
            .unwrap_or((0, 0))
    }

    /// Appends a ciphertext of `count` templates: `write(seq)` stores it as
    /// row `seq` (its position in the gallery, on the blocking pool), then
    /// it joins the in-memory gallery at that position. Returns the index of
    /// its first template and the gallery's template count.
    pub async fn append<F>(
        &self,
        gallery: &str,
        ct: Ciphertext,
        count: u32,
        write: F,
    ) -> Result<(usize, usize), ApiError>
    where
        F: FnOnce(i64) -> Result<(), StoreError> + Send + 'static,
    {
        let _guard = self.append_lock.lock().await;
        // Validate against a scratch gallery first, so nothing is stored for
        // a ciphertext the gallery would refuse.
        Gallery::new(&self.params, self.dim)?.push(ct.clone(), count as usize)?;
        // Appends and erasures hold the lock: nothing moves the count
        // between here and the push.
        let seq = {
            let map = self.map.read().map_err(|_| poisoned())?;
            map.get(gallery).map_or(0, Gallery::ciphertexts) as i64
        };
        tokio::task::spawn_blocking(move || write(seq))
            .await
            .map_err(|_| poisoned())??;
        // The write lock waits for running identifications (which hold the
        // read lock on matching threads): not on an I/O thread's time.
        tokio::task::block_in_place(|| {
            let mut map = self.map.write().map_err(|_| poisoned())?;
            let g = match map.entry(gallery.to_string()) {
                std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
                std::collections::hash_map::Entry::Vacant(v) => {
                    v.insert(Gallery::new(&self.params, self.dim)?)
                }
            };
            debug_assert_eq!(g.ciphertexts() as i64, seq);
            let first = g.push(ct, count as usize)?;
            debug_assert_eq!(
                first % pack::templates_per_ciphertext(&self.params, self.dim),
                0
            );
            Ok((first, g.len()))
        })
    }

    /// Erases template `index` of a gallery (see [`Gallery::erase`]):
    /// `write(seq, ciphertext, erased)` stores the replacement ciphertext
    /// and its erased mask (on the blocking pool), then the in-memory
    /// gallery takes it. Returns the gallery's remaining template count.
    pub async fn erase<F>(
        &self,
        gallery: &str,
        index: usize,
        keys: (&SecretKey, &PublicKey),
        write: F,
    ) -> Result<usize, ApiError>
    where
        F: FnOnce(i64, Vec<u8>, u64) -> Result<bool, StoreError> + Send + 'static,
    {
        // Serialized with appends and other erasures: the erasure is
        // computed from the ciphertext it replaces.
        let _guard = self.append_lock.lock().await;
        // Decrypting and encrypting again: matching-thread work.
        let erasure = tokio::task::block_in_place(|| {
            self.with(gallery, |g| Ok(g.erase(index, keys.0, keys.1)?))
        })?;
        let (seq, bytes, mask) = (
            erasure.position() as i64,
            erasure.ciphertext().to_bytes(),
            erasure.erased_mask(),
        );
        let stored = tokio::task::spawn_blocking(move || write(seq, bytes, mask))
            .await
            .map_err(|_| poisoned())??;
        if !stored {
            return Err(ApiError::new(
                ErrorCode::Internal,
                "gallery ciphertext missing from the store",
            ));
        }
        tokio::task::block_in_place(|| {
            let mut map = self.map.write().map_err(|_| poisoned())?;
            let g = map.get_mut(gallery).ok_or_else(unknown_gallery)?;
            g.apply(erasure)?;
            Ok(g.len())
        })
    }

    /// Removes a whole gallery: `delete` removes it from the store (on the
    /// blocking pool), then from memory.
    pub async fn remove<F>(&self, gallery: &str, delete: F) -> Result<(), ApiError>
    where
        F: FnOnce() -> Result<bool, StoreError> + Send + 'static,
    {
        let _guard = self.append_lock.lock().await;
        self.with(gallery, |_| Ok(()))?;
        tokio::task::spawn_blocking(delete)
            .await
            .map_err(|_| poisoned())??;
        tokio::task::block_in_place(|| {
            self.map.write().map_err(|_| poisoned())?.remove(gallery);
            Ok(())
        })
    }

    /// Runs `f` on a gallery (read-locked).
    pub fn with<T>(
        &self,
        gallery: &str,
        f: impl FnOnce(&Gallery) -> Result<T, ApiError>,
    ) -> Result<T, ApiError> {
        let map = self.map.read().map_err(|_| poisoned())?;
        let g = map.get(gallery).ok_or_else(unknown_gallery)?;
        f(g)
    }
}

fn unknown_gallery() -> ApiError {
    ApiError::new(ErrorCode::UnknownGallery, "no such gallery")
}
