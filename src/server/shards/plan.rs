//! Who holds which shard: the rebalancing step a replica makes at each
//! lease renewal, on the map read under the map's lock (a pure function,
//! so that it is tested on its own).
//!
//! Every live replica is owed an even share of the shards (`shards / n`,
//! the first `shards % n` by id one more). A shard is owned by its taker
//! when it has one (a replica loading it), else by its holder. At its turn
//! a replica first drops the claims of replicas whose lease lapsed, then,
//! while it owns fewer than its share, takes an orphan (a shard nobody
//! owns) or, failing that, a shard of the replica most over its share. It
//! becomes the shard's taker, loads it, and only then its holder: the old
//! holder serves it until then.

use std::collections::BTreeMap;

use crate::server::store::postgres::shards::ShardRow;

/// The map after `me`'s turn, given the live replicas (`me` among them).
pub fn plan(me: &str, live: &[String], map: &[ShardRow]) -> Vec<ShardRow> {
    let is_live = |id: &Option<String>| id.as_ref().is_some_and(|id| live.contains(id));
    let mut next: Vec<ShardRow> = map
        .iter()
        .map(|r| ShardRow {
            shard: r.shard,
            holder: r.holder.clone().filter(|_| is_live(&r.holder)),
            taker: r.taker.clone().filter(|_| is_live(&r.taker)),
        })
        .collect();
    let Some(rank) = live.iter().position(|id| id == me) else {
        return next;
    };
    let n = live.len();
    let total = next.len();
    let share = |i: usize| total / n + usize::from(i < total % n);
    let owner = |r: &ShardRow| r.taker.clone().or_else(|| r.holder.clone());
    let mut owned: BTreeMap<&str, usize> = live.iter().map(|id| (id.as_str(), 0)).collect();
    for r in &next {
        if let Some(o) = owner(r) {
            if let Some(c) = owned.get_mut(o.as_str()) {
                *c += 1;
            }
        }
    }
    while owned[me] < share(rank) {
        let pick = match next.iter().position(|r| owner(r).is_none()) {
            Some(orphan) => Some(orphan),
            None => {
                // The replica most over its share, then its last shard
                // that nobody is taking.
                let over = live
                    .iter()
                    .enumerate()
                    .filter(|(i, id)| *id != me && owned[id.as_str()] > share(*i))
                    .max_by_key(|(_, id)| owned[id.as_str()])
                    .map(|(_, id)| id.clone());
                over.and_then(|o| {
                    next.iter()
                        .rposition(|r| r.taker.is_none() && r.holder.as_deref() == Some(&o))
                })
            }
        };
        let Some(i) = pick else { break };
        if let Some(o) = owner(&next[i]) {
            *owned.get_mut(o.as_str()).expect("a live owner") -= 1;
        }
        next[i].taker = Some(me.to_string());
        *owned.get_mut(me).expect("me is live") += 1;
    }
    next
}

#[cfg(test)]
mod tests {
    use super::*;

    fn empty(shards: u32) -> Vec<ShardRow> {
        (0..shards)
            .map(|shard| ShardRow {
                shard,
                holder: None,
                taker: None,
            })
            .collect()
    }

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    /// Loads every shard `id` is taking (what the replica does after its turn).
    fn finish(map: &mut [ShardRow], id: &str) {
        for r in map.iter_mut() {
            if r.taker.as_deref() == Some(id) {
                r.holder = r.taker.take();
            }
        }
    }

    fn held(map: &[ShardRow], id: &str) -> usize {
        map.iter()
            .filter(|r| r.holder.as_deref() == Some(id))
            .count()
    }

    #[test]
    fn a_lone_replica_takes_every_shard() {
        let live = ids(&["a"]);
        let mut map = plan("a", &live, &empty(8));
        assert!(map.iter().all(|r| r.taker.as_deref() == Some("a")));
        finish(&mut map, "a");
        assert_eq!(held(&map, "a"), 8);
        assert_eq!(plan("a", &live, &map), map, "nothing moves once settled");
    }

    #[test]
    fn a_second_replica_takes_half_while_the_first_serves_them() {
        let mut map = empty(8);
        map = plan("a", &ids(&["a"]), &map);
        finish(&mut map, "a");
        let live = ids(&["a", "b"]);
        map = plan("b", &live, &map);
        let taking = map
            .iter()
            .filter(|r| r.taker.as_deref() == Some("b"))
            .count();
        assert_eq!(taking, 4);
        // Until b has loaded them, a still holds all eight.
        assert_eq!(held(&map, "a"), 8);
        assert_eq!(plan("a", &live, &map), map, "a takes nothing back");
        finish(&mut map, "b");
        assert_eq!((held(&map, "a"), held(&map, "b")), (4, 4));
    }

    #[test]
    fn shards_of_a_replica_whose_lease_lapsed_go_to_the_others() {
        let mut map = empty(7);
        for (me, live) in [
            ("a", vec!["a"]),
            ("b", vec!["a", "b"]),
            ("c", vec!["a", "b", "c"]),
        ] {
            map = plan(me, &ids(&live), &map);
            finish(&mut map, me);
        }
        assert_eq!(
            (held(&map, "a"), held(&map, "b"), held(&map, "c")),
            (3, 2, 2)
        );
        // b dies: a and c share its two.
        let live = ids(&["a", "c"]);
        for me in ["a", "c"] {
            map = plan(me, &live, &map);
            finish(&mut map, me);
        }
        assert_eq!(held(&map, "b"), 0);
        assert_eq!(held(&map, "a") + held(&map, "c"), 7);
        assert!(held(&map, "a").abs_diff(held(&map, "c")) <= 1);
    }

    #[test]
    fn a_taker_whose_lease_lapsed_is_forgotten() {
        let mut map = empty(2);
        map[0].holder = Some("a".into());
        map[0].taker = Some("gone".into());
        map[1].holder = Some("a".into());
        let next = plan("a", &ids(&["a"]), &map);
        assert_eq!(next[0].taker, None);
        assert_eq!(held(&next, "a"), 2);
    }

    #[test]
    fn a_replica_not_in_the_live_list_only_cleans_up() {
        let mut map = empty(2);
        map[0].holder = Some("gone".into());
        let next = plan("late", &ids(&["a"]), &map);
        assert!(next.iter().all(|r| r.holder.is_none() && r.taker.is_none()));
    }
}
