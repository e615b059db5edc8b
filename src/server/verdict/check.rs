//! Checking a verdict against a JWK set: what the matcher does with a
//! `Verdict` credential (a user re-enrolling or deleting themselves). A
//! relying party does the same with its own JWT library.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use ed25519_dalek::{Signature, VerifyingKey};
use serde::Deserialize;

use super::{
    Claims, Identification, KeyStatement, GALLERY_KEY_STATEMENT_TYP, IDENTIFICATION_TYP,
    KEY_STATEMENT_TYP,
};

/// Why a verdict does not check.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum CheckError {
    #[error("not a compact JWS")]
    Malformed,
    #[error("not an EdDSA verdict")]
    Algorithm,
    #[error("a JWS of another type (a key statement for a verdict, or the reverse)")]
    Type,
    #[error("signed by no published key")]
    UnknownKey,
    #[error("bad signature")]
    Signature,
}

/// The Ed25519 public keys of a JWK set, by `kid`.
#[derive(Clone, Debug, Default)]
pub struct PublicKeys(Vec<(String, VerifyingKey)>);

#[derive(Deserialize)]
struct Set {
    keys: Vec<Key>,
}

#[derive(Deserialize)]
struct Key {
    kty: String,
    #[serde(default)]
    crv: String,
    #[serde(default)]
    x: String,
    #[serde(default)]
    kid: String,
}

#[derive(Deserialize)]
struct Header {
    alg: String,
    #[serde(default)]
    kid: String,
    #[serde(default)]
    typ: String,
}

impl PublicKeys {
    /// The `OKP`/`Ed25519` keys of a JWK set (others are skipped).
    pub fn from_jwks(json: &[u8]) -> Result<Self, String> {
        let set: Set = serde_json::from_slice(json).map_err(|e| format!("JWK set: {e}"))?;
        let mut keys = Vec::new();
        for k in set.keys {
            if k.kty != "OKP" || k.crv != "Ed25519" {
                continue;
            }
            let x: [u8; 32] = URL_SAFE_NO_PAD
                .decode(&k.x)
                .ok()
                .and_then(|x| x.try_into().ok())
                .ok_or_else(|| format!("JWK {}: x is not 32 bytes of base64url", k.kid))?;
            let key = VerifyingKey::from_bytes(&x).map_err(|e| format!("JWK {}: {e}", k.kid))?;
            keys.push((k.kid, key));
        }
        Ok(Self(keys))
    }

    /// Raw Ed25519 public keys (32 bytes each, RFC 8032), each under its
    /// RFC 7638 thumbprint as `kid`; a key that is not 32 bytes or not a
    /// curve point is skipped.
    pub fn from_raw<'a>(keys: impl IntoIterator<Item = &'a [u8]>) -> Self {
        Self(
            keys.into_iter()
                .filter_map(|k| {
                    let x: [u8; 32] = k.try_into().ok()?;
                    let key = VerifyingKey::from_bytes(&x).ok()?;
                    Some((super::keys::thumbprint(&x), key))
                })
                .collect(),
        )
    }

    /// Whether a key with this `kid` is known.
    pub fn has(&self, kid: &str) -> bool {
        self.0.iter().any(|(k, _)| k == kid)
    }

    /// The `kid` a compact JWS names, if it parses that far.
    pub fn kid_of(jws: &str) -> Option<String> {
        let header = jws.split('.').next()?;
        let h: Header = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(header).ok()?).ok()?;
        Some(h.kid)
    }

    /// The claims of `jws` if it is an EdDSA compact JWS signed by one of
    /// these keys. Says nothing of the claims themselves (subject,
    /// outcome, expiry): the caller checks those.
    pub fn verify(&self, jws: &str) -> Result<Claims, CheckError> {
        self.verify_typed(jws, "JWT")
    }

    /// The claims of a key statement (`typ` [`KEY_STATEMENT_TYP`]) signed
    /// by one of these keys; as [`Self::verify`], the caller checks them.
    pub fn verify_key_statement(&self, jws: &str) -> Result<KeyStatement, CheckError> {
        self.verify_typed(jws, KEY_STATEMENT_TYP)
    }

    /// The claims of a gallery's key statement (`typ`
    /// [`GALLERY_KEY_STATEMENT_TYP`]).
    pub fn verify_gallery_key_statement(&self, jws: &str) -> Result<KeyStatement, CheckError> {
        self.verify_typed(jws, GALLERY_KEY_STATEMENT_TYP)
    }

    /// The claims of an identification (`typ` [`IDENTIFICATION_TYP`]);
    /// the caller checks `aud`, `nonce` and `exp`.
    pub fn verify_identification(&self, jws: &str) -> Result<Identification, CheckError> {
        self.verify_typed(jws, IDENTIFICATION_TYP)
    }

    /// `jws` signed by one of these keys, with header `typ` equal to `typ`
    /// (so that a verdict and a key statement cannot pass for each other).
    pub fn verify_typed<T: serde::de::DeserializeOwned>(
        &self,
        jws: &str,
        typ: &str,
    ) -> Result<T, CheckError> {
        let mut parts = jws.split('.');
        let (Some(header), Some(payload), Some(sig), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(CheckError::Malformed);
        };
        let decode = |p: &str| URL_SAFE_NO_PAD.decode(p).map_err(|_| CheckError::Malformed);
        let h: Header =
            serde_json::from_slice(&decode(header)?).map_err(|_| CheckError::Malformed)?;
        if h.alg != "EdDSA" {
            return Err(CheckError::Algorithm);
        }
        if h.typ != typ {
            return Err(CheckError::Type);
        }
        let key = self
            .0
            .iter()
            .find(|(k, _)| *k == h.kid)
            .map(|(_, key)| key)
            .ok_or(CheckError::UnknownKey)?;
        let sig: [u8; 64] = decode(sig)?.try_into().map_err(|_| CheckError::Malformed)?;
        let signed = &jws[..header.len() + 1 + payload.len()];
        key.verify_strict(signed.as_bytes(), &Signature::from_bytes(&sig))
            .map_err(|_| CheckError::Signature)?;
        serde_json::from_slice(&decode(payload)?).map_err(|_| CheckError::Malformed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::verdict::{Outcome, VerdictKey, VerdictKeys};

    fn claims() -> Claims {
        Claims {
            iss: "https://decider.example".into(),
            sub: "alice".into(),
            aud: "rp".into(),
            nonce: "n".into(),
            iat: 10,
            exp: 310,
            amr: vec!["face".into()],
            outcome: Outcome::Accept,
            reason: None,
        }
    }

    fn keys_of(keys: Vec<VerdictKey>) -> (VerdictKeys, PublicKeys) {
        let set = VerdictKeys::new(keys).unwrap();
        let json = serde_json::to_vec(&set.jwks()).unwrap();
        (set, PublicKeys::from_jwks(&json).unwrap())
    }

    #[test]
    fn a_key_statement_does_not_pass_for_a_verdict_nor_the_reverse() {
        let (set, public) = keys_of(vec![VerdictKey::from_seed(&[4; 32])]);
        let statement = KeyStatement {
            iss: "https://decider.example".into(),
            sub: "alice".into(),
            epoch: 7,
            pk_sha256: KeyStatement::digest(b"pk"),
            iat: 10,
        };
        let signed = set.signing().sign_key_statement(&statement);
        assert_eq!(public.verify_key_statement(&signed).unwrap(), statement);
        assert!(matches!(public.verify(&signed), Err(CheckError::Type)));
        let verdict = set.signing().sign(&claims());
        assert!(matches!(
            public.verify_key_statement(&verdict),
            Err(CheckError::Type)
        ));
    }

    #[test]
    fn a_signed_verdict_checks_under_its_set_and_no_other() {
        let (set, public) = keys_of(vec![
            VerdictKey::from_seed(&[1; 32]),
            VerdictKey::from_seed(&[2; 32]),
        ]);
        let jws = set.signing().sign(&claims());
        assert_eq!(public.verify(&jws).unwrap(), claims());
        assert_eq!(
            PublicKeys::kid_of(&jws).as_deref(),
            Some(set.signing().kid())
        );
        // An older key of the set checks too (rotation).
        let old = VerdictKey::from_seed(&[1; 32]).sign(&claims());
        assert!(public.verify(&old).is_ok());
        let (_, other) = keys_of(vec![VerdictKey::from_seed(&[3; 32])]);
        assert_eq!(other.verify(&jws), Err(CheckError::UnknownKey));
    }

    #[test]
    fn tampered_or_foreign_tokens_are_refused() {
        let (set, public) = keys_of(vec![VerdictKey::from_seed(&[1; 32])]);
        let jws = set.signing().sign(&claims());
        let parts: Vec<&str> = jws.split('.').collect();
        // Another payload under the same signature.
        let mut forged = claims();
        forged.sub = "bob".into();
        let payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&forged).unwrap());
        let swapped = format!("{}.{payload}.{}", parts[0], parts[2]);
        assert_eq!(public.verify(&swapped), Err(CheckError::Signature));
        // `alg: none`, and not a JWS at all.
        let none = URL_SAFE_NO_PAD.encode(br#"{"alg":"none","kid":""}"#);
        assert_eq!(
            public.verify(&format!("{none}.{}.", parts[1])),
            Err(CheckError::Algorithm)
        );
        for bad in ["", "a.b", "a.b.c.d", "!!.!!.!!"] {
            assert_eq!(public.verify(bad), Err(CheckError::Malformed), "{bad}");
        }
    }
}
