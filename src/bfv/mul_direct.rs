//! Ciphertext × ciphertext multiplication without an auxiliary base, for
//! parameters with `Q ≡ 1 (mod t)`.
//!
//! With `Δ = floor(Q/t) = (Q - 1)/t`, a ciphertext's phase is `Δ·m + e`,
//! and `t·Δ = Q - 1 ≡ -1 (mod Q)`. The tensor `d = a ⊗ b`, taken mod Q
//! only, has the phase `φ_a·φ_b mod Q`; times `Δ·t²`:
//!
//! ```text
//! Δ·(t·φ_a)·(t·φ_b) ≡ Δ·(-m_a + t·e_a)·(-m_b + t·e_b) = Δ·(μ + t·W) ≡ Δ·μ - W  (mod Q)
//! ```
//!
//! where `μ = m_a·m_b mod t` and `W = (m_a·m_b - μ)/t - (m_a·e_b + m_b·e_a) + t·e_a·e_b`
//! (ring products, over the integers). So `Δ·t²·(a ⊗ b)` is a ciphertext of
//! the product with noise `-W`, the same terms (and sizes) as the noise of
//! the scaled tensor of [`super::mul`], for three pointwise products a prime
//! and no transform. Mod each `q_i`, `Δ ≡ -t^-1`, so the factor is `-t`.
//!
//! The identity needs `t·Δ ≡ -1`, that is `Q ≡ 1 (mod t)`, over all of Q:
//! ciphertexts are multiplied at the top level only, so one check when the
//! parameters are built decides. Other parameters use [`super::mul`].

use crate::arith::{Modulus, ShoupConstant};
use crate::ntt::NttPlan;

/// The constants of the direct product: per prime of Q, `-t·2^32 mod q_i`
/// (the factor `-t`, and `2^32` to undo the Montgomery products' `2^-32`).
pub(crate) struct DirectMul {
    factors: Vec<ShoupConstant>,
}

impl DirectMul {
    /// `Some` when `Q = Π q` is `1 mod t`.
    pub(crate) fn new(q: &[u32], t: u32) -> Option<Self> {
        let q_mod_t = q
            .iter()
            .fold(1u64, |acc, &p| acc * (p as u64 % t as u64) % t as u64);
        if t < 2 || q_mod_t != 1 {
            return None;
        }
        let factors = q
            .iter()
            .map(|&p| {
                let m = Modulus::new(p as u64).expect("checked prime");
                m.shoup(m.mul(m.neg(m.reduce_u32(t)), m.r()))
            })
            .collect();
        Some(DirectMul { factors })
    }

    /// `-t·(a0·b0, a0·b1 + a1·b0, a1·b1)` pointwise over Q: the product's
    /// three parts in NTT form (`out`, `L·n` each, limb-major), from `a` and
    /// `b` in NTT form over Q.
    pub(crate) fn tensor(
        &self,
        plans_q: &[NttPlan],
        a: [&[u32]; 2],
        b: [&[u32]; 2],
        out: [&mut [u32]; 3],
    ) {
        let n = plans_q[0].degree();
        let [d0, d1, d2] = out;
        let mut scaled = [vec![0u32; n], vec![0u32; n]];
        for ((i, plan), f) in plans_q.iter().enumerate().zip(&self.factors) {
            let r = i * n..(i + 1) * n;
            let (m, bk) = (plan.modulus(), plan.backend());
            for (s, x) in scaled.iter_mut().zip(a) {
                bk.lincomb(m, &[&x[r.clone()]], std::slice::from_ref(f), s);
            }
            let (b0, b1) = (&b[0][r.clone()], &b[1][r.clone()]);
            bk.mul_mont(m, &scaled[0], b0, &mut d0[r.clone()]);
            bk.mul_sum_mont(m, &[&scaled[0], &scaled[1]], &[b1, b0], &mut d1[r.clone()]);
            bk.mul_mont(m, &scaled[1], b1, &mut d2[r]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_q_one_mod_t_multiplies_directly() {
        // 97·193 = 18721 = 1 + 65·288, so 1 mod 65 (any t dividing 18720).
        assert!(DirectMul::new(&[97, 193], 65).is_some());
        assert!(DirectMul::new(&[97, 193], 64).is_none());
        assert!(DirectMul::new(&[97, 193], 7).is_none());
    }
}
