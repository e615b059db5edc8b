//! AVX2 ChaCha20: eight blocks per pass, lane `j` of register `i` holding
//! word `i` of block `counter + j`.
//!
//! Rotations by 16 and 8 are byte shuffles (`vpshufb`), by 12 and 7 two
//! shifts and an OR. The sixteen state registers fill the register file, so
//! the compiler spills a few during the rounds; that still beats the
//! four-block layout that needs lane shuffles between half-rounds. At the
//! end two 8x8 transposes (words 0..8 and 8..16) turn lanes back into blocks.
//! A refill is two passes.

use core::arch::x86_64::*;

use super::rounds::{initial_state, rounds_and_feed_forward};
use super::{block_counters, BLOCK_WORDS, BUF_WORDS};

const LANES: usize = 8;

#[inline]
#[target_feature(enable = "avx2")]
fn rotl16(x: __m256i) -> __m256i {
    let idx = _mm256_setr_epi8(
        2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13, //
        2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13,
    );
    _mm256_shuffle_epi8(x, idx)
}

#[inline]
#[target_feature(enable = "avx2")]
fn rotl8(x: __m256i) -> __m256i {
    let idx = _mm256_setr_epi8(
        3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10, 15, 12, 13, 14, //
        3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10, 15, 12, 13, 14,
    );
    _mm256_shuffle_epi8(x, idx)
}

#[inline]
#[target_feature(enable = "avx2")]
fn rotl12(x: __m256i) -> __m256i {
    _mm256_or_si256(_mm256_slli_epi32::<12>(x), _mm256_srli_epi32::<20>(x))
}

#[inline]
#[target_feature(enable = "avx2")]
fn rotl7(x: __m256i) -> __m256i {
    _mm256_or_si256(_mm256_slli_epi32::<7>(x), _mm256_srli_epi32::<25>(x))
}

/// Transposes the 8x8 matrix of words whose rows are `r` (row `i` = word `i`
/// of eight blocks) so that row `j` becomes the eight words of block `j`.
#[inline]
#[target_feature(enable = "avx2")]
fn transpose8(r: [__m256i; 8]) -> [__m256i; 8] {
    // Pairs of words, then pairs of pairs, then 128-bit halves.
    let t0 = _mm256_unpacklo_epi32(r[0], r[1]);
    let t1 = _mm256_unpackhi_epi32(r[0], r[1]);
    let t2 = _mm256_unpacklo_epi32(r[2], r[3]);
    let t3 = _mm256_unpackhi_epi32(r[2], r[3]);
    let t4 = _mm256_unpacklo_epi32(r[4], r[5]);
    let t5 = _mm256_unpackhi_epi32(r[4], r[5]);
    let t6 = _mm256_unpacklo_epi32(r[6], r[7]);
    let t7 = _mm256_unpackhi_epi32(r[6], r[7]);
    let u0 = _mm256_unpacklo_epi64(t0, t2);
    let u1 = _mm256_unpackhi_epi64(t0, t2);
    let u2 = _mm256_unpacklo_epi64(t1, t3);
    let u3 = _mm256_unpackhi_epi64(t1, t3);
    let u4 = _mm256_unpacklo_epi64(t4, t6);
    let u5 = _mm256_unpackhi_epi64(t4, t6);
    let u6 = _mm256_unpacklo_epi64(t5, t7);
    let u7 = _mm256_unpackhi_epi64(t5, t7);
    [
        _mm256_permute2x128_si256::<0x20>(u0, u4),
        _mm256_permute2x128_si256::<0x20>(u1, u5),
        _mm256_permute2x128_si256::<0x20>(u2, u6),
        _mm256_permute2x128_si256::<0x20>(u3, u7),
        _mm256_permute2x128_si256::<0x31>(u0, u4),
        _mm256_permute2x128_si256::<0x31>(u1, u5),
        _mm256_permute2x128_si256::<0x31>(u2, u6),
        _mm256_permute2x128_si256::<0x31>(u3, u7),
    ]
}

#[inline]
#[target_feature(enable = "avx2")]
fn load8(w: &[u32; LANES]) -> __m256i {
    // SAFETY: `w` is 32 readable bytes; `loadu` needs no alignment.
    unsafe { _mm256_loadu_si256(w.as_ptr().cast()) }
}

#[inline]
#[target_feature(enable = "avx2")]
fn store8(out: &mut [u32], v: __m256i) {
    assert!(out.len() >= LANES);
    // SAFETY: `out` has at least eight writable `u32`s (32 bytes), borrowed
    // exclusively; `storeu` needs no alignment.
    unsafe { _mm256_storeu_si256(out.as_mut_ptr().cast(), v) }
}

/// Blocks `counter .. counter + BUF_BLOCKS`, as `scalar::blocks`.
#[target_feature(enable = "avx2")]
pub(super) fn blocks(key: &[u32; 8], counter: u64, out: &mut [u32; BUF_WORDS]) {
    for (p, chunk) in out.chunks_exact_mut(LANES * BLOCK_WORDS).enumerate() {
        blocks8(key, counter.wrapping_add((p * LANES) as u64), chunk);
    }
}

/// Blocks `counter .. counter + 8` into `out[..128]`.
#[inline]
#[target_feature(enable = "avx2")]
fn blocks8(key: &[u32; 8], counter: u64, out: &mut [u32]) {
    let (lo, hi) = block_counters::<LANES>(counter);
    let splat = |w: u32| _mm256_set1_epi32(w as i32);
    let mut x: [__m256i; 16] =
        initial_state!(splat, key, load8(&lo), load8(&hi), _mm256_setzero_si256());
    rounds_and_feed_forward!(
        x,
        add = _mm256_add_epi32,
        xor = _mm256_xor_si256,
        rotl = [rotl16, rotl12, rotl8, rotl7]
    );
    let low: [__m256i; 8] = x[..8].try_into().expect("eight rows");
    let high: [__m256i; 8] = x[8..].try_into().expect("eight rows");
    for (half, rows) in [transpose8(low), transpose8(high)].into_iter().enumerate() {
        for (j, row) in rows.into_iter().enumerate() {
            store8(&mut out[j * BLOCK_WORDS + half * LANES..], row);
        }
    }
}
