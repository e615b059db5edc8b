//! The worst case for a reply's noise (tests only): a secret key with every
//! coefficient ±1 (the largest ‖s‖₁), and 32 templates and a probe whose
//! quantized components are all at the largest magnitude the norm bound
//! allows, of alternating sign, so that every score is ±‖probe‖².

use crate::bfv::{Params, SecretKey};

use super::Quantizer;

pub(crate) struct WorstCase {
    pub(crate) sk: SecretKey,
    pub(crate) q: Quantizer,
    /// The probe, and the even templates.
    pub(crate) flat: Vec<f32>,
    /// The odd templates.
    neg: Vec<f32>,
}

impl WorstCase {
    pub(crate) fn new(params: &Params, d: usize) -> Self {
        let n = params.degree();
        let coeffs: Vec<i8> = (0..n).map(|i| if i % 3 == 0 { -1 } else { 1 }).collect();
        let flat: Vec<f32> = (0..d)
            .map(|i| if i % 2 == 0 { 1.0 } else { -1.0 })
            .collect();
        Self {
            sk: SecretKey::from_coeffs(params, coeffs),
            q: Quantizer::new(params, d).unwrap(),
            neg: flat.iter().map(|x| -x).collect(),
            flat,
        }
    }

    /// The 32 templates, alternately `flat` and its negation.
    pub(crate) fn templates(&self) -> Vec<&[f32]> {
        (0..32)
            .map(|k| {
                if k % 2 == 0 {
                    &self.flat[..]
                } else {
                    &self.neg[..]
                }
            })
            .collect()
    }

    /// The 32 exact scores of the templates against the probe `flat`.
    pub(crate) fn scores(&self) -> Vec<i64> {
        let fq = self.q.quantize(&self.flat).unwrap();
        let norm2: i64 = fq.iter().map(|&x| x as i64 * x as i64).sum();
        (0..32)
            .map(|k| if k % 2 == 0 { norm2 } else { -norm2 })
            .collect()
    }
}
