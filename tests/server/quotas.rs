//! Quotas: users, galleries, templates per gallery and gallery memory, each
//! refused with 409 `quota_reached` naming its flag, nothing written.

use crate::growth::gallery_ciphertext;
use crate::harness::*;

/// Asserts a 409 `quota_reached` whose message names `flag`.
fn refused(r: Resp, flag: &str) {
    r.expect_error(409, "quota_reached");
    let msg = r.json()["error"].as_str().unwrap().to_string();
    assert!(msg.contains(flag), "{msg}");
}

#[test]
fn every_quota_refuses_the_request_over_it_and_writes_nothing() {
    let _machine = shared();
    let dir = temp_dir("quotas");
    let db = dir.join("blindmatch.db");
    let (sk, pk) = service_key(&dir);
    // Two galleries, 40 templates each, three ciphertexts (64 KiB each in
    // memory) in all.
    let srv = Server::start(
        &dir,
        &[
            "--service-key",
            sk.to_str().unwrap(),
            "--max-users",
            "2",
            "--max-galleries",
            "2",
            "--max-gallery-templates",
            "40",
            "--max-gallery-bytes",
            "196608",
        ],
    );
    let u = &srv.url;
    let mut id = Identity::new(41);
    let keys = id.keys_body(false);
    for user in ["ann", "bob"] {
        let r = call("PUT", &format!("{u}/v1/users/{user}/keys"), Some(&keys));
        assert_eq!(r.status, 201);
    }
    let before = snapshot(&db);
    refused(
        call("PUT", &format!("{u}/v1/users/cid/keys"), Some(&keys)),
        "--max-users",
    );
    assert_eq!(snapshot(&db), before);
    // A deletion makes room again.
    assert_eq!(
        call("DELETE", &format!("{u}/v1/users/bob"), None).status,
        204
    );
    assert_eq!(
        call("PUT", &format!("{u}/v1/users/cid/keys"), Some(&keys)).status,
        201
    );

    let ct = gallery_ciphertext(&pk, 42);
    let add = |gallery: &str, count: u32| {
        call(
            "POST",
            &format!("{u}/v1/galleries/{gallery}/templates?count={count}"),
            Some(&ct),
        )
    };
    assert_eq!(add("a", 32).status, 201);
    assert_eq!(add("a", 8).status, 201);
    let before = snapshot(&db);
    refused(add("a", 1), "--max-gallery-templates");
    assert_eq!(add("b", 32).status, 201);
    refused(add("b", 1), "--max-gallery-bytes");
    refused(add("c", 1), "--max-galleries");
    assert_eq!(snapshot(&db).len(), before.len() + 1);
    let list = call("GET", &format!("{u}/v1/galleries"), None).json();
    assert_eq!(list["galleries"].as_array().unwrap().len(), 2, "{list}");
    // Erasing a template frees no memory (its ciphertext stays); deleting a
    // gallery does.
    assert_eq!(
        call("DELETE", &format!("{u}/v1/galleries/a/templates/0"), None).status,
        204
    );
    refused(add("b", 1), "--max-gallery-bytes");
    assert_eq!(
        call("DELETE", &format!("{u}/v1/galleries/a"), None).status,
        204
    );
    assert_eq!(add("c", 1).status, 201);
    assert_eq!(add("b", 1).status, 201);

    // The quotas hold across a restart (counted from what was loaded).
    drop(srv);
    let srv = Server::start(
        &dir,
        &[
            "--service-key",
            sk.to_str().unwrap(),
            "--max-galleries",
            "2",
            "--max-gallery-bytes",
            "196608",
        ],
    );
    let r = call(
        "POST",
        &format!("{}/v1/galleries/d/templates?count=1", srv.url),
        Some(&ct),
    );
    refused(r, "--max-galleries");
    let r = call(
        "POST",
        &format!("{}/v1/galleries/c/templates?count=1", srv.url),
        Some(&ct),
    );
    refused(r, "--max-gallery-bytes");
}
