//! Login mode's gallery keys, held by the matcher: each gallery's public
//! and relinearization keys at its key epoch, as the decider derived them,
//! with the decider's signed statement of the public key. The matcher holds
//! no secret key of any gallery.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use crate::bfv::{Params, PublicKey, RelinKey};
use crate::server::store::GalleryKeyRow;

/// One gallery's keys.
#[derive(Debug)]
pub struct GalleryKey {
    pub epoch: u32,
    pub pk: PublicKey,
    pub rk: RelinKey,
    /// The decider's statement (a JWS) that `pk` is the gallery's key of
    /// `epoch`.
    pub statement: String,
}

impl GalleryKey {
    /// The key of a stored row (or of the decider's answer, framed so).
    pub fn from_row(params: &Params, row: &GalleryKeyRow) -> Result<Self, String> {
        let (pk, rk) = crate::server::api::split_keys(&row.keys)
            .map_err(|_| format!("gallery {}: the keys framing does not parse", row.gallery))?;
        let what = |e: &dyn std::fmt::Display| format!("gallery {}: {e}", row.gallery);
        let rk = rk.ok_or_else(|| what(&"no relinearization key"))?;
        Ok(Self {
            epoch: row.epoch,
            pk: PublicKey::from_bytes(params, pk).map_err(|e| what(&e))?,
            rk: RelinKey::from_bytes(params, rk).map_err(|e| what(&e))?,
            statement: row.statement.clone(),
        })
    }
}

/// Every gallery's keys, by gallery.
#[derive(Debug, Default)]
pub struct GalleryKeys(RwLock<HashMap<String, Arc<GalleryKey>>>);

impl GalleryKeys {
    pub fn get(&self, gallery: &str) -> Option<Arc<GalleryKey>> {
        self.0
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(gallery)
            .cloned()
    }

    pub fn insert(&self, gallery: &str, key: GalleryKey) {
        self.0
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(gallery.to_string(), Arc::new(key));
    }

    pub fn remove(&self, gallery: &str) {
        self.0
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(gallery);
    }
}
