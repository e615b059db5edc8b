//! The vector helpers of the avx2 kernels: modular arithmetic on whole
//! registers, butterflies, transposes, loads and stores.

use core::arch::x86_64::*;

use super::*;

// ---------------------------------------------------------------------------
// Eight-lane arithmetic. Safety for every helper: the CPU supports AVX2.

/// Modulus constants broadcast to all lanes.
#[derive(Clone, Copy)]
pub(super) struct Consts {
    pub(super) q: __m256i,
    pub(super) two_q: __m256i,
}

impl Consts {
    #[inline(always)]
    pub(super) unsafe fn new(q: u32) -> Self {
        // SAFETY: the caller runs on a CPU with AVX2.
        unsafe {
            Self {
                q: _mm256_set1_epi32(q as i32),
                two_q: _mm256_set1_epi32((2 * q) as i32),
            }
        }
    }
}

/// A twiddle for eight butterflies. `_mm256_mul_epu32` reads only the even
/// lanes, so the odd lanes' Shoup companions are kept shifted down into even
/// position; for a broadcast twiddle both are the same register.
#[derive(Clone, Copy)]
pub(super) struct Twiddle {
    pub(super) w: __m256i,
    pub(super) shoup_even: __m256i,
    pub(super) shoup_odd: __m256i,
}

impl Twiddle {
    #[inline(always)]
    pub(super) unsafe fn splat(w: u32, shoup: u32) -> Self {
        // SAFETY: the caller runs on a CPU with AVX2.
        unsafe {
            let shoup = _mm256_set1_epi32(shoup as i32);
            Self {
                w: _mm256_set1_epi32(w as i32),
                shoup_even: shoup,
                shoup_odd: shoup,
            }
        }
    }

    #[inline(always)]
    pub(super) unsafe fn lanes(w: &Lanes, shoup: &Lanes) -> Self {
        // SAFETY: the caller runs on a CPU with AVX2; `Lanes` is 32 bytes,
        // 32-aligned.
        unsafe {
            let shoup = _mm256_load_si256(shoup.0.as_ptr().cast());
            Self {
                w: _mm256_load_si256(w.0.as_ptr().cast()),
                shoup_even: shoup,
                shoup_odd: _mm256_srli_epi64::<32>(shoup),
            }
        }
    }
}

#[inline(always)]
pub(super) unsafe fn load(p: &[u32; 8]) -> __m256i {
    // SAFETY: the caller runs on a CPU with AVX2; `p` is 32 readable bytes
    // and the load is unaligned.
    unsafe { _mm256_loadu_si256(p.as_ptr().cast()) }
}

#[inline(always)]
pub(super) unsafe fn store(p: &mut [u32; 8], x: __m256i) {
    // SAFETY: the caller runs on a CPU with AVX2; `p` is 32 writable bytes
    // and the store is unaligned.
    unsafe { _mm256_storeu_si256(p.as_mut_ptr().cast(), x) }
}

/// `x - m` where `x >= m`, else `x` (`m <= 2^31`): when `x < m` the
/// difference wraps above `x`, so an unsigned min picks the right one with no
/// mask.
#[inline(always)]
pub(super) unsafe fn csub(x: __m256i, m: __m256i) -> __m256i {
    // SAFETY: the caller runs on a CPU with AVX2.
    unsafe { _mm256_min_epu32(x, _mm256_sub_epi32(x, m)) }
}

/// Lazy Shoup product `y · w mod q` in `[0, 2q)` for any `y`, as
/// [`Modulus::mul_shoup_lazy`](crate::arith::Modulus::mul_shoup_lazy) per lane.
#[inline(always)]
pub(super) unsafe fn mul_shoup_lazy(y: __m256i, w: Twiddle, q: __m256i) -> __m256i {
    // SAFETY: the caller runs on a CPU with AVX2.
    unsafe {
        // The quotient estimate is the high half of y · w'; 32x32->64 products
        // exist only for even lanes, so odd lanes go through a shifted copy.
        let even = _mm256_srli_epi64::<32>(_mm256_mul_epu32(y, w.shoup_even));
        let odd = _mm256_mul_epu32(_mm256_srli_epi64::<32>(y), w.shoup_odd);
        let est = _mm256_blend_epi32::<0b1010_1010>(even, odd);
        // The true remainder is below 2q < 2^32, so low halves suffice.
        _mm256_sub_epi32(_mm256_mullo_epi32(y, w.w), _mm256_mullo_epi32(est, q))
    }
}

/// Montgomery product `a · b · 2^-32 mod q` in `[0, 2q)` for `a · b < q · 2^32`,
/// as [`Modulus::mont_mul_lazy`](crate::arith::Modulus::mont_mul_lazy) per lane.
#[inline(always)]
pub(super) unsafe fn mont_mul_lazy(
    a: __m256i,
    b: __m256i,
    q: __m256i,
    q_neg_inv: __m256i,
) -> __m256i {
    // SAFETY: the caller runs on a CPU with AVX2.
    unsafe {
        let even = mont_mul_even(a, b, q, q_neg_inv);
        let a_odd = _mm256_srli_epi64::<32>(a);
        let odd = mont_mul_even(a_odd, _mm256_srli_epi64::<32>(b), q, q_neg_inv);
        _mm256_blend_epi32::<0b1010_1010>(_mm256_srli_epi64::<32>(even), odd)
    }
}

/// [`mont_mul_lazy`] of the even lanes, left in the high half of each 64-bit
/// lane.
#[inline(always)]
pub(super) unsafe fn mont_mul_even(
    a: __m256i,
    b: __m256i,
    q: __m256i,
    q_neg_inv: __m256i,
) -> __m256i {
    // SAFETY: the caller runs on a CPU with AVX2.
    unsafe {
        // t + (t · (-q^-1) mod 2^32) · q has a zero low half and the result in
        // the high half; t < 2^60 and the correction < 2^62, so it fits.
        let t = _mm256_mul_epu32(a, b);
        let m = _mm256_mul_epu32(t, q_neg_inv);
        _mm256_add_epi64(t, _mm256_mul_epu32(m, q))
    }
}

/// Forward (Cooley–Tukey) butterfly, `[0, 4q)` in and out.
#[inline(always)]
pub(super) unsafe fn fwd_butterfly(
    x: __m256i,
    y: __m256i,
    w: Twiddle,
    c: Consts,
) -> (__m256i, __m256i) {
    // SAFETY: the caller runs on a CPU with AVX2.
    unsafe {
        let u = csub(x, c.two_q);
        let v = mul_shoup_lazy(y, w, c.q);
        (
            _mm256_add_epi32(u, v),
            _mm256_sub_epi32(_mm256_add_epi32(u, c.two_q), v),
        )
    }
}

/// Inverse (Gentleman–Sande) butterfly, `[0, 2q)` in and out.
#[inline(always)]
pub(super) unsafe fn inv_butterfly(
    x: __m256i,
    y: __m256i,
    w: Twiddle,
    c: Consts,
) -> (__m256i, __m256i) {
    // SAFETY: the caller runs on a CPU with AVX2.
    unsafe {
        let sum = csub(_mm256_add_epi32(x, y), c.two_q);
        let diff = _mm256_sub_epi32(_mm256_add_epi32(x, c.two_q), y);
        (sum, mul_shoup_lazy(diff, w, c.q))
    }
}

/// The last inverse butterfly: the twiddle `n_inv_w` already includes the
/// scaling by `n^-1`, which `n_inv` applies to the other output; both outputs
/// are fully reduced.
#[inline(always)]
pub(super) unsafe fn inv_last_butterfly(
    x: __m256i,
    y: __m256i,
    n_inv: Twiddle,
    n_inv_w: Twiddle,
    c: Consts,
) -> (__m256i, __m256i) {
    // SAFETY: the caller runs on a CPU with AVX2.
    unsafe {
        let sum = _mm256_add_epi32(x, y);
        let diff = _mm256_sub_epi32(_mm256_add_epi32(x, c.two_q), y);
        (
            csub(mul_shoup_lazy(sum, n_inv, c.q), c.q),
            csub(mul_shoup_lazy(diff, n_inv_w, c.q), c.q),
        )
    }
}

/// Transposes eight rows of eight lanes. Its own inverse.
#[inline(always)]
pub(super) unsafe fn transpose(x: [__m256i; 8]) -> [__m256i; 8] {
    // SAFETY: the caller runs on a CPU with AVX2.
    unsafe {
        // 2x2 blocks of 32-bit values, then of 64-bit pairs, within each
        // 128-bit half; then swap the off-diagonal halves across registers.
        let a0 = _mm256_unpacklo_epi32(x[0], x[1]);
        let a1 = _mm256_unpackhi_epi32(x[0], x[1]);
        let a2 = _mm256_unpacklo_epi32(x[2], x[3]);
        let a3 = _mm256_unpackhi_epi32(x[2], x[3]);
        let a4 = _mm256_unpacklo_epi32(x[4], x[5]);
        let a5 = _mm256_unpackhi_epi32(x[4], x[5]);
        let a6 = _mm256_unpacklo_epi32(x[6], x[7]);
        let a7 = _mm256_unpackhi_epi32(x[6], x[7]);
        let b0 = _mm256_unpacklo_epi64(a0, a2);
        let b1 = _mm256_unpackhi_epi64(a0, a2);
        let b2 = _mm256_unpacklo_epi64(a1, a3);
        let b3 = _mm256_unpackhi_epi64(a1, a3);
        let b4 = _mm256_unpacklo_epi64(a4, a6);
        let b5 = _mm256_unpackhi_epi64(a4, a6);
        let b6 = _mm256_unpacklo_epi64(a5, a7);
        let b7 = _mm256_unpackhi_epi64(a5, a7);
        [
            _mm256_permute2x128_si256::<0x20>(b0, b4),
            _mm256_permute2x128_si256::<0x20>(b1, b5),
            _mm256_permute2x128_si256::<0x20>(b2, b6),
            _mm256_permute2x128_si256::<0x20>(b3, b7),
            _mm256_permute2x128_si256::<0x31>(b0, b4),
            _mm256_permute2x128_si256::<0x31>(b1, b5),
            _mm256_permute2x128_si256::<0x31>(b2, b6),
            _mm256_permute2x128_si256::<0x31>(b3, b7),
        ]
    }
}

/// One forward stage on eight registers: register `k` pairs with `k + d` (for
/// `k` with bit `d` clear) using twiddle `w[k / 2d]`.
#[inline(always)]
pub(super) unsafe fn fwd_block_stage(x: &mut [__m256i; 8], d: usize, w: &[Twiddle], c: Consts) {
    for k in (0..8).filter(|k| k & d == 0) {
        // SAFETY: the caller runs on a CPU with AVX2.
        (x[k], x[k + d]) = unsafe { fwd_butterfly(x[k], x[k + d], w[k / (2 * d)], c) };
    }
}

/// [`fwd_block_stage`] with the inverse butterfly.
#[inline(always)]
pub(super) unsafe fn inv_block_stage(x: &mut [__m256i; 8], d: usize, w: &[Twiddle], c: Consts) {
    for k in (0..8).filter(|k| k & d == 0) {
        // SAFETY: the caller runs on a CPU with AVX2.
        (x[k], x[k + d]) = unsafe { inv_butterfly(x[k], x[k + d], w[k / (2 * d)], c) };
    }
}

/// Views `a` as whole registers' worth of values, plus the leftover tail.
pub(super) fn split_vectors(a: &[u32]) -> (&[[u32; 8]], &[u32]) {
    let whole = a.len() / 8;
    // SAFETY: `[u32; 8]` has the alignment of `u32`, and `whole` of them fit
    // in `a`, which stays borrowed for the result's lifetime.
    let head = unsafe { std::slice::from_raw_parts(a.as_ptr().cast(), whole) };
    (head, &a[8 * whole..])
}

/// [`split_vectors`] for a mutable slice.
pub(super) fn split_vectors_mut(a: &mut [u32]) -> (&mut [[u32; 8]], &mut [u32]) {
    let whole = a.len() / 8;
    let (head, tail) = a.split_at_mut(8 * whole);
    // SAFETY: as in `split_vectors`; `head` is exactly `whole` arrays long and
    // is mutably borrowed for the result's lifetime.
    let head = unsafe { std::slice::from_raw_parts_mut(head.as_mut_ptr().cast(), whole) };
    (head, tail)
}

/// Splits a group of vectors into its four quarters.
pub(super) fn quarters<T>(group: &mut [T]) -> [&mut [T]; 4] {
    let (lo, hi) = group.split_at_mut(group.len() / 2);
    let (x0, x1) = lo.split_at_mut(lo.len() / 2);
    let (x2, x3) = hi.split_at_mut(hi.len() / 2);
    [x0, x1, x2, x3]
}

/// Broadcast twiddle number `i` of a table and its Shoup companion.
#[inline(always)]
pub(super) unsafe fn splat_twiddle(w: &[u32], w_shoup: &[u32], i: usize) -> Twiddle {
    // SAFETY: the caller runs on a CPU with AVX2.
    unsafe { Twiddle::splat(w[i], w_shoup[i]) }
}

/// `count <= 4` per-lane twiddles from a block's slice of a lane table,
/// starting with twiddle vector `first`.
#[inline(always)]
pub(super) unsafe fn lane_twiddles(lanes: &[Lanes], first: usize, count: usize) -> [Twiddle; 4] {
    let at = |j: usize| (&lanes[2 * (first + j)], &lanes[2 * (first + j) + 1]);
    // SAFETY (whole block): the caller runs on a CPU with AVX2.
    unsafe {
        let (w, shoup) = at(0);
        let mut out = [Twiddle::lanes(w, shoup); 4];
        for (j, o) in out.iter_mut().enumerate().take(count).skip(1) {
            let (w, shoup) = at(j);
            *o = Twiddle::lanes(w, shoup);
        }
        out
    }
}

#[inline(always)]
pub(super) unsafe fn load_block(block: &[[u32; 8]]) -> [__m256i; 8] {
    // SAFETY (whole block): the caller runs on a CPU with AVX2.
    unsafe {
        let mut x = [_mm256_setzero_si256(); 8];
        for (x, p) in x.iter_mut().zip(block) {
            *x = load(p);
        }
        x
    }
}

#[inline(always)]
pub(super) unsafe fn store_block(block: &mut [[u32; 8]], x: [__m256i; 8]) {
    for (p, x) in block.iter_mut().zip(x) {
        // SAFETY: the caller runs on a CPU with AVX2.
        unsafe { store(p, x) };
    }
}
