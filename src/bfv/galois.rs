//! Relinearization and Galois (rotation) keys, and the automorphisms they serve.

use std::collections::BTreeMap;

use zeroize::Zeroize;

use super::keys::SecretKey;
use super::keyswitch::KswKey;
use super::params::Params;
use super::poly::{NttMont, RnsPoly};
use super::rng::Prng;
use crate::error::BfvError;
use crate::ntt::bit_reverse;

/// Switches `s²` back to `s`: turns a size-3 product into a size-2 ciphertext.
#[derive(Clone, PartialEq, Eq)]
pub struct RelinKey {
    pub(crate) params: Params,
    pub(crate) ksw: KswKey,
}

impl std::fmt::Debug for RelinKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RelinKey {{ params: {} }}", self.params.id_hex())
    }
}

impl RelinKey {
    /// A relinearization key for `sk`, from the system RNG.
    pub fn new(sk: &SecretKey) -> Result<Self, BfvError> {
        Ok(Self::new_with(sk, &mut Prng::from_os()?))
    }

    /// A relinearization key for `sk` from the given generator.
    pub fn new_with(sk: &SecretKey, rng: &mut Prng) -> Self {
        let params = sk.params();
        let plans = params.plans_qp();
        // s² in Montgomery form, as the key-switching key takes it.
        let mut s = sk.s_qp();
        let mut s2 = RnsPoly::<NttMont>::zero(params.degree(), plans.len());
        s2.mul_from_mont(&s, &s, plans);
        let ksw = KswKey::generate(params, &s, &s2, rng);
        s2.zeroize();
        s.zeroize();
        RelinKey {
            params: params.clone(),
            ksw,
        }
    }

    /// The parameters this key belongs to.
    pub fn params(&self) -> &Params {
        &self.params
    }
}

/// The Galois element of a row rotation by `step` (left for positive steps):
/// `3^step mod 2n`.
pub fn row_rotation_element(n: usize, step: i32) -> u32 {
    let two_n = 2 * n as u64;
    let half = (n / 2) as i64;
    let k = (step as i64).rem_euclid(half) as u64;
    let mut g = 1u64;
    for _ in 0..k {
        g = g * 3 % two_n;
    }
    g as u32
}

/// The Galois element that swaps the two rows: `2n - 1`.
pub fn column_swap_element(n: usize) -> u32 {
    (2 * n - 1) as u32
}

/// Position permutation of the automorphism `X -> X^g` in our NTT order:
/// output position `p` takes input position `perm[p]`.
pub(crate) fn ntt_permutation(n: usize, g: u32) -> Vec<u32> {
    let bits = n.trailing_zeros();
    let two_n = 2 * n as u64;
    (0..n)
        .map(|p| {
            // Position p evaluates at psi^k with k = 2·brv(p) + 1.
            let k = 2 * bit_reverse(p, bits) as u64 + 1;
            let src = (g as u64 * k) % two_n;
            bit_reverse(((src - 1) / 2) as usize, bits) as u32
        })
        .collect()
}

/// The most keys a Galois key set holds: 64 row rotations and the column
/// swap. It bounds the wire form (21.8 MB at auth4096, expanded), so a
/// key set is never larger than what a loader accepts; more steps are
/// refused by [`GaloisKeys::new`].
pub const MAX_GALOIS_KEYS: usize = 65;

/// Keys for a set of Galois automorphisms.
#[derive(Clone, PartialEq, Eq)]
pub struct GaloisKeys {
    pub(crate) params: Params,
    pub(crate) keys: BTreeMap<u32, KswKey>,
}

impl std::fmt::Debug for GaloisKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "GaloisKeys {{ params: {}, elements: {:?} }}",
            self.params.id_hex(),
            self.keys.keys().collect::<Vec<_>>()
        )
    }
}

impl GaloisKeys {
    /// Keys for row rotations by each of `steps` and for the column swap,
    /// from the system RNG. At most [`MAX_GALOIS_KEYS`] distinct keys.
    pub fn new(sk: &SecretKey, steps: &[i32]) -> Result<Self, BfvError> {
        Self::new_with(sk, steps, &mut Prng::from_os()?)
    }

    /// As [`GaloisKeys::new`], from the given generator.
    pub fn new_with(sk: &SecretKey, steps: &[i32], rng: &mut Prng) -> Result<Self, BfvError> {
        let n = sk.params().degree();
        let mut elements: Vec<u32> = steps.iter().map(|&s| row_rotation_element(n, s)).collect();
        elements.push(column_swap_element(n));
        let distinct: std::collections::BTreeSet<u32> =
            elements.iter().copied().filter(|&g| g != 1).collect();
        if distinct.len() > MAX_GALOIS_KEYS {
            return Err(BfvError::TooManyValues {
                what: "Galois keys",
                max: MAX_GALOIS_KEYS,
                actual: distinct.len(),
            });
        }
        Ok(Self::for_elements(sk, &elements, rng))
    }

    /// Keys for the given Galois elements (odd, below 2n).
    pub(crate) fn for_elements(sk: &SecretKey, elements: &[u32], rng: &mut Prng) -> Self {
        let params = sk.params();
        let n = params.degree();
        let plans = params.plans_qp();
        let mut keys = BTreeMap::new();
        let mut s = sk.s_qp();
        for &g in elements {
            if g == 1 || keys.contains_key(&g) {
                continue;
            }
            let perm = ntt_permutation(n, g);
            // s(X^g) in Montgomery form (a permutation of s's evaluations).
            let mut sg = RnsPoly::<NttMont>::zero(n, plans.len());
            for j in 0..plans.len() {
                let src = s.limb(j);
                for (d, &p) in sg.limb_mut(j).iter_mut().zip(&perm) {
                    *d = src[p as usize];
                }
            }
            keys.insert(g, KswKey::generate(params, &s, &sg, rng));
            sg.zeroize();
        }
        s.zeroize();
        GaloisKeys {
            params: params.clone(),
            keys,
        }
    }

    /// The parameters these keys belong to.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// Whether a key for Galois element `g` is present.
    pub fn has_element(&self, g: u32) -> bool {
        g == 1 || self.keys.contains_key(&g)
    }
}
