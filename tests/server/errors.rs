//! Refusals: every error is JSON with its code and writes nothing; static
//! files and their headers.

use crate::harness::*;

#[test]
fn every_error_is_json_and_writes_nothing() {
    let _machine = shared();
    let dir = temp_dir("errors");
    let db = dir.join("blindmatch.db");
    let srv = Server::start(&dir, &[]);
    let u = srv.url.clone();
    let params = Params::auth4096();

    let mut id = Identity::new(11);
    let mut rng = Prng::from_seed([9; 32]);
    let face = embedding(&mut rng);
    let keys = id.keys_body(false);
    assert_eq!(
        call("PUT", &format!("{u}/v1/users/carol/keys"), Some(&keys)).status,
        201
    );
    let template = id.template(std::slice::from_ref(&face));
    assert_eq!(
        call(
            "PUT",
            &format!("{u}/v1/users/carol/template?count=1"),
            Some(&template)
        )
        .status,
        204
    );
    assert_eq!(
        call("PUT", &format!("{u}/v1/users/dave/keys"), Some(&keys)).status,
        201
    );
    let before = snapshot(&db);

    let probe = id.probe(&face);
    let limits = call("GET", &format!("{u}/v1/params"), None).json()["limits"].clone();
    let ct_limit = limits["ciphertext"].as_u64().unwrap() as usize;
    let keys_limit = limits["keys"].as_u64().unwrap() as usize;

    // A transparent ciphertext: c1 = 0.
    let transparent = {
        let ct = Ciphertext::from_bytes(&params, &probe).unwrap();
        let ev = Evaluator::new(&params);
        let mut z = ev.sub(&ct, &ct).unwrap();
        let pt = CoefficientEncoder::new(&params).encode(&[5]).unwrap();
        ev.add_plain_assign(&mut z, &pt).unwrap();
        assert!(z.is_transparent());
        z.to_bytes()
    };
    // A size-3 ciphertext (a product) where a fresh one is expected.
    let size3 = {
        let ct = Ciphertext::from_bytes(&params, &probe).unwrap();
        Evaluator::new(&params)
            .multiply(&ct, &ct)
            .unwrap()
            .to_bytes()
    };
    let mut wrong_params = probe.clone();
    wrong_params[8] ^= 0x5a;
    let mut bad_magic = probe.clone();
    bad_magic[0] = b'X';
    let mut trailing = probe.clone();
    trailing.push(0);
    let truncated = &probe[..probe.len() - 7];
    let pk_bytes = id.pk.to_bytes();

    let verify = |user: &str| format!("{u}/v1/users/{user}/verify");
    let template_url = |user: &str, q: &str| format!("{u}/v1/users/{user}/template{q}");
    let keys_url = |user: &str| format!("{u}/v1/users/{user}/keys");
    let long_name = "x".repeat(65);
    let cases: Vec<Case> = vec![
        (
            "POST",
            verify("nobody"),
            Some(probe.clone()),
            404,
            "unknown_user",
        ),
        (
            "PUT",
            template_url("nobody", ""),
            Some(template.clone()),
            404,
            "unknown_user",
        ),
        (
            "DELETE",
            format!("{u}/v1/users/nobody"),
            None,
            404,
            "unknown_user",
        ),
        (
            "GET",
            format!("{u}/v1/users/nobody"),
            None,
            404,
            "unknown_user",
        ),
        (
            "POST",
            verify("dave"),
            Some(probe.clone()),
            404,
            "no_template",
        ),
        (
            "POST",
            verify(&long_name),
            Some(probe.clone()),
            400,
            "bad_name",
        ),
        (
            "POST",
            verify("a%20b"),
            Some(probe.clone()),
            400,
            "bad_name",
        ),
        (
            "POST",
            verify(".hidden"),
            Some(probe.clone()),
            400,
            "bad_name",
        ),
        (
            "POST",
            verify("carol"),
            Some(wrong_params.clone()),
            422,
            "wrong_params",
        ),
        (
            "POST",
            verify("carol"),
            Some(truncated.to_vec()),
            400,
            "truncated",
        ),
        ("POST", verify("carol"), Some(Vec::new()), 400, "truncated"),
        (
            "POST",
            verify("carol"),
            Some(bad_magic.clone()),
            400,
            "malformed",
        ),
        (
            "POST",
            verify("carol"),
            Some(trailing.clone()),
            400,
            "malformed",
        ),
        (
            "POST",
            verify("carol"),
            Some(transparent.clone()),
            422,
            "transparent",
        ),
        (
            "POST",
            verify("carol"),
            Some(size3.clone()),
            422,
            "bad_ciphertext",
        ),
        (
            "POST",
            verify("carol"),
            Some(pk_bytes.clone()),
            400,
            "wrong_kind",
        ),
        (
            "POST",
            verify("carol"),
            Some(vec![0; ct_limit + 1]),
            413,
            "body_too_large",
        ),
        (
            "PUT",
            template_url("carol", ""),
            Some(transparent.clone()),
            422,
            "transparent",
        ),
        (
            "PUT",
            template_url("carol", ""),
            Some(wrong_params.clone()),
            422,
            "wrong_params",
        ),
        (
            "PUT",
            template_url("carol", ""),
            Some(truncated.to_vec()),
            400,
            "truncated",
        ),
        (
            "PUT",
            template_url("carol", ""),
            Some(size3.clone()),
            422,
            "bad_ciphertext",
        ),
        (
            "PUT",
            template_url("carol", "?count=0"),
            Some(template.clone()),
            400,
            "bad_count",
        ),
        (
            "PUT",
            template_url("carol", "?count=33"),
            Some(template.clone()),
            400,
            "bad_count",
        ),
        (
            "PUT",
            template_url("carol", "?count=x"),
            Some(template.clone()),
            400,
            "bad_query",
        ),
        (
            "PUT",
            template_url("carol", ""),
            Some(vec![0; ct_limit + 1]),
            413,
            "body_too_large",
        ),
        (
            "PUT",
            keys_url("carol"),
            Some(keys.clone()),
            409,
            "user_exists",
        ),
        (
            "PUT",
            keys_url("erin"),
            Some(keys[..keys.len() - 3].to_vec()),
            400,
            "truncated",
        ),
        ("PUT", keys_url("erin"), Some(vec![1, 0]), 400, "truncated"),
        (
            "PUT",
            keys_url("erin"),
            Some(frame_keys(&probe, None)),
            400,
            "wrong_kind",
        ),
        (
            "PUT",
            keys_url("erin"),
            Some(frame_keys(&pk_bytes[..100], None)),
            400,
            "truncated",
        ),
        (
            "PUT",
            keys_url("erin"),
            Some(frame_keys(&pk_bytes, Some(&pk_bytes))),
            400,
            "wrong_kind",
        ),
        (
            "PUT",
            keys_url("erin"),
            Some([keys.clone(), vec![0]].concat()),
            400,
            "malformed",
        ),
        (
            "PUT",
            keys_url("erin"),
            Some(frame_keys(&[], None)),
            400,
            "malformed",
        ),
        (
            "PUT",
            keys_url("erin"),
            Some(vec![0; keys_limit + 1]),
            413,
            "body_too_large",
        ),
        (
            "POST",
            format!("{u}/v1/galleries/g/identify"),
            Some(b"{}".to_vec()),
            404,
            "identify_disabled",
        ),
        (
            "POST",
            format!("{u}/v1/galleries/g/templates"),
            Some(template.clone()),
            404,
            "identify_disabled",
        ),
        (
            "GET",
            format!("{u}/v1/galleries/g"),
            None,
            404,
            "identify_disabled",
        ),
        (
            "DELETE",
            format!("{u}/v1/galleries/g"),
            None,
            404,
            "identify_disabled",
        ),
        (
            "DELETE",
            format!("{u}/v1/galleries/g/templates/0"),
            None,
            404,
            "identify_disabled",
        ),
        ("GET", format!("{u}/v1/nothing"), None, 404, "not_found"),
        (
            "PATCH",
            verify("carol"),
            Some(probe.clone()),
            405,
            "method_not_allowed",
        ),
    ];
    for (method, url, body, status, code) in &cases {
        let r = call(method, url, body.as_deref());
        r.expect_error(*status, code);
        assert_eq!(r.header("content-security-policy"), Some(CSP));
    }
    // The bad-input corpus of the format tests, sent as probes, templates
    // and key bodies: every file is a 4xx JSON error.
    let mut corpus = 0;
    for entry in std::fs::read_dir("tests/data/bad").unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        for (method, url, body) in [
            ("POST", verify("carol"), bytes.clone()),
            ("PUT", template_url("carol", ""), bytes.clone()),
            ("PUT", keys_url("erin"), frame_keys(&bytes, None)),
        ] {
            let r = call(method, &url, Some(&body));
            assert!((400..500).contains(&r.status), "{} {url}", r.status);
            assert!(r.json()["code"].is_string());
            corpus += 1;
        }
    }
    assert!(corpus >= 100, "{corpus}");
    assert_eq!(
        snapshot(&db),
        before,
        "a refused request changed the database"
    );
    assert_eq!(call("GET", &format!("{u}/healthz"), None).status, 200);
}

#[test]
fn static_files_have_csp_and_wasm_type() {
    let _machine = shared();
    let dir = temp_dir("static");
    std::fs::create_dir_all(dir.join("www/js")).unwrap();
    std::fs::create_dir_all(dir.join("pkg")).unwrap();
    std::fs::write(dir.join("www/index.html"), "<!doctype html><p>hi</p>").unwrap();
    std::fs::write(dir.join("www/js/app.js"), "console.log(1)").unwrap();
    std::fs::write(dir.join("www/.secret"), "no").unwrap();
    std::fs::write(dir.join("pkg/blindmatch_bg.wasm"), b"\0asm\x01\0\0\0").unwrap();
    std::fs::create_dir_all(dir.join("face/model")).unwrap();
    std::fs::write(dir.join("face/model/net.bin"), b"weights").unwrap();
    std::fs::write(dir.join("face/model/net-weights_manifest.json"), b"[]").unwrap();
    let face = dir.join("face");
    let srv = Server::start(&dir, &["--face", face.to_str().unwrap()]);
    let u = &srv.url;
    let r = call("GET", &format!("{u}/face/model/net.bin"), None);
    assert_eq!((r.status, r.body.as_slice()), (200, &b"weights"[..]));
    assert_eq!(r.content_type, "application/octet-stream");
    assert_eq!(r.header("content-security-policy"), Some(CSP));
    assert_eq!(r.header("cache-control"), Some("public, max-age=86400"));
    let r = call(
        "GET",
        &format!("{u}/face/model/net-weights_manifest.json"),
        None,
    );
    assert_eq!(r.content_type, "application/json");
    call("GET", &format!("{u}/face/..%2fwww/index.html"), None).expect_error(404, "not_found");
    let r = call("GET", &format!("{u}/"), None);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("cache-control"), Some("no-cache"));
    assert_eq!(r.content_type, "text/html; charset=utf-8");
    assert_eq!(r.body, b"<!doctype html><p>hi</p>");
    assert_eq!(r.header("content-security-policy"), Some(CSP));
    assert!(CSP.contains("script-src 'self' 'wasm-unsafe-eval';"));
    assert!(!CSP.contains("unsafe-inline") && !CSP.contains('*'));
    assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
    assert!(r.header("x-request-id").is_some());
    let r = call("GET", &format!("{u}/js/app.js"), None);
    assert!(r.content_type.starts_with("text/javascript"));
    let r = call("GET", &format!("{u}/pkg/blindmatch_bg.wasm"), None);
    assert_eq!(r.status, 200);
    assert_eq!(r.content_type, "application/wasm");
    assert_eq!(r.header("content-security-policy"), Some(CSP));
    for bad in [
        "/.secret",
        "/%2e%2e/server.log",
        "/js/..%2f..%2fserver.log",
        "/missing.js",
    ] {
        call("GET", &format!("{u}{bad}"), None).expect_error(404, "not_found");
    }
    call("POST", &format!("{u}/index.html"), Some(b"x")).expect_error(405, "method_not_allowed");
}
