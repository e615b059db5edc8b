//! The decider as its own process (`blindmatch-server decide`): the matcher's
//! two calls with and without its token, verdicts that `jose` verifies
//! against the decider's JWK set, and the refusals.

use crate::harness::*;
use blindmatch::matching::wellformed::{frame, Checker, Packed};
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

/// A JWS's claims, unverified (the signature is `jose`'s to check).
fn claims_of(jws: &str) -> serde_json::Value {
    use base64::Engine as _;
    let payload = jws.split('.').nth(1).unwrap();
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .unwrap();
    serde_json::from_slice(&bytes).unwrap()
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
    let bundle = client::encrypt_template_bundle(&pk, &q, &refs, &mut rng).unwrap();
    let template = bundle.packed.clone();
    let verifier = Verifier::for_decider(&params, DIM).unwrap();
    let checker = Checker::new(&params, DIM).unwrap();
    // The matcher's request: the score reply, then the probe's checks.
    let reply = |probe: &[f32], rng: &mut Prng| {
        let p = client::encrypt_probe_bundle(&pk, &q, probe, rng).unwrap();
        let r = verifier
            .verify_with(&template, &p.packed, &pk, Some(&rk), rng)
            .unwrap();
        let checks = checker
            .check_with(&p.packed, Packed::Probe, &p.one_hot, &pk, &rk, rng)
            .unwrap()
            .items();
        let reply = verifier.compact(&r).unwrap().to_bytes();
        frame(std::iter::once(reply.as_slice()).chain(checks.iter().map(|c| c.as_slice())))
    };
    let verdicts = |query: &str| format!("{u}/v1/verdicts?{query}");
    let ask = |user: &str, nonce: &str| {
        verdicts(&format!(
            "user={user}&epoch=3&samples=2&aud={APP}&nonce={nonce}&template_checked=true"
        ))
    };

    // The template's checks, as the matcher sends them at enrollment.
    let checks_url = format!("{u}/v1/template-checks?user=alice&epoch=3&samples=2");
    let template_checks = |b: &blindmatch::matching::wellformed::Bundle, rng: &mut Prng| {
        let kind = Packed::Template { samples: 2 };
        let items = checker
            .check_with(&b.packed, kind, &b.one_hot, &pk, &rk, rng)
            .unwrap()
            .items();
        frame(items.iter().map(|i| i.as_slice()))
    };
    let good = template_checks(&bundle, &mut rng);
    call_as("POST", &checks_url, None, Some(&good)).expect_error(401, "unauthorized");
    let r = call_as("POST", &checks_url, Some(&token), Some(&good));
    assert_eq!(r.status, 204, "{}", String::from_utf8_lossy(&r.body));
    // A template whose second sample is the first one tripled: refused.
    let (lo, hi) = q.range();
    let first = q.quantize(&samples[0]).unwrap();
    let tripled: Vec<i32> = first.iter().map(|&x| (3 * x).clamp(lo, hi)).collect();
    let layout = blindmatch::matching::wellformed::OneHot::new(&params, &q).unwrap();
    let packed =
        blindmatch::matching::pack::pack_templates(&params, DIM, &[first.clone(), tripled.clone()])
            .unwrap();
    let mut one_hot = layout.encrypt(&pk, &first, &mut rng).unwrap();
    one_hot.extend(layout.encrypt(&pk, &tripled, &mut rng).unwrap());
    let scaled = blindmatch::matching::wellformed::Bundle {
        packed: pk.encrypt_with(&packed, &mut rng).unwrap(),
        one_hot,
    };
    let mut scaled_checks = template_checks(&scaled, &mut rng);
    call_as("POST", &checks_url, Some(&token), Some(&scaled_checks))
        .expect_error(422, "malformed_template");
    scaled_checks.truncate(1000);
    call_as("POST", &checks_url, Some(&token), Some(&scaled_checks)).expect_error(400, "truncated");
    // The same checks judged under a gallery's key (of that name) are not
    // well-formed there; a query naming both owners, or neither, is refused.
    let under_gallery = format!("{u}/v1/template-checks?gallery=alice&epoch=3&samples=2");
    call_as("POST", &under_gallery, Some(&token), Some(&good))
        .expect_error(422, "malformed_template");
    for query in [
        "user=alice&gallery=alice&epoch=3&samples=2",
        "epoch=3&samples=2",
    ] {
        let url = format!("{u}/v1/template-checks?{query}");
        call_as("POST", &url, Some(&token), Some(&good)).expect_error(400, "bad_query");
    }

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

    // A template the matcher did not have checked: a reject, with its reason.
    let unchecked = verdicts(&format!("user=alice&epoch=3&samples=2&aud={APP}&nonce=c6"));
    let r = call_as("POST", &unchecked, Some(&token), Some(&genuine));
    assert_eq!(r.status, 200);
    let jws = r.json()["verdict"].as_str().unwrap().to_string();
    assert_eq!(jose(&jwks_file, &jws, APP, "c6"), (2, "reject".into()));
    assert_eq!(claims_of(&jws)["reason"], "malformed_template");

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
    let huge = vec![0u8; 2_000_000];
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
