//! Embeddings to small integers: few enough levels that the decider can
//! check, on ciphertexts, that a client sent a valid quantized embedding
//! (docs/PROTOCOL.md, "Well-formed embeddings"), and a scale at which
//! quantizing costs next to nothing in accuracy (docs/ACCURACY.md).
//!
//! An embedding `x` of dimension `d` is L2-normalized and scaled by `s`, each
//! component rounded and clipped to the `L` levels `[-L/2, L/2 - 1]`, and the
//! squared norm capped at `M = s² + d/4`: while it is above, the component
//! rounded furthest away from zero moves one step towards it.
//!
//! * `L` is the largest even number with `d·(L/2)² < t`, so that the squared
//!   norm of any vector with components in range is below `t` and is read
//!   exactly mod t; and at most `max(n/d, 32)`, so that the one-hot encoding
//!   of a 128-dimensional sample fills one ciphertext's `n` slots. At `t =
//!   65537`, `n = 4096`: d = 64 → L = 64, d = 128 → 32, d = 256 → 32,
//!   d = 512 → 22.
//! * `s` puts the clipping bound `L/2 - 1/2` at [`CLIP_SIGMAS`] standard
//!   deviations of a component of a random unit vector (`1/√d`), so that
//!   clipping is rare: d = 64 → s = 68, 128 → 47, 256 → 67, 512 → 64.
//! * `M` is at most `s²` plus the rounding's typical growth; scaling a
//!   vector up by more than `√(1 + d/(4s²))` (0.7 % at d = 128) leaves it.
//!
//! Every inner product of two accepted vectors is then at most `M` in
//! absolute value, far below `(t - 1)/2`, and decodes exactly.

use crate::bfv::Params;
use crate::error::MatchError;

/// Embedding dimensions the packing supports.
pub const DIMENSIONS: [usize; 4] = [64, 128, 256, 512];

/// How many standard deviations of a random unit vector's component the
/// clipping bound sits at.
pub const CLIP_SIGMAS: f64 = 3.7;

/// Quantizes embeddings of one dimension for one parameter set.
#[derive(Clone, Debug, PartialEq)]
pub struct Quantizer {
    dim: usize,
    levels: usize,
    scale: u32,
    max_norm2: i64,
}

/// The number of levels `L` for dimension `dim` at ring degree `n` and
/// plaintext modulus `t` (the module documentation); 0 when none fits.
pub fn levels(dim: usize, n: usize, t: u32) -> usize {
    let mut half = 1usize;
    while dim as u64 * ((half + 1) as u64).pow(2) < t as u64 {
        half += 1;
    }
    let cap = (n / dim).max(32);
    if dim as u64 * (half as u64).pow(2) >= t as u64 {
        return 0;
    }
    (2 * half).min(cap) & !1
}

impl Quantizer {
    /// A quantizer for `dim`-dimensional embeddings under `params`.
    pub fn new(params: &Params, dim: usize) -> Result<Self, MatchError> {
        if !DIMENSIONS.contains(&dim) || !params.degree().is_multiple_of(dim) {
            return Err(MatchError::UnsupportedDimension { dim });
        }
        let t = params.plaintext_modulus();
        let levels = levels(dim, params.degree(), t);
        let bound = levels as f64 / 2.0 - 0.5;
        let scale = (bound * (dim as f64).sqrt() / CLIP_SIGMAS).floor();
        let max_norm2 = (scale * scale) as i64 + dim as i64 / 4;
        if levels < 2 || scale < 1.0 || 2 * max_norm2 >= t as i64 {
            return Err(MatchError::UnsupportedDimension { dim });
        }
        Ok(Self {
            dim,
            levels,
            scale: scale as u32,
            max_norm2,
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

    /// The number of levels `L` a component may take.
    pub fn levels(&self) -> usize {
        self.levels
    }

    /// The smallest and largest component, `-L/2` and `L/2 - 1`.
    pub fn range(&self) -> (i32, i32) {
        let half = (self.levels / 2) as i32;
        (-half, half - 1)
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
        let (lo, hi) = self.range();
        let exact: Vec<f64> = embedding.iter().map(|&v| v as f64 * s).collect();
        let mut q: Vec<i32> = exact
            .iter()
            .map(|&x| (x.round() as i64).clamp(lo as i64, hi as i64) as i32)
            .collect();
        let mut norm2: i64 = q.iter().map(|&v| v as i64 * v as i64).sum();
        while norm2 > self.max_norm2 {
            // The component rounded furthest away from zero steps back.
            let (i, _) = q
                .iter()
                .zip(&exact)
                .enumerate()
                .filter(|(_, (&a, _))| a != 0)
                .map(|(i, (&a, &x))| (i, a.unsigned_abs() as f64 - x.abs()))
                .fold((usize::MAX, f64::NEG_INFINITY), |best, c| {
                    if c.1 > best.1 {
                        c
                    } else {
                        best
                    }
                });
            let a = q[i];
            norm2 -= 2 * a.unsigned_abs() as i64 - 1;
            q[i] = a - a.signum();
        }
        Ok(q)
    }

    /// The cosine similarity an integer score stands for: `score / s²`.
    pub fn cosine(&self, score: i64) -> f64 {
        score as f64 / (self.scale as f64 * self.scale as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_and_scales_at_auth4096() {
        let params = Params::auth4096();
        let got: Vec<(usize, u32, i64)> = DIMENSIONS
            .iter()
            .map(|&d| {
                let q = Quantizer::new(&params, d).unwrap();
                (q.levels(), q.scale(), q.max_norm2())
            })
            .collect();
        assert_eq!(
            got,
            [
                (64, 68, 4640),
                (32, 47, 2241),
                (32, 67, 4553),
                (22, 64, 4224)
            ]
        );
        for &d in &DIMENSIONS {
            let q = Quantizer::new(&params, d).unwrap();
            let half = q.levels() as i64 / 2;
            // The squared norm of anything in range is below t: no wrap.
            assert!(d as i64 * half * half < 65537, "d = {d}");
        }
    }
}
