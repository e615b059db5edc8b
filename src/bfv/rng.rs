//! Randomness: ChaCha20 seeded from the operating system (or, in wasm,
//! `crypto.getRandomValues` through getrandom). A failing system RNG is an
//! error, never a fallback. Deterministic seeds exist for tests and
//! known-answer vectors only.
//!
//! The keystream is computed by this crate's own multi-block kernels
//! (`src/backend/chacha/`), and is word for word the stream of `rand_chacha`
//! 0.10's `ChaCha20Rng::from_seed` under the same calls: a `u32` is the next
//! keystream word, a `u64` the next two (low word first, also across a
//! refill), and a byte fill takes whole words little-endian, the last one
//! possibly in part (its unused bytes are dropped). Seeded known-answer
//! vectors made before this implementation therefore still hold.

use zeroize::Zeroize;

use crate::backend::chacha::{self, BUF_BLOCKS, BUF_WORDS};
use crate::backend::Backend;
use crate::error::BfvError;

/// A cryptographic PRNG (ChaCha20).
pub struct Prng {
    /// Keystream words of blocks `counter - BUF_BLOCKS ..counter`.
    buf: [u32; BUF_WORDS],
    /// Next unread word of `buf`; `BUF_WORDS` when it is used up.
    index: usize,
    key: [u32; 8],
    /// Block counter of the next refill.
    counter: u64,
    backend: Backend,
}

impl std::fmt::Debug for Prng {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Prng(ChaCha20, state hidden)")
    }
}

impl Drop for Prng {
    fn drop(&mut self) {
        self.key.zeroize();
        self.buf.zeroize();
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
        Self::from_seed_with_backend(seed, Backend::detect())
    }

    /// As [`Prng::from_seed`], with the ChaCha kernels of `backend`. The
    /// stream does not depend on the backend; this exists so that tests and
    /// benchmarks can compare them.
    pub fn from_seed_with_backend(seed: [u8; 32], backend: Backend) -> Self {
        let mut key = [0u32; 8];
        for (k, bytes) in key.iter_mut().zip(seed.chunks_exact(4)) {
            *k = u32::from_le_bytes(bytes.try_into().expect("4-byte chunk"));
        }
        Prng {
            buf: [0; BUF_WORDS],
            index: BUF_WORDS,
            key,
            counter: 0,
            backend,
        }
    }

    /// The words of the current buffer not read yet (refilling first when
    /// there are none); [`Self::consume`] says how many were used.
    pub(crate) fn unread_words(&mut self) -> &[u32] {
        if self.index >= BUF_WORDS {
            self.refill();
        }
        &self.buf[self.index..]
    }

    /// Marks `k` words of [`Self::unread_words`] as read.
    pub(crate) fn consume(&mut self, k: usize) {
        debug_assert!(self.index + k <= BUF_WORDS);
        self.index += k;
    }

    /// The backend whose kernels this generator and its samplers use.
    pub(crate) fn backend(&self) -> Backend {
        self.backend
    }

    /// Computes the next `BUF_BLOCKS` blocks into the buffer.
    #[cold]
    #[inline(never)]
    fn refill(&mut self) {
        chacha::blocks(self.backend, &self.key, self.counter, &mut self.buf);
        self.counter = self.counter.wrapping_add(BUF_BLOCKS as u64);
        self.index = 0;
    }

    /// A fresh 32-byte seed drawn from this stream.
    pub fn seed(&mut self) -> [u8; 32] {
        let mut s = [0u8; 32];
        self.fill_bytes(&mut s);
        s
    }

    /// Whole words little-endian; a partly used last word loses the rest.
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        let mut chunks = dest.chunks_exact_mut(4);
        for c in &mut chunks {
            c.copy_from_slice(&self.next_u32().to_le_bytes());
        }
        let rest = chunks.into_remainder();
        if !rest.is_empty() {
            let n = rest.len();
            rest.copy_from_slice(&self.next_u32().to_le_bytes()[..n]);
        }
    }

    /// Uniform `u32`.
    #[inline]
    pub fn next_u32(&mut self) -> u32 {
        if self.index >= BUF_WORDS {
            self.refill();
        }
        let v = self.buf[self.index];
        self.index += 1;
        v
    }

    /// Uniform `u64`: two consecutive words, the first one low.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let i = self.index;
        if i + 1 < BUF_WORDS {
            self.index = i + 2;
            (self.buf[i + 1] as u64) << 32 | self.buf[i] as u64
        } else {
            let lo = self.next_u32();
            let hi = self.next_u32();
            (hi as u64) << 32 | lo as u64
        }
    }
}
