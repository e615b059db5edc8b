//! Keys for JavaScript: `SecretKey` (which also encrypts and decrypts),
//! `PublicKey`, `RelinKey` and `GaloisKeys`.

use std::rc::Rc;

use js_sys::Uint8Array;
use wasm_bindgen::prelude::*;

use super::{JsCiphertext, JsParams, JsPlaintext};
use crate::bfv::{GaloisKeys, Prng, PublicKey, RelinKey, SecretKey};
use crate::wasm::{err, ints_in, js_result, wire_in, wire_out, Check};

/// Most rotation steps per `galoisKeys` call (each key is large).
const MAX_GALOIS_STEPS: usize = crate::bfv::MAX_GALOIS_KEYS - 1;

/// A ternary secret key, in wasm memory and zeroized when freed (by `free()`
/// or by the garbage collector, once every object sharing it is gone).
#[wasm_bindgen(js_name = SecretKey)]
#[derive(Clone, Debug)]
pub struct JsSecretKey {
    pub(crate) inner: Rc<SecretKey>,
}

#[wasm_bindgen(js_class = SecretKey)]
impl JsSecretKey {
    /// A fresh key from `crypto.getRandomValues`.
    pub fn generate(params: &JsParams) -> Result<JsSecretKey, JsError> {
        js_result("SecretKey.generate", SecretKey::generate(&params.inner))
    }

    /// A fresh public key for this secret key.
    #[wasm_bindgen(js_name = publicKey)]
    pub fn public_key(&self) -> Result<JsPublicKey, JsError> {
        js_result("SecretKey.publicKey", PublicKey::new(&self.inner))
    }

    /// A fresh relinearization key (about 164 KB on the wire at auth4096).
    #[wasm_bindgen(js_name = relinKey)]
    pub fn relin_key(&self) -> Result<JsRelinKey, JsError> {
        js_result("SecretKey.relinKey", RelinKey::new(&self.inner))
    }

    /// Galois keys for row rotations by each of `steps` (an `Int32Array` or
    /// an array of integers, at most 64; a step counts modulo n/2) and for
    /// the column swap. Each key is about 164 KB on the wire at auth4096.
    #[wasm_bindgen(js_name = galoisKeys)]
    pub fn galois_keys(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Int32Array | number[]")] steps: &JsValue,
    ) -> Result<JsGaloisKeys, JsError> {
        const C: &str = "SecretKey.galoisKeys";
        let steps = ints_in(C, "steps", steps, MAX_GALOIS_STEPS)?;
        let steps = steps
            .iter()
            .enumerate()
            .map(|(i, &s)| {
                i32::try_from(s).map_err(|_| {
                    JsError::new(&format!("{C}: steps[{i}] = {s} is not a 32-bit integer"))
                })
            })
            .collect::<Result<Vec<i32>, _>>()?;
        js_result(C, GaloisKeys::new(&self.inner, &steps))
    }

    /// Encrypts a plaintext (seeded: serializes as seed + one polynomial).
    pub fn encrypt(&self, plaintext: &JsPlaintext) -> Result<JsCiphertext, JsError> {
        js_result("SecretKey.encrypt", self.inner.encrypt(&plaintext.inner))
    }

    /// Decrypts a ciphertext of size 2 or 3.
    pub fn decrypt(&self, ciphertext: &JsCiphertext) -> Result<JsPlaintext, JsError> {
        js_result("SecretKey.decrypt", self.inner.decrypt(&ciphertext.inner))
    }

    /// Invariant noise budget in bits (0 means decryption may fail). A
    /// diagnostic for the key holder: never send it to anyone.
    #[wasm_bindgen(js_name = noiseBudget)]
    pub fn noise_budget(&self, ciphertext: &JsCiphertext) -> Result<f64, JsError> {
        self.inner
            .noise_budget(&ciphertext.inner)
            .map_err(|e| err("SecretKey.noiseBudget", e))
    }
}

impl From<SecretKey> for JsSecretKey {
    fn from(sk: SecretKey) -> JsSecretKey {
        JsSecretKey { inner: Rc::new(sk) }
    }
}

wire_methods!(JsSecretKey, SecretKey, "SecretKey",
    from: /// Loads a key exported by `toBytes()`.
    to: /// The key's bytes, for its owner's own storage. Secret: never send it
        /// anywhere; overwrite the array (`fill(0)`) when done.
);

/// The test-only `encrypt_with_for_tests` of a key class whose `inner` can
/// `encrypt_with` a generator.
macro_rules! encrypt_with_for_tests {
    ($js:ident) => {
        #[doc(hidden)]
        impl $js {
            /// Test-only (known-answer vectors): encryption from a given generator.
            pub fn encrypt_with_for_tests(&self, pt: &JsPlaintext, rng: &mut Prng) -> JsCiphertext {
                let ct = self.inner.encrypt_with(&pt.inner, rng);
                JsCiphertext::from(ct.expect("same params"))
            }
        }
    };
}

encrypt_with_for_tests!(JsSecretKey);

wire_class!(
    /// A public key: encrypts, cannot decrypt.
    JsPublicKey(PublicKey) as "PublicKey",
    from: /// Loads a public key from its wire bytes.
    to: /// The wire bytes (seeded form when the key has its seed).
);

#[wasm_bindgen(js_class = PublicKey)]
impl JsPublicKey {
    /// Encrypts a plaintext (never seeded: two full polynomials).
    pub fn encrypt(&self, plaintext: &JsPlaintext) -> Result<JsCiphertext, JsError> {
        js_result("PublicKey.encrypt", self.inner.encrypt(&plaintext.inner))
    }
}

encrypt_with_for_tests!(JsPublicKey);

wire_class!(
    /// A relinearization key (size-3 products back to size 2).
    JsRelinKey(RelinKey) as "RelinKey",
    from: /// Loads a relinearization key from its wire bytes.
    to: /// The wire bytes.
);

wire_class!(
    /// Galois keys (slot rotations).
    JsGaloisKeys(GaloisKeys) as "GaloisKeys",
    from: /// Loads Galois keys from their wire bytes.
    to: /// The wire bytes.
);
