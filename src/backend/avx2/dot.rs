//! The avx2 dot products of the key holder's 1:N scores: two products per
//! residue summed in 64-bit lanes, reduced once per block.

use core::arch::x86_64::*;

use crate::arith::Modulus;
use crate::backend::scalar::{self, fits_one_sum};
use crate::backend::STREAM_AHEAD;

use super::lanes::*;

/// Residues per register.
const W: usize = 8;

/// Blocks whose sums one transpose gathers: one per 64-bit lane.
const GROUP: usize = 4;

/// `Σ_k a_k·x_k + b_k·y_k mod q`, equal to [`scalar::dot2`], for residues
/// below `q < 2^30`: the four products of a lane (each below `2^60`) are
/// summed, and where [`fits_one_sum`] allows in one 64-bit accumulator per
/// lane, elsewhere with their low and high 32-bit halves accumulated apart,
/// so nothing overflows before the one reduction at the end.
///
/// The caller streams through much longer arrays than `a` and `b` (a
/// gallery, block after block), so the kernel prefetches
/// [`STREAM_PREFETCH`](crate::backend::STREAM_PREFETCH) words past where
/// it reads them into L2 (the probe fills L1): a hint, never a read.
///
/// # Safety
/// The CPU supports AVX2.
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn dot2(m: &Modulus, a: &[u32], x: &[u32], b: &[u32], y: &[u32]) -> u32 {
    // SAFETY: AVX2 is enabled here.
    unsafe { dot2_block(m, a, x, b, y) }
}

/// [`dot2`] of each block of `x.len() / sums[k].len()` words, into
/// `sums[k]`, for each of `K` ciphertexts' residues `gallery[k] = (a, b)`
/// against the same `x` and `y`: the key holder's block sums of one prime
/// in one call. `ahead[k]` is where the steps over `gallery[k]` prefetch,
/// in words past what they read.
///
/// Where the blocks are whole vectors, come in groups of four and
/// [`scalar::fold_constant`] allows, each block keeps one accumulator, and
/// a group's four are folded below `2^62` and summed across lanes by one
/// transpose, so a block costs a handful of vector operations beyond its
/// products instead of two horizontal sums and three scalar reductions.
/// There each vector of `x` and `y` is loaded (and its odd lanes shifted)
/// once for all `K`: in cache, the loads bound this kernel.
///
/// # Safety
/// The CPU supports AVX2.
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn dot2_blocks<const K: usize>(
    m: &Modulus,
    gallery: [(&[u32], &[u32]); K],
    x: &[u32],
    y: &[u32],
    sums: [&mut [u32]; K],
    ahead: [(isize, isize); K],
) {
    let blocks = sums.first().map_or(0, |s| s.len());
    if let Some(c) = scalar::fold_constant(m, x.len(), blocks, W, GROUP) {
        let vectors = x.len() / blocks / W;
        // SAFETY: AVX2 is enabled here.
        unsafe { grouped(m, c, vectors, gallery, x, y, sums, ahead) };
        return;
    }
    for ((a, b), sums) in gallery.into_iter().zip(sums) {
        // SAFETY: AVX2 is enabled here, and so in the closure.
        scalar::each_block(a, x, b, y, sums, |a, x, b, y| unsafe {
            dot2_block(m, a, x, b, y)
        });
    }
}

/// [`dot2_blocks`] for blocks of `vectors` whole vectors, in groups of
/// [`GROUP`], with `c = 2^32 mod q` from [`scalar::fold_constant`].
/// Safety: AVX2.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn grouped<const K: usize>(
    m: &Modulus,
    c: u32,
    vectors: usize,
    gallery: [(&[u32], &[u32]); K],
    x: &[u32],
    y: &[u32],
    mut sums: [&mut [u32]; K],
    ahead: [(isize, isize); K],
) {
    let (xv, yv) = (split_vectors(x).0, split_vectors(y).0);
    let av = gallery.map(|(a, _)| split_vectors(a).0);
    let bv = gallery.map(|(_, b)| split_vectors(b).0);
    let group = GROUP * vectors;
    // SAFETY (whole block): AVX2 is enabled in every caller, and the helpers
    // need no more.
    unsafe {
        let (low, c) = (
            _mm256_set1_epi64x(0xffff_ffff),
            _mm256_set1_epi64x(c as i64),
        );
        for (g, (x, y)) in xv
            .chunks_exact(group)
            .zip(yv.chunks_exact(group))
            .enumerate()
        {
            let mut acc = [[_mm256_setzero_si256(); GROUP]; K];
            for (i, (x, y)) in x
                .chunks_exact(vectors)
                .zip(y.chunks_exact(vectors))
                .enumerate()
            {
                let at = (g * GROUP + i) * vectors;
                let a = av.map(|a| &a[at..at + x.len()]);
                let b = bv.map(|b| &b[at..at + x.len()]);
                let mut s = [_mm256_setzero_si256(); K];
                for (v, (x, y)) in x.iter().zip(y).enumerate() {
                    let probe = Probe::load(x, y);
                    for k in 0..K {
                        s[k] =
                            _mm256_add_epi64(s[k], dot_step(&a[k][v], &b[k][v], probe, ahead[k]));
                    }
                }
                for (acc, s) in acc.iter_mut().zip(s) {
                    acc[i] = _mm256_add_epi64(
                        _mm256_and_si256(s, low),
                        _mm256_mul_epu32(_mm256_srli_epi64(s, 32), c),
                    );
                }
            }
            for (acc, sums) in acc.into_iter().zip(sums.iter_mut()) {
                let mut total = [0u64; GROUP];
                _mm256_storeu_si256(total.as_mut_ptr().cast(), lane_sums(acc));
                for (o, t) in sums[g * GROUP..(g + 1) * GROUP].iter_mut().zip(total) {
                    *o = m.reduce_u64(t);
                }
            }
        }
    }
}

/// Lane `j` of the result is the sum of the four lanes of `v[j]`: pairs
/// interleaved and added, then the 128-bit halves. Safety: AVX2.
#[inline(always)]
unsafe fn lane_sums(v: [__m256i; GROUP]) -> __m256i {
    // SAFETY: the caller runs on a CPU with AVX2.
    unsafe {
        // 128-bit half k: (v_i[2k] + v_i[2k+1], the same of v_{i+1}).
        let p01 = _mm256_add_epi64(
            _mm256_unpacklo_epi64(v[0], v[1]),
            _mm256_unpackhi_epi64(v[0], v[1]),
        );
        let p23 = _mm256_add_epi64(
            _mm256_unpacklo_epi64(v[2], v[3]),
            _mm256_unpackhi_epi64(v[2], v[3]),
        );
        _mm256_add_epi64(
            _mm256_permute2x128_si256::<0x20>(p01, p23),
            _mm256_permute2x128_si256::<0x31>(p01, p23),
        )
    }
}

/// The body of [`dot2`]. Safety: AVX2.
#[inline(always)]
unsafe fn dot2_block(m: &Modulus, a: &[u32], x: &[u32], b: &[u32], y: &[u32]) -> u32 {
    debug_assert!(
        m.value() < 1 << 30 && a.len() == x.len() && b.len() == y.len() && a.len() == b.len()
    );
    debug_assert!(a.len() < 1 << 24);
    let ((av, at), (xv, xt)) = (split_vectors(a), split_vectors(x));
    let ((bv, bt), (yv, yt)) = (split_vectors(b), split_vectors(y));
    // SAFETY (whole block): AVX2 is enabled in every caller, and the
    // helpers need no more.
    let (lo, hi) = unsafe {
        let low = _mm256_set1_epi64x(0xffff_ffff);
        let (mut lo, mut hi) = (_mm256_setzero_si256(), _mm256_setzero_si256());
        let lanes = av.iter().zip(xv).zip(bv).zip(yv);
        if fits_one_sum(m, av.len()) {
            for (((a, x), b), y) in lanes {
                let probe = Probe::load(x, y);
                lo = _mm256_add_epi64(lo, dot_step(a, b, probe, STREAM_AHEAD));
            }
            hi = _mm256_srli_epi64(lo, 32);
            lo = _mm256_and_si256(lo, low);
        } else {
            for (((a, x), b), y) in lanes {
                let s = dot_step(a, b, Probe::load(x, y), STREAM_AHEAD);
                lo = _mm256_add_epi64(lo, _mm256_and_si256(s, low));
                hi = _mm256_add_epi64(hi, _mm256_srli_epi64(s, 32));
            }
        }
        (hsum_epi64(lo), hsum_epi64(hi))
    };
    let sum = scalar::join_halves(m, lo, hi);
    // The scalar loop sizes its sums with two divisions: skipped where the
    // vectors cover everything (the key holder's blocks of 128 words).
    if at.is_empty() {
        sum
    } else {
        m.add(sum, scalar::dot2(m, at, xt, bt, yt))
    }
}

/// The sum of the four 64-bit lanes of `v`. Safety: AVX2.
#[inline(always)]
unsafe fn hsum_epi64(v: __m256i) -> u64 {
    // SAFETY: the caller runs on a CPU with AVX2 (and so SSE4.1).
    unsafe {
        let s = _mm_add_epi64(_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
        (_mm_cvtsi128_si64(s) as u64).wrapping_add(_mm_extract_epi64::<1>(s) as u64)
    }
}

/// One vector of the probe's `x` and `y`, and each shifted to its odd
/// lanes: what every ciphertext's step at that offset multiplies by.
#[derive(Clone, Copy)]
struct Probe {
    x: __m256i,
    y: __m256i,
    x_odd: __m256i,
    y_odd: __m256i,
}

impl Probe {
    /// Safety: AVX2.
    #[inline(always)]
    unsafe fn load(x: &[u32; 8], y: &[u32; 8]) -> Self {
        // SAFETY: the caller runs on a CPU with AVX2.
        unsafe {
            let (x, y) = (load(x), load(y));
            Probe {
                x,
                y,
                x_odd: _mm256_srli_epi64(x, 32),
                y_odd: _mm256_srli_epi64(y, 32),
            }
        }
    }
}

/// `a·x + b·y` in each 64-bit lane's even and odd halves, summed: four
/// products below `2^60`. Prefetches `ahead` words (signed) past `a` and
/// `b`. Safety: AVX2.
#[inline(always)]
unsafe fn dot_step(a: &[u32; 8], b: &[u32; 8], p: Probe, ahead: (isize, isize)) -> __m256i {
    // SAFETY: the caller runs on a CPU with AVX2; the prefetches are hints.
    unsafe {
        _mm_prefetch::<_MM_HINT_T1>(a.as_ptr().wrapping_offset(ahead.0).cast());
        _mm_prefetch::<_MM_HINT_T1>(b.as_ptr().wrapping_offset(ahead.1).cast());
        let (a, b) = (load(a), load(b));
        let even = _mm256_add_epi64(_mm256_mul_epu32(a, p.x), _mm256_mul_epu32(b, p.y));
        let odd = _mm256_add_epi64(
            _mm256_mul_epu32(_mm256_srli_epi64(a, 32), p.x_odd),
            _mm256_mul_epu32(_mm256_srli_epi64(b, 32), p.y_odd),
        );
        _mm256_add_epi64(even, odd)
    }
}
