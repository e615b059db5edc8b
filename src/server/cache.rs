//! Parsed keys and templates of recently verified users, so a verification
//! costs no database read and no re-parsing of stored objects.
//!
//! Writes (keys, template, delete) invalidate the user's entry after they
//! commit and before they are acknowledged. A loader records the write
//! counter before it reads the database and inserts only if no write
//! happened meanwhile, so a stale read never enters the cache.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::bfv::{PreparedCiphertext, PublicKey, RelinKey};

/// A user's objects, parsed.
pub struct Loaded {
    /// The user's id (its verifications' audit rows belong to it).
    pub user_id: i64,
    /// The user's revision when read (see `Store::user_rev`).
    pub rev: i64,
    pub pk: PublicKey,
    pub rk: Option<RelinKey>,
    /// The template with its part of the multiplication precomputed.
    pub template: PreparedCiphertext,
    pub count: u32,
    /// Login mode: the decider's key epoch (`None`: keys the user holds).
    pub key_epoch: Option<u32>,
    /// Login mode: whether the template passed the decider's check.
    pub template_checked: bool,
}

impl std::fmt::Debug for Loaded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Loaded")
            .field("relin_key", &self.rk.is_some())
            .field("count", &self.count)
            .finish()
    }
}

#[derive(Default)]
struct Inner {
    map: HashMap<String, Arc<Loaded>>,
    writes: u64,
}

/// A bounded map from user to [`Loaded`].
pub struct UserCache {
    inner: Mutex<Inner>,
    cap: usize,
}

impl std::fmt::Debug for UserCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "UserCache {{ cap: {} }}", self.cap)
    }
}

impl UserCache {
    /// A cache of at most `cap` users (0 turns it off).
    pub fn new(cap: usize) -> Self {
        Self {
            inner: Mutex::new(Inner::default()),
            cap,
        }
    }

    /// The cached entry of `user`.
    pub fn get(&self, user: &str) -> Option<Arc<Loaded>> {
        self.inner.lock().ok()?.map.get(user).cloned()
    }

    /// The write counter, to pass to [`UserCache::insert`].
    pub fn stamp(&self) -> u64 {
        self.inner.lock().map(|i| i.writes).unwrap_or(u64::MAX)
    }

    /// Inserts an entry loaded after `stamp`, unless a write happened since.
    pub fn insert(&self, user: &str, stamp: u64, loaded: Arc<Loaded>) {
        if self.cap == 0 {
            return;
        }
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        if inner.writes != stamp {
            return;
        }
        if inner.map.len() >= self.cap && !inner.map.contains_key(user) {
            // Evict an arbitrary entry (HashMap order is randomized).
            if let Some(k) = inner.map.keys().next().cloned() {
                inner.map.remove(&k);
            }
        }
        inner.map.insert(user.to_string(), loaded);
    }

    /// Entries held.
    pub fn len(&self) -> usize {
        self.inner.lock().map(|i| i.map.len()).unwrap_or(0)
    }

    /// Whether no entry is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops `user`'s entry; called after every committed write of that user.
    pub fn invalidate(&self, user: &str) {
        if let Ok(mut inner) = self.inner.lock() {
            inner.writes += 1;
            inner.map.remove(user);
        }
    }
}
