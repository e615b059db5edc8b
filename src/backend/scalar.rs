//! Portable kernels: compiled on every target, the oracle for the SIMD ones.

use crate::arith::csub;
use crate::arith::{Modulus, ShoupConstant};
use crate::backend::tables::{InvScale, NttTables};

/// Forward negacyclic NTT (Cooley–Tukey, Harvey lazy butterflies in `[0, 4q)`).
pub(crate) fn forward(t: &NttTables, a: &mut [u32]) {
    let m = &t.modulus;
    let two_q = 2 * m.value();
    let n = t.n;
    let mut gap = n;
    let mut groups = 1;
    while groups < n {
        gap >>= 1;
        for i in 0..groups {
            let w = ShoupConstant {
                value: t.fwd[groups + i],
                shoup: t.fwd_shoup[groups + i],
            };
            let (lo, hi) = a[2 * i * gap..2 * (i + 1) * gap].split_at_mut(gap);
            for (x, y) in lo.iter_mut().zip(hi.iter_mut()) {
                let u = csub(*x, two_q);
                let v = m.mul_shoup_lazy(*y, w);
                *x = u + v;
                *y = u + two_q - v;
            }
        }
        groups <<= 1;
    }
    for x in a.iter_mut() {
        *x = m.reduce_4q(*x);
    }
}

/// Inverse negacyclic NTT (Gentleman–Sande, lazy in `[0, 2q)`, scaling by
/// `n^-1` folded into the last stage).
pub(crate) fn inverse(t: &NttTables, a: &mut [u32], s: &InvScale) {
    let m = &t.modulus;
    let two_q = 2 * m.value();
    let n = t.n;
    let mut gap = 1;
    let mut groups = n >> 1;
    while groups > 1 {
        for i in 0..groups {
            let w = ShoupConstant {
                value: t.inv[groups + i],
                shoup: t.inv_shoup[groups + i],
            };
            let (lo, hi) = a[2 * i * gap..2 * (i + 1) * gap].split_at_mut(gap);
            for (x, y) in lo.iter_mut().zip(hi.iter_mut()) {
                let (u, v) = (*x, *y);
                *x = csub(u + v, two_q);
                *y = m.mul_shoup_lazy(u + two_q - v, w);
            }
        }
        gap <<= 1;
        groups >>= 1;
    }
    let (lo, hi) = a.split_at_mut(n / 2);
    for (x, y) in lo.iter_mut().zip(hi.iter_mut()) {
        let (u, v) = (*x, *y);
        *x = m.mul_shoup(u + v, s.n_inv);
        *y = m.mul_shoup(u + two_q - v, s.n_inv_w);
    }
}

/// `a · b mod q`, or with `MONT` the Montgomery product `a · b · 2^-32 mod
/// q` (which is `a · b'` when `b = b'·2^32 mod q` is held in Montgomery
/// form); in `[0, q)` either way.
#[inline(always)]
pub(crate) fn product<const MONT: bool>(m: &Modulus, a: u32, b: u32) -> u32 {
    if MONT {
        m.mont_mul(a, b)
    } else {
        m.mul(a, b)
    }
}

/// `out = a · b mod q` (with `MONT`, see [`product`]).
pub(crate) fn mul<const MONT: bool>(m: &Modulus, a: &[u32], b: &[u32], out: &mut [u32]) {
    for ((o, &x), &y) in out.iter_mut().zip(a).zip(b) {
        *o = product::<MONT>(m, x, y);
    }
}

/// `acc = acc + a · b mod q` (with `SUB`, `acc - a · b`; with `MONT`, see
/// [`product`]).
pub(crate) fn mul_acc<const MONT: bool, const SUB: bool>(
    m: &Modulus,
    a: &[u32],
    b: &[u32],
    acc: &mut [u32],
) {
    for ((c, &x), &y) in acc.iter_mut().zip(a).zip(b) {
        let p = product::<MONT>(m, x, y);
        *c = if SUB { m.sub(*c, p) } else { m.add(*c, p) };
    }
}

/// `out = Σ_k a[k] · b[k] mod q` (with `MONT`, see [`product`]), for
/// inputs in `[0, q)`: the products summed one at a time (the AVX
/// kernels' tails).
#[cfg_attr(not(bm_avx), allow(dead_code))]
pub(crate) fn mul_sum<const MONT: bool>(m: &Modulus, a: &[&[u32]], b: &[&[u32]], out: &mut [u32]) {
    out.fill(0);
    for (x, y) in a.iter().zip(b) {
        mul_acc::<MONT, false>(m, &x[..out.len()], &y[..out.len()], out);
    }
}

/// The inputs' tails from `from` on: what a vector kernel leaves to the
/// scalar one after its last whole register.
#[cfg_attr(not(any(bm_avx, bm_simd128)), allow(dead_code))]
pub(crate) fn tails<'a>(inputs: &[&'a [u32]], from: usize) -> Vec<&'a [u32]> {
    inputs.iter().map(|x| &x[from..]).collect()
}

/// `out[x] = Σ_k inputs[k][x] · weights[k] mod q` for any `u32` inputs.
/// Each term is a lazy Shoup product in `[0, 2q)`; the running sum stays in
/// `[0, 2q)` (`2q + 2q < 2^32` for `q < 2^30`) and is reduced once at the end.
pub(crate) fn lincomb(m: &Modulus, inputs: &[&[u32]], weights: &[ShoupConstant], out: &mut [u32]) {
    let q = m.value();
    out.fill(0);
    for (input, &w) in inputs.iter().zip(weights) {
        for (o, &x) in out.iter_mut().zip(input.iter()) {
            *o = csub(*o + m.mul_shoup_lazy(x, w), 2 * q);
        }
    }
    for o in out.iter_mut() {
        *o = csub(*o, q);
    }
}

/// Coefficients per pass of the `f64` kernels: their partial sums live in a
/// stack buffer of this many lanes.
const F64_CHUNK: usize = 64;

/// Whether a vector `dot2` kernel may sum all its products in one 64-bit
/// accumulator per lane: each of the `vectors` iterations adds four
/// products below `(q−1)²` to a lane, so `4·vectors·(q−1)² < 2^64` (for the
/// auth4096 primes, below 2^29, blocks of up to 128 words on AVX2 and 256
/// on AVX-512). Longer sums keep their low and high halves apart.
#[cfg(bm_avx)]
#[inline(always)]
pub(crate) fn fits_one_sum(m: &Modulus, vectors: usize) -> bool {
    let q1 = m.value() as u128 - 1;
    4 * vectors as u128 * q1 * q1 <= u64::MAX as u128
}

/// How the vector `dot2_blocks` kernels gather a group of blocks' sums in
/// one transpose, for `len` words in `blocks` blocks, `width` residues per
/// register and `lanes` 64-bit lanes (blocks per group): each lane's sum `s`
/// (one accumulator, see [`fits_one_sum`]) folds to
/// `(s mod 2^32) + ⌊s/2^32⌋·c` with `c = 2^32 mod q`, the same residue, and
/// `lanes` folded sums are added in 64 bits. Returns `c` where the blocks
/// are whole registers, come in whole groups and no sum can overflow;
/// `None` otherwise (the kernel then sums block by block).
#[cfg(bm_avx)]
pub(crate) fn fold_constant(
    m: &Modulus,
    len: usize,
    blocks: usize,
    width: usize,
    lanes: usize,
) -> Option<u32> {
    if blocks == 0 {
        return None;
    }
    let block = len / blocks;
    if !block.is_multiple_of(width) || !blocks.is_multiple_of(lanes) {
        return None;
    }
    let vectors = block / width;
    if !fits_one_sum(m, vectors) {
        return None;
    }
    let q1 = m.value() as u128 - 1;
    let most = 4 * vectors as u128 * q1 * q1;
    let c = m.reduce_u64(1 << 32);
    let folded = (most >> 32) * c as u128 + u32::MAX as u128;
    (lanes as u128 * folded <= u64::MAX as u128).then_some(c)
}

/// `lo + hi·2^32 mod q`: the vector `dot2` kernels' low and high halves,
/// summed apart, put back together.
#[cfg(bm_avx)]
pub(crate) fn join_halves(m: &Modulus, lo: u64, hi: u64) -> u32 {
    m.add(
        m.reduce_u64(lo),
        m.mul(m.reduce_u64(hi), m.reduce_u64(1 << 32)),
    )
}

/// `sums[i] = dot(block i of a, x, b, y)`, for blocks of
/// `a.len() / sums.len()` words: the per-block loop of every
/// `dot2_blocks`.
pub(crate) fn each_block(
    a: &[u32],
    x: &[u32],
    b: &[u32],
    y: &[u32],
    sums: &mut [u32],
    mut dot: impl FnMut(&[u32], &[u32], &[u32], &[u32]) -> u32,
) {
    let len = a.len() / sums.len().max(1);
    for (i, s) in sums.iter_mut().enumerate() {
        let r = i * len..(i + 1) * len;
        *s = dot(&a[r.clone()], &x[r.clone()], &b[r.clone()], &y[r]);
    }
}

/// `Σ_k a_k·x_k + b_k·y_k mod q` for residues below `q`: the products are
/// summed in 64 bits and reduced before a sum could overflow.
pub(crate) fn dot2(m: &Modulus, a: &[u32], x: &[u32], b: &[u32], y: &[u32]) -> u32 {
    let q1 = m.value() as u64 - 1;
    // Pairs of products per 64-bit sum: 2·pairs·(q−1)² ≤ 2^64 − 1.
    let pairs = (u64::MAX / (q1 * q1).max(1) / 2).max(1) as usize;
    if u64::MAX / (q1 * q1).max(1) < 2 {
        // Primes above 2^31.5: one product at a time.
        return a
            .iter()
            .zip(x)
            .zip(b.iter().zip(y))
            .fold(0, |acc, ((&a, &x), (&b, &y))| {
                let acc = m.add(acc, m.reduce_u64(a as u64 * x as u64));
                m.add(acc, m.reduce_u64(b as u64 * y as u64))
            });
    }
    let mut total = 0;
    for (((a, x), b), y) in a
        .chunks(pairs)
        .zip(x.chunks(pairs))
        .zip(b.chunks(pairs))
        .zip(y.chunks(pairs))
    {
        let acc: u64 = a
            .iter()
            .zip(x)
            .zip(b.iter().zip(y))
            .map(|((&a, &x), (&b, &y))| a as u64 * x as u64 + b as u64 * y as u64)
            .sum();
        total = m.add(total, m.reduce_u64(acc));
    }
    total
}

/// `out[x] = round(Σ_k inputs[k][x] · coeffs[k])`, summed in `f64` in the
/// order of `k`, for inputs below `2^31` and sums in `[0, 2^31 - 1)`.
pub(crate) fn round_weighted_sum(inputs: &[&[u32]], coeffs: &[f64], out: &mut [u32]) {
    for (c, out) in out.chunks_mut(F64_CHUNK).enumerate() {
        let base = c * F64_CHUNK;
        let mut v = [0f64; F64_CHUNK];
        for (input, &w) in inputs.iter().zip(coeffs) {
            for (s, &x) in v.iter_mut().zip(&input[base..base + out.len()]) {
                *s += x as i32 as f64 * w;
            }
        }
        for (o, &s) in out.iter_mut().zip(&v) {
            // s >= 0: adding 0.5 and truncating rounds.
            *o = (s + 0.5) as i32 as u32;
        }
    }
}

/// `out[x] = Σ_k floor(p_k) + round(Σ_k frac(p_k))` with
/// `p_k = inputs[k][x] · thetas[k]`, for inputs below `2^31`, thetas in
/// `[0, 1)` and a total below `2^32` (the integer sum wraps otherwise).
/// Splitting each product keeps the fractions exact enough to round their
/// sum correctly.
pub(crate) fn floor_frac_sum(inputs: &[&[u32]], thetas: &[f64], out: &mut [u32]) {
    for (c, out) in out.chunks_mut(F64_CHUNK).enumerate() {
        let base = c * F64_CHUNK;
        let mut frac = [0f64; F64_CHUNK];
        out.fill(0);
        for (input, &theta) in inputs.iter().zip(thetas) {
            let input = &input[base..base + out.len()];
            for ((o, f), &x) in out.iter_mut().zip(frac.iter_mut()).zip(input) {
                let p = x as i32 as f64 * theta;
                let fl = p as i32;
                *o = o.wrapping_add(fl as u32);
                *f += p - fl as f64;
            }
        }
        for (o, &f) in out.iter_mut().zip(&frac) {
            *o = o.wrapping_add((f + 0.5) as i32 as u32);
        }
    }
}

/// Centred binomial parameter: the error is `popcount(k bits) - popcount(k
/// bits)` with variance `k/2`. `k = 21` gives sigma = 3.24, the standard's 3.2.
pub const CBD_K: u32 = 21;

/// The three errors of the 128 bits `hi:lo`.
#[inline(always)]
pub(crate) fn cbd_triple(lo: u64, hi: u64) -> [i8; 3] {
    const K: u32 = CBD_K;
    // popcount(a) - popcount(b) = popcount(a) + popcount(!b) - K for K-bit a
    // and b: one popcount of the 2K-bit field with its b half inverted.
    const FIELD: u64 = (1 << (2 * K)) - 1;
    const FLIP_B: u64 = ((1 << K) - 1) << K;
    let fields = [
        lo,
        (lo >> (2 * K)) | (hi << (64 - 2 * K)),
        hi >> (4 * K - 64),
    ];
    fields.map(|f| (((f & FIELD) ^ FLIP_B).count_ones() as i32 - K as i32) as i8)
}

/// Centred binomial errors from random 32-bit words: each group of four
/// (the first one lowest) gives three values, as [`cbd_triple`]; `out`
/// takes `out.len()` of them, from `words.len() >= 4·ceil(out.len()/3)`
/// words. Always inlined, so that `avx2::cbd` compiles it with POPCNT.
#[inline(always)]
pub(crate) fn cbd(words: &[u32], out: &mut [i8]) {
    for (chunk, w) in out.chunks_mut(3).zip(words.chunks_exact(4)) {
        let lo = w[0] as u64 | (w[1] as u64) << 32;
        let hi = w[2] as u64 | (w[3] as u64) << 32;
        for (o, v) in chunk.iter_mut().zip(cbd_triple(lo, hi)) {
            *o = v;
        }
    }
}

/// `x[i] = x[i] + e[i] mod q` for `x` in `[0, q)` and `|e| < q < 2^30`:
/// add q if the sum is negative, subtract it if the sum is q or more, with
/// sign masks only (32-bit lanes on any vector unit).
pub(crate) fn add_small(m: &Modulus, e: &[i8], x: &mut [u32]) {
    let q = m.value() as i32;
    for (x, &e) in x.iter_mut().zip(e) {
        let r = *x as i32 + e as i32;
        let r = r + (q & (r >> 31));
        *x = (r - (q & ((q - 1 - r) >> 31))) as u32;
    }
}

/// [`crate::backend::Backend::take_below`]: eight words at once, copied
/// when none is rejected, else kept one by one. Each word is stored and
/// kept only when below `q` (the next one overwrites a rejected value), so
/// which words are kept depends on no branch on the values. For a `q` that
/// [`rejects_often`], every run is kept word by word.
pub(crate) fn take_below(words: &[u32], shift: u32, q: u32, out: &mut [u32]) -> (usize, usize) {
    const RUN: usize = 8;
    // Where runs are often not whole, no branch on them to mispredict.
    let whole_runs = !rejects_often(shift, q);
    let (mut used, mut i) = (0, 0);
    while used < words.len() && i < out.len() {
        if used + RUN <= words.len() && i + RUN <= out.len() {
            let x: [u32; RUN] = std::array::from_fn(|k| words[used + k] >> shift);
            if whole_runs && x.iter().all(|&x| x < q) {
                out[i..i + RUN].copy_from_slice(&x);
                i += RUN;
            } else {
                // With room for all eight, none of them ends the output.
                i = keep_below(&x, q, out, i);
            }
            used += RUN;
            continue;
        }
        let x = words[used] >> shift;
        out[i] = x;
        i += (x < q) as usize;
        used += 1;
    }
    (used, i)
}

/// Whether more than one draw in 64 of `bitlen(q)` bits (`32 - shift`) is
/// at or above `q` (auth4096's `q_2` rejects 6.5 %), so that runs of eight
/// kept draws are too rare to branch on. A choice on `q`, not on the draws.
#[inline]
pub(crate) fn rejects_often(shift: u32, q: u32) -> bool {
    let span = 1u64 << (32 - shift);
    (span - q as u64) * 64 > span
}

/// Stores each of `x` at `out[i]`, moving `i` on past the ones below `q`;
/// `out` has room for all of them from `i`. Returns the new `i`.
#[inline]
pub(crate) fn keep_below(x: &[u32], q: u32, out: &mut [u32], mut i: usize) -> usize {
    for &x in x {
        out[i] = x;
        i += (x < q) as usize;
    }
    i
}

/// 2^52. For `0 <= v < 2^51`, `v + 2^52` rounds `v` to an integer (f64
/// values in [2^52, 2^53) are spaced 1 apart) and holds that integer in its
/// low mantissa bits.
pub(crate) const TWO_52: f64 = 4_503_599_627_370_496.0;

/// `v` rounded to the nearest integer (ties to even), for `0 <= v < 2^51`.
#[inline(always)]
pub(crate) fn round_small(v: f64) -> f64 {
    (v + TWO_52) - TWO_52
}

/// `floor(v)` for `0 <= v < 2^51` (there, the same as `(v as u64) as f64`).
#[inline(always)]
pub(crate) fn floor_small(v: f64) -> f64 {
    let r = round_small(v);
    if r > v {
        r - 1.0
    } else {
        r
    }
}

/// `v as f64` for `v < 2^52` (exact): `v` placed in the mantissa of 2^52.
#[inline(always)]
pub(crate) fn u64_to_f64(v: u64) -> f64 {
    f64::from_bits(TWO_52.to_bits() | v) - TWO_52
}

/// `v as u32` for an integer-valued `v` in `[0, 2^32)`.
#[inline(always)]
pub(crate) fn f64_to_u32(v: f64) -> u32 {
    (v + TWO_52).to_bits() as u32
}

/// Coefficients rounded together by [`round_to_t_small`]: the block's two
/// sums (2 KiB of stack) stay in L1 while every row streams over them.
const ROUND_BLOCK: usize = 128;

/// `round(t/Q · x) mod t` per coefficient, from the rows of residues `x_i`
/// (one per prime), the weights `ω_i` (integers, as `f64`) and fractions
/// `θ_i` of the decryption rounding, when `Σ_i x_i·ω_i` stays below `2^52`
/// (small t): the integer part is summed unreduced as exact `f64` products,
/// the fractions in row order, then `(int + floor(frac + 1/2)) mod t`.
pub(crate) fn round_to_t_small(
    rows: &[&[u32]],
    omega: &[f64],
    theta: &[f64],
    t: u32,
    out: &mut [u32],
) {
    let tf = t as f64;
    let t_inv = 1.0 / tf;
    let mut int = [0f64; ROUND_BLOCK];
    let mut frac = [0f64; ROUND_BLOCK];
    for (b, out) in out.chunks_mut(ROUND_BLOCK).enumerate() {
        let (start, len) = (b * ROUND_BLOCK, out.len());
        let (int, frac) = (&mut int[..len], &mut frac[..len]);
        int.fill(0.0);
        frac.fill(0.0);
        for ((row, &w), &th) in rows.iter().zip(omega).zip(theta) {
            for ((&x, s), f) in row[start..start + len]
                .iter()
                .zip(int.iter_mut())
                .zip(frac.iter_mut())
            {
                let x = x as f64;
                let p = x * th;
                let fl = floor_small(p);
                *s += x * w + fl;
                *f += p - fl;
            }
        }
        for ((o, &s), &f) in out.iter_mut().zip(int.iter()).zip(frac.iter()) {
            let total = s + floor_small(f + 0.5);
            let r = total - round_small(total * t_inv) * tf;
            *o = f64_to_u32(if r < 0.0 { r + tf } else { r });
        }
    }
}
