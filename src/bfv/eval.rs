//! Homomorphic evaluation. Ciphertexts stay in the NTT domain.

use super::ciphertext::Ciphertext;
use super::encrypt::scaled_message;
use super::galois::{GaloisKeys, RelinKey};
use super::params::Params;
use super::plaintext::Plaintext;
use super::poly::{Ntt, NttMont, RnsPoly};
use crate::error::BfvError;

/// A plaintext lifted to Q (centred) and transformed, ready for repeated
/// [`Evaluator::multiply_plain`]: held in Montgomery form, so that each
/// product by it is one Montgomery product (a gallery's 1:N scores are
/// such products, three fifths of the multiplications of a plain one on
/// AVX2: bench/HISTORY.md).
#[derive(Clone, Debug)]
pub struct PlaintextNtt {
    params: Params,
    poly: RnsPoly<NttMont>,
}

impl PlaintextNtt {
    /// The residues mod prime `i`, in NTT form and Montgomery form (each
    /// evaluation `x` held as `x·2^32 mod q`).
    pub(crate) fn limb(&self, i: usize) -> &[u32] {
        self.poly.limb(i)
    }
}

/// A size-2 ciphertext at the top level with its exact extension to the
/// multiplication base precomputed (NTT form), for repeated
/// [`Evaluator::multiply_prepared`] / [`Evaluator::multiply_relin_prepared`]:
/// a stored template multiplied by many probes pays for its extension once.
#[derive(Clone, Debug)]
pub struct PreparedCiphertext {
    ct: Ciphertext,
    ext: Vec<u32>,
}

impl PreparedCiphertext {
    /// The ciphertext itself.
    pub fn ciphertext(&self) -> &Ciphertext {
        &self.ct
    }

    /// Bytes held, the ciphertext included.
    pub fn memory_bytes(&self) -> usize {
        4 * (self.ext.len()
            + self
                .ct
                .polys
                .iter()
                .map(|p| p.as_slice().len())
                .sum::<usize>())
    }
}

/// A product's three parts before relinearization, in the form its method
/// leaves them.
enum Tensor {
    /// The direct product (`Q ≡ 1 (mod t)`), NTT form over Q.
    Ntt(Vec<RnsPoly<Ntt>>),
    /// The scaled tensor, coefficients over Q.
    Coeff(Vec<RnsPoly<super::poly::Coeff>>),
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
        if a.level() != b.level() {
            return Err(BfvError::LevelMismatch {
                op,
                a: a.level(),
                b: b.level(),
            });
        }
        Ok(())
    }

    /// `a += b`.
    pub fn add_assign(&self, a: &mut Ciphertext, b: &Ciphertext) -> Result<(), BfvError> {
        self.combine_assign("add", a, b, RnsPoly::add_assign)
    }

    /// `a ∘= b` polynomial by polynomial, for `∘` add or sub; a shorter `a`
    /// is padded with zero polynomials.
    fn combine_assign(
        &self,
        op: &'static str,
        a: &mut Ciphertext,
        b: &Ciphertext,
        f: fn(&mut RnsPoly<Ntt>, &RnsPoly<Ntt>, &[crate::ntt::NttPlan]),
    ) -> Result<(), BfvError> {
        self.check_pair(op, a, b)?;
        let plans = &self.params.plans_q()[..a.level()];
        let n = self.params.degree();
        let l = a.level();
        while a.polys.len() < b.polys.len() {
            a.polys.push(RnsPoly::zero(n, l));
        }
        for (x, y) in a.polys.iter_mut().zip(&b.polys) {
            f(x, y, plans);
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
        self.combine_assign("sub", a, b, RnsPoly::sub_assign)
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
        let plans = &self.params.plans_q()[..a.level()];
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
        let l = a.level();
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
            poly: RnsPoly::from_small(&centred, plans).into_ntt_mont(plans),
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
        let plans = &self.params.plans_q()[..a.level()];
        for p in a.polys.iter_mut() {
            p.mul_assign_mont(&pt.poly, plans);
        }
        a.seed = None;
        Ok(())
    }

    /// `out = a · pt`, reusing `out`'s buffers (no allocation once `out` has
    /// the shape of `a`): the hot path of 1:N identification.
    pub fn multiply_plain_into(
        &self,
        a: &Ciphertext,
        pt: &PlaintextNtt,
        out: &mut Ciphertext,
    ) -> Result<(), BfvError> {
        self.multiply_plain_into_with(a, pt, out, false)
    }

    /// [`Evaluator::multiply_plain_into`] for products that are not read
    /// again soon, such as the score ciphertexts of a whole gallery: where
    /// the CPU has them, non-temporal stores write `out` past the cache
    /// ([`crate::Backend::mul_mont_streaming`]). The same values.
    pub fn multiply_plain_streaming_into(
        &self,
        a: &Ciphertext,
        pt: &PlaintextNtt,
        out: &mut Ciphertext,
    ) -> Result<(), BfvError> {
        self.multiply_plain_into_with(a, pt, out, true)
    }

    fn multiply_plain_into_with(
        &self,
        a: &Ciphertext,
        pt: &PlaintextNtt,
        out: &mut Ciphertext,
        streaming: bool,
    ) -> Result<(), BfvError> {
        self.params.check(a.params())?;
        self.params.check(&pt.params)?;
        let n = self.params.degree();
        let l = a.level();
        let plans = &self.params.plans_q()[..l];
        out.params = self.params.clone();
        out.seed = None;
        out.polys.truncate(a.size());
        while out.polys.len() < a.size() {
            out.polys.push(RnsPoly::zero(n, l));
        }
        for (o, x) in out.polys.iter_mut().zip(&a.polys) {
            if o.limbs() != l {
                *o = RnsPoly::zero(n, l);
            }
            if streaming {
                o.mul_from_mont_streaming(x, &pt.poly, plans);
            } else {
                o.mul_from_mont(x, &pt.poly, plans);
            }
        }
        Ok(())
    }

    /// `a · pt`.
    pub fn multiply_plain(&self, a: &Ciphertext, pt: &Plaintext) -> Result<Ciphertext, BfvError> {
        let p = self.prepare_plain(pt)?;
        let mut r = a.clone();
        self.multiply_plain_assign(&mut r, &p)?;
        Ok(r)
    }

    /// `a · b`: a ciphertext of size 3 (decryptable as is, or relinearized
    /// back to size 2). Both inputs must be of size 2 over all of Q.
    pub fn multiply(&self, a: &Ciphertext, b: &Ciphertext) -> Result<Ciphertext, BfvError> {
        let out = match self.tensor(a, None, b)? {
            Tensor::Ntt(d) => d,
            Tensor::Coeff(d) => {
                let plans_q = self.params.plans_q();
                d.into_iter().map(|d| d.into_ntt(plans_q)).collect()
            }
        };
        Ok(Ciphertext::new(&self.params, out))
    }

    /// Precomputes what [`Self::multiply`] does to `a` alone (its exact
    /// extension to the multiplication base), for a ciphertext that will be
    /// multiplied many times. It must be of size 2 at the top level.
    pub fn prepare_multiplicand(&self, a: &Ciphertext) -> Result<PreparedCiphertext, BfvError> {
        self.check_multiplicand(a)?;
        // The direct product needs no extension.
        let ext = match self.params.direct_mul() {
            Some(_) => Vec::new(),
            None => self.params.mul_consts().extend_pair(
                self.params.plans_q(),
                [a.polys[0].as_slice(), a.polys[1].as_slice()],
            ),
        };
        Ok(PreparedCiphertext { ct: a.clone(), ext })
    }

    /// [`Self::multiply`] with a prepared first factor.
    pub fn multiply_prepared(
        &self,
        a: &PreparedCiphertext,
        b: &Ciphertext,
    ) -> Result<Ciphertext, BfvError> {
        self.multiply_prepared_to(a, b, None, self.params.limbs())
    }

    /// `a · b`, relinearized and switched down to `limbs` primes: the same
    /// message as [`Self::multiply_relin_prepared`] followed by
    /// [`Self::mod_switch_to`], for less work. The switch happens on the
    /// scaled tensor's coefficients, before any transform, and the
    /// relinearization then runs at the lower level (the key restricted to
    /// those primes and P). Without a key the result is of size 3.
    pub fn multiply_prepared_to(
        &self,
        a: &PreparedCiphertext,
        b: &Ciphertext,
        rk: Option<&RelinKey>,
        level: usize,
    ) -> Result<Ciphertext, BfvError> {
        self.multiply_prepared_to_plus(a, b, rk, level, None)
    }

    /// [`Self::multiply_prepared_to`], with coefficient-domain polynomials
    /// `plus` (over `level` primes) added to the first two parts of the
    /// product before they are transformed: the same ciphertext as adding
    /// their transforms to the result, with fewer transforms.
    pub(crate) fn multiply_prepared_to_plus(
        &self,
        a: &PreparedCiphertext,
        b: &Ciphertext,
        rk: Option<&RelinKey>,
        level: usize,
        plus: Option<&[RnsPoly<super::poly::Coeff>; 2]>,
    ) -> Result<Ciphertext, BfvError> {
        if let Some(rk) = rk {
            self.params.check(rk.params())?;
        }
        if level == 0 || level > self.params.limbs() {
            return Err(BfvError::LevelMismatch {
                op: "multiply_prepared_to (target must be between 1 and the current level)",
                a: self.params.limbs(),
                b: level,
            });
        }
        let mut d = self.tensor_to_coeff(&a.ct, Some(&a.ext), b)?;
        let plans = self.params.plans_q();
        let n = self.params.degree();
        let mut scratch = super::poly::pool::zeroed(3 * n);
        for p in d.iter_mut() {
            for top in (level..p.limbs()).rev() {
                super::keyswitch::drop_last_prime_coeff(
                    &plans[..=top],
                    &mut p.as_mut_slice()[..(top + 1) * n],
                    &mut scratch,
                );
                p.truncate_limbs(top);
            }
        }
        let plans = &plans[..level];
        if let Some(plus) = plus {
            for (p, x) in d.iter_mut().zip(plus) {
                debug_assert_eq!(x.limbs(), level);
                p.add_assign(x, plans);
            }
        }
        Ok(match rk {
            Some(rk) => self.relin_from_coeff(d, rk),
            None => Ciphertext::new(
                &self.params,
                d.into_iter().map(|p| p.into_ntt(plans)).collect(),
            ),
        })
    }

    /// [`Self::multiply_relin`] with a prepared first factor.
    pub fn multiply_relin_prepared(
        &self,
        a: &PreparedCiphertext,
        b: &Ciphertext,
        rk: &RelinKey,
    ) -> Result<Ciphertext, BfvError> {
        self.multiply_prepared_to(a, b, Some(rk), self.params.limbs())
    }

    fn check_multiplicand(&self, c: &Ciphertext) -> Result<(), BfvError> {
        self.params.check(c.params())?;
        if c.size() != 2 {
            return Err(BfvError::CiphertextSize {
                op: "multiply",
                size: c.size(),
                expected: "2",
            });
        }
        if c.level() != self.params.limbs() {
            return Err(BfvError::LevelMismatch {
                op: "multiply (inputs must be at the top level)",
                a: c.level(),
                b: self.params.limbs(),
            });
        }
        Ok(())
    }

    /// The product's three parts `(d0, d1, d2)` in coefficient form over Q.
    fn tensor_to_coeff(
        &self,
        a: &Ciphertext,
        a_ext: Option<&[u32]>,
        b: &Ciphertext,
    ) -> Result<Vec<RnsPoly<super::poly::Coeff>>, BfvError> {
        Ok(match self.tensor(a, a_ext, b)? {
            Tensor::Ntt(d) => {
                let plans_q = self.params.plans_q();
                d.into_iter().map(|d| d.into_coeff(plans_q)).collect()
            }
            Tensor::Coeff(d) => d,
        })
    }

    /// The product's three parts, in the form its method leaves them: NTT
    /// form for the direct product, coefficients for the scaled tensor
    /// (with `a`'s extension possibly given).
    fn tensor(
        &self,
        a: &Ciphertext,
        a_ext: Option<&[u32]>,
        b: &Ciphertext,
    ) -> Result<Tensor, BfvError> {
        self.check_pair("multiply", a, b)?;
        self.check_multiplicand(a)?;
        self.check_multiplicand(b)?;
        if let Some(direct) = self.params.direct_mul() {
            let l = self.params.limbs();
            let n = self.params.degree();
            let mut out = [0, 1, 2].map(|_| super::poly::pool::zeroed(l * n));
            let [o0, o1, o2] = &mut out;
            direct.tensor(
                self.params.plans_q(),
                [a.polys[0].as_slice(), a.polys[1].as_slice()],
                [b.polys[0].as_slice(), b.polys[1].as_slice()],
                [o0, o1, o2],
            );
            let parts = out.map(|d| RnsPoly::<Ntt>::from_raw(d, n));
            return Ok(Tensor::Ntt(parts.into()));
        }
        Ok(Tensor::Coeff(self.tensor_scaled(a, a_ext, b)))
    }

    /// The scaled tensor `round(t/Q · a ⊗ b)` through the auxiliary base, in
    /// coefficient form over Q (inputs already checked).
    fn tensor_scaled(
        &self,
        a: &Ciphertext,
        a_ext: Option<&[u32]>,
        b: &Ciphertext,
    ) -> Vec<RnsPoly<super::poly::Coeff>> {
        let l = self.params.limbs();
        let n = self.params.degree();
        let mut out = [0, 1, 2].map(|_| super::poly::pool::zeroed(l * n));
        let [o0, o1, o2] = &mut out;
        self.params.mul_consts().tensor_scaled(
            self.params.plans_q(),
            [a.polys[0].as_slice(), a.polys[1].as_slice()],
            a_ext,
            [b.polys[0].as_slice(), b.polys[1].as_slice()],
            [o0, o1, o2],
        );
        out.into_iter()
            .map(|d| RnsPoly::<super::poly::Coeff>::from_raw(d, n))
            .collect()
    }

    /// Relinearizes a size-3 ciphertext to size 2 (a size-2 input is
    /// returned unchanged).
    pub fn relinearize(&self, ct: &Ciphertext, rk: &RelinKey) -> Result<Ciphertext, BfvError> {
        self.params.check(ct.params())?;
        self.params.check(rk.params())?;
        match ct.size() {
            2 => return Ok(ct.clone()),
            3 => {}
            size => {
                return Err(BfvError::CiphertextSize {
                    op: "relinearize",
                    size,
                    expected: "2 or 3",
                })
            }
        }
        self.check_top_level("relinearize", ct)?;
        Ok(self.relin_ntt(ct.polys.clone(), rk))
    }

    /// Relinearizes `(d0, d1, d2)` (NTT form over Q).
    fn relin_ntt(&self, mut d: Vec<RnsPoly<Ntt>>, rk: &RelinKey) -> Ciphertext {
        let d2 = d.pop().expect("three parts");
        let mut c1 = d.pop().expect("three parts");
        let mut c0 = d.pop().expect("three parts");
        let c2 = d2.clone().into_coeff(self.params.plans_q());
        rk.ksw
            .apply_add(&self.params, &c2, Some(&d2), &mut c0, &mut c1);
        Ciphertext::new(&self.params, vec![c0, c1])
    }

    /// `a · b`, relinearized. Fused after the scaled tensor: `d2` goes to
    /// key switching straight from coefficient form, saving its transforms
    /// there and back.
    pub fn multiply_relin(
        &self,
        a: &Ciphertext,
        b: &Ciphertext,
        rk: &RelinKey,
    ) -> Result<Ciphertext, BfvError> {
        self.params.check(rk.params())?;
        Ok(match self.tensor(a, None, b)? {
            Tensor::Ntt(d) => self.relin_ntt(d, rk),
            Tensor::Coeff(d) => self.relin_from_coeff(d, rk),
        })
    }

    /// [`Self::multiply_relin`] plus `plus`, coefficient-form polynomials
    /// over every prime of Q (such as a public-key encryption's
    /// [`PkEncryptionParts::take_coeff_terms`]): they join the tensor's
    /// coefficients, or the relinearization's division by P
    /// (`d + round(x/P) = round((x + P·d)/P)`), before transforms that run
    /// anyway, so they take none of their own. The same ciphertext as the
    /// product plus `plus`'s transforms.
    ///
    /// [`PkEncryptionParts::take_coeff_terms`]: super::PkEncryptionParts::take_coeff_terms
    pub(crate) fn multiply_relin_plus(
        &self,
        a: &Ciphertext,
        b: &Ciphertext,
        rk: &RelinKey,
        plus: [RnsPoly<super::poly::Coeff>; 2],
    ) -> Result<Ciphertext, BfvError> {
        self.params.check(rk.params())?;
        self.check_top_level("multiply_relin_plus", a)?;
        let plans = self.params.plans_q();
        Ok(match self.tensor(a, None, b)? {
            Tensor::Ntt(mut d) => {
                let d2 = d.pop().expect("three parts");
                let c2 = d2.clone().into_coeff(plans);
                let mut out = rk.ksw.apply_onto(&self.params, &c2, Some(&d2), plus);
                for (o, x) in out.iter_mut().zip(&d) {
                    o.add_assign(x, plans);
                }
                Ciphertext::new(&self.params, out.into())
            }
            Tensor::Coeff(mut d) => {
                for (p, x) in d.iter_mut().zip(&plus) {
                    p.add_assign(x, plans);
                }
                self.relin_from_coeff(d, rk)
            }
        })
    }

    /// Relinearizes the scaled tensor `(d0, d1, d2)` (coefficients over the
    /// first primes of Q, any level) straight from coefficient form, saving
    /// `d2`'s transforms there and back.
    fn relin_from_coeff(
        &self,
        mut d: Vec<RnsPoly<super::poly::Coeff>>,
        rk: &RelinKey,
    ) -> Ciphertext {
        let d2 = d.pop().expect("three parts");
        let d1 = d.pop().expect("three parts");
        let d0 = d.pop().expect("three parts");
        Ciphertext::new(
            &self.params,
            rk.ksw.apply_onto(&self.params, &d2, None, [d0, d1]).into(),
        )
    }

    fn check_top_level(&self, op: &'static str, ct: &Ciphertext) -> Result<(), BfvError> {
        if ct.level() != self.params.limbs() {
            return Err(BfvError::LevelMismatch {
                op,
                a: ct.level(),
                b: self.params.limbs(),
            });
        }
        Ok(())
    }

    /// Applies the automorphism `X -> X^g` and switches back to `s`.
    pub fn apply_galois(
        &self,
        ct: &Ciphertext,
        g: u32,
        gk: &GaloisKeys,
    ) -> Result<Ciphertext, BfvError> {
        self.params.check(ct.params())?;
        self.params.check(gk.params())?;
        if ct.size() != 2 {
            return Err(BfvError::CiphertextSize {
                op: "rotate",
                size: ct.size(),
                expected: "2",
            });
        }
        self.check_top_level("rotate", ct)?;
        if g == 1 {
            return Ok(ct.clone());
        }
        let key = gk
            .keys
            .get(&g)
            .ok_or(BfvError::MissingGaloisKey { element: g })?;
        let n = self.params.degree();
        let plans = self.params.plans_q();
        let perm = super::galois::ntt_permutation(n, g);
        let permute = |p: &RnsPoly<Ntt>| {
            let mut out = RnsPoly::<Ntt>::zero(n, p.limbs());
            for j in 0..p.limbs() {
                let src = p.limb(j);
                for (d, &k) in out.limb_mut(j).iter_mut().zip(&perm) {
                    *d = src[k as usize];
                }
            }
            out
        };
        let mut c0 = permute(&ct.polys[0]);
        let c1_ntt = permute(&ct.polys[1]);
        let c1 = c1_ntt.clone().into_coeff(plans);
        let (u0, u1) = key.apply(&self.params, &c1, Some(&c1_ntt));
        c0.add_assign(&u0, plans);
        Ok(Ciphertext::new(&self.params, vec![c0, u1]))
    }

    /// Rotates both rows of the slot matrix left by `step` (right if negative).
    pub fn rotate_rows(
        &self,
        ct: &Ciphertext,
        step: i32,
        gk: &GaloisKeys,
    ) -> Result<Ciphertext, BfvError> {
        let g = super::galois::row_rotation_element(self.params.degree(), step);
        self.apply_galois(ct, g, gk)
    }

    /// Swaps the two rows of the slot matrix.
    pub fn rotate_columns(&self, ct: &Ciphertext, gk: &GaloisKeys) -> Result<Ciphertext, BfvError> {
        let g = super::galois::column_swap_element(self.params.degree());
        self.apply_galois(ct, g, gk)
    }

    /// Drops the last ciphertext prime: `c -> round(c·Q'/Q)` with
    /// `Q' = Q/q_last`. The plaintext is unchanged; the ciphertext shrinks.
    pub fn mod_switch_to_next(&self, ct: &Ciphertext) -> Result<Ciphertext, BfvError> {
        self.params.check(ct.params())?;
        let l = ct.level();
        if l <= 1 {
            return Err(BfvError::LevelMismatch {
                op: "mod_switch_to_next (already at one prime)",
                a: l,
                b: 1,
            });
        }
        let plans = &self.params.plans_q()[..l];
        let polys = ct
            .polys
            .iter()
            .map(|p| super::keyswitch::drop_last_prime(plans, p.clone()))
            .collect();
        Ok(Ciphertext::new(&self.params, polys))
    }

    /// Switches down until the ciphertext is at `level` (over that many primes).
    pub fn mod_switch_to(&self, ct: &Ciphertext, level: usize) -> Result<Ciphertext, BfvError> {
        if level == 0 || level > ct.level() {
            return Err(BfvError::LevelMismatch {
                op: "mod_switch_to (target must be between 1 and the current level)",
                a: ct.level(),
                b: level,
            });
        }
        let mut c = ct.clone();
        while c.level() > level {
            c = self.mod_switch_to_next(&c)?;
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bfv::{BatchEncoder, PkEncryptionParts, Plaintext, Prng, PublicKey, SecretKey};

    /// At auth4096 (`Q ≡ 1 mod t`) the product is the direct one; the scaled
    /// tensor through the auxiliary base, on the same inputs, is a ciphertext
    /// of the same plaintext. Both decrypt to the slot-wise products.
    #[test]
    fn direct_and_scaled_products_decrypt_alike() {
        let params = Params::auth4096();
        assert!(
            params.direct_mul().is_some(),
            "auth4096 multiplies directly"
        );
        let t = params.plaintext_modulus() as u64;
        let n = params.degree();
        let mut prng = Prng::from_seed([11; 32]);
        let sk = SecretKey::generate_with(&params, &mut prng);
        let enc = BatchEncoder::new(&params).unwrap();
        let ev = Evaluator::new(&params);
        let x: Vec<i64> = (0..n as i64).map(|i| (i * 7919 + 13) % t as i64).collect();
        let y: Vec<i64> = (0..n as i64).map(|i| (i * i + 5) % t as i64).collect();
        let want: Vec<i64> = x.iter().zip(&y).map(|(a, b)| (a * b) % t as i64).collect();
        let a = sk
            .encrypt_with(&enc.encode(&x).unwrap(), &mut prng)
            .unwrap();
        let b = sk
            .encrypt_with(&enc.encode(&y).unwrap(), &mut prng)
            .unwrap();
        let plans = params.plans_q();
        let direct = ev.multiply(&a, &b).unwrap();
        let scaled: Vec<RnsPoly<Ntt>> = ev
            .tensor_scaled(&a, None, &b)
            .into_iter()
            .map(|d| d.into_ntt(plans))
            .collect();
        let scaled = Ciphertext::new(&params, scaled);
        assert_ne!(
            direct.polys[0].as_slice(),
            scaled.polys[0].as_slice(),
            "two methods"
        );
        for (name, ct) in [("direct", &direct), ("scaled", &scaled)] {
            let got = enc.decode(&sk.decrypt(ct).unwrap()).unwrap();
            let got: Vec<i64> = got.iter().map(|v| v.rem_euclid(t as i64)).collect();
            assert!(got == want, "{name} product");
        }
        let (bd, bs) = (
            sk.noise_budget(&direct).unwrap(),
            sk.noise_budget(&scaled).unwrap(),
        );
        assert!(bd > bs - 1.0, "direct {bd:.1} bits, scaled {bs:.1}");
    }

    /// A product relinearized with a public-key encryption's coefficient
    /// terms joined in is the same ciphertext as the product plus the
    /// assembled encryption: on both products (direct at auth4096, the
    /// scaled tensor at primes with `Q ≢ 1 mod t`), flooded and not.
    #[test]
    fn an_encryption_joined_to_the_relinearization_is_the_same_ciphertext() {
        let q: Vec<u64> = crate::arith::ntt_primes(27, 4096, 4)
            .unwrap()
            .into_iter()
            .map(u64::from)
            .collect();
        let scaled = Params::builder()
            .degree(4096)
            .plaintext_modulus(65537)
            .batching(true)
            .ciphertext_primes(&q[..3])
            .special_prime(q[3])
            .build()
            .unwrap();
        assert!(
            scaled.direct_mul().is_none(),
            "these primes take the scaled tensor"
        );
        for params in [Params::auth4096(), scaled] {
            let n = params.degree();
            let mut prng = Prng::from_seed([7; 32]);
            let sk = SecretKey::generate_with(&params, &mut prng);
            let pk = PublicKey::new_with(&sk, &mut prng);
            let rk = RelinKey::new_with(&sk, &mut prng);
            let ev = Evaluator::new(&params);
            let m: Vec<u32> = (0..n as u32).map(|i| i % 3).collect();
            let a = pk
                .encrypt_with(&Plaintext::from_coeffs(&params, &m).unwrap(), &mut prng)
                .unwrap();
            let zero = Plaintext::from_coeffs(&params, &[]).unwrap();
            for (positions, k) in [(0..n, 2), (0..0, 0)] {
                let seed = [positions.len() as u8; 32];
                let mut rng = Prng::from_seed(seed);
                let mut parts = PkEncryptionParts::sample(&pk, &mut rng, &zero, params.limbs());
                parts.flood(&params, positions.clone(), k, &mut rng);
                let mut got = ev
                    .multiply_relin_plus(&a, &a, &rk, parts.take_coeff_terms())
                    .unwrap();
                parts.add_key_terms(&pk, &mut got);
                let fresh =
                    pk.encrypt_flooded_with(&zero, positions, k, &mut Prng::from_seed(seed));
                let want = ev
                    .add(&ev.multiply_relin(&a, &a, &rk).unwrap(), &fresh)
                    .unwrap();
                for (g, w) in got.polys.iter().zip(&want.polys) {
                    assert_eq!(g.as_slice(), w.as_slice());
                }
            }
        }
    }
}
