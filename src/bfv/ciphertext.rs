//! Ciphertexts: two or three RNS polynomials in NTT form.

use super::params::Params;
use super::poly::{Coeff, Ntt, RnsPoly};

/// A BFV ciphertext `(c0, c1[, c2])` in NTT form over the first `limbs()`
/// primes of Q.
#[derive(Clone, PartialEq, Eq)]
pub struct Ciphertext {
    pub(crate) params: Params,
    pub(crate) polys: Vec<RnsPoly<Ntt>>,
    /// Seed of `c1` while it is still the uniform polynomial expanded from it
    /// (fresh secret-key encryptions); cleared by any operation.
    pub(crate) seed: Option<[u8; 32]>,
}

impl std::fmt::Debug for Ciphertext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Ciphertext {{ params: {}, size: {}, limbs: {}, seeded: {} }}",
            self.params.id_hex(),
            self.polys.len(),
            self.level(),
            self.seed.is_some()
        )
    }
}

impl Ciphertext {
    pub(crate) fn new(params: &Params, polys: Vec<RnsPoly<Ntt>>) -> Self {
        Self {
            params: params.clone(),
            polys,
            seed: None,
        }
    }

    pub(crate) fn new_seeded(
        params: &Params,
        c0: RnsPoly<Ntt>,
        c1: RnsPoly<Ntt>,
        seed: [u8; 32],
    ) -> Self {
        Self {
            params: params.clone(),
            polys: vec![c0, c1],
            seed: Some(seed),
        }
    }

    /// Number of polynomials (2 fresh, 3 after a multiplication).
    pub fn size(&self) -> usize {
        self.polys.len()
    }

    /// Its level: the number of ciphertext primes it is defined over.
    pub fn level(&self) -> usize {
        self.polys[0].limbs()
    }

    /// The parameters.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// Whether `c1` is still expanded from a seed (serializes compactly).
    pub fn is_seeded(&self) -> bool {
        self.seed.is_some()
    }

    pub(crate) fn polys(&self) -> &[RnsPoly<Ntt>] {
        &self.polys
    }

    /// The residues of polynomial `k` mod prime `i`, in NTT form.
    pub(crate) fn residues(&self, k: usize, i: usize) -> &[u32] {
        self.polys[k].limb(i)
    }

    /// Polynomial `k` in coefficient form (one inverse transform per limb).
    pub(crate) fn coeff_poly(&self, k: usize) -> RnsPoly<Coeff> {
        let plans = &self.params.plans_q()[..self.level()];
        self.polys[k].clone().into_coeff(plans)
    }

    /// Whether every polynomial past `c0` is zero (a "transparent" ciphertext
    /// that anyone can decrypt).
    pub fn is_transparent(&self) -> bool {
        self.polys[1..]
            .iter()
            .all(|p| p.as_slice().iter().all(|&v| v == 0))
    }
}
