//! Sharded galleries (`serve --shards N --advertise URL` on PostgreSQL,
//! with the key holder's service key): every gallery split into `N`
//! shards, each held in the memory of one replica (docs/SCALE.md,
//! "Sharded galleries").
//!
//! Ciphertext `seq` of a gallery is in shard `seq % N`, at position
//! `seq / N` of that shard's in-memory gallery. Replicas hold leases in
//! PostgreSQL and renew them every fifth of `--lease-ms`; at each renewal a
//! replica rebalances the shard map ([`plan`]) and loads what it takes. A
//! replica that dies stops renewing: once its lease lapses, the others take
//! its shards and load them from the database.
//!
//! Writes go to the database from any replica; a holder catches up on its
//! shard's rows written since its last look (by gallery revision) before
//! it answers, so an identification sees every write acknowledged before
//! it began. Each holder signs its shard's top-k with a key made at start
//! and published with its lease; the replica that merges checks every
//! result against the leased key and signs the merged list
//! ([`result`]).

pub mod peer;
pub mod plan;
pub mod result;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use crate::bfv::Params;
use crate::matching::pack::templates_per_ciphertext;
use crate::server::api::state::Quotas;
use crate::server::api::ApiError;
use crate::server::gallery::Galleries;
use crate::server::mirror::Mirror;
use crate::server::store::postgres::shards::{Replica, ShardRow};
use crate::server::store::postgres::PgStore;
use crate::server::store::{now_millis, Store, StoreError};
use crate::server::verdict::VerdictKey;

/// `--shards`, `--advertise`, `--lease-ms`.
#[derive(Clone, Debug)]
pub struct ShardConfig {
    /// This replica's id: the URL the others reach it at.
    pub id: String,
    /// Shards per gallery (the same on every replica).
    pub shards: u32,
    /// How long a lease lasts unrenewed.
    pub lease: Duration,
}

/// One shard held in memory: its part of every gallery, kept up with the
/// database by its mirror.
#[derive(Debug)]
pub struct HeldShard {
    pub galleries: Galleries,
    mirror: Mirror,
}

/// This replica's part in the sharded cluster.
pub struct Sharding {
    pub config: ShardConfig,
    /// Signs this replica's shard results and merged identifications;
    /// published with its lease.
    key: VerdictKey,
    params: Params,
    dim: usize,
    store: Arc<Store>,
    held: RwLock<BTreeMap<u32, Arc<HeldShard>>>,
    loading: AtomicBool,
}

impl std::fmt::Debug for Sharding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sharding")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Sharding {
    /// Joins the cluster on `store` (PostgreSQL): checks the shard count
    /// and gives up whatever this id held before (a restarted replica loads
    /// its shards again).
    pub fn join(
        config: ShardConfig,
        params: &Params,
        dim: usize,
        store: Arc<Store>,
    ) -> Result<Self, String> {
        let Store::Postgres(pg) = &*store else {
            return Err(
                "--shards needs a PostgreSQL --db (the shard map and leases live there)".into(),
            );
        };
        if config.shards == 0 || config.shards > 4096 {
            return Err("--shards must be in 1..=4096".into());
        }
        if peer::authority(&config.id).is_none() {
            return Err(format!(
                "--advertise {}: http://host:port, the address other replicas reach this one at",
                config.id
            ));
        }
        pg.join_shards(&config.id, config.shards)
            .map_err(|e| e.to_string())?;
        Ok(Self {
            config,
            key: VerdictKey::generate().map_err(|e| e.to_string())?,
            params: params.clone(),
            dim,
            store,
            held: RwLock::new(BTreeMap::new()),
            loading: AtomicBool::new(false),
        })
    }

    /// The store (PostgreSQL: checked at [`Self::join`]).
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// The PostgreSQL store (checked at [`Self::join`]).
    pub fn pg(&self) -> &PgStore {
        match &*self.store {
            Store::Postgres(pg) => pg,
            Store::Sqlite(_) => unreachable!("checked when joining"),
        }
    }

    /// This replica as the map names it.
    fn me(&self) -> Replica {
        Replica {
            id: self.config.id.clone(),
            public_key: self.key.public_key().to_vec(),
        }
    }

    /// The key this replica signs with.
    pub fn key(&self) -> &VerdictKey {
        &self.key
    }

    /// Templates per ciphertext.
    pub fn per(&self) -> u64 {
        templates_per_ciphertext(&self.params, self.dim) as u64
    }

    /// The index in the whole gallery of template `local` of shard
    /// `shard`'s gallery.
    pub fn global_index(&self, shard: u32, local: usize) -> u64 {
        global_index(self.per(), self.config.shards, shard, local as u64)
    }

    /// Shards held now, by number.
    pub fn held_shards(&self) -> Vec<u32> {
        self.held
            .read()
            .map(|h| h.keys().copied().collect())
            .unwrap_or_default()
    }

    /// Shard `shard` if this replica holds it.
    pub fn held(&self, shard: u32) -> Option<Arc<HeldShard>> {
        self.held.read().ok()?.get(&shard).cloned()
    }

    /// Bytes in memory over every held shard's part of `gallery`.
    pub fn memory_bytes(&self, gallery: &str) -> usize {
        let held: Vec<Arc<HeldShard>> = match self.held.read() {
            Ok(h) => h.values().cloned().collect(),
            Err(_) => return 0,
        };
        held.iter()
            .filter_map(|h| h.galleries.counts(gallery).ok())
            .map(|c| c.memory_bytes)
            .sum()
    }

    /// Renews the lease, takes this replica's turn at the map, forgets the
    /// shards it no longer holds, and starts loading those it takes (one
    /// loader at a time, beside the renewals). Blocking.
    pub fn tick(self: &Arc<Self>) -> Result<(), StoreError> {
        let now = now_millis();
        let until = now + self.config.lease.as_millis() as i64;
        let me = self.me();
        let map = self
            .pg()
            .renew_and_plan(&me, now, until, |live, map| plan::plan(&me.id, live, map))?;
        let mine = |r: &ShardRow| {
            r.holder.as_deref() == Some(me.id.as_str())
                || r.taker.as_deref() == Some(me.id.as_str())
        };
        if let Ok(mut held) = self.held.write() {
            let keep: Vec<u32> = map.iter().filter(|r| mine(r)).map(|r| r.shard).collect();
            let gone: Vec<u32> = held.keys().filter(|s| !keep.contains(s)).copied().collect();
            for s in gone {
                held.remove(&s);
                tracing::info!(shard = s, "shard handed over");
            }
        }
        let taking: Vec<u32> = map
            .iter()
            .filter(|r| r.taker.as_deref() == Some(me.id.as_str()))
            .map(|r| r.shard)
            .collect();
        if !taking.is_empty() && !self.loading.swap(true, Ordering::AcqRel) {
            let this = self.clone();
            std::thread::spawn(move || {
                for s in taking {
                    if let Err(e) = this.take(s) {
                        tracing::error!(shard = s, error = %e, "loading a shard");
                    }
                }
                this.loading.store(false, Ordering::Release);
            });
        }
        Ok(())
    }

    /// Loads shard `shard` from the database and becomes its holder.
    fn take(&self, shard: u32) -> Result<(), String> {
        let started = std::time::Instant::now();
        let held = self.load(shard)?;
        let (galleries, templates) = held.galleries.stats();
        self.held
            .write()
            .map_err(|_| "shard lock poisoned")?
            .insert(shard, Arc::new(held));
        if !self
            .pg()
            .finish_taking(&self.config.id, shard)
            .map_err(|e| e.to_string())?
        {
            // Taken by another meanwhile (this lease lapsed).
            self.held
                .write()
                .map_err(|_| "shard lock poisoned")?
                .remove(&shard);
            return Err("the shard went to another replica while loading".into());
        }
        tracing::info!(
            shard,
            galleries,
            templates,
            ms = started.elapsed().as_millis() as u64,
            "shard loaded"
        );
        Ok(())
    }

    /// Shard `shard` of every gallery, read from the database.
    fn load(&self, shard: u32) -> Result<HeldShard, String> {
        let galleries = Galleries::new(&self.params, self.dim, Quotas::DEFAULT);
        let mirror = Mirror::load(self.pg(), &galleries, shard, self.config.shards, |_| Ok(()))?;
        Ok(HeldShard { galleries, mirror })
    }

    /// Brings `held`'s part of `gallery` up to what the database holds now.
    /// Returns the gallery revision it is caught up to, `None` when the
    /// gallery has no rows.
    pub async fn catch_up(&self, held: &HeldShard, gallery: &str) -> Result<Option<i64>, ApiError> {
        let c = held
            .mirror
            .catch_up(self.pg(), &self.params, &held.galleries, gallery)
            .await?;
        Ok(c.rev)
    }

    /// Gives up the lease at a clean stop.
    pub fn leave(&self) {
        if let Err(e) = self.pg().leave_shards(&self.config.id) {
            tracing::warn!(error = %e, "leaving the shard map");
        }
    }
}

/// The index in the whole gallery of template `local` of shard `shard`
/// (of `shards`, `per` templates a ciphertext): the shard's ciphertext
/// `local / per` is the gallery's `local / per * shards + shard`, and the
/// template keeps its block.
pub fn global_index(per: u64, shards: u32, shard: u32, local: u64) -> u64 {
    let (position, block) = (local / per, local % per);
    (position * shards as u64 + shard as u64) * per + block
}

/// Renews the lease and rebalances every fifth of the lease, for as long
/// as the process runs.
pub fn spawn_leases(sharding: Arc<Sharding>) {
    let every = sharding.config.lease / 5;
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let s = sharding.clone();
            match tokio::task::spawn_blocking(move || s.tick()).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::warn!(error = %e, "renewing the shard lease"),
                Err(e) => tracing::error!(error = %e, "shard lease task"),
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::global_index;

    /// Shard `s` of `n` holds ciphertexts `s, s + n, s + 2n, ...` at
    /// positions `0, 1, 2, ...`; a template keeps its block.
    #[test]
    fn shard_positions_map_to_gallery_indices() {
        let (per, n) = (32u64, 4u32);
        let global = |shard: u32, local: u64| global_index(per, n, shard, local);
        assert_eq!(global(0, 0), 0);
        assert_eq!(global(1, 0), 32);
        assert_eq!(global(1, 5), 37);
        assert_eq!(global(3, 32), (4 + 3) * 32);
        // Every index of 64 ciphertexts once, over the four shards.
        let mut all: Vec<u64> = (0..n)
            .flat_map(|s| (0..16 * per).map(move |l| global_index(per, n, s, l)))
            .collect();
        all.sort_unstable();
        assert_eq!(all, (0..64 * per).collect::<Vec<_>>());
    }
}
