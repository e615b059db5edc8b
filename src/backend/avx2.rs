//! AVX2 kernels: eight 32-bit residues per `__m256i`.
//!
//! The arithmetic is the scalar backend's (Harvey lazy butterflies with Shoup
//! twiddles, same lazy ranges), so every result is the unique reduced value
//! and matches scalar bit for bit. What changes is the order of memory passes:
//!
//! * Stages whose butterfly gap is at least 8 pair whole registers with one
//!   broadcast twiddle. They run two at a time (radix-4: four registers are
//!   loaded, go through two stages and are stored once); when their number is
//!   odd, the first stage runs alone.
//! * The last three stages (gaps 4, 2, 1) work inside 8-coefficient rows. An
//!   8x8 transpose of a 64-coefficient block puts its eight rows in the eight
//!   lanes, so these stages pair whole registers too, with per-lane twiddles
//!   that [`Tables`] lays out in advance. The final reduction happens before
//!   transposing back.
//!
//! The inverse runs the same passes in the opposite order; its last pass
//! folds in the scaling by `n^-1` as scalar does.
//!
//! Measured on the development machine (AMD Zen 5, n = 4096): folding the
//! gap-32/16/8 stages into the transposed block pass, or using radix-8
//! passes, was slower than the layout above.
//!
//! Helpers are `#[inline(always)] unsafe fn` without `#[target_feature]`, so
//! the same code compiles whether or not the compiler treats intrinsics as
//! safe inside `#[target_feature]` functions. They are only called from the
//! `#[target_feature(enable = "avx2")]` kernels at the bottom, into which they
//! are inlined.

use core::arch::x86_64::*;

use crate::arith::{Modulus, ShoupConstant};
use crate::backend::tables::{InvScale, NttTables};
use crate::backend::{scalar, MONT_TERMS, STREAM_PREFETCH};

/// Smallest `n` these kernels handle: one 64-coefficient block (eight rows of
/// eight) for the transposed stages. Smaller plans (none exist today) use the
/// scalar kernels.
const MIN_N: usize = 64;

/// One register's worth of values, aligned so that table loads never split
/// a cache line.
#[repr(C, align(32))]
#[derive(Clone, Copy)]
struct Lanes([u32; 8]);

/// Per-plan tables in the layout these kernels read.
///
/// For each 64-coefficient block, the twiddles of the three stages that run
/// across lanes (gaps 4, 2, 1): lane `r` holds the twiddle of row `r` of the
/// block. A stage with gap `g` has `4 / g` twiddles per row, hence 1 + 2 + 4
/// vectors per block, each followed by its Shoup companion. `fwd_lanes` is in
/// forward order (gap 4 first), `inv_lanes` in inverse order (gap 1 first), so
/// each kernel reads its table front to back.
#[derive(Default)]
pub(crate) struct Tables {
    fwd_lanes: Vec<Lanes>,
    inv_lanes: Vec<Lanes>,
}

/// Vectors (values and Shoup companions) per block in each lane table.
const LANE_VECTORS: usize = 2 * (1 + 2 + 4);

impl Tables {
    pub(crate) fn new(t: &NttTables) -> Self {
        if t.n < MIN_N {
            return Self::default();
        }
        let layout = |w: &[u32], w_shoup: &[u32], gaps: [usize; 3]| {
            let mut out = Vec::with_capacity(t.n / 64 * LANE_VECTORS);
            for block in 0..t.n / 64 {
                for gap in gaps {
                    // The stage with this gap has n / (2 gap) groups, starting at
                    // table index n / (2 gap); each 8-coefficient row holds 4 / gap.
                    let first = t.n / (2 * gap);
                    let per_row = 4 / gap;
                    for h in 0..per_row {
                        let at = |r: usize| first + (8 * block + r) * per_row + h;
                        out.push(Lanes(std::array::from_fn(|r| w[at(r)])));
                        out.push(Lanes(std::array::from_fn(|r| w_shoup[at(r)])));
                    }
                }
            }
            out
        };
        Self {
            fwd_lanes: layout(&t.fwd, &t.fwd_shoup, [4, 2, 1]),
            inv_lanes: layout(&t.inv, &t.inv_shoup, [1, 2, 4]),
        }
    }
}

// ---------------------------------------------------------------------------
// Eight-lane arithmetic. Safety for every helper: the CPU supports AVX2.

/// Modulus constants broadcast to all lanes.
#[derive(Clone, Copy)]
struct Consts {
    q: __m256i,
    two_q: __m256i,
}

impl Consts {
    #[inline(always)]
    unsafe fn new(q: u32) -> Self {
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
struct Twiddle {
    w: __m256i,
    shoup_even: __m256i,
    shoup_odd: __m256i,
}

impl Twiddle {
    #[inline(always)]
    unsafe fn splat(w: u32, shoup: u32) -> Self {
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
    unsafe fn lanes(w: &Lanes, shoup: &Lanes) -> Self {
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
unsafe fn load(p: &[u32; 8]) -> __m256i {
    // SAFETY: the caller runs on a CPU with AVX2; `p` is 32 readable bytes
    // and the load is unaligned.
    unsafe { _mm256_loadu_si256(p.as_ptr().cast()) }
}

#[inline(always)]
unsafe fn store(p: &mut [u32; 8], x: __m256i) {
    // SAFETY: the caller runs on a CPU with AVX2; `p` is 32 writable bytes
    // and the store is unaligned.
    unsafe { _mm256_storeu_si256(p.as_mut_ptr().cast(), x) }
}

/// `x - m` where `x >= m`, else `x` (`m <= 2^31`): when `x < m` the
/// difference wraps above `x`, so an unsigned min picks the right one with no
/// mask.
#[inline(always)]
unsafe fn csub(x: __m256i, m: __m256i) -> __m256i {
    // SAFETY: the caller runs on a CPU with AVX2.
    unsafe { _mm256_min_epu32(x, _mm256_sub_epi32(x, m)) }
}

/// Lazy Shoup product `y · w mod q` in `[0, 2q)` for any `y`, as
/// [`Modulus::mul_shoup_lazy`] per lane.
#[inline(always)]
unsafe fn mul_shoup_lazy(y: __m256i, w: Twiddle, q: __m256i) -> __m256i {
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
/// as [`Modulus::mont_mul_lazy`] per lane.
#[inline(always)]
unsafe fn mont_mul_lazy(a: __m256i, b: __m256i, q: __m256i, q_neg_inv: __m256i) -> __m256i {
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
unsafe fn mont_mul_even(a: __m256i, b: __m256i, q: __m256i, q_neg_inv: __m256i) -> __m256i {
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
unsafe fn fwd_butterfly(x: __m256i, y: __m256i, w: Twiddle, c: Consts) -> (__m256i, __m256i) {
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
unsafe fn inv_butterfly(x: __m256i, y: __m256i, w: Twiddle, c: Consts) -> (__m256i, __m256i) {
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
unsafe fn inv_last_butterfly(
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
unsafe fn transpose(x: [__m256i; 8]) -> [__m256i; 8] {
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
unsafe fn fwd_block_stage(x: &mut [__m256i; 8], d: usize, w: &[Twiddle], c: Consts) {
    for k in (0..8).filter(|k| k & d == 0) {
        // SAFETY: the caller runs on a CPU with AVX2.
        (x[k], x[k + d]) = unsafe { fwd_butterfly(x[k], x[k + d], w[k / (2 * d)], c) };
    }
}

/// [`fwd_block_stage`] with the inverse butterfly.
#[inline(always)]
unsafe fn inv_block_stage(x: &mut [__m256i; 8], d: usize, w: &[Twiddle], c: Consts) {
    for k in (0..8).filter(|k| k & d == 0) {
        // SAFETY: the caller runs on a CPU with AVX2.
        (x[k], x[k + d]) = unsafe { inv_butterfly(x[k], x[k + d], w[k / (2 * d)], c) };
    }
}

/// Views `a` as whole registers' worth of values, plus the leftover tail.
fn split_vectors(a: &[u32]) -> (&[[u32; 8]], &[u32]) {
    let whole = a.len() / 8;
    // SAFETY: `[u32; 8]` has the alignment of `u32`, and `whole` of them fit
    // in `a`, which stays borrowed for the result's lifetime.
    let head = unsafe { std::slice::from_raw_parts(a.as_ptr().cast(), whole) };
    (head, &a[8 * whole..])
}

/// [`split_vectors`] for a mutable slice.
fn split_vectors_mut(a: &mut [u32]) -> (&mut [[u32; 8]], &mut [u32]) {
    let whole = a.len() / 8;
    let (head, tail) = a.split_at_mut(8 * whole);
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
    // SAFETY: the caller runs on a CPU with AVX2.
    unsafe { Twiddle::splat(w[i], w_shoup[i]) }
}

/// `count <= 4` per-lane twiddles from a block's slice of a lane table,
/// starting with twiddle vector `first`.
#[inline(always)]
unsafe fn lane_twiddles(lanes: &[Lanes], first: usize, count: usize) -> [Twiddle; 4] {
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
unsafe fn load_block(block: &[[u32; 8]]) -> [__m256i; 8] {
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
unsafe fn store_block(block: &mut [[u32; 8]], x: [__m256i; 8]) {
    for (p, x) in block.iter_mut().zip(x) {
        // SAFETY: the caller runs on a CPU with AVX2.
        unsafe { store(p, x) };
    }
}

// ---------------------------------------------------------------------------
// Forward transform.

/// The stage with `groups` groups, one pass over memory. Safety: AVX2.
#[inline(always)]
unsafe fn fwd_radix2(t: &NttTables, v: &mut [[u32; 8]], groups: usize, c: Consts) {
    for (i, group) in v.chunks_exact_mut(v.len() / groups).enumerate() {
        // SAFETY (whole block): the caller runs on a CPU with AVX2.
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
/// Safety: AVX2.
#[inline(always)]
unsafe fn fwd_radix4(t: &NttTables, v: &mut [[u32; 8]], groups: usize, c: Consts) {
    for (i, group) in v.chunks_exact_mut(v.len() / groups).enumerate() {
        // SAFETY (whole block): the caller runs on a CPU with AVX2.
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

/// The last three stages (gaps 4, 2, 1) and the final reduction, one
/// 64-coefficient block at a time: transposed, each row of eight coefficients
/// lies across one lane of the eight registers. Safety: AVX2.
#[inline(always)]
unsafe fn fwd_lanes(t: &NttTables, v: &mut [[u32; 8]], c: Consts) {
    let lanes = t.simd.avx2.fwd_lanes.chunks_exact(LANE_VECTORS);
    for (block, lanes) in v.chunks_exact_mut(8).zip(lanes) {
        // SAFETY (whole block): the caller runs on a CPU with AVX2.
        unsafe {
            let mut x = transpose(load_block(block));
            fwd_block_stage(&mut x, 4, &lane_twiddles(lanes, 0, 1), c);
            fwd_block_stage(&mut x, 2, &lane_twiddles(lanes, 1, 2), c);
            fwd_block_stage(&mut x, 1, &lane_twiddles(lanes, 3, 4), c);
            for y in x.iter_mut() {
                *y = csub(csub(*y, c.two_q), c.q);
            }
            store_block(block, transpose(x));
        }
    }
}

// ---------------------------------------------------------------------------
// Inverse transform.

/// The first three stages (gaps 1, 2, 4), one 64-coefficient block at a time,
/// transposed as in [`fwd_lanes`]. Safety: AVX2.
#[inline(always)]
unsafe fn inv_lanes(t: &NttTables, v: &mut [[u32; 8]], c: Consts) {
    let lanes = t.simd.avx2.inv_lanes.chunks_exact(LANE_VECTORS);
    for (block, lanes) in v.chunks_exact_mut(8).zip(lanes) {
        // SAFETY (whole block): the caller runs on a CPU with AVX2.
        unsafe {
            let mut x = transpose(load_block(block));
            inv_block_stage(&mut x, 1, &lane_twiddles(lanes, 0, 4), c);
            inv_block_stage(&mut x, 2, &lane_twiddles(lanes, 4, 2), c);
            inv_block_stage(&mut x, 4, &lane_twiddles(lanes, 6, 1), c);
            store_block(block, transpose(x));
        }
    }
}

/// The stage with `groups` groups, one pass over memory. Safety: AVX2.
#[inline(always)]
unsafe fn inv_radix2(t: &NttTables, v: &mut [[u32; 8]], groups: usize, c: Consts) {
    for (i, group) in v.chunks_exact_mut(v.len() / groups).enumerate() {
        // SAFETY (whole block): the caller runs on a CPU with AVX2.
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
/// Safety: AVX2.
#[inline(always)]
unsafe fn inv_radix4(t: &NttTables, v: &mut [[u32; 8]], groups: usize, c: Consts) {
    for (i, group) in v.chunks_exact_mut(2 * v.len() / groups).enumerate() {
        // SAFETY (whole block): the caller runs on a CPU with AVX2.
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
/// as scalar does; outputs in `[0, q)`. Safety: AVX2.
#[inline(always)]
unsafe fn inv_last_radix4(t: &NttTables, v: &mut [[u32; 8]], s: &InvScale, c: Consts) {
    // SAFETY (whole block): the caller runs on a CPU with AVX2.
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
/// The CPU supports AVX2.
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn forward(t: &NttTables, a: &mut [u32]) {
    debug_assert_eq!(a.len(), t.n);
    if t.n < MIN_N {
        return scalar::forward(t, a);
    }
    let (v, _) = split_vectors_mut(a);
    // SAFETY (whole block): AVX2 is enabled here, and the helpers need no more.
    unsafe {
        let c = Consts::new(t.modulus.value());
        // Stages with gap >= 8 go over memory, in pairs; an odd one out goes
        // first, where its long runs of one twiddle make it cheapest.
        let mut groups = 1;
        if t.n.trailing_zeros().is_multiple_of(2) {
            fwd_radix2(t, v, groups, c);
            groups *= 2;
        }
        while groups < t.n / 8 {
            fwd_radix4(t, v, groups, c);
            groups *= 4;
        }
        fwd_lanes(t, v, c);
    }
}

/// Inverse negacyclic NTT, bit-identical to [`scalar::inverse`].
///
/// # Safety
/// The CPU supports AVX2.
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn inverse(t: &NttTables, a: &mut [u32], s: &InvScale) {
    debug_assert_eq!(a.len(), t.n);
    if t.n < MIN_N {
        return scalar::inverse(t, a, s);
    }
    let (v, _) = split_vectors_mut(a);
    // SAFETY (whole block): AVX2 is enabled here, and the helpers need no more.
    unsafe {
        let c = Consts::new(t.modulus.value());
        inv_lanes(t, v, c);
        // Groups of the next stage (gap 8); the stages from there go over
        // memory in pairs, and the last pass applies n^-1.
        let mut groups = t.n / 16;
        if t.n.trailing_zeros().is_multiple_of(2) {
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
    q: __m256i,
    q_neg_inv: __m256i,
    r: Twiddle,
}

impl ProductConsts {
    #[inline(always)]
    unsafe fn new(m: &Modulus) -> Self {
        let r = m.shoup(m.r());
        // SAFETY: the caller runs on a CPU with AVX2.
        unsafe {
            Self {
                q: _mm256_set1_epi32(m.value() as i32),
                q_neg_inv: _mm256_set1_epi32(m.q_neg_inv() as i32),
                r: Twiddle::splat(r.value, r.shoup),
            }
        }
    }

    /// `a · b mod q` in `[0, q)` for `a, b < q`.
    #[inline(always)]
    unsafe fn mul(self, a: __m256i, b: __m256i) -> __m256i {
        // SAFETY: the caller runs on a CPU with AVX2.
        unsafe {
            let x = mont_mul_lazy(a, b, self.q, self.q_neg_inv);
            csub(mul_shoup_lazy(x, self.r, self.q), self.q)
        }
    }

    /// `a · b · 2^-32 mod q` in `[0, q)` for `a, b < q`: the product by a
    /// `b` held in Montgomery form.
    #[inline(always)]
    unsafe fn mul_mont(self, a: __m256i, b: __m256i) -> __m256i {
        // SAFETY: as for `mul`.
        unsafe { csub(mont_mul_lazy(a, b, self.q, self.q_neg_inv), self.q) }
    }

    /// [`Self::mul`], or with `MONT` [`Self::mul_mont`].
    #[inline(always)]
    unsafe fn product<const MONT: bool>(self, a: __m256i, b: __m256i) -> __m256i {
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
/// The CPU supports AVX2.
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn mul<const MONT: bool>(m: &Modulus, a: &[u32], b: &[u32], out: &mut [u32]) {
    debug_assert!(a.len() == b.len() && a.len() == out.len());
    let ((av, at), (bv, bt)) = (split_vectors(a), split_vectors(b));
    let (ov, ot) = split_vectors_mut(out);
    // SAFETY (whole block): AVX2 is enabled here, and the helpers need no more.
    unsafe {
        let k = ProductConsts::new(m);
        for ((o, x), y) in ov.iter_mut().zip(av).zip(bv) {
            store(o, k.product::<MONT>(load(x), load(y)));
        }
    }
    scalar::mul::<MONT>(m, at, bt, ot);
}

/// `out = a · b mod q` as [`mul`], with non-temporal stores into the
/// 32-byte-aligned part of `out`: for results that are not read again
/// soon (a gallery's score ciphertexts), which then skip the read for
/// ownership and leave the cache to the inputs.
///
/// # Safety
/// The CPU supports AVX2.
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn mul_streaming(m: &Modulus, a: &[u32], b: &[u32], out: &mut [u32]) {
    debug_assert!(a.len() == b.len() && a.len() == out.len());
    #[repr(C, align(32))]
    struct Line([u32; 8]);
    // SAFETY: `Line` is 8 plain `u32`s, so every bit pattern is valid.
    let (head, body, tail) = unsafe { out.align_to_mut::<Line>() };
    let (h, len) = (head.len(), body.len() * 8);
    let (av, _) = split_vectors(&a[h..h + len]);
    let (bv, _) = split_vectors(&b[h..h + len]);
    // SAFETY (whole block): AVX2 is enabled here; every `Line` is
    // 32-byte aligned, as the streaming store requires.
    unsafe {
        mul::<false>(m, &a[..h], &b[..h], head);
        let k = ProductConsts::new(m);
        for ((o, x), y) in body.iter_mut().zip(av).zip(bv) {
            _mm_prefetch::<_MM_HINT_T0>(x.as_ptr().wrapping_add(STREAM_PREFETCH).cast());
            _mm256_stream_si256(o.0.as_mut_ptr().cast(), k.mul(load(x), load(y)));
        }
        // Orders the streaming stores before whatever the caller does next
        // (another thread may read the result).
        _mm_sfence();
        mul::<false>(m, &a[h + len..], &b[h + len..], tail);
    }
}

/// `Σ_k a_k·x_k + b_k·y_k mod q`, equal to [`scalar::dot2`], for residues
/// below `q < 2^30`: as the AVX-512 kernel, four products per 64-bit lane
/// summed, their low and high halves accumulated apart, and the same
/// prefetching ahead of `a` and `b`.
///
/// # Safety
/// The CPU supports AVX2.
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn dot2(m: &Modulus, a: &[u32], x: &[u32], b: &[u32], y: &[u32]) -> u32 {
    debug_assert!(
        m.value() < 1 << 30 && a.len() == x.len() && b.len() == y.len() && a.len() == b.len()
    );
    debug_assert!(a.len() < 1 << 24);
    let ((av, at), (xv, xt)) = (split_vectors(a), split_vectors(x));
    let ((bv, bt), (yv, yt)) = (split_vectors(b), split_vectors(y));
    let mut lanes = [[0u64; 4]; 2];
    // SAFETY (whole block): AVX2 is enabled here, and the helpers need no
    // more; the stores write 32 bytes into each `[u64; 4]`.
    unsafe {
        let low = _mm256_set1_epi64x(0xffff_ffff);
        let (mut lo, mut hi) = (_mm256_setzero_si256(), _mm256_setzero_si256());
        for (((a, x), b), y) in av.iter().zip(xv).zip(bv).zip(yv) {
            // As in the AVX-512 kernel: a hint, never a read. Every other
            // vector starts a new 64-byte line.
            _mm_prefetch::<_MM_HINT_T0>(a.as_ptr().wrapping_add(STREAM_PREFETCH).cast());
            _mm_prefetch::<_MM_HINT_T0>(b.as_ptr().wrapping_add(STREAM_PREFETCH).cast());
            let (a, x, b, y) = (load(a), load(x), load(b), load(y));
            let even = _mm256_add_epi64(_mm256_mul_epu32(a, x), _mm256_mul_epu32(b, y));
            let odd = _mm256_add_epi64(
                _mm256_mul_epu32(_mm256_srli_epi64(a, 32), _mm256_srli_epi64(x, 32)),
                _mm256_mul_epu32(_mm256_srli_epi64(b, 32), _mm256_srli_epi64(y, 32)),
            );
            let s = _mm256_add_epi64(even, odd);
            lo = _mm256_add_epi64(lo, _mm256_and_si256(s, low));
            hi = _mm256_add_epi64(hi, _mm256_srli_epi64(s, 32));
        }
        _mm256_storeu_si256(lanes[0].as_mut_ptr().cast(), lo);
        _mm256_storeu_si256(lanes[1].as_mut_ptr().cast(), hi);
    }
    let (lo, hi): (u64, u64) = (lanes[0].iter().sum(), lanes[1].iter().sum());
    m.add(
        scalar::join_halves(m, lo, hi),
        scalar::dot2(m, at, xt, bt, yt),
    )
}

/// `acc = acc + a · b mod q` (with `SUB`, `acc - a · b`; with `MONT`, the
/// Montgomery product), bit-identical to [`scalar::mul_acc`].
///
/// # Safety
/// The CPU supports AVX2.
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn mul_acc<const MONT: bool, const SUB: bool>(
    m: &Modulus,
    a: &[u32],
    b: &[u32],
    acc: &mut [u32],
) {
    debug_assert!(a.len() == b.len() && a.len() == acc.len());
    let ((av, at), (bv, bt)) = (split_vectors(a), split_vectors(b));
    let (cv, ct) = split_vectors_mut(acc);
    // SAFETY (whole block): AVX2 is enabled here, and the helpers need no more.
    unsafe {
        let k = ProductConsts::new(m);
        for ((s, x), y) in cv.iter_mut().zip(av).zip(bv) {
            let p = k.product::<MONT>(load(x), load(y));
            // The product is in [0, q): acc - p + q is in (0, 2q).
            let sum = if SUB {
                _mm256_sub_epi32(_mm256_add_epi32(load(s), k.q), p)
            } else {
                _mm256_add_epi32(load(s), p)
            };
            store(s, csub(sum, k.q));
        }
    }
    scalar::mul_acc::<MONT, SUB>(m, at, bt, ct);
}

/// `out[x] = Σ_k inputs[k][x] · weights[k] mod q`, in `[0, q)` (the exact
/// residue, as [`scalar::lincomb`] gives it), eight coefficients at a time.
///
/// With three or more terms, the products are summed in 64-bit lanes and
/// reduced once per [`MONT_TERMS`] terms (see [`crate::backend::MONT_TERMS`]
/// for the bounds, which need inputs below `2^31`). A block of eight in which
/// some input has its top bit set is done again with a Shoup product per term,
/// so any `u32` input gives the exact result.
///
/// # Safety
/// The CPU supports AVX2.
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn lincomb(
    m: &Modulus,
    inputs: &[&[u32]],
    weights: &[ShoupConstant],
    out: &mut [u32],
) {
    let n = out.len();
    assert!(inputs.iter().all(|x| x.len() >= n) && inputs.len() == weights.len());
    if inputs.len() < 3 {
        // SAFETY: AVX2, as this function's caller guarantees.
        return unsafe { lincomb_shoup(m, inputs, weights, out) };
    }
    let mont: Vec<u32> = weights.iter().map(|w| m.to_montgomery(w.value)).collect();
    let whole = n / 8 * 8;
    // SAFETY (whole block): AVX2 is enabled here. Every input holds at least
    // `n` values (asserted above) and `b + 8 <= whole <= n`, so each unaligned
    // load and store stays inside its slice.
    unsafe {
        let q = _mm256_set1_epi32(m.value() as i32);
        let two_q = _mm256_set1_epi32((2 * m.value()) as i32);
        let q_neg_inv = _mm256_set1_epi32(m.q_neg_inv() as i32);
        let mut b = 0;
        while b < whole {
            let mut acc = _mm256_setzero_si256();
            let mut seen = _mm256_setzero_si256();
            for (xs, ws) in inputs.chunks(MONT_TERMS).zip(mont.chunks(MONT_TERMS)) {
                // 64-bit sums: even lanes in `even`, odd lanes in `odd`.
                let (mut even, mut odd) = (_mm256_setzero_si256(), _mm256_setzero_si256());
                for (x, &w) in xs.iter().zip(ws) {
                    let w = _mm256_set1_epi32(w as i32);
                    let v = _mm256_loadu_si256(x.as_ptr().add(b).cast());
                    seen = _mm256_or_si256(seen, v);
                    even = _mm256_add_epi64(even, _mm256_mul_epu32(v, w));
                    odd = _mm256_add_epi64(odd, _mm256_mul_epu32(_mm256_srli_epi64::<32>(v), w));
                }
                // (s + m·q) / 2^32 with m = s·(−q^-1) mod 2^32, in [0, 4q).
                let te =
                    _mm256_add_epi64(even, _mm256_mul_epu32(_mm256_mul_epu32(even, q_neg_inv), q));
                let to =
                    _mm256_add_epi64(odd, _mm256_mul_epu32(_mm256_mul_epu32(odd, q_neg_inv), q));
                let r = _mm256_blend_epi32::<0b1010_1010>(_mm256_srli_epi64::<32>(te), to);
                acc = csub(_mm256_add_epi32(acc, csub(r, two_q)), two_q);
            }
            if _mm256_movemask_ps(_mm256_castsi256_ps(seen)) == 0 {
                _mm256_storeu_si256(out.as_mut_ptr().add(b).cast(), csub(acc, q));
            } else {
                lincomb_shoup(m, &scalar::tails(inputs, b), weights, &mut out[b..b + 8]);
            }
            b += 8;
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
/// The CPU supports AVX2.
#[target_feature(enable = "avx2")]
unsafe fn lincomb_shoup(
    m: &Modulus,
    inputs: &[&[u32]],
    weights: &[ShoupConstant],
    out: &mut [u32],
) {
    let n = out.len();
    assert!(inputs.iter().all(|x| x.len() >= n) && inputs.len() == weights.len());
    let whole = n / 8 * 8;
    // SAFETY (whole block): AVX2 is enabled here. Every input holds at least
    // `n` values (asserted above) and `b + 8 <= whole <= n`, so each unaligned
    // load and store stays inside its slice.
    unsafe {
        let q = _mm256_set1_epi32(m.value() as i32);
        let two_q = _mm256_set1_epi32((2 * m.value()) as i32);
        let mut b = 0;
        while b < whole {
            let mut acc = _mm256_setzero_si256();
            for (input, w) in inputs.iter().zip(weights) {
                let w = Twiddle::splat(w.value, w.shoup);
                let x = _mm256_loadu_si256(input.as_ptr().add(b).cast());
                acc = csub(_mm256_add_epi32(acc, mul_shoup_lazy(x, w, q)), two_q);
            }
            _mm256_storeu_si256(out.as_mut_ptr().add(b).cast(), csub(acc, q));
            b += 8;
        }
    }
    if whole < n {
        scalar::lincomb(m, &scalar::tails(inputs, whole), weights, &mut out[whole..]);
    }
}

/// `out[x] = round(Σ_k inputs[k][x] · coeffs[k])`, bit-identical to
/// [`scalar::round_weighted_sum`] (same `f64` operations in the same order,
/// four lanes at a time, no fused multiply-add).
///
/// # Safety
/// The CPU supports AVX2.
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn round_weighted_sum(inputs: &[&[u32]], coeffs: &[f64], out: &mut [u32]) {
    let n = out.len();
    assert!(inputs.iter().all(|x| x.len() >= n) && inputs.len() == coeffs.len());
    let whole = n / 4 * 4;
    // SAFETY (whole block): AVX2 is enabled here; loads and stores of four
    // `u32` at `b + 4 <= whole <= n` stay inside slices of at least `n`.
    unsafe {
        let half = _mm256_set1_pd(0.5);
        let mut b = 0;
        while b < whole {
            let mut v = _mm256_setzero_pd();
            for (input, &c) in inputs.iter().zip(coeffs) {
                let x = _mm_loadu_si128(input.as_ptr().add(b).cast());
                v = _mm256_add_pd(v, _mm256_mul_pd(_mm256_cvtepi32_pd(x), _mm256_set1_pd(c)));
            }
            let r = _mm256_cvttpd_epi32(_mm256_add_pd(v, half));
            _mm_storeu_si128(out.as_mut_ptr().add(b).cast(), r);
            b += 4;
        }
    }
    if whole < n {
        scalar::round_weighted_sum(&scalar::tails(inputs, whole), coeffs, &mut out[whole..]);
    }
}

/// `Σ_k floor(p_k) + round(Σ_k frac(p_k))`, bit-identical to
/// [`scalar::floor_frac_sum`], four lanes at a time.
///
/// # Safety
/// The CPU supports AVX2.
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn floor_frac_sum(inputs: &[&[u32]], thetas: &[f64], out: &mut [u32]) {
    let n = out.len();
    assert!(inputs.iter().all(|x| x.len() >= n) && inputs.len() == thetas.len());
    let whole = n / 4 * 4;
    // SAFETY (whole block): as in `round_weighted_sum`.
    unsafe {
        let half = _mm256_set1_pd(0.5);
        let mut b = 0;
        while b < whole {
            let mut int = _mm_setzero_si128();
            let mut frac = _mm256_setzero_pd();
            for (input, &theta) in inputs.iter().zip(thetas) {
                let x = _mm_loadu_si128(input.as_ptr().add(b).cast());
                let p = _mm256_mul_pd(_mm256_cvtepi32_pd(x), _mm256_set1_pd(theta));
                let fl = _mm256_cvttpd_epi32(p);
                int = _mm_add_epi32(int, fl);
                frac = _mm256_add_pd(frac, _mm256_sub_pd(p, _mm256_cvtepi32_pd(fl)));
            }
            int = _mm_add_epi32(int, _mm256_cvttpd_epi32(_mm256_add_pd(frac, half)));
            _mm_storeu_si128(out.as_mut_ptr().add(b).cast(), int);
            b += 4;
        }
    }
    if whole < n {
        scalar::floor_frac_sum(&scalar::tails(inputs, whole), thetas, &mut out[whole..]);
    }
}

/// [`scalar::cbd`] compiled with the `popcnt` instruction (the portable
/// build counts bits with shifts and masks).
///
/// # Safety
/// The CPU supports POPCNT.
#[target_feature(enable = "popcnt")]
pub(crate) unsafe fn cbd(words: &[u32], out: &mut [i8]) {
    scalar::cbd(words, out)
}
