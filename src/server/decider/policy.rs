//! The login policy: a threshold on the cosine similarities of the probe
//! with the user's enrolled samples.

use crate::server::verdict::Outcome;

/// Which of the samples' cosines meets the threshold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// The best sample.
    Max,
    /// Their mean.
    Mean,
}

/// Accept when the rule's cosine is at least `threshold`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Policy {
    pub threshold: f64,
    pub rule: Rule,
}

impl Default for Policy {
    /// The best sample at cosine 0.5, the threshold of the README's
    /// examples (docs/ACCURACY.md measures the error rates around it).
    fn default() -> Self {
        Self {
            threshold: 0.5,
            rule: Rule::Max,
        }
    }
}

impl Policy {
    /// The outcome for `cosines` (no samples, or a NaN, is a rejection).
    pub fn outcome(&self, cosines: &[f64]) -> Outcome {
        if cosines.is_empty() || cosines.iter().any(|c| c.is_nan()) {
            return Outcome::Reject;
        }
        let value = match self.rule {
            Rule::Max => cosines.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            Rule::Mean => cosines.iter().sum::<f64>() / cosines.len() as f64,
        };
        if value >= self.threshold {
            Outcome::Accept
        } else {
            Outcome::Reject
        }
    }
}
