//! Galleries sharded over two replicas on one PostgreSQL database
//! (`serve --shards`): an identification through either replica is the
//! single process's answer on the same gallery, exactly, and signed; after
//! one replica dies, the other answers with the full gallery once the
//! dead one's lease has lapsed.

use std::time::{Duration, Instant};

use blindmatch::server::verdict::PublicKeys;

use crate::harness::*;
use crate::postgres;

const SHARDS: &str = "4";
const LEASE_MS: u64 = 1500;

fn free_addr() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().to_string()
}

/// A sharded replica on `db` at `addr`.
fn replica(dir: &std::path::Path, db: &str, log: &str, addr: &str, sk: &str) -> Server {
    let advertise = format!("http://{addr}");
    let lease = LEASE_MS.to_string();
    Server::start_at(
        dir,
        db,
        log,
        addr,
        &[
            "--decider",
            "local",
            "--service-key",
            sk,
            "--shards",
            SHARDS,
            "--advertise",
            &advertise,
            "--lease-ms",
            &lease,
        ],
    )
}

/// The shards a replica holds (its `/healthz`).
fn held(url: &str) -> Vec<u64> {
    let r = call("GET", &format!("{url}/healthz"), None);
    r.json()["shards"]
        .as_array()
        .map(|a| a.iter().map(|s| s.as_u64().unwrap()).collect())
        .unwrap_or_default()
}

/// `(index, score)` of an identification's matches, and its reply.
fn identify(url: &str, probe: &[f32], top_k: usize) -> (Vec<(u64, i64)>, Resp) {
    let body =
        serde_json::to_vec(&serde_json::json!({"embedding": probe, "top_k": top_k})).unwrap();
    let r = call_json(&format!("{url}/v1/galleries/staff/identify"), &body);
    let m = if r.status == 200 {
        r.json()["matches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| (m["index"].as_u64().unwrap(), m["score"].as_i64().unwrap()))
            .collect()
    } else {
        Vec::new()
    };
    (m, r)
}

/// The merged identification's claims, checked against the replicas'
/// published keys.
fn merged_claims(url: &str, r: &Resp) -> serde_json::Value {
    let keys = call("GET", &format!("{url}/v1/cluster/keys"), None);
    assert_eq!(keys.status, 200);
    let keys = PublicKeys::from_jwks(&keys.body).unwrap();
    let jws = r.json()["identification"].as_str().unwrap().to_string();
    keys.verify_typed(&jws, "blindmatch-sharded-identify+jwt")
        .expect("signed by a live replica's key")
}

#[test]
fn sharded_identify_equals_one_process_and_survives_a_replica() {
    let _machine = shared();
    let dir = temp_dir("shards");
    let (sk, pk) = service_key(&dir);
    let sk = sk.to_str().unwrap().to_string();
    let db = postgres::shared().database("shards");
    let a = replica(&dir, &db, "a.log", &free_addr(), &sk);
    let addr_b = free_addr();
    let b = replica(&dir, &db, "b.log", &addr_b, &sk);
    let single = Server::start_on(
        &dir,
        &dir.join("single.db").display().to_string(),
        "single.log",
        &["--decider", "local", "--service-key", &sk],
    );

    // 11 ciphertexts (the last ones partly full), appended alternately
    // through A and B and the same bytes to the single process. Person 0
    // is in the gallery twice (indices 0 and 33, shards 0 and 1): a tie
    // that only the index breaks.
    let params = Params::auth4096();
    let q = Quantizer::new(&params, DIM).unwrap();
    let mut rng = Prng::from_seed([61; 32]);
    let mut people: Vec<Vec<f32>> = (0..327).map(|_| embedding(&mut rng)).collect();
    people[33] = people[0].clone();
    let mut at = 0;
    let mut seq = 0;
    while at < people.len() {
        let n = if seq < 9 { 32 } else { 23 - 7 * (seq - 9) };
        let chunk: Vec<&[f32]> = people[at..at + n].iter().map(|e| e.as_slice()).collect();
        let ct = client::encrypt_templates_public(&pk, &q, &chunk, &mut rng)
            .unwrap()
            .to_bytes();
        let via = if seq % 2 == 0 { &a } else { &b };
        for url in [&via.url, &single.url] {
            let r = call(
                "POST",
                &format!("{url}/v1/galleries/staff/templates?count={n}"),
                Some(&ct),
            );
            assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
            assert_eq!(r.json()["first_index"], seq * 32);
        }
        at += n;
        seq += 1;
    }
    assert_eq!(seq, 11);

    // The shards settle two and two: B takes its half, and A lets go of
    // it (until then both list the shards B took).
    let settled = Instant::now();
    let (ha, hb) = loop {
        let (ha, hb) = (held(&a.url), held(&b.url));
        if ha.len() + hb.len() == 4 && !hb.is_empty() && !ha.is_empty() {
            break (ha, hb);
        }
        assert!(
            settled.elapsed() < Duration::from_secs(20),
            "shards never settled: A holds {ha:?}, B {hb:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!((ha.len(), hb.len()), (2, 2), "A holds {ha:?}, B {hb:?}");

    // Through either replica: the single process's answer, exactly.
    let mut probes: Vec<Vec<f32>> = [0usize, 5, 40, 101, 299, 326]
        .iter()
        .map(|&i| near(&people[i], &mut rng))
        .collect();
    probes.push(embedding(&mut rng));
    for probe in &probes {
        for top_k in [1, 5, 100] {
            let (want, r) = identify(&single.url, probe, top_k);
            assert_eq!(r.status, 200);
            assert_eq!(want.len(), top_k);
            for via in [&a, &b] {
                let (got, r) = identify(&via.url, probe, top_k);
                assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
                assert_eq!(got, want, "sharded through {}", via.url);
                let claims = merged_claims(&via.url, &r);
                assert_eq!(claims["iss"], via.url.as_str());
                assert_eq!(claims["sub"], "staff");
                assert_eq!(claims["results"].as_array().unwrap().len(), 4);
                let signed: Vec<(u64, i64)> = claims["matches"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|m| (m["index"].as_u64().unwrap(), m["score"].as_i64().unwrap()))
                    .collect();
                assert_eq!(signed, want, "the signed list is the answer");
            }
        }
    }
    // The tie: person 0 at 0 and 33, same score, index first.
    let (m, _) = identify(&a.url, &people[0], 2);
    assert_eq!((m[0].0, m[1].0), (0, 33));
    assert_eq!(m[0].1, m[1].1);

    // An erasure through B is what the next identification through A sees
    // (template 37 is in shard 1, ciphertext 1).
    for url in [&b.url, &single.url] {
        let r = call(
            "DELETE",
            &format!("{url}/v1/galleries/staff/templates/37"),
            None,
        );
        assert_eq!(r.status, 204, "{}", String::from_utf8_lossy(&r.body));
    }
    let probe = near(&people[37], &mut rng);
    let (want, _) = identify(&single.url, &probe, 5);
    let (got, _) = identify(&a.url, &probe, 5);
    assert_eq!(got, want);
    assert!(got.iter().all(|(i, _)| *i != 37));
    let info = call("GET", &format!("{}/v1/galleries/staff", a.url), None).json();
    assert_eq!(
        (info["templates"].as_u64(), info["erased"].as_u64()),
        (Some(326), Some(1))
    );
    assert_eq!(info["ciphertexts"], 11);

    // B dies. Until its lease lapses A answers 503 `shard_unavailable`
    // (never a partial answer); then it loads B's shards and answers with
    // the whole gallery.
    let killed = Instant::now();
    b.kill();
    let probe = near(&people[200], &mut rng);
    let (want, _) = identify(&single.url, &probe, 5);
    let mut refused = 0;
    let recovered = loop {
        let (got, r) = identify(&a.url, &probe, 5);
        match r.status {
            200 => {
                assert_eq!(got, want, "a partial gallery after the replica's death");
                break killed.elapsed();
            }
            503 => {
                r.expect_error(503, "shard_unavailable");
                refused += 1;
            }
            other => panic!("{other}: {}", String::from_utf8_lossy(&r.body)),
        }
        assert!(
            killed.elapsed() < Duration::from_secs(30),
            "A never took B's shards"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(refused > 0, "A answered before B's lease lapsed");
    assert_eq!(held(&a.url).len(), 4);
    eprintln!(
        "replica killed: {refused} identifications refused, whole gallery again after {} ms (lease {LEASE_MS} ms)",
        recovered.as_millis()
    );

    // B started again takes two shards back; answers stay exact.
    let b = replica(&dir, &db, "b2.log", &addr_b, &sk);
    let back = Instant::now();
    while held(&b.url).len() < 2 || held(&a.url).len() > 2 {
        assert!(
            back.elapsed() < Duration::from_secs(20),
            "B never took shards back"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    for via in [&a, &b] {
        let mut tries = 0;
        loop {
            let (got, r) = identify(&via.url, &probe, 5);
            if r.status == 503 && tries < 20 {
                // A hand-over between the map's read and the call.
                tries += 1;
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
            assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
            assert_eq!(got, want);
            break;
        }
    }

    // Deleted through A: gone through B.
    let r = call("DELETE", &format!("{}/v1/galleries/staff", a.url), None);
    assert_eq!(r.status, 204);
    identify(&b.url, &probe, 5)
        .1
        .expect_error(404, "unknown_gallery");
}
