//! NEON kernels (aarch64): four 32-bit lanes, signed Montgomery arithmetic.
//!
//! # Why signed Montgomery (`sqdmulh`) rather than unsigned Shoup (`umull`)
//!
//! NEON has no "high half of a 32 × 32 product" for unsigned lanes. A lazy
//! Shoup product `a·w − ⌊a·w'/2^32⌋·q` therefore costs five instructions:
//! `umull` + `umull2` (two 64-bit halves), `uzp2` (gather the high words),
//! `mul`, `mls`. A Harvey forward butterfly around it (`sub`+`umin` to bring
//! `x` below `2q`, `add`, and `add`+`sub` for `x + 2q − v`) comes to **10**
//! instructions per four butterflies.
//!
//! `sqdmulh` *does* return the high half of a signed product (doubled), so a
//! signed Montgomery product of `a` by a constant `w` (stored with its
//! companion `w·q^-1 mod 2^32`) is four instructions:
//!
//! ```text
//! hi = sqdmulh(a, w)        = ⌊2·a·w / 2^32⌋
//! lo = mul(a, w·q^-1)       = a·w·q^-1 mod 2^32
//! t  = sqdmulh(lo, q)       = ⌊2·lo·q / 2^32⌋
//! r  = shsub(hi, t)         = (a·w − lo·q) / 2^32      (exact: the low words agree)
//! ```
//!
//! It takes any `i32` input and, with `|w| ≤ q/2` (centred representatives),
//! returns `|r| < q/4 + q/2 = 3q/4`. Values live in signed lanes and a forward
//! butterfly is `x ← barrett(x)` (`sqrdmulh` + `mls`, gives `|x| < q`), the
//! product, `add`, `sub`: **8** instructions, bounded by `7q/4 < 2^31`. The
//! inverse butterfly is likewise 8 against 10. (Checked in the release
//! assembly: a broadcast-twiddle layer's loop body is exactly these eight plus
//! two loads and two stores; LLVM uses the by-element `v.s[0]` forms.) (A Shoup product built on
//! `sqdmulh` would be three instructions but needs its input below `2^31`,
//! which the unsigned `[0, 4q)` range of a Harvey butterfly breaks for
//! `q` close to `2^30`.)
//!
//! Pointwise products use the same Montgomery step twice (`a·b·R^-1`, then
//! `·R^2·R^-1`), 11 instructions per four products against 16 for the
//! unsigned `umull`/`umlal` Montgomery pair.
//!
//! # Invariants (`q < 2^30`)
//!
//! Every value at the start of an NTT layer satisfies `|x| < 7q/4 < 2^31`;
//! outputs are brought to `[0, q)` at the very end (`barrett`, then
//! [`normalize`]), so they equal the scalar oracle bit for bit.
//!
//! The last two forward layers (gap 2 and gap 1) and the first two inverse
//! layers run fused on eight coefficients held in two registers, with
//! per-lane twiddles prepared in [`Tables`].

use core::arch::aarch64::*;

use crate::arith::Modulus;
use crate::backend::scalar;
use crate::backend::tables::{InvScale, NttTables};

/// One twiddle table in centred Montgomery form, with its `q^-1` companions.
#[derive(Default)]
struct Twiddles {
    /// `w·2^32 mod q`, centred into `(-q/2, q/2]`.
    w: Vec<i32>,
    /// `w[k]·q^-1 mod 2^32`.
    w_qinv: Vec<i32>,
}

impl Twiddles {
    fn new(m: &Modulus, values: impl Iterator<Item = u32>) -> Self {
        let (w, w_qinv) = values.map(|v| mont_constant(m, v)).unzip();
        Self { w, w_qinv }
    }
}

/// Per-plan tables in the layout these kernels read.
#[derive(Default)]
pub(crate) struct Tables {
    /// `psi^brv(k)` for every `k` (same indexing as `NttTables::fwd`).
    fwd: Twiddles,
    /// The gap-2 forward layer's twiddles, each repeated for two lanes:
    /// entries `4j..4j+4` are `fwd[n/4+2j]` twice, then `fwd[n/4+2j+1]` twice.
    fwd_gap2: Twiddles,
    /// `psi^-brv(k)` for every `k`.
    inv: Twiddles,
    /// The gap-2 inverse layer's twiddles, laid out like `fwd_gap2`.
    inv_gap2: Twiddles,
}

impl Tables {
    pub(crate) fn new(t: &NttTables) -> Self {
        let m = &t.modulus;
        let n = t.n;
        let pairs = |tw: &[u32]| {
            let base = &tw[n / 4..n / 2];
            Twiddles::new(m, base.iter().flat_map(|&w| [w, w]))
        };
        Self {
            fwd: Twiddles::new(m, t.fwd.iter().copied()),
            fwd_gap2: pairs(&t.fwd),
            inv: Twiddles::new(m, t.inv.iter().copied()),
            inv_gap2: pairs(&t.inv),
        }
    }
}

/// `(w·2^32 mod q` centred, its product with `q^-1 mod 2^32)` for `w < q`.
fn mont_constant(m: &Modulus, w: u32) -> (i32, i32) {
    let centred = centre(m.mul(w, m.r()), m.value());
    let q_inv = m.q_neg_inv().wrapping_neg();
    (centred, (centred as u32).wrapping_mul(q_inv) as i32)
}

/// The representative of `r < q` in `(-q/2, q/2]`.
fn centre(r: u32, q: u32) -> i32 {
    if r > q / 2 {
        r as i32 - q as i32
    } else {
        r as i32
    }
}

/// Broadcast constants shared by every kernel.
#[derive(Clone, Copy)]
struct Consts {
    q: int32x4_t,
    /// `round(2^31 / q)`, for [`barrett`].
    barrett: int32x4_t,
}

impl Consts {
    #[inline]
    #[target_feature(enable = "neon")]
    fn new(m: &Modulus) -> Self {
        let q = m.value();
        let barrett = (((1u64 << 31) + q as u64 / 2) / q as u64) as i32;
        Self {
            q: vdupq_n_s32(q as i32),
            barrett: vdupq_n_s32(barrett),
        }
    }
}

/// Loads lanes `s[0..4]`.
#[inline]
#[target_feature(enable = "neon")]
fn load(s: &[u32]) -> int32x4_t {
    assert!(s.len() >= 4);
    // SAFETY: `s` has at least four readable `u32`s (16 bytes); `vld1q_s32`
    // needs no alignment beyond that of `i32`, which `u32` has.
    unsafe { vld1q_s32(s.as_ptr().cast()) }
}

/// Loads lanes `s[0..4]` of a signed table.
#[inline]
#[target_feature(enable = "neon")]
fn load_i32(s: &[i32]) -> int32x4_t {
    assert!(s.len() >= 4);
    // SAFETY: as in `load`: at least four readable `i32`s.
    unsafe { vld1q_s32(s.as_ptr()) }
}

/// Stores `v` into `s[0..4]`.
#[inline]
#[target_feature(enable = "neon")]
fn store(s: &mut [u32], v: int32x4_t) {
    assert!(s.len() >= 4);
    // SAFETY: `s` has at least four writable `u32`s, borrowed exclusively.
    unsafe { vst1q_s32(s.as_mut_ptr().cast(), v) }
}

/// Signed Montgomery product `a·w·2^-32 mod q` (see the module docs): exact
/// for any `a`, in `(-3q/4, 3q/4)` when `|w| ≤ q/2`, `(-q, q)` when `|w| < q`.
#[inline]
#[target_feature(enable = "neon")]
fn mont_mul(a: int32x4_t, w: int32x4_t, w_qinv: int32x4_t, q: int32x4_t) -> int32x4_t {
    let hi = vqdmulhq_s32(a, w);
    let lo = vmulq_s32(a, w_qinv);
    let t = vqdmulhq_s32(lo, q);
    vhsubq_s32(hi, t)
}

/// `x − round(x/q)·q` up to an error of one: `|result| < q` for any `x`
/// that is not `i32::MIN`.
///
/// `sqrdmulh(x, round(2^31/q)) = round(x·c/2^31)` is within `|x|/2^32 < 1/2`
/// of `x/q` before rounding, so the quotient is off by less than one.
#[inline]
#[target_feature(enable = "neon")]
fn barrett(x: int32x4_t, c: Consts) -> int32x4_t {
    let quot = vqrdmulhq_s32(x, c.barrett);
    vmlsq_s32(x, quot, c.q)
}

/// Maps `x` in `(-q, q)` to `[0, q)`: as unsigned, a negative `x` is huge and
/// `x + q` small, while a non-negative `x` is below `x + q`.
#[inline]
#[target_feature(enable = "neon")]
fn normalize(x: int32x4_t, q: int32x4_t) -> int32x4_t {
    let x = vreinterpretq_u32_s32(x);
    let y = vaddq_u32(x, vreinterpretq_u32_s32(q));
    vreinterpretq_s32_u32(vminq_u32(x, y))
}

/// `[0, 2q)` to `[0, q)`: `min(x, x − q)` as unsigned.
#[inline]
#[target_feature(enable = "neon")]
fn csub(x: uint32x4_t, q: uint32x4_t) -> uint32x4_t {
    vminq_u32(x, vsubq_u32(x, q))
}

/// Cooley–Tukey butterfly `(x + w·y, x − w·y)`; inputs and outputs below
/// `7q/4` in absolute value.
#[inline]
#[target_feature(enable = "neon")]
fn ct_butterfly(
    x: int32x4_t,
    y: int32x4_t,
    w: int32x4_t,
    w_qinv: int32x4_t,
    c: Consts,
) -> (int32x4_t, int32x4_t) {
    let x = barrett(x, c);
    let v = mont_mul(y, w, w_qinv, c.q);
    (vaddq_s32(x, v), vsubq_s32(x, v))
}

/// Gentleman–Sande butterfly `(x + y, w·(x − y))`; inputs below `q` in
/// absolute value, outputs below `q` and `3q/4`.
#[inline]
#[target_feature(enable = "neon")]
fn gs_butterfly(
    x: int32x4_t,
    y: int32x4_t,
    w: int32x4_t,
    w_qinv: int32x4_t,
    c: Consts,
) -> (int32x4_t, int32x4_t) {
    let s = barrett(vaddq_s32(x, y), c);
    let d = mont_mul(vsubq_s32(x, y), w, w_qinv, c.q);
    (s, d)
}

/// Lanes `[a0, a1, b0, b1]` and `[a2, a3, b2, b3]`.
#[inline]
#[target_feature(enable = "neon")]
fn zip_pairs(a: int32x4_t, b: int32x4_t) -> (int32x4_t, int32x4_t) {
    let (a, b) = (vreinterpretq_s64_s32(a), vreinterpretq_s64_s32(b));
    (
        vreinterpretq_s32_s64(vzip1q_s64(a, b)),
        vreinterpretq_s32_s64(vzip2q_s64(a, b)),
    )
}

/// Forward negacyclic NTT, same output as `scalar::forward`.
#[target_feature(enable = "neon")]
pub(crate) unsafe fn forward(t: &NttTables, a: &mut [u32]) {
    let tw = &t.simd.neon;
    let c = Consts::new(&t.modulus);
    let n = t.n;
    debug_assert!(n >= 16 && a.len() == n);
    // Layers with gap >= 4: one broadcast twiddle per group.
    let mut groups = 1;
    let mut gap = n / 2;
    while gap >= 4 {
        for (i, block) in a.chunks_exact_mut(2 * gap).enumerate() {
            let w = vdupq_n_s32(tw.fwd.w[groups + i]);
            let w_qinv = vdupq_n_s32(tw.fwd.w_qinv[groups + i]);
            let (lo, hi) = block.split_at_mut(gap);
            for (x, y) in lo.chunks_exact_mut(4).zip(hi.chunks_exact_mut(4)) {
                let (u, v) = ct_butterfly(load(x), load(y), w, w_qinv, c);
                store(x, u);
                store(y, v);
            }
        }
        groups <<= 1;
        gap >>= 1;
    }
    // Gap 2 then gap 1 on eight coefficients, then reduce to [0, q).
    let w2 = tw.fwd_gap2.w.chunks_exact(4);
    let w2_qinv = tw.fwd_gap2.w_qinv.chunks_exact(4);
    let w1 = tw.fwd.w[n / 2..].chunks_exact(4);
    let w1_qinv = tw.fwd.w_qinv[n / 2..].chunks_exact(4);
    let twiddles = w2.zip(w2_qinv).zip(w1.zip(w1_qinv));
    for (block, ((w2, w2q), (w1, w1q))) in a.chunks_exact_mut(8).zip(twiddles) {
        let (a0, a1) = (load(&block[..4]), load(&block[4..]));
        // Gap 2: x = [c0 c1 c4 c5], y = [c2 c3 c6 c7].
        let (x, y) = zip_pairs(a0, a1);
        let (x, y) = ct_butterfly(x, y, load_i32(w2), load_i32(w2q), c);
        // Gap 1: x = [c0 c2 c4 c6], y = [c1 c3 c5 c7].
        let (x, y) = (vtrn1q_s32(x, y), vtrn2q_s32(x, y));
        let (x, y) = ct_butterfly(x, y, load_i32(w1), load_i32(w1q), c);
        let x = normalize(barrett(x, c), c.q);
        let y = normalize(barrett(y, c), c.q);
        store(&mut block[..4], vzip1q_s32(x, y));
        store(&mut block[4..], vzip2q_s32(x, y));
    }
}

/// Inverse negacyclic NTT, same output as `scalar::inverse`.
#[target_feature(enable = "neon")]
pub(crate) unsafe fn inverse(t: &NttTables, a: &mut [u32], s: &InvScale) {
    let tw = &t.simd.neon;
    let c = Consts::new(&t.modulus);
    let n = t.n;
    debug_assert!(n >= 16 && a.len() == n);
    // Gap 1 then gap 2 on eight coefficients.
    let w1 = tw.inv.w[n / 2..].chunks_exact(4);
    let w1_qinv = tw.inv.w_qinv[n / 2..].chunks_exact(4);
    let w2 = tw.inv_gap2.w.chunks_exact(4);
    let w2_qinv = tw.inv_gap2.w_qinv.chunks_exact(4);
    let twiddles = w1.zip(w1_qinv).zip(w2.zip(w2_qinv));
    for (block, ((w1, w1q), (w2, w2q))) in a.chunks_exact_mut(8).zip(twiddles) {
        let (a0, a1) = (load(&block[..4]), load(&block[4..]));
        // Gap 1: x = [c0 c2 c4 c6], y = [c1 c3 c5 c7].
        let (x, y) = (vuzp1q_s32(a0, a1), vuzp2q_s32(a0, a1));
        let (x, y) = gs_butterfly(x, y, load_i32(w1), load_i32(w1q), c);
        // Gap 2: x = [c0 c1 c4 c5], y = [c2 c3 c6 c7].
        let (x, y) = (vtrn1q_s32(x, y), vtrn2q_s32(x, y));
        let (x, y) = gs_butterfly(x, y, load_i32(w2), load_i32(w2q), c);
        let (a0, a1) = zip_pairs(x, y);
        store(&mut block[..4], a0);
        store(&mut block[4..], a1);
    }
    // Layers with gap 4 ..= n/4: one broadcast twiddle per group.
    let mut groups = n / 8;
    let mut gap = 4;
    while groups > 1 {
        for (i, block) in a.chunks_exact_mut(2 * gap).enumerate() {
            let w = vdupq_n_s32(tw.inv.w[groups + i]);
            let w_qinv = vdupq_n_s32(tw.inv.w_qinv[groups + i]);
            let (lo, hi) = block.split_at_mut(gap);
            for (x, y) in lo.chunks_exact_mut(4).zip(hi.chunks_exact_mut(4)) {
                let (u, v) = gs_butterfly(load(x), load(y), w, w_qinv, c);
                store(x, u);
                store(y, v);
            }
        }
        groups >>= 1;
        gap <<= 1;
    }
    // Last layer with the n^-1 scaling folded into both outputs.
    let (ni, ni_qinv) = mont_constant(&t.modulus, s.n_inv.value);
    let (niw, niw_qinv) = mont_constant(&t.modulus, s.n_inv_w.value);
    let (ni, ni_qinv) = (vdupq_n_s32(ni), vdupq_n_s32(ni_qinv));
    let (niw, niw_qinv) = (vdupq_n_s32(niw), vdupq_n_s32(niw_qinv));
    let (lo, hi) = a.split_at_mut(n / 2);
    for (x, y) in lo.chunks_exact_mut(4).zip(hi.chunks_exact_mut(4)) {
        let (u, v) = (load(x), load(y));
        let s = mont_mul(vaddq_s32(u, v), ni, ni_qinv, c.q);
        let d = mont_mul(vsubq_s32(u, v), niw, niw_qinv, c.q);
        store(x, normalize(s, c.q));
        store(y, normalize(d, c.q));
    }
}

/// Broadcast constants for [`mul_lanes`].
#[derive(Clone, Copy)]
struct MulConsts {
    q: int32x4_t,
    /// `q^-1 mod 2^32`.
    q_inv: int32x4_t,
    /// `2^64 mod q`, centred, and its product with `q^-1`.
    r2: int32x4_t,
    r2_qinv: int32x4_t,
}

impl MulConsts {
    #[inline]
    #[target_feature(enable = "neon")]
    fn new(m: &Modulus) -> Self {
        let q = m.value();
        let q_inv = m.q_neg_inv().wrapping_neg();
        let r2 = centre(m.r2(), q);
        Self {
            q: vdupq_n_s32(q as i32),
            q_inv: vdupq_n_s32(q_inv as i32),
            r2: vdupq_n_s32(r2),
            r2_qinv: vdupq_n_s32((r2 as u32).wrapping_mul(q_inv) as i32),
        }
    }
}

/// `a·b mod q` in `[0, q)` for four lanes of `a, b < q`.
#[inline]
#[target_feature(enable = "neon")]
fn mul_lanes<const MONT: bool>(a: int32x4_t, b: int32x4_t, k: MulConsts) -> int32x4_t {
    // a·b·2^-32 with |.| < q·q/2^32 + q/2 < 3q/4 (the Montgomery product) ...
    let ab = mont_mul(a, b, vmulq_s32(b, k.q_inv), k.q);
    if MONT {
        return normalize(ab, k.q);
    }
    // ... times 2^64·2^-32 is a·b, again below 3q/4.
    normalize(mont_mul(ab, k.r2, k.r2_qinv, k.q), k.q)
}

/// `out = a·b mod q` (with `MONT`, the Montgomery product `a·b·2^-32`), same
/// output as `scalar::mul`.
#[target_feature(enable = "neon")]
pub(crate) unsafe fn mul<const MONT: bool>(m: &Modulus, a: &[u32], b: &[u32], out: &mut [u32]) {
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
#[target_feature(enable = "neon")]
pub(crate) unsafe fn mul_acc<const MONT: bool, const SUB: bool>(
    m: &Modulus,
    a: &[u32],
    b: &[u32],
    acc: &mut [u32],
) {
    debug_assert!(a.len() == b.len() && a.len() == acc.len());
    let k = MulConsts::new(m);
    let q = vreinterpretq_u32_s32(k.q);
    let body = a.len() / 4 * 4;
    let lanes = a.chunks_exact(4).zip(b.chunks_exact(4));
    for (c, (x, y)) in acc.chunks_exact_mut(4).zip(lanes) {
        let p = vreinterpretq_u32_s32(mul_lanes::<MONT>(load(x), load(y), k));
        let c0 = vreinterpretq_u32_s32(load(c));
        // The product is in [0, q): acc - p + q is in (0, 2q).
        let sum = if SUB {
            vsubq_u32(vaddq_u32(c0, q), p)
        } else {
            vaddq_u32(c0, p)
        };
        store(c, vreinterpretq_s32_u32(csub(sum, q)));
    }
    scalar::mul_acc::<MONT, SUB>(m, &a[body..], &b[body..], &mut acc[body..]);
}
