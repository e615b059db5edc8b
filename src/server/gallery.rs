//! 1:N galleries in memory, loaded from the store at start-up (row by row)
//! and appended to (store first, then memory), one mutation at a time.
//!
//! A gallery ciphertext's row in the store is numbered by its position in
//! memory (`seq` = position), assigned under the mutation lock, so the two
//! never drift apart and an erasure addresses the row of the ciphertext it
//! rewrote. Callers run each mutation as a task of its own (see
//! `api::state::to_completion`): a dropped request cannot stop one between
//! its store write and its memory update.
//!
//! Each gallery has a lock of its own, which a scan (an identification)
//! holds for reading; the map of galleries is locked only to find or add
//! one. The counts of every gallery are kept beside them, updated with each
//! mutation: `/metrics`, the listings and the quotas read those, never
//! waiting on a scan or on a mutation waiting for one.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, RwLock};

use rayon::prelude::*;

use crate::bfv::{Ciphertext, Params, PublicKey, SecretKey};
use crate::matching::{pack, Gallery};

use super::api::state::Quotas;
use super::api::{ApiError, ErrorCode};
use super::store::{GalleryRowRef, StoreError};

/// A gallery's counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub ciphertexts: usize,
    /// Templates that can match (erased ones not counted).
    pub templates: usize,
    pub erased: usize,
    /// Bytes of residues in memory.
    pub memory_bytes: usize,
}

impl Counts {
    fn of(g: &Gallery) -> Self {
        Self {
            ciphertexts: g.ciphertexts(),
            templates: g.len(),
            erased: g.erased(),
            memory_bytes: g.memory_bytes(),
        }
    }
}

/// Every gallery, by name.
pub struct Galleries {
    params: Params,
    dim: usize,
    quotas: Quotas,
    /// Galleries kept at the top level, for encrypted probes (login mode).
    top_level: bool,
    map: RwLock<HashMap<String, Arc<RwLock<Gallery>>>>,
    /// The counts of each gallery, by name.
    counts: Mutex<BTreeMap<String, Counts>>,
    /// Serializes mutations (the store write and the memory update).
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

/// Stored rows parsed at once when loading (in parallel): a few
/// megabytes, whatever the gallery's size.
pub const LOAD_CHUNK: usize = 32;

impl Galleries {
    /// No gallery yet; `quotas` bound what appends may add.
    pub fn new(params: &Params, dim: usize, quotas: Quotas) -> Self {
        Self {
            params: params.clone(),
            dim,
            quotas,
            top_level: false,
            map: RwLock::new(HashMap::new()),
            counts: Mutex::new(BTreeMap::new()),
            append_lock: tokio::sync::Mutex::new(()),
        }
    }

    /// No gallery yet; each one kept at the top level, as encrypted probes
    /// need ([`Gallery::for_encrypted_probes`]).
    pub fn for_encrypted_probes(params: &Params, dim: usize, quotas: Quotas) -> Self {
        Self {
            top_level: true,
            ..Self::new(params, dim, quotas)
        }
    }

    /// An empty gallery as this set keeps them.
    fn empty(&self) -> Result<Gallery, ApiError> {
        Ok(if self.top_level {
            Gallery::for_encrypted_probes(&self.params, self.dim)?
        } else {
            Gallery::new(&self.params, self.dim)?
        })
    }

    /// Adds an empty gallery `name` (login mode, where a gallery is created
    /// with its key before templates join it); false if there is one.
    /// `write` stores it first, and is not called when a quota refuses it.
    pub async fn create<F>(&self, name: &str, write: F) -> Result<bool, ApiError>
    where
        F: FnOnce() -> Result<bool, StoreError> + Send + 'static,
    {
        let _guard = self.append_lock.lock().await;
        if self.counts(name).is_ok() {
            return Ok(false);
        }
        self.check_quotas(name, 0, 0)?;
        if !tokio::task::spawn_blocking(write)
            .await
            .map_err(|_| poisoned())??
        {
            return Ok(false);
        }
        self.insert_empty(name)?;
        Ok(true)
    }

    /// An empty gallery `name` in memory (its key loaded at start-up).
    pub fn insert_empty(&self, name: &str) -> Result<(), ApiError> {
        let g = self.empty()?;
        self.set_counts(name, Counts::of(&g))?;
        self.map
            .write()
            .map_err(|_| poisoned())?
            .insert(name.to_string(), Arc::new(RwLock::new(g)));
        Ok(())
    }

    /// The quotas appends are held to.
    pub fn quotas(&self) -> Quotas {
        self.quotas
    }

    /// Gallery `name` in memory, added empty if there is none (login mode:
    /// a gallery whose key another replica stored).
    pub fn ensure(&self, name: &str) -> Result<(), ApiError> {
        // Read before the counts are locked (a writer holds the gallery,
        // then the counts); a write meanwhile sets its own counts after.
        let g = self.get_or_insert(name)?;
        let now = Counts::of(&*g.read().map_err(|_| poisoned())?);
        let mut counts = self.counts.lock().map_err(|_| poisoned())?;
        counts.entry(name.to_string()).or_insert(now);
        Ok(())
    }

    /// A loader of the stored rows, at start-up (see [`Loader`]).
    pub fn loader(&self) -> Loader<'_> {
        Loader {
            galleries: self,
            bytes: Vec::new(),
            rows: Vec::with_capacity(LOAD_CHUNK),
        }
    }

    /// Every gallery's counts, in name order.
    pub fn list(&self) -> Result<Vec<(String, Counts)>, ApiError> {
        let counts = self.counts.lock().map_err(|_| poisoned())?;
        Ok(counts.iter().map(|(k, v)| (k.clone(), *v)).collect())
    }

    /// A gallery's counts.
    pub fn counts(&self, gallery: &str) -> Result<Counts, ApiError> {
        let counts = self.counts.lock().map_err(|_| poisoned())?;
        counts.get(gallery).copied().ok_or_else(unknown_gallery)
    }

    /// Number of galleries and of templates in all of them.
    pub fn stats(&self) -> (usize, usize) {
        self.counts
            .lock()
            .map(|c| (c.len(), c.values().map(|v| v.templates).sum()))
            .unwrap_or((0, 0))
    }

    /// The gallery's lock (the map locked only to look it up).
    fn get(&self, gallery: &str) -> Result<Arc<RwLock<Gallery>>, ApiError> {
        let map = self.map.read().map_err(|_| poisoned())?;
        map.get(gallery).cloned().ok_or_else(unknown_gallery)
    }

    /// Refuses an append of one ciphertext of `count` templates (taking
    /// `bytes` of memory) that would pass a quota.
    fn check_quotas(&self, gallery: &str, count: usize, bytes: usize) -> Result<Counts, ApiError> {
        let counts = self.counts.lock().map_err(|_| poisoned())?;
        let q = &self.quotas;
        let cur = counts.get(gallery).copied();
        if cur.is_none() && counts.len() >= q.galleries {
            return Err(ApiError::quota(format!(
                "the server holds its maximum of {} galleries (--max-galleries)",
                q.galleries
            )));
        }
        let cur = cur.unwrap_or_default();
        let held = cur.templates + cur.erased;
        if held + count > q.gallery_templates {
            return Err(ApiError::quota(format!(
                "gallery {gallery} holds {held} templates; {count} more would pass the maximum of {} (--max-gallery-templates)",
                q.gallery_templates
            )));
        }
        let memory: usize = counts.values().map(|c| c.memory_bytes).sum();
        if memory + bytes > q.gallery_bytes {
            return Err(ApiError::quota(format!(
                "the galleries hold {memory} bytes in memory; {bytes} more would pass the maximum of {} (--max-gallery-bytes)",
                q.gallery_bytes
            )));
        }
        Ok(cur)
    }

    /// Appends a ciphertext of `count` templates: `write(seq)` stores it as
    /// row `seq` (its position in the gallery, on the blocking pool), then
    /// it joins the in-memory gallery at that position. Returns the index of
    /// its first template and the gallery's template count. A ciphertext
    /// that would pass a quota is refused before anything is written.
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
        let mut scratch = Gallery::new(&self.params, self.dim)?;
        scratch.push(ct.clone(), count as usize)?;
        // Mutations hold the lock: nothing moves the counts between here
        // and the push.
        let cur = self.check_quotas(gallery, count as usize, scratch.memory_bytes())?;
        let seq = cur.ciphertexts as i64;
        tokio::task::spawn_blocking(move || write(seq))
            .await
            .map_err(|_| poisoned())??;
        // The gallery's write lock waits for running identifications of it
        // (which hold its read lock on matching threads): not on an I/O
        // thread's time.
        tokio::task::block_in_place(|| {
            let g = self.get_or_insert(gallery)?;
            let mut g = g.write().map_err(|_| poisoned())?;
            debug_assert_eq!(g.ciphertexts() as i64, seq);
            let first = g.push(ct, count as usize)?;
            debug_assert_eq!(
                first % pack::templates_per_ciphertext(&self.params, self.dim),
                0
            );
            self.set_counts(gallery, Counts::of(&g))?;
            Ok((first, g.len()))
        })
    }

    fn set_counts(&self, gallery: &str, counts: Counts) -> Result<(), ApiError> {
        self.counts
            .lock()
            .map_err(|_| poisoned())?
            .insert(gallery.to_string(), counts);
        Ok(())
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
        self.commit_erasure(gallery, erasure, write).await
    }

    /// [`Self::erase`] where the replacement ciphertext is made elsewhere:
    /// `replace(ciphertext, block)` returns a fresh encryption of the
    /// template's ciphertext without its block (login mode: through the
    /// decider, which sees only a masked plaintext).
    pub async fn erase_with<C, Fut, F>(
        &self,
        gallery: &str,
        index: usize,
        replace: C,
        write: F,
    ) -> Result<usize, ApiError>
    where
        C: FnOnce(Ciphertext, usize) -> Fut,
        Fut: std::future::Future<Output = Result<Ciphertext, ApiError>>,
        F: FnOnce(i64, Vec<u8>, u64) -> Result<bool, StoreError> + Send + 'static,
    {
        let _guard = self.append_lock.lock().await;
        let (ct, block) = self.with(gallery, |g| {
            let (ct, block) = g.holding(index)?;
            Ok((ct.clone(), block))
        })?;
        let replacement = replace(ct, block).await?;
        let erasure = self.with(gallery, |g| Ok(g.erasure_with(index, replacement)?))?;
        self.commit_erasure(gallery, erasure, write).await
    }

    /// Stores an erasure, then applies it in memory (the caller holds the
    /// mutation lock).
    async fn commit_erasure<F>(
        &self,
        gallery: &str,
        erasure: crate::matching::Erasure,
        write: F,
    ) -> Result<usize, ApiError>
    where
        F: FnOnce(i64, Vec<u8>, u64) -> Result<bool, StoreError> + Send + 'static,
    {
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
            let g = self.get(gallery)?;
            let mut g = g.write().map_err(|_| poisoned())?;
            g.apply(erasure)?;
            self.set_counts(gallery, Counts::of(&g))?;
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
        self.counts(gallery)?;
        tokio::task::spawn_blocking(delete)
            .await
            .map_err(|_| poisoned())??;
        self.map.write().map_err(|_| poisoned())?.remove(gallery);
        self.counts.lock().map_err(|_| poisoned())?.remove(gallery);
        Ok(())
    }

    /// Ciphertext `position` of `gallery` as the store now holds it (a
    /// shard catching up, `crate::server::shards`): the next one is
    /// appended, an earlier one replaced (an erasure made elsewhere).
    pub fn put_stored(
        &self,
        gallery: &str,
        position: usize,
        ct: Ciphertext,
        count: usize,
        erased: u64,
    ) -> Result<(), ApiError> {
        let g = self.get_or_insert(gallery)?;
        let mut g = g.write().map_err(|_| poisoned())?;
        let n = g.ciphertexts();
        if position == n {
            g.restore(ct, count, erased)?;
        } else if position < n {
            g.replace(position, ct, count, erased)?;
        } else {
            return Err(ApiError::internal(&format!(
                "gallery {gallery}: stored ciphertext {position} read before {n}"
            )));
        }
        self.set_counts(gallery, Counts::of(&g))
    }

    /// Gallery `gallery`, added empty if there is none.
    fn get_or_insert(&self, gallery: &str) -> Result<Arc<RwLock<Gallery>>, ApiError> {
        let mut map = self.map.write().map_err(|_| poisoned())?;
        if let Some(g) = map.get(gallery) {
            return Ok(g.clone());
        }
        let g = Arc::new(RwLock::new(self.empty()?));
        map.insert(gallery.to_string(), g.clone());
        Ok(g)
    }

    /// Forgets a gallery (deleted elsewhere: a shard catching up).
    pub fn forget(&self, gallery: &str) -> Result<(), ApiError> {
        self.map.write().map_err(|_| poisoned())?.remove(gallery);
        self.counts.lock().map_err(|_| poisoned())?.remove(gallery);
        Ok(())
    }

    /// Runs `f` on a gallery (read-locked: a scan).
    pub fn with<T>(
        &self,
        gallery: &str,
        f: impl FnOnce(&Gallery) -> Result<T, ApiError>,
    ) -> Result<T, ApiError> {
        let g = self.get(gallery)?;
        let g = g.read().map_err(|_| poisoned())?;
        f(&g)
    }
}

/// Loads stored rows (in gallery, sequence order) into the galleries at
/// start-up: each row's bytes are copied into one buffer reused for every
/// chunk of [`LOAD_CHUNK`] rows, which are parsed in parallel (on the rayon
/// pool) and pushed in order. Memory holds the parsed galleries and one
/// chunk, nothing per row besides. Quotas do not apply (what is stored is
/// served).
pub struct Loader<'a> {
    galleries: &'a Galleries,
    bytes: Vec<u8>,
    rows: Vec<Loading>,
}

impl std::fmt::Debug for Loader<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Loader {{ rows: {} }}", self.rows.len())
    }
}

/// A row of the chunk being loaded; its bytes are `bytes[at]`.
struct Loading {
    gallery: String,
    seq: i64,
    count: u32,
    erased: u64,
    at: std::ops::Range<usize>,
}

impl Loader<'_> {
    /// Adds one stored row (loaded once its chunk is full).
    pub fn add(&mut self, row: GalleryRowRef<'_>) -> Result<(), String> {
        if self.bytes.capacity() == 0 {
            self.bytes.reserve_exact(LOAD_CHUNK * row.ciphertext.len());
        }
        let start = self.bytes.len();
        self.bytes.extend_from_slice(row.ciphertext);
        self.rows.push(Loading {
            gallery: row.gallery.to_string(),
            seq: row.seq,
            count: row.count,
            erased: row.erased,
            at: start..self.bytes.len(),
        });
        if self.rows.len() == LOAD_CHUNK {
            self.load_chunk()?;
        }
        Ok(())
    }

    /// Loads the rows added since the last full chunk.
    pub fn finish(mut self) -> Result<(), String> {
        self.load_chunk()
    }

    fn load_chunk(&mut self) -> Result<(), String> {
        let gs = self.galleries;
        let what = |r: &Loading, e: &dyn std::fmt::Display| {
            format!("gallery {} #{}: {e}", r.gallery, r.seq)
        };
        let bytes = &self.bytes;
        let parsed: Vec<Ciphertext> = self
            .rows
            .par_iter()
            .map(|r| {
                Ciphertext::from_bytes(&gs.params, &bytes[r.at.clone()]).map_err(|e| what(r, &e))
            })
            .collect::<Result<_, String>>()?;
        let mut map = gs.map.write().map_err(|_| "gallery lock poisoned")?;
        let mut counts = gs.counts.lock().map_err(|_| "gallery lock poisoned")?;
        for (r, ct) in self.rows.drain(..).zip(parsed) {
            let g = match map.get(&r.gallery) {
                Some(g) => g.clone(),
                None => {
                    let g = gs.empty().map_err(|e| e.message)?;
                    let g = Arc::new(RwLock::new(g));
                    map.insert(r.gallery.clone(), g.clone());
                    g
                }
            };
            let mut g = g.write().map_err(|_| "gallery lock poisoned")?;
            // Row `seq` is ciphertext `seq` of its gallery: a missing row
            // would move every later template to another index (and so to
            // another person), so the gallery is not served at all.
            if r.seq != g.ciphertexts() as i64 {
                return Err(format!(
                    "gallery {}: stored row #{} where #{} belongs (a row is missing;                      restore the database from a backup)",
                    r.gallery,
                    r.seq,
                    g.ciphertexts()
                ));
            }
            g.restore(ct, r.count as usize, r.erased)
                .map_err(|e| what(&r, &e))?;
            counts.insert(r.gallery, Counts::of(&g));
        }
        self.bytes.clear();
        Ok(())
    }
}

fn unknown_gallery() -> ApiError {
    ApiError::new(ErrorCode::UnknownGallery, "no such gallery")
}
