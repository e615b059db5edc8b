//! Secret and public keys. Both are kept in the NTT domain.

use zeroize::{Zeroize, ZeroizeOnDrop};

use super::params::Params;
use super::poly::{Ntt, NttMont, RnsPoly};
use super::rng::Prng;
use super::sample;
use crate::error::BfvError;

/// A ternary secret key, in NTT form over every prime of Q and P.
///
/// Zeroized on drop; `Debug` prints no part of it.
pub struct SecretKey {
    pub(crate) params: Params,
    /// s in NTT form over q_0..q_{L-1}, in Montgomery form: every product
    /// with it is one Montgomery multiplication. Its limb mod P, needed only
    /// to make key-switching keys, is computed then ([`SecretKey::s_qp`]).
    pub(crate) s: RnsPoly<NttMont>,
    /// s as signed coefficients in {-1, 0, 1}.
    pub(crate) coeffs: Vec<i8>,
}

impl Zeroize for SecretKey {
    fn zeroize(&mut self) {
        self.s.zeroize();
        self.coeffs.zeroize();
    }
}

impl Drop for SecretKey {
    fn drop(&mut self) {
        self.zeroize();
    }
}

impl ZeroizeOnDrop for SecretKey {}

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SecretKey {{ params: {}, .. }}", self.params.id_hex())
    }
}

impl SecretKey {
    /// A fresh key from the system RNG.
    pub fn generate(params: &Params) -> Result<Self, BfvError> {
        Ok(Self::generate_with(params, &mut Prng::from_os()?))
    }

    /// A key from the given generator (deterministic for a seeded [`Prng`]).
    pub fn generate_with(params: &Params, rng: &mut Prng) -> Self {
        let mut coeffs = vec![0i8; params.degree()];
        sample::fill_ternary(rng, &mut coeffs);
        Self::from_coeffs(params, coeffs)
    }

    pub(crate) fn from_coeffs(params: &Params, coeffs: Vec<i8>) -> Self {
        let s = RnsPoly::ternary_to_ntt_mont(&coeffs, params.plans_q());
        SecretKey {
            params: params.clone(),
            s,
            coeffs,
        }
    }

    /// The parameters this key belongs to.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// Limb `i` (mod q_i) of s in NTT and Montgomery form: a product with
    /// it is one Montgomery multiplication.
    pub(crate) fn ntt_mont_limb(&self, i: usize) -> &[u32] {
        self.s.limb(i)
    }

    /// s as signed coefficients in {-1, 0, 1}.
    pub(crate) fn ternary_coeffs(&self) -> &[i8] {
        &self.coeffs
    }

    /// s over Q·P (NTT and Montgomery form), for key-switching keys: the
    /// kept limbs plus one transform for P. The caller zeroizes it.
    pub(crate) fn s_qp(&self) -> RnsPoly<NttMont> {
        let plans = self.params.plans_qp();
        let (n, l) = (self.params.degree(), self.params.limbs());
        let mut p_limb = RnsPoly::ternary_to_ntt_mont(&self.coeffs, &plans[l..]);
        let mut out = RnsPoly::<NttMont>::zero(n, l + 1);
        out.as_mut_slice()[..l * n].copy_from_slice(self.s.as_slice());
        out.limb_mut(l).copy_from_slice(p_limb.limb(0));
        p_limb.zeroize();
        out
    }
}

/// A public key `(p0, p1) = (-(a·s) + e, a)` over Q, in NTT form.
#[derive(Clone, PartialEq, Eq)]
pub struct PublicKey {
    pub(crate) params: Params,
    pub(crate) p0: RnsPoly<Ntt>,
    pub(crate) p1: RnsPoly<Ntt>,
    /// Seed of `p1` (expanded with `expand_uniform`), so the key serializes
    /// as `p0` + seed; `None` for a key loaded from the unseeded form.
    pub(crate) seed: Option<[u8; 32]>,
}

impl std::fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PublicKey {{ params: {} }}", self.params.id_hex())
    }
}

impl PublicKey {
    /// A public key for `sk`, from the system RNG.
    pub fn new(sk: &SecretKey) -> Result<Self, BfvError> {
        Ok(Self::new_with(sk, &mut Prng::from_os()?))
    }

    /// A public key for `sk` from the given generator.
    pub fn new_with(sk: &SecretKey, rng: &mut Prng) -> Self {
        let params = &sk.params;
        let zero = super::encrypt::encrypt_zero_sk(sk, params.limbs(), rng);
        PublicKey {
            params: params.clone(),
            p0: zero.c0,
            p1: zero.c1,
            seed: Some(zero.seed),
        }
    }

    /// The parameters this key belongs to.
    pub fn params(&self) -> &Params {
        &self.params
    }
}
