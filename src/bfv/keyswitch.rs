//! Key switching with one special prime P and one digit per ciphertext prime.
//!
//! A key switching key from a secret `w` to the secret `s` holds, for each
//! ciphertext prime `q_i`, an encryption of `P·g_i·w` over Q·P, where
//! `g_i = (Q/q_i)·[(Q/q_i)^-1]_{q_i}` is the CRT basis element (so
//! `g_i ≡ δ_ij mod q_j` and `P·g_i ≡ 0 mod P`). Switching a polynomial `c`
//! multiplies its digits `[c]_{q_i}` (small: below `q_i`) by the key parts,
//! sums, and divides by P with rounding: the digit noise shrinks by P.
//!
//! Everything is kept in the NTT domain; `k1` parts are expanded from seeds.

use std::borrow::Borrow;

use super::encrypt::{error_poly, expand_uniform};
use super::mul::with_arena;
use super::params::Params;
use super::poly::{Coeff, Ntt, NttMont, RnsPoly};
use super::rng::Prng;
use crate::ntt::NttPlan;

/// A key switching key: per digit `i`, `(k0_i, k1_i)` over Q·P in NTT form.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct KswKey {
    pub k0: Vec<RnsPoly<Ntt>>,
    pub k1: Vec<RnsPoly<Ntt>>,
    /// Seeds of the `k1` parts (each `k1_i` is expanded from `seeds[i]`).
    pub seeds: Vec<[u8; 32]>,
}

impl KswKey {
    /// A key that switches from the secret `w` (NTT form over Q·P) to `sk`.
    pub(crate) fn generate(
        params: &Params,
        s: &RnsPoly<NttMont>,
        w: &RnsPoly<NttMont>,
        rng: &mut Prng,
    ) -> Self {
        let plans = params.plans_qp();
        let n = params.degree();
        let l = params.limbs();
        let p = params.special_prime();
        let mut k0 = Vec::with_capacity(l);
        let mut k1 = Vec::with_capacity(l);
        let mut seeds = Vec::with_capacity(l);
        for i in 0..l {
            let seed = rng.seed();
            let a = expand_uniform(seed, plans, n);
            let mut b = error_poly(rng, plans, n).into_ntt(plans);
            b.mul_sub_mont(&a, s, plans);
            // + P·w on limb i only.
            let m = plans[i].modulus();
            // w is in Montgomery form: w·2^32 · P · 2^-32 = P·w.
            let pm = m.reduce_u32(p);
            for (x, &wx) in b.limb_mut(i).iter_mut().zip(w.limb(i)) {
                *x = m.add(*x, m.mont_mul(wx, pm));
            }
            k0.push(b);
            k1.push(a);
            seeds.push(seed);
        }
        KswKey { k0, k1, seeds }
    }

    /// Switches `c` (coefficients over Q) to `(u0, u1)` over Q in NTT form,
    /// with `u0 + u1·s ≈ c·w`. `c_ntt`, if given, is `c` in NTT form: each
    /// digit's transform in its own prime is then read from it instead of
    /// computed.
    pub(crate) fn apply(
        &self,
        params: &Params,
        c: &RnsPoly<Coeff>,
        c_ntt: Option<&RnsPoly<Ntt>>,
    ) -> (RnsPoly<Ntt>, RnsPoly<Ntt>) {
        let (n, l) = (params.degree(), params.limbs());
        let mut u0 = RnsPoly::zero(n, l);
        let mut u1 = RnsPoly::zero(n, l);
        self.apply_add(params, c, c_ntt, &mut u0, &mut u1);
        (u0, u1)
    }

    /// As [`Self::apply`], adding `u0` to `out0` and `u1` to `out1` (NTT
    /// form) instead of returning them. `c` may be below the top level: over
    /// the first `l` primes of Q, the key restricted to those primes and P
    /// is a key switching key for that smaller modulus (its gadget is `P·w`
    /// on limb `i` and 0 on the others, whatever the level), so the digits
    /// and the outputs are over those `l` primes.
    pub(crate) fn apply_add(
        &self,
        params: &Params,
        c: &RnsPoly<Coeff>,
        c_ntt: Option<&RnsPoly<Ntt>>,
        out0: &mut RnsPoly<Ntt>,
        out1: &mut RnsPoly<Ntt>,
    ) {
        let l = c.limbs();
        debug_assert!(out0.limbs() == l && out1.limbs() == l);
        let n = params.degree();
        self.with_accumulated(params, c, c_ntt, |plans, acc0, acc1, scratch| {
            for (acc, out) in [(acc0, out0), (acc1, out1)] {
                drop_last_prime_in(plans, acc, scratch);
                for (j, plan) in plans.iter().enumerate().take(l) {
                    let m = plan.modulus();
                    for (o, &u) in out.limb_mut(j).iter_mut().zip(&acc[j * n..(j + 1) * n]) {
                        *o = m.add(*o, u);
                    }
                }
            }
        })
    }

    /// `d_m + u_m` for `m = 0, 1` in NTT form, where `(u0, u1)` is
    /// [`Self::apply`]'s switch of `c` and `d0`, `d1` are in coefficient form
    /// over the level of `c` (their buffers are reused). Adding `d_m` is
    /// folded into the division by P: `d + (x - [x]_P)/P = (x + P·d -
    /// [x]_P)/P`, so `P·d - [x]_P` takes one transform per prime where `d`
    /// and `[x]_P` would take one each. `c_ntt` as in [`Self::apply`].
    pub(crate) fn apply_onto(
        &self,
        params: &Params,
        c: &RnsPoly<Coeff>,
        c_ntt: Option<&RnsPoly<Ntt>>,
        d: [RnsPoly<Coeff>; 2],
    ) -> [RnsPoly<Ntt>; 2] {
        let l = c.limbs();
        debug_assert!(d.iter().all(|p| p.limbs() == l));
        let n = params.degree();
        self.with_accumulated(params, c, c_ntt, |plans, acc0, acc1, scratch| {
            let [mut d0, mut d1] = d;
            for (acc, out) in [(acc0, &mut d0), (acc1, &mut d1)] {
                drop_last_prime_onto(plans, acc, out.as_mut_slice(), scratch);
            }
            [d0, d1].map(|p| RnsPoly::from_raw(p.into_raw(), n))
        })
    }

    /// Runs `f(plans, acc0, acc1, scratch)` on the two key products of `c`'s
    /// digits, accumulated over `c`'s level and P (`plans`), in a scratch
    /// arena; `scratch` holds `2·n` words.
    fn with_accumulated<R>(
        &self,
        params: &Params,
        c: &RnsPoly<Coeff>,
        c_ntt: Option<&RnsPoly<Ntt>>,
        f: impl FnOnce(&[&NttPlan], &mut [u32], &mut [u32], &mut [u32]) -> R,
    ) -> R {
        let plans = level_plans(params, c.limbs());
        let n = params.degree();
        let len = plans.len() * n;
        // The digits of one prime, then `f`'s scratch.
        let rest = c.limbs().max(2) * n;
        with_arena(2 * len + rest, |arena| {
            let (acc0, rest) = arena.split_at_mut(len);
            let (acc1, scratch) = rest.split_at_mut(len);
            self.accumulate(params, c, c_ntt, &plans, acc0, acc1, scratch);
            f(&plans, acc0, acc1, scratch)
        })
    }

    /// `acc_m = Σ_i NTT([c]_{q_i}) · k_m,i` over the level of `c` and P
    /// (`plans`), for `m = 0, 1`; `c_ntt` as in [`Self::apply`]. `digits`
    /// holds at least `l·n` words of scratch for `c`'s `l` limbs: per prime,
    /// every digit is transformed first and the sums of products are then
    /// reduced once per output.
    #[allow(clippy::too_many_arguments)]
    fn accumulate(
        &self,
        params: &Params,
        c: &RnsPoly<Coeff>,
        c_ntt: Option<&RnsPoly<Ntt>>,
        plans: &[&NttPlan],
        acc0: &mut [u32],
        acc1: &mut [u32],
        digits: &mut [u32],
    ) {
        let top = params.limbs();
        let l = c.limbs();
        debug_assert!(l <= top && plans.len() == l + 1);
        let key_limb = |j: usize| if j == l { top } else { j };
        let n = params.degree();
        for (j, plan) in plans.iter().enumerate() {
            let (m, bk) = (plan.modulus(), plan.backend());
            // Each digit (residues below q_i) mod this prime, times 2^32:
            // its transform is then in Montgomery form (the transform is
            // linear), and each product with a key part is one Montgomery
            // multiplication. The factor costs one Shoup product per
            // residue, on the pass that reduces the digit.
            let to_mont = [m.shoup(m.r())];
            for (i, digit) in digits.chunks_mut(n).take(l).enumerate() {
                match c_ntt {
                    // In its own prime the digit is c itself.
                    Some(c_ntt) if j == i => bk.lincomb(m, &[c_ntt.limb(i)], &to_mont, digit),
                    _ => {
                        bk.lincomb(m, &[c.limb(i)], &to_mont, digit);
                        plan.forward(digit);
                    }
                }
            }
            let r = j * n..(j + 1) * n;
            let kj = key_limb(j);
            let ds: Vec<&[u32]> = digits.chunks(n).take(l).collect();
            let k0: Vec<&[u32]> = self.k0[..l].iter().map(|k| k.limb(kj)).collect();
            let k1: Vec<&[u32]> = self.k1[..l].iter().map(|k| k.limb(kj)).collect();
            bk.mul_sum_mont(m, &k0, &ds, &mut acc0[r.clone()]);
            bk.mul_sum_mont(m, &k1, &ds, &mut acc1[r]);
        }
    }
}

/// The transforms of the first `l` primes of Q and P: the basis of key
/// switching at level `l`. The key's limbs are indexed by the top level, so P
/// is its limb `params.limbs()`.
fn level_plans(params: &Params, l: usize) -> Vec<&NttPlan> {
    params.plans_q()[..l]
        .iter()
        .chain(std::iter::once(&params.plans_qp()[params.limbs()]))
        .collect()
}

/// The last limb `x_last` (mod `p`, the prime of `p_plan`) in coefficient
/// form, plus `p/2`, into `last`; returns `p/2`. Centring `[x]_p` in
/// `(-p/2, p/2]` makes the rounding to nearest: each prime adds `p/2` here
/// and subtracts it again, branch-free.
fn lifted_last_limb(p_plan: &NttPlan, x_last: &[u32], last: &mut [u32], ntt: bool) -> u32 {
    if ntt {
        p_plan.inverse_scaled_from(x_last, last, 1);
    } else {
        last.copy_from_slice(x_last);
    }
    let half = p_plan.modulus().value() / 2;
    let pm = p_plan.modulus();
    for v in last.iter_mut() {
        *v = pm.add(*v, half);
    }
    half
}

/// `d + round(x / P)` in NTT form into `d`'s buffer, for `x` (NTT form over
/// `plans`, P last) and `d` (coefficients over the other primes): per prime
/// `q_j`, `(x_j + NTT(P·d_j - [x]_P)) · P^-1` with `[x]_P` centred. `scratch`
/// holds at least `2·n` words.
fn drop_last_prime_onto(plans: &[&NttPlan], x: &[u32], d: &mut [u32], scratch: &mut [u32]) {
    let l = plans.len() - 1;
    let n = x.len() / plans.len();
    let p = plans[l].modulus().value();
    let (last, e) = scratch[..2 * n].split_at_mut(n);
    let half = lifted_last_limb(plans[l], &x[l * n..], last, true);
    for (j, plan) in plans.iter().enumerate().take(l) {
        let m = plan.modulus();
        let bk = plan.backend();
        let dj = &mut d[j * n..(j + 1) * n];
        // P·d_j - ([x]_P + P/2) + P/2: the centred residue subtracted.
        let p_j = m.reduce_u32(p);
        bk.lincomb(m, &[dj, last], &[m.shoup(p_j), m.shoup(m.neg(1))], e);
        let half_j = m.reduce_u32(half);
        for v in e.iter_mut() {
            *v = m.add(*v, half_j);
        }
        plan.forward(e);
        let p_inv = m.shoup(m.inv(p_j));
        bk.lincomb(m, &[&x[j * n..(j + 1) * n], e], &[p_inv, p_inv], dj);
    }
}

/// `round(x / p)` where `p` is the last prime of `plans` (the basis `x` is
/// over): the result is over the other primes. Used for key-switching
/// (dropping P) and modulus switching (dropping q_{L-1}).
pub(crate) fn drop_last_prime(plans: &[NttPlan], mut x: RnsPoly<Ntt>) -> RnsPoly<Ntt> {
    let n = x.degree();
    let l = plans.len() - 1;
    debug_assert_eq!(x.limbs(), plans.len());
    let mut scratch = vec![0u32; 2 * n];
    drop_last_prime_in(plans, x.as_mut_slice(), &mut scratch);
    x.truncate_limbs(l);
    x
}

/// [`drop_last_prime`] on limb-major residues (`plans.len()` limbs): the
/// result is left in the first `plans.len() - 1` limbs. `scratch` holds at
/// least `2·n` words.
pub(crate) fn drop_last_prime_in<P: Borrow<NttPlan>>(
    plans: &[P],
    x: &mut [u32],
    scratch: &mut [u32],
) {
    let l = plans.len() - 1;
    let n = x.len() / plans.len();
    let p = plans[l].borrow().modulus().value();
    let (last, lifted) = scratch[..2 * n].split_at_mut(n);
    let half = lifted_last_limb(plans[l].borrow(), &x[l * n..], last, true);
    for (j, plan) in plans.iter().enumerate().take(l) {
        let plan = plan.borrow();
        let m = plan.modulus();
        let bk = plan.backend();
        let half_j = m.reduce_u32(half);
        // [x]_p + p/2 (below p < 2^32) reduced mod q_j, then less p/2.
        bk.lincomb(m, &[last], &[m.shoup(1)], lifted);
        for d in lifted.iter_mut() {
            *d = m.sub(*d, half_j);
        }
        plan.forward(lifted);
        // (x - lifted) · p^-1, through `lifted` as the difference.
        let p_inv = m.shoup(m.inv(m.reduce_u32(p)));
        let xj = &mut x[j * n..(j + 1) * n];
        for (d, &y) in lifted.iter_mut().zip(xj.iter()) {
            *d = m.sub(y, *d);
        }
        bk.lincomb(m, &[lifted], &[p_inv], xj);
    }
}

/// [`drop_last_prime_in`] for coefficient-form residues: the same rounding,
/// without the transforms, in one linear combination per prime:
/// `(x_j - [x]_p)·p^-1 = x_j·p^-1 - ([x]_p + p/2)·p^-1 + (p/2)·p^-1`, the
/// last term over a row of ones. `scratch` holds at least `3·n` words.
pub(crate) fn drop_last_prime_coeff<P: Borrow<NttPlan>>(
    plans: &[P],
    x: &mut [u32],
    scratch: &mut [u32],
) {
    let l = plans.len() - 1;
    let n = x.len() / plans.len();
    let p = plans[l].borrow().modulus().value();
    let (last, rest) = scratch[..3 * n].split_at_mut(n);
    let (ones, out) = rest.split_at_mut(n);
    let half = lifted_last_limb(plans[l].borrow(), &x[l * n..], last, false);
    ones.fill(1);
    for (j, plan) in plans.iter().enumerate().take(l) {
        let plan = plan.borrow();
        let m = plan.modulus();
        let p_inv = m.inv(m.reduce_u32(p));
        let weights = [p_inv, m.neg(p_inv), m.mul(m.reduce_u32(half), p_inv)].map(|w| m.shoup(w));
        let xj = &mut x[j * n..(j + 1) * n];
        plan.backend().lincomb(m, &[xj, last, ones], &weights, out);
        xj.copy_from_slice(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bfv::poly::{Coeff, Ntt};
    use crate::bfv::{RelinKey, SecretKey};

    /// Dropping the last prime in coefficient form rounds as it does in NTT
    /// form, word for word once transformed, and both give `round(x/p)`
    /// of the integer `x` the residues stand for.
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    #[cfg_attr(not(target_arch = "wasm32"), test)]
    fn both_forms_drop_the_last_prime_alike() {
        let params = Params::auth4096();
        let plans = params.plans_q();
        let n = params.degree();
        let l = plans.len();
        let mut rng = Prng::from_seed([6; 32]);
        let x_ntt = expand_uniform(rng.seed(), plans, n);
        let x = x_ntt.clone().into_coeff(plans);
        let mut coeff = x.as_slice().to_vec();
        drop_last_prime_coeff(plans, &mut coeff, &mut vec![0; 3 * n]);
        let mut ntt = x_ntt.as_slice().to_vec();
        drop_last_prime_in(plans, &mut ntt, &mut vec![0; 2 * n]);
        let coeff = RnsPoly::<Coeff>::from_raw(coeff[..(l - 1) * n].to_vec(), n);
        let ntt = RnsPoly::<Ntt>::from_raw(ntt[..(l - 1) * n].to_vec(), n);
        assert!(
            coeff.clone().into_ntt(&plans[..l - 1]) == ntt,
            "the forms differ"
        );
        // Against the integers, through the first coefficients: x from its
        // residues by the CRT, then rounded, then reduced.
        let q: Vec<u128> = plans.iter().map(|p| p.modulus().value() as u128).collect();
        let big_q: u128 = q.iter().product();
        for i in 0..8 {
            let mut v = 0u128;
            for (j, &qj) in q.iter().enumerate() {
                let others = big_q / qj;
                let m = plans[j].modulus();
                let inv = m.inv(m.reduce_u32((others % qj) as u32)) as u128;
                v = (v + x.limb(j)[i] as u128 * inv % qj * others) % big_q;
            }
            let p = q[l - 1];
            let rounded = (v + p / 2) / p;
            for (j, &qj) in q.iter().enumerate().take(l - 1) {
                assert_eq!(
                    coeff.limb(j)[i] as u128,
                    rounded % qj,
                    "coefficient {i}, prime {j}"
                );
            }
        }
    }

    /// Reading each digit's own-prime transform from `c`'s NTT form gives
    /// the same switch, word for word, as transforming the digit.
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    #[cfg_attr(not(target_arch = "wasm32"), test)]
    fn the_ntt_form_shortcut_changes_nothing() {
        let params = Params::auth4096();
        let mut rng = Prng::from_seed([5; 32]);
        let sk = SecretKey::generate_with(&params, &mut rng);
        let rk = RelinKey::new_with(&sk, &mut rng);
        let plans = params.plans_q();
        let c_ntt = expand_uniform(rng.seed(), plans, params.degree());
        let c = c_ntt.clone().into_coeff(plans);
        let with = rk.ksw.apply(&params, &c, Some(&c_ntt));
        let without = rk.ksw.apply(&params, &c, None);
        assert!(with == without, "the switches differ");
    }
}
