//! The avx512 forward and inverse negacyclic NTTs.

use crate::backend::scalar;
use crate::backend::tables::{InvScale, NttTables};

use super::lanes::*;
use super::*;

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
/// time, transposed as in [`fwd_lanes`]; each block read from `from` when
/// given (the same length as `v`), else from `v`. Safety: AVX-512F.
#[inline(always)]
unsafe fn inv_lanes(t: &NttTables, from: Option<&[[u32; W]]>, v: &mut [[u32; W]], c: Consts) {
    let lanes = t.simd.avx512.inv_lanes.chunks_exact(LANE_VECTORS);
    for (k, (block, lanes)) in v.chunks_exact_mut(W).zip(lanes).enumerate() {
        // SAFETY (whole block): the caller runs on a CPU with AVX-512F.
        unsafe {
            let mut x = transpose(match from {
                Some(from) => load_block(&from[k * W..(k + 1) * W]),
                None => load_block(block),
            });
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
    // SAFETY: AVX-512F, as this function's caller guarantees.
    unsafe { inverse_with(t, None, a, s) }
}

/// [`inverse`] of `from` into `a`: the first pass reads `from`, so the
/// input needs no copy.
///
/// # Safety
/// The CPU supports AVX-512F.
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn inverse_from(t: &NttTables, from: &[u32], a: &mut [u32], s: &InvScale) {
    assert_eq!(from.len(), a.len());
    // SAFETY: AVX-512F, as this function's caller guarantees.
    unsafe { inverse_with(t, Some(from), a, s) }
}

#[target_feature(enable = "avx512f")]
unsafe fn inverse_with(t: &NttTables, from: Option<&[u32]>, a: &mut [u32], s: &InvScale) {
    debug_assert_eq!(a.len(), t.n);
    if t.n < MIN_N {
        if let Some(from) = from {
            a.copy_from_slice(from);
        }
        return scalar::inverse(t, a, s);
    }
    let from = from.map(|f| split_vectors(f).0);
    let (v, _) = split_vectors_mut(a);
    // SAFETY (whole block): AVX-512F is enabled here, and the helpers need no
    // more.
    unsafe {
        let c = Consts::new(t.modulus.value());
        inv_lanes(t, from, v, c);
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
