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

use crate::arith::{ntt_primes, Modulus, ShoupConstant};
use crate::backend::Backend;
use crate::ntt::NttPlan;

/// Precomputed constants for multiplication, built with the parameters.
pub(crate) struct MulConsts {
    pub plans_b: Vec<NttPlan>,
    q_to_b: BaseConv,
    b_to_q: BaseConv,
    /// `frac(t·ĉ_i·B/q_i)`.
    sr_theta: Vec<f64>,
    /// Per `b_j`, the weights of `[int, d_bj, d_q0, …]` in the scaled
    /// residue: `1`, `λ_j = t·ĉ_j·(B/b_j) mod b_j`, then
    /// `ω_ji = floor(t·ĉ_i·B/q_i) mod b_j` for each `q_i`; each times
    /// `(B/b_j)^-1 mod b_j`, the first factor of the conversion to Q, so
    /// the scaled residues come out ready for it.
    sr_weights: Vec<Vec<ShoupConstant>>,
    backend: Backend,
}

/// Exact conversion of centred residues from base `from` to base `to`.
struct BaseConv {
    from: Vec<Modulus>,
    to: Vec<Modulus>,
    /// `(F/f_i)^-1 mod f_i`, with its Shoup companion.
    f_tilde: Vec<ShoupConstant>,
    /// `1/f_i`, for the estimate of how many times F to subtract.
    f_inv: Vec<f64>,
    /// Per target prime `t_j`: `(F/f_i) mod t_j` for every `i`, then
    /// `t_j - (F mod t_j)` (adding `k` of these subtracts `k·F`).
    weights: Vec<Vec<ShoupConstant>>,
    backend: Backend,
}

fn prod_mod(xs: &[u32], m: &Modulus) -> u32 {
    xs.iter().fold(1u32, |acc, &x| m.mul(acc, m.reduce_u32(x)))
}

fn moduli(primes: &[u32]) -> Vec<Modulus> {
    primes
        .iter()
        .map(|&p| Modulus::new(p as u64).expect("checked prime"))
        .collect()
}

impl BaseConv {
    fn new(from: &[u32], to: &[u32], backend: Backend) -> Self {
        let fm = moduli(from);
        let tm = moduli(to);
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
        let weights = tm
            .iter()
            .map(|m| {
                (0..from.len())
                    .map(|i| m.shoup(prod_mod(&others(i), m)))
                    .chain(std::iter::once(m.shoup(m.neg(prod_mod(from, m)))))
                    .collect()
            })
            .collect();
        BaseConv {
            f_inv: fm.iter().map(|m| 1.0 / m.value() as f64).collect(),
            from: fm,
            to: tm,
            f_tilde,
            weights,
            backend,
        }
    }

    /// Converts `n` coefficients `x` (limb-major residues mod `from`) given
    /// as `y_i = x_i·(F/f_i)^-1 mod f_i` (`y`, limb-major; callers fold that
    /// factor into an earlier step): `dst` receives limb-major residues mod
    /// `to` of the centred representatives. `k` (n words) is scratch.
    ///
    /// The representative in `[0, F)` is `Σ y_i·(F/f_i) - k'·F` for an
    /// integer `k' = floor(Σ y_i/f_i)`; taking `k = round(Σ y_i/f_i)` instead
    /// gives the centred one. The sum is below `from.len()`, so an `f64`
    /// estimate is exact but for values within about 2^-40 of a half, where
    /// either choice is a valid representative of magnitude at most F/2 plus
    /// that slack.
    fn convert(&self, y: &[u32], dst: &mut [u32], n: usize, k: &mut [u32]) {
        let l = self.from.len();
        let mut inputs: Vec<&[u32]> = y[..l * n].chunks(n).collect();
        self.backend.round_weighted_sum(&inputs, &self.f_inv, k);
        inputs.push(k);
        for (j, m) in self.to.iter().enumerate() {
            self.backend
                .lincomb(m, &inputs, &self.weights[j], &mut dst[j * n..(j + 1) * n]);
        }
    }
}

impl MulConsts {
    /// `q` ciphertext primes, `avoid` primes already in use (Q and P).
    pub(crate) fn new(n: usize, t: u32, q: &[u32], avoid: &[u32]) -> Self {
        // B > 2·t·n·Q with margin: bits(t) + log2(n) + bits(Q) + 2 bits,
        // from primes of just under 30 bits, counted by their actual size.
        let q_bits: u32 = q.iter().map(|&p| 32 - p.leading_zeros()).sum();
        let need = ((32 - t.leading_zeros()) + n.trailing_zeros() + q_bits + 2) as f64;
        let mut b = Vec::new();
        let mut have = 0f64;
        for p in ntt_primes(30, n, need as usize / 29 + 1 + avoid.len())
            .expect("enough 30-bit primes")
            .into_iter()
            .filter(|p| !avoid.contains(p))
        {
            if have >= need {
                break;
            }
            have += (p as f64).log2();
            b.push(p);
        }
        assert!(have >= need, "auxiliary base too small");
        let plans_b: Vec<NttPlan> = b
            .iter()
            .map(|&p| NttPlan::new(n, p as u64).expect("NTT prime"))
            .collect();
        // Scale-and-round constants over Q ∪ B.
        let qm = moduli(q);
        let bm = moduli(&b);
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
        let sr_lambda: Vec<u32> = bm
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
        let backend = plans_b[0].backend();
        let b_to_q = BaseConv::new(&b, q, backend);
        let sr_weights = bm
            .iter()
            .enumerate()
            .map(|(j, bj)| {
                let b_tilde = b_to_q.f_tilde[j].value;
                [1, sr_lambda[j]]
                    .into_iter()
                    .chain(sr_omega[j].iter().copied())
                    .map(|w| bj.shoup(bj.mul(w, b_tilde)))
                    .collect()
            })
            .collect();
        MulConsts {
            plans_b,
            q_to_b: BaseConv::new(q, &b, backend),
            b_to_q,
            sr_theta,
            sr_weights,
            backend,
        }
    }

    /// Number of auxiliary primes.
    pub(crate) fn k(&self) -> usize {
        self.plans_b.len()
    }

    /// `round(t·d/Q)` over B from `d` over Q (L·n) and B (K·n), both in
    /// coefficients; then extended to Q. Writes L·n residues into `out_q`.
    #[cfg(test)]
    fn scale_round_to_q(&self, d_q: &[u32], d_b: &[u32], out_q: &mut [u32], n: usize) {
        let mut scratch = vec![0u32; self.scale_round_scratch(n)];
        self.scale_round_to_q_in(d_q, d_b, out_q, n, &mut scratch);
    }

    /// Scratch length for [`Self::scale_round_to_q_in`].
    fn scale_round_scratch(&self, n: usize) -> usize {
        (self.k() + 2) * n
    }

    /// [`Self::scale_round_to_q`] with caller-provided scratch.
    fn scale_round_to_q_in(
        &self,
        d_q: &[u32],
        d_b: &[u32],
        out_q: &mut [u32],
        n: usize,
        scratch: &mut [u32],
    ) {
        let l = self.q_to_b.from.len();
        if l > 4 {
            return self.scale_round_wide(d_q, d_b, out_q, n);
        }
        let kb = self.k();
        let (int, rest) = scratch.split_at_mut(n);
        let (y, rest) = rest.split_at_mut(kb * n);
        let k = &mut rest[..n];
        // The integer part Σ floor(d_i·θ_i) + round(Σ frac) is below
        // Σ q_i < 4·2^30 for at most four primes: it fits a u32.
        let qs: Vec<&[u32]> = d_q.chunks(n).take(l).collect();
        self.backend.floor_frac_sum(&qs, &self.sr_theta, int);
        for (j, bj) in self.b_to_q.from.iter().enumerate() {
            let mut inputs: Vec<&[u32]> = vec![int, &d_b[j * n..(j + 1) * n]];
            inputs.extend_from_slice(&qs);
            self.backend
                .lincomb(bj, &inputs, &self.sr_weights[j], &mut y[j * n..(j + 1) * n]);
        }
        self.b_to_q.convert(y, out_q, n, k);
    }

    /// The scaled tensor of `a = (a0, a1)` and `b = (b0, b1)` (NTT form over
    /// Q, `L·n` each): `out[m] = round(t/Q · d_m)` in coefficients over Q for
    /// `d = (a0·b0, a0·b1 + a1·b0, a1·b1)`. Works in a per-thread arena, so
    /// the only memory it touches besides its inputs and outputs is reused.
    pub(crate) fn tensor_scaled(
        &self,
        plans_q: &[NttPlan],
        a: [&[u32]; 2],
        a_ext: Option<&[u32]>,
        b: [&[u32]; 2],
        out: [&mut [u32]; 3],
    ) {
        let n = self.plans_b[0].degree();
        let (l, kb) = (plans_q.len(), self.k());
        let (lq, lb) = (l * n, kb * n);
        let extra = self.scale_round_scratch(n).max(self.extend_scratch(l, n));
        // The extensions over B in NTT form: `a`'s read where it was
        // precomputed, and a square's (`b` the very slices of `a`) shared.
        let square = std::ptr::eq(a[0], b[0]) && std::ptr::eq(a[1], b[1]);
        let own = usize::from(a_ext.is_none()) + usize::from(!square);
        with_arena(own * 2 * lb + 3 * lq + 3 * lb + extra, |arena| {
            let (ext, rest) = arena.split_at_mut(own * 2 * lb);
            let (tq, rest) = rest.split_at_mut(3 * lq);
            let (tb, scratch) = rest.split_at_mut(3 * lb);
            let (own_a, own_b) = ext.split_at_mut(if a_ext.is_none() { 2 * lb } else { 0 });
            let ea: &[u32] = match a_ext {
                Some(pre) => &pre[..2 * lb],
                None => {
                    for (p, e) in a.into_iter().zip(own_a.chunks_mut(lb)) {
                        self.extend_to_b_ntt(plans_q, p, e, scratch);
                    }
                    own_a
                }
            };
            let eb: &[u32] = if square {
                ea
            } else {
                for (p, e) in b.into_iter().zip(own_b.chunks_mut(lb)) {
                    self.extend_to_b_ntt(plans_q, p, e, scratch);
                }
                own_b
            };
            let (a0b, a1b) = ea.split_at(lb);
            let (b0b, b1b) = eb.split_at(lb);
            tensor(plans_q, n, [a[0], a[1]], [b[0], b[1]], tq);
            tensor(&self.plans_b, n, [a0b, a1b], [b0b, b1b], tb);
            // The tensor's Montgomery factor 2^-32 is undone by the inverse
            // transforms' last layer, at no cost.
            for (limb, plan) in tq.chunks_mut(n).zip(plans_q.iter().cycle()) {
                plan.inverse_scaled(limb, plan.modulus().r());
            }
            for (limb, plan) in tb.chunks_mut(n).zip(self.plans_b.iter().cycle()) {
                plan.inverse_scaled(limb, plan.modulus().r());
            }
            for ((o, dq), db) in out.into_iter().zip(tq.chunks(lq)).zip(tb.chunks(lb)) {
                self.scale_round_to_q_in(dq, db, o, n, scratch);
            }
        });
    }

    /// Words of scratch [`Self::extend_to_b_ntt`] needs.
    fn extend_scratch(&self, l: usize, n: usize) -> usize {
        l * n + n
    }

    /// `p` (NTT form over Q, `L·n`) extended exactly to B, in NTT form
    /// (`out`, `K·n`).
    pub(crate) fn extend_to_b_ntt(
        &self,
        plans_q: &[NttPlan],
        p: &[u32],
        out: &mut [u32],
        scratch: &mut [u32],
    ) {
        let n = self.plans_b[0].degree();
        let l = plans_q.len();
        let (y, rest) = scratch.split_at_mut(l * n);
        // The conversion's first step, x_i·(Q/q_i)^-1, rides on the inverse
        // transforms' last layer.
        for (((limb, from), plan), f) in y
            .chunks_mut(n)
            .zip(p.chunks(n))
            .zip(plans_q)
            .zip(&self.q_to_b.f_tilde)
        {
            plan.inverse_scaled_from(from, limb, f.value);
        }
        self.q_to_b.convert(y, out, n, &mut rest[..n]);
        for (limb, plan) in out.chunks_mut(n).zip(&self.plans_b) {
            plan.forward(limb);
        }
    }

    /// The B-extension (NTT form, `2·K·n`) of a size-2 ciphertext's parts,
    /// for [`Self::tensor_scaled`]'s `a_ext`.
    pub(crate) fn extend_pair(&self, plans_q: &[NttPlan], a: [&[u32]; 2]) -> Vec<u32> {
        let n = self.plans_b[0].degree();
        let lb = self.k() * n;
        let mut out = vec![0u32; 2 * lb];
        let mut scratch = vec![0u32; self.extend_scratch(plans_q.len(), n)];
        for (p, e) in a.into_iter().zip(out.chunks_mut(lb)) {
            self.extend_to_b_ntt(plans_q, p, e, &mut scratch);
        }
        out
    }

    /// [`Self::scale_round_to_q`] for more than four ciphertext primes, where
    /// the integer part needs 64 bits.
    fn scale_round_wide(&self, d_q: &[u32], d_b: &[u32], out_q: &mut [u32], n: usize) {
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
        // The weights include the conversion's first factor (see
        // `sr_weights`), so this is `y` for `convert`. Each term is
        // below 2^60; reducing after each keeps the sum in 64 bits.
        let mut y = vec![0u32; kb * n];
        let mut acc = vec![0u64; n];
        for (j, bj) in self.b_to_q.from.iter().enumerate() {
            let w: Vec<u64> = self.sr_weights[j].iter().map(|c| c.value as u64).collect();
            for ((a, &iv), &d) in acc.iter_mut().zip(&int).zip(&d_b[j * n..(j + 1) * n]) {
                *a = bj.reduce_u64(bj.reduce_u64(iv) as u64 * w[0] + d as u64 * w[1]) as u64;
            }
            for i in 0..l {
                for (a, &d) in acc.iter_mut().zip(&d_q[i * n..(i + 1) * n]) {
                    *a = bj.reduce_u64(*a + d as u64 * w[2 + i]) as u64;
                }
            }
            for (yy, &a) in y[j * n..(j + 1) * n].iter_mut().zip(&acc) {
                *yy = a as u32;
            }
        }
        let mut k = vec![0u32; n];
        self.b_to_q.convert(&y, out_q, n, &mut k);
    }
}

/// `(x0·y0, x0·y1 + x1·y0, x1·y1) · 2^-32` pointwise, into `out` (three
/// polynomials over `plans`, limb-major): Montgomery products, which save
/// the product by `2^32` that leaving the Montgomery domain costs per
/// residue; the caller folds `2^32` into its inverse transforms.
fn tensor(plans: &[NttPlan], n: usize, x: [&[u32]; 2], y: [&[u32]; 2], out: &mut [u32]) {
    let len = plans.len() * n;
    let (d0, rest) = out.split_at_mut(len);
    let (d1, d2) = rest.split_at_mut(len);
    for (i, plan) in plans.iter().enumerate() {
        let r = i * n..(i + 1) * n;
        let (x0, x1, y0, y1) = (
            &x[0][r.clone()],
            &x[1][r.clone()],
            &y[0][r.clone()],
            &y[1][r.clone()],
        );
        let (m, bk) = (plan.modulus(), plan.backend());
        bk.mul_mont(m, x0, y0, &mut d0[r.clone()]);
        // The middle term reduced once.
        bk.mul_sum_mont(m, &[x0, x1], &[y1, y0], &mut d1[r.clone()]);
        bk.mul_mont(m, x1, y1, &mut d2[r]);
    }
}

thread_local! {
    /// Reused working memory of multiplication and key switching: it holds
    /// ciphertext-derived values and public-key products only, never secret
    /// key material. A small pool, so that nested users get separate buffers.
    static ARENA: std::cell::RefCell<Vec<Vec<u32>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Runs `f` on `len` words of one of this thread's reusable buffers
/// (contents unspecified).
pub(crate) fn with_arena<R>(len: usize, f: impl FnOnce(&mut [u32]) -> R) -> R {
    let mut buf = ARENA.with(|a| a.borrow_mut().pop()).unwrap_or_default();
    if buf.len() < len {
        buf.resize(len, 0);
    }
    let r = f(&mut buf[..len]);
    ARENA.with(|a| a.borrow_mut().push(buf));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The vector path of `scale_round_to_q` agrees with the 64-bit one on
    /// random residues and on the extremes.
    #[test]
    fn scale_round_paths_agree() {
        let n = 1024;
        let q = ntt_primes(29, n, 3).unwrap();
        let mc = MulConsts::new(n, 65537, &q, &[]);
        let b: Vec<u32> = mc.b_to_q.from.iter().map(|m| m.value()).collect();
        let mut state = 0x1234_5678_9abc_def0u64;
        let mut next = |p: u32| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 33) % p as u64) as u32
        };
        for round in 0..20 {
            let pick = |p: u32, next: &mut dyn FnMut(u32) -> u32| match round {
                0 => 0,
                1 => p - 1,
                _ => next(p),
            };
            let d_q: Vec<u32> = q
                .iter()
                .flat_map(|&p| (0..n).map(|_| pick(p, &mut next)).collect::<Vec<_>>())
                .collect();
            let d_b: Vec<u32> = b
                .iter()
                .flat_map(|&p| (0..n).map(|_| pick(p, &mut next)).collect::<Vec<_>>())
                .collect();
            let mut fast = vec![0; q.len() * n];
            let mut wide = vec![0; q.len() * n];
            mc.scale_round_to_q(&d_q, &d_b, &mut fast, n);
            mc.scale_round_wide(&d_q, &d_b, &mut wide, n);
            assert_eq!(fast, wide, "round {round}");
        }
    }
}
