//! The decider's core: the one place that holds secret key material in
//! login mode. It derives each user's BFV key pair from one master secret,
//! decrypts the score positions of a masked reply the matcher computed under
//! that user's public key, applies the policy, and signs the verdict. It never
//! receives a template or a probe, and answers with a verdict, never a score.
//!
//! * [`user_keys`]: the master secret and the per-user keys derived from it.
//! * [`policy`]: the threshold rule.
//! * [`http`](mod@http): its HTTP API, for the matcher and for relying parties.
//!
//! `blindmatch-server decide` serves it; docs/PROTOCOL.md ("Login mode")
//! states what each party learns and the trust model.

pub mod http;
pub mod identify;
pub mod policy;
pub mod replies;
pub mod user_keys;

use crate::bfv::{Params, PublicKey, RelinKey};
use crate::error::BfvError;
use crate::error::MatchError;
use crate::matching::wellformed::{ciphertexts_per_sample, CheckReplies, Malformed};
use crate::matching::{Quantizer, ScoreReply};

use super::verdict::{Claims, KeyStatement, Reason, VerdictKeys};

pub use policy::{Policy, Rule};
pub use user_keys::{KeyKind, KeyLabel, MasterSecret};

/// The largest phase distance ([`ScoreReply::decrypt_with_phase`]) of a
/// reply the decider reads. A genuine reply measures at most 1/64 (the
/// flood of [`crate::matching::verify::DECIDER_FLOOD_BITS`]) plus its own
/// noise (2^-27) and the compact form's scaling (typically 2^-12, at most
/// 0.08); under another key each of the n/d score positions is uniform in
/// [0, 0.5], so a reply not made for this key passes with probability
/// (1/4)^(n/d): 2^-64 at d = 128. Without the check such a reply decrypts to
/// uniform scores, and a threshold of 0.5 accepts about one in four.
pub const MAX_PHASE: f64 = 0.125;

/// Why the decider gives no verdict.
#[derive(Debug, thiserror::Error)]
pub enum DecideError {
    #[error(transparent)]
    Match(#[from] MatchError),
    /// The reply was not computed under this user's key (another user's or
    /// epoch's, a probe under a key of its own, or no ciphertext at all).
    #[error("the reply does not decrypt under the key it is for, the user's or the gallery's (phase {phase:.3})")]
    NotUnderKey { phase: f64 },
    /// An identification's reply list did not parse, or does not fit the
    /// request.
    #[error(transparent)]
    Replies(#[from] replies::RepliesError),
    /// An identification's probe is not a well-formed embedding (its check
    /// replies say which check failed); no score was read.
    #[error("the probe is not a well-formed embedding: {0}")]
    MalformedProbe(Malformed),
}

/// What a verdict is asked for: whose reply, for which relying party and
/// challenge, over how many enrolled samples.
#[derive(Clone, Debug)]
pub struct Request<'a> {
    pub label: KeyLabel<'a>,
    /// The relying party (the verdict's `aud`).
    pub audience: &'a str,
    /// The login challenge (the verdict's `nonce`).
    pub nonce: &'a str,
    /// Enrolled samples in the user's template: the first `samples` score
    /// positions are read, no other.
    pub samples: usize,
    /// Whether the template passed the check at enrollment (the matcher's
    /// word: it is trusted to store only templates the decider checked).
    pub template_checked: bool,
}

/// The decider's state: its secrets, its policy, its name.
#[derive(Debug)]
pub struct Decider {
    master: MasterSecret,
    params: Params,
    quantizer: Quantizer,
    policy: Policy,
    keys: VerdictKeys,
    issuer: String,
    /// Seconds a verdict stays valid.
    lifetime: u64,
}

impl Decider {
    pub fn new(
        master: MasterSecret,
        params: &Params,
        dim: usize,
        policy: Policy,
        keys: VerdictKeys,
        issuer: String,
        lifetime: u64,
    ) -> Result<Self, MatchError> {
        Ok(Self {
            master,
            params: params.clone(),
            quantizer: Quantizer::new(params, dim)?,
            policy,
            keys,
            issuer,
            lifetime,
        })
    }

    /// The public key the browser encrypts `label`'s template and probes
    /// under (and the matcher masks replies with).
    pub fn public_key(&self, label: &KeyLabel<'_>) -> PublicKey {
        self.master.user_keys(&self.params, label).1
    }

    /// What the matcher keeps for `label`: its public key, and a
    /// relinearization key (fresh randomness each time) so that its replies
    /// are size 2 and travel in compact form, the score positions only.
    pub fn matcher_keys(&self, label: &KeyLabel<'_>) -> Result<(PublicKey, RelinKey), BfvError> {
        let (sk, pk) = self.master.user_keys(&self.params, label);
        Ok((pk, RelinKey::new(&sk)?))
    }

    /// Its signed statement that `public_key` is `label`'s, issued at `now`.
    /// A gallery's statement has its own `typ`, so that it cannot pass for
    /// a user's of the same name.
    pub fn key_statement(&self, label: &KeyLabel<'_>, public_key: &PublicKey, now: u64) -> String {
        let statement = KeyStatement {
            iss: self.issuer.clone(),
            sub: label.name.to_string(),
            epoch: label.epoch,
            pk_sha256: KeyStatement::digest(&public_key.to_bytes()),
            iat: now,
        };
        match label.kind {
            KeyKind::User => self.keys.signing().sign_key_statement(&statement),
            KeyKind::Gallery => self.keys.signing().sign_gallery_key_statement(&statement),
        }
    }

    /// The embedding dimension it reads scores for.
    pub fn dim(&self) -> usize {
        self.quantizer.dim()
    }

    /// The parameters its keys are for.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// The verdicts' signing keys, for `/.well-known/jwks.json`.
    pub fn verdict_keys(&self) -> &VerdictKeys {
        &self.keys
    }

    /// One-hot ciphertexts per sample (what a bundle carries).
    pub fn one_hot_per_sample(&self) -> usize {
        ciphertexts_per_sample(&self.params, &self.quantizer)
    }

    /// Judges the checks of a template at enrollment: `Ok` when every
    /// sample is a well-formed embedding under `label`'s key.
    pub fn check_template(
        &self,
        label: &KeyLabel<'_>,
        checks: &CheckReplies,
    ) -> Result<Result<(), Malformed>, DecideError> {
        let sk = self.master.secret_key(&self.params, label);
        Ok(checks.judge(&sk, &self.quantizer)?.map(drop))
    }

    /// Decrypts the score positions of `reply`, applies the policy and signs
    /// the verdict, issued at `now` (seconds since the Unix epoch). The
    /// verdict is a reject, with its reason, when the template was not
    /// checked at enrollment or when `checks` (the probe's) do not pass:
    /// then no score is read.
    pub fn decide(
        &self,
        req: &Request<'_>,
        reply: &ScoreReply,
        checks: &CheckReplies,
        now: u64,
    ) -> Result<String, DecideError> {
        let sk = self.master.secret_key(&self.params, &req.label);
        let (scores, phase) = reply.decrypt_with_phase(&sk)?;
        if phase > MAX_PHASE {
            return Err(DecideError::NotUnderKey { phase });
        }
        let reason = if !req.template_checked {
            Some(Reason::MalformedTemplate)
        } else if checks.norms.len() != 1 {
            Some(Reason::MalformedProbe)
        } else {
            checks
                .judge(&sk, &self.quantizer)?
                .err()
                .map(|_| Reason::MalformedProbe)
        };
        let t = self.params.plaintext_modulus();
        let outcome = match reason {
            Some(_) => super::verdict::Outcome::Reject,
            None => {
                let cosines: Vec<f64> = scores
                    .iter()
                    .take(req.samples)
                    .map(|&v| self.quantizer.cosine(crate::bfv::centred(v, t)))
                    .collect();
                self.policy.outcome(&cosines)
            }
        };
        let claims = Claims {
            iss: self.issuer.clone(),
            sub: req.label.name.to_string(),
            aud: req.audience.to_string(),
            nonce: req.nonce.to_string(),
            iat: now,
            exp: now + self.lifetime,
            amr: vec!["face".into()],
            outcome,
            reason,
        };
        Ok(self.keys.signing().sign(&claims))
    }
}

#[cfg(test)]
mod tests;
