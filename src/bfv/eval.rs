//! Homomorphic evaluation. Ciphertexts stay in the NTT domain.

use super::ciphertext::Ciphertext;
use super::encrypt::scaled_message;
use super::params::Params;
use super::plaintext::Plaintext;
use super::poly::{Ntt, RnsPoly};
use crate::error::BfvError;

/// A plaintext lifted to Q (centred) and transformed, ready for repeated
/// [`Evaluator::multiply_plain`].
#[derive(Clone, Debug)]
pub struct PlaintextNtt {
    params: Params,
    poly: RnsPoly<Ntt>,
}

/// Evaluates additions and products on ciphertexts of one parameter set.
#[derive(Clone, Debug)]
pub struct Evaluator {
    params: Params,
}

impl Evaluator {
    /// An evaluator for `params`.
    pub fn new(params: &Params) -> Self {
        Self {
            params: params.clone(),
        }
    }

    fn check_pair(&self, op: &'static str, a: &Ciphertext, b: &Ciphertext) -> Result<(), BfvError> {
        self.params.check(a.params())?;
        self.params.check(b.params())?;
        if a.limbs() != b.limbs() {
            return Err(BfvError::LevelMismatch {
                op,
                a: a.limbs(),
                b: b.limbs(),
            });
        }
        Ok(())
    }

    /// `a += b`.
    pub fn add_assign(&self, a: &mut Ciphertext, b: &Ciphertext) -> Result<(), BfvError> {
        self.check_pair("add", a, b)?;
        let plans = &self.params.plans_q()[..a.limbs()];
        let n = self.params.degree();
        let l = a.limbs();
        while a.polys.len() < b.polys.len() {
            a.polys.push(RnsPoly::zero(n, l));
        }
        for (x, y) in a.polys.iter_mut().zip(&b.polys) {
            x.add_assign(y, plans);
        }
        a.seed = None;
        Ok(())
    }

    /// `a + b`.
    pub fn add(&self, a: &Ciphertext, b: &Ciphertext) -> Result<Ciphertext, BfvError> {
        let mut r = a.clone();
        self.add_assign(&mut r, b)?;
        Ok(r)
    }

    /// `a -= b`.
    pub fn sub_assign(&self, a: &mut Ciphertext, b: &Ciphertext) -> Result<(), BfvError> {
        let mut nb = b.clone();
        self.negate_assign(&mut nb)?;
        self.add_assign(a, &nb)
    }

    /// `a - b`.
    pub fn sub(&self, a: &Ciphertext, b: &Ciphertext) -> Result<Ciphertext, BfvError> {
        let mut r = a.clone();
        self.sub_assign(&mut r, b)?;
        Ok(r)
    }

    /// `a = -a`.
    pub fn negate_assign(&self, a: &mut Ciphertext) -> Result<(), BfvError> {
        self.params.check(a.params())?;
        let plans = &self.params.plans_q()[..a.limbs()];
        for p in a.polys.iter_mut() {
            p.neg_assign(plans);
        }
        a.seed = None;
        Ok(())
    }

    /// `a += pt`.
    pub fn add_plain_assign(&self, a: &mut Ciphertext, pt: &Plaintext) -> Result<(), BfvError> {
        self.params.check(a.params())?;
        self.params.check(pt.params())?;
        let l = a.limbs();
        let plans = &self.params.plans_q()[..l];
        let dm = scaled_message(&self.params, pt, l).into_ntt(plans);
        a.polys[0].add_assign(&dm, plans);
        a.seed = None;
        Ok(())
    }

    /// Lifts `pt` (centred) to every prime of Q and transforms it.
    pub fn prepare_plain(&self, pt: &Plaintext) -> Result<PlaintextNtt, BfvError> {
        self.params.check(pt.params())?;
        let t = self.params.plaintext_modulus() as i64;
        let centred: Vec<i64> = pt
            .coeffs()
            .iter()
            .map(|&v| {
                let v = v as i64;
                if v > t / 2 {
                    v - t
                } else {
                    v
                }
            })
            .collect();
        let plans = self.params.plans_q();
        Ok(PlaintextNtt {
            params: self.params.clone(),
            poly: RnsPoly::from_small(&centred, plans).into_ntt(plans),
        })
    }

    /// `a *= pt` for a prepared plaintext.
    pub fn multiply_plain_assign(
        &self,
        a: &mut Ciphertext,
        pt: &PlaintextNtt,
    ) -> Result<(), BfvError> {
        self.params.check(a.params())?;
        self.params.check(&pt.params)?;
        let plans = &self.params.plans_q()[..a.limbs()];
        for p in a.polys.iter_mut() {
            p.mul_assign(&pt.poly, plans);
        }
        a.seed = None;
        Ok(())
    }

    /// `a · pt`.
    pub fn multiply_plain(&self, a: &Ciphertext, pt: &Plaintext) -> Result<Ciphertext, BfvError> {
        let p = self.prepare_plain(pt)?;
        let mut r = a.clone();
        self.multiply_plain_assign(&mut r, &p)?;
        Ok(r)
    }
}
