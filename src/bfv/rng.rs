//! Randomness: ChaCha20 seeded from the operating system (or, in wasm,
//! `crypto.getRandomValues` through getrandom). A failing system RNG is an
//! error, never a fallback. Deterministic seeds exist for tests and
//! known-answer vectors only.

use rand_chacha::rand_core::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

use crate::error::BfvError;

/// A cryptographic PRNG (ChaCha20).
pub struct Prng(ChaCha20Rng);

impl std::fmt::Debug for Prng {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Prng(ChaCha20, state hidden)")
    }
}

/// 32 bytes from the system RNG.
pub fn os_seed() -> Result<[u8; 32], BfvError> {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|e| BfvError::Rng {
        reason: e.to_string(),
    })?;
    Ok(seed)
}

impl Prng {
    /// Seeded from the system RNG.
    pub fn from_os() -> Result<Self, BfvError> {
        Ok(Self::from_seed(os_seed()?))
    }

    /// Deterministic: the same seed gives the same stream on every target.
    pub fn from_seed(seed: [u8; 32]) -> Self {
        Prng(ChaCha20Rng::from_seed(seed))
    }

    /// A fresh 32-byte seed drawn from this stream.
    pub fn seed(&mut self) -> [u8; 32] {
        let mut s = [0u8; 32];
        self.0.fill_bytes(&mut s);
        s
    }

    /// Uniform `u32`.
    pub fn next_u32(&mut self) -> u32 {
        self.0.next_u32()
    }

    /// Uniform `u64`.
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }
}
