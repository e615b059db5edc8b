//! Ciphertext × ciphertext multiplication in RNS (Halevi–Polyakov–Shoup).
//!
//! The tensor product of two ciphertexts must be computed over the integers,
//! then scaled by t/Q and rounded. With Q = q_0···q_{L-1} and an auxiliary
//! base B = b_0···b_{K-1} (30-bit NTT primes, `B > 2·t·n·Q`):
//!
//! 1. each input polynomial (coefficients over Q) is extended exactly to B,
//!    as its centred representative in (-Q/2, Q/2];
//! 2. the tensor `(a0·b0, a0·b1 + a1·b0, a1·b1)` is taken pointwise in the
//!    NTT domain over Q ∪ B (the Q part straight from the stored NTT forms);
//! 3. `round(t·d/Q)` is computed in base B from the residues over Q ∪ B;
//! 4. the result is extended exactly from B back to Q.
//!
//! Steps 1, 3 and 4 split each rational CRT constant into an integer part (kept
//! mod every prime) and a fraction (an `f64`), so no big integers appear. A
//! fraction can only mislead the rounding by one unit, which adds at most 1 to
//! the noise.

use crate::arith::{ntt_primes, Modulus};
use crate::ntt::NttPlan;

/// Precomputed constants for multiplication, built with the parameters.
pub(crate) struct MulConsts {
    pub plans_b: Vec<NttPlan>,
    q_to_b: BaseConv,
    b_to_q: BaseConv,
    /// `floor(t·ĉ_i·B/q_i) mod b_j`, indexed `[j][i]`.
    sr_omega: Vec<Vec<u32>>,
    /// `frac(t·ĉ_i·B/q_i)`.
    sr_theta: Vec<f64>,
    /// `t·ĉ_j·(B/b_j) mod b_j`.
    sr_lambda: Vec<u32>,
}

/// Exact conversion of centred residues from base `from` to base `to`.
struct BaseConv {
    from: Vec<Modulus>,
    to: Vec<Modulus>,
    /// `(F/f_i)^-1 mod f_i`, with its Shoup companion.
    f_tilde: Vec<crate::arith::ShoupConstant>,
    /// `(F/f_i) mod t_j`, indexed `[j][i]`.
    f_over_fi: Vec<Vec<u32>>,
    /// `t_j - (F mod t_j)`: adding `k` of these subtracts `k·F`.
    neg_f: Vec<u32>,
}

fn prod_mod(xs: &[u32], m: &Modulus) -> u32 {
    xs.iter().fold(1u32, |acc, &x| m.mul(acc, m.reduce_u32(x)))
}

impl BaseConv {
    fn new(from: &[u32], to: &[u32]) -> Self {
        let fm: Vec<Modulus> = from
            .iter()
            .map(|&p| Modulus::new(p as u64).unwrap())
            .collect();
        let tm: Vec<Modulus> = to
            .iter()
            .map(|&p| Modulus::new(p as u64).unwrap())
            .collect();
        let others = |i: usize| -> Vec<u32> {
            from.iter()
                .enumerate()
                .filter(|(k, _)| *k != i)
                .map(|(_, &p)| p)
                .collect()
        };
        let f_tilde = fm
            .iter()
            .enumerate()
            .map(|(i, m)| m.shoup(m.inv(prod_mod(&others(i), m))))
            .collect();
        let f_over_fi = tm
            .iter()
            .map(|m| (0..from.len()).map(|i| prod_mod(&others(i), m)).collect())
            .collect();
        let neg_f = tm.iter().map(|m| m.neg(prod_mod(from, m))).collect();
        BaseConv {
            from: fm,
            to: tm,
            f_tilde,
            f_over_fi,
            neg_f,
        }
    }

    /// Converts `n` coefficients: `src` holds limb-major residues mod
    /// `from`, `dst` receives limb-major residues mod `to` of the centred
    /// representatives. `y` (from.len()·n) and `k` (n) are scratch.
    fn convert(&self, src: &[u32], dst: &mut [u32], n: usize, y: &mut [u32], k: &mut [u32]) {
        let l = self.from.len();
        let mut v = vec![0f64; n];
        for i in 0..l {
            let m = &self.from[i];
            let w = self.f_tilde[i];
            let inv = 1.0 / m.value() as f64;
            let yi = &mut y[i * n..(i + 1) * n];
            for ((yv, &x), vv) in yi
                .iter_mut()
                .zip(&src[i * n..(i + 1) * n])
                .zip(v.iter_mut())
            {
                *yv = m.mul_shoup(x, w);
                *vv += *yv as f64 * inv;
            }
        }
        for (kk, &vv) in k.iter_mut().zip(&v) {
            // v >= 0: adding 0.5 and truncating rounds, and the cast
            // compiles to one instruction where `round` is a libm call.
            *kk = (vv + 0.5) as u32;
        }
        let mut acc = vec![0u64; n];
        for (j, m) in self.to.iter().enumerate() {
            let neg_f = self.neg_f[j] as u64;
            for (a, &kk) in acc.iter_mut().zip(k.iter()) {
                *a = kk as u64 * neg_f;
            }
            for i in 0..l {
                // Products are below 2^60: fold every 8 primes so that any
                // number of them accumulates without overflow.
                if i % 8 == 7 {
                    for a in acc.iter_mut() {
                        *a = m.reduce_u64(*a) as u64;
                    }
                }
                let c = self.f_over_fi[j][i] as u64;
                for (a, &yv) in acc.iter_mut().zip(&y[i * n..(i + 1) * n]) {
                    *a += yv as u64 * c;
                }
            }
            for (d, &a) in dst[j * n..(j + 1) * n].iter_mut().zip(&acc) {
                *d = m.reduce_u64(a);
            }
        }
    }
}

impl MulConsts {
    /// `q` ciphertext primes, `avoid` primes already in use (Q and P).
    pub(crate) fn new(n: usize, t: u32, q: &[u32], avoid: &[u32]) -> Self {
        // B > 2·t·n·Q with margin: bits(t) + log2(n) + bits(Q) + 2, in
        // primes of just under 30 bits.
        let q_bits: u32 = q.iter().map(|&p| 32 - p.leading_zeros()).sum();
        let need = (32 - t.leading_zeros()) + n.trailing_zeros() + q_bits + 2;
        let k = need.div_ceil(29) as usize;
        let b: Vec<u32> = ntt_primes(30, n, k + avoid.len())
            .expect("enough 30-bit primes")
            .into_iter()
            .filter(|p| !avoid.contains(p))
            .take(k)
            .collect();
        let plans_b = b
            .iter()
            .map(|&p| NttPlan::new(n, p as u64).expect("NTT prime"))
            .collect();
        // Scale-and-round constants over Q ∪ B.
        let qm: Vec<Modulus> = q.iter().map(|&p| Modulus::new(p as u64).unwrap()).collect();
        let bm: Vec<Modulus> = b.iter().map(|&p| Modulus::new(p as u64).unwrap()).collect();
        let all: Vec<u32> = q.iter().chain(b.iter()).copied().collect();
        let c_hat = |idx: usize, m: &Modulus| -> u32 {
            let others: Vec<u32> = all
                .iter()
                .enumerate()
                .filter(|(k, _)| *k != idx)
                .map(|(_, &p)| p)
                .collect();
            m.inv(prod_mod(&others, m))
        };
        let mut sr_omega = vec![vec![0u32; q.len()]; b.len()];
        let mut sr_theta = vec![0f64; q.len()];
        for (i, m) in qm.iter().enumerate() {
            let c = c_hat(i, m);
            // r_i = t·ĉ_i·B mod q_i; floor(t·ĉ_i·B/q_i) ≡ -r_i·q_i^-1 (mod b_j).
            let r = m.mul(m.mul(m.reduce_u32(t), c), prod_mod(&b, m));
            sr_theta[i] = r as f64 / m.value() as f64;
            for (j, bj) in bm.iter().enumerate() {
                let qi_inv = bj.inv(bj.reduce_u32(m.value()));
                sr_omega[j][i] = bj.mul(bj.neg(bj.reduce_u32(r)), qi_inv);
            }
        }
        let sr_lambda = bm
            .iter()
            .enumerate()
            .map(|(j, bj)| {
                let c = c_hat(q.len() + j, bj);
                let b_over: Vec<u32> = b
                    .iter()
                    .enumerate()
                    .filter(|(k, _)| *k != j)
                    .map(|(_, &p)| p)
                    .collect();
                bj.mul(bj.mul(bj.reduce_u32(t), c), prod_mod(&b_over, bj))
            })
            .collect();
        MulConsts {
            plans_b,
            q_to_b: BaseConv::new(q, &b),
            b_to_q: BaseConv::new(&b, q),
            sr_omega,
            sr_theta,
            sr_lambda,
        }
    }

    /// Number of auxiliary primes.
    pub(crate) fn k(&self) -> usize {
        self.plans_b.len()
    }

    /// Extends coefficient-domain limbs over Q (`src`, L·n) to B (`dst`, K·n).
    pub(crate) fn extend_q_to_b(&self, src: &[u32], dst: &mut [u32], n: usize) {
        let l = self.q_to_b.from.len();
        let mut y = vec![0u32; l * n];
        let mut k = vec![0u32; n];
        self.q_to_b.convert(src, dst, n, &mut y, &mut k);
    }

    /// `round(t·d/Q)` over B from `d` over Q (L·n) and B (K·n), both in
    /// coefficients; then extended to Q. Writes L·n residues into `out_q`.
    pub(crate) fn scale_round_to_q(&self, d_q: &[u32], d_b: &[u32], out_q: &mut [u32], n: usize) {
        let l = self.q_to_b.from.len();
        let kb = self.k();
        // Fractional parts: Σ_i d_i·θ_i, split into an integer and a rounding.
        let mut int = vec![0u64; n];
        let mut frac = vec![0f64; n];
        for i in 0..l {
            let theta = self.sr_theta[i];
            for ((iv, fv), &d) in int
                .iter_mut()
                .zip(frac.iter_mut())
                .zip(&d_q[i * n..(i + 1) * n])
            {
                let p = d as f64 * theta;
                // p >= 0, so truncation is the floor.
                let fl = p as u64;
                *iv += fl;
                *fv += p - fl as f64;
            }
        }
        for (iv, &fv) in int.iter_mut().zip(&frac) {
            *iv += (fv + 0.5) as u64;
        }
        let mut z = vec![0u32; kb * n];
        let mut acc = vec![0u64; n];
        for (j, bj) in self.b_to_q.from.iter().enumerate() {
            let lambda = self.sr_lambda[j] as u64;
            for ((a, &iv), &d) in acc.iter_mut().zip(&int).zip(&d_b[j * n..(j + 1) * n]) {
                *a = iv + d as u64 * lambda;
            }
            for i in 0..l {
                let w = self.sr_omega[j][i] as u64;
                for (a, &d) in acc.iter_mut().zip(&d_q[i * n..(i + 1) * n]) {
                    *a += d as u64 * w;
                }
            }
            for (zz, &a) in z[j * n..(j + 1) * n].iter_mut().zip(&acc) {
                *zz = bj.reduce_u64(a);
            }
        }
        let mut y = vec![0u32; kb * n];
        let mut k = vec![0u32; n];
        self.b_to_q.convert(&z, out_q, n, &mut y, &mut k);
    }
}
