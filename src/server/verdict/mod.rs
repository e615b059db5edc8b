//! Signed verdicts: the decider's answer to a login or an identification.
//!
//! A verdict is a JWS in compact serialization (RFC 7515) over a JSON claims
//! set (RFC 7519), signed with Ed25519 (`"alg": "EdDSA"`, RFC 8037). The
//! header names the signing key (`kid`, its RFC 7638 thumbprint); the
//! public keys are served as a JWK set (`GET /.well-known/jwks.json`), so a
//! relying party verifies a verdict with any JWT library. Rejections are
//! signed too: a relying party never has to tell "no answer" from "no".
//!
//! * [`keys`]: the Ed25519 keys, their PKCS#8 files, the JWK set.
//! * [`check`]: checking a verdict against a JWK set.
//! * [`Claims`]: what a verdict says.

pub mod check;
pub mod keys;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde::{Deserialize, Serialize};

pub use check::{CheckError, PublicKeys};
pub use keys::{VerdictKey, VerdictKeys};

/// What the decider concluded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// The probe matched the user's enrolled template under the policy.
    Accept,
    /// It did not.
    Reject,
}

/// The claims of a verdict.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// Who signed: the decider's issuer name (a URL by convention).
    pub iss: String,
    /// The user the verdict is about.
    pub sub: String,
    /// The relying party it is meant for.
    pub aud: String,
    /// The login challenge it answers (single use, bound to `sub`).
    pub nonce: String,
    /// Issued at, seconds since the Unix epoch.
    pub iat: u64,
    /// Expires at, seconds since the Unix epoch.
    pub exp: u64,
    /// Authentication methods (RFC 8176): `["face"]`.
    pub amr: Vec<String>,
    /// The verdict itself.
    pub outcome: Outcome,
    /// Why a reject is not about the face: `malformed_probe` or
    /// `malformed_template` (the client's ciphertexts are not a valid
    /// quantized embedding). Absent on an accept and on a reject on the
    /// scores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<Reason>,
}

/// Why a verdict rejects without reading the scores.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// The probe is not a well-formed embedding.
    MalformedProbe,
    /// The enrolled template is not, or was never checked.
    MalformedTemplate,
}

/// The claims of an identification: which of a gallery's templates the
/// probe matched (a JWS of type [`IDENTIFICATION_TYP`]). Never a score.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identification {
    /// Who signed: the decider's issuer name.
    pub iss: String,
    /// The gallery.
    pub sub: String,
    /// The relying party it is meant for.
    pub aud: String,
    /// The relying party's nonce for this identification.
    pub nonce: String,
    /// Issued at, seconds since the Unix epoch.
    pub iat: u64,
    /// Expires at, seconds since the Unix epoch.
    pub exp: u64,
    /// Authentication methods (RFC 8176): `["face"]`.
    pub amr: Vec<String>,
    /// The indices of the templates at or above the threshold, best first,
    /// at most the `top_k` asked for (empty: nobody matched).
    pub matches: Vec<u64>,
}

/// The `typ` of an identification, so that it cannot pass for a login
/// verdict (`JWT`) or a key statement.
pub const IDENTIFICATION_TYP: &str = "blindmatch-identify+jwt";

/// The JOSE header of every verdict.
#[derive(Serialize)]
struct Header<'a> {
    alg: &'static str,
    typ: &'static str,
    kid: &'a str,
}

/// The decider's statement that a public key is a user's, of a key epoch:
/// what a page checks before it encrypts under a key the matcher served
/// (a JWS of type [`KEY_STATEMENT_TYP`], signed by a verdict key).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyStatement {
    /// The decider's issuer name, as in its verdicts.
    pub iss: String,
    /// The user.
    pub sub: String,
    /// The key epoch.
    pub epoch: u32,
    /// SHA-256 of the public key's wire bytes, base64url without padding.
    pub pk_sha256: String,
    /// Issued at, seconds since the Unix epoch.
    pub iat: u64,
}

/// The `typ` of a key statement (a verdict's is `JWT`), so that neither can
/// pass for the other.
pub const KEY_STATEMENT_TYP: &str = "blindmatch-key+jwt";

/// The `typ` of a gallery's key statement (`sub` is then a gallery), so that
/// a gallery's key cannot pass for a user's of the same name.
pub const GALLERY_KEY_STATEMENT_TYP: &str = "blindmatch-gallery-key+jwt";

impl KeyStatement {
    /// The digest a statement names for `public_key` (its wire bytes).
    pub fn digest(public_key: &[u8]) -> String {
        use sha2::{Digest, Sha256};
        URL_SAFE_NO_PAD.encode(Sha256::digest(public_key))
    }
}

impl VerdictKey {
    /// Signs `claims` as a compact JWS (`header.payload.signature`, each
    /// part base64url without padding).
    pub fn sign(&self, claims: &Claims) -> String {
        self.sign_typed("JWT", claims)
    }

    /// Signs a key statement.
    pub fn sign_key_statement(&self, statement: &KeyStatement) -> String {
        self.sign_typed(KEY_STATEMENT_TYP, statement)
    }

    /// Signs a gallery's key statement.
    pub fn sign_gallery_key_statement(&self, statement: &KeyStatement) -> String {
        self.sign_typed(GALLERY_KEY_STATEMENT_TYP, statement)
    }

    /// Signs an identification.
    pub fn sign_identification(&self, claims: &Identification) -> String {
        self.sign_typed(IDENTIFICATION_TYP, claims)
    }

    /// Signs `claims` under the header `typ`.
    pub fn sign_typed(&self, typ: &'static str, claims: &impl Serialize) -> String {
        let header = Header {
            alg: "EdDSA",
            typ,
            kid: self.kid(),
        };
        // Serializing these structs cannot fail (strings, integers and a
        // unit enum only).
        let header = serde_json::to_vec(&header).unwrap_or_default();
        let payload = serde_json::to_vec(claims).unwrap_or_default();
        self.sign_compact(&header, &payload)
    }

    /// The compact JWS of `payload` under the protected header `header`
    /// (both as the bytes to encode).
    pub fn sign_compact(&self, header: &[u8], payload: &[u8]) -> String {
        let mut out = URL_SAFE_NO_PAD.encode(header);
        out.push('.');
        out.push_str(&URL_SAFE_NO_PAD.encode(payload));
        let signature = self.sign_bytes(out.as_bytes());
        out.push('.');
        out.push_str(&URL_SAFE_NO_PAD.encode(signature));
        out
    }
}

/// A compact JWS's header and payload if its signature holds under
/// `public` (an Ed25519 public key), for the tests that check verdicts.
#[cfg(test)]
pub(crate) fn open(public: &[u8; 32], jws: &str) -> Option<(serde_json::Value, serde_json::Value)> {
    use ed25519_dalek::{Signature, VerifyingKey};
    let parts: Vec<&str> = jws.split('.').collect();
    let [header, payload, sig] = parts[..] else {
        return None;
    };
    let sig: [u8; 64] = URL_SAFE_NO_PAD.decode(sig).ok()?.try_into().ok()?;
    VerifyingKey::from_bytes(public)
        .ok()?
        .verify_strict(
            format!("{header}.{payload}").as_bytes(),
            &Signature::from_bytes(&sig),
        )
        .ok()?;
    let json = |p: &str| serde_json::from_slice(&URL_SAFE_NO_PAD.decode(p).ok()?).ok();
    Some((json(header)?, json(payload)?))
}

#[cfg(test)]
mod tests;
