//! The decider's 1:N steps, under a gallery's key: ranking the matcher's
//! score replies into a signed identification (ids, never scores), and
//! erasing a template from a masked gallery ciphertext.

use rayon::prelude::*;
use zeroize::Zeroize;

use crate::bfv::Ciphertext;
use crate::error::MatchError;
use crate::matching::pack::templates_per_ciphertext;
use crate::matching::wellformed::CheckReplies;
use crate::server::verdict::Identification;

use super::replies::Candidate;
use super::{DecideError, Decider, KeyKind, KeyLabel, MAX_PHASE};

/// What an identification is asked for.
#[derive(Clone, Debug)]
pub struct IdentifyRequest<'a> {
    /// The gallery's key.
    pub label: KeyLabel<'a>,
    /// The relying party (the identification's `aud`).
    pub audience: &'a str,
    /// The relying party's nonce (the identification's `nonce`).
    pub nonce: &'a str,
    /// Most template indices named.
    pub top_k: usize,
}

impl Decider {
    /// Decrypts the score positions of every reply under the gallery's key
    /// and signs the indices of the candidates whose cosine meets the
    /// policy's threshold, best first, at most `top_k`; issued at `now`.
    /// A reply that was not computed under the gallery's key (its phase
    /// past [`MAX_PHASE`]) gets no identification at all, and neither does
    /// a probe whose `checks` do not pass: then no index is named.
    pub fn identify(
        &self,
        req: &IdentifyRequest<'_>,
        replies: &[Candidate],
        checks: &CheckReplies,
        now: u64,
    ) -> Result<String, DecideError> {
        debug_assert_eq!(req.label.kind, KeyKind::Gallery);
        let sk = self.master.secret_key(&self.params, &req.label);
        // One sample: a probe's checks, not a template's.
        let per = self.one_hot_per_sample();
        if checks.norms.len() != 1 || checks.bits.len() != per {
            return Err(MatchError::OneHotCount {
                expected: per,
                found: checks.bits.len(),
            }
            .into());
        }
        let per = templates_per_ciphertext(&self.params, self.quantizer.dim()) as u64;
        let t = self.params.plaintext_modulus();
        let threshold = self.policy.threshold;
        let found: Vec<Vec<(i64, u64)>> = replies
            .par_iter()
            .enumerate()
            .map(|(r, c)| {
                let (mut scores, phase) = c.reply.decrypt_with_phase(&sk)?;
                if phase > MAX_PHASE {
                    scores.zeroize();
                    return Err(DecideError::NotUnderKey { phase });
                }
                let hits = scores
                    .iter()
                    .enumerate()
                    .filter(|&(k, _)| c.candidates >> k & 1 == 1)
                    .map(|(k, &v)| (crate::bfv::centred(v, t), r as u64 * per + k as u64))
                    .filter(|&(score, _)| self.quantizer.cosine(score) >= threshold)
                    .collect();
                scores.zeroize();
                Ok(hits)
            })
            .collect::<Result<_, DecideError>>()?;
        // Every reply is under the gallery's key; the probe must be
        // well-formed for any of them to count.
        if let Err(m) = checks.judge(&sk, &self.quantizer)? {
            return Err(DecideError::MalformedProbe(m));
        }
        let mut hits: Vec<(i64, u64)> = found.into_iter().flatten().collect();
        // Best first, ties by index.
        hits.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        hits.truncate(req.top_k);
        let claims = Identification {
            iss: self.issuer.clone(),
            sub: req.label.name.to_string(),
            aud: req.audience.to_string(),
            nonce: req.nonce.to_string(),
            iat: now,
            exp: now + self.lifetime,
            amr: vec!["face".into()],
            matches: hits.iter().map(|&(_, i)| i).collect(),
        };
        Ok(self.keys.signing().sign_identification(&claims))
    }

    /// Erases block `block` (template `block` of it) from a gallery
    /// ciphertext the matcher masked: `masked` encrypts the ciphertext's
    /// templates plus a uniform mask `R` of the matcher's on every
    /// coefficient, so what is decrypted here is uniform and says nothing
    /// of any template. The answer is a fresh encryption, under the
    /// gallery's public key, of that plaintext with the block zeroed; the
    /// matcher takes off `R` (with the block zeroed too).
    pub fn erase_block(
        &self,
        label: &KeyLabel<'_>,
        masked: &Ciphertext,
        block: usize,
    ) -> Result<Ciphertext, DecideError> {
        let dim = self.quantizer.dim();
        debug_assert_eq!(label.kind, KeyKind::Gallery);
        if block >= templates_per_ciphertext(&self.params, dim)
            || masked.size() != 2
            || masked.level() != self.params.limbs()
        {
            return Err(MatchError::UnknownTemplate { index: block }.into());
        }
        let (sk, pk) = self.master.user_keys(&self.params, label);
        // A ciphertext under another key decrypts to noise with no budget.
        let budget = sk.noise_budget(masked).map_err(MatchError::from)?;
        if budget < 8.0 {
            return Err(DecideError::NotUnderKey { phase: 0.5 });
        }
        let mut pt = sk.decrypt(masked).map_err(MatchError::from)?;
        pt.coeffs_mut()[block * dim..(block + 1) * dim].fill(0);
        let out = pk.encrypt(&pt).map_err(MatchError::from);
        pt.coeffs_mut().zeroize();
        Ok(out?)
    }
}
