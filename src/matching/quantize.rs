//! Embeddings to small integers, with a scale chosen so that no inner product
//! of two accepted vectors can wrap modulo t.
//!
//! An embedding `x` of dimension `d` is L2-normalized and scaled by `s`, and
//! each component rounded: `a = round(s·x/‖x‖)`. Rounding moves the vector by
//! at most `√d/2`, so `‖a‖ ≤ s + √d/2`, and for two accepted vectors
//! `|⟨a, b⟩| ≤ ‖a‖·‖b‖ ≤ (s + √d/2)²`. Decoding mod t is exact while that is at
//! most `(t−1)/2`, so `s` is the largest integer with
//! `(s + √d/2)² ≤ (t−1)/2`. As a second line of defence the quantizer checks
//! `‖a‖² ≤ (t−1)/2` on every vector it returns.
//!
//! At t = 65537: d = 64 → s = 177, d = 128 → s = 175, d = 256 → s = 173,
//! d = 512 → s = 169 (components in [−s, s], about 8.5 bits each).

use crate::bfv::Params;
use crate::error::MatchError;

/// Embedding dimensions the packing supports.
pub const DIMENSIONS: [usize; 4] = [64, 128, 256, 512];

/// Quantizes embeddings of one dimension for one plaintext modulus.
#[derive(Clone, Debug, PartialEq)]
pub struct Quantizer {
    dim: usize,
    scale: u32,
    max_norm2: i64,
}

/// The largest scale `s` with `(s + √d/2)² ≤ (t−1)/2`.
pub fn max_scale(dim: usize, t: u32) -> u32 {
    let limit = ((t as f64 - 1.0) / 2.0).sqrt();
    let s = (limit - (dim as f64).sqrt() / 2.0).floor();
    if s < 1.0 {
        0
    } else {
        s as u32
    }
}

impl Quantizer {
    /// A quantizer for `dim`-dimensional embeddings under `params`.
    pub fn new(params: &Params, dim: usize) -> Result<Self, MatchError> {
        if !DIMENSIONS.contains(&dim) || !params.degree().is_multiple_of(dim) {
            return Err(MatchError::UnsupportedDimension { dim });
        }
        let t = params.plaintext_modulus();
        let scale = max_scale(dim, t);
        if scale == 0 {
            return Err(MatchError::UnsupportedDimension { dim });
        }
        Ok(Self {
            dim,
            scale,
            max_norm2: ((t - 1) / 2) as i64,
        })
    }

    /// Embedding dimension.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The scale `s`: a unit vector becomes integers of norm about `s`.
    pub fn scale(&self) -> u32 {
        self.scale
    }

    /// Largest squared norm a quantized vector may have.
    pub fn max_norm2(&self) -> i64 {
        self.max_norm2
    }

    /// Normalizes and quantizes one embedding.
    pub fn quantize(&self, embedding: &[f32]) -> Result<Vec<i32>, MatchError> {
        if embedding.len() != self.dim {
            return Err(MatchError::WrongLength {
                expected: self.dim,
                actual: embedding.len(),
            });
        }
        if let Some(index) = embedding.iter().position(|v| !v.is_finite()) {
            return Err(MatchError::NotFinite { index });
        }
        let norm = embedding
            .iter()
            .map(|&v| v as f64 * v as f64)
            .sum::<f64>()
            .sqrt();
        if !(norm.is_finite() && norm > 1e-30) {
            return Err(MatchError::ZeroVector);
        }
        let s = self.scale as f64 / norm;
        let q: Vec<i32> = embedding
            .iter()
            .map(|&v| (v as f64 * s).round() as i32)
            .collect();
        let norm2: i64 = q.iter().map(|&v| v as i64 * v as i64).sum();
        if norm2 > self.max_norm2 {
            return Err(MatchError::NormTooLarge {
                norm2,
                max: self.max_norm2,
            });
        }
        Ok(q)
    }

    /// The cosine similarity an integer score stands for: `score / s²`.
    pub fn cosine(&self, score: i64) -> f64 {
        score as f64 / (self.scale as f64 * self.scale as f64)
    }
}
