//! Many matchers on one PostgreSQL database: whatever one replica writes,
//! the next request through another sees; a login may hop replicas between
//! its challenge and its probe; failed logins count on all of them.

use crate::harness::*;
use crate::login::{enroll_with_ticket, Browser, LoginMode, BEARER};
use crate::postgres;

/// Login mode, a decider and two matchers on one database: tickets,
/// challenges, failed logins and re-enrollments cross replicas.
#[test]
fn a_login_hops_replicas_and_every_replica_sees_every_write() {
    let _machine = shared();
    let db = postgres::shared().database("login_replicas");
    let m = LoginMode::start_with(
        temp_dir("login-replicas"),
        db,
        1,
        &["--failure-delay-ms", "0", "--lockout-failures", "3"],
    );
    let mut rng = Prng::from_seed([91; 32]);
    let (face1, face2) = (embedding(&mut rng), embedding(&mut rng));

    // A ticket issued through A is taken through B, once.
    let ticket = m.via(0).ticket("alice");
    let mut b = Browser::of(m.via(1), "alice", 92);
    let body = b.template(&[near(&face1, &mut rng), near(&face1, &mut rng)]);
    let r = m
        .via(1)
        .put_template("alice", &format!("Ticket {ticket}"), &body);
    assert_eq!(r.status, 204, "{}", String::from_utf8_lossy(&r.body));
    m.via(0)
        .put_template("alice", &format!("Ticket {ticket}"), &body)
        .expect_error(403, "invalid_ticket");

    // A challenge from B answered through A; then the other way round
    // (each replica now holds alice parsed in its cache).
    for (from, to) in [(1, 0), (0, 1)] {
        let c = m.via(from).challenge("alice");
        let r = m
            .via(to)
            .login_from("alice", &c, &b.probe(&near(&face1, &mut rng)), None);
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        assert_eq!(r.json()["outcome"], "accept");
        let verdict = r.json()["verdict"].as_str().unwrap().to_string();
        assert_eq!(jose(&m.jwks, &verdict, APP, &c), (0, "accept".into()));
        // Taken: not at the replica that issued it either.
        m.via(from)
            .login_from("alice", &c, &b.probe(&face1), None)
            .expect_error(403, "invalid_challenge");
    }

    // Three failures, counted through alternating replicas: locked out on
    // both.
    for i in 0..3 {
        let c = m.via(i % 2).challenge("alice");
        let r = m
            .via((i + 1) % 2)
            .login_from("alice", &c, &b.probe(&embedding(&mut rng)), None);
        assert_eq!(r.json()["outcome"], "reject");
    }
    for i in 0..2 {
        let c = m.via(i).challenge("alice");
        m.via(i)
            .login_from("alice", &c, &b.probe(&near(&face1, &mut rng)), None)
            .expect_error(429, "locked_out");
    }

    // Enrolling again through A (a new face) lifts it; B, which has the
    // old template cached, logs alice in with the new face only.
    enroll_with_ticket(m.via(0), "alice", &mut b, &face2, &mut rng);
    let c = m.via(0).challenge("alice");
    let r = m
        .via(1)
        .login_from("alice", &c, &b.probe(&near(&face2, &mut rng)), None);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["outcome"], "accept", "B used a stale template");
    let c = m.via(1).challenge("alice");
    let r = m
        .via(1)
        .login_from("alice", &c, &b.probe(&near(&face1, &mut rng)), None);
    assert_eq!(r.json()["outcome"], "reject", "B used a stale template");

    // A deletion through B: alice is gone at A.
    let r = call_with(
        "DELETE",
        &m.via(1).url("/v1/users/alice"),
        &[("authorization", BEARER)],
        None,
    );
    assert_eq!(r.status, 204);
    let r = call_with(
        "POST",
        &m.via(0)
            .url("/v1/users/alice/challenges?aud=https://app.example"),
        &[("authorization", BEARER)],
        None,
    );
    r.expect_error(404, "unknown_user");
}

/// The user-held-key mode through two replicas: registered through one,
/// verified through the other; a template replaced through one is the one
/// the other matches next, though it had the old one cached.
#[test]
fn either_replica_answers_the_same() {
    let _machine = shared();
    let db = postgres::shared().database("replicas");
    let dir = temp_dir("replicas");
    let a = Server::start_on(&dir, &db, "a.log", &[]);
    let b = Server::start_on(&dir, &db, "b.log", &[]);
    let mut id = Identity::new(93);
    let mut rng = Prng::from_seed([93; 32]);
    let (face1, face2) = (embedding(&mut rng), embedding(&mut rng));
    enroll(&a.url, "ann", &mut id, &face1);
    let scores = |url: &str, id: &mut Identity, face: &[f32], template: &[f32]| {
        let r = call(
            "POST",
            &format!("{url}/v1/users/ann/verify"),
            Some(&id.probe(face)),
        );
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        id.check_scores(&r.body, &[template.to_vec()], face)
    };
    for url in [&a.url, &b.url] {
        let cos = scores(url, &mut id, &face1, &face1);
        assert!(cos[0] > 0.95, "{cos:?}");
    }
    let r = call(
        "PUT",
        &format!("{}/v1/users/ann/template", b.url),
        Some(&id.template(std::slice::from_ref(&face2))),
    );
    assert_eq!(r.status, 204);
    // A decrypts to the new template's cosine: it read the new row.
    let cos = scores(&a.url, &mut id, &face2, &face2);
    assert!(cos[0] > 0.95, "A matched a stale template: {cos:?}");
    let info = |url: &str| call("GET", &format!("{url}/v1/users/ann"), None).json();
    assert_eq!(info(&a.url)["verifications"], 3);
    assert_eq!(info(&a.url), info(&b.url));
    let health = call("GET", &format!("{}/healthz", a.url), None).json();
    assert_eq!(health["store"], "postgres");
}

/// A login-mode gallery through two replicas: created through one, it has
/// the same key at the other; templates added through either are one
/// gallery, in one order; an erasure or a deletion through one is what
/// the other answers next.
#[test]
fn a_login_mode_gallery_is_one_gallery_on_every_replica() {
    use crate::identify::{add, identify, put_gallery, GalleryClient};
    let _machine = shared();
    let db = postgres::shared().database("login_gallery_replicas");
    let m = LoginMode::start_with(temp_dir("login-gallery-replicas"), db, 1, &[]);
    let mut rng = Prng::from_seed([94; 32]);

    // Created through A; B answers with A's epoch and key.
    let r = put_gallery(m.via(0), "staff");
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    let epoch = r.json()["epoch"].clone();
    let r = put_gallery(m.via(1), "staff");
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["epoch"], epoch, "B made a gallery of its own");
    let g = GalleryClient::of(m.via(0), "staff");
    assert_eq!(
        GalleryClient::of(m.via(1), "staff").pk.to_bytes(),
        g.pk.to_bytes()
    );

    // 32 people through A, 8 through B, 8 more through A: one gallery.
    let people: Vec<Vec<f32>> = (0..48).map(|_| embedding(&mut rng)).collect();
    for (via, range, first) in [(0, 0..32, 0), (1, 32..40, 32), (0, 40..48, 64)] {
        let n = range.len();
        let r = add(
            m.via(via),
            "staff",
            n,
            &g.templates(&people[range], &mut rng),
        );
        assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
        assert_eq!(r.json()["first_index"], first);
    }
    for via in [0, 1] {
        let info = m.via(via).api("GET", "/v1/galleries/staff").json();
        assert_eq!(info["templates"], 48, "{info}");
    }
    // Each person found first through either replica.
    let index = |p: usize| if p < 40 { p } else { p + 24 } as u64;
    for (i, p) in [3usize, 35, 44].into_iter().enumerate() {
        for via in [0, 1] {
            let probe = g.probe(&near(&people[p], &mut rng), &mut rng);
            let found = identify(m.via(via), "staff", &probe, &format!("n-{i}-{via}"));
            assert_eq!(found.first(), Some(&index(p)), "via {via}: {found:?}");
        }
    }

    // Erased through B: A no longer finds them.
    assert_eq!(
        m.via(1)
            .api("DELETE", "/v1/galleries/staff/templates/35")
            .status,
        204
    );
    let probe = g.probe(&near(&people[35], &mut rng), &mut rng);
    let after = identify(m.via(0), "staff", &probe, "n-erased");
    assert!(
        !after.contains(&35),
        "A matched an erased template: {after:?}"
    );
    assert_eq!(
        m.via(0).api("GET", "/v1/galleries/staff").json()["erased"],
        1
    );

    // Deleted through A: gone at B; created again through B, a new key
    // at A.
    assert_eq!(m.via(0).api("DELETE", "/v1/galleries/staff").status, 204);
    call("GET", &m.via(1).url("/v1/galleries/staff/public-key"), None)
        .expect_error(404, "unknown_gallery");
    let probe = g.probe(&people[3], &mut rng);
    call_with(
        "POST",
        &m.via(1).url(&format!(
            "/v1/galleries/staff/identify?aud={APP}&nonce=n&top_k=3"
        )),
        &[("authorization", BEARER)],
        Some(&probe),
    )
    .expect_error(404, "unknown_gallery");
    assert_eq!(put_gallery(m.via(1), "staff").status, 201);
    let fresh = GalleryClient::of(m.via(0), "staff");
    assert_ne!(fresh.pk.to_bytes(), g.pk.to_bytes(), "A kept the old key");
    let r = add(
        m.via(0),
        "staff",
        1,
        &fresh.templates(&people[..1], &mut rng),
    );
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["first_index"], 0);
}

/// Galleries under the key holder's service key through two replicas
/// (unsharded): templates added through either are one gallery; both
/// answer an identification alike, and an erasure or deletion through one
/// is what the other answers next.
#[test]
fn a_service_key_gallery_is_one_gallery_on_every_replica() {
    let _machine = shared();
    let db = postgres::shared().database("gallery_replicas");
    let dir = temp_dir("gallery-replicas");
    let (sk, pk) = service_key(&dir);
    let sk = sk.to_str().unwrap().to_string();
    let flags = ["--decider", "local", "--service-key", sk.as_str()];
    let a = Server::start_on(&dir, &db, "a.log", &flags);
    let b = Server::start_on(&dir, &db, "b.log", &flags);
    let q = Quantizer::new(&Params::auth4096(), DIM).unwrap();
    let mut rng = Prng::from_seed([95; 32]);
    let people: Vec<Vec<f32>> = (0..70).map(|_| embedding(&mut rng)).collect();
    for (seq, chunk) in people.chunks(32).enumerate() {
        let refs: Vec<&[f32]> = chunk.iter().map(|e| e.as_slice()).collect();
        let ct = client::encrypt_templates_public(&pk, &q, &refs, &mut rng)
            .unwrap()
            .to_bytes();
        let url = if seq % 2 == 0 { &a.url } else { &b.url };
        let r = call(
            "POST",
            &format!("{url}/v1/galleries/staff/templates?count={}", chunk.len()),
            Some(&ct),
        );
        assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
        assert_eq!(r.json()["first_index"], seq * 32);
    }
    let identify = |url: &str, p: usize| {
        let body =
            serde_json::to_vec(&serde_json::json!({"embedding": people[p], "top_k": 3})).unwrap();
        let r = call_json(&format!("{url}/v1/galleries/staff/identify"), &body);
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        r.json()["matches"].clone()
    };
    for p in [1, 40, 69] {
        let (ma, mb) = (identify(&a.url, p), identify(&b.url, p));
        assert_eq!(ma, mb);
        assert_eq!(ma[0]["index"], p);
    }
    let r = call(
        "DELETE",
        &format!("{}/v1/galleries/staff/templates/40", b.url),
        None,
    );
    assert_eq!(r.status, 204, "{}", String::from_utf8_lossy(&r.body));
    assert_ne!(
        identify(&a.url, 40)[0]["index"],
        40,
        "A matched an erased template"
    );
    let info = call("GET", &format!("{}/v1/galleries/staff", a.url), None).json();
    assert_eq!(
        (info["templates"].clone(), info["erased"].clone()),
        (69.into(), 1.into())
    );

    // Ten erasures of one ciphertext's templates at once, through both
    // replicas: each one holds (one that lost the race to another is
    // refused and made again, never written over the other).
    std::thread::scope(|s| {
        for i in 0..10usize {
            let url = if i % 2 == 0 { &a.url } else { &b.url };
            s.spawn(move || {
                let index = 10 + i;
                loop {
                    let r = call(
                        "DELETE",
                        &format!("{url}/v1/galleries/staff/templates/{index}"),
                        None,
                    );
                    if r.status == 503 {
                        continue;
                    }
                    assert_eq!(r.status, 204, "{}", String::from_utf8_lossy(&r.body));
                    return;
                }
            });
        }
    });
    let info = call("GET", &format!("{}/v1/galleries/staff", b.url), None).json();
    assert_eq!(info["erased"], 11, "an erasure was undone: {info}");
    let r = call("DELETE", &format!("{}/v1/galleries/staff", a.url), None);
    assert_eq!(r.status, 204);
    call("GET", &format!("{}/v1/galleries/staff", b.url), None)
        .expect_error(404, "unknown_gallery");
}
