//! The vector helpers of the avx512 kernels: modular arithmetic on whole
//! registers, butterflies, transposes, loads and stores.

use core::arch::x86_64::*;

use super::*;

// ---------------------------------------------------------------------------
// Sixteen-lane arithmetic. Safety for every helper: the CPU supports AVX-512F.

/// Modulus constants broadcast to all lanes.
#[derive(Clone, Copy)]
pub(super) struct Consts {
    pub(super) q: __m512i,
    pub(super) two_q: __m512i,
}

impl Consts {
    #[inline(always)]
    pub(super) unsafe fn new(q: u32) -> Self {
        // SAFETY: the caller runs on a CPU with AVX-512F.
        unsafe {
            Self {
                q: _mm512_set1_epi32(q as i32),
                two_q: _mm512_set1_epi32((2 * q) as i32),
            }
        }
    }
}

/// A twiddle for sixteen butterflies. `_mm512_mul_epu32` reads only the even
/// lanes, so the odd lanes' Shoup companions are kept shifted down into even
/// position; for a broadcast twiddle both are the same register.
#[derive(Clone, Copy)]
pub(super) struct Twiddle {
    pub(super) w: __m512i,
    pub(super) shoup_even: __m512i,
    pub(super) shoup_odd: __m512i,
}

impl Twiddle {
    #[inline(always)]
    pub(super) unsafe fn splat(w: u32, shoup: u32) -> Self {
        // SAFETY: the caller runs on a CPU with AVX-512F.
        unsafe {
            let shoup = _mm512_set1_epi32(shoup as i32);
            Self {
                w: _mm512_set1_epi32(w as i32),
                shoup_even: shoup,
                shoup_odd: shoup,
            }
        }
    }

    #[inline(always)]
    pub(super) unsafe fn lanes(w: &Lanes, shoup: &Lanes) -> Self {
        // SAFETY: the caller runs on a CPU with AVX-512F; `Lanes` is 64
        // bytes, 64-aligned.
        unsafe {
            let shoup = _mm512_load_si512(shoup.0.as_ptr().cast());
            Self {
                w: _mm512_load_si512(w.0.as_ptr().cast()),
                shoup_even: shoup,
                shoup_odd: _mm512_srli_epi64::<32>(shoup),
            }
        }
    }
}

#[inline(always)]
pub(super) unsafe fn load(p: &[u32; W]) -> __m512i {
    // SAFETY: the caller runs on a CPU with AVX-512F; `p` is 64 readable
    // bytes and the load is unaligned.
    unsafe { _mm512_loadu_si512(p.as_ptr().cast()) }
}

#[inline(always)]
pub(super) unsafe fn store(p: &mut [u32; W], x: __m512i) {
    // SAFETY: the caller runs on a CPU with AVX-512F; `p` is 64 writable
    // bytes and the store is unaligned.
    unsafe { _mm512_storeu_si512(p.as_mut_ptr().cast(), x) }
}

/// `x - m` where `x >= m`, else `x` (`m <= 2^31`): when `x < m` the
/// difference wraps above `x`, so an unsigned min picks the right one.
#[inline(always)]
pub(super) unsafe fn csub(x: __m512i, m: __m512i) -> __m512i {
    // SAFETY: the caller runs on a CPU with AVX-512F.
    unsafe { _mm512_min_epu32(x, _mm512_sub_epi32(x, m)) }
}

/// The high 32-bit halves of two sets of 64-bit products, one per lane:
/// `even` holds the products of the even lanes, `odd` those of the odd lanes
/// (each 64-bit lane's high half is already in the odd position). The masked
/// shuffle swaps each pair of `even` and writes only the even lanes.
#[inline(always)]
pub(super) unsafe fn merge_high(even: __m512i, odd: __m512i) -> __m512i {
    // SAFETY: the caller runs on a CPU with AVX-512F.
    unsafe { _mm512_mask_shuffle_epi32::<_MM_PERM_CDAB>(odd, 0x5555, even) }
}

/// Lazy Shoup product `y · w mod q` in `[0, 2q)` for any `y`, as
/// [`Modulus::mul_shoup_lazy`](crate::arith::Modulus::mul_shoup_lazy) per lane.
#[inline(always)]
pub(super) unsafe fn mul_shoup_lazy(y: __m512i, w: Twiddle, q: __m512i) -> __m512i {
    // SAFETY: the caller runs on a CPU with AVX-512F.
    unsafe {
        // The quotient estimate is the high half of y · w'.
        let even = _mm512_mul_epu32(y, w.shoup_even);
        let odd = _mm512_mul_epu32(_mm512_srli_epi64::<32>(y), w.shoup_odd);
        let est = merge_high(even, odd);
        // The true remainder is below 2q < 2^32, so low halves suffice.
        _mm512_sub_epi32(_mm512_mullo_epi32(y, w.w), _mm512_mullo_epi32(est, q))
    }
}

/// Montgomery product `a · b · 2^-32 mod q` in `[0, 2q)` for `a · b < q · 2^32`,
/// as [`Modulus::mont_mul_lazy`](crate::arith::Modulus::mont_mul_lazy) per lane.
#[inline(always)]
pub(super) unsafe fn mont_mul_lazy(
    a: __m512i,
    b: __m512i,
    q: __m512i,
    q_neg_inv: __m512i,
) -> __m512i {
    // SAFETY: the caller runs on a CPU with AVX-512F.
    unsafe {
        let even = mont_mul_even(a, b, q, q_neg_inv);
        let a_odd = _mm512_srli_epi64::<32>(a);
        let odd = mont_mul_even(a_odd, _mm512_srli_epi64::<32>(b), q, q_neg_inv);
        merge_high(even, odd)
    }
}

/// [`mont_mul_lazy`] of the even lanes, left in the high half of each 64-bit
/// lane.
#[inline(always)]
pub(super) unsafe fn mont_mul_even(
    a: __m512i,
    b: __m512i,
    q: __m512i,
    q_neg_inv: __m512i,
) -> __m512i {
    // SAFETY: the caller runs on a CPU with AVX-512F.
    unsafe {
        // t + (t · (-q^-1) mod 2^32) · q has a zero low half and the result in
        // the high half; t < 2^60 and the correction < 2^62, so it fits.
        let t = _mm512_mul_epu32(a, b);
        let m = _mm512_mul_epu32(t, q_neg_inv);
        _mm512_add_epi64(t, _mm512_mul_epu32(m, q))
    }
}

/// Forward (Cooley–Tukey) butterfly, `[0, 4q)` in and out.
#[inline(always)]
pub(super) unsafe fn fwd_butterfly(
    x: __m512i,
    y: __m512i,
    w: Twiddle,
    c: Consts,
) -> (__m512i, __m512i) {
    // SAFETY: the caller runs on a CPU with AVX-512F.
    unsafe {
        let u = csub(x, c.two_q);
        let v = mul_shoup_lazy(y, w, c.q);
        (
            _mm512_add_epi32(u, v),
            _mm512_sub_epi32(_mm512_add_epi32(u, c.two_q), v),
        )
    }
}

/// Inverse (Gentleman–Sande) butterfly, `[0, 2q)` in and out.
#[inline(always)]
pub(super) unsafe fn inv_butterfly(
    x: __m512i,
    y: __m512i,
    w: Twiddle,
    c: Consts,
) -> (__m512i, __m512i) {
    // SAFETY: the caller runs on a CPU with AVX-512F.
    unsafe {
        let sum = csub(_mm512_add_epi32(x, y), c.two_q);
        let diff = _mm512_sub_epi32(_mm512_add_epi32(x, c.two_q), y);
        (sum, mul_shoup_lazy(diff, w, c.q))
    }
}

/// The last inverse butterfly: the twiddle `n_inv_w` already includes the
/// scaling by `n^-1`, which `n_inv` applies to the other output; both outputs
/// are fully reduced.
#[inline(always)]
pub(super) unsafe fn inv_last_butterfly(
    x: __m512i,
    y: __m512i,
    n_inv: Twiddle,
    n_inv_w: Twiddle,
    c: Consts,
) -> (__m512i, __m512i) {
    // SAFETY: the caller runs on a CPU with AVX-512F.
    unsafe {
        let sum = _mm512_add_epi32(x, y);
        let diff = _mm512_sub_epi32(_mm512_add_epi32(x, c.two_q), y);
        (
            csub(mul_shoup_lazy(sum, n_inv, c.q), c.q),
            csub(mul_shoup_lazy(diff, n_inv_w, c.q), c.q),
        )
    }
}

/// Transposes sixteen rows of sixteen lanes. Its own inverse.
#[inline(always)]
pub(super) unsafe fn transpose(x: [__m512i; W]) -> [__m512i; W] {
    // SAFETY (whole block): the caller runs on a CPU with AVX-512F.
    unsafe {
        // Within each 128-bit quarter: interleave 32-bit values of row pairs,
        // then 64-bit pairs of those, which leaves b[4s + e] holding, in
        // quarter l, column 4l + e of rows 4s..4s + 3.
        let mut a = [_mm512_setzero_si512(); W];
        for p in 0..W / 2 {
            a[2 * p] = _mm512_unpacklo_epi32(x[2 * p], x[2 * p + 1]);
            a[2 * p + 1] = _mm512_unpackhi_epi32(x[2 * p], x[2 * p + 1]);
        }
        let mut b = [_mm512_setzero_si512(); W];
        for s in 0..W / 4 {
            b[4 * s] = _mm512_unpacklo_epi64(a[4 * s], a[4 * s + 2]);
            b[4 * s + 1] = _mm512_unpackhi_epi64(a[4 * s], a[4 * s + 2]);
            b[4 * s + 2] = _mm512_unpacklo_epi64(a[4 * s + 1], a[4 * s + 3]);
            b[4 * s + 3] = _mm512_unpackhi_epi64(a[4 * s + 1], a[4 * s + 3]);
        }
        // Then a 4x4 transpose of 128-bit quarters among b[e], b[4 + e],
        // b[8 + e], b[12 + e]: output 4l + e takes quarter l of each.
        let mut out = [_mm512_setzero_si512(); W];
        for e in 0..4 {
            let t0 = _mm512_shuffle_i32x4::<0x88>(b[e], b[4 + e]);
            let t1 = _mm512_shuffle_i32x4::<0xDD>(b[e], b[4 + e]);
            let t2 = _mm512_shuffle_i32x4::<0x88>(b[8 + e], b[12 + e]);
            let t3 = _mm512_shuffle_i32x4::<0xDD>(b[8 + e], b[12 + e]);
            out[e] = _mm512_shuffle_i32x4::<0x88>(t0, t2);
            out[4 + e] = _mm512_shuffle_i32x4::<0x88>(t1, t3);
            out[8 + e] = _mm512_shuffle_i32x4::<0xDD>(t0, t2);
            out[12 + e] = _mm512_shuffle_i32x4::<0xDD>(t1, t3);
        }
        out
    }
}

/// One stage on the sixteen registers of a transposed block: register `k`
/// pairs with `k + d` for each listed `k` (those with bit `d` clear), using
/// per-lane twiddle vector `k / 2d` of `lanes`, which starts at this stage's
/// first vector. Spelled out with constant indices so that the block stays in
/// registers: with a loop over `k`, the compiler kept it on the stack.
macro_rules! block_stage {
    ($butterfly:ident, $x:ident, $d:literal, $lanes:expr, $c:expr, [$($k:literal),*]) => {
        $(
            let w = lane_twiddle($lanes, $k / (2 * $d));
            ($x[$k], $x[$k + $d]) = $butterfly($x[$k], $x[$k + $d], w, $c);
        )*
    };
}

/// Per-lane twiddle `j` of a stage's slice of a lane table.
#[inline(always)]
pub(super) unsafe fn lane_twiddle(lanes: &[Lanes], j: usize) -> Twiddle {
    // SAFETY: the caller runs on a CPU with AVX-512F.
    unsafe { Twiddle::lanes(&lanes[2 * j], &lanes[2 * j + 1]) }
}

/// Views `a` as whole registers' worth of values, plus the leftover tail.
pub(super) fn split_vectors(a: &[u32]) -> (&[[u32; W]], &[u32]) {
    let whole = a.len() / W;
    // SAFETY: `[u32; W]` has the alignment of `u32`, and `whole` of them fit
    // in `a`, which stays borrowed for the result's lifetime.
    let head = unsafe { std::slice::from_raw_parts(a.as_ptr().cast(), whole) };
    (head, &a[W * whole..])
}

/// [`split_vectors`] for a mutable slice.
pub(super) fn split_vectors_mut(a: &mut [u32]) -> (&mut [[u32; W]], &mut [u32]) {
    let whole = a.len() / W;
    let (head, tail) = a.split_at_mut(W * whole);
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
    // SAFETY: the caller runs on a CPU with AVX-512F.
    unsafe { Twiddle::splat(w[i], w_shoup[i]) }
}

#[inline(always)]
pub(super) unsafe fn load_block(block: &[[u32; W]]) -> [__m512i; W] {
    // SAFETY (whole block): the caller runs on a CPU with AVX-512F.
    unsafe {
        let mut x = [_mm512_setzero_si512(); W];
        for (x, p) in x.iter_mut().zip(block) {
            *x = load(p);
        }
        x
    }
}

#[inline(always)]
pub(super) unsafe fn store_block(block: &mut [[u32; W]], x: [__m512i; W]) {
    for (p, x) in block.iter_mut().zip(x) {
        // SAFETY: the caller runs on a CPU with AVX-512F.
        unsafe { store(p, x) };
    }
}
