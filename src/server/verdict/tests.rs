//! Known answers from RFC 8037 (Appendix A) and the verdict's shape.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;

use super::*;

/// RFC 8037 A.1: the private key `d` and public key `x`.
const RFC_D: &str = "nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A";
const RFC_X: &str = "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo";
/// RFC 8037 A.3: its RFC 7638 thumbprint.
const RFC_KID: &str = "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k";
/// RFC 8037 A.4: `{"alg":"EdDSA"}` over "Example of Ed25519 signing".
const RFC_JWS: &str = "eyJhbGciOiJFZERTQSJ9.RXhhbXBsZSBvZiBFZDI1NTE5IHNpZ25pbmc.\
hgyY0il_MGCjP0JzlnLWG1PPOt7-09PGcvMg3AIbQR6dWbhijcNR4ki4iylGjg5BhVsPt9g7sVvpAr_MuM0KAg";

fn rfc_key() -> VerdictKey {
    let d: [u8; 32] = URL_SAFE_NO_PAD.decode(RFC_D).unwrap().try_into().unwrap();
    VerdictKey::from_seed(&d)
}

fn claims(outcome: Outcome) -> Claims {
    Claims {
        iss: "https://login.example".into(),
        sub: "alice".into(),
        aud: "https://app.example".into(),
        nonce: "n-0S6_WzA2Mj".into(),
        iat: 1_800_000_000,
        exp: 1_800_000_300,
        amr: vec!["face".into()],
        outcome,
        reason: None,
    }
}

/// The header and payload of `jws`, whose signature must hold under `key`.
fn verify(key: &VerdictKey, jws: &str) -> (serde_json::Value, serde_json::Value) {
    open(&key.public_key(), jws).expect("a valid signature")
}

#[test]
fn rfc8037_key_thumbprint_and_signature() {
    let key = rfc_key();
    assert_eq!(URL_SAFE_NO_PAD.encode(key.public_key()), RFC_X);
    assert_eq!(key.kid(), RFC_KID);
    let jws = key.sign_compact(br#"{"alg":"EdDSA"}"#, b"Example of Ed25519 signing");
    assert_eq!(jws, RFC_JWS);
}

#[test]
fn verdicts_carry_the_claims_and_name_their_key() {
    let key = rfc_key();
    for outcome in [Outcome::Accept, Outcome::Reject] {
        let c = claims(outcome);
        let (header, payload) = verify(&key, &key.sign(&c));
        assert_eq!(
            header,
            serde_json::json!({"alg": "EdDSA", "typ": "JWT", "kid": RFC_KID})
        );
        assert_eq!(
            payload["outcome"],
            if outcome == Outcome::Accept {
                "accept"
            } else {
                "reject"
            }
        );
        assert_eq!(payload["amr"], serde_json::json!(["face"]));
        let back: Claims = serde_json::from_value(payload).unwrap();
        assert_eq!(back, c);
    }
}

#[test]
fn a_changed_claim_breaks_the_signature() {
    let key = rfc_key();
    let jws = key.sign(&claims(Outcome::Reject));
    let parts: Vec<&str> = jws.split('.').collect();
    let forged = serde_json::to_vec(&claims(Outcome::Accept)).unwrap();
    let swapped = format!(
        "{}.{}.{}",
        parts[0],
        URL_SAFE_NO_PAD.encode(forged),
        parts[2]
    );
    assert!(open(&key.public_key(), &swapped).is_none());
    assert!(open(&key.public_key(), &jws).is_some());
}

#[test]
fn pem_round_trip_and_jwk() {
    let key = VerdictKey::generate().unwrap();
    let pem = key.to_pem();
    assert!(
        pem.starts_with("-----BEGIN PRIVATE KEY-----\n"),
        "{}",
        &pem[..40]
    );
    let back = VerdictKey::from_pem(&pem).unwrap();
    assert_eq!(back.public_key(), key.public_key());
    assert_eq!(back.kid(), key.kid());
    let jwk = serde_json::to_value(key.jwk()).unwrap();
    assert_eq!(jwk["kty"], "OKP");
    assert_eq!(jwk["crv"], "Ed25519");
    assert_eq!(jwk["use"], "sig");
    assert_eq!(jwk["kid"], key.kid());
    assert!(
        VerdictKey::from_pem("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
            .is_err()
    );
}

#[test]
fn a_key_directory_rotates() {
    let dir = crate::server::test_dir::TestDir::new("verdict-keys");
    let first = VerdictKeys::rotate(&dir, 1_800_000_000).unwrap();
    let keys = VerdictKeys::load_dir(&dir).unwrap();
    let old = keys.signing().kid().to_string();
    assert_eq!(keys.jwks().keys.len(), 1);
    VerdictKeys::rotate(&dir, 1_800_086_400).unwrap();
    let keys = VerdictKeys::load_dir(&dir).unwrap();
    let set = keys.jwks();
    assert_eq!(set.keys.len(), 2);
    assert_ne!(keys.signing().kid(), old, "the newer key signs");
    assert_eq!(set.keys[0].kid, keys.signing().kid());
    assert_eq!(set.keys[1].kid, old, "the older key is still published");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&first).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    // A key file is never overwritten.
    assert!(VerdictKey::generate().unwrap().save_new(&first).is_err());
    let empty = crate::server::test_dir::TestDir::new("verdict-empty");
    assert!(matches!(
        VerdictKeys::load_dir(&empty),
        Err(keys::KeyError::Empty(_))
    ));
}
