//! Packing templates and probes into polynomial coefficients so that one
//! product yields every inner product, with no rotation.
//!
//! With `d` the dimension and `n` the ring degree, template `k` (for
//! `k < n/d`) occupies coefficients `k·d .. k·d + d`, and the probe is written
//! reversed into coefficients `0 .. d`: `p_j` at `d − 1 − j`. The product's
//! coefficient `k·d + d − 1` collects exactly the pairs `(k·d + j, d − 1 − j)`,
//! that is `⟨template_k, probe⟩`. Any other pair landing there would need
//! `|j − j'| ≥ d`; the negacyclic wrap-around only reaches coefficients below
//! `d − 1`, which hold no score.

use crate::bfv::{CoefficientEncoder, Params, Plaintext};
use crate::error::MatchError;

/// How many templates of dimension `dim` share one ciphertext.
pub fn templates_per_ciphertext(params: &Params, dim: usize) -> usize {
    params.degree() / dim
}

/// The coefficient that holds template `k`'s score.
pub fn score_position(dim: usize, k: usize) -> usize {
    k * dim + dim - 1
}

/// Whether coefficient `i` holds a score.
pub fn is_score_position(dim: usize, i: usize) -> bool {
    i % dim == dim - 1
}

/// Templates (already quantized, each of length `dim`) packed block by block.
pub fn pack_templates(
    params: &Params,
    dim: usize,
    templates: &[Vec<i32>],
) -> Result<Plaintext, MatchError> {
    let max = templates_per_ciphertext(params, dim);
    if templates.is_empty() {
        return Err(MatchError::NoTemplates);
    }
    if templates.len() > max {
        return Err(MatchError::TooManyTemplates {
            max,
            actual: templates.len(),
        });
    }
    let mut coeffs = vec![0i64; params.degree()];
    for (k, t) in templates.iter().enumerate() {
        if t.len() != dim {
            return Err(MatchError::WrongLength {
                expected: dim,
                actual: t.len(),
            });
        }
        for (j, &v) in t.iter().enumerate() {
            coeffs[k * dim + j] = v as i64;
        }
    }
    Ok(CoefficientEncoder::new(params).encode(&coeffs)?)
}

/// A quantized probe written reversed into the first block.
pub fn pack_probe(params: &Params, probe: &[i32]) -> Result<Plaintext, MatchError> {
    let dim = probe.len();
    if dim == 0 || !params.degree().is_multiple_of(dim) {
        return Err(MatchError::UnsupportedDimension { dim });
    }
    let mut coeffs = vec![0i64; dim];
    for (j, &v) in probe.iter().enumerate() {
        coeffs[dim - 1 - j] = v as i64;
    }
    Ok(CoefficientEncoder::new(params).encode(&coeffs)?)
}

/// The `count` scores of a decrypted product, centred.
pub fn read_scores(
    params: &Params,
    dim: usize,
    product: &Plaintext,
    count: usize,
) -> Result<Vec<i64>, MatchError> {
    let values = CoefficientEncoder::new(params).decode(product)?;
    let max = templates_per_ciphertext(params, dim);
    Ok((0..count.min(max))
        .map(|k| values[score_position(dim, k)])
        .collect())
}
