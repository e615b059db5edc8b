//! 1:1 over HTTP: registration, enrollment, verification with exact
//! scores, user info and deletion.

use crate::harness::*;

#[test]
fn one_to_one_flow_with_exact_scores() {
    let _machine = shared();
    let dir = temp_dir("flow");
    let db = dir.join("blindmatch.db");
    let srv = Server::start(&dir, &[]);
    let u = &srv.url;

    let health = call("GET", &format!("{u}/healthz"), None);
    assert_eq!(health.status, 200);
    let h = health.json();
    assert_eq!(h["status"], "ok");
    // Per kernel family, a backend this machine can run (the server's
    // calibration chose it; its test harness does not set BLINDMATCH_BACKEND).
    let can_run: Vec<&str> = blindmatch::Backend::available()
        .iter()
        .map(|b| b.name())
        .collect();
    for family in blindmatch::Family::ALL {
        let kind = h["kernels"][family.name()]
            .as_str()
            .unwrap_or_else(|| panic!("{h}"));
        assert!(can_run.contains(&kind), "{family:?} on {kind}: {h}");
    }
    let p = call("GET", &format!("{u}/v1/params"), None);
    assert_eq!(p.status, 200);
    let pj = p.json();
    assert_eq!(pj["id"], Params::auth4096().id_hex());
    assert_eq!(pj["degree"], 4096);
    assert_eq!(pj["dimension"], 128);
    assert_eq!(pj["templates_per_ciphertext"], 32);

    let mut rng = Prng::from_seed([7; 32]);
    for (user, with_rk, seed) in [("alice", true, 1u8), ("bob.b-2_", false, 2u8)] {
        let mut id = Identity::new(seed);
        let r = call(
            "PUT",
            &format!("{u}/v1/users/{user}/keys"),
            Some(&id.keys_body(with_rk)),
        );
        assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));

        let face = embedding(&mut rng);
        let samples: Vec<Vec<f32>> = (0..5).map(|_| near(&face, &mut rng)).collect();
        let r = call(
            "PUT",
            &format!("{u}/v1/users/{user}/template?count=5"),
            Some(&id.template(&samples)),
        );
        assert_eq!(r.status, 204, "{}", String::from_utf8_lossy(&r.body));

        // Genuine: another photo of the same face.
        let genuine = near(&face, &mut rng);
        let r = call(
            "POST",
            &format!("{u}/v1/users/{user}/verify"),
            Some(&id.probe(&genuine)),
        );
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        assert_eq!(r.content_type, "application/octet-stream");
        assert_eq!(r.header("x-template-count"), Some("5"));
        let cos = id.check_scores(&r.body, &samples, &genuine);
        assert!(cos.iter().all(|&c| c > 0.9), "genuine {cos:?}");

        // Impostor: an unrelated face.
        let impostor = embedding(&mut rng);
        let r = call(
            "POST",
            &format!("{u}/v1/users/{user}/verify"),
            Some(&id.probe(&impostor)),
        );
        assert_eq!(r.status, 200);
        let cos = id.check_scores(&r.body, &samples, &impostor);
        assert!(cos.iter().all(|&c| c < 0.5), "impostor {cos:?}");

        // Re-enrollment replaces the template (and whatever the server had
        // cached of it).
        let samples: Vec<Vec<f32>> = (0..3).map(|_| near(&face, &mut rng)).collect();
        let r = call(
            "PUT",
            &format!("{u}/v1/users/{user}/template?count=3"),
            Some(&id.template(&samples)),
        );
        assert_eq!(r.status, 204);
        let r = call(
            "POST",
            &format!("{u}/v1/users/{user}/verify"),
            Some(&id.probe(&genuine)),
        );
        assert_eq!(r.status, 200);
        assert_eq!(r.header("x-template-count"), Some("3"));
        assert!(r
            .header("server-timing")
            .is_some_and(|t| t.contains("match;dur=")));
        let cos = id.check_scores(&r.body, &samples, &genuine);
        assert!(cos.iter().all(|&c| c > 0.9), "genuine {cos:?}");

        let info = call("GET", &format!("{u}/v1/users/{user}"), None);
        assert_eq!(info.status, 200);
        let info = info.json();
        assert_eq!(info["template_count"], 3);
        assert_eq!(info["verifications"], 3);
        assert_eq!(info["relin_key_bytes"].is_null(), !with_rk);
    }
    // In the database once the flusher thread has run (every 0.1 s; user
    // reads count journaled rows without flushing).
    let start = Instant::now();
    while count_rows(&db, "SELECT count(*) FROM audit WHERE outcome = 'ok'") < 6 {
        assert!(start.elapsed() < Duration::from_secs(10), "never flushed");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        count_rows(&db, "SELECT count(*) FROM audit WHERE outcome = 'ok'"),
        6
    );

    // DELETE removes everything of that user, and only that user.
    let r = call("DELETE", &format!("{u}/v1/users/alice"), None);
    assert_eq!(r.status, 204);
    for table in ["users", "templates", "audit"] {
        assert_eq!(
            count_rows(
                &db,
                &format!("SELECT count(*) FROM {table} WHERE user = 'alice'")
            ),
            0,
            "{table}"
        );
        assert_eq!(
            count_rows(
                &db,
                &format!("SELECT count(*) FROM {table} WHERE user = 'bob.b-2_'")
            ),
            if table == "audit" { 3 } else { 1 },
            "{table}"
        );
    }
    call("GET", &format!("{u}/v1/users/alice"), None).expect_error(404, "unknown_user");
    call("DELETE", &format!("{u}/v1/users/alice"), None).expect_error(404, "unknown_user");
    // The name is free again.
    let mut id = Identity::new(3);
    let r = call(
        "PUT",
        &format!("{u}/v1/users/alice/keys"),
        Some(&id.keys_body(false)),
    );
    assert_eq!(r.status, 201);

    // /metrics: the requests above, by route template and status class,
    // and the verifications' phases; no user name anywhere.
    let m = call("GET", &format!("{u}/metrics"), None);
    assert_eq!(m.status, 200);
    assert!(
        m.content_type.starts_with("text/plain; version=0.0.4"),
        "{}",
        m.content_type
    );
    let text = String::from_utf8(m.body).unwrap();
    let value = |name: &str| -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("{name} missing:\n{text}"))
    };
    let verify = "route=\"/v1/users/{user}/verify\"";
    assert_eq!(
        value(&format!(
            "blindmatch_http_requests_total{{{verify},status=\"2xx\"}}"
        )),
        6.0
    );
    assert_eq!(
        value(&format!(
            "blindmatch_http_request_duration_seconds_count{{{verify}}}"
        )),
        6.0
    );
    assert_eq!(
        value(&format!(
            "blindmatch_http_request_duration_seconds_bucket{{{verify},le=\"+Inf\"}}"
        )),
        6.0
    );
    assert_eq!(
        value("blindmatch_http_requests_total{route=\"/v1/users/{user}/keys\",status=\"2xx\"}"),
        3.0
    );
    assert_eq!(
        value("blindmatch_http_requests_total{route=\"/v1/users/{user}\",status=\"4xx\"}"),
        2.0
    );
    // Server-side durations: positive, and the matching took most of them.
    let total = value(&format!(
        "blindmatch_http_request_duration_seconds_sum{{{verify}}}"
    ));
    let matching = value("blindmatch_verify_phase_seconds_total{phase=\"match\"}");
    assert!(
        matching > 0.0 && matching < total,
        "match {matching} s of {total} s"
    );
    assert_eq!(value("blindmatch_matching_threads"), 2.0);
    // The audit journal: every flush so far succeeded; at most the rows of
    // the six verifications are waiting for the next one.
    assert_eq!(value("blindmatch_audit_flush_failures_total"), 0.0);
    assert!((0.0..=6.0).contains(&value("blindmatch_audit_rows_journaled")));
    assert!(
        !text.contains("alice") && !text.contains("bob.b-2_"),
        "{text}"
    );
}
