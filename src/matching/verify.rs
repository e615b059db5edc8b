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

use super::fused::FusedScorer;
use super::ScoreReply;

/// Server-side 1:1 verification for one parameter set and dimension.
#[derive(Clone, Debug)]
pub struct Verifier {
    params: Params,
    ev: Evaluator,
    dim: usize,
    reply_level: usize,
    /// Flood the score positions' noise up to `2^-k` of a plaintext step
    /// (replies for a decider, [`Verifier::for_decider`]).
    flood: Option<u32>,
    /// Tables that read a reply's score positions of `c0` without its
    /// inverse transforms ([`ScoreReply::from_ciphertext_plus`]).
    scores: Option<FusedScorer>,
}

/// The flood of a decider's replies: noise up to 2^-6 of a plaintext step at
/// each score position. A reply kept at every prime has at least 26 bits of
/// noise budget on worst-case inputs (26.9 to 27.7 measured; the test
/// `decider_replies_are_flooded_and_still_exact`), so its own noise `e`,
/// at most 2^-27 of a step, is within statistical distance |e| / 2B <=
/// 2^-22 of the flood per position (2^-17 for all 32 positions of a reply);
/// the flood leaves 5 bits of budget and moves the phase by at most 1/64,
/// well inside the decider's bound of 1/8.
pub const DECIDER_FLOOD_BITS: u32 = 6;

impl Verifier {
    /// A verifier for templates of dimension `dim`. Replies are switched down
    /// to all but one ciphertext prime (two for `auth4096`), the fewest that
    /// keep the measured margin; see docs/PARAMETERS.md.
    pub fn new(params: &Params, dim: usize) -> Result<Self, MatchError> {
        Self::at_level(params, dim, params.limbs().saturating_sub(1).max(1), None)
    }

    /// A verifier whose replies go to a decider rather than to the user: kept
    /// at every ciphertext prime (the budget the flood needs), and flooded
    /// at the score positions ([`DECIDER_FLOOD_BITS`]) so that what the
    /// decider decrypts says nothing about the product's own noise.
    pub fn for_decider(params: &Params, dim: usize) -> Result<Self, MatchError> {
        Self::at_level(params, dim, params.limbs(), Some(DECIDER_FLOOD_BITS))
    }

    /// Replies at `reply_level` primes, flooded as `flood` says.
    fn at_level(
        params: &Params,
        dim: usize,
        reply_level: usize,
        flood: Option<u32>,
    ) -> Result<Self, MatchError> {
        super::quantize::Quantizer::new(params, dim)?;
        Ok(Self {
            params: params.clone(),
            ev: Evaluator::new(params),
            dim,
            reply_level,
            flood,
            scores: FusedScorer::new(params, dim, reply_level),
        })
    }

    /// The compact form of a relinearized reply ([`ScoreReply`]): what a
    /// server sends, about a quarter of the ciphertext's bytes.
    pub fn compact(&self, reply: &Ciphertext) -> Result<ScoreReply, MatchError> {
        ScoreReply::from_ciphertext_plus(reply, None, self.dim, self.scores.as_ref())
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
        let mut fresh = PkEncryptionParts::sample(user_pk, rng, &mask, self.reply_level);
        if let Some(k) = self.flood {
            let per = super::pack::templates_per_ciphertext(&self.params, self.dim);
            let positions = (0..per).map(|k| super::pack::score_position(self.dim, k));
            fresh.flood(&self.params, positions, k, rng);
        }
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
        // One draw per coefficient, the score positions' discarded, so that
        // the stream does not depend on the layout.
        let mut coeffs = vec![0u32; self.params.degree()];
        super::wellformed::fill_uniform_mod(rng, t, &mut coeffs);
        for block in coeffs.chunks_exact_mut(self.dim) {
            block[self.dim - 1] = 0;
        }
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

    /// Worst-case inputs (every quantized component at full magnitude, 32
    /// templates, every secret coefficient nonzero): the unflooded reply at
    /// every prime keeps at least 26 bits of noise budget, the decider's
    /// flooded one 5 (a flood of 2^-6 of a step), and both decrypt exactly.
    #[test]
    fn decider_replies_are_flooded_and_still_exact() {
        use crate::matching::client;
        use crate::matching::worst_case::WorstCase;
        let params = Params::auth4096();
        let d = 128;
        let w = WorstCase::new(&params, d);
        let (sk, q) = (&w.sk, &w.q);
        let mut rng = Prng::from_seed([8; 32]);
        let pk = PublicKey::new_with(sk, &mut rng);
        let rk = RelinKey::new_with(sk, &mut rng);
        let template = client::encrypt_templates_public(&pk, q, &w.templates(), &mut rng).unwrap();
        let probe = client::encrypt_probe_public(&pk, q, &w.flat, &mut rng).unwrap();
        let want = w.scores();
        let decider = Verifier::for_decider(&params, d).unwrap();
        let unflooded = Verifier {
            flood: None,
            ..decider.clone()
        };
        let (mut own, mut flooded, mut phase) = (f64::INFINITY, f64::INFINITY, 0f64);
        for _ in 0..4 {
            let r = unflooded
                .verify_with(&template, &probe, &pk, Some(&rk), &mut rng)
                .unwrap();
            own = own.min(sk.noise_budget(&r).unwrap());
            let r = decider
                .verify_with(&template, &probe, &pk, Some(&rk), &mut rng)
                .unwrap();
            assert_eq!(r.level(), params.limbs());
            flooded = flooded.min(sk.noise_budget(&r).unwrap());
            let compact = decider.compact(&r).unwrap();
            let (_, p) = compact.decrypt_with_phase(sk).unwrap();
            phase = phase.max(p);
            assert_eq!(
                client::decrypt_score_reply(sk, q, &compact, 32)
                    .unwrap()
                    .scores,
                want
            );
            assert_eq!(client::decrypt_scores(sk, q, &r, 32).unwrap().scores, want);
        }
        eprintln!(
            "decider reply, worst-case inputs: own noise budget {own:.1} bits, flooded \
             {flooded:.1} bits, largest compact phase {phase:.4}"
        );
        assert!(own >= 26.0, "own budget {own}");
        assert!((4.5..5.5).contains(&flooded), "flooded budget {flooded}");
        // The flood is there (an unflooded phase is about 2^-12) and inside
        // the decider's bound.
        assert!(
            phase > 1.0 / 256.0 && phase < 1.0 / 64.0 + 0.08,
            "phase {phase}"
        );
    }
}
