//! AVX-512 ChaCha20: sixteen blocks per pass, lane `j` of register `i`
//! holding word `i` of block `counter + j`.
//!
//! Every rotation is one `vprold`, and the sixteen state registers leave
//! half of the 32-register file free, so nothing spills. At the end a
//! 16x16 transpose (32-bit, then 64-bit interleaves inside 128-bit lanes,
//! then two 128-bit lane shuffles) turns lanes back into blocks.

use core::arch::x86_64::*;

use super::rounds::{initial_state, rounds_and_feed_forward};
use super::{block_counters, BLOCK_WORDS, BUF_WORDS};

const LANES: usize = 16;

/// Stores the blocks whose words are the rows `r` (row `i` = word `i` of
/// sixteen blocks) into `out`, block `j` at `out[16·j..]`.
#[inline]
#[target_feature(enable = "avx512f")]
fn store_transposed(r: &[__m512i; 16], out: &mut [u32; BUF_WORDS]) {
    // Within each 128-bit lane L: `c[m][e]` holds words 4m..4m+4 of block
    // 4L + e.
    let mut c = [[_mm512_setzero_si512(); 4]; 4];
    for (m, cm) in c.iter_mut().enumerate() {
        let w = &r[4 * m..4 * m + 4];
        let a0 = _mm512_unpacklo_epi32(w[0], w[1]);
        let a1 = _mm512_unpackhi_epi32(w[0], w[1]);
        let a2 = _mm512_unpacklo_epi32(w[2], w[3]);
        let a3 = _mm512_unpackhi_epi32(w[2], w[3]);
        *cm = [
            _mm512_unpacklo_epi64(a0, a2),
            _mm512_unpackhi_epi64(a0, a2),
            _mm512_unpacklo_epi64(a1, a3),
            _mm512_unpackhi_epi64(a1, a3),
        ];
    }
    // Block 4L + e is lane L of c[0][e], c[1][e], c[2][e], c[3][e]: a 4x4
    // transpose of 128-bit lanes.
    let [c0, c1, c2, c3] = c;
    for (e, (((x0, x1), x2), x3)) in c0.into_iter().zip(c1).zip(c2).zip(c3).enumerate() {
        let d0 = _mm512_shuffle_i32x4::<0x44>(x0, x1);
        let d1 = _mm512_shuffle_i32x4::<0xEE>(x0, x1);
        let d2 = _mm512_shuffle_i32x4::<0x44>(x2, x3);
        let d3 = _mm512_shuffle_i32x4::<0xEE>(x2, x3);
        let blocks = [
            _mm512_shuffle_i32x4::<0x88>(d0, d2),
            _mm512_shuffle_i32x4::<0xDD>(d0, d2),
            _mm512_shuffle_i32x4::<0x88>(d1, d3),
            _mm512_shuffle_i32x4::<0xDD>(d1, d3),
        ];
        for (l, v) in blocks.into_iter().enumerate() {
            let at = (4 * l + e) * BLOCK_WORDS;
            let dst: &mut [u32] = &mut out[at..at + BLOCK_WORDS];
            // SAFETY: `dst` is sixteen writable `u32`s (64 bytes), borrowed
            // exclusively; `storeu` needs no alignment.
            unsafe { _mm512_storeu_si512(dst.as_mut_ptr().cast(), v) }
        }
    }
}

/// Blocks `counter .. counter + 16`, as `scalar::blocks`.
#[target_feature(enable = "avx512f")]
pub(super) fn blocks(key: &[u32; 8], counter: u64, out: &mut [u32; BUF_WORDS]) {
    const _: () = assert!(BUF_WORDS == LANES * BLOCK_WORDS);
    let (lo, hi) = block_counters::<LANES>(counter);
    let splat = |w: u32| _mm512_set1_epi32(w as i32);
    // SAFETY: `lo` and `hi` are sixteen readable `u32`s (64 bytes) each;
    // `loadu` needs no alignment.
    let (lo, hi) = unsafe {
        (
            _mm512_loadu_si512(lo.as_ptr().cast()),
            _mm512_loadu_si512(hi.as_ptr().cast()),
        )
    };
    let mut x: [__m512i; 16] = initial_state!(splat, key, lo, hi, _mm512_setzero_si512());
    rounds_and_feed_forward!(
        x,
        add = _mm512_add_epi32,
        xor = _mm512_xor_si512,
        rotl = [
            _mm512_rol_epi32::<16>,
            _mm512_rol_epi32::<12>,
            _mm512_rol_epi32::<8>,
            _mm512_rol_epi32::<7>
        ]
    );
    store_transposed(&x, out);
}
