//! General BFV for JavaScript: parameters, keys, plaintexts, ciphertexts,
//! encoders and the evaluator. Objects live in wasm memory; `toBytes()` and
//! `fromBytes()` convert them to and from the wire format.
//!
//! This file holds `Params`, `Plaintext` and `Ciphertext`; `keys.rs`,
//! `encoders.rs` and `evaluator.rs` hold the rest.

use js_sys::{Uint32Array, Uint8Array};
use wasm_bindgen::prelude::*;

use super::{err, js_result, u32s_in, uint_in, wire_in, wire_out, Check};
use crate::bfv::{Ciphertext, Params, Plaintext};

mod encoders;
mod evaluator;
mod keys;

pub use self::encoders::{JsBatchEncoder, JsCoefficientEncoder};
pub use self::evaluator::JsEvaluator;
pub use self::keys::{JsGaloisKeys, JsPublicKey, JsRelinKey, JsSecretKey};

thread_local! {
    static AUTH4096: Params = Params::auth4096();
}

/// BFV parameters: ring degree n, plaintext modulus t, ciphertext primes Q
/// and the key-switching prime P, checked against the 128-bit security table.
#[wasm_bindgen(js_name = Params)]
#[derive(Clone, Debug)]
pub struct JsParams {
    pub(crate) inner: Params,
}

#[wasm_bindgen(js_class = Params)]
impl JsParams {
    /// The face-authentication preset: n = 4096, t = 65537 (slot batching),
    /// three 29-bit ciphertext primes and a 22-bit special prime
    /// (log2(Q·P) = 109, the 128-bit bound).
    pub fn auth4096() -> JsParams {
        JsParams {
            inner: AUTH4096.with(Params::clone),
        }
    }

    /// Custom parameters: `degree` a power of two, `plaintextModulus` t,
    /// NTT-friendly `ciphertextPrimes` (q ≡ 1 mod 2n, below 2^30) and
    /// `specialPrime`; `batching` needs t prime with t ≡ 1 (mod 2n). Refused
    /// when log2(Q·P) exceeds the 128-bit security bound for n.
    pub fn custom(
        degree: f64,
        #[wasm_bindgen(js_name = plaintextModulus)] plaintext_modulus: f64,
        #[wasm_bindgen(js_name = ciphertextPrimes, unchecked_param_type = "Uint32Array")]
        ciphertext_primes: &JsValue,
        #[wasm_bindgen(js_name = specialPrime)] special_prime: f64,
        batching: bool,
    ) -> Result<JsParams, JsError> {
        const C: &str = "Params.custom";
        let n = uint_in(C, "degree", degree, 1 << 20)?;
        let t = uint_in(C, "plaintextModulus", plaintext_modulus, u32::MAX as u64)?;
        let p = uint_in(C, "specialPrime", special_prime, u32::MAX as u64)?;
        let q = u32s_in(C, "ciphertextPrimes", ciphertext_primes, 64)?;
        let inner = Params::builder()
            .degree(n as usize)
            .plaintext_modulus(t)
            .ciphertext_primes(&q.iter().map(|&x| x as u64).collect::<Vec<_>>())
            .special_prime(p)
            .batching(batching)
            .build()
            .map_err(|e| err(C, e))?;
        Ok(JsParams { inner })
    }

    /// The parameter id carried by every serialized object (16 hex digits).
    #[wasm_bindgen(getter)]
    pub fn id(&self) -> String {
        self.inner.id_hex()
    }

    /// Ring degree n (also the number of slots).
    #[wasm_bindgen(getter)]
    pub fn degree(&self) -> u32 {
        self.inner.degree() as u32
    }

    /// Plaintext modulus t.
    #[wasm_bindgen(getter, js_name = plaintextModulus)]
    pub fn plaintext_modulus(&self) -> u32 {
        self.inner.plaintext_modulus()
    }

    /// The ciphertext primes q_0..q_{L-1}.
    #[wasm_bindgen(getter, js_name = ciphertextPrimes)]
    pub fn ciphertext_primes(&self) -> Uint32Array {
        Uint32Array::from(self.inner.ciphertext_primes())
    }

    /// The key-switching special prime P.
    #[wasm_bindgen(getter, js_name = specialPrime)]
    pub fn special_prime(&self) -> u32 {
        self.inner.special_prime()
    }

    /// log2(Q·P) as the security gate counts it (sum of the primes' bit lengths).
    #[wasm_bindgen(getter, js_name = modulusBits)]
    pub fn modulus_bits(&self) -> u32 {
        self.inner.modulus_bits()
    }

    /// Whether slot batching (`BatchEncoder`) is available.
    #[wasm_bindgen(getter)]
    pub fn batching(&self) -> bool {
        self.inner.batching()
    }
}

wire_class!(
    /// A plaintext polynomial (coefficients mod t).
    JsPlaintext(Plaintext) as "Plaintext",
    from: /// Loads a plaintext from its wire bytes.
    to: /// The wire bytes.
);

#[wasm_bindgen(js_class = Plaintext)]
impl JsPlaintext {
    /// A plaintext from up to n coefficients in `[0, t)` (missing ones are 0).
    #[wasm_bindgen(js_name = fromCoefficients)]
    pub fn from_coefficients(
        params: &JsParams,
        #[wasm_bindgen(unchecked_param_type = "Uint32Array")] coefficients: &JsValue,
    ) -> Result<JsPlaintext, JsError> {
        const C: &str = "Plaintext.fromCoefficients";
        let p = &params.inner;
        let c = u32s_in(C, "coefficients", coefficients, p.degree())?;
        js_result(C, Plaintext::from_coeffs(p, &c))
    }

    /// All n coefficients, in `[0, t)`.
    pub fn coefficients(&self) -> Uint32Array {
        Uint32Array::from(self.inner.coeffs())
    }
}

wire_class!(
    /// A ciphertext of size 2 (fresh) or 3 (after `multiply`), in wasm memory.
    JsCiphertext(Ciphertext) as "Ciphertext",
    from: /// Loads a ciphertext from its wire bytes (a seeded `c1` is expanded).
    to: /// The wire bytes (compact seeded form for a fresh secret-key encryption).
);

#[wasm_bindgen(js_class = Ciphertext)]
impl JsCiphertext {
    /// As `fromBytes`, and also refuses a transparent ciphertext (one that
    /// anyone can read). Use this for ciphertexts received from others.
    #[wasm_bindgen(js_name = fromBytesUntrusted)]
    pub fn from_bytes_untrusted(
        params: &JsParams,
        #[wasm_bindgen(unchecked_param_type = "Uint8Array")] bytes: &JsValue,
    ) -> Result<JsCiphertext, JsError> {
        const C: &str = "Ciphertext.fromBytesUntrusted";
        wire_in::<Ciphertext>(C, "bytes", &params.inner, bytes, Check::Untrusted)
            .map(JsCiphertext::from)
    }

    /// Number of polynomials: 2, or 3 after `multiply`.
    #[wasm_bindgen(getter)]
    pub fn size(&self) -> u32 {
        self.inner.size() as u32
    }

    /// Its level: the number of ciphertext primes it is defined over.
    #[wasm_bindgen(getter)]
    pub fn level(&self) -> u32 {
        self.inner.level() as u32
    }

    /// Whether it still serializes as seed + one polynomial.
    #[wasm_bindgen(getter)]
    pub fn seeded(&self) -> bool {
        self.inner.is_seeded()
    }
}
