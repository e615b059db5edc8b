//! PostgreSQL not there, misnamed, or going away under load: the server
//! says what is wrong, answers 503 `store_unavailable` meanwhile (never a
//! hang, never an acknowledgement of a write that did not commit), and
//! carries on by itself when the database is back.

use crate::harness::*;
use crate::postgres::{self, Postgres};

/// `serve` on `db` that must exit: its exit status and stderr.
fn serve_fails(db: &str, extra: &[&str]) -> (std::process::ExitStatus, String, Duration) {
    let start = Instant::now();
    let dir = temp_dir("outage-start");
    let out = server_cmd()
        .args(["serve", "--bind", "127.0.0.1:0", "--db", db])
        .arg("--www")
        .arg(dir.join("www"))
        .args(extra)
        .env("BLINDMATCH_LOG", "info")
        .output()
        .unwrap();
    (
        out.status,
        String::from_utf8_lossy(&out.stderr).to_string(),
        start.elapsed(),
    )
}

#[test]
fn a_database_that_is_not_there_is_retried_then_named() {
    let _machine = shared();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("postgres://bm:secret@127.0.0.1:{port}/blindmatch");
    let (status, err, took) = serve_fails(&url, &["--db-wait-secs", "2"]);
    assert!(!status.success());
    assert!(err.contains("the database is unavailable"), "{err}");
    assert!(err.contains("gave up after"), "{err}");
    assert!(
        err.matches("PostgreSQL unreachable").count() >= 2,
        "each attempt logged: {err}"
    );
    assert!(!err.contains("secret"), "the password was logged: {err}");
    assert!(took < Duration::from_secs(15), "{took:?}");

    // Misnamed: said at once, no retries.
    let pg = postgres::shared();
    for (db, says) in [
        (
            format!("postgres://bm@127.0.0.1:{}/no_such_db", pg.port),
            "does not exist",
        ),
        (
            format!("postgres://nobody@127.0.0.1:{}/postgres", pg.port),
            "role \"nobody\" does not exist",
        ),
        (
            "postgres://bm@127.0.0.1:notaport/x".to_string(),
            "bad --db URL",
        ),
    ] {
        let (status, err, took) = serve_fails(&db, &["--db-wait-secs", "30"]);
        assert!(!status.success(), "{db}");
        assert!(err.contains(says), "{db}: {err}");
        assert!(
            !err.contains("PostgreSQL unreachable"),
            "{db} retried: {err}"
        );
        assert!(took < Duration::from_secs(10), "{db}: {took:?}");
    }
}

/// A server started before its database comes up waits for it and serves.
#[test]
fn a_server_started_first_waits_for_its_database() {
    let _machine = shared();
    let pg = Postgres::start("late");
    pg.stop("fast");
    let dir = temp_dir("late");
    let url = pg.url("postgres");
    let starter = std::thread::spawn({
        let dir = dir.to_path_buf();
        move || Server::start_on(&dir, &url, "server.log", &["--db-wait-secs", "30"])
    });
    std::thread::sleep(Duration::from_millis(1500));
    pg.start_again();
    let srv = starter.join().unwrap();
    let health = call("GET", &format!("{}/healthz", srv.url), None);
    assert_eq!(health.status, 200);
    let log = std::fs::read_to_string(dir.join("server.log")).unwrap();
    assert!(log.contains("PostgreSQL unreachable"), "{log}");
}

/// One client's loop: register, enroll, verify, through `url`, until told
/// to stop. What was acknowledged, what was refused with 503
/// `store_unavailable`, and the longest a request took.
#[derive(Default)]
struct Tally {
    /// Users whose template was acknowledged, and their template index.
    enrolled: Vec<(String, usize)>,
    /// Verifications answered 200, per user.
    verified: std::collections::HashMap<String, i64>,
    unavailable: usize,
    slowest: Duration,
}

#[test]
fn a_database_restart_under_load_loses_nothing_acknowledged() {
    let _machine = shared();
    let pg = Postgres::start("restart");
    let dir = temp_dir("pg-restart");
    let srv = Server::start_on(&dir, &pg.url("postgres"), "server.log", &[]);
    let url = srv.url.clone();
    let mut id = Identity::new(71);
    let keys = id.keys_body(false);
    let mut rng = Prng::from_seed([71; 32]);
    let faces: Vec<Vec<f32>> = (0..2).map(|_| embedding(&mut rng)).collect();
    let templates: Vec<Vec<u8>> = faces
        .iter()
        .map(|f| id.template(std::slice::from_ref(f)))
        .collect();
    let probes: Vec<Vec<u8>> = faces.iter().map(|f| id.probe(f)).collect();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let seen_down = std::sync::atomic::AtomicBool::new(false);
    let tallies: Vec<Tally> = std::thread::scope(|scope| {
        let clients: Vec<_> = (0..2)
            .map(|c| {
                let (url, keys, templates, probes) = (&url, &keys, &templates, &probes);
                let (stop, seen_down) = (&stop, &seen_down);
                scope.spawn(move || {
                    let mut t = Tally::default();
                    let mut n = 0;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        let user = format!("c{c}u{n}");
                        let k = n % 2;
                        n += 1;
                        let steps: [(&str, String, &[u8], u16); 3] = [
                            ("PUT", format!("{url}/v1/users/{user}/keys"), keys, 201),
                            (
                                "PUT",
                                format!("{url}/v1/users/{user}/template"),
                                &templates[k],
                                204,
                            ),
                            (
                                "POST",
                                format!("{url}/v1/users/{user}/verify"),
                                &probes[k],
                                200,
                            ),
                        ];
                        for (i, (method, u, body, want)) in steps.iter().enumerate() {
                            let start = Instant::now();
                            let r = try_call(method, u, Some(body)).expect("the server went away");
                            t.slowest = t.slowest.max(start.elapsed());
                            if r.status == 503 {
                                r.expect_error(503, "store_unavailable");
                                assert_eq!(r.header("retry-after"), Some("1"));
                                t.unavailable += 1;
                                seen_down.store(true, std::sync::atomic::Ordering::Relaxed);
                                break;
                            }
                            assert_eq!(
                                r.status,
                                *want,
                                "{method} {u}: {}",
                                String::from_utf8_lossy(&r.body)
                            );
                            match i {
                                1 => t.enrolled.push((user.clone(), k)),
                                2 => *t.verified.entry(user.clone()).or_default() += 1,
                                _ => {}
                            }
                        }
                    }
                    t
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(700));
        // A crash of PostgreSQL (no clean shutdown: recovery at the start).
        pg.stop("immediate");
        let down = Instant::now();
        while !seen_down.load(std::sync::atomic::Ordering::Relaxed) {
            assert!(
                down.elapsed() < Duration::from_secs(20),
                "no request noticed the outage"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let h = call("GET", &format!("{url}/healthz"), None);
        h.expect_error(503, "store_unavailable");
        std::thread::sleep(Duration::from_millis(500));
        pg.start_again();
        // Back by itself: healthz and requests succeed again.
        let up = Instant::now();
        while call("GET", &format!("{url}/healthz"), None).status != 200 {
            assert!(up.elapsed() < Duration::from_secs(20), "never reconnected");
            std::thread::sleep(Duration::from_millis(50));
        }
        std::thread::sleep(Duration::from_millis(700));
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        clients.into_iter().map(|c| c.join().unwrap()).collect()
    });
    let enrolled: Vec<&(String, usize)> = tallies.iter().flat_map(|t| &t.enrolled).collect();
    let unavailable: usize = tallies.iter().map(|t| t.unavailable).sum();
    let slowest = tallies.iter().map(|t| t.slowest).max().unwrap();
    assert!(unavailable >= 1);
    assert!(enrolled.len() >= 4, "too little load: {}", enrolled.len());
    // No hang: a request waits at most the store's 5 s call timeout.
    assert!(
        slowest < Duration::from_secs(8),
        "a request took {slowest:?}"
    );
    // Every acknowledged template is stored byte for byte; every
    // acknowledged verification left its audit row.
    for (user, k) in &enrolled {
        let hex = pg.psql(
            "postgres",
            &format!(
                "SELECT encode(t.ciphertext, 'hex') FROM templates t JOIN users u ON u.id = t.user_id WHERE u.name = '{user}'"
            ),
        );
        assert_eq!(
            hex,
            to_hex(&templates[*k]),
            "{user}: template lost or changed"
        );
    }
    for t in &tallies {
        for (user, ok) in &t.verified {
            let info = call("GET", &format!("{url}/v1/users/{user}"), None).json();
            assert!(
                info["verifications"].as_i64().unwrap() >= *ok,
                "{user}: {info}"
            );
        }
    }
    eprintln!(
        "PostgreSQL restart: {} enrollments acknowledged, {unavailable} requests refused with 503, slowest request {slowest:?}",
        enrolled.len()
    );
}

fn to_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
