//! Plaintexts: polynomials with coefficients mod t.

use super::params::Params;
use crate::error::BfvError;

/// A plaintext polynomial, coefficients in `[0, t)`.
#[derive(Clone, PartialEq, Eq)]
pub struct Plaintext {
    params: Params,
    coeffs: Vec<u32>,
}

impl std::fmt::Debug for Plaintext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Plaintext {{ params: {}, .. }}", self.params.id_hex())
    }
}

impl Plaintext {
    /// A plaintext from coefficients already in `[0, t)` (at most n of them;
    /// missing ones are zero).
    pub fn from_coeffs(params: &Params, coeffs: &[u32]) -> Result<Self, BfvError> {
        let n = params.degree();
        let t = params.plaintext_modulus();
        if coeffs.len() > n {
            return Err(BfvError::TooManyValues {
                what: "plaintext coefficients",
                max: n,
                actual: coeffs.len(),
            });
        }
        if let Some((index, &v)) = coeffs.iter().enumerate().find(|(_, &v)| v >= t) {
            return Err(BfvError::ValueOutOfRange {
                index,
                value: v as i64,
                t,
            });
        }
        let mut c = coeffs.to_vec();
        c.resize(n, 0);
        Ok(Self {
            params: params.clone(),
            coeffs: c,
        })
    }

    pub(crate) fn from_reduced(params: &Params, coeffs: Vec<u32>) -> Self {
        debug_assert_eq!(coeffs.len(), params.degree());
        Self {
            params: params.clone(),
            coeffs,
        }
    }

    /// The coefficients, in `[0, t)`.
    pub fn coeffs(&self) -> &[u32] {
        &self.coeffs
    }

    /// The coefficients, writable (callers keep them in `[0, t)`).
    pub(crate) fn coeffs_mut(&mut self) -> &mut [u32] {
        &mut self.coeffs
    }

    /// The parameters.
    pub fn params(&self) -> &Params {
        &self.params
    }
}
