//! 1:1 verification on the server: template × probe, then response hygiene.
//!
//! The reply goes back to the key holder, who decrypts it; the server must
//! make sure that decrypting it reveals the scores and nothing else:
//!
//! 1. multiply the template and probe ciphertexts;
//! 2. switch the product down to the fewest primes that still decrypt
//!    correctly;
//! 3. relinearize there, if the caller has a relinearization key (the key
//!    holder can decrypt the size-3 product without it);
//! 4. mask and re-randomize at once: add a fresh public-key encryption, under
//!    the user's public key and at the reply's level, of uniform values mod t
//!    on every coefficient that is not a score position. Those coefficients
//!    then decrypt to fresh uniform noise, and the reply's randomness is
//!    independent of the inputs'.

use crate::bfv::{
    Ciphertext, Evaluator, Params, PkEncryptionParts, PreparedCiphertext, Prng, PublicKey, RelinKey,
};
use crate::error::MatchError;

use super::pack::is_score_position;
use super::ScoreReply;

/// Server-side 1:1 verification for one parameter set and dimension.
#[derive(Clone, Debug)]
pub struct Verifier {
    params: Params,
    ev: Evaluator,
    dim: usize,
    reply_level: usize,
}

impl Verifier {
    /// A verifier for templates of dimension `dim`. Replies are switched down
    /// to all but one ciphertext prime (two for `auth4096`), the fewest that
    /// keep the measured margin; see docs/PARAMETERS.md.
    pub fn new(params: &Params, dim: usize) -> Result<Self, MatchError> {
        super::quantize::Quantizer::new(params, dim)?;
        Ok(Self {
            params: params.clone(),
            ev: Evaluator::new(params),
            dim,
            reply_level: params.limbs().saturating_sub(1).max(1),
        })
    }

    /// The compact form of a relinearized reply ([`ScoreReply`]): what a
    /// server sends, about a quarter of the ciphertext's bytes.
    pub fn compact(&self, reply: &Ciphertext) -> Result<ScoreReply, MatchError> {
        ScoreReply::from_ciphertext(reply, self.dim)
    }

    /// The number of ciphertext primes of a reply.
    pub fn reply_level(&self) -> usize {
        self.reply_level
    }

    /// Verifies with the system RNG.
    pub fn verify(
        &self,
        template: &Ciphertext,
        probe: &Ciphertext,
        user_pk: &PublicKey,
        rk: Option<&RelinKey>,
    ) -> Result<Ciphertext, MatchError> {
        self.verify_with(template, probe, user_pk, rk, &mut Prng::from_os()?)
    }

    /// Verifies with the given generator (for the mask and its fresh
    /// public-key encryption).
    pub fn verify_with(
        &self,
        template: &Ciphertext,
        probe: &Ciphertext,
        user_pk: &PublicKey,
        rk: Option<&RelinKey>,
        rng: &mut Prng,
    ) -> Result<Ciphertext, MatchError> {
        let template = self.prepare_template(template)?;
        self.verify_prepared_with(&template, probe, user_pk, rk, rng)
    }

    /// Checks a stored template and precomputes its part of the
    /// multiplication, so that each verification against it costs less
    /// (what a server keeps in its cache of recently used templates).
    pub fn prepare_template(
        &self,
        template: &Ciphertext,
    ) -> Result<PreparedCiphertext, MatchError> {
        self.params.check(template.params())?;
        if template.is_transparent() {
            return Err(MatchError::TransparentCiphertext);
        }
        Ok(self.ev.prepare_multiplicand(template)?)
    }

    /// [`Self::verify`] against a prepared template.
    pub fn verify_prepared(
        &self,
        template: &PreparedCiphertext,
        probe: &Ciphertext,
        user_pk: &PublicKey,
        rk: Option<&RelinKey>,
    ) -> Result<Ciphertext, MatchError> {
        self.verify_prepared_with(template, probe, user_pk, rk, &mut Prng::from_os()?)
    }

    /// [`Self::verify_with`] against a prepared template.
    pub fn verify_prepared_with(
        &self,
        template: &PreparedCiphertext,
        probe: &Ciphertext,
        user_pk: &PublicKey,
        rk: Option<&RelinKey>,
        rng: &mut Prng,
    ) -> Result<Ciphertext, MatchError> {
        self.params.check(probe.params())?;
        if probe.is_transparent() {
            return Err(MatchError::TransparentCiphertext);
        }
        // Multiply, switch down to the reply's primes (on the scaled
        // tensor's coefficients) and relinearize there; then mask and
        // re-randomize in one fresh encryption of the mask at that level:
        // the reply's randomness comes entirely from that encryption.
        // The fresh encryption's coefficient-domain terms join the product
        // before its last transforms, its key terms after: the same
        // ciphertext as `multiply_prepared_to` plus `encrypt_at_with`.
        self.params.check(user_pk.params())?;
        let mask = self.mask(rng)?;
        let fresh = PkEncryptionParts::sample(user_pk, rng, &mask, self.reply_level);
        let mut reply = self.ev.multiply_prepared_to_plus(
            template,
            probe,
            rk,
            self.reply_level,
            Some(fresh.coeff_terms()),
        )?;
        fresh.add_key_terms(user_pk, &mut reply);
        Ok(reply)
    }

    /// Uniform values mod t on every coefficient except the score positions.
    fn mask(&self, rng: &mut Prng) -> Result<crate::bfv::Plaintext, MatchError> {
        let t = self.params.plaintext_modulus();
        // Lemire's multiply-and-reject: the high half of x·t is uniform in
        // [0, t) once draws whose low half falls below (2^32 - t) mod t are
        // discarded (for t = 65537, 1 in 65537). One draw and one multiply
        // per coefficient, no division; rejection depends only on discarded
        // draws.
        let threshold = t.wrapping_neg() % t;
        let coeffs: Vec<u32> = (0..self.params.degree())
            .map(|i| {
                let r = loop {
                    let m = rng.next_u32() as u64 * t as u64;
                    if m as u32 >= threshold {
                        break (m >> 32) as u32;
                    }
                };
                if is_score_position(self.dim, i) {
                    0
                } else {
                    r
                }
            })
            .collect();
        Ok(crate::bfv::Plaintext::from_coeffs(&self.params, &coeffs)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bfv::SecretKey;

    /// The fused reply is exactly the product switched down, plus a fresh
    /// public-key encryption of the mask drawn from the same stream.
    #[test]
    fn fused_reply_equals_product_plus_fresh_encryption() {
        let params = Params::auth4096();
        let mut rng = Prng::from_seed([5; 32]);
        let sk = SecretKey::generate_with(&params, &mut rng);
        let pk = PublicKey::new_with(&sk, &mut rng);
        let rk = RelinKey::new_with(&sk, &mut rng);
        let v = Verifier::new(&params, 128).unwrap();
        let pt = |k: u32| {
            let c: Vec<u32> = (0..params.degree() as u32).map(|i| (i * k) % 97).collect();
            crate::bfv::Plaintext::from_coeffs(&params, &c).unwrap()
        };
        let template = v
            .prepare_template(&sk.encrypt_with(&pt(3), &mut rng).unwrap())
            .unwrap();
        let probe = sk.encrypt_with(&pt(5), &mut rng).unwrap();
        for relin in [Some(&rk), None] {
            let fused = v
                .verify_prepared_with(&template, &probe, &pk, relin, &mut Prng::from_seed([9; 32]))
                .unwrap();
            let mut again = Prng::from_seed([9; 32]);
            let mut want =
                v.ev.multiply_prepared_to(&template, &probe, relin, v.reply_level)
                    .unwrap();
            let mask = v.mask(&mut again).unwrap();
            let fresh = pk
                .encrypt_at_with(&mask, v.reply_level, &mut again)
                .unwrap();
            v.ev.add_assign(&mut want, &fresh).unwrap();
            assert_eq!(fused, want, "relinearized: {}", relin.is_some());
        }
    }
}
