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
    pub omega: Vec<u64>,
    /// frac(t·Q̃_i/q_i).
    pub theta: Vec<f64>,
    /// Q̃_i = (Q_l/q_i)^-1 mod q_i.
    pub q_tilde: Vec<u32>,
    /// floor(2^64 / t), for reducing mod t.
    pub t_barrett: u64,
}

impl LevelConsts {
    pub(crate) fn new(q: &[u32], t: u32) -> Self {
        let l = q.len();
        // Q_l mod t, by multiplying the primes mod t (t may be even: use u64 %).
        let q_mod_t = q.iter().fold(1u64, |acc, &qi| acc * qi as u64 % t as u64);
        let mut delta = Vec::with_capacity(l);
        let mut omega = Vec::with_capacity(l);
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
            omega.push(((num / qi as u128) % t as u128) as u64);
            theta.push((num % qi as u128) as f64 / qi as f64);
        }
        LevelConsts {
            delta,
            omega,
            theta,
            q_tilde,
            t_barrett: u64::MAX / t as u64,
        }
    }
}

/// `x mod t` for any `t` in `2..2^31` (Barrett with `mu = floor(2^64/t)`),
/// branch-free.
#[inline]
pub(crate) fn reduce_u64_any(x: u64, t: u32, mu: u64) -> u32 {
    let est = ((x as u128 * mu as u128) >> 64) as u64;
    let r = x.wrapping_sub(est.wrapping_mul(t as u64)) as u32;
    crate::arith::csub(r, t)
}

/// `round(t/Q · x) mod t` for each coefficient of `x`.
pub(crate) fn round_to_t(params: &Params, x: &RnsPoly<Coeff>) -> Vec<u32> {
    (0..params.degree())
        .map(|j| round_coeff_to_t(params, x, j))
        .collect()
}

/// `round(t/Q · x_j) mod t` for coefficient `j` of `x`.
#[inline]
pub(crate) fn round_coeff_to_t(params: &Params, x: &RnsPoly<Coeff>, j: usize) -> u32 {
    let l = x.limbs();
    let c = params.level(l);
    let t = params.plaintext_modulus();
    // Σ x_i·ω_i < L·2^30·2^30 and the floors < L·2^30: no overflow in u64
    // for L < 16, so one reduction at the end suffices.
    let mut int = 0u64;
    let mut frac = 0f64;
    for i in 0..l {
        let xi = x.limb(i)[j] as u64;
        int += xi * c.omega[i];
        let p = xi as f64 * c.theta[i];
        // p >= 0: truncation is the floor (and avoids a libm call).
        let fl = p as u64;
        int += fl;
        frac += p - fl as f64;
    }
    int += (frac + 0.5) as u64;
    reduce_u64_any(int, t, c.t_barrett)
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
