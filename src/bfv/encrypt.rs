//! Encryption (secret key, seeded; public key) and decryption.

use super::ciphertext::Ciphertext;
use super::keys::{PublicKey, SecretKey};
use super::params::Params;
use super::plaintext::Plaintext;
use super::poly::{Coeff, Ntt, NttMont, RnsPoly};
use super::rng::Prng;
use super::sample;
use crate::error::BfvError;
use crate::ntt::NttPlan;

/// A fresh encryption of zero under the secret key: `(-(a·s) + e, a)`, with
/// `a` expanded from `seed` directly in NTT form.
pub(crate) struct ZeroSk {
    pub c0: RnsPoly<Ntt>,
    pub c1: RnsPoly<Ntt>,
    pub seed: [u8; 32],
}

/// Uniform residues for each limb, read directly as NTT-domain values (the
/// NTT is a bijection, so uniform stays uniform).
pub(crate) fn expand_uniform(seed: [u8; 32], plans: &[NttPlan], n: usize) -> RnsPoly<Ntt> {
    let mut rng = Prng::from_seed(seed);
    let mut a = RnsPoly::zero(n, plans.len());
    for (i, plan) in plans.iter().enumerate() {
        sample::fill_uniform(&mut rng, plan.modulus().value(), a.limb_mut(i));
    }
    a
}

pub(crate) fn error_poly(rng: &mut Prng, plans: &[NttPlan], n: usize) -> RnsPoly<Coeff> {
    let mut small = vec![0i8; n];
    sample::fill_cbd(rng, &mut small);
    let e = RnsPoly::from_small(&small, plans);
    zeroize::Zeroize::zeroize(&mut small);
    e
}

/// A fresh error plus the scaled message, `e + Δ·m`, in coefficient form
/// over `plans` (the first primes of Q): the same values as
/// `error_poly(..)` with [`scaled_message`] added.
fn error_plus_message(
    params: &Params,
    pt: &Plaintext,
    rng: &mut Prng,
    plans: &[NttPlan],
) -> RnsPoly<Coeff> {
    let mut small = vec![0i8; params.degree()];
    sample::fill_cbd(rng, &mut small);
    let mut x = RnsPoly::zero(params.degree(), plans.len());
    // Δ of the ciphertext's own level: floor(Q_l/t) for its first l primes.
    let delta = &params.level(plans.len()).delta;
    for (i, plan) in plans.iter().enumerate() {
        let m = plan.modulus();
        plan.backend()
            .scaled_plus_small(m, pt.coeffs(), m.shoup(delta[i]), &small, x.limb_mut(i));
    }
    zeroize::Zeroize::zeroize(&mut small);
    x
}

pub(crate) fn encrypt_zero_sk(sk: &SecretKey, limbs: usize, rng: &mut Prng) -> ZeroSk {
    encrypt_sk(sk, limbs, rng, None)
}

/// As [`encrypt_zero_sk`], with `Δ·pt` added to `c0`. The message joins the
/// error before the NTT (the NTT is linear and its output canonical, so the
/// result is the same as adding `NTT(Δ·pt)` afterwards, with one transform
/// fewer).
fn encrypt_sk(sk: &SecretKey, limbs: usize, rng: &mut Prng, pt: Option<&Plaintext>) -> ZeroSk {
    let params = &sk.params;
    let plans = &params.plans_q()[..limbs];
    let n = params.degree();
    let seed = rng.seed();
    let a = expand_uniform(seed, plans, n);
    let e = match pt {
        Some(pt) => error_plus_message(params, pt, rng, plans),
        None => error_poly(rng, plans, n),
    };
    // c0 = e - a·s in place: no temporary polynomial and no copy of the
    // secret (its first `limbs` limbs are read in place).
    let mut c0 = e.into_ntt(plans);
    c0.mul_sub_mont(&a, &sk.s, plans);
    ZeroSk { c0, c1: a, seed }
}

/// `Δ·m` in each of the first `limbs` limbs, where Δ = floor(Q_l/t) for the
/// product Q_l of those primes, as a coefficient-domain poly.
pub(crate) fn scaled_message(params: &Params, pt: &Plaintext, limbs: usize) -> RnsPoly<Coeff> {
    let mut out = RnsPoly::zero(params.degree(), limbs);
    // Δ of the ciphertext's own level: floor(Q_l/t) for its first l primes.
    let delta = &params.level(limbs).delta;
    for (i, plan) in params.plans_q()[..limbs].iter().enumerate() {
        let m = plan.modulus();
        plan.backend()
            .lincomb(m, &[pt.coeffs()], &[m.shoup(delta[i])], out.limb_mut(i));
    }
    out
}

impl SecretKey {
    /// Encrypts `pt` with this secret key, using the system RNG.
    pub fn encrypt(&self, pt: &Plaintext) -> Result<Ciphertext, BfvError> {
        self.encrypt_with(pt, &mut Prng::from_os()?)
    }

    /// Encrypts with the given generator. The result remembers the seed of
    /// its uniform part, so it serializes as seed + one polynomial.
    pub fn encrypt_with(&self, pt: &Plaintext, rng: &mut Prng) -> Result<Ciphertext, BfvError> {
        self.params.check(pt.params())?;
        let z = encrypt_sk(self, self.params.limbs(), rng, Some(pt));
        Ok(Ciphertext::new_seeded(&self.params, z.c0, z.c1, z.seed))
    }

    /// Decrypts a ciphertext of size 2 or 3 (the size-3 result of a
    /// multiplication decrypts without relinearization).
    pub fn decrypt(&self, ct: &Ciphertext) -> Result<Plaintext, BfvError> {
        self.params.check(ct.params())?;
        // The phase is the message scaled up (plus noise): as secret as the
        // plaintext, so it is zeroed when dropped.
        let x = zeroize::Zeroizing::new(self.phase(ct)?);
        Ok(Plaintext::from_reduced(
            &self.params,
            super::scaling::round_to_t(&self.params, &x),
        ))
    }

    /// `c0 + c1·s (+ c2·s²)` over the ciphertext's primes, in coefficients.
    pub(crate) fn phase(&self, ct: &Ciphertext) -> Result<RnsPoly<Coeff>, BfvError> {
        let limbs = ct.level();
        let plans = &self.params.plans_q()[..limbs];
        let n = self.params.degree();
        let mut x = ct.polys()[0].clone();
        // `s` has a limb for every prime of Q·P; the products read the first
        // `limbs` of them.
        x.mul_acc_mont(&ct.polys()[1], &self.s, plans);
        if let Some(c2) = ct.polys().get(2) {
            // s·2^32 times s·2^32 times 2^-32: s² in Montgomery form.
            let mut s2 = RnsPoly::<NttMont>::zero(n, limbs);
            s2.mul_from_mont(&self.s, &self.s, plans);
            x.mul_acc_mont(c2, &s2, plans);
            zeroize::Zeroize::zeroize(&mut s2);
        }
        Ok(x.into_coeff(plans))
    }

    /// Decrypts only the coefficients at `positions` (each below n), in
    /// `[0, t)`: the key holder's fast path when a few coefficients matter.
    pub fn decrypt_coefficients(
        &self,
        ct: &Ciphertext,
        positions: &[usize],
    ) -> Result<Vec<u32>, BfvError> {
        self.params.check(ct.params())?;
        let n = self.params.degree();
        if let Some(&p) = positions.iter().find(|&&p| p >= n) {
            return Err(BfvError::TooManyValues {
                what: "coefficient position",
                max: n - 1,
                actual: p,
            });
        }
        let x = self.phase(ct)?;
        Ok(super::scaling::round_coeffs_to_t(
            &self.params,
            &x,
            positions,
        ))
    }

    /// Invariant noise budget in bits (diagnostic, native tests and tools):
    /// `log2(Q / (2·t·|v|∞)) `, where `v` is the noise of the phase.
    pub fn noise_budget(&self, ct: &Ciphertext) -> Result<f64, BfvError> {
        let x = self.phase(ct)?;
        super::scaling::noise_budget(&self.params, &x, ct.level())
    }
}

impl PublicKey {
    /// Encrypts `pt` with this public key, using the system RNG. Public-key
    /// ciphertexts are never seeded.
    pub fn encrypt(&self, pt: &Plaintext) -> Result<Ciphertext, BfvError> {
        self.encrypt_with(pt, &mut Prng::from_os()?)
    }

    /// Encrypts with the given generator.
    pub fn encrypt_with(&self, pt: &Plaintext, rng: &mut Prng) -> Result<Ciphertext, BfvError> {
        self.params.check(pt.params())?;
        let (c0, c1) = encrypt_pk(self, rng, pt, self.params.limbs());
        Ok(Ciphertext::new(&self.params, vec![c0, c1]))
    }

    /// Encrypts straight at a lower level: over the first `limbs`
    /// ciphertext primes only (the public key reduced to them is a public
    /// key of that smaller modulus). Cheaper than encrypting at the top and
    /// switching down, for a ciphertext that is only added to one at that
    /// level.
    pub fn encrypt_at_with(
        &self,
        pt: &Plaintext,
        limbs: usize,
        rng: &mut Prng,
    ) -> Result<Ciphertext, BfvError> {
        self.params.check(pt.params())?;
        if limbs == 0 || limbs > self.params.limbs() {
            return Err(BfvError::LevelMismatch {
                op: "encrypt_at (the level must be between 1 and the parameter count)",
                a: limbs,
                b: self.params.limbs(),
            });
        }
        let (c0, c1) = encrypt_pk(self, rng, pt, limbs);
        Ok(Ciphertext::new(&self.params, vec![c0, c1]))
    }
}

impl PublicKey {
    /// A fresh encryption of `pt` over every prime whose noise is flooded at
    /// `positions` ([`PkEncryptionParts::flood`], `2^-k` of a step): added
    /// to a ciphertext under this key, it re-randomizes it and hides its own
    /// noise at those positions from whoever decrypts. The reference the
    /// tests hold [`Evaluator::multiply_relin_plus`](super::Evaluator) to.
    #[cfg(test)]
    pub(crate) fn encrypt_flooded_with(
        &self,
        pt: &Plaintext,
        positions: impl Iterator<Item = usize>,
        k: u32,
        rng: &mut Prng,
    ) -> Ciphertext {
        let limbs = self.params.limbs();
        let plans = &self.params.plans_q()[..limbs];
        let mut parts = PkEncryptionParts::sample(self, rng, pt, limbs);
        parts.flood(&self.params, positions, k, rng);
        let PkEncryptionParts { coeff: [e1, e2], u } = parts;
        let mut c0 = e1.into_ntt(plans);
        let mut c1 = e2.into_ntt(plans);
        add_key_terms(self, &u, &mut c0, &mut c1);
        Ciphertext::new(&self.params, vec![c0, c1])
    }
}

/// `(p0·u + e1 + Δ·pt, p1·u + e2)` with ternary `u` (the message joins `e1`
/// before the NTT, as in [`encrypt_sk`]).
fn encrypt_pk(
    pk: &PublicKey,
    rng: &mut Prng,
    pt: &Plaintext,
    limbs: usize,
) -> (RnsPoly<Ntt>, RnsPoly<Ntt>) {
    let plans = &pk.params.plans_q()[..limbs];
    let PkEncryptionParts { coeff: [e1, e2], u } = PkEncryptionParts::sample(pk, rng, pt, limbs);
    let mut c0 = e1.into_ntt(plans);
    let mut c1 = e2.into_ntt(plans);
    add_key_terms(pk, &u, &mut c0, &mut c1);
    (c0, c1)
}

/// A public-key encryption of a plaintext at some level, before it is
/// assembled: the coefficient-domain terms `(e1 + Δ·pt, e2)` and the
/// transformed ternary `u` of the key terms `(p0·u, p1·u)`. A caller that
/// already has coefficient-domain polynomials on their way to the NTT
/// domain (as verification does) adds the first terms there, saving their
/// transforms.
pub(crate) struct PkEncryptionParts {
    coeff: [RnsPoly<Coeff>; 2],
    u: RnsPoly<NttMont>,
}

impl PkEncryptionParts {
    /// Draws `u`, then `e1`, then `e2` from `rng`.
    pub(crate) fn sample(pk: &PublicKey, rng: &mut Prng, pt: &Plaintext, limbs: usize) -> Self {
        let params = &pk.params;
        let plans = &params.plans_q()[..limbs];
        let n = params.degree();
        let mut small = vec![0i8; n];
        sample::fill_ternary(rng, &mut small);
        let u = RnsPoly::ternary_to_ntt_mont(&small, plans);
        zeroize::Zeroize::zeroize(&mut small);
        let e1 = error_plus_message(params, pt, rng, plans);
        let e2 = error_poly(rng, plans, n);
        PkEncryptionParts { coeff: [e1, e2], u }
    }

    /// Adds to `e1` the flood of [`flood`] at `positions`.
    pub(crate) fn flood(
        &mut self,
        params: &super::Params,
        positions: impl Iterator<Item = usize>,
        k: u32,
        rng: &mut Prng,
    ) {
        flood(&mut self.coeff[0], params, positions, k, rng);
    }

    /// The coefficient-domain terms `(e1 + Δ·pt, e2)`.
    pub(crate) fn coeff_terms(&self) -> &[RnsPoly<Coeff>; 2] {
        &self.coeff
    }

    /// [`Self::coeff_terms`] taken out, for a caller that adds them where
    /// its own polynomials are in coefficient form; [`Self::add_key_terms`]
    /// still adds the rest.
    pub(crate) fn take_coeff_terms(&mut self) -> [RnsPoly<Coeff>; 2] {
        let n = self.coeff[0].degree();
        std::mem::replace(
            &mut self.coeff,
            [0, 1].map(|_| RnsPoly::from_raw(Vec::new(), n)),
        )
    }

    /// `c0 += p0·u`, `c1 += p1·u` on a size-2 ciphertext in NTT form at the
    /// level of `u`: with [`Self::coeff_terms`] added before its last
    /// transforms, it is then the sum with this encryption.
    pub(crate) fn add_key_terms(&self, pk: &PublicKey, ct: &mut Ciphertext) {
        let (c0, rest) = ct.polys.split_at_mut(1);
        add_key_terms(pk, &self.u, &mut c0[0], &mut rest[0]);
    }
}

/// `c0 += p0·u`, `c1 += p1·u` (NTT form, at the level of `u`).
fn add_key_terms(
    pk: &PublicKey,
    u: &RnsPoly<NttMont>,
    c0: &mut RnsPoly<Ntt>,
    c1: &mut RnsPoly<Ntt>,
) {
    let plans = &pk.params.plans_q()[..u.limbs()];
    c0.mul_acc_mont(&pk.p0, u, plans);
    c1.mul_acc_mont(&pk.p1, u, plans);
}

/// Adds to `poly` (coefficient form, `e1` of an encryption or `c0` of a
/// ciphertext), at each of `positions` (distinct), an integer drawn uniformly
/// from `[-B, B]` with `B = floor(Δ / 2^k)` for the parts' level: noise
/// flooding. Whoever decrypts then reads, at those positions, the
/// ciphertext's own noise plus this one; the two noises' sum is within
/// statistical distance `|e| / (2B + 1)` of the flood alone, so it says
/// next to nothing about `e` (which depends on the inputs and on
/// randomness the decrypting party never saw). The phase moves by at most
/// `2^-k` of a plaintext step.
pub(crate) fn flood(
    poly: &mut RnsPoly<Coeff>,
    params: &Params,
    positions: impl Iterator<Item = usize>,
    k: u32,
    rng: &mut Prng,
) {
    let limbs = poly.limbs();
    let plans = &params.plans_q()[..limbs];
    // Q of the level fits in 128 bits (at most four primes below 2^30).
    let q: u128 = plans.iter().map(|p| p.modulus().value() as u128).product();
    let bound = (q / params.plaintext_modulus() as u128) >> k;
    let width = 2 * bound + 1;
    let bits = 128 - width.leading_zeros();
    let positions: Vec<usize> = positions.collect();
    let count = positions.len();
    if count == 0 {
        return;
    }
    // Each draw r is kept as r + Q − B, below 2Q: the same residues as
    // r − B, with no sign. Its 32-bit words go to rows (word w of every
    // position in row w), so that each prime's residues are one linear
    // combination of the rows with weights 2^(32w) mod q_i (the backend's
    // `lincomb`), the coefficients themselves a last row of weight 1.
    let words = (128 - (q + bound).leading_zeros()).div_ceil(32) as usize;
    let mut rows: [Vec<u32>; 4] = std::array::from_fn(|_| vec![0u32; count]);
    {
        let [r0, r1, r2, r3] = &mut rows;
        let draws = r0.iter_mut().zip(r1.iter_mut()).zip(r2.iter_mut()).zip(r3);
        for (((w0, w1), w2), w3) in draws {
            let r = draw_below(rng, width, bits) + (q - bound);
            [*w0, *w1, *w2, *w3] = [0, 32, 64, 96].map(|s| (r >> s) as u32);
        }
    }
    // Contiguous positions (a whole polynomial) are read and written in
    // place; others are gathered and scattered.
    let start = positions[0];
    let contiguous = positions.iter().enumerate().all(|(i, &j)| j == start + i);
    let (mut current, mut sums) = (vec![0u32; count], vec![0u32; count]);
    for (i, plan) in plans.iter().enumerate() {
        let m = plan.modulus();
        let limb = poly.limb_mut(i);
        if contiguous {
            current.copy_from_slice(&limb[start..start + count]);
        } else {
            for (c, &j) in current.iter_mut().zip(&positions) {
                *c = limb[j];
            }
        }
        let v = m.value() as u128;
        let weights: Vec<_> = (0..words)
            .map(|w| m.shoup(((1u128 << (32 * w)) % v) as u32))
            .chain([m.shoup(1)])
            .collect();
        let inputs: Vec<&[u32]> = rows[..words]
            .iter()
            .map(Vec::as_slice)
            .chain([&current[..]])
            .collect();
        if contiguous {
            plan.backend()
                .lincomb(m, &inputs, &weights, &mut limb[start..start + count]);
        } else {
            plan.backend().lincomb(m, &inputs, &weights, &mut sums);
            for (&s, &j) in sums.iter().zip(&positions) {
                limb[j] = s;
            }
        }
    }
}

/// Uniform in `[0, width)` by rejection from `bits`-bit draws, each of
/// `ceil(bits / 32)` words of `rng` (the first one lowest).
#[inline(always)]
fn draw_below(rng: &mut Prng, width: u128, bits: u32) -> u128 {
    let mask = u128::MAX >> (128 - bits);
    loop {
        let x = match bits {
            0..=32 => rng.next_u32() as u128,
            33..=64 => rng.next_u64() as u128,
            65..=96 => rng.next_u64() as u128 | (rng.next_u32() as u128) << 64,
            _ => rng.next_u64() as u128 | (rng.next_u64() as u128) << 64,
        } & mask;
        if x < width {
            return x;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The flood's residues against the same draws reduced with u128
    /// remainders: every level of `auth4096`, and four 30-bit primes at
    /// n = 8192 (draws past 96 bits).
    #[test]
    fn flood_matches_u128_remainders() {
        let primes: Vec<u64> = crate::arith::ntt_primes(30, 8192, 5)
            .unwrap()
            .into_iter()
            .map(u64::from)
            .collect();
        let wide = Params::builder()
            .degree(8192)
            .plaintext_modulus(65537)
            .ciphertext_primes(&primes[..4])
            .special_prime(primes[4])
            .build()
            .unwrap();
        let auth = Params::auth4096();
        let cases = (1..=auth.limbs())
            .map(|l| (&auth, l))
            .chain([(&wide, wide.limbs())]);
        for (params, limbs) in cases {
            let n = params.degree();
            let moduli: Vec<u128> = params.plans_q()[..limbs]
                .iter()
                .map(|p| p.modulus().value() as u128)
                .collect();
            let mut before = RnsPoly::<Coeff>::zero(n, limbs);
            for (i, &m) in moduli.iter().enumerate() {
                for (j, c) in before.limb_mut(i).iter_mut().enumerate() {
                    *c = ((j as u128 * 2_654_435_761) % m) as u32;
                }
            }
            // A whole polynomial (read in place) and scattered positions
            // in descending order (gathered).
            let spread: Vec<usize> = (0..n).rev().step_by(97).collect();
            for (k, positions) in [0u32, 2, 6, 20]
                .into_iter()
                .flat_map(|k| [(k, (0..n).collect::<Vec<_>>()), (k, spread.clone())])
            {
                let seed = [k as u8 + 10 * limbs as u8; 32];
                let mut fast = before.clone();
                let at = positions.iter().copied();
                flood(&mut fast, params, at, k, &mut Prng::from_seed(seed));
                let q: u128 = moduli.iter().product();
                let bound = (q / params.plaintext_modulus() as u128) >> k;
                let width = 2 * bound + 1;
                let bits = 128 - width.leading_zeros();
                let mut r = Prng::from_seed(seed);
                // Each draw takes ceil(bits/32) words, the first lowest.
                let words = bits.div_ceil(32);
                let mut want = before.clone();
                for &j in &positions {
                    let x = loop {
                        let x = (0..words)
                            .map(|w| (r.next_u32() as u128) << (32 * w))
                            .sum::<u128>()
                            & (u128::MAX >> (128 - bits));
                        if x < width {
                            break x;
                        }
                    };
                    for (i, &m) in moduli.iter().enumerate() {
                        let c = &mut want.limb_mut(i)[j];
                        *c = ((*c as u128 + x % m + m - bound % m) % m) as u32;
                    }
                }
                for i in 0..limbs {
                    let count = positions.len();
                    assert_eq!(fast.limb(i), want.limb(i), "limbs {limbs} k {k} {count}");
                }
            }
        }
    }
}
