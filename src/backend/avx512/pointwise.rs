//! The avx512 coefficient-wise kernels: products, multiply-accumulate,
//! linear combinations, the f64 sums of base conversion, and the rest.

use core::arch::x86_64::*;

use crate::arith::{Modulus, ShoupConstant};
use crate::backend::scalar;
use crate::backend::{MONT_TERMS, STREAM_PREFETCH, SUM_TERMS};

use super::lanes::*;
use super::*;

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

/// `out = a · b · 2^-32 mod q` as [`mul`] with `MONT` (`b` in
/// Montgomery form: the plain product), with non-temporal stores into the
/// aligned part of `out`: for results that are not read again soon (a
/// gallery's score ciphertexts), which then skip the read for ownership
/// and leave the cache to the inputs.
///
/// # Safety
/// The CPU supports AVX-512F.
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn mul_mont_streaming(m: &Modulus, a: &[u32], b: &[u32], out: &mut [u32]) {
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
        mul::<true>(m, &a[..h], &b[..h], head);
        let k = ProductConsts::new(m);
        for ((o, x), y) in body.iter_mut().zip(av).zip(bv) {
            _mm_prefetch::<_MM_HINT_T0>(x.as_ptr().wrapping_add(STREAM_PREFETCH).cast());
            _mm512_stream_si512(o.0.as_mut_ptr().cast(), k.mul_mont(load(x), load(y)));
        }
        // Orders the streaming stores before whatever the caller does next
        // (another thread may read the result).
        _mm_sfence();
        mul::<true>(m, &a[h + len..], &b[h + len..], tail);
    }
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

/// `out = Σ_k a[k] · b[k] mod q` (with `MONT`, times `2^-32`) for inputs in
/// `[0, q)`, bit-identical to [`scalar::mul_sum`], sixteen coefficients at
/// a time: [`SUM_TERMS`] products summed in 64-bit lanes and reduced once.
///
/// # Safety
/// The CPU supports AVX-512F.
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn mul_sum<const MONT: bool>(
    m: &Modulus,
    a: &[&[u32]],
    b: &[&[u32]],
    out: &mut [u32],
) {
    let n = out.len();
    assert!(a.len() == b.len() && a.iter().chain(b).all(|x| x.len() >= n));
    let whole = n / W * W;
    // SAFETY (whole block): AVX-512F is enabled here. Every input holds at
    // least `n` values (asserted above) and `x + W <= whole <= n`, so each
    // unaligned load and store stays inside its slice.
    unsafe {
        let k = ProductConsts::new(m);
        let mut x = 0;
        while x < whole {
            let mut acc = _mm512_setzero_si512();
            for (ac, bc) in a.chunks(SUM_TERMS).zip(b.chunks(SUM_TERMS)) {
                // 64-bit sums: even lanes in `even`, odd lanes in `odd`.
                let (mut even, mut odd) = (_mm512_setzero_si512(), _mm512_setzero_si512());
                for (u, v) in ac.iter().zip(bc) {
                    let u = _mm512_loadu_si512(u.as_ptr().add(x).cast());
                    let v = _mm512_loadu_si512(v.as_ptr().add(x).cast());
                    even = _mm512_add_epi64(even, _mm512_mul_epu32(u, v));
                    odd = _mm512_add_epi64(
                        odd,
                        _mm512_mul_epu32(_mm512_srli_epi64::<32>(u), _mm512_srli_epi64::<32>(v)),
                    );
                }
                // (s + m·q) / 2^32 with m = s·(−q^-1) mod 2^32, in [0, 2q).
                let te = _mm512_add_epi64(
                    even,
                    _mm512_mul_epu32(_mm512_mul_epu32(even, k.q_neg_inv), k.q),
                );
                let to = _mm512_add_epi64(
                    odd,
                    _mm512_mul_epu32(_mm512_mul_epu32(odd, k.q_neg_inv), k.q),
                );
                let r = csub(merge_high(te, to), k.q);
                acc = csub(_mm512_add_epi32(acc, r), k.q);
            }
            let v = if MONT {
                acc
            } else {
                csub(mul_shoup_lazy(acc, k.r, k.q), k.q)
            };
            _mm512_storeu_si512(out.as_mut_ptr().add(x).cast(), v);
            x += W;
        }
    }
    if whole < n {
        scalar::mul_sum::<MONT>(
            m,
            &scalar::tails(a, whole),
            &scalar::tails(b, whole),
            &mut out[whole..],
        );
    }
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
    // SAFETY (each arm): AVX-512F, as this function's caller guarantees.
    match inputs.len() {
        0..=2 => return unsafe { lincomb_shoup(m, inputs, weights, out) },
        3 => return unsafe { lincomb_terms::<3>(m, inputs, weights, out) },
        4 => return unsafe { lincomb_terms::<4>(m, inputs, weights, out) },
        5 => return unsafe { lincomb_terms::<5>(m, inputs, weights, out) },
        6 => return unsafe { lincomb_terms::<6>(m, inputs, weights, out) },
        _ => {}
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

/// [`lincomb`] for `K <= MONT_TERMS` inputs: one Montgomery reduction per
/// block, the inputs' addresses and the weights held in registers across
/// the blocks.
///
/// # Safety
/// The CPU supports AVX-512F.
#[target_feature(enable = "avx512f")]
unsafe fn lincomb_terms<const K: usize>(
    m: &Modulus,
    inputs: &[&[u32]],
    weights: &[ShoupConstant],
    out: &mut [u32],
) {
    const { assert!(K <= MONT_TERMS) };
    let n = out.len();
    assert!(inputs.len() == K && weights.len() == K && inputs.iter().all(|x| x.len() >= n));
    let from: [*const u32; K] = core::array::from_fn(|k| inputs[k].as_ptr());
    let whole = n / W * W;
    // SAFETY (whole block): AVX-512F is enabled here. Every input holds at
    // least `n` values (asserted above) and `b + W <= whole <= n`, so each
    // unaligned load and store stays inside its slice.
    unsafe {
        let w: [__m512i; K] =
            core::array::from_fn(|k| _mm512_set1_epi32(m.to_montgomery(weights[k].value) as i32));
        let q = _mm512_set1_epi32(m.value() as i32);
        let two_q = _mm512_set1_epi32((2 * m.value()) as i32);
        let q_neg_inv = _mm512_set1_epi32(m.q_neg_inv() as i32);
        let mut b = 0;
        while b < whole {
            let mut seen = _mm512_setzero_si512();
            // 64-bit sums: even lanes in `even`, odd lanes in `odd`.
            let (mut even, mut odd) = (_mm512_setzero_si512(), _mm512_setzero_si512());
            for k in 0..K {
                let v = _mm512_loadu_si512(from[k].add(b).cast());
                seen = _mm512_or_si512(seen, v);
                even = _mm512_add_epi64(even, _mm512_mul_epu32(v, w[k]));
                odd = _mm512_add_epi64(odd, _mm512_mul_epu32(_mm512_srli_epi64::<32>(v), w[k]));
            }
            if _mm512_cmplt_epi32_mask(seen, _mm512_setzero_si512()) == 0 {
                // (s + m·q) / 2^32 with m = s·(−q^-1) mod 2^32, in [0, 4q).
                let te =
                    _mm512_add_epi64(even, _mm512_mul_epu32(_mm512_mul_epu32(even, q_neg_inv), q));
                let to =
                    _mm512_add_epi64(odd, _mm512_mul_epu32(_mm512_mul_epu32(odd, q_neg_inv), q));
                let r = csub(csub(merge_high(te, to), two_q), q);
                _mm512_storeu_si512(out.as_mut_ptr().add(b).cast(), r);
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

/// [`scalar::round_to_t_small`], eight coefficients at a time: the same
/// `f64` operations in the same order (the scalar code's `floor` and
/// nearest-even rounding of these non-negative values are `roundscale`'s),
/// so bit-identical.
///
/// # Safety
/// The CPU supports AVX-512F.
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn round_to_t_small(
    rows: &[&[u32]],
    omega: &[f64],
    theta: &[f64],
    t: u32,
    out: &mut [u32],
) {
    const FLOOR: i32 = _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC;
    const NEAREST: i32 = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    let n = out.len();
    assert!(rows.iter().all(|r| r.len() >= n) && rows.len() == omega.len());
    let whole = n / 8 * 8;
    // SAFETY (whole block): as in `round_weighted_sum`.
    unsafe {
        let tf = _mm512_set1_pd(t as f64);
        let t_inv = _mm512_set1_pd(1.0 / t as f64);
        let (half, zero) = (_mm512_set1_pd(0.5), _mm512_setzero_pd());
        let mut b = 0;
        while b < whole {
            let (mut int, mut frac) = (zero, zero);
            for ((row, &w), &th) in rows.iter().zip(omega).zip(theta) {
                let x = _mm512_cvtepi32_pd(_mm256_loadu_si256(row.as_ptr().add(b).cast()));
                let p = _mm512_mul_pd(x, _mm512_set1_pd(th));
                let fl = _mm512_roundscale_pd::<FLOOR>(p);
                int = _mm512_add_pd(int, _mm512_add_pd(_mm512_mul_pd(x, _mm512_set1_pd(w)), fl));
                frac = _mm512_add_pd(frac, _mm512_sub_pd(p, fl));
            }
            let total = _mm512_add_pd(
                int,
                _mm512_roundscale_pd::<FLOOR>(_mm512_add_pd(frac, half)),
            );
            let k = _mm512_roundscale_pd::<NEAREST>(_mm512_mul_pd(total, t_inv));
            let r = _mm512_sub_pd(total, _mm512_mul_pd(k, tf));
            let negative = _mm512_cmp_pd_mask::<_CMP_LT_OQ>(r, zero);
            let r = _mm512_mask_add_pd(r, negative, r, tf);
            _mm256_storeu_si256(out.as_mut_ptr().add(b).cast(), _mm512_cvttpd_epi32(r));
            b += 8;
        }
    }
    if whole < n {
        let tails = scalar::tails(rows, whole);
        scalar::round_to_t_small(&tails, omega, theta, t, &mut out[whole..]);
    }
}
