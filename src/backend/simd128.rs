//! wasm simd128 kernels: four 32-bit lanes, the scalar algorithms lane-wise.
//!
//! wasm has no "high half of a 32 × 32 product", so [`mul_hi`] builds it from
//! the two widening multiplies (`u64x2_extmul_{low,high}_u32x4`) and one
//! shuffle. Butterflies are Harvey's, exactly as in `scalar.rs`: lazy Shoup
//! products, forward values in `[0, 4q)`, inverse values in `[0, 2q)`,
//! conditional subtractions as `min(x, x − m)` (no branches, no masks).
//!
//! The last two forward layers (gap 2 and gap 1) and the first two inverse
//! layers run fused on eight coefficients held in two registers, with the
//! gap-2 twiddles laid out per lane in [`Tables`]; the gap-1 twiddles are
//! already contiguous in `NttTables`.
//!
//! The widening multiplies only pay off if they reach the engine as `extmul`
//! rather than as a full `i64x2.mul`; [`opaque`] explains the one optimiser
//! barrier that takes. Measured in Node 20 at `n = 4096` against the scalar
//! kernels of the same wasm build: forward about 2.4x, inverse 2.6x,
//! multiply-accumulate 3.4x faster.
//!
//! simd128 is enabled for the whole wasm build, so these are safe functions;
//! the only `unsafe` is the unaligned 16-byte load and store.

use core::arch::wasm32::*;

use crate::arith::Modulus;
use crate::backend::scalar;
use crate::backend::tables::{InvScale, NttTables};

/// Per-plan tables in the layout these kernels read.
#[derive(Default)]
pub(crate) struct Tables {
    /// The gap-2 forward layer's twiddles, each repeated for two lanes:
    /// entries `4j..4j+4` are `fwd[n/4+2j]` twice, then `fwd[n/4+2j+1]` twice.
    fwd_gap2: Vec<u32>,
    fwd_gap2_shoup: Vec<u32>,
    /// The gap-2 inverse layer's twiddles, laid out like `fwd_gap2`.
    inv_gap2: Vec<u32>,
    inv_gap2_shoup: Vec<u32>,
}

impl Tables {
    pub(crate) fn new(t: &NttTables) -> Self {
        let n = t.n;
        let pairs = |tw: &[u32]| tw[n / 4..n / 2].iter().flat_map(|&w| [w, w]).collect();
        Self {
            fwd_gap2: pairs(&t.fwd),
            fwd_gap2_shoup: pairs(&t.fwd_shoup),
            inv_gap2: pairs(&t.inv),
            inv_gap2_shoup: pairs(&t.inv_shoup),
        }
    }
}

/// Loads lanes `s[0..4]`.
#[inline]
fn load(s: &[u32]) -> v128 {
    assert!(s.len() >= 4);
    // SAFETY: `s` has at least four readable `u32`s (16 bytes); `v128_load`
    // has no alignment requirement.
    unsafe { v128_load(s.as_ptr().cast()) }
}

/// Stores `v` into `s[0..4]`.
#[inline]
fn store(s: &mut [u32], v: v128) {
    assert!(s.len() >= 4);
    // SAFETY: `s` has at least four writable `u32`s, borrowed exclusively;
    // `v128_store` has no alignment requirement.
    unsafe { v128_store(s.as_mut_ptr().cast(), v) }
}

/// Hides `v` from the optimiser; use it on a loop-invariant operand of a
/// widening multiply, right where the multiply is.
///
/// LLVM hoists the zero-extension of a loop-invariant operand out of the
/// loop, and the multiply left behind no longer matches `extmul`: it becomes
/// a full `i64x2.mul`, which V8 emulates with three `pmuludq` and five more
/// instructions, against three for `extmul`. Measured in Node 20, a Shoup
/// loop runs about 1.6x faster with the barrier, whose cost is one store and
/// one load of the stack slot. If `black_box` ever became a no-op, results
/// would not change, only speed.
#[inline]
fn opaque(v: v128) -> v128 {
    core::hint::black_box(v)
}

/// High 32 bits of the four lane products `a·b`. `b` is usually a
/// loop-invariant constant, which the caller passes through [`opaque`].
#[inline]
fn mul_hi(a: v128, b: v128) -> v128 {
    let lo = u64x2_extmul_low_u32x4(a, b);
    let hi = u64x2_extmul_high_u32x4(a, b);
    i32x4_shuffle::<1, 3, 5, 7>(lo, hi)
}

/// Lazy Shoup product `a·w mod q` in `[0, 2q)` for any `a`, as
/// `Modulus::mul_shoup_lazy`.
#[inline]
fn mul_shoup_lazy(a: v128, w: v128, w_shoup: v128, q: v128) -> v128 {
    mul_shoup_lazy_pre(a, w, opaque(w_shoup), q)
}

/// [`mul_shoup_lazy`] with `w_shoup` already passed through [`opaque`] by
/// the caller (once for several products).
#[inline]
fn mul_shoup_lazy_pre(a: v128, w: v128, w_shoup: v128, q: v128) -> v128 {
    let est = mul_hi(a, w_shoup);
    i32x4_sub(i32x4_mul(a, w), i32x4_mul(est, q))
}

/// `x − m` where that does not wrap, else `x` (for `x < m + 2^31`).
#[inline]
fn csub(x: v128, m: v128) -> v128 {
    u32x4_min(x, i32x4_sub(x, m))
}

/// Broadcast constants shared by the NTT kernels.
#[derive(Clone, Copy)]
struct Consts {
    q: v128,
    two_q: v128,
}

impl Consts {
    fn new(m: &Modulus) -> Self {
        Self {
            q: u32x4_splat(m.value()),
            two_q: u32x4_splat(2 * m.value()),
        }
    }
}

/// Harvey Cooley–Tukey butterfly: `x, y < 4q` to `x + w·y, x − w·y`, both
/// below `4q`.
#[inline]
fn ct_butterfly(x: v128, y: v128, w: v128, w_shoup: v128, c: Consts) -> (v128, v128) {
    let u = csub(x, c.two_q);
    let v = mul_shoup_lazy(y, w, w_shoup, c.q);
    (i32x4_add(u, v), i32x4_sub(i32x4_add(u, c.two_q), v))
}

/// Harvey Gentleman–Sande butterfly: `x, y < 2q` to `x + y, w·(x − y)`,
/// both below `2q`.
#[inline]
fn gs_butterfly(x: v128, y: v128, w: v128, w_shoup: v128, c: Consts) -> (v128, v128) {
    let s = csub(i32x4_add(x, y), c.two_q);
    let d = mul_shoup_lazy(i32x4_sub(i32x4_add(x, c.two_q), y), w, w_shoup, c.q);
    (s, d)
}

/// Lanes `[a0, a1, b0, b1]` and `[a2, a3, b2, b3]`.
#[inline]
fn zip_pairs(a: v128, b: v128) -> (v128, v128) {
    (i64x2_shuffle::<0, 2>(a, b), i64x2_shuffle::<1, 3>(a, b))
}

/// Lanes `[a0, b0, a2, b2]` and `[a1, b1, a3, b3]`.
#[inline]
fn transpose_lanes(a: v128, b: v128) -> (v128, v128) {
    (
        i32x4_shuffle::<0, 4, 2, 6>(a, b),
        i32x4_shuffle::<1, 5, 3, 7>(a, b),
    )
}

/// Forward negacyclic NTT, same output as `scalar::forward`.
pub(crate) fn forward(t: &NttTables, a: &mut [u32]) {
    let tw = &t.simd.simd128;
    let c = Consts::new(&t.modulus);
    let n = t.n;
    debug_assert!(n >= 16 && a.len() == n);
    // Layers with gap >= 4: one broadcast twiddle per group.
    let mut groups = 1;
    let mut gap = n / 2;
    while gap >= 4 {
        for (i, block) in a.chunks_exact_mut(2 * gap).enumerate() {
            let w = u32x4_splat(t.fwd[groups + i]);
            let w_shoup = u32x4_splat(t.fwd_shoup[groups + i]);
            let (lo, hi) = block.split_at_mut(gap);
            for (x, y) in lo.chunks_exact_mut(4).zip(hi.chunks_exact_mut(4)) {
                let (u, v) = ct_butterfly(load(x), load(y), w, w_shoup, c);
                store(x, u);
                store(y, v);
            }
        }
        groups <<= 1;
        gap >>= 1;
    }
    // Gap 2 then gap 1 on eight coefficients, then reduce to [0, q).
    let w2 = tw.fwd_gap2.chunks_exact(4);
    let w2_shoup = tw.fwd_gap2_shoup.chunks_exact(4);
    let w1 = t.fwd[n / 2..].chunks_exact(4);
    let w1_shoup = t.fwd_shoup[n / 2..].chunks_exact(4);
    let twiddles = w2.zip(w2_shoup).zip(w1.zip(w1_shoup));
    for (block, ((w2, w2s), (w1, w1s))) in a.chunks_exact_mut(8).zip(twiddles) {
        let (a0, a1) = (load(&block[..4]), load(&block[4..]));
        // Gap 2: x = [c0 c1 c4 c5], y = [c2 c3 c6 c7].
        // Without the `opaque` barriers LLVM folds these shuffles into the
        // high-half extension of `mul_hi` and loses `extmul` (see `opaque`).
        let (x, y) = zip_pairs(a0, a1);
        let (x, y) = ct_butterfly(x, opaque(y), load(w2), load(w2s), c);
        // Gap 1: x = [c0 c2 c4 c6], y = [c1 c3 c5 c7].
        let (x, y) = transpose_lanes(x, y);
        let (x, y) = ct_butterfly(x, opaque(y), load(w1), load(w1s), c);
        let x = csub(csub(x, c.two_q), c.q);
        let y = csub(csub(y, c.two_q), c.q);
        store(&mut block[..4], i32x4_shuffle::<0, 4, 1, 5>(x, y));
        store(&mut block[4..], i32x4_shuffle::<2, 6, 3, 7>(x, y));
    }
}

/// Inverse negacyclic NTT, same output as `scalar::inverse`.
pub(crate) fn inverse(t: &NttTables, a: &mut [u32], s: &InvScale) {
    let tw = &t.simd.simd128;
    let c = Consts::new(&t.modulus);
    let n = t.n;
    debug_assert!(n >= 16 && a.len() == n);
    // Gap 1 then gap 2 on eight coefficients.
    let w1 = t.inv[n / 2..].chunks_exact(4);
    let w1_shoup = t.inv_shoup[n / 2..].chunks_exact(4);
    let w2 = tw.inv_gap2.chunks_exact(4);
    let w2_shoup = tw.inv_gap2_shoup.chunks_exact(4);
    let twiddles = w1.zip(w1_shoup).zip(w2.zip(w2_shoup));
    for (block, ((w1, w1s), (w2, w2s))) in a.chunks_exact_mut(8).zip(twiddles) {
        let (a0, a1) = (load(&block[..4]), load(&block[4..]));
        // Gap 1: x = [c0 c2 c4 c6], y = [c1 c3 c5 c7].
        let x = i32x4_shuffle::<0, 2, 4, 6>(a0, a1);
        let y = i32x4_shuffle::<1, 3, 5, 7>(a0, a1);
        let (x, y) = gs_butterfly(x, y, load(w1), load(w1s), c);
        // Gap 2: x = [c0 c1 c4 c5], y = [c2 c3 c6 c7].
        let (x, y) = transpose_lanes(x, y);
        let (x, y) = gs_butterfly(x, y, load(w2), load(w2s), c);
        let (a0, a1) = zip_pairs(x, y);
        store(&mut block[..4], a0);
        store(&mut block[4..], a1);
    }
    // Layers with gap 4 ..= n/4: one broadcast twiddle per group.
    let mut groups = n / 8;
    let mut gap = 4;
    while groups > 1 {
        for (i, block) in a.chunks_exact_mut(2 * gap).enumerate() {
            let w = u32x4_splat(t.inv[groups + i]);
            let w_shoup = u32x4_splat(t.inv_shoup[groups + i]);
            let (lo, hi) = block.split_at_mut(gap);
            for (x, y) in lo.chunks_exact_mut(4).zip(hi.chunks_exact_mut(4)) {
                let (u, v) = gs_butterfly(load(x), load(y), w, w_shoup, c);
                store(x, u);
                store(y, v);
            }
        }
        groups >>= 1;
        gap <<= 1;
    }
    // Last layer with the n^-1 scaling folded into both outputs.
    let ni = (u32x4_splat(s.n_inv.value), u32x4_splat(s.n_inv.shoup));
    let niw = (u32x4_splat(s.n_inv_w.value), u32x4_splat(s.n_inv_w.shoup));
    let (lo, hi) = a.split_at_mut(n / 2);
    for (x, y) in lo.chunks_exact_mut(4).zip(hi.chunks_exact_mut(4)) {
        let (u, v) = (load(x), load(y));
        let s = mul_shoup_lazy(i32x4_add(u, v), ni.0, ni.1, c.q);
        let d = mul_shoup_lazy(i32x4_sub(i32x4_add(u, c.two_q), v), niw.0, niw.1, c.q);
        store(x, csub(s, c.q));
        store(y, csub(d, c.q));
    }
}

/// Broadcast constants for [`mul_lanes`].
#[derive(Clone, Copy)]
struct MulConsts {
    q: v128,
    /// `-q^-1 mod 2^32`.
    q_neg_inv: v128,
    /// `2^32 mod q` with its Shoup companion.
    r: v128,
    r_shoup: v128,
}

impl MulConsts {
    fn new(m: &Modulus) -> Self {
        let r = m.shoup(m.r());
        Self {
            q: u32x4_splat(m.value()),
            q_neg_inv: u32x4_splat(m.q_neg_inv()),
            r: u32x4_splat(r.value),
            r_shoup: u32x4_splat(r.shoup),
        }
    }
}

/// `a·b mod q` in `[0, q)` for four lanes of `a, b < q`.
///
/// A lazy Montgomery product gives `a·b·2^-32` in `[0, 2q)`; a Shoup product
/// by the constant `2^32 mod q` undoes the `2^-32`.
#[inline]
fn mul_lanes<const MONT: bool>(a: v128, b: v128, k: MulConsts) -> v128 {
    // t = a·b (64-bit halves); u = t·(-q^-1) mod 2^32; (t + u·q) / 2^32.
    let t_lo = u64x2_extmul_low_u32x4(a, b);
    let t_hi = u64x2_extmul_high_u32x4(a, b);
    let u = i32x4_mul(i32x4_mul(a, b), k.q_neg_inv);
    // t + u·q < q^2 + 2^32·q < 2^63: no carry out of the 64-bit lanes.
    let q = opaque(k.q);
    let s_lo = i64x2_add(t_lo, u64x2_extmul_low_u32x4(u, q));
    let s_hi = i64x2_add(t_hi, u64x2_extmul_high_u32x4(u, q));
    let ab = i32x4_shuffle::<1, 3, 5, 7>(s_lo, s_hi);
    if MONT {
        // The Montgomery product itself, in [0, 2q).
        return csub(ab, k.q);
    }
    csub(mul_shoup_lazy(ab, k.r, k.r_shoup, k.q), k.q)
}

/// `out = a·b mod q` (with `MONT`, the Montgomery product `a·b·2^-32`), same
/// output as `scalar::mul`.
pub(crate) fn mul<const MONT: bool>(m: &Modulus, a: &[u32], b: &[u32], out: &mut [u32]) {
    debug_assert!(a.len() == b.len() && a.len() == out.len());
    let k = MulConsts::new(m);
    let body = a.len() / 4 * 4;
    let lanes = a.chunks_exact(4).zip(b.chunks_exact(4));
    for (o, (x, y)) in out.chunks_exact_mut(4).zip(lanes) {
        store(o, mul_lanes::<MONT>(load(x), load(y), k));
    }
    scalar::mul::<MONT>(m, &a[body..], &b[body..], &mut out[body..]);
}

/// `acc = acc + a·b mod q` (with `MONT`, the Montgomery product), same output
/// as `scalar::mul_acc`.
pub(crate) fn mul_acc<const MONT: bool, const SUB: bool>(
    m: &Modulus,
    a: &[u32],
    b: &[u32],
    acc: &mut [u32],
) {
    debug_assert!(a.len() == b.len() && a.len() == acc.len());
    let k = MulConsts::new(m);
    let body = a.len() / 4 * 4;
    let lanes = a.chunks_exact(4).zip(b.chunks_exact(4));
    for (c, (x, y)) in acc.chunks_exact_mut(4).zip(lanes) {
        let p = mul_lanes::<MONT>(load(x), load(y), k);
        // The product is in [0, q): acc - p + q is in (0, 2q).
        let sum = if SUB {
            i32x4_sub(i32x4_add(load(c), k.q), p)
        } else {
            i32x4_add(load(c), p)
        };
        store(c, csub(sum, k.q));
    }
    scalar::mul_acc::<MONT, SUB>(m, &a[body..], &b[body..], &mut acc[body..]);
}

/// `out[x] = Σ_k inputs[k][x] · weights[k] mod q`, bit-identical to
/// [`scalar::lincomb`] (the same lazy ranges, eight coefficients at a time).
pub(crate) fn lincomb(
    m: &Modulus,
    inputs: &[&[u32]],
    weights: &[crate::arith::ShoupConstant],
    out: &mut [u32],
) {
    let n = out.len();
    let q = u32x4_splat(m.value());
    let two_q = u32x4_splat(2 * m.value());
    let ws: Vec<(v128, v128)> = weights
        .iter()
        .map(|w| (u32x4_splat(w.value), u32x4_splat(w.shoup)))
        .collect();
    // Eight coefficients per step: two independent accumulators share each
    // weight's loads and its optimiser barrier.
    let pairs = n / 8 * 8;
    for b in (0..pairs).step_by(8) {
        let (mut lo, mut hi) = (u32x4_splat(0), u32x4_splat(0));
        for (input, &(w, w_shoup)) in inputs.iter().zip(&ws) {
            let w_shoup = opaque(w_shoup);
            let x = load(&input[b..b + 4]);
            let y = load(&input[b + 4..b + 8]);
            lo = csub(i32x4_add(lo, mul_shoup_lazy_pre(x, w, w_shoup, q)), two_q);
            hi = csub(i32x4_add(hi, mul_shoup_lazy_pre(y, w, w_shoup, q)), two_q);
        }
        store(&mut out[b..b + 4], csub(lo, q));
        store(&mut out[b + 4..b + 8], csub(hi, q));
    }
    scalar::lincomb(m, &scalar::tails(inputs, pairs), weights, &mut out[pairs..]);
}

/// [`crate::backend::Backend::scaled_plus_small`] in one pass: a lazy Shoup
/// product in `[0, 2q)`, plus the error widened from bytes, plus `q`, lies
/// in `(0, 3q + 21)`; two conditional subtractions bring it to `[0, q)`.
pub(crate) fn scaled_plus_small(
    m: &Modulus,
    x: &[u32],
    w: crate::arith::ShoupConstant,
    e: &[i8],
    out: &mut [u32],
) {
    let (q, two_q) = (u32x4_splat(m.value()), u32x4_splat(2 * m.value()));
    let (wv, ws) = (u32x4_splat(w.value), u32x4_splat(w.shoup));
    let body = out.len() / 4 * 4;
    let lanes = x.chunks_exact(4).zip(e.chunks_exact(4));
    for (o, (x, e)) in out.chunks_exact_mut(4).zip(lanes) {
        let p = mul_shoup_lazy(load(x), wv, ws, q);
        // SAFETY: `e` has four readable bytes; `v128_load32_zero` has no
        // alignment requirement.
        let e = unsafe { v128_load32_zero(e.as_ptr().cast()) };
        let e = i32x4_extend_low_i16x8(i16x8_extend_low_i8x16(e));
        let r = i32x4_add(i32x4_add(p, e), q);
        store(o, csub(csub(r, two_q), q));
    }
    scalar::lincomb(m, &[&x[body..]], &[w], &mut out[body..]);
    scalar::add_small(m, &e[body..], &mut out[body..]);
}

/// Byte shuffles that move the lanes set in a 4-bit mask to the front, in
/// order (the rest of the vector is don't-care).
const PACK: [[u8; 16]; 16] = {
    let mut t = [[0u8; 16]; 16];
    let mut m = 0;
    while m < 16 {
        let (mut lane, mut at) = (0, 0);
        while lane < 4 {
            if m & (1 << lane) != 0 {
                let mut b = 0;
                while b < 4 {
                    t[m][4 * at + b] = (4 * lane + b) as u8;
                    b += 1;
                }
                at += 1;
            }
            lane += 1;
        }
        m += 1;
    }
    t
};

/// Stores the lanes of `x` below `q` (`below`, a lane mask) packed to the
/// front at `out[0..4]` (the rest of the vector after them is don't-care);
/// returns their count.
#[inline]
fn pack_below(x: v128, below: v128, out: &mut [u32]) -> usize {
    let keep = u32x4_bitmask(below) as usize;
    // SAFETY: a table row is 16 readable bytes; `v128_load` has no
    // alignment requirement.
    let pattern = unsafe { v128_load(PACK[keep].as_ptr().cast()) };
    store(out, i8x16_swizzle(x, pattern));
    keep.count_ones() as usize
}

/// [`crate::backend::Backend::take_below`]: eight words (two vectors) at
/// once, stored as they are when none is rejected, else each vector's words
/// below `q` packed to the front by a byte shuffle and stored at `out[i]`,
/// `i` moved on by their count. No branch on which words are kept, and the
/// same kept words as the scalar kernel (lanes stored past the kept ones
/// are overwritten next, as a rejected word is there).
pub(crate) fn take_below(words: &[u32], shift: u32, q: u32, out: &mut [u32]) -> (usize, usize) {
    let qv = u32x4_splat(q);
    // Where a run of eight is often not whole, the branch on it would
    // mispredict: every vector is packed instead.
    let whole_runs = !scalar::rejects_often(shift, q);
    let (mut used, mut i) = (0, 0);
    while used + 8 <= words.len() && i + 8 <= out.len() {
        let w = &words[used..used + 8];
        let x = u32x4_shr(load(&w[..4]), shift);
        let y = u32x4_shr(load(&w[4..]), shift);
        let (bx, by) = (u32x4_lt(x, qv), u32x4_lt(y, qv));
        if whole_runs && u32x4_all_true(v128_and(bx, by)) {
            store(&mut out[i..i + 4], x);
            store(&mut out[i + 4..i + 8], y);
            i += 8;
        } else {
            i += pack_below(x, bx, &mut out[i..i + 4]);
            i += pack_below(y, by, &mut out[i..i + 4]);
        }
        used += 8;
    }
    let (u, w) = scalar::take_below(&words[used..], shift, q, &mut out[i..]);
    (used + u, i + w)
}

/// Lanes 0 and 1 of `x` (inputs below `2^31`) as `f64`s, and lanes 2 and 3.
#[inline]
fn to_f64_halves(x: v128) -> (v128, v128) {
    let high = i32x4_shuffle::<2, 3, 0, 1>(x, x);
    (f64x2_convert_low_i32x4(x), f64x2_convert_low_i32x4(high))
}

/// The truncations of two `f64x2`s as four `i32` lanes (`lo` first), with
/// Rust's saturating `as i32`.
#[inline]
fn trunc_halves(lo: v128, hi: v128) -> v128 {
    i32x4_shuffle::<0, 1, 4, 5>(
        i32x4_trunc_sat_f64x2_zero(lo),
        i32x4_trunc_sat_f64x2_zero(hi),
    )
}

/// `out[x] = round(Σ_k inputs[k][x] · coeffs[k])`, bit-identical to
/// [`scalar::round_weighted_sum`] (the same `f64` operations in the same
/// order, four lanes at a time as two `f64x2`).
pub(crate) fn round_weighted_sum(inputs: &[&[u32]], coeffs: &[f64], out: &mut [u32]) {
    let n = out.len();
    assert!(inputs.iter().all(|x| x.len() >= n) && inputs.len() == coeffs.len());
    let whole = n / 4 * 4;
    let half = f64x2_splat(0.5);
    for b in (0..whole).step_by(4) {
        let (mut lo, mut hi) = (f64x2_splat(0.0), f64x2_splat(0.0));
        for (input, &w) in inputs.iter().zip(coeffs) {
            let (xl, xh) = to_f64_halves(load(&input[b..b + 4]));
            let w = f64x2_splat(w);
            lo = f64x2_add(lo, f64x2_mul(xl, w));
            hi = f64x2_add(hi, f64x2_mul(xh, w));
        }
        store(
            &mut out[b..b + 4],
            trunc_halves(f64x2_add(lo, half), f64x2_add(hi, half)),
        );
    }
    scalar::round_weighted_sum(&scalar::tails(inputs, whole), coeffs, &mut out[whole..]);
}

/// `Σ_k floor(p_k) + round(Σ_k frac(p_k))`, bit-identical to
/// [`scalar::floor_frac_sum`] for totals below `2^32` (its contract), four
/// lanes at a time. The integer parts are summed in `f64` (exactly: they are
/// integers far below `2^53`) and converted once, which keeps the engine's
/// costly float-to-integer conversions out of the loop.
pub(crate) fn floor_frac_sum(inputs: &[&[u32]], thetas: &[f64], out: &mut [u32]) {
    let n = out.len();
    assert!(inputs.iter().all(|x| x.len() >= n) && inputs.len() == thetas.len());
    let whole = n / 4 * 4;
    let half = f64x2_splat(0.5);
    let zero = f64x2_splat(0.0);
    for b in (0..whole).step_by(4) {
        let (mut int_lo, mut int_hi) = (zero, zero);
        let (mut lo, mut hi) = (zero, zero);
        for (input, &theta) in inputs.iter().zip(thetas) {
            let (xl, xh) = to_f64_halves(load(&input[b..b + 4]));
            let theta = f64x2_splat(theta);
            let (pl, ph) = (f64x2_mul(xl, theta), f64x2_mul(xh, theta));
            // p >= 0, so the floor is the scalar code's truncation.
            let (fl, fh) = (f64x2_floor(pl), f64x2_floor(ph));
            int_lo = f64x2_add(int_lo, fl);
            int_hi = f64x2_add(int_hi, fh);
            lo = f64x2_add(lo, f64x2_sub(pl, fl));
            hi = f64x2_add(hi, f64x2_sub(ph, fh));
        }
        let total_lo = f64x2_add(int_lo, f64x2_floor(f64x2_add(lo, half)));
        let total_hi = f64x2_add(int_hi, f64x2_floor(f64x2_add(hi, half)));
        let total = i32x4_shuffle::<0, 1, 4, 5>(
            u32x4_trunc_sat_f64x2_zero(total_lo),
            u32x4_trunc_sat_f64x2_zero(total_hi),
        );
        store(&mut out[b..b + 4], total);
    }
    scalar::floor_frac_sum(&scalar::tails(inputs, whole), thetas, &mut out[whole..]);
}

/// [`scalar::round_to_t_small`], four coefficients at a time as two `f64x2`
/// (the same operations in the same order; `floor` and `nearest` are the
/// scalar code's 2^52 tricks for these non-negative values).
pub(crate) fn round_to_t_small(
    rows: &[&[u32]],
    omega: &[f64],
    theta: &[f64],
    t: u32,
    out: &mut [u32],
) {
    let n = out.len();
    assert!(rows.iter().all(|r| r.len() >= n) && rows.len() == omega.len());
    let whole = n / 4 * 4;
    let tf = f64x2_splat(t as f64);
    let t_inv = f64x2_splat(1.0 / t as f64);
    let (half, zero) = (f64x2_splat(0.5), f64x2_splat(0.0));
    let consts: Vec<(v128, v128)> = omega
        .iter()
        .zip(theta)
        .map(|(&w, &th)| (f64x2_splat(w), f64x2_splat(th)))
        .collect();
    // The residue mod t of an integer-valued total, as the scalar code.
    let reduce = |s: v128, f: v128| {
        let total = f64x2_add(s, f64x2_floor(f64x2_add(f, half)));
        let r = f64x2_sub(total, f64x2_mul(f64x2_nearest(f64x2_mul(total, t_inv)), tf));
        f64x2_add(r, v128_and(f64x2_lt(r, zero), tf))
    };
    for b in (0..whole).step_by(4) {
        let (mut s_lo, mut s_hi, mut f_lo, mut f_hi) = (zero, zero, zero, zero);
        for (row, &(w, th)) in rows.iter().zip(&consts) {
            let (xl, xh) = to_f64_halves(load(&row[b..b + 4]));
            let (pl, ph) = (f64x2_mul(xl, th), f64x2_mul(xh, th));
            let (fl, fh) = (f64x2_floor(pl), f64x2_floor(ph));
            s_lo = f64x2_add(s_lo, f64x2_add(f64x2_mul(xl, w), fl));
            s_hi = f64x2_add(s_hi, f64x2_add(f64x2_mul(xh, w), fh));
            f_lo = f64x2_add(f_lo, f64x2_sub(pl, fl));
            f_hi = f64x2_add(f_hi, f64x2_sub(ph, fh));
        }
        let r = i32x4_shuffle::<0, 1, 4, 5>(
            u32x4_trunc_sat_f64x2_zero(reduce(s_lo, f_lo)),
            u32x4_trunc_sat_f64x2_zero(reduce(s_hi, f_hi)),
        );
        store(&mut out[b..b + 4], r);
    }
    scalar::round_to_t_small(
        &scalar::tails(rows, whole),
        omega,
        theta,
        t,
        &mut out[whole..],
    );
}
