//! The NTT for JavaScript (benchmarks and experiments).

use wasm_bindgen::prelude::*;

use crate::{Backend, NttPlan};

/// A negacyclic NTT over one prime, for JavaScript.
///
/// ```js
/// const plan = new NttPlan(4096, 1073643521);
/// const a = new Uint32Array(4096); a[1] = 1;
/// plan.forward(a);   // in place, bit-reversed evaluation order
/// plan.inverse(a);   // back to coefficients
/// ```
#[wasm_bindgen(js_name = NttPlan)]
#[derive(Debug)]
pub struct JsNttPlan {
    plan: NttPlan,
}

fn check_len(what: &str, expected: usize, actual: usize) -> Result<(), JsError> {
    if expected == actual {
        Ok(())
    } else {
        Err(JsError::new(&format!(
            "{what}: expected {expected} residues, got {actual}"
        )))
    }
}

fn check_reduced(what: &str, q: u32, a: &[u32]) -> Result<(), JsError> {
    match a.iter().position(|&v| v >= q) {
        None => Ok(()),
        Some(i) => Err(JsError::new(&format!(
            "{what}: residue {} at index {i} is not below the modulus {q}",
            a[i]
        ))),
    }
}

#[wasm_bindgen(js_class = NttPlan)]
impl JsNttPlan {
    /// A plan for degree `n` and prime `q` on the fastest backend of this build
    /// (`simd128` when the package was built with it).
    #[wasm_bindgen(constructor)]
    pub fn new(n: usize, q: f64) -> Result<JsNttPlan, JsError> {
        Self::build(n, q, Backend::detect())
    }

    /// A plan that uses the portable scalar kernels (for comparisons).
    #[wasm_bindgen(js_name = scalar)]
    pub fn scalar(n: usize, q: f64) -> Result<JsNttPlan, JsError> {
        Self::build(n, q, Backend::scalar())
    }

    fn build(n: usize, q: f64, backend: Backend) -> Result<JsNttPlan, JsError> {
        if !(q.is_finite() && q >= 0.0 && q.fract() == 0.0 && q < 9.0e15) {
            return Err(JsError::new(&format!(
                "modulus {q} is not a non-negative integer"
            )));
        }
        let plan = NttPlan::with_backend(n, q as u64, backend)
            .map_err(|e| JsError::new(&e.to_string()))?;
        Ok(JsNttPlan { plan })
    }

    /// The backend name: `simd128` or `scalar`.
    #[wasm_bindgen(getter)]
    pub fn backend(&self) -> String {
        self.plan.backend().name().to_string()
    }

    /// In-place forward transform, `times` times over (default 1; more is for
    /// benchmarks, so the loop runs inside wasm).
    pub fn forward(&self, a: &mut [u32], times: Option<u32>) -> Result<(), JsError> {
        self.repeat("forward", a, times, NttPlan::forward)
    }

    /// In-place inverse transform, `times` times over (default 1).
    pub fn inverse(&self, a: &mut [u32], times: Option<u32>) -> Result<(), JsError> {
        self.repeat("inverse", a, times, NttPlan::inverse)
    }
}

impl JsNttPlan {
    /// Checks `a` (named `what` in errors), then applies `transform` to it
    /// `times` times (default 1).
    fn repeat(
        &self,
        what: &str,
        a: &mut [u32],
        times: Option<u32>,
        transform: fn(&NttPlan, &mut [u32]),
    ) -> Result<(), JsError> {
        let q = self.plan.modulus().value();
        check_len(what, self.plan.degree(), a.len())?;
        check_reduced(what, q, a)?;
        for _ in 0..times.unwrap_or(1) {
            transform(&self.plan, a);
        }
        Ok(())
    }
}

/// The `count` largest primes `q < 2^bits` with `q ≡ 1 (mod 2n)`, descending.
#[wasm_bindgen(js_name = nttPrimes)]
pub fn ntt_primes(bits: u32, n: usize, count: usize) -> Result<Vec<u32>, JsError> {
    if count > 1024 {
        return Err(JsError::new(&format!(
            "count {count} is over the limit of 1024"
        )));
    }
    crate::arith::ntt_primes(bits, n, count).map_err(|e| JsError::new(&e.to_string()))
}
