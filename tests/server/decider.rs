//! The decider as its own process (`blindmatch-server decide`): the matcher's
//! two calls with and without its token, verdicts that `jose` verifies
//! against the decider's JWK set, and the refusals.

use crate::harness::*;
use blindmatch::matching::Verifier;
use blindmatch::server::split_keys;

fn call_as(method: &str, url: &str, token: Option<&str>, body: Option<&[u8]>) -> Resp {
    let bearer = token.map(|t| format!("Bearer {t}"));
    let headers: Vec<(&str, &str)> = bearer
        .iter()
        .map(|b| ("authorization", b.as_str()))
        .collect();
    call_with(method, url, &headers, body)
}

#[test]
fn the_decider_signs_verdicts_only_for_the_matcher() {
    let _machine = shared();
    let dir = temp_dir("decider");
    let d = Decider::start(&dir);
    let u = d.url.clone();
    let token = d.token.clone();
    let params = Params::auth4096();

    // The JWK set is public.
    let jwks = call_as("GET", &format!("{u}/.well-known/jwks.json"), None, None);
    assert_eq!(jwks.status, 200);
    assert_eq!(jwks.content_type, "application/jwk-set+json");
    assert_eq!(jwks.json()["keys"].as_array().unwrap().len(), 1);
    let jwks_file = dir.join("jwks.json");
    std::fs::write(&jwks_file, &jwks.body).unwrap();

    // The user's keys: only for the matcher.
    let keys_url = format!("{u}/v1/user-keys/alice?epoch=3");
    call_as("GET", &keys_url, None, None).expect_error(401, "unauthorized");
    call_as("GET", &keys_url, Some("not-the-token"), None).expect_error(401, "unauthorized");
    let keys = call_as("GET", &keys_url, Some(&token), None);
    assert_eq!(keys.status, 200);
    let (pk, rk) = split_keys(&keys.body).unwrap();
    let pk = PublicKey::from_bytes(&params, pk).unwrap();
    let rk = RelinKey::from_bytes(&params, rk.unwrap()).unwrap();

    // The browser encrypts under the user's public key; the matcher computes
    // the reply for the decider.
    let q = Quantizer::new(&params, DIM).unwrap();
    let mut rng = Prng::from_seed([91; 32]);
    let face = embedding(&mut rng);
    let samples = [near(&face, &mut rng), near(&face, &mut rng)];
    let refs: Vec<&[f32]> = samples.iter().map(|s| s.as_slice()).collect();
    let template = client::encrypt_templates_public(&pk, &q, &refs, &mut rng).unwrap();
    let verifier = Verifier::for_decider(&params, DIM).unwrap();
    let reply = |probe: &[f32], rng: &mut Prng| {
        let p = client::encrypt_probe_public(&pk, &q, probe, rng).unwrap();
        let r = verifier
            .verify_with(&template, &p, &pk, Some(&rk), rng)
            .unwrap();
        verifier.compact(&r).unwrap().to_bytes()
    };
    let verdicts = |query: &str| format!("{u}/v1/verdicts?{query}");
    let ask = |user: &str, nonce: &str| {
        verdicts(&format!(
            "user={user}&epoch=3&samples=2&aud={APP}&nonce={nonce}"
        ))
    };

    let genuine = reply(&near(&face, &mut rng), &mut rng);
    let r = call_as("POST", &ask("alice", "c1"), Some(&token), Some(&genuine));
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let jws = r.json()["verdict"].as_str().unwrap().to_string();
    assert_eq!(jose(&jwks_file, &jws, APP, "c1"), (0, "accept".into()));
    // A verdict answers its own challenge only.
    assert_eq!(
        jose(&jwks_file, &jws, APP, "c2"),
        (1, "ERR_NONCE_MISMATCH".into())
    );

    let impostor = reply(&embedding(&mut rng), &mut rng);
    let r = call_as("POST", &ask("alice", "c3"), Some(&token), Some(&impostor));
    assert_eq!(r.status, 200);
    let jws = r.json()["verdict"].as_str().unwrap().to_string();
    assert_eq!(jose(&jwks_file, &jws, APP, "c3"), (2, "reject".into()));

    // Refusals: no token, a reply for another user's key, bad queries and
    // bodies.
    call_as("POST", &ask("alice", "c4"), None, Some(&genuine)).expect_error(401, "unauthorized");
    call_as("POST", &ask("bob", "c4"), Some(&token), Some(&genuine))
        .expect_error(422, "not_under_key");
    let no_samples = verdicts("user=alice&epoch=3&samples=0&aud=a&nonce=n");
    call_as("POST", &no_samples, Some(&token), Some(&genuine)).expect_error(400, "bad_count");
    let no_aud = verdicts("user=alice&epoch=3&samples=2&nonce=n");
    call_as("POST", &no_aud, Some(&token), Some(&genuine)).expect_error(400, "bad_query");
    call_as(
        "POST",
        &ask("alice", "c5"),
        Some(&token),
        Some(&genuine[..100]),
    )
    .expect_error(400, "truncated");
    call_as("POST", &ask("al%21ce", "c5"), Some(&token), Some(&genuine))
        .expect_error(400, "bad_name");
    let huge = vec![0u8; 40_000];
    call_as("POST", &ask("alice", "c5"), Some(&token), Some(&huge))
        .expect_error(413, "body_too_large");

    // The same secrets after a restart: the same user key, the same key id.
    let kid = jwks.json()["keys"][0]["kid"].clone();
    drop(d);
    let d = Decider::start(&dir);
    let again = call_as(
        "GET",
        &format!("{}/v1/user-keys/alice?epoch=3", d.url),
        Some(&token),
        None,
    );
    assert_eq!(
        split_keys(&again.body).unwrap().0,
        split_keys(&keys.body).unwrap().0
    );
    let jwks = call_as(
        "GET",
        &format!("{}/.well-known/jwks.json", d.url),
        None,
        None,
    );
    assert_eq!(jwks.json()["keys"][0]["kid"], kid);
    #[cfg(unix)]
    for f in ["master.key", "matcher.token"] {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.join("decider").join(f))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{f}");
    }
}
