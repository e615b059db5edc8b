//! Per-level constants for scaling by t/Q, and the decryption rounding.
//!
//! Decryption computes `round(t/Q · x) mod t` for the phase `x` in RNS form
//! without big integers (Halevi–Polyakov–Shoup): with `Q̃_i = (Q/q_i)^-1 mod q_i`,
//! `t·x/Q ≡ Σ_i x_i · t·Q̃_i/q_i (mod t)`. Each `t·Q̃_i/q_i` splits into an
//! integer part `ω_i` (kept mod t) and a fraction `θ_i` (an `f64`), so the
//! rounding is branch-free integer and floating-point arithmetic.

use super::params::Params;
use super::poly::{Coeff, RnsPoly};
use crate::arith::Modulus;
use crate::error::BfvError;

/// Constants for a ciphertext over the first `l` primes of Q.
#[derive(Clone, Debug)]
pub(crate) struct LevelConsts {
    /// floor(Q_l / t) mod q_i.
    pub delta: Vec<u32>,
    /// floor(t·Q̃_i/q_i) mod t.
    pub omega: Vec<u32>,
    /// Shoup companion of `omega` for products mod t: floor(ω_i·2^32 / t).
    pub omega_shoup: Vec<u32>,
    /// `omega` as `f64`s, for levels where [`Self::exact_f64`] holds.
    pub omega_f64: Vec<f64>,
    /// Whether `Σ_i x_i·ω_i` over residues `x_i < q_i` stays below 2^52, so
    /// the integer part can be summed in `f64` without reducing each product
    /// mod t (small t, such as 65537).
    pub exact_f64: bool,
    /// frac(t·Q̃_i/q_i).
    pub theta: Vec<f64>,
    /// Q̃_i = (Q_l/q_i)^-1 mod q_i.
    pub q_tilde: Vec<u32>,
    /// 1/t, for reducing the rounded sums mod t.
    pub t_inv: f64,
}

impl LevelConsts {
    pub(crate) fn new(q: &[u32], t: u32) -> Self {
        let l = q.len();
        // Q_l mod t, by multiplying the primes mod t (t may be even: use u64 %).
        let q_mod_t = q.iter().fold(1u64, |acc, &qi| acc * qi as u64 % t as u64);
        let mut delta = Vec::with_capacity(l);
        let mut omega = Vec::with_capacity(l);
        let mut omega_shoup = Vec::with_capacity(l);
        let mut theta = Vec::with_capacity(l);
        let mut q_tilde = Vec::with_capacity(l);
        for (i, &qi) in q.iter().enumerate() {
            let m = Modulus::new(qi as u64).expect("checked prime");
            // Δ = (Q - (Q mod t)) / t, and Q ≡ 0 mod q_i.
            let t_inv = m.inv(t % qi);
            let r = (q_mod_t % qi as u64) as u32;
            delta.push(m.mul(m.neg(r), t_inv));
            // Q̃_i.
            let mut prod = 1u32;
            for (j, &qj) in q.iter().enumerate() {
                if j != i {
                    prod = m.mul(prod, qj % qi);
                }
            }
            let qt = m.inv(prod);
            q_tilde.push(qt);
            let num = t as u128 * qt as u128;
            let w = ((num / qi as u128) % t as u128) as u32;
            omega.push(w);
            omega_shoup.push((((w as u64) << 32) / t as u64) as u32);
            theta.push((num % qi as u128) as f64 / qi as f64);
        }
        let q_max = q.iter().copied().max().unwrap_or(0) as u128;
        let exact_f64 = (l as u128 + 1) * q_max * (t as u128 + 1) < 1 << 52;
        LevelConsts {
            delta,
            omega_f64: omega.iter().map(|&w| w as f64).collect(),
            exact_f64,
            omega,
            omega_shoup,
            theta,
            q_tilde,
            t_inv: 1.0 / t as f64,
        }
    }
}

// Decryption rounding, limb-major and branch-free.
//
// For coefficient j the rounding computes, over the limbs i in order,
//
//     int  = Σ_i (x_i·ω_i + floor(x_i·θ_i)),
//     frac = ((0 + frac(x_0·θ_0)) + frac(x_1·θ_1)) + …   (f64, in this order)
//
// and returns (int + floor(frac + 0.5)) mod t. The f64 operations (x_i·θ_i,
// its floor, the subtraction and the running sum) are exactly those of a
// per-coefficient loop over the limbs, so `frac`, and with it every rounding
// decision, is the same bit for bit in whatever order the coefficients are
// visited; the integer part is only needed mod t, so it may be reduced early.
//
// Each limb is one pass over a block of coefficients that updates two `f64`
// arrays, with no u128 and no data-dependent branch, so the compiler turns
// it into SIMD code on every target:
//
// * x_i·ω_i mod t is a Shoup product with 64-bit intermediates: since
//   ω_i < t and x_i < 2^32, the result r_i is in [0, 2t), exact (t < 2^30).
//   When the plain products are small enough (`LevelConsts::exact_f64`:
//   (L+1)·max q_i·(t+1) < 2^52, true for t = 65537), x_i·ω_i is added
//   unreduced as an exact f64 product instead: the same total mod t, with
//   no 64-bit integer multiplies (which wasm's SIMD lacks).
// * r_i and floor(x_i·θ_i) are added to `int` as f64. Bound: r_i < 2t < 2^31,
//   floor(x_i·θ_i) <= x_i < q_i < 2^30, and there are at most MAX_PRIMES = 15
//   limbs, so int < 15·(2^31 + 2^30) < 2^36; floor(frac + 0.5) adds at most
//   15 (each fraction is below 1). Every partial sum is an integer below
//   2^53, so the f64 additions are exact.
// * The floor of x_i·θ_i in [0, 2^30) and the conversions between f64 and
//   integers below 2^52 use the 2^52 trick (`round_small`), exact there and
//   vectorizable everywhere (SSE2 has no f64 floor, and casts between f64
//   and u64 have no SIMD form before AVX-512).
// * The final reduction of `total` (an integer below 2^37):
//   k = round(total·fl(1/t)), r = total - k·t. The relative error of
//   total·fl(1/t) is below 2^-51, so |k - total/t| <= 1/2 + 2^37·2^-51 and
//   |r| < t; k·t < 2^38, so r is exact, and adding t when r is negative gives
//   total mod t. With unreduced products, total < 2^52 and the error is
//   below total·2^-51/t <= 2/t: still |r| < t, and k·t < 2^53 is exact.

use crate::backend::scalar::{f64_to_u32, floor_small, round_small, u64_to_f64};
use crate::backend::Backend;

/// Coefficients rounded together: every limb is streamed over the block's
/// two sums (2 KiB of stack), which stay in L1.
const BLOCK: usize = 128;

/// Adds the share of limb `i`, whose residues are `x`, to the block sums.
#[inline(always)]
fn accumulate_limb(
    x: &[u32],
    c: &LevelConsts,
    i: usize,
    t: u32,
    int: &mut [f64],
    frac: &mut [f64],
) {
    let (w, w_shoup, theta) = (c.omega[i] as u64, c.omega_shoup[i] as u64, c.theta[i]);
    let t = t as u64;
    for ((&x, s), f) in x.iter().zip(int.iter_mut()).zip(frac.iter_mut()) {
        let x = x as u64;
        // Shoup: x·ω - floor(x·ω'/2^32)·t is x·ω mod t, or that plus t.
        let r = (x * w).wrapping_sub(((x * w_shoup) >> 32) * t);
        let p = u64_to_f64(x) * theta;
        let fl = floor_small(p);
        *s += u64_to_f64(r) + fl;
        *f += p - fl;
    }
}

/// `round(t/Q · x_j) mod t` for `out.len()` coefficients: `residues` holds
/// one row of `out.len()` residues per prime of the level, limb-major.
fn round_rows(c: &LevelConsts, t: u32, residues: &[u32], out: &mut [u32], backend: Backend) {
    let m = out.len();
    if m == 0 {
        return;
    }
    let limbs = residues.len() / m;
    debug_assert_eq!(residues.len(), limbs * m);
    debug_assert_eq!(limbs, c.theta.len());
    if c.exact_f64 {
        let rows: Vec<&[u32]> = residues.chunks_exact(m).collect();
        backend.round_to_t_small(&rows, &c.omega_f64, &c.theta, t, out);
        return;
    }
    let tf = t as f64;
    let mut int = [0f64; BLOCK];
    let mut frac = [0f64; BLOCK];
    for (b, out) in out.chunks_mut(BLOCK).enumerate() {
        let (start, len) = (b * BLOCK, out.len());
        let (int, frac) = (&mut int[..len], &mut frac[..len]);
        int.fill(0.0);
        frac.fill(0.0);
        for (i, row) in residues.chunks_exact(m).enumerate() {
            accumulate_limb(&row[start..start + len], c, i, t, int, frac);
        }
        for ((o, &s), &f) in out.iter_mut().zip(int.iter()).zip(frac.iter()) {
            let total = s + floor_small(f + 0.5);
            let r = total - round_small(total * c.t_inv) * tf;
            *o = f64_to_u32(if r < 0.0 { r + tf } else { r });
        }
    }
}

/// `round(t/Q · x) mod t` for each coefficient of `x`.
pub(crate) fn round_to_t(params: &Params, x: &RnsPoly<Coeff>) -> Vec<u32> {
    let mut out = vec![0; x.degree()];
    let c = params.level(x.limbs());
    let backend = params.plans_q()[0].backend();
    round_rows(
        c,
        params.plaintext_modulus(),
        x.as_slice(),
        &mut out,
        backend,
    );
    out
}

/// `round(t/Q · x_j) mod t` for each `j` in `positions` (each below the
/// degree): their residues are gathered, then rounded as in [`round_to_t`].
pub(crate) fn round_coeffs_to_t(
    params: &Params,
    x: &RnsPoly<Coeff>,
    positions: &[usize],
) -> Vec<u32> {
    let k = positions.len();
    let mut rows = vec![0u32; x.limbs() * k];
    if k > 0 {
        for (i, row) in rows.chunks_exact_mut(k).enumerate() {
            let limb = x.limb(i);
            for (r, &j) in row.iter_mut().zip(positions) {
                *r = limb[j];
            }
        }
    }
    let mut out = vec![0; k];
    let c = params.level(x.limbs());
    let backend = params.plans_q()[0].backend();
    round_rows(c, params.plaintext_modulus(), &rows, &mut out, backend);
    out
}

/// `round(t/Q_l · x) mod t` for values given as residue rows: `rows` holds
/// `l` rows (one per prime `q_0..q_{l-1}`) of `out.len()` residues each.
pub(crate) fn round_residue_rows_to_t(params: &Params, rows: &[u32], out: &mut [u32]) {
    if out.is_empty() {
        return;
    }
    let l = rows.len() / out.len();
    let backend = params.plans_q()[0].backend();
    round_rows(
        params.level(l),
        params.plaintext_modulus(),
        rows,
        out,
        backend,
    );
}

/// `log2(Q / (2·t·‖x mod Q‖))`-style invariant noise budget (diagnostic).
pub(crate) fn noise_budget(params: &Params, x: &RnsPoly<Coeff>, l: usize) -> Result<f64, BfvError> {
    let q = &params.ciphertext_primes()[..l];
    let big_q = q
        .iter()
        .try_fold(1u128, |acc, &qi| acc.checked_mul(qi as u128))
        .filter(|v| *v < 1 << 127)
        .ok_or(BfvError::NoiseUnavailable)?;
    let c = params.level(l);
    let t = params.plaintext_modulus() as u128;
    let addmod = |a: u128, b: u128| {
        let s = a + b;
        if s >= big_q {
            s - big_q
        } else {
            s
        }
    };
    let mulmod_small = |a: u128, mut k: u128| {
        // a·k mod Q for k < 2^64, by double-and-add (a < Q < 2^127).
        let mut acc = 0u128;
        let mut base = a;
        while k > 0 {
            if k & 1 == 1 {
                acc = addmod(acc, base);
            }
            base = addmod(base, base);
            k >>= 1;
        }
        acc
    };
    let mut worst = 0u128;
    for j in 0..params.degree() {
        let mut xv = 0u128;
        for (i, &qi) in q.iter().enumerate() {
            let m = Modulus::new(qi as u64).expect("prime");
            let v = m.mul(x.limb(i)[j], c.q_tilde[i]) as u128;
            xv = addmod(xv, mulmod_small(big_q / qi as u128, v));
        }
        let y = mulmod_small(xv, t);
        let centred = y.min(big_q - y);
        worst = worst.max(centred);
    }
    if worst == 0 {
        return Ok((big_q as f64).log2());
    }
    Ok(((big_q as f64) / (2.0 * worst as f64)).log2().max(0.0))
}
