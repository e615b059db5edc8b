//! AVX-512 kernels: sixteen 32-bit residues per `__m512i`.
//!
//! The arithmetic is the scalar backend's (Harvey lazy butterflies with Shoup
//! twiddles, same lazy ranges), so every result is the unique reduced value
//! and matches scalar bit for bit. The pass structure is the AVX2 backend's,
//! twice as wide:
//!
//! * Stages whose butterfly gap is at least 16 pair whole registers with one
//!   broadcast twiddle, two stages per pass over memory (radix-4); when their
//!   number is odd, the first stage runs alone.
//! * The last four stages (gaps 8, 4, 2, 1) work inside 16-coefficient rows.
//!   A 16x16 transpose of a 256-coefficient block puts its sixteen rows in the
//!   sixteen lanes, so these stages pair whole registers too, with per-lane
//!   twiddles that [`Tables`] lays out in advance. The final reduction happens
//!   before transposing back. Sixteen data registers fit in the 32 that
//!   AVX-512 has, with room for the twiddles.
//!
//! What AVX-512 changes in the arithmetic: `_mm512_mul_epu32` still multiplies
//! only the even lanes, but a masked in-lane shuffle merges the even lanes'
//! high halves into the odd lanes' products in one instruction (AVX2 needs a
//! shift and a blend).
//!
//! Measured on the development machine (AMD Zen 5, n = 4096) against the
//! layout above: radix-8 passes for the stages with gap >= 16 were slower
//! (about 1.4x the forward transform's time), and lane tables holding the odd
//! lanes' Shoup companions pre-shifted (a third vector per twiddle instead of
//! one shift) were no faster, so the smaller tables stay. IFMA (`vpmadd52*`) is not used: it works on eight 64-bit lanes, so
//! a 30-bit Shoup product would cost three IFMA per eight residues plus
//! widening, against four 32-bit multiplies per sixteen here.
//!
//! Only AVX-512F instructions are used. As in `avx2.rs`, helpers are
//! `#[inline(always)] unsafe fn` without `#[target_feature]`, called only
//! from the `#[target_feature(enable = "avx512f")]` kernels at the bottom,
//! into which they are inlined.

use core::arch::x86_64::*;

use crate::arith::{Modulus, ShoupConstant};
use crate::backend::tables::{InvScale, NttTables};
use crate::backend::{scalar, MONT_TERMS, STREAM_PREFETCH};

/// Lanes per register.
const W: usize = 16;

/// Smallest `n` these kernels handle: one 256-coefficient block (sixteen rows
/// of sixteen) for the transposed stages. Smaller plans (none exist today)
/// use the scalar kernels.
const MIN_N: usize = W * W;

/// One register's worth of values, aligned so that table loads never split
/// a cache line.
#[repr(C, align(64))]
#[derive(Clone, Copy)]
struct Lanes([u32; W]);

/// Per-plan tables in the layout these kernels read.
///
/// For each 256-coefficient block, the twiddles of the four stages that run
/// across lanes (gaps 8, 4, 2, 1): lane `r` holds the twiddle of row `r` of
/// the block. A stage with gap `g` has `8 / g` twiddles per row, hence
/// 1 + 2 + 4 + 8 vectors per block, each followed by its Shoup companion.
/// `fwd_lanes` is in forward order (gap 8 first), `inv_lanes` in inverse order
/// (gap 1 first), so each kernel reads its table front to back.
#[derive(Default)]
pub(crate) struct Tables {
    fwd_lanes: Vec<Lanes>,
    inv_lanes: Vec<Lanes>,
}

/// Vectors (values and Shoup companions) per block in each lane table.
const LANE_VECTORS: usize = 2 * (1 + 2 + 4 + 8);

impl Tables {
    pub(crate) fn new(t: &NttTables) -> Self {
        if t.n < MIN_N {
            return Self::default();
        }
        let layout = |w: &[u32], w_shoup: &[u32], gaps: [usize; 4]| {
            let mut out = Vec::with_capacity(t.n / MIN_N * LANE_VECTORS);
            for block in 0..t.n / MIN_N {
                for gap in gaps {
                    // The stage with this gap has n / (2 gap) groups, starting
                    // at table index n / (2 gap); each 16-coefficient row
                    // holds 8 / gap of them.
                    let first = t.n / (2 * gap);
                    let per_row = W / (2 * gap);
                    for h in 0..per_row {
                        let at = |r: usize| first + (W * block + r) * per_row + h;
                        out.push(Lanes(std::array::from_fn(|r| w[at(r)])));
                        out.push(Lanes(std::array::from_fn(|r| w_shoup[at(r)])));
                    }
                }
            }
            out
        };
        Self {
            fwd_lanes: layout(&t.fwd, &t.fwd_shoup, [8, 4, 2, 1]),
            inv_lanes: layout(&t.inv, &t.inv_shoup, [1, 2, 4, 8]),
        }
    }
}

// ---------------------------------------------------------------------------
// Sixteen-lane arithmetic. Safety for every helper: the CPU supports AVX-512F.

/// Modulus constants broadcast to all lanes.
#[derive(Clone, Copy)]
struct Consts {
    q: __m512i,
    two_q: __m512i,
}

impl Consts {
    #[inline(always)]
    unsafe fn new(q: u32) -> Self {
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
struct Twiddle {
    w: __m512i,
    shoup_even: __m512i,
    shoup_odd: __m512i,
}

impl Twiddle {
    #[inline(always)]
    unsafe fn splat(w: u32, shoup: u32) -> Self {
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
    unsafe fn lanes(w: &Lanes, shoup: &Lanes) -> Self {
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
unsafe fn load(p: &[u32; W]) -> __m512i {
    // SAFETY: the caller runs on a CPU with AVX-512F; `p` is 64 readable
    // bytes and the load is unaligned.
    unsafe { _mm512_loadu_si512(p.as_ptr().cast()) }
}

#[inline(always)]
unsafe fn store(p: &mut [u32; W], x: __m512i) {
    // SAFETY: the caller runs on a CPU with AVX-512F; `p` is 64 writable
    // bytes and the store is unaligned.
    unsafe { _mm512_storeu_si512(p.as_mut_ptr().cast(), x) }
}

/// `x - m` where `x >= m`, else `x` (`m <= 2^31`): when `x < m` the
/// difference wraps above `x`, so an unsigned min picks the right one.
#[inline(always)]
unsafe fn csub(x: __m512i, m: __m512i) -> __m512i {
    // SAFETY: the caller runs on a CPU with AVX-512F.
    unsafe { _mm512_min_epu32(x, _mm512_sub_epi32(x, m)) }
}

/// The high 32-bit halves of two sets of 64-bit products, one per lane:
/// `even` holds the products of the even lanes, `odd` those of the odd lanes
/// (each 64-bit lane's high half is already in the odd position). The masked
/// shuffle swaps each pair of `even` and writes only the even lanes.
#[inline(always)]
unsafe fn merge_high(even: __m512i, odd: __m512i) -> __m512i {
    // SAFETY: the caller runs on a CPU with AVX-512F.
    unsafe { _mm512_mask_shuffle_epi32::<_MM_PERM_CDAB>(odd, 0x5555, even) }
}

/// Lazy Shoup product `y · w mod q` in `[0, 2q)` for any `y`, as
/// [`Modulus::mul_shoup_lazy`] per lane.
#[inline(always)]
unsafe fn mul_shoup_lazy(y: __m512i, w: Twiddle, q: __m512i) -> __m512i {
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
/// as [`Modulus::mont_mul_lazy`] per lane.
#[inline(always)]
unsafe fn mont_mul_lazy(a: __m512i, b: __m512i, q: __m512i, q_neg_inv: __m512i) -> __m512i {
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
unsafe fn mont_mul_even(a: __m512i, b: __m512i, q: __m512i, q_neg_inv: __m512i) -> __m512i {
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
unsafe fn fwd_butterfly(x: __m512i, y: __m512i, w: Twiddle, c: Consts) -> (__m512i, __m512i) {
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
unsafe fn inv_butterfly(x: __m512i, y: __m512i, w: Twiddle, c: Consts) -> (__m512i, __m512i) {
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
unsafe fn inv_last_butterfly(
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
unsafe fn transpose(x: [__m512i; W]) -> [__m512i; W] {
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
unsafe fn lane_twiddle(lanes: &[Lanes], j: usize) -> Twiddle {
    // SAFETY: the caller runs on a CPU with AVX-512F.
    unsafe { Twiddle::lanes(&lanes[2 * j], &lanes[2 * j + 1]) }
}

/// Views `a` as whole registers' worth of values, plus the leftover tail.
fn split_vectors(a: &[u32]) -> (&[[u32; W]], &[u32]) {
    let whole = a.len() / W;
    // SAFETY: `[u32; W]` has the alignment of `u32`, and `whole` of them fit
    // in `a`, which stays borrowed for the result's lifetime.
    let head = unsafe { std::slice::from_raw_parts(a.as_ptr().cast(), whole) };
    (head, &a[W * whole..])
}

/// [`split_vectors`] for a mutable slice.
fn split_vectors_mut(a: &mut [u32]) -> (&mut [[u32; W]], &mut [u32]) {
    let whole = a.len() / W;
    let (head, tail) = a.split_at_mut(W * whole);
    // SAFETY: as in `split_vectors`; `head` is exactly `whole` arrays long and
    // is mutably borrowed for the result's lifetime.
    let head = unsafe { std::slice::from_raw_parts_mut(head.as_mut_ptr().cast(), whole) };
    (head, tail)
}

/// Splits a group of vectors into its four quarters.
fn quarters<T>(group: &mut [T]) -> [&mut [T]; 4] {
    let (lo, hi) = group.split_at_mut(group.len() / 2);
    let (x0, x1) = lo.split_at_mut(lo.len() / 2);
    let (x2, x3) = hi.split_at_mut(hi.len() / 2);
    [x0, x1, x2, x3]
}

/// Broadcast twiddle number `i` of a table and its Shoup companion.
#[inline(always)]
unsafe fn splat_twiddle(w: &[u32], w_shoup: &[u32], i: usize) -> Twiddle {
    // SAFETY: the caller runs on a CPU with AVX-512F.
    unsafe { Twiddle::splat(w[i], w_shoup[i]) }
}

#[inline(always)]
unsafe fn load_block(block: &[[u32; W]]) -> [__m512i; W] {
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
unsafe fn store_block(block: &mut [[u32; W]], x: [__m512i; W]) {
    for (p, x) in block.iter_mut().zip(x) {
        // SAFETY: the caller runs on a CPU with AVX-512F.
        unsafe { store(p, x) };
    }
}

// ---------------------------------------------------------------------------
// Forward transform.

/// The stage with `groups` groups, one pass over memory. Safety: AVX-512F.
#[inline(always)]
unsafe fn fwd_radix2(t: &NttTables, v: &mut [[u32; W]], groups: usize, c: Consts) {
    for (i, group) in v.chunks_exact_mut(v.len() / groups).enumerate() {
        // SAFETY (whole block): the caller runs on a CPU with AVX-512F.
        unsafe {
            let w = splat_twiddle(&t.fwd, &t.fwd_shoup, groups + i);
            let (lo, hi) = group.split_at_mut(group.len() / 2);
            for (p, q) in lo.iter_mut().zip(hi.iter_mut()) {
                let (x, y) = fwd_butterfly(load(p), load(q), w, c);
                store(p, x);
                store(q, y);
            }
        }
    }
}

/// The stages with `groups` and `2 groups` groups, one pass over memory.
/// Safety: AVX-512F.
#[inline(always)]
unsafe fn fwd_radix4(t: &NttTables, v: &mut [[u32; W]], groups: usize, c: Consts) {
    for (i, group) in v.chunks_exact_mut(v.len() / groups).enumerate() {
        // SAFETY (whole block): the caller runs on a CPU with AVX-512F.
        unsafe {
            let w = splat_twiddle(&t.fwd, &t.fwd_shoup, groups + i);
            let w_lo = splat_twiddle(&t.fwd, &t.fwd_shoup, 2 * groups + 2 * i);
            let w_hi = splat_twiddle(&t.fwd, &t.fwd_shoup, 2 * groups + 2 * i + 1);
            let [q0, q1, q2, q3] = quarters(group);
            for (((p0, p1), p2), p3) in q0.iter_mut().zip(q1).zip(q2).zip(q3) {
                let (x0, x2) = fwd_butterfly(load(p0), load(p2), w, c);
                let (x1, x3) = fwd_butterfly(load(p1), load(p3), w, c);
                let (x0, x1) = fwd_butterfly(x0, x1, w_lo, c);
                let (x2, x3) = fwd_butterfly(x2, x3, w_hi, c);
                store(p0, x0);
                store(p1, x1);
                store(p2, x2);
                store(p3, x3);
            }
        }
    }
}

/// The last four stages (gaps 8, 4, 2, 1) and the final reduction, one
/// 256-coefficient block at a time: transposed, each row of sixteen
/// coefficients lies across one lane of the sixteen registers.
/// Safety: AVX-512F.
#[inline(always)]
unsafe fn fwd_lanes(t: &NttTables, v: &mut [[u32; W]], c: Consts) {
    let lanes = t.simd.avx512.fwd_lanes.chunks_exact(LANE_VECTORS);
    for (block, lanes) in v.chunks_exact_mut(W).zip(lanes) {
        // SAFETY (whole block): the caller runs on a CPU with AVX-512F.
        unsafe {
            let mut x = transpose(load_block(block));
            block_stage!(
                fwd_butterfly,
                x,
                8,
                &lanes[0..],
                c,
                [0, 1, 2, 3, 4, 5, 6, 7]
            );
            block_stage!(
                fwd_butterfly,
                x,
                4,
                &lanes[2..],
                c,
                [0, 1, 2, 3, 8, 9, 10, 11]
            );
            block_stage!(
                fwd_butterfly,
                x,
                2,
                &lanes[2 * 3..],
                c,
                [0, 1, 4, 5, 8, 9, 12, 13]
            );
            block_stage!(
                fwd_butterfly,
                x,
                1,
                &lanes[2 * 7..],
                c,
                [0, 2, 4, 6, 8, 10, 12, 14]
            );
            for y in x.iter_mut() {
                *y = csub(csub(*y, c.two_q), c.q);
            }
            store_block(block, transpose(x));
        }
    }
}

// ---------------------------------------------------------------------------
// Inverse transform.

/// The first four stages (gaps 1, 2, 4, 8), one 256-coefficient block at a
/// time, transposed as in [`fwd_lanes`]. Safety: AVX-512F.
#[inline(always)]
unsafe fn inv_lanes(t: &NttTables, v: &mut [[u32; W]], c: Consts) {
    let lanes = t.simd.avx512.inv_lanes.chunks_exact(LANE_VECTORS);
    for (block, lanes) in v.chunks_exact_mut(W).zip(lanes) {
        // SAFETY (whole block): the caller runs on a CPU with AVX-512F.
        unsafe {
            let mut x = transpose(load_block(block));
            block_stage!(
                inv_butterfly,
                x,
                1,
                &lanes[0..],
                c,
                [0, 2, 4, 6, 8, 10, 12, 14]
            );
            block_stage!(
                inv_butterfly,
                x,
                2,
                &lanes[2 * 8..],
                c,
                [0, 1, 4, 5, 8, 9, 12, 13]
            );
            block_stage!(
                inv_butterfly,
                x,
                4,
                &lanes[2 * 12..],
                c,
                [0, 1, 2, 3, 8, 9, 10, 11]
            );
            block_stage!(
                inv_butterfly,
                x,
                8,
                &lanes[2 * 14..],
                c,
                [0, 1, 2, 3, 4, 5, 6, 7]
            );
            store_block(block, transpose(x));
        }
    }
}

/// The stage with `groups` groups, one pass over memory. Safety: AVX-512F.
#[inline(always)]
unsafe fn inv_radix2(t: &NttTables, v: &mut [[u32; W]], groups: usize, c: Consts) {
    for (i, group) in v.chunks_exact_mut(v.len() / groups).enumerate() {
        // SAFETY (whole block): the caller runs on a CPU with AVX-512F.
        unsafe {
            let w = splat_twiddle(&t.inv, &t.inv_shoup, groups + i);
            let (lo, hi) = group.split_at_mut(group.len() / 2);
            for (p, q) in lo.iter_mut().zip(hi.iter_mut()) {
                let (x, y) = inv_butterfly(load(p), load(q), w, c);
                store(p, x);
                store(q, y);
            }
        }
    }
}

/// The stages with `groups` and `groups / 2` groups, one pass over memory.
/// Safety: AVX-512F.
#[inline(always)]
unsafe fn inv_radix4(t: &NttTables, v: &mut [[u32; W]], groups: usize, c: Consts) {
    for (i, group) in v.chunks_exact_mut(2 * v.len() / groups).enumerate() {
        // SAFETY (whole block): the caller runs on a CPU with AVX-512F.
        unsafe {
            let w_lo = splat_twiddle(&t.inv, &t.inv_shoup, groups + 2 * i);
            let w_hi = splat_twiddle(&t.inv, &t.inv_shoup, groups + 2 * i + 1);
            let w = splat_twiddle(&t.inv, &t.inv_shoup, groups / 2 + i);
            let [q0, q1, q2, q3] = quarters(group);
            for (((p0, p1), p2), p3) in q0.iter_mut().zip(q1).zip(q2).zip(q3) {
                let (x0, x1) = inv_butterfly(load(p0), load(p1), w_lo, c);
                let (x2, x3) = inv_butterfly(load(p2), load(p3), w_hi, c);
                let (x0, x2) = inv_butterfly(x0, x2, w, c);
                let (x1, x3) = inv_butterfly(x1, x3, w, c);
                store(p0, x0);
                store(p1, x1);
                store(p2, x2);
                store(p3, x3);
            }
        }
    }
}

/// The last two stages, with the scaling by `n^-1` folded into the last one
/// as scalar does; outputs in `[0, q)`. Safety: AVX-512F.
#[inline(always)]
unsafe fn inv_last_radix4(t: &NttTables, v: &mut [[u32; W]], s: &InvScale, c: Consts) {
    // SAFETY (whole block): the caller runs on a CPU with AVX-512F.
    unsafe {
        let w_lo = splat_twiddle(&t.inv, &t.inv_shoup, 2);
        let w_hi = splat_twiddle(&t.inv, &t.inv_shoup, 3);
        let n_inv = Twiddle::splat(s.n_inv.value, s.n_inv.shoup);
        let n_inv_w = Twiddle::splat(s.n_inv_w.value, s.n_inv_w.shoup);
        let [q0, q1, q2, q3] = quarters(v);
        for (((p0, p1), p2), p3) in q0.iter_mut().zip(q1).zip(q2).zip(q3) {
            let (x0, x1) = inv_butterfly(load(p0), load(p1), w_lo, c);
            let (x2, x3) = inv_butterfly(load(p2), load(p3), w_hi, c);
            let (x0, x2) = inv_last_butterfly(x0, x2, n_inv, n_inv_w, c);
            let (x1, x3) = inv_last_butterfly(x1, x3, n_inv, n_inv_w, c);
            store(p0, x0);
            store(p1, x1);
            store(p2, x2);
            store(p3, x3);
        }
    }
}

// ---------------------------------------------------------------------------
// Kernels.

/// Forward negacyclic NTT, bit-identical to [`scalar::forward`].
///
/// # Safety
/// The CPU supports AVX-512F.
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn forward(t: &NttTables, a: &mut [u32]) {
    debug_assert_eq!(a.len(), t.n);
    if t.n < MIN_N {
        return scalar::forward(t, a);
    }
    let (v, _) = split_vectors_mut(a);
    // SAFETY (whole block): AVX-512F is enabled here, and the helpers need no
    // more.
    unsafe {
        let c = Consts::new(t.modulus.value());
        // Stages with gap >= 16 go over memory, in pairs; an odd one out goes
        // first, where its long runs of one twiddle make it cheapest.
        let mut groups = 1;
        if !t.n.trailing_zeros().is_multiple_of(2) {
            fwd_radix2(t, v, groups, c);
            groups *= 2;
        }
        while groups < t.n / W {
            fwd_radix4(t, v, groups, c);
            groups *= 4;
        }
        fwd_lanes(t, v, c);
    }
}

/// Inverse negacyclic NTT, bit-identical to [`scalar::inverse`].
///
/// # Safety
/// The CPU supports AVX-512F.
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn inverse(t: &NttTables, a: &mut [u32], s: &InvScale) {
    debug_assert_eq!(a.len(), t.n);
    if t.n < MIN_N {
        return scalar::inverse(t, a, s);
    }
    let (v, _) = split_vectors_mut(a);
    // SAFETY (whole block): AVX-512F is enabled here, and the helpers need no
    // more.
    unsafe {
        let c = Consts::new(t.modulus.value());
        inv_lanes(t, v, c);
        // Groups of the next stage (gap 16); the stages from there go over
        // memory in pairs, and the last pass applies n^-1.
        let mut groups = t.n / (2 * W);
        if !t.n.trailing_zeros().is_multiple_of(2) {
            inv_radix2(t, v, groups, c);
            groups /= 2;
        }
        while groups > 2 {
            inv_radix4(t, v, groups, c);
            groups /= 4;
        }
        inv_last_radix4(t, v, s, c);
    }
}

/// Constants of the pointwise product: Montgomery, then a Shoup product by
/// `2^32 mod q` to leave the Montgomery domain.
#[derive(Clone, Copy)]
struct ProductConsts {
    q: __m512i,
    q_neg_inv: __m512i,
    r: Twiddle,
}

impl ProductConsts {
    #[inline(always)]
    unsafe fn new(m: &Modulus) -> Self {
        let r = m.shoup(m.r());
        // SAFETY: the caller runs on a CPU with AVX-512F.
        unsafe {
            Self {
                q: _mm512_set1_epi32(m.value() as i32),
                q_neg_inv: _mm512_set1_epi32(m.q_neg_inv() as i32),
                r: Twiddle::splat(r.value, r.shoup),
            }
        }
    }

    /// `a · b mod q` in `[0, q)` for `a, b < q`.
    #[inline(always)]
    unsafe fn mul(self, a: __m512i, b: __m512i) -> __m512i {
        // SAFETY: the caller runs on a CPU with AVX-512F.
        unsafe {
            let x = mont_mul_lazy(a, b, self.q, self.q_neg_inv);
            csub(mul_shoup_lazy(x, self.r, self.q), self.q)
        }
    }

    /// `a · b · 2^-32 mod q` in `[0, q)` for `a, b < q`: the product by a
    /// `b` held in Montgomery form.
    #[inline(always)]
    unsafe fn mul_mont(self, a: __m512i, b: __m512i) -> __m512i {
        // SAFETY: as for `mul`.
        unsafe { csub(mont_mul_lazy(a, b, self.q, self.q_neg_inv), self.q) }
    }

    /// [`Self::mul`], or with `MONT` [`Self::mul_mont`].
    #[inline(always)]
    unsafe fn product<const MONT: bool>(self, a: __m512i, b: __m512i) -> __m512i {
        // SAFETY: as for `mul`.
        unsafe {
            if MONT {
                self.mul_mont(a, b)
            } else {
                self.mul(a, b)
            }
        }
    }
}

/// `out = a · b mod q` (with `MONT`, the Montgomery product), bit-identical
/// to [`scalar::mul`].
///
/// # Safety
/// The CPU supports AVX-512F.
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn mul<const MONT: bool>(m: &Modulus, a: &[u32], b: &[u32], out: &mut [u32]) {
    debug_assert!(a.len() == b.len() && a.len() == out.len());
    let ((av, at), (bv, bt)) = (split_vectors(a), split_vectors(b));
    let (ov, ot) = split_vectors_mut(out);
    // SAFETY (whole block): AVX-512F is enabled here, and the helpers need no
    // more.
    unsafe {
        let k = ProductConsts::new(m);
        for ((o, x), y) in ov.iter_mut().zip(av).zip(bv) {
            store(o, k.product::<MONT>(load(x), load(y)));
        }
    }
    scalar::mul::<MONT>(m, at, bt, ot);
}

/// `out = a · b mod q` as [`mul`], with non-temporal stores into the
/// 64-byte-aligned part of `out`: for results that are not read again
/// soon (a gallery's score ciphertexts), which then skip the read for
/// ownership and leave the cache to the inputs.
///
/// # Safety
/// The CPU supports AVX-512F.
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn mul_streaming(m: &Modulus, a: &[u32], b: &[u32], out: &mut [u32]) {
    debug_assert!(a.len() == b.len() && a.len() == out.len());
    #[repr(C, align(64))]
    struct Line([u32; W]);
    // SAFETY: `Line` is W plain `u32`s, so every bit pattern is valid.
    let (head, body, tail) = unsafe { out.align_to_mut::<Line>() };
    let (h, len) = (head.len(), body.len() * W);
    let (av, _) = split_vectors(&a[h..h + len]);
    let (bv, _) = split_vectors(&b[h..h + len]);
    // SAFETY (whole block): AVX-512F is enabled here; every `Line` is
    // 64-byte aligned, as the streaming store requires.
    unsafe {
        mul::<false>(m, &a[..h], &b[..h], head);
        let k = ProductConsts::new(m);
        for ((o, x), y) in body.iter_mut().zip(av).zip(bv) {
            _mm_prefetch::<_MM_HINT_T0>(x.as_ptr().wrapping_add(STREAM_PREFETCH).cast());
            _mm512_stream_si512(o.0.as_mut_ptr().cast(), k.mul(load(x), load(y)));
        }
        // Orders the streaming stores before whatever the caller does next
        // (another thread may read the result).
        _mm_sfence();
        mul::<false>(m, &a[h + len..], &b[h + len..], tail);
    }
}

/// `Σ_k a_k·x_k + b_k·y_k mod q`, equal to [`scalar::dot2`], for residues
/// below `q < 2^30`: the four products of a lane (each below `2^60`) are
/// summed, and the sum's low and high 32-bit halves are accumulated apart,
/// so nothing overflows before the one reduction at the end.
///
/// The caller streams through much longer arrays than `a` and `b` (a
/// gallery, block after block), so the kernel prefetches
/// [`STREAM_PREFETCH`] words past where it reads them: a hint, never a read.
///
/// # Safety
/// The CPU supports AVX-512F.
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn dot2(m: &Modulus, a: &[u32], x: &[u32], b: &[u32], y: &[u32]) -> u32 {
    debug_assert!(
        m.value() < 1 << 30 && a.len() == x.len() && b.len() == y.len() && a.len() == b.len()
    );
    debug_assert!(a.len() < 1 << 24);
    let ((av, at), (xv, xt)) = (split_vectors(a), split_vectors(x));
    let ((bv, bt), (yv, yt)) = (split_vectors(b), split_vectors(y));
    // SAFETY (whole block): AVX-512F is enabled here, and the helpers need no
    // more.
    let (lo, hi) = unsafe {
        let low = _mm512_set1_epi64(0xffff_ffff);
        let (mut lo, mut hi) = (_mm512_setzero_si512(), _mm512_setzero_si512());
        for (((a, x), b), y) in av.iter().zip(xv).zip(bv).zip(yv) {
            _mm_prefetch::<_MM_HINT_T0>(a.as_ptr().wrapping_add(STREAM_PREFETCH).cast());
            _mm_prefetch::<_MM_HINT_T0>(b.as_ptr().wrapping_add(STREAM_PREFETCH).cast());
            let (a, x, b, y) = (load(a), load(x), load(b), load(y));
            let even = _mm512_add_epi64(_mm512_mul_epu32(a, x), _mm512_mul_epu32(b, y));
            let odd = _mm512_add_epi64(
                _mm512_mul_epu32(_mm512_srli_epi64(a, 32), _mm512_srli_epi64(x, 32)),
                _mm512_mul_epu32(_mm512_srli_epi64(b, 32), _mm512_srli_epi64(y, 32)),
            );
            let s = _mm512_add_epi64(even, odd);
            lo = _mm512_add_epi64(lo, _mm512_and_si512(s, low));
            hi = _mm512_add_epi64(hi, _mm512_srli_epi64(s, 32));
        }
        (
            _mm512_reduce_add_epi64(lo) as u64,
            _mm512_reduce_add_epi64(hi) as u64,
        )
    };
    m.add(
        scalar::join_halves(m, lo, hi),
        scalar::dot2(m, at, xt, bt, yt),
    )
}

/// `acc = acc + a · b mod q` (with `MONT`, the Montgomery product),
/// bit-identical to [`scalar::mul_acc`].
///
/// # Safety
/// The CPU supports AVX-512F.
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn mul_acc<const MONT: bool, const SUB: bool>(
    m: &Modulus,
    a: &[u32],
    b: &[u32],
    acc: &mut [u32],
) {
    debug_assert!(a.len() == b.len() && a.len() == acc.len());
    let ((av, at), (bv, bt)) = (split_vectors(a), split_vectors(b));
    let (cv, ct) = split_vectors_mut(acc);
    // SAFETY (whole block): AVX-512F is enabled here, and the helpers need no
    // more.
    unsafe {
        let k = ProductConsts::new(m);
        for ((s, x), y) in cv.iter_mut().zip(av).zip(bv) {
            let p = k.product::<MONT>(load(x), load(y));
            // The product is in [0, q): acc - p + q is in (0, 2q).
            let sum = if SUB {
                _mm512_sub_epi32(_mm512_add_epi32(load(s), k.q), p)
            } else {
                _mm512_add_epi32(load(s), p)
            };
            store(s, csub(sum, k.q));
        }
    }
    scalar::mul_acc::<MONT, SUB>(m, at, bt, ct);
}

/// `out[x] = Σ_k inputs[k][x] · weights[k] mod q`, in `[0, q)` (the exact
/// residue, as [`scalar::lincomb`] gives it), sixteen coefficients at a time.
///
/// With three or more terms, the products are summed in 64-bit lanes and
/// reduced once per [`MONT_TERMS`] terms (see [`crate::backend::MONT_TERMS`]
/// for the bounds, which need inputs below `2^31`). A block of sixteen in
/// which some input has its top bit set is done again with a Shoup product
/// per term, so any `u32` input gives the exact result.
///
/// # Safety
/// The CPU supports AVX-512F.
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn lincomb(
    m: &Modulus,
    inputs: &[&[u32]],
    weights: &[ShoupConstant],
    out: &mut [u32],
) {
    let n = out.len();
    assert!(inputs.iter().all(|x| x.len() >= n) && inputs.len() == weights.len());
    if inputs.len() < 3 {
        // SAFETY: AVX-512F, as this function's caller guarantees.
        return unsafe { lincomb_shoup(m, inputs, weights, out) };
    }
    let mont: Vec<u32> = weights.iter().map(|w| m.to_montgomery(w.value)).collect();
    let whole = n / W * W;
    // SAFETY (whole block): AVX-512F is enabled here. Every input holds at
    // least `n` values (asserted above) and `b + W <= whole <= n`, so each
    // unaligned load and store stays inside its slice.
    unsafe {
        let q = _mm512_set1_epi32(m.value() as i32);
        let two_q = _mm512_set1_epi32((2 * m.value()) as i32);
        let q_neg_inv = _mm512_set1_epi32(m.q_neg_inv() as i32);
        let mut b = 0;
        while b < whole {
            let mut acc = _mm512_setzero_si512();
            let mut seen = _mm512_setzero_si512();
            for (xs, ws) in inputs.chunks(MONT_TERMS).zip(mont.chunks(MONT_TERMS)) {
                // 64-bit sums: even lanes in `even`, odd lanes in `odd`.
                let (mut even, mut odd) = (_mm512_setzero_si512(), _mm512_setzero_si512());
                for (x, &w) in xs.iter().zip(ws) {
                    let w = _mm512_set1_epi32(w as i32);
                    let v = _mm512_loadu_si512(x.as_ptr().add(b).cast());
                    seen = _mm512_or_si512(seen, v);
                    even = _mm512_add_epi64(even, _mm512_mul_epu32(v, w));
                    odd = _mm512_add_epi64(odd, _mm512_mul_epu32(_mm512_srli_epi64::<32>(v), w));
                }
                // (s + m·q) / 2^32 with m = s·(−q^-1) mod 2^32, in [0, 4q).
                let te =
                    _mm512_add_epi64(even, _mm512_mul_epu32(_mm512_mul_epu32(even, q_neg_inv), q));
                let to =
                    _mm512_add_epi64(odd, _mm512_mul_epu32(_mm512_mul_epu32(odd, q_neg_inv), q));
                let r = merge_high(te, to);
                acc = csub(_mm512_add_epi32(acc, csub(r, two_q)), two_q);
            }
            if _mm512_cmplt_epi32_mask(seen, _mm512_setzero_si512()) == 0 {
                _mm512_storeu_si512(out.as_mut_ptr().add(b).cast(), csub(acc, q));
            } else {
                lincomb_shoup(m, &scalar::tails(inputs, b), weights, &mut out[b..b + W]);
            }
            b += W;
        }
    }
    if whole < n {
        scalar::lincomb(m, &scalar::tails(inputs, whole), weights, &mut out[whole..]);
    }
}

/// [`lincomb`] with one lazy Shoup product per term, for any `u32` inputs:
/// bit-identical to [`scalar::lincomb`] (the same lazy ranges).
///
/// # Safety
/// The CPU supports AVX-512F.
#[target_feature(enable = "avx512f")]
unsafe fn lincomb_shoup(
    m: &Modulus,
    inputs: &[&[u32]],
    weights: &[ShoupConstant],
    out: &mut [u32],
) {
    let n = out.len();
    assert!(inputs.iter().all(|x| x.len() >= n) && inputs.len() == weights.len());
    let whole = n / W * W;
    // SAFETY (whole block): AVX-512F is enabled here. Every input holds at
    // least `n` values (asserted above) and `b + W <= whole <= n`, so each
    // unaligned load and store stays inside its slice.
    unsafe {
        let q = _mm512_set1_epi32(m.value() as i32);
        let two_q = _mm512_set1_epi32((2 * m.value()) as i32);
        let mut b = 0;
        while b < whole {
            let mut acc = _mm512_setzero_si512();
            for (input, w) in inputs.iter().zip(weights) {
                let w = Twiddle::splat(w.value, w.shoup);
                let x = _mm512_loadu_si512(input.as_ptr().add(b).cast());
                acc = csub(_mm512_add_epi32(acc, mul_shoup_lazy(x, w, q)), two_q);
            }
            _mm512_storeu_si512(out.as_mut_ptr().add(b).cast(), csub(acc, q));
            b += W;
        }
    }
    if whole < n {
        scalar::lincomb(m, &scalar::tails(inputs, whole), weights, &mut out[whole..]);
    }
}

/// `out[x] = round(Σ_k inputs[k][x] · coeffs[k])`, bit-identical to
/// [`scalar::round_weighted_sum`] (same `f64` operations in the same order,
/// eight lanes at a time, no fused multiply-add).
///
/// # Safety
/// The CPU supports AVX-512F.
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn round_weighted_sum(inputs: &[&[u32]], coeffs: &[f64], out: &mut [u32]) {
    let n = out.len();
    assert!(inputs.iter().all(|x| x.len() >= n) && inputs.len() == coeffs.len());
    let whole = n / 8 * 8;
    // SAFETY (whole block): AVX-512F is enabled here; loads and stores of
    // eight `u32` at `b + 8 <= whole <= n` stay inside slices of at least `n`.
    unsafe {
        let half = _mm512_set1_pd(0.5);
        let mut b = 0;
        while b < whole {
            let mut v = _mm512_setzero_pd();
            for (input, &c) in inputs.iter().zip(coeffs) {
                let x = _mm256_loadu_si256(input.as_ptr().add(b).cast());
                v = _mm512_add_pd(v, _mm512_mul_pd(_mm512_cvtepi32_pd(x), _mm512_set1_pd(c)));
            }
            let r = _mm512_cvttpd_epi32(_mm512_add_pd(v, half));
            _mm256_storeu_si256(out.as_mut_ptr().add(b).cast(), r);
            b += 8;
        }
    }
    if whole < n {
        scalar::round_weighted_sum(&scalar::tails(inputs, whole), coeffs, &mut out[whole..]);
    }
}

/// `Σ_k floor(p_k) + round(Σ_k frac(p_k))`, bit-identical to
/// [`scalar::floor_frac_sum`], eight lanes at a time.
///
/// # Safety
/// The CPU supports AVX-512F.
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn floor_frac_sum(inputs: &[&[u32]], thetas: &[f64], out: &mut [u32]) {
    let n = out.len();
    assert!(inputs.iter().all(|x| x.len() >= n) && inputs.len() == thetas.len());
    let whole = n / 8 * 8;
    // SAFETY (whole block): as in `round_weighted_sum`.
    unsafe {
        let half = _mm512_set1_pd(0.5);
        let mut b = 0;
        while b < whole {
            let mut int = _mm256_setzero_si256();
            let mut frac = _mm512_setzero_pd();
            for (input, &theta) in inputs.iter().zip(thetas) {
                let x = _mm256_loadu_si256(input.as_ptr().add(b).cast());
                let p = _mm512_mul_pd(_mm512_cvtepi32_pd(x), _mm512_set1_pd(theta));
                let fl = _mm512_cvttpd_epi32(p);
                int = _mm256_add_epi32(int, fl);
                frac = _mm512_add_pd(frac, _mm512_sub_pd(p, _mm512_cvtepi32_pd(fl)));
            }
            int = _mm256_add_epi32(int, _mm512_cvttpd_epi32(_mm512_add_pd(frac, half)));
            _mm256_storeu_si256(out.as_mut_ptr().add(b).cast(), int);
            b += 8;
        }
    }
    if whole < n {
        scalar::floor_frac_sum(&scalar::tails(inputs, whole), thetas, &mut out[whole..]);
    }
}
