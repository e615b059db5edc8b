//! Corrupted bodies: thousands of mutations of valid objects, each refused
//! with nothing written.

use crate::attack::*;
use crate::harness::*;

#[test]
fn corrupted_bodies_are_refused_and_change_nothing() {
    let _machine = shared();
    // BLINDMATCH_MUTATIONS overrides the count (about 15 s unoptimized on 2 busy cores).
    let total: usize = std::env::var("BLINDMATCH_MUTATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let dir = temp_dir("mutate");
    let db = dir.join("blindmatch.db");
    let srv = Server::start(&dir, &[]);
    let u = srv.url.clone();
    let mut id = Identity::new(51);
    let mut rng = Prng::from_seed([51; 32]);
    let face = embedding(&mut rng);
    let originals = Originals::enroll(&u, "carol", &mut id, &face);
    let before = snapshot(&db);
    let agent = ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(60))
        .build();
    let start = Instant::now();
    let mut statuses = std::collections::BTreeMap::new();
    for i in 0..total {
        let (method, path, body) = originals.corrupted("carol", "erin", i, &mut rng);
        let url = format!("{u}{path}");
        let resp = agent
            .request(method, &url)
            .set("content-type", "application/octet-stream")
            .send_bytes(&body);
        let (status, body) = match resp {
            Ok(r) => (r.status(), r.into_string().unwrap_or_default()),
            Err(ureq::Error::Status(s, r)) => (s, r.into_string().unwrap_or_default()),
            Err(e) => panic!("mutation {i}: transport error {e}"),
        };
        assert!(
            (400..500).contains(&status),
            "mutation {i} to {url}: {status} {body}"
        );
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        let code = v["code"].as_str().unwrap().to_string();
        *statuses.entry((status, code)).or_insert(0usize) += 1;
    }
    let secs = start.elapsed().as_secs_f64();
    assert_eq!(snapshot(&db), before, "a refused body changed the database");
    assert_eq!(call("GET", &format!("{u}/healthz"), None).status, 200);
    eprintln!("mutations: {total} corrupted bodies in {secs:.1} s, all refused: {statuses:?}");
}
