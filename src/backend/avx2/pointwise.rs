//! The avx2 coefficient-wise kernels: products, multiply-accumulate,
//! linear combinations, the f64 sums of base conversion, and the rest.

use core::arch::x86_64::*;

use crate::arith::{Modulus, ShoupConstant};
use crate::backend::scalar;
use crate::backend::{MONT_TERMS, STREAM_PREFETCH, SUM_TERMS};

use super::lanes::*;

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

/// `out = a · b · 2^-32 mod q` as [`mul`] with `MONT` (`b` in
/// Montgomery form: the plain product), with non-temporal stores into the
/// aligned part of `out`: for results that are not read again soon (a
/// gallery's score ciphertexts), which then skip the read for ownership
/// and leave the cache to the inputs.
///
/// # Safety
/// The CPU supports AVX2.
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn mul_mont_streaming(m: &Modulus, a: &[u32], b: &[u32], out: &mut [u32]) {
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
        mul::<true>(m, &a[..h], &b[..h], head);
        let k = ProductConsts::new(m);
        for ((o, x), y) in body.iter_mut().zip(av).zip(bv) {
            _mm_prefetch::<_MM_HINT_T0>(x.as_ptr().wrapping_add(STREAM_PREFETCH).cast());
            _mm256_stream_si256(o.0.as_mut_ptr().cast(), k.mul_mont(load(x), load(y)));
        }
        // Orders the streaming stores before whatever the caller does next
        // (another thread may read the result).
        _mm_sfence();
        mul::<true>(m, &a[h + len..], &b[h + len..], tail);
    }
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

/// `out = Σ_k a[k] · b[k] mod q` (with `MONT`, times `2^-32`) for inputs in
/// `[0, q)`, bit-identical to [`scalar::mul_sum`], eight coefficients at
/// a time: [`SUM_TERMS`] products summed in 64-bit lanes and reduced once.
///
/// # Safety
/// The CPU supports AVX2.
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn mul_sum<const MONT: bool>(
    m: &Modulus,
    a: &[&[u32]],
    b: &[&[u32]],
    out: &mut [u32],
) {
    let n = out.len();
    assert!(a.len() == b.len() && a.iter().chain(b).all(|x| x.len() >= n));
    let whole = n / 8 * 8;
    // SAFETY (whole block): AVX2 is enabled here. Every input holds at
    // least `n` values (asserted above) and `x + 8 <= whole <= n`, so each
    // unaligned load and store stays inside its slice.
    unsafe {
        let k = ProductConsts::new(m);
        let mut x = 0;
        while x < whole {
            let mut acc = _mm256_setzero_si256();
            for (ac, bc) in a.chunks(SUM_TERMS).zip(b.chunks(SUM_TERMS)) {
                // 64-bit sums: even lanes in `even`, odd lanes in `odd`.
                let (mut even, mut odd) = (_mm256_setzero_si256(), _mm256_setzero_si256());
                for (u, v) in ac.iter().zip(bc) {
                    let u = _mm256_loadu_si256(u.as_ptr().add(x).cast());
                    let v = _mm256_loadu_si256(v.as_ptr().add(x).cast());
                    even = _mm256_add_epi64(even, _mm256_mul_epu32(u, v));
                    odd = _mm256_add_epi64(
                        odd,
                        _mm256_mul_epu32(_mm256_srli_epi64::<32>(u), _mm256_srli_epi64::<32>(v)),
                    );
                }
                // (s + m·q) / 2^32 with m = s·(−q^-1) mod 2^32, in [0, 2q).
                let te = _mm256_add_epi64(
                    even,
                    _mm256_mul_epu32(_mm256_mul_epu32(even, k.q_neg_inv), k.q),
                );
                let to = _mm256_add_epi64(
                    odd,
                    _mm256_mul_epu32(_mm256_mul_epu32(odd, k.q_neg_inv), k.q),
                );
                let r = csub(
                    _mm256_blend_epi32::<0b1010_1010>(_mm256_srli_epi64::<32>(te), to),
                    k.q,
                );
                acc = csub(_mm256_add_epi32(acc, r), k.q);
            }
            let v = if MONT {
                acc
            } else {
                csub(mul_shoup_lazy(acc, k.r, k.q), k.q)
            };
            _mm256_storeu_si256(out.as_mut_ptr().add(x).cast(), v);
            x += 8;
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
/// residue, as [`scalar::lincomb`] gives it), eight coefficients at a time.
///
/// With two or more terms, the products are summed in 64-bit lanes and
/// reduced once per [`MONT_TERMS`] terms (see [`crate::backend::MONT_TERMS`]
/// for the bounds, which need inputs below `2^31`); one term is a Shoup
/// product (measured faster; with two terms, 1.35 against 1.12 µs at
/// n = 4096). A block of eight in which some input has its top bit set is
/// done again with a Shoup product per term, so any `u32` input gives the
/// exact result.
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
    // SAFETY (each arm): AVX2, as this function's caller guarantees.
    match inputs.len() {
        0..=1 => return unsafe { lincomb_shoup(m, inputs, weights, out) },
        2 => return unsafe { lincomb_terms::<2>(m, inputs, weights, out) },
        3 => return unsafe { lincomb_terms::<3>(m, inputs, weights, out) },
        4 => return unsafe { lincomb_terms::<4>(m, inputs, weights, out) },
        5 => return unsafe { lincomb_terms::<5>(m, inputs, weights, out) },
        6 => return unsafe { lincomb_terms::<6>(m, inputs, weights, out) },
        _ => {}
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

/// [`lincomb`] for `K <= MONT_TERMS` inputs: one Montgomery reduction per
/// block, the inputs' addresses and the weights held in registers across
/// the blocks.
///
/// # Safety
/// The CPU supports AVX2.
#[target_feature(enable = "avx2")]
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
    let whole = n / 8 * 8;
    // SAFETY (whole block): AVX2 is enabled here. Every input holds at least
    // `n` values (asserted above) and `b + 8 <= whole <= n`, so each unaligned
    // load and store stays inside its slice.
    unsafe {
        let w: [__m256i; K] =
            core::array::from_fn(|k| _mm256_set1_epi32(m.to_montgomery(weights[k].value) as i32));
        let q = _mm256_set1_epi32(m.value() as i32);
        let two_q = _mm256_set1_epi32((2 * m.value()) as i32);
        let q_neg_inv = _mm256_set1_epi32(m.q_neg_inv() as i32);
        let mut b = 0;
        while b < whole {
            let mut seen = _mm256_setzero_si256();
            // 64-bit sums: even lanes in `even`, odd lanes in `odd`.
            let (mut even, mut odd) = (_mm256_setzero_si256(), _mm256_setzero_si256());
            for k in 0..K {
                let v = _mm256_loadu_si256(from[k].add(b).cast());
                seen = _mm256_or_si256(seen, v);
                even = _mm256_add_epi64(even, _mm256_mul_epu32(v, w[k]));
                odd = _mm256_add_epi64(odd, _mm256_mul_epu32(_mm256_srli_epi64::<32>(v), w[k]));
            }
            if _mm256_movemask_ps(_mm256_castsi256_ps(seen)) == 0 {
                // (s + m·q) / 2^32 with m = s·(−q^-1) mod 2^32, in [0, 4q).
                let te =
                    _mm256_add_epi64(even, _mm256_mul_epu32(_mm256_mul_epu32(even, q_neg_inv), q));
                let to =
                    _mm256_add_epi64(odd, _mm256_mul_epu32(_mm256_mul_epu32(odd, q_neg_inv), q));
                let r = _mm256_blend_epi32::<0b1010_1010>(_mm256_srli_epi64::<32>(te), to);
                _mm256_storeu_si256(out.as_mut_ptr().add(b).cast(), csub(csub(r, two_q), q));
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

/// Lane indices (one byte each) that move the lanes set in an 8-bit mask to
/// the front, in order (the lanes after them are don't-care).
const PACK: [[u8; 8]; 256] = {
    let mut t = [[0u8; 8]; 256];
    let mut m = 0;
    while m < 256 {
        let (mut lane, mut at) = (0, 0);
        while lane < 8 {
            if m & (1 << lane) != 0 {
                t[m][at] = lane as u8;
                at += 1;
            }
            lane += 1;
        }
        m += 1;
    }
    t
};

/// [`scalar::take_below`], eight words a vector: the ones below `q` packed
/// to the front by a lane permutation and the whole vector stored at
/// `out[i]`, `i` moved on by their count. No branch on the words, and the
/// same kept words as the scalar kernel (lanes stored past the kept ones
/// are overwritten next, as a rejected word is there).
///
/// # Safety
/// The CPU supports AVX2 and POPCNT.
#[target_feature(enable = "avx2,popcnt")]
pub(crate) unsafe fn take_below(
    words: &[u32],
    shift: u32,
    q: u32,
    out: &mut [u32],
) -> (usize, usize) {
    // Signed comparisons: `q` and the shifted words are below 2^31.
    if shift == 0 || q >= 1 << 31 {
        return scalar::take_below(words, shift, q, out);
    }
    let qv = _mm256_set1_epi32(q as i32);
    let sh = _mm_cvtsi32_si128(shift as i32);
    let (mut used, mut i) = (0, 0);
    while used + 8 <= words.len() && i + 8 <= out.len() {
        // SAFETY: `words[used..used + 8]` and `out[i..i + 8]` are in bounds
        // (the loop's condition); a table row is 8 readable bytes; unaligned
        // loads and stores.
        unsafe {
            let x = _mm256_loadu_si256(words.as_ptr().add(used).cast());
            let x = _mm256_srl_epi32(x, sh);
            let below = _mm256_cmpgt_epi32(qv, x);
            let keep = _mm256_movemask_ps(_mm256_castsi256_ps(below)) as usize;
            let lanes = _mm256_cvtepu8_epi32(_mm_loadl_epi64(PACK[keep].as_ptr().cast()));
            _mm256_storeu_si256(
                out.as_mut_ptr().add(i).cast(),
                _mm256_permutevar8x32_epi32(x, lanes),
            );
            i += keep.count_ones() as usize;
        }
        used += 8;
    }
    let (u, w) = scalar::take_below(&words[used..], shift, q, &mut out[i..]);
    (used + u, i + w)
}

/// [`scalar::round_to_t_small`], four coefficients at a time: the same
/// `f64` operations in the same order (the scalar code's `floor` and
/// nearest-even rounding of these non-negative values are `round_pd`'s),
/// so bit-identical.
///
/// # Safety
/// The CPU supports AVX2.
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn round_to_t_small(
    rows: &[&[u32]],
    omega: &[f64],
    theta: &[f64],
    t: u32,
    out: &mut [u32],
) {
    const NEAREST: i32 = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    let n = out.len();
    assert!(rows.iter().all(|r| r.len() >= n) && rows.len() == omega.len());
    let whole = n / 4 * 4;
    // SAFETY (whole block): AVX2 is enabled here; loads and stores of four
    // `u32` at `b + 4 <= whole <= n` stay inside slices of at least `n`.
    unsafe {
        let tf = _mm256_set1_pd(t as f64);
        let t_inv = _mm256_set1_pd(1.0 / t as f64);
        let (half, zero) = (_mm256_set1_pd(0.5), _mm256_setzero_pd());
        let mut b = 0;
        while b < whole {
            let (mut int, mut frac) = (zero, zero);
            for ((row, &w), &th) in rows.iter().zip(omega).zip(theta) {
                let x = _mm256_cvtepi32_pd(_mm_loadu_si128(row.as_ptr().add(b).cast()));
                let p = _mm256_mul_pd(x, _mm256_set1_pd(th));
                let fl = _mm256_floor_pd(p);
                int = _mm256_add_pd(int, _mm256_add_pd(_mm256_mul_pd(x, _mm256_set1_pd(w)), fl));
                frac = _mm256_add_pd(frac, _mm256_sub_pd(p, fl));
            }
            let total = _mm256_add_pd(int, _mm256_floor_pd(_mm256_add_pd(frac, half)));
            let k = _mm256_round_pd::<NEAREST>(_mm256_mul_pd(total, t_inv));
            let r = _mm256_sub_pd(total, _mm256_mul_pd(k, tf));
            let negative = _mm256_cmp_pd::<_CMP_LT_OQ>(r, zero);
            let r = _mm256_add_pd(r, _mm256_and_pd(negative, tf));
            _mm_storeu_si128(out.as_mut_ptr().add(b).cast(), _mm256_cvttpd_epi32(r));
            b += 4;
        }
    }
    if whole < n {
        let tails = scalar::tails(rows, whole);
        scalar::round_to_t_small(&tails, omega, theta, t, &mut out[whole..]);
    }
}
