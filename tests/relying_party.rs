//! A relying party checks blindmatch verdicts with a JWT library that is not
//! ours: `jose` under Node, through examples/relying-party/verify.mjs (the
//! check a Node backend makes). scripts/setup.sh installs it.
#![cfg(all(feature = "server", not(target_arch = "wasm32")))]

use std::path::{Path, PathBuf};
use std::process::Command;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use blindmatch::server::verdict::{Claims, Outcome, VerdictKey, VerdictKeys};

const ISS: &str = "https://login.example";
const AUD: &str = "https://app.example";

fn example_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/relying-party")
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn claims(outcome: Outcome, nonce: &str) -> Claims {
    Claims {
        iss: ISS.into(),
        sub: "alice".into(),
        aud: AUD.into(),
        nonce: nonce.into(),
        iat: now(),
        exp: now() + 300,
        amr: vec!["face".into()],
        outcome,
        reason: None,
    }
}

/// The relying party's answer: exit code and its JSON line.
fn check(jwks: &Path, token: &str, aud: &str, nonce: &str) -> (i32, serde_json::Value) {
    let dir = example_dir();
    assert!(
        dir.join("node_modules/jose").is_dir(),
        "jose is not installed in {}: run scripts/setup.sh",
        dir.display()
    );
    let out = Command::new("node")
        .arg(dir.join("verify.mjs"))
        .arg("--jwks")
        .arg(jwks)
        .args(["--iss", ISS, "--aud", aud, "--nonce", nonce, token])
        .output()
        .expect("node");
    let line = String::from_utf8_lossy(&out.stdout);
    let v = serde_json::from_str(line.trim())
        .unwrap_or_else(|e| panic!("{e}: {line} {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code().unwrap_or(-1), v)
}

#[test]
fn jose_accepts_only_valid_verdicts() {
    let dir = std::env::temp_dir().join(format!("blindmatch-rp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let keydir = dir.join("keys");
    VerdictKeys::rotate(&keydir, 1).unwrap();
    let old = VerdictKeys::load_dir(&keydir).unwrap();
    VerdictKeys::rotate(&keydir, 2).unwrap();
    let keys = VerdictKeys::load_dir(&keydir).unwrap();
    let jwks = dir.join("jwks.json");
    std::fs::write(&jwks, serde_json::to_vec(&keys.jwks()).unwrap()).unwrap();
    let key = keys.signing();

    let accept = key.sign(&claims(Outcome::Accept, "c1"));
    let (code, v) = check(&jwks, &accept, AUD, "c1");
    assert_eq!(
        (code, &v["outcome"], &v["sub"]),
        (0, &"accept".into(), &"alice".into()),
        "{v}"
    );

    // A rejection verifies too, and says so.
    let reject = key.sign(&claims(Outcome::Reject, "c2"));
    let (code, v) = check(&jwks, &reject, AUD, "c2");
    assert_eq!((code, &v["outcome"]), (2, &"reject".into()), "{v}");

    // Signed by the previous key: still published, still valid.
    let (code, v) = check(
        &jwks,
        &old.signing().sign(&claims(Outcome::Accept, "c3")),
        AUD,
        "c3",
    );
    assert_eq!(code, 0, "{v}");

    let refused = |token: &str, aud: &str, nonce: &str, want: &str| {
        let (code, v) = check(&jwks, token, aud, nonce);
        assert_eq!((code, v["code"].as_str().unwrap()), (1, want), "{v}");
    };
    // For another relying party; for another challenge.
    refused(
        &accept,
        "https://other.example",
        "c1",
        "ERR_JWT_CLAIM_VALIDATION_FAILED",
    );
    refused(&accept, AUD, "c9", "ERR_NONCE_MISMATCH");
    // Expired.
    let mut late = claims(Outcome::Accept, "c4");
    late.iat -= 900;
    late.exp = now() - 600;
    refused(&key.sign(&late), AUD, "c4", "ERR_JWT_EXPIRED");
    // A rejection turned into an acceptance.
    let parts: Vec<&str> = reject.split('.').collect();
    let flipped = serde_json::to_vec(&claims(Outcome::Accept, "c2")).unwrap();
    let forged = format!(
        "{}.{}.{}",
        parts[0],
        URL_SAFE_NO_PAD.encode(flipped),
        parts[2]
    );
    refused(&forged, AUD, "c2", "ERR_JWS_SIGNATURE_VERIFICATION_FAILED");
    // Signed by a key the decider does not publish.
    let stranger = VerdictKey::generate().unwrap();
    refused(
        &stranger.sign(&claims(Outcome::Accept, "c5")),
        AUD,
        "c5",
        "ERR_JWKS_NO_MATCHING_KEY",
    );
    // The same header, signature stripped ("alg": "none" is never accepted).
    let none = format!(
        "{}.{}.",
        URL_SAFE_NO_PAD.encode(br#"{"alg":"none"}"#),
        parts[1]
    );
    let (code, _) = check(&jwks, &none, AUD, "c2");
    assert_eq!(code, 1);
    let _ = std::fs::remove_dir_all(&dir);
}
