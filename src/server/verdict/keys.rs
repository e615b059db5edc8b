//! The decider's Ed25519 verdict keys: generated from the system RNG, kept
//! as PKCS#8 PEM files (what `openssl genpkey -algorithm ed25519` writes,
//! mode 0600), named by their RFC 7638 thumbprint, and published as a JWK
//! set (RFC 7517, with the `OKP` key type of RFC 8037).
//!
//! Rotation: a key directory holds `*.pem` files; the last in name order
//! signs and every one is published, so that verdicts signed by the
//! previous key verify until it is removed (after the verdicts' lifetime).

use std::path::{Path, PathBuf};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use ed25519_dalek::pkcs8::spki::der::pem::LineEnding;
use ed25519_dalek::pkcs8::{DecodePrivateKey, EncodePrivateKey};
use ed25519_dalek::{Signer as _, SigningKey};
use serde::Serialize;
use sha2::{Digest, Sha256};

/// Why a verdict key could not be made, read or written.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: not an Ed25519 private key in PKCS#8 PEM ({reason})")]
    Format { path: PathBuf, reason: String },
    #[error("{0}: no verdict key (*.pem) in the directory")]
    Empty(PathBuf),
    #[error("system random number generator: {0}")]
    Rng(String),
}

/// One Ed25519 signing key and its key id.
pub struct VerdictKey {
    key: SigningKey,
    kid: String,
}

impl std::fmt::Debug for VerdictKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VerdictKey")
            .field("kid", &self.kid)
            .finish()
    }
}

/// The public half of a verdict key as a JWK.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Jwk {
    pub kty: &'static str,
    pub crv: &'static str,
    /// The public key, base64url.
    pub x: String,
    pub kid: String,
    pub alg: &'static str,
    #[serde(rename = "use")]
    pub use_: &'static str,
}

impl Jwk {
    /// The JWK of an Ed25519 public key (32 bytes, RFC 8032), its
    /// thumbprint as `kid`.
    pub fn of(public: &[u8; 32]) -> Self {
        Self {
            kty: "OKP",
            crv: "Ed25519",
            x: URL_SAFE_NO_PAD.encode(public),
            kid: thumbprint(public),
            alg: "EdDSA",
            use_: "sig",
        }
    }
}

/// A JWK set: `{"keys": [...]}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct JwkSet {
    pub keys: Vec<Jwk>,
}

impl VerdictKey {
    /// A new key from the system RNG.
    pub fn generate() -> Result<Self, KeyError> {
        let mut seed = zeroize::Zeroizing::new([0u8; 32]);
        getrandom::fill(&mut seed[..]).map_err(|e| KeyError::Rng(e.to_string()))?;
        Ok(Self::from_seed(&seed))
    }

    /// The key whose 32-byte secret (RFC 8032's seed, JWK `d`) is `seed`.
    pub fn from_seed(seed: &[u8; 32]) -> Self {
        let key = SigningKey::from_bytes(seed);
        let kid = thumbprint(&key.verifying_key().to_bytes());
        Self { key, kid }
    }

    /// Reads a PKCS#8 PEM private key.
    pub fn from_pem(pem: &str) -> Result<Self, String> {
        let key = SigningKey::from_pkcs8_pem(pem).map_err(|e| e.to_string())?;
        let kid = thumbprint(&key.verifying_key().to_bytes());
        Ok(Self { key, kid })
    }

    /// The key as PKCS#8 PEM.
    pub fn to_pem(&self) -> zeroize::Zeroizing<String> {
        // Encoding a 32-byte Ed25519 seed into PKCS#8 does not fail.
        self.key
            .to_pkcs8_pem(LineEnding::LF)
            .expect("PKCS#8 encoding of an Ed25519 key")
    }

    /// Reads the key file at `path`.
    pub fn load(path: &Path) -> Result<Self, KeyError> {
        let pem = zeroize::Zeroizing::new(std::fs::read_to_string(path).map_err(|source| {
            KeyError::Io {
                path: path.into(),
                source,
            }
        })?);
        Self::from_pem(&pem).map_err(|reason| KeyError::Format {
            path: path.into(),
            reason,
        })
    }

    /// Writes the key to a new file at `path` with mode 0600 (never over an
    /// existing file).
    pub fn save_new(&self, path: &Path) -> Result<(), KeyError> {
        crate::server::secret_file::create_secret(path, self.to_pem().as_bytes()).map_err(
            |source| KeyError::Io {
                path: path.into(),
                source,
            },
        )
    }

    /// The key id: the RFC 7638 thumbprint of the public JWK.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// The public key, 32 bytes (RFC 8032).
    pub fn public_key(&self) -> [u8; 32] {
        self.key.verifying_key().to_bytes()
    }

    /// The public JWK.
    pub fn jwk(&self) -> Jwk {
        Jwk::of(&self.public_key())
    }

    /// The Ed25519 signature of `msg`.
    pub fn sign_bytes(&self, msg: &[u8]) -> [u8; 64] {
        self.key.sign(msg).to_bytes()
    }
}

/// RFC 7638: SHA-256 over the required members in lexicographic order, no
/// whitespace, base64url.
pub(super) fn thumbprint(public: &[u8; 32]) -> String {
    let x = URL_SAFE_NO_PAD.encode(public);
    let canonical = format!(r#"{{"crv":"Ed25519","kty":"OKP","x":"{x}"}}"#);
    URL_SAFE_NO_PAD.encode(Sha256::digest(canonical.as_bytes()))
}

/// The signing key and every published one.
#[derive(Debug)]
pub struct VerdictKeys {
    /// Oldest first; the last one signs.
    keys: Vec<VerdictKey>,
}

impl VerdictKeys {
    /// Every `*.pem` file of `dir`, in name order; the last signs.
    pub fn load_dir(dir: &Path) -> Result<Self, KeyError> {
        let io = |source| KeyError::Io {
            path: dir.into(),
            source,
        };
        let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(io)?
            .map(|e| e.map(|e| e.path()))
            .collect::<Result<_, _>>()
            .map_err(io)?;
        paths.retain(|p| p.extension().is_some_and(|e| e == "pem"));
        paths.sort();
        let keys = paths
            .iter()
            .map(|p| VerdictKey::load(p))
            .collect::<Result<Vec<_>, _>>()?;
        Self::new(keys).ok_or_else(|| KeyError::Empty(dir.into()))
    }

    /// Adds a new key to `dir` (created if missing), named so that it sorts
    /// last and signs from the next load: `verdict-<unix seconds>.pem`
    /// (the next free second when a key of this second exists).
    pub fn rotate(dir: &Path, now_secs: u64) -> Result<PathBuf, KeyError> {
        std::fs::create_dir_all(dir).map_err(|source| KeyError::Io {
            path: dir.into(),
            source,
        })?;
        let mut at = now_secs;
        while dir.join(format!("verdict-{at:012}.pem")).exists() {
            at += 1;
        }
        let path = dir.join(format!("verdict-{at:012}.pem"));
        VerdictKey::generate()?.save_new(&path)?;
        Ok(path)
    }

    /// The set of `keys` (oldest first), or `None` if empty.
    pub fn new(keys: Vec<VerdictKey>) -> Option<Self> {
        (!keys.is_empty()).then_some(Self { keys })
    }

    /// The key that signs.
    pub fn signing(&self) -> &VerdictKey {
        // `new` refuses an empty set.
        &self.keys[self.keys.len() - 1]
    }

    /// Every key's public JWK, the signing key first.
    pub fn jwks(&self) -> JwkSet {
        JwkSet {
            keys: self.keys.iter().rev().map(VerdictKey::jwk).collect(),
        }
    }
}
