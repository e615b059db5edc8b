//! Encoders: integer vectors to plaintexts and back.
//!
//! * [`CoefficientEncoder`]: value `i` is coefficient `i` (signed values are
//!   stored mod t and decoded centred). Polynomial products then compute
//!   negacyclic convolutions, which the matching layer uses for packed inner
//!   products.
//! * [`BatchEncoder`]: `n` slots arranged as a 2 × n/2 matrix; products act
//!   slot-wise and row rotations are Galois automorphisms `X -> X^(3^k)`.
//!   Needs `t` prime with `t ≡ 1 (mod 2n)`.

use super::params::Params;
use super::plaintext::Plaintext;
use crate::error::BfvError;
use crate::ntt::bit_reverse;

fn to_residue(v: i64, t: u32, index: usize) -> Result<u32, BfvError> {
    let t64 = t as i64;
    if v <= -t64 || v >= t64 {
        return Err(BfvError::ValueOutOfRange { index, value: v, t });
    }
    Ok(if v < 0 { (v + t64) as u32 } else { v as u32 })
}

/// A residue mod `t` as the integer in `(-t/2, t/2]`.
pub(crate) fn centred(v: u32, t: u32) -> i64 {
    if v > t / 2 {
        v as i64 - t as i64
    } else {
        v as i64
    }
}

/// Values as polynomial coefficients.
#[derive(Clone, Debug)]
pub struct CoefficientEncoder {
    params: Params,
}

impl CoefficientEncoder {
    /// An encoder for `params`.
    pub fn new(params: &Params) -> Self {
        Self {
            params: params.clone(),
        }
    }

    /// Encodes up to n values in `(-t, t)`.
    pub fn encode(&self, values: &[i64]) -> Result<Plaintext, BfvError> {
        let t = self.params.plaintext_modulus();
        if values.len() > self.params.degree() {
            return Err(BfvError::TooManyValues {
                what: "coefficient encoder",
                max: self.params.degree(),
                actual: values.len(),
            });
        }
        let c = values
            .iter()
            .enumerate()
            .map(|(i, &v)| to_residue(v, t, i))
            .collect::<Result<Vec<_>, _>>()?;
        Plaintext::from_coeffs(&self.params, &c)
    }

    /// All n coefficients, centred into `(-t/2, t/2]`.
    pub fn decode(&self, pt: &Plaintext) -> Result<Vec<i64>, BfvError> {
        self.params.check(pt.params())?;
        let t = self.params.plaintext_modulus();
        Ok(pt.coeffs().iter().map(|&v| centred(v, t)).collect())
    }
}

/// Slot encoding: n slots as two rows of n/2.
#[derive(Clone, Debug)]
pub struct BatchEncoder {
    params: Params,
    /// Slot `k` lives at NTT position `index_map[k]`.
    index_map: Vec<usize>,
}

impl BatchEncoder {
    /// An encoder for `params`; fails unless batching is on.
    pub fn new(params: &Params) -> Result<Self, BfvError> {
        if params.plan_t().is_none() {
            return Err(BfvError::BatchingUnavailable);
        }
        let n = params.degree();
        let bits = n.trailing_zeros();
        let two_n = 2 * n;
        let half = n / 2;
        let mut index_map = vec![0; n];
        // Row 0, slot k evaluates at psi^(3^k); row 1 at psi^(-3^k). Our NTT
        // puts the evaluation at psi^(2j+1) at position brv(j).
        let mut pos = 1usize;
        for k in 0..half {
            index_map[k] = bit_reverse((pos - 1) / 2, bits);
            index_map[half + k] = bit_reverse((two_n - pos - 1) / 2, bits);
            pos = pos * 3 % two_n;
        }
        Ok(Self {
            params: params.clone(),
            index_map,
        })
    }

    /// Number of slots (n).
    pub fn slots(&self) -> usize {
        self.params.degree()
    }

    /// Encodes up to n values in `(-t, t)`; missing slots are zero.
    pub fn encode(&self, values: &[i64]) -> Result<Plaintext, BfvError> {
        let n = self.params.degree();
        let t = self.params.plaintext_modulus();
        if values.len() > n {
            return Err(BfvError::TooManyValues {
                what: "batch encoder",
                max: n,
                actual: values.len(),
            });
        }
        let mut evals = vec![0u32; n];
        for (k, &v) in values.iter().enumerate() {
            evals[self.index_map[k]] = to_residue(v, t, k)?;
        }
        self.params
            .plan_t()
            .expect("checked in new")
            .inverse(&mut evals);
        Plaintext::from_coeffs(&self.params, &evals)
    }

    /// All n slots, centred into `(-t/2, t/2]`.
    pub fn decode(&self, pt: &Plaintext) -> Result<Vec<i64>, BfvError> {
        self.params.check(pt.params())?;
        let t = self.params.plaintext_modulus();
        let mut evals = pt.coeffs().to_vec();
        self.params
            .plan_t()
            .expect("checked in new")
            .forward(&mut evals);
        Ok(self
            .index_map
            .iter()
            .map(|&p| centred(evals[p], t))
            .collect())
    }
}
