//! ChaCha20 keystream blocks for the crate's seeded generator, several at a
//! time.
//!
//! The stream is RFC 7539's block function with the original (Bernstein)
//! state layout that `rand_chacha`'s `ChaCha20Rng` uses, so seeded streams,
//! and every key and ciphertext derived from them, are unchanged:
//!
//! ```text
//! words  0..4   "expand 32-byte k"
//! words  4..12  the 32-byte seed, little-endian words
//! words 12..14  64-bit block counter, low word first, starting at 0
//! words 14..16  zero (the stream id)
//! ```
//!
//! A refill computes [`BUF_BLOCKS`] consecutive blocks into one buffer, in
//! counter order. The kernels keep one state word of every block in one
//! vector (lane `j` belongs to block `counter + j`), so a round is the scalar
//! round on whole registers, with no shuffles between the column and diagonal
//! halves; only the final store transposes.
//!
//! | kernel    | blocks per pass | file         |
//! |-----------|-----------------|--------------|
//! | `scalar`  | 1               | `scalar.rs`  |
//! | `avx2`    | 8               | `avx2.rs`    |
//! | `avx512`  | 16              | `avx512.rs`  |
//! | `neon`    | 4               | `neon.rs`    |
//! | `simd128` | 4               | `simd128.rs` |
//!
//! The kernel follows the [`Backend`] the generator was made with, so the
//! only CPU check is the one behind that value.

use crate::backend::Backend;

mod rounds;
pub(crate) mod scalar;

#[cfg(bm_avx)]
mod avx2;

#[cfg(bm_avx)]
mod avx512;

#[cfg(bm_neon)]
mod neon;

#[cfg(bm_simd128)]
mod simd128;

/// 32-bit words in one ChaCha block (64 bytes).
pub(crate) const BLOCK_WORDS: usize = 16;
/// Blocks per refill: one AVX-512 pass, two AVX2 passes, four NEON /
/// simd128 passes.
pub(crate) const BUF_BLOCKS: usize = 16;
/// Words per refill (1 KiB).
pub(crate) const BUF_WORDS: usize = BLOCK_WORDS * BUF_BLOCKS;
/// ChaCha20: 20 rounds, as 10 column-and-diagonal double rounds.
pub(crate) const DOUBLE_ROUNDS: usize = 10;
/// "expand 32-byte k" as little-endian words.
pub(crate) const SIGMA: [u32; 4] = [0x6170_7865, 0x3320_646e, 0x7962_2d32, 0x6b20_6574];

/// Low and high words of the block counters `counter + j` for `j < L`,
/// wrapping at 2^64 like the scalar kernel (computed here, outside the
/// vector code, so no kernel needs a 64-bit lane add with carry). Only the
/// vector kernels use it.
#[cfg(any(bm_avx, bm_neon, bm_simd128))]
#[inline]
pub(crate) fn block_counters<const L: usize>(counter: u64) -> ([u32; L], [u32; L]) {
    let mut lo = [0u32; L];
    let mut hi = [0u32; L];
    for j in 0..L {
        let c = counter.wrapping_add(j as u64);
        lo[j] = c as u32;
        hi[j] = (c >> 32) as u32;
    }
    (lo, hi)
}

/// Fills `out` with blocks `counter .. counter + BUF_BLOCKS` of the stream
/// keyed by `key`, with `backend`'s kernel. Every kernel gives the same words.
pub(crate) fn blocks(backend: Backend, key: &[u32; 8], counter: u64, out: &mut [u32; BUF_WORDS]) {
    dispatch!(
        backend.of(super::Family::Sampling),
        blocks(key, counter, out)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kernel against scalar where the block counter carries into its
    /// high word and where it wraps at 2^64 (out of reach through `Prng`).
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    #[cfg_attr(not(target_arch = "wasm32"), test)]
    fn every_kernel_matches_scalar_across_counter_carries() {
        let key: [u32; 8] = std::array::from_fn(|i| 0x9e37_79b9u32.wrapping_mul(i as u32 + 1));
        let counters = [
            0,
            1,
            7,
            (1 << 32) - 5,
            (1 << 32) - 1,
            u64::MAX - 3,
            u64::MAX,
        ];
        for b in crate::backend::test_helpers::backends() {
            for &ctr in &counters {
                let mut want = [0u32; BUF_WORDS];
                scalar::blocks(&key, ctr, &mut want);
                // Block by block, each block's own counter.
                for j in 0..BUF_BLOCKS {
                    let mut one = [0u32; BLOCK_WORDS];
                    scalar::block(&key, ctr.wrapping_add(j as u64), &mut one);
                    assert_eq!(one[..], want[j * BLOCK_WORDS..][..BLOCK_WORDS]);
                }
                let mut got = [0u32; BUF_WORDS];
                blocks(b, &key, ctr, &mut got);
                assert_eq!(got, want, "counter {ctr:#x}, {b:?}");
            }
        }
    }
}
