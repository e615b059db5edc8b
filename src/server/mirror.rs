//! Galleries in memory kept equal to the database's rows (PostgreSQL,
//! where every replica writes): shard `shard` of `shards` of every gallery
//! (`crate::server::shards`), or all of it (one shard of one: every
//! replica of an unsharded cluster holds every gallery).
//!
//! Every write of a gallery row takes the next `gallery_revs` value under
//! the gallery's lock, so one gallery's revisions commit in order. A
//! mirror remembers the revision it last saw of each gallery; catching up
//! reads, in one snapshot, the rows written after it and the gallery's
//! latest deletion, and applies them: a row at the next position joins
//! the gallery, an earlier one replaces its position (an erasure made
//! elsewhere), a deletion forgets the gallery first. A request that
//! catches up before it answers sees every write acknowledged before it
//! began, through whichever replica.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::bfv::{Ciphertext, Params};
use crate::server::api::{ApiError, ErrorCode};
use crate::server::gallery::Galleries;
use crate::server::store::postgres::shards::{ShardChanges, CHANGES_PAGE};
use crate::server::store::postgres::PgStore;
use crate::server::store::GalleryRowRef;
use crate::server::store::StoreError;

/// What a mirror holds of the database: the shard, and the revision each
/// gallery was last caught up to.
#[derive(Debug)]
pub struct Mirror {
    shard: u32,
    shards: u32,
    revs: Mutex<HashMap<String, i64>>,
    /// One catch-up at a time.
    sync: tokio::sync::Mutex<()>,
}

/// What a catch-up found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CaughtUp {
    /// The gallery's latest row revision (`None`: it has no rows).
    pub rev: Option<i64>,
    /// The gallery was deleted since the last look (its rows before the
    /// deletion are forgotten; a login-mode gallery's key with them).
    pub deleted: bool,
}

fn poisoned() -> ApiError {
    ApiError::internal("mirror lock poisoned")
}

impl Mirror {
    /// Loads shard `shard` of `shards` of every gallery into `galleries`
    /// (empty), streamed from the database; `check` may refuse a row,
    /// which stops the load. Returns the mirror of what was loaded.
    pub fn load(
        pg: &PgStore,
        galleries: &Galleries,
        shard: u32,
        shards: u32,
        check: impl Fn(&GalleryRowRef<'_>) -> Result<(), String>,
    ) -> Result<Self, String> {
        let n = shards as i64;
        let mut revs: HashMap<String, i64> = HashMap::new();
        let mut loader = galleries.loader();
        pg.for_each_shard_row(shard, shards, |row, rev| {
            check(&row)?;
            let r = revs.entry(row.gallery.to_string()).or_insert(rev);
            *r = (*r).max(rev);
            loader.add(GalleryRowRef {
                seq: row.seq / n,
                ..row
            })
        })
        .map_err(|e| e.to_string())??;
        loader.finish()?;
        Ok(Self {
            shard,
            shards,
            revs: Mutex::new(revs),
            sync: tokio::sync::Mutex::new(()),
        })
    }

    /// Brings `galleries`' part of `gallery` up to what the database holds
    /// now (the store call on a blocking thread).
    pub async fn catch_up(
        &self,
        pg: &PgStore,
        params: &Params,
        galleries: &Galleries,
        gallery: &str,
    ) -> Result<CaughtUp, ApiError> {
        let _one = self.sync.lock().await;
        let since = self
            .revs
            .lock()
            .map_err(|_| poisoned())?
            .get(gallery)
            .copied()
            .unwrap_or(0);
        tokio::task::block_in_place(|| {
            let changes = changes_since(pg, gallery, self.shard, self.shards, since, CHANGES_PAGE)?;
            if changes.deleted_at.is_some() {
                galleries.forget(gallery)?;
            }
            for row in changes.rows {
                let ct = Ciphertext::from_bytes(params, &row.ciphertext).map_err(|e| {
                    ApiError::new(
                        ErrorCode::CorruptStore,
                        format!("gallery {gallery} #{}: {e}", row.seq),
                    )
                })?;
                let position = (row.seq / self.shards as i64) as usize;
                galleries.put_stored(gallery, position, ct, row.count as usize, row.erased)?;
            }
            let at = [changes.rev, changes.deleted_at, Some(since)]
                .into_iter()
                .flatten()
                .max()
                .unwrap_or(0);
            self.revs
                .lock()
                .map_err(|_| poisoned())?
                .insert(gallery.to_string(), at);
            Ok(CaughtUp {
                rev: changes.rev,
                deleted: changes.deleted_at.is_some(),
            })
        })
    }
}

/// Everything that changed in shard `shard` of `gallery` after revision
/// `since`, read `page` rows a call ([`CHANGES_PAGE`] when catching up) so
/// that no call outlasts the store's timeout however far behind the
/// replica is: the
/// latest revision and deletion as the first page saw them, and the rows
/// by sequence number, each at its newest revision. A deletion that comes
/// between pages starts the reading over.
pub fn changes_since(
    pg: &PgStore,
    gallery: &str,
    shard: u32,
    shards: u32,
    since: i64,
    page: usize,
) -> Result<ShardChanges, StoreError> {
    let page = page.max(1);
    let mut all = pg.shard_changes(gallery, shard, shards, since, since, page)?;
    let mut last = all.rows.len();
    while last == page {
        let after = all.rows.last().map_or(since, |r| r.rev);
        let next = pg.shard_changes(gallery, shard, shards, since, after, page)?;
        last = next.rows.len();
        if next.deleted_at != all.deleted_at {
            // Deleted while it was being read: what was read is gone.
            all = pg.shard_changes(gallery, shard, shards, since, since, page)?;
            last = all.rows.len();
            continue;
        }
        all.rows.extend(next.rows);
    }
    // A row rewritten between pages comes twice: its newest revision counts.
    all.rows.sort_by_key(|r| (r.seq, std::cmp::Reverse(r.rev)));
    all.rows.dedup_by_key(|r| r.seq);
    Ok(all)
}
