//! Per-user and per-gallery BFV keys, derived from one master secret.
//!
//! `HKDF-SHA256(salt = "blindmatch decider v1", ikm = master, info = label)`
//! gives 64 bytes for each (parameters, user, epoch) (galleries' keys use
//! the salt `"blindmatch decider v1 gallery"`): the first 32 seed the
//! secret key's sampling, the last 32 its public key's. The decider stores one
//! secret, yet each account's key is a pseudorandom function of its label:
//! learning one account's secret key says nothing about another's. A new
//! epoch (a re-registration, a rotation) is a new, unrelated key pair.

use std::path::{Path, PathBuf};

use hkdf::Hkdf;
use sha2::Sha256;
use zeroize::Zeroizing;

use crate::bfv::{Params, Prng, PublicKey, SecretKey};

const SALT: &[u8] = b"blindmatch decider v1";
const GALLERY_SALT: &[u8] = b"blindmatch decider v1 gallery";

/// Why the master secret could not be made, read or written.
#[derive(Debug, thiserror::Error)]
pub enum MasterError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: a master secret is 32 bytes, this file has {len}")]
    Length { path: PathBuf, len: usize },
    #[error("system random number generator: {0}")]
    Rng(String),
}

/// What a key is for: a user's 1:1 logins, or a 1:N gallery.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyKind {
    User,
    Gallery,
}

impl KeyKind {
    /// HKDF's salt: each kind derives from its own, so a user and a gallery
    /// of the same name and epoch have unrelated keys.
    fn salt(self) -> &'static [u8] {
        match self {
            Self::User => SALT,
            Self::Gallery => GALLERY_SALT,
        }
    }
}

/// Whose key: a user or gallery name and the key epoch the matcher keeps
/// with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyLabel<'a> {
    pub kind: KeyKind,
    pub name: &'a str,
    pub epoch: u32,
}

impl<'a> KeyLabel<'a> {
    /// A user's key of `epoch`.
    pub fn user(name: &'a str, epoch: u32) -> Self {
        Self {
            kind: KeyKind::User,
            name,
            epoch,
        }
    }

    /// A gallery's key of `epoch`.
    pub fn gallery(name: &'a str, epoch: u32) -> Self {
        Self {
            kind: KeyKind::Gallery,
            name,
            epoch,
        }
    }
}

impl KeyLabel<'_> {
    /// HKDF's `info`: the parameters' id, the name's length (u32 BE)
    /// and bytes, the epoch (u32 BE), so that no two labels share it.
    fn info(&self, params: &Params) -> Vec<u8> {
        let mut info = Vec::with_capacity(16 + self.name.len());
        info.extend_from_slice(&params.id());
        info.extend_from_slice(&(self.name.len() as u32).to_be_bytes());
        info.extend_from_slice(self.name.as_bytes());
        info.extend_from_slice(&self.epoch.to_be_bytes());
        info
    }
}

/// The decider's one long-term secret (32 bytes, zeroed when dropped).
pub struct MasterSecret(Zeroizing<[u8; 32]>);

impl std::fmt::Debug for MasterSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MasterSecret(..)")
    }
}

impl MasterSecret {
    /// A new secret from the system RNG.
    pub fn generate() -> Result<Self, MasterError> {
        let mut s = Zeroizing::new([0u8; 32]);
        getrandom::fill(&mut s[..]).map_err(|e| MasterError::Rng(e.to_string()))?;
        Ok(Self(s))
    }

    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(Zeroizing::new(bytes))
    }

    /// Reads a secret file (exactly 32 bytes).
    pub fn load(path: &Path) -> Result<Self, MasterError> {
        let bytes = Zeroizing::new(std::fs::read(path).map_err(|source| MasterError::Io {
            path: path.into(),
            source,
        })?);
        let array: [u8; 32] = bytes[..].try_into().map_err(|_| MasterError::Length {
            path: path.into(),
            len: bytes.len(),
        })?;
        Ok(Self::from_bytes(array))
    }

    /// Writes the secret to a new file with mode 0600.
    pub fn save_new(&self, path: &Path) -> Result<(), MasterError> {
        crate::server::secret_file::create_secret(path, &self.0[..]).map_err(|source| {
            MasterError::Io {
                path: path.into(),
                source,
            }
        })
    }

    /// The 64 bytes HKDF gives `label` under `params`: the secret key's
    /// seed, then its public key's.
    fn seeds(&self, params: &Params, label: &KeyLabel<'_>) -> Zeroizing<[u8; 64]> {
        let hk = Hkdf::<Sha256>::new(Some(label.kind.salt()), &self.0[..]);
        let mut okm = Zeroizing::new([0u8; 64]);
        // 64 bytes is far below HKDF-SHA256's 8160-byte limit.
        hk.expand(&label.info(params), &mut okm[..])
            .expect("HKDF output length");
        okm
    }

    /// The secret key of `label` under `params` (what a verdict needs; its
    /// public key costs an encryption of zero more).
    pub fn secret_key(&self, params: &Params, label: &KeyLabel<'_>) -> SecretKey {
        Self::secret_key_from(params, &self.seeds(params, label))
    }

    /// The key pair of `label` under `params`.
    pub fn user_keys(&self, params: &Params, label: &KeyLabel<'_>) -> (SecretKey, PublicKey) {
        let okm = self.seeds(params, label);
        let sk = Self::secret_key_from(params, &okm);
        let mut seed = Zeroizing::new([0u8; 32]);
        seed.copy_from_slice(&okm[32..]);
        let pk = PublicKey::new_with(&sk, &mut Prng::from_seed(*seed));
        (sk, pk)
    }

    fn secret_key_from(params: &Params, okm: &[u8; 64]) -> SecretKey {
        let mut seed = Zeroizing::new([0u8; 32]);
        seed.copy_from_slice(&okm[..32]);
        SecretKey::generate_with(params, &mut Prng::from_seed(*seed))
    }
}
