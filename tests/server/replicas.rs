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
