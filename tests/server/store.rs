//! The store's contract, run against both stores: every test here is a
//! function of a freshly opened [`Store`], instantiated once on a SQLite
//! file and once on a PostgreSQL database of its own (see
//! [`crate::postgres`]).

use std::sync::Arc;

use blindmatch::server::store::{
    AuditRow, DbTarget, DeciderKey, Failures, GalleryKeyRow, NewToken, Store, StoreError,
};
use blindmatch::server::SCHEMA_VERSION;

use crate::harness::{temp_dir, TempDir};
use crate::postgres;

/// Where a contract test's store lives, and how to open it again.
pub(crate) enum Place {
    Sqlite(TempDir),
    Postgres(String),
}

impl Place {
    pub(crate) fn new(kind: &str, tag: &str) -> Place {
        match kind {
            "sqlite" => Place::Sqlite(temp_dir(tag)),
            "postgres" => Place::Postgres(postgres::shared().database(tag)),
            _ => unreachable!(),
        }
    }

    pub(crate) fn target(&self) -> DbTarget {
        match self {
            Place::Sqlite(dir) => DbTarget::Sqlite(dir.join("blindmatch.db")),
            Place::Postgres(url) => DbTarget::Postgres(url.clone()),
        }
    }

    pub(crate) fn open(&self) -> Store {
        Store::connect(&self.target(), std::time::Duration::from_secs(10)).unwrap()
    }
}

/// `contract!(name)`: `name` on SQLite and on PostgreSQL.
macro_rules! contract {
    ($($name:ident),* $(,)?) => {
        mod on_sqlite {
            $(#[test] fn $name() { super::$name(super::Place::new("sqlite", stringify!($name))); })*
        }
        mod on_postgres {
            $(#[test] fn $name() { super::$name(super::Place::new("postgres", stringify!($name))); })*
        }
    };
}

contract!(
    users_keys_and_templates,
    registration_is_refused_past_max_users,
    deletion_removes_everything_and_namesakes_start_afresh,
    galleries_and_their_keys,
    failures_and_used_verdicts,
    audit_rows_are_counted_pruned_and_survive_reopening,
    what_was_written_survives_reopening,
    concurrent_registrations_of_one_name_store_one,
    failures_counted_at_once_are_all_counted,
    one_time_tokens_are_taken_once_by_their_user,
    tokens_are_bounded_per_user_and_in_all,
    a_users_revision_moves_with_every_write,
);

const STATEMENT: &str = "eyJhbGciOiJFZERTQSJ9.e30.sig";

fn users_keys_and_templates(place: Place) {
    let s = place.open();
    assert_eq!(s.schema_version().unwrap(), SCHEMA_VERSION);
    assert!(s.load_user("ann").unwrap().is_none());
    assert!(s.user_info("ann").unwrap().is_none());
    assert!(matches!(
        s.put_template("ann", b"ct", 1, false),
        Err(StoreError::UnknownUser)
    ));
    s.put_keys("ann", "0a0b", b"pk-ann", Some(b"rk-ann"), None, 10)
        .unwrap();
    assert!(matches!(
        s.put_keys("ann", "0a0b", b"other", None, None, 10),
        Err(StoreError::UserExists)
    ));
    let rec = s.load_user("ann").unwrap().unwrap();
    assert_eq!(
        (
            rec.params_id.as_str(),
            rec.public_key.as_slice(),
            rec.relin_key.as_deref()
        ),
        ("0a0b", &b"pk-ann"[..], Some(&b"rk-ann"[..]))
    );
    assert!(rec.template.is_none() && rec.key_epoch.is_none() && !rec.template_checked);
    // Every byte value, and a template replaced in place.
    let all: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
    s.put_template("ann", b"first", 3, false).unwrap();
    s.put_template("ann", &all, 32, true).unwrap();
    let rec2 = s.load_user("ann").unwrap().unwrap();
    assert_eq!(rec2.id, rec.id);
    assert_eq!(rec2.template, Some((all.clone(), 32)));
    assert!(rec2.template_checked);
    let info = s.user_info("ann").unwrap().unwrap();
    assert_eq!(
        (
            info.public_key_bytes,
            info.relin_key_bytes,
            info.template_count,
            info.template_bytes,
            info.verifications,
            info.key_epoch
        ),
        (6, Some(6), Some(32), Some(70_000), 0, None)
    );
    // The decider's keys: epoch and statement kept; a rotation replaces the
    // keys and drops the template, keeping the id.
    let key = DeciderKey {
        epoch: 7,
        statement: STATEMENT,
    };
    s.put_keys("bob", "0a0b", b"pk-bob", None, Some(key), 10)
        .unwrap();
    s.put_template("bob", b"t", 1, true).unwrap();
    let bob = s.load_user("bob").unwrap().unwrap();
    assert_eq!(
        (bob.key_epoch, bob.key_statement.as_deref()),
        (Some(7), Some(STATEMENT))
    );
    assert_ne!(bob.id, rec.id);
    let next = DeciderKey {
        epoch: 8,
        statement: "s2",
    };
    s.rotate_keys("bob", b"pk-bob-2", Some(b"rk"), next)
        .unwrap();
    let bob2 = s.load_user("bob").unwrap().unwrap();
    assert_eq!(
        (
            bob2.id,
            bob2.public_key.as_slice(),
            bob2.key_epoch,
            bob2.template.is_none()
        ),
        (bob.id, &b"pk-bob-2"[..], Some(8), true)
    );
    assert!(matches!(
        s.rotate_keys("nobody", b"pk", None, next),
        Err(StoreError::UnknownUser)
    ));
}

fn registration_is_refused_past_max_users(place: Place) {
    let s = place.open();
    for u in ["a", "b", "c"] {
        s.put_keys(u, "00", b"pk", None, None, 3).unwrap();
    }
    let e = s.put_keys("d", "00", b"pk", None, None, 3).unwrap_err();
    assert!(matches!(e, StoreError::TooManyUsers { max: 3 }), "{e}");
    assert!(s.load_user("d").unwrap().is_none());
    // A quota raised later lets it in.
    s.put_keys("d", "00", b"pk", None, None, 4).unwrap();
}

fn deletion_removes_everything_and_namesakes_start_afresh(place: Place) {
    let store = Arc::new(place.open());
    store.put_keys("ann", "00", b"pk", None, None, 10).unwrap();
    store.put_template("ann", b"t", 1, false).unwrap();
    let id = store.load_user("ann").unwrap().unwrap().id;
    for _ in 0..3 {
        store.record_audit(row("ann"), id).unwrap();
    }
    assert_eq!(store.user_info("ann").unwrap().unwrap().verifications, 3);
    assert!(store.delete_user("ann").unwrap());
    assert!(!store.delete_user("ann").unwrap());
    assert!(store.load_user("ann").unwrap().is_none());
    // The name again: a new id, none of the old rows; a row recorded for
    // the old id after the deletion is dropped.
    store.put_keys("ann", "00", b"pk2", None, None, 10).unwrap();
    let again = store.load_user("ann").unwrap().unwrap();
    assert_ne!(again.id, id);
    assert!(again.template.is_none());
    store.record_audit(row("ann"), id).unwrap();
    store.flush_audit().unwrap();
    assert_eq!(store.user_info("ann").unwrap().unwrap().verifications, 0);
    store.record_audit(row("ann"), again.id).unwrap();
    assert_eq!(store.user_info("ann").unwrap().unwrap().verifications, 1);
}

fn galleries_and_their_keys(place: Place) {
    let s = place.open();
    for (g, seq) in [("b", 0), ("a", 1), ("a", 0), ("b", 1)] {
        let ct = format!("{g}{seq}").into_bytes();
        s.insert_gallery_template(g, seq, &ct, 32).unwrap();
    }
    assert!(s.insert_gallery_template("a", 0, b"dup", 1).is_err());
    let order: Vec<(String, i64)> = s
        .gallery_rows()
        .unwrap()
        .into_iter()
        .map(|r| (r.gallery, r.seq))
        .collect();
    assert_eq!(
        order,
        [
            ("a".into(), 0),
            ("a".into(), 1),
            ("b".into(), 0),
            ("b".into(), 1)
        ]
    );
    // An erasure mask with its top bit set reads back as written.
    let mask = 1u64 << 63 | 5;
    assert!(s
        .erase_gallery_template("a", 1, b"a1-erased", mask)
        .unwrap());
    assert!(!s.erase_gallery_template("a", 9, b"x", 1).unwrap());
    let a1 = s
        .gallery_rows()
        .unwrap()
        .into_iter()
        .find(|r| r.gallery == "a" && r.seq == 1)
        .unwrap();
    assert_eq!(
        (a1.erased, a1.ciphertext.as_slice(), a1.count),
        (mask, &b"a1-erased"[..], 32)
    );
    // A reader that stops early gets its error back.
    let mut seen = 0;
    let stopped = s
        .for_each_gallery_row(|_| {
            seen += 1;
            if seen == 2 {
                Err("enough")
            } else {
                Ok(())
            }
        })
        .unwrap();
    assert_eq!((stopped, seen), (Err("enough"), 2));
    let key = GalleryKeyRow {
        gallery: "a".into(),
        epoch: 3,
        keys: vec![0, 255, 7],
        statement: STATEMENT.into(),
    };
    assert!(s.insert_gallery_key(&key).unwrap());
    assert!(!s
        .insert_gallery_key(&GalleryKeyRow {
            epoch: 4,
            ..key.clone()
        })
        .unwrap());
    assert_eq!(s.gallery_keys().unwrap(), [key]);
    assert!(s.delete_gallery("a").unwrap());
    assert!(!s.delete_gallery("a").unwrap());
    assert!(s.gallery_keys().unwrap().is_empty());
    assert_eq!(s.gallery_rows().unwrap().len(), 2);
}

fn failures_and_used_verdicts(place: Place) {
    let s = place.open();
    for count in 1..=3 {
        assert_eq!(s.add_failure("ann", 10 * count as i64).unwrap(), count);
    }
    s.add_failure("bob", 5).unwrap();
    s.clear_failures("bob").unwrap();
    s.clear_failures("nobody").unwrap();
    let ann = Failures {
        user: "ann".into(),
        count: 3,
        last_ms: 30,
    };
    assert_eq!(s.load_failures().unwrap(), std::slice::from_ref(&ann));
    assert_eq!(s.failures_of("ann").unwrap(), Some(ann));
    assert_eq!(s.failures_of("bob").unwrap(), None);
    assert!(s.use_verdict("n1", 100, 50).unwrap());
    assert!(!s.use_verdict("n1", 100, 60).unwrap());
    assert!(s.use_verdict("n2", 100, 60).unwrap());
    // Past its expiry the nonce is dropped, and free again.
    assert!(s.use_verdict("n1", 300, 100).unwrap());
}

fn row(user: &str) -> AuditRow {
    AuditRow {
        user: user.into(),
        ts: blindmatch::server::store::now_millis(),
        outcome: "ok".into(),
        duration_us: 42,
    }
}

fn audit_rows_are_counted_pruned_and_survive_reopening(place: Place) {
    {
        let store = Arc::new(place.open());
        store.put_keys("ann", "00", b"pk", None, None, 10).unwrap();
        let id = store.load_user("ann").unwrap().unwrap().id;
        for ts in [1_000, 2_000, 3_000] {
            store
                .record_audit(AuditRow { ts, ..row("ann") }, id)
                .unwrap();
        }
        store.record_audit(row("ann"), id).unwrap();
        // Counted at once, flushed or not.
        assert_eq!(store.user_info("ann").unwrap().unwrap().verifications, 4);
        store.flush_audit().unwrap();
        assert_eq!(store.prune_audit(2_500).unwrap(), 2);
        assert_eq!(store.prune_audit(2_500).unwrap(), 0);
        assert_eq!(store.user_info("ann").unwrap().unwrap().verifications, 2);
        store.record_audit(row("ann"), id).unwrap();
    }
    let store = place.open();
    assert_eq!(store.user_info("ann").unwrap().unwrap().verifications, 3);
}

fn what_was_written_survives_reopening(place: Place) {
    {
        let s = place.open();
        s.put_keys("ann", "00", b"pk", None, None, 10).unwrap();
        s.put_template("ann", b"template", 2, true).unwrap();
        s.insert_gallery_template("g", 0, b"ct", 32).unwrap();
        s.add_failure("ann", 9).unwrap();
        assert!(s.use_verdict("n", u64::MAX >> 2, 1).unwrap());
    }
    let s = place.open();
    assert_eq!(s.schema_version().unwrap(), SCHEMA_VERSION);
    let rec = s.load_user("ann").unwrap().unwrap();
    assert_eq!(rec.template, Some((b"template".to_vec(), 2)));
    assert_eq!(s.gallery_rows().unwrap().len(), 1);
    assert_eq!(s.load_failures().unwrap().len(), 1);
    assert!(!s.use_verdict("n", u64::MAX >> 2, 2).unwrap());
}

/// Eight registrations of one name at once (eight connections to
/// PostgreSQL; SQLite serializes them in its one connection): one is
/// stored, the others are told the user exists.
fn concurrent_registrations_of_one_name_store_one(place: Place) {
    let s = Arc::new(place.open());
    let results: Vec<Result<(), StoreError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8u8)
            .map(|i| {
                let s = s.clone();
                scope.spawn(move || s.put_keys("ann", "00", &[i], None, None, 10))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let ok = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(ok, 1, "{results:?}");
    assert!(results
        .iter()
        .all(|r| matches!(r, Ok(()) | Err(StoreError::UserExists))));
    let pk = s.load_user("ann").unwrap().unwrap().public_key;
    assert_eq!(pk.len(), 1);
}

/// Forty failures of one user counted by eight threads at once (eight
/// connections: replicas): the count is forty.
fn failures_counted_at_once_are_all_counted(place: Place) {
    let s = Arc::new(place.open());
    std::thread::scope(|scope| {
        for _ in 0..8 {
            let s = s.clone();
            scope.spawn(move || {
                for i in 0..5 {
                    s.add_failure("ann", i).unwrap();
                }
            });
        }
    });
    assert_eq!(s.failures_of("ann").unwrap().unwrap().count, 40);
}

fn token(kind: &'static str, d: &'static [u8; 32], user: &'static str) -> NewToken<'static> {
    let now_ms = blindmatch::server::store::now_millis();
    NewToken {
        kind,
        digest: d,
        user,
        value: "rp.example",
        expires_ms: now_ms + 60_000,
        now_ms,
        capacity: 100,
        per_user: 4,
    }
}

fn one_time_tokens_are_taken_once_by_their_user(place: Place) {
    let s = place.open();
    let now = || blindmatch::server::store::now_millis();
    assert!(s.issue_token(&token("challenge", &[1; 32], "ann")).unwrap());
    assert!(s.peek_token("challenge", &[1; 32], "ann", now()).unwrap());
    assert!(!s.peek_token("challenge", &[1; 32], "bob", now()).unwrap());
    assert!(!s.peek_token("ticket", &[1; 32], "ann", now()).unwrap());
    assert_eq!(
        s.take_token("challenge", &[1; 32], "ann", now()).unwrap(),
        Some("rp.example".into())
    );
    assert_eq!(
        s.take_token("challenge", &[1; 32], "ann", now()).unwrap(),
        None
    );
    // Another user's attempt burns it; so does a late one.
    assert!(s.issue_token(&token("challenge", &[2; 32], "ann")).unwrap());
    assert_eq!(
        s.take_token("challenge", &[2; 32], "bob", now()).unwrap(),
        None
    );
    assert_eq!(
        s.take_token("challenge", &[2; 32], "ann", now()).unwrap(),
        None
    );
    assert!(s.issue_token(&token("ticket", &[3; 32], "ann")).unwrap());
    let late = now() + 120_000;
    assert!(!s.peek_token("ticket", &[3; 32], "ann", late).unwrap());
    assert_eq!(s.take_token("ticket", &[3; 32], "ann", late).unwrap(), None);
    // Eight takers of one token at once: one has it.
    assert!(s.issue_token(&token("ticket", &[4; 32], "ann")).unwrap());
    let s = Arc::new(s);
    let got: usize = std::thread::scope(|scope| {
        let hs: Vec<_> = (0..8)
            .map(|_| {
                let s = s.clone();
                scope.spawn(move || s.take_token("ticket", &[4; 32], "ann", now()).unwrap())
            })
            .collect();
        hs.into_iter().filter_map(|h| h.join().unwrap()).count()
    });
    assert_eq!(got, 1);
}

fn tokens_are_bounded_per_user_and_in_all(place: Place) {
    let s = place.open();
    let now = || blindmatch::server::store::now_millis();
    static D: [[u8; 32]; 6] = [[10; 32], [11; 32], [12; 32], [13; 32], [14; 32], [15; 32]];
    let t = |i: usize, user: &'static str| NewToken {
        capacity: 3,
        per_user: 2,
        // Later tokens expire later: the oldest is the first.
        expires_ms: now() + 60_000 + i as i64,
        ..token("ticket", &D[i], user)
    };
    assert!(s.issue_token(&t(0, "ann")).unwrap());
    assert!(s.issue_token(&t(1, "ann")).unwrap());
    assert!(s.issue_token(&t(2, "ann")).unwrap());
    assert!(
        !s.peek_token("ticket", &D[0], "ann", now()).unwrap(),
        "the oldest went"
    );
    assert!(s.peek_token("ticket", &D[1], "ann", now()).unwrap());
    assert!(s.issue_token(&t(3, "bob")).unwrap());
    assert!(!s.issue_token(&t(4, "carol")).unwrap(), "full");
    assert!(!s.peek_token("ticket", &D[4], "carol", now()).unwrap());
    // Another kind has its own count.
    assert!(s
        .issue_token(&NewToken {
            capacity: 3,
            ..token("challenge", &D[5], "carol")
        })
        .unwrap());
}

fn a_users_revision_moves_with_every_write(place: Place) {
    let s = place.open();
    assert_eq!(s.user_rev("ann").unwrap(), None);
    s.put_keys("ann", "00", b"pk", None, None, 10).unwrap();
    let (id, r0) = s.user_rev("ann").unwrap().unwrap();
    assert_eq!(s.load_user("ann").unwrap().unwrap().rev, r0);
    s.put_template("ann", b"t1", 1, false).unwrap();
    let (_, r1) = s.user_rev("ann").unwrap().unwrap();
    s.put_template("ann", b"t2", 1, false).unwrap();
    let (_, r2) = s.user_rev("ann").unwrap().unwrap();
    let key = DeciderKey {
        epoch: 1,
        statement: "s",
    };
    s.rotate_keys("ann", b"pk2", None, key).unwrap();
    let (_, r3) = s.user_rev("ann").unwrap().unwrap();
    assert!(r0 < r1 && r1 < r2 && r2 < r3, "{r0} {r1} {r2} {r3}");
    assert_eq!(s.load_user("ann").unwrap().unwrap().rev, r3);
    // A namesake is told apart by its id.
    s.delete_user("ann").unwrap();
    s.put_keys("ann", "00", b"pk", None, None, 10).unwrap();
    assert_ne!(s.user_rev("ann").unwrap().unwrap().0, id);
}

/// Replicas starting together on a new database: each migration step is
/// applied once (under the advisory lock), and all of them open it.
#[test]
fn postgres_replicas_migrate_a_new_database_once() {
    let url = postgres::shared().database("migrate");
    let stores: Vec<Store> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let url = url.clone();
                scope.spawn(move || {
                    Store::connect(&DbTarget::Postgres(url), std::time::Duration::from_secs(10))
                        .unwrap()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for s in &stores {
        assert_eq!(s.schema_version().unwrap(), SCHEMA_VERSION);
    }
    let name = url.rsplit('/').next().unwrap();
    assert_eq!(
        postgres::shared().psql(name, "SELECT count(*) FROM schema_version"),
        "1"
    );
}

/// A replica catches up on a gallery a page of rows a store call (so that
/// no call outlasts the store's timeout however far behind it is): every
/// changed row once, at its newest revision, by sequence number, whatever
/// the page, and one call returns at most a page.
#[test]
fn gallery_changes_are_read_a_page_at_a_time() {
    use blindmatch::server::mirror::changes_since;
    let url = postgres::shared().database("change_pages");
    let store =
        Store::connect(&DbTarget::Postgres(url), std::time::Duration::from_secs(10)).unwrap();
    let Store::Postgres(pg) = &store else {
        unreachable!("connected to PostgreSQL")
    };
    for i in 0..10u8 {
        pg.append_gallery_row("g", &[i], 1, 1_000, 10).unwrap();
    }
    // Row 2 rewritten after the others: its revision moves past theirs.
    let two = pg.gallery_row("g", 2).unwrap().unwrap();
    assert!(pg.replace_gallery_row("g", 2, two.rev, b"two", 1).unwrap());
    let rows = |c: &blindmatch::server::store::postgres::shards::ShardChanges| {
        c.rows
            .iter()
            .map(|r| (r.seq, r.ciphertext.clone(), r.erased, r.rev))
            .collect::<Vec<_>>()
    };
    let whole = changes_since(pg, "g", 0, 1, 0, 1_000).unwrap();
    assert_eq!(whole.rows.len(), 10);
    assert_eq!(whole.rows[2].ciphertext, b"two");
    for page in [1, 2, 3, 9, 10, 11] {
        let paged = changes_since(pg, "g", 0, 1, 0, page).unwrap();
        assert_eq!(rows(&paged), rows(&whole), "page {page}");
        assert_eq!((paged.rev, paged.deleted_at), (whole.rev, whole.deleted_at));
    }
    assert_eq!(pg.shard_changes("g", 0, 1, 0, 0, 3).unwrap().rows.len(), 3);
    // Shard 1 of 2 (the odd rows), and only what changed after a revision.
    let odd = changes_since(pg, "g", 1, 2, 0, 2).unwrap();
    let seqs: Vec<i64> = odd.rows.iter().map(|r| r.seq).collect();
    assert_eq!(seqs, [1, 3, 5, 7, 9]);
    let after = whole.rows[7].rev;
    let late = changes_since(pg, "g", 0, 1, after, 1).unwrap();
    let seqs: Vec<i64> = late.rows.iter().map(|r| r.seq).collect();
    assert_eq!(seqs, [2, 8, 9]);
}
