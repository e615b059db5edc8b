//! The evaluator for JavaScript: homomorphic operations on `Ciphertext`s.

use wasm_bindgen::prelude::*;

use super::{JsCiphertext, JsGaloisKeys, JsParams, JsPlaintext, JsRelinKey};
use crate::bfv::{Evaluator, Params};
use crate::wasm::{err, js_result};

/// Homomorphic operations. Every method returns a new `Ciphertext` and
/// leaves its inputs unchanged.
#[wasm_bindgen(js_name = Evaluator)]
#[derive(Clone, Debug)]
pub struct JsEvaluator {
    inner: Evaluator,
    params: Params,
}

#[wasm_bindgen(js_class = Evaluator)]
impl JsEvaluator {
    /// An evaluator for `params`.
    #[wasm_bindgen(constructor)]
    pub fn new(params: &JsParams) -> JsEvaluator {
        JsEvaluator {
            inner: Evaluator::new(&params.inner),
            params: params.inner.clone(),
        }
    }

    /// `a + b`.
    pub fn add(&self, a: &JsCiphertext, b: &JsCiphertext) -> Result<JsCiphertext, JsError> {
        js_result("Evaluator.add", self.inner.add(&a.inner, &b.inner))
    }

    /// `a - b`.
    pub fn sub(&self, a: &JsCiphertext, b: &JsCiphertext) -> Result<JsCiphertext, JsError> {
        js_result("Evaluator.sub", self.inner.sub(&a.inner, &b.inner))
    }

    /// `-a`.
    pub fn negate(&self, a: &JsCiphertext) -> Result<JsCiphertext, JsError> {
        let mut r = a.inner.clone();
        js_result(
            "Evaluator.negate",
            self.inner.negate_assign(&mut r).map(|()| r),
        )
    }

    /// `a + plaintext`, at any level.
    #[wasm_bindgen(js_name = addPlain)]
    pub fn add_plain(
        &self,
        a: &JsCiphertext,
        plaintext: &JsPlaintext,
    ) -> Result<JsCiphertext, JsError> {
        let mut r = a.inner.clone();
        js_result(
            "Evaluator.addPlain",
            self.inner
                .add_plain_assign(&mut r, &plaintext.inner)
                .map(|()| r),
        )
    }

    /// `a · plaintext`.
    #[wasm_bindgen(js_name = multiplyPlain)]
    pub fn multiply_plain(
        &self,
        a: &JsCiphertext,
        plaintext: &JsPlaintext,
    ) -> Result<JsCiphertext, JsError> {
        js_result(
            "Evaluator.multiplyPlain",
            self.inner.multiply_plain(&a.inner, &plaintext.inner),
        )
    }

    /// `a · b`: a size-3 ciphertext (decryptable as is, or relinearized).
    /// Both inputs must be of size 2 over all ciphertext primes.
    pub fn multiply(&self, a: &JsCiphertext, b: &JsCiphertext) -> Result<JsCiphertext, JsError> {
        js_result(
            "Evaluator.multiply",
            self.inner.multiply(&a.inner, &b.inner),
        )
    }

    /// `a · b` relinearized: the same ciphertext as `relinearize(multiply(a,
    /// b), relinKey)`, in one call that skips the size-3 intermediate's
    /// transforms (faster).
    #[wasm_bindgen(js_name = multiplyRelin)]
    pub fn multiply_relin(
        &self,
        a: &JsCiphertext,
        b: &JsCiphertext,
        #[wasm_bindgen(js_name = relinKey)] relin_key: &JsRelinKey,
    ) -> Result<JsCiphertext, JsError> {
        js_result(
            "Evaluator.multiplyRelin",
            self.inner
                .multiply_relin(&a.inner, &b.inner, &relin_key.inner),
        )
    }

    /// A size-3 ciphertext back to size 2 (size 2 is returned unchanged).
    pub fn relinearize(
        &self,
        a: &JsCiphertext,
        #[wasm_bindgen(js_name = relinKey)] relin_key: &JsRelinKey,
    ) -> Result<JsCiphertext, JsError> {
        js_result(
            "Evaluator.relinearize",
            self.inner.relinearize(&a.inner, &relin_key.inner),
        )
    }

    /// Rotates both slot rows left by `step` (right if negative).
    #[wasm_bindgen(js_name = rotateRows)]
    pub fn rotate_rows(
        &self,
        a: &JsCiphertext,
        step: i32,
        #[wasm_bindgen(js_name = galoisKeys)] galois_keys: &JsGaloisKeys,
    ) -> Result<JsCiphertext, JsError> {
        js_result(
            "Evaluator.rotateRows",
            self.inner.rotate_rows(&a.inner, step, &galois_keys.inner),
        )
    }

    /// Swaps the two slot rows.
    #[wasm_bindgen(js_name = rotateColumns)]
    pub fn rotate_columns(
        &self,
        a: &JsCiphertext,
        #[wasm_bindgen(js_name = galoisKeys)] galois_keys: &JsGaloisKeys,
    ) -> Result<JsCiphertext, JsError> {
        js_result(
            "Evaluator.rotateColumns",
            self.inner.rotate_columns(&a.inner, &galois_keys.inner),
        )
    }

    /// Drops the last ciphertext prime (smaller ciphertext, same plaintext).
    #[wasm_bindgen(js_name = modSwitchToNext)]
    pub fn mod_switch_to_next(&self, a: &JsCiphertext) -> Result<JsCiphertext, JsError> {
        const C: &str = "Evaluator.modSwitchToNext";
        self.params.check(a.inner.params()).map_err(|e| err(C, e))?;
        js_result(C, self.inner.mod_switch_to_next(&a.inner))
    }
}
