//! Benchmarks of the PostgreSQL store, replicas and sharded galleries (not
//! tests: `#[ignore]`d, run by scripts/bench.sh in a release build with
//! `--ignored --nocapture`; each prints `scale:` lines).
//!
//! * verifications per second through one SQLite server, one PostgreSQL
//!   replica and two PostgreSQL replicas, and the PostgreSQL store's cost
//!   per verification next to SQLite's (one client, sequential);
//! * identify over a gallery (`BLINDMATCH_SCALE_TEMPLATES`, 1,000,000 by
//!   default) in one process, and split over two shards on two replicas.

use std::time::{Duration, Instant};

use blindmatch::server::store::{AuditRow, DbTarget, Store};

use crate::harness::*;
use crate::postgres;

fn free_addr() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().to_string()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// One verification, its reply read whole.
fn verify(agent: &ureq::Agent, url: &str, probe: &[u8]) {
    let r = agent
        .post(url)
        .set("content-type", "application/octet-stream")
        .send_bytes(probe)
        .unwrap();
    let mut body = Vec::new();
    std::io::Read::read_to_end(&mut r.into_reader(), &mut body).unwrap();
}

/// Sequential verifications through `urls` in turn: the mean latency (ms).
fn sequential(urls: &[String], user: &str, probes: &[Vec<u8>], n: usize) -> f64 {
    let agent = ureq::AgentBuilder::new().build();
    let mut total = 0.0;
    for i in 0..n + 20 {
        let url = format!("{}/v1/users/{user}/verify", urls[i % urls.len()]);
        let t = Instant::now();
        verify(&agent, &url, &probes[i % probes.len()]);
        if i >= 20 {
            total += t.elapsed().as_secs_f64() * 1e3;
        }
    }
    total / n as f64
}

/// `clients` concurrent clients, each through `urls[c % urls.len()]`:
/// verifications per second.
fn concurrent(urls: &[String], user: &str, probes: &[Vec<u8>], clients: usize, n: usize) -> f64 {
    let start = Instant::now();
    std::thread::scope(|s| {
        for c in 0..clients {
            let url = format!("{}/v1/users/{user}/verify", urls[c % urls.len()]);
            s.spawn(move || {
                let agent = ureq::AgentBuilder::new().build();
                for i in (c..n).step_by(clients) {
                    verify(&agent, &url, &probes[i % probes.len()]);
                }
            });
        }
    });
    n as f64 / start.elapsed().as_secs_f64()
}

#[test]
#[ignore = "a benchmark: scripts/bench.sh runs it"]
fn scale_verifications_on_sqlite_and_postgres_replicas() {
    let _alone = alone();
    let n: usize = std::env::var("BLINDMATCH_SCALE_VERIFICATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400);
    let dir = temp_dir("scale-verify");
    let pg_db = postgres::shared().database("scale_verify");
    // The same without waiting for each commit's WAL flush: what the
    // audit row's commit costs (the guarantees assume it on).
    let pg = postgres::shared();
    let lax_db = pg.database("scale_verify_lax");
    let lax_name = lax_db.rsplit('/').next().unwrap().to_string();
    pg.psql(
        "postgres",
        &format!("ALTER DATABASE {lax_name} SET synchronous_commit = off"),
    );
    let sqlite = Server::start(&dir, &[]);
    let a = Server::start_on(&dir, &pg_db, "a.log", &[]);
    let b = Server::start_on(&dir, &pg_db, "b.log", &[]);
    let lax = Server::start_on(&dir, &lax_db, "lax.log", &[]);
    let mut id = Identity::new(71);
    let mut rng = Prng::from_seed([72; 32]);
    let samples: Vec<Vec<f32>> = (0..8).map(|_| embedding(&mut rng)).collect();
    let (keys, template) = (id.keys_body(true), id.template(&samples));
    for url in [&sqlite.url, &a.url, &lax.url] {
        let r = call("PUT", &format!("{url}/v1/users/bench/keys"), Some(&keys));
        assert_eq!(r.status, 201);
        let r = call(
            "PUT",
            &format!("{url}/v1/users/bench/template"),
            Some(&template),
        );
        assert_eq!(r.status, 204);
    }
    let probes: Vec<Vec<u8>> = (0..8).map(|_| id.probe(&embedding(&mut rng))).collect();
    let configs: [(&str, Vec<String>); 4] = [
        ("sqlite, one server", vec![sqlite.url.clone()]),
        ("postgres, one replica", vec![a.url.clone()]),
        ("postgres, two replicas", vec![a.url.clone(), b.url.clone()]),
        (
            "postgres, one replica, synchronous_commit = off",
            vec![lax.url.clone()],
        ),
    ];
    let mut seq = Vec::new();
    for (name, urls) in &configs {
        let ms = sequential(urls, "bench", &probes, n / 2);
        let rate = concurrent(urls, "bench", &probes, 4, n);
        eprintln!(
            "scale: verify {name}: {rate:.1} verifications/s from 4 clients; one client {ms:.3} ms each"
        );
        seq.push(ms);
    }
    // The two store calls a verification makes beside the matching, timed
    // alone on the same database: the cached user's revision, and its
    // audit row.
    drop((a, b, lax));
    let store =
        Store::connect(&DbTarget::Postgres(pg_db.clone()), Duration::from_secs(10)).unwrap();
    let calls = 500;
    let t = Instant::now();
    for _ in 0..calls {
        store.user_rev("bench").unwrap().unwrap();
    }
    let rev_us = t.elapsed().as_secs_f64() * 1e6 / calls as f64;
    let (id_, _) = store.user_rev("bench").unwrap().unwrap();
    let t = Instant::now();
    for _ in 0..calls {
        let row = AuditRow {
            user: "bench".into(),
            ts: 0,
            outcome: "ok".into(),
            duration_us: 1,
        };
        store.record_audit(row, id_).unwrap();
    }
    let audit_us = t.elapsed().as_secs_f64() * 1e6 / calls as f64;
    eprintln!(
        "scale: postgres store calls of a verification, alone: the revision check {rev_us:.0} us, the audit row {audit_us:.0} us"
    );
    // What an unsharded gallery's catch-up costs a replica before each
    // answer when nothing was written since its last look.
    let Store::Postgres(pg) = &store else {
        unreachable!("connected to PostgreSQL")
    };
    pg.append_gallery_row("bench", b"row", 1, 1, 1).unwrap();
    let rev = pg.gallery_rev("bench").unwrap().unwrap();
    let t = Instant::now();
    for _ in 0..calls {
        assert!(pg
            .shard_changes("bench", 0, 1, rev, rev, 1024)
            .unwrap()
            .rows
            .is_empty());
    }
    let catch_up_us = t.elapsed().as_secs_f64() * 1e6 / calls as f64;
    eprintln!(
        "scale: postgres gallery catch-up before an answer, nothing new: {catch_up_us:.0} us (one prepared statement)"
    );
    eprintln!(
        "scale: postgres store overhead per verification: {:.3} ms ({:.3} ms on postgres, {:.3} ms on sqlite, one client); of it the audit commit's WAL flush: {:.3} ms",
        seq[1] - seq[0],
        seq[1],
        seq[0],
        seq[1] - seq[3]
    );
}

/// A sharded replica.
fn replica(dir: &std::path::Path, db: &str, log: &str, sk: &str, threads: &str) -> Server {
    let addr = free_addr();
    let advertise = format!("http://{addr}");
    Server::start_at(
        dir,
        db,
        log,
        &addr,
        &[
            "--decider",
            "local",
            "--service-key",
            sk,
            "--shards",
            "2",
            "--advertise",
            &advertise,
            "--max-gallery-templates",
            "100000000",
            "--max-gallery-bytes",
            "100000000000",
            "--threads",
            threads,
        ],
    )
}

fn held(url: &str) -> usize {
    let r = call("GET", &format!("{url}/healthz"), None);
    r.json()["shards"].as_array().map_or(0, |a| a.len())
}

/// Identifications of `probes` through `url`: the median (ms) and the
/// answers.
fn identify_ms(url: &str, probes: &[Vec<f32>], rounds: usize) -> (f64, Vec<serde_json::Value>) {
    let mut times = Vec::new();
    let mut answers = Vec::new();
    for i in 0..rounds + 3 {
        let body = serde_json::to_vec(&serde_json::json!({
            "embedding": probes[i % probes.len()], "top_k": 5
        }))
        .unwrap();
        let t = Instant::now();
        let r = call_json(&format!("{url}/v1/galleries/big/identify"), &body);
        let ms = t.elapsed().as_secs_f64() * 1e3;
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        if i >= 3 {
            times.push(ms);
        }
        if i < probes.len() {
            answers.push(r.json()["matches"].clone());
        }
    }
    (median(times), answers)
}

#[test]
#[ignore = "a benchmark: scripts/bench.sh runs it"]
fn scale_identify_one_process_and_two_shards() {
    let _alone = alone();
    let templates: usize = std::env::var("BLINDMATCH_SCALE_TEMPLATES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let cts = templates.div_ceil(32);
    let dir = temp_dir("scale-identify");
    let (sk, pk) = service_key(&dir);
    let sk = sk.to_str().unwrap().to_string();
    let db = postgres::shared().database("scale_identify");
    let a = replica(&dir, &db, "a.log", &sk, "2");

    // The gallery, through A: two threads encrypting and posting.
    let params = Params::auth4096();
    let q = Quantizer::new(&params, DIM).unwrap();
    let started = Instant::now();
    let people: Vec<Vec<f32>> = {
        let mut rng = Prng::from_seed([81; 32]);
        (0..32).map(|_| embedding(&mut rng)).collect()
    };
    std::thread::scope(|s| {
        for t in 0..2 {
            let (pk, q, url, people) = (&pk, &q, &a.url, &people);
            s.spawn(move || {
                let mut rng = Prng::from_seed([82 + t as u8; 32]);
                let agent = ureq::AgentBuilder::new().build();
                for c in (t..cts).step_by(2) {
                    // Ciphertext 0 holds the probes' people; the others
                    // random faces.
                    let chunk: Vec<Vec<f32>> = if c == 0 {
                        people.clone()
                    } else {
                        (0..32).map(|_| embedding(&mut rng)).collect()
                    };
                    let refs: Vec<&[f32]> = chunk.iter().map(|e| e.as_slice()).collect();
                    let ct = client::encrypt_templates_public(pk, q, &refs, &mut rng)
                        .unwrap()
                        .to_bytes();
                    let mut tries = 0;
                    loop {
                        let r = agent
                            .post(&format!("{url}/v1/galleries/big/templates?count=32"))
                            .set("content-type", "application/octet-stream")
                            .send_bytes(&ct);
                        match r {
                            Ok(_) => break,
                            Err(e) if tries < 5 => {
                                tries += 1;
                                eprintln!("append retried: {e}");
                            }
                            Err(e) => panic!("append: {e}"),
                        }
                    }
                }
            });
        }
    });
    eprintln!(
        "scale: {templates} templates ({cts} ciphertexts) stored through one replica in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let mut rng = Prng::from_seed([83; 32]);
    let probes: Vec<Vec<f32>> = (0..5).map(|i| near(&people[i * 3], &mut rng)).collect();
    let rounds = 15;

    // One process holding the whole gallery (not sharded, the same
    // database), two threads.
    let loaded = Instant::now();
    let single = Server::start_on(
        &dir,
        &db,
        "single.log",
        &[
            "--decider",
            "local",
            "--service-key",
            &sk,
            "--max-gallery-templates",
            "100000000",
            "--max-gallery-bytes",
            "100000000000",
        ],
    );
    let single_load = loaded.elapsed().as_secs_f64();
    let (one, want) = identify_ms(&single.url, &probes, rounds);
    drop(single);
    eprintln!(
        "scale: identify {templates} templates, one process, 2 threads: {one:.1} ms (median of {rounds}); loaded in {single_load:.1} s"
    );

    // Two shards on two replicas (A holds both until B joins).
    for threads in ["2", "1"] {
        let (a2, b) = if threads == "2" {
            (None, replica(&dir, &db, "b.log", &sk, threads))
        } else {
            (
                Some(replica(&dir, &db, "a1.log", &sk, threads)),
                replica(&dir, &db, "b1.log", &sk, threads),
            )
        };
        let front = a2.as_ref().map_or(&a.url, |s| &s.url).clone();
        if threads == "1" {
            a.kill();
        }
        let settle = Instant::now();
        while held(&front) != 1 || held(&b.url) != 1 {
            assert!(
                settle.elapsed() < Duration::from_secs(600),
                "shards never settled"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        let settled = settle.elapsed().as_secs_f64();
        let (ms, got) = identify_ms(&front, &probes, rounds);
        assert_eq!(got, want, "two shards answered otherwise than one process");
        eprintln!(
            "scale: identify {templates} templates, two shards on two replicas, {threads} thread(s) each: {ms:.1} ms (median of {rounds}; one process: {one:.1} ms, ratio {:.2}); shards settled in {settled:.1} s",
            one / ms
        );
        if threads == "2" {
            // What one shard's call moves: the request and its answer.
            let body = serde_json::to_vec(&serde_json::json!({
                "embedding": probes[0], "top_k": 5, "nonce": "0123456789abcdef0123456789abcdef", "rev": 0
            }))
            .unwrap();
            let shard = call("GET", &format!("{}/healthz", b.url), None).json()["shards"][0]
                .as_u64()
                .unwrap();
            let r = call_json(
                &format!("{}/v1/galleries/big/shards/{shard}/identify", b.url),
                &body,
            );
            assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
            eprintln!(
                "scale: network per identification and shard (top_k 5): {} B request body, {} B answer body",
                body.len(),
                r.body.len()
            );
        }
        drop(b);
        drop(a2);
    }
}
