//! General BFV for JavaScript: parameters, keys, plaintexts, ciphertexts,
//! encoders and the evaluator. Objects live in wasm memory; `toBytes()` and
//! `fromBytes()` convert them to and from the wire format.

use std::rc::Rc;

use js_sys::{BigInt64Array, Int32Array, Uint32Array, Uint8Array};
use wasm_bindgen::prelude::*;

use super::{err, ints_in, u32s_in, uint_in, wire_in, wire_out, Check};
use crate::bfv::{
    BatchEncoder, Ciphertext, CoefficientEncoder, Evaluator, GaloisKeys, Params, Plaintext, Prng,
    PublicKey, RelinKey, SecretKey,
};

/// `fromBytes` and `toBytes` of a class whose `inner` holds the wire object
/// `$ty`: one generic load ([`wire_in`]) and store ([`wire_out`]) for every
/// kind. `$wrap` makes the class from the object; the doc comments are the
/// class's own.
macro_rules! wire_methods {
    ($js:ident, $ty:ident, $class:tt, $wrap:expr,
        from: $(#[doc = $from:tt])*
        to: $(#[doc = $to:tt])*
    ) => {
        #[wasm_bindgen(js_class = $class)]
        impl $js {
            $(#[doc = $from])*
            #[wasm_bindgen(js_name = fromBytes)]
            pub fn from_bytes(
                params: &JsParams,
                #[wasm_bindgen(unchecked_param_type = "Uint8Array")] bytes: &JsValue,
            ) -> Result<$js, JsError> {
                const C: &str = concat!($class, ".fromBytes");
                wire_in::<$ty>(C, "bytes", &params.inner, bytes, Check::Format).map($wrap)
            }

            $(#[doc = $to])*
            #[wasm_bindgen(js_name = toBytes)]
            pub fn to_bytes(&self) -> Uint8Array {
                wire_out::<$ty>(&self.inner)
            }
        }
    };
}

/// Most rotation steps per `galoisKeys` call (each key is large).
const MAX_GALOIS_STEPS: usize = 64;

thread_local! {
    static AUTH4096: Params = Params::auth4096();
}

/// Checks that an object belongs to the parameters it is used with.
fn same_params(context: &str, expected: &Params, actual: &Params) -> Result<(), JsError> {
    expected.check(actual).map_err(|e| err(context, e))
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

/// A plaintext polynomial (coefficients mod t).
#[wasm_bindgen(js_name = Plaintext)]
#[derive(Clone, Debug)]
pub struct JsPlaintext {
    pub(crate) inner: Plaintext,
}

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
        let inner = Plaintext::from_coeffs(p, &c).map_err(|e| err(C, e))?;
        Ok(JsPlaintext { inner })
    }

    /// All n coefficients, in `[0, t)`.
    pub fn coefficients(&self) -> Uint32Array {
        Uint32Array::from(self.inner.coeffs())
    }
}

wire_methods!(JsPlaintext, Plaintext, "Plaintext", |inner| JsPlaintext { inner },
    from: /// Loads a plaintext from its wire bytes.
    to: /// The wire bytes.
);

/// A ciphertext of size 2 (fresh) or 3 (after `multiply`), in wasm memory.
#[wasm_bindgen(js_name = Ciphertext)]
#[derive(Clone, Debug)]
pub struct JsCiphertext {
    pub(crate) inner: Ciphertext,
}

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
        let inner = wire_in(C, "bytes", &params.inner, bytes, Check::Untrusted)?;
        Ok(JsCiphertext { inner })
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

wire_methods!(JsCiphertext, Ciphertext, "Ciphertext", |inner| JsCiphertext { inner },
    from: /// Loads a ciphertext from its wire bytes (a seeded `c1` is expanded).
    to: /// The wire bytes (compact seeded form for a fresh secret-key encryption).
);

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
        let sk = SecretKey::generate(&params.inner).map_err(|e| err("SecretKey.generate", e))?;
        Ok(JsSecretKey { inner: Rc::new(sk) })
    }

    /// A fresh public key for this secret key.
    #[wasm_bindgen(js_name = publicKey)]
    pub fn public_key(&self) -> Result<JsPublicKey, JsError> {
        let pk = PublicKey::new(&self.inner).map_err(|e| err("SecretKey.publicKey", e))?;
        Ok(JsPublicKey { inner: pk })
    }

    /// A fresh relinearization key (about 164 KB on the wire at auth4096).
    #[wasm_bindgen(js_name = relinKey)]
    pub fn relin_key(&self) -> Result<JsRelinKey, JsError> {
        let rk = RelinKey::new(&self.inner).map_err(|e| err("SecretKey.relinKey", e))?;
        Ok(JsRelinKey { inner: rk })
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
        let gk = GaloisKeys::new(&self.inner, &steps).map_err(|e| err(C, e))?;
        Ok(JsGaloisKeys { inner: gk })
    }

    /// Encrypts a plaintext (seeded: serializes as seed + one polynomial).
    pub fn encrypt(&self, plaintext: &JsPlaintext) -> Result<JsCiphertext, JsError> {
        let ct = self
            .inner
            .encrypt(&plaintext.inner)
            .map_err(|e| err("SecretKey.encrypt", e))?;
        Ok(JsCiphertext { inner: ct })
    }

    /// Decrypts a ciphertext of size 2 or 3.
    pub fn decrypt(&self, ciphertext: &JsCiphertext) -> Result<JsPlaintext, JsError> {
        let pt = self
            .inner
            .decrypt(&ciphertext.inner)
            .map_err(|e| err("SecretKey.decrypt", e))?;
        Ok(JsPlaintext { inner: pt })
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

wire_methods!(JsSecretKey, SecretKey, "SecretKey", |sk| JsSecretKey { inner: Rc::new(sk) },
    from: /// Loads a key exported by `toBytes()`.
    to: /// The key's bytes, for its owner's own storage. Secret: never send it
        /// anywhere; overwrite the array (`fill(0)`) when done.
);

#[doc(hidden)]
impl JsSecretKey {
    /// Test-only (known-answer vectors): encryption from a given generator.
    pub fn encrypt_with_for_tests(&self, pt: &JsPlaintext, rng: &mut Prng) -> JsCiphertext {
        JsCiphertext {
            inner: self
                .inner
                .encrypt_with(&pt.inner, rng)
                .expect("same params"),
        }
    }
}

/// A public key: encrypts, cannot decrypt.
#[wasm_bindgen(js_name = PublicKey)]
#[derive(Clone, Debug)]
pub struct JsPublicKey {
    pub(crate) inner: PublicKey,
}

#[wasm_bindgen(js_class = PublicKey)]
impl JsPublicKey {
    /// Encrypts a plaintext (never seeded: two full polynomials).
    pub fn encrypt(&self, plaintext: &JsPlaintext) -> Result<JsCiphertext, JsError> {
        let ct = self
            .inner
            .encrypt(&plaintext.inner)
            .map_err(|e| err("PublicKey.encrypt", e))?;
        Ok(JsCiphertext { inner: ct })
    }
}

wire_methods!(JsPublicKey, PublicKey, "PublicKey", |inner| JsPublicKey { inner },
    from: /// Loads a public key from its wire bytes.
    to: /// The wire bytes (seeded form when the key has its seed).
);

#[doc(hidden)]
impl JsPublicKey {
    /// Test-only (known-answer vectors): encryption from a given generator.
    pub fn encrypt_with_for_tests(&self, pt: &JsPlaintext, rng: &mut Prng) -> JsCiphertext {
        JsCiphertext {
            inner: self
                .inner
                .encrypt_with(&pt.inner, rng)
                .expect("same params"),
        }
    }
}

/// A relinearization key (size-3 products back to size 2).
#[wasm_bindgen(js_name = RelinKey)]
#[derive(Clone, Debug)]
pub struct JsRelinKey {
    pub(crate) inner: RelinKey,
}

wire_methods!(JsRelinKey, RelinKey, "RelinKey", |inner| JsRelinKey { inner },
    from: /// Loads a relinearization key from its wire bytes.
    to: /// The wire bytes.
);

/// Galois keys (slot rotations).
#[wasm_bindgen(js_name = GaloisKeys)]
#[derive(Clone, Debug)]
pub struct JsGaloisKeys {
    pub(crate) inner: GaloisKeys,
}

wire_methods!(JsGaloisKeys, GaloisKeys, "GaloisKeys", |inner| JsGaloisKeys { inner },
    from: /// Loads Galois keys from their wire bytes.
    to: /// The wire bytes.
);

/// Slot encoding: n integers in `(-t, t)` as two rows of n/2 slots;
/// products act slot by slot. Needs parameters with batching.
#[wasm_bindgen(js_name = BatchEncoder)]
#[derive(Clone, Debug)]
pub struct JsBatchEncoder {
    inner: BatchEncoder,
    params: Params,
}

#[wasm_bindgen(js_class = BatchEncoder)]
impl JsBatchEncoder {
    /// An encoder for `params` (fails unless batching is on).
    #[wasm_bindgen(constructor)]
    pub fn new(params: &JsParams) -> Result<JsBatchEncoder, JsError> {
        let inner = BatchEncoder::new(&params.inner).map_err(|e| err("new BatchEncoder", e))?;
        Ok(JsBatchEncoder {
            inner,
            params: params.inner.clone(),
        })
    }

    /// Number of slots (n).
    #[wasm_bindgen(getter)]
    pub fn slots(&self) -> u32 {
        self.inner.slots() as u32
    }

    /// Encodes up to n integers in `(-t, t)` (an `Int32Array`, a
    /// `BigInt64Array` or an array of safe integers); missing slots are 0.
    pub fn encode(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Int32Array | BigInt64Array | number[]")]
        values: &JsValue,
    ) -> Result<JsPlaintext, JsError> {
        const C: &str = "BatchEncoder.encode";
        let v = ints_in(C, "values", values, self.params.degree())?;
        let inner = self.inner.encode(&v).map_err(|e| err(C, e))?;
        Ok(JsPlaintext { inner })
    }

    /// All n slots, centred into `(-t/2, t/2]`.
    pub fn decode(&self, plaintext: &JsPlaintext) -> Result<Int32Array, JsError> {
        let v = self
            .inner
            .decode(&plaintext.inner)
            .map_err(|e| err("BatchEncoder.decode", e))?;
        Ok(to_i32_array(&v))
    }

    /// As `decode`, as a `BigInt64Array`.
    #[wasm_bindgen(js_name = decodeBigInt64)]
    pub fn decode_bigint64(&self, plaintext: &JsPlaintext) -> Result<BigInt64Array, JsError> {
        let v = self
            .inner
            .decode(&plaintext.inner)
            .map_err(|e| err("BatchEncoder.decodeBigInt64", e))?;
        Ok(BigInt64Array::from(&v[..]))
    }
}

/// Centred values below 2^31 in magnitude (t < 2^32) fit an `i32`.
fn to_i32_array(v: &[i64]) -> Int32Array {
    let w: Vec<i32> = v.iter().map(|&x| x as i32).collect();
    Int32Array::from(&w[..])
}

/// Coefficient encoding: value i is coefficient i; products are negacyclic
/// convolutions (what the face-matching packing uses).
#[wasm_bindgen(js_name = CoefficientEncoder)]
#[derive(Clone, Debug)]
pub struct JsCoefficientEncoder {
    inner: CoefficientEncoder,
    params: Params,
}

#[wasm_bindgen(js_class = CoefficientEncoder)]
impl JsCoefficientEncoder {
    /// An encoder for `params`.
    #[wasm_bindgen(constructor)]
    pub fn new(params: &JsParams) -> JsCoefficientEncoder {
        JsCoefficientEncoder {
            inner: CoefficientEncoder::new(&params.inner),
            params: params.inner.clone(),
        }
    }

    /// Encodes up to n integers in `(-t, t)`; missing coefficients are 0.
    pub fn encode(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Int32Array | BigInt64Array | number[]")]
        values: &JsValue,
    ) -> Result<JsPlaintext, JsError> {
        const C: &str = "CoefficientEncoder.encode";
        let v = ints_in(C, "values", values, self.params.degree())?;
        let inner = self.inner.encode(&v).map_err(|e| err(C, e))?;
        Ok(JsPlaintext { inner })
    }

    /// All n coefficients, centred into `(-t/2, t/2]`.
    pub fn decode(&self, plaintext: &JsPlaintext) -> Result<Int32Array, JsError> {
        let v = self
            .inner
            .decode(&plaintext.inner)
            .map_err(|e| err("CoefficientEncoder.decode", e))?;
        Ok(to_i32_array(&v))
    }
}

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
        let r = self
            .inner
            .add(&a.inner, &b.inner)
            .map_err(|e| err("Evaluator.add", e))?;
        Ok(JsCiphertext { inner: r })
    }

    /// `a - b`.
    pub fn sub(&self, a: &JsCiphertext, b: &JsCiphertext) -> Result<JsCiphertext, JsError> {
        let r = self
            .inner
            .sub(&a.inner, &b.inner)
            .map_err(|e| err("Evaluator.sub", e))?;
        Ok(JsCiphertext { inner: r })
    }

    /// `-a`.
    pub fn negate(&self, a: &JsCiphertext) -> Result<JsCiphertext, JsError> {
        let mut r = a.inner.clone();
        self.inner
            .negate_assign(&mut r)
            .map_err(|e| err("Evaluator.negate", e))?;
        Ok(JsCiphertext { inner: r })
    }

    /// `a + plaintext`, at any level.
    #[wasm_bindgen(js_name = addPlain)]
    pub fn add_plain(
        &self,
        a: &JsCiphertext,
        plaintext: &JsPlaintext,
    ) -> Result<JsCiphertext, JsError> {
        let mut r = a.inner.clone();
        self.inner
            .add_plain_assign(&mut r, &plaintext.inner)
            .map_err(|e| err("Evaluator.addPlain", e))?;
        Ok(JsCiphertext { inner: r })
    }

    /// `a · plaintext`.
    #[wasm_bindgen(js_name = multiplyPlain)]
    pub fn multiply_plain(
        &self,
        a: &JsCiphertext,
        plaintext: &JsPlaintext,
    ) -> Result<JsCiphertext, JsError> {
        let r = self
            .inner
            .multiply_plain(&a.inner, &plaintext.inner)
            .map_err(|e| err("Evaluator.multiplyPlain", e))?;
        Ok(JsCiphertext { inner: r })
    }

    /// `a · b`: a size-3 ciphertext (decryptable as is, or relinearized).
    /// Both inputs must be of size 2 over all ciphertext primes.
    pub fn multiply(&self, a: &JsCiphertext, b: &JsCiphertext) -> Result<JsCiphertext, JsError> {
        let r = self
            .inner
            .multiply(&a.inner, &b.inner)
            .map_err(|e| err("Evaluator.multiply", e))?;
        Ok(JsCiphertext { inner: r })
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
        let r = self
            .inner
            .multiply_relin(&a.inner, &b.inner, &relin_key.inner)
            .map_err(|e| err("Evaluator.multiplyRelin", e))?;
        Ok(JsCiphertext { inner: r })
    }

    /// A size-3 ciphertext back to size 2 (size 2 is returned unchanged).
    pub fn relinearize(
        &self,
        a: &JsCiphertext,
        #[wasm_bindgen(js_name = relinKey)] relin_key: &JsRelinKey,
    ) -> Result<JsCiphertext, JsError> {
        let r = self
            .inner
            .relinearize(&a.inner, &relin_key.inner)
            .map_err(|e| err("Evaluator.relinearize", e))?;
        Ok(JsCiphertext { inner: r })
    }

    /// Rotates both slot rows left by `step` (right if negative).
    #[wasm_bindgen(js_name = rotateRows)]
    pub fn rotate_rows(
        &self,
        a: &JsCiphertext,
        step: i32,
        #[wasm_bindgen(js_name = galoisKeys)] galois_keys: &JsGaloisKeys,
    ) -> Result<JsCiphertext, JsError> {
        let r = self
            .inner
            .rotate_rows(&a.inner, step, &galois_keys.inner)
            .map_err(|e| err("Evaluator.rotateRows", e))?;
        Ok(JsCiphertext { inner: r })
    }

    /// Swaps the two slot rows.
    #[wasm_bindgen(js_name = rotateColumns)]
    pub fn rotate_columns(
        &self,
        a: &JsCiphertext,
        #[wasm_bindgen(js_name = galoisKeys)] galois_keys: &JsGaloisKeys,
    ) -> Result<JsCiphertext, JsError> {
        let r = self
            .inner
            .rotate_columns(&a.inner, &galois_keys.inner)
            .map_err(|e| err("Evaluator.rotateColumns", e))?;
        Ok(JsCiphertext { inner: r })
    }

    /// Drops the last ciphertext prime (smaller ciphertext, same plaintext).
    #[wasm_bindgen(js_name = modSwitchToNext)]
    pub fn mod_switch_to_next(&self, a: &JsCiphertext) -> Result<JsCiphertext, JsError> {
        same_params("Evaluator.modSwitchToNext", &self.params, a.inner.params())?;
        let r = self
            .inner
            .mod_switch_to_next(&a.inner)
            .map_err(|e| err("Evaluator.modSwitchToNext", e))?;
        Ok(JsCiphertext { inner: r })
    }
}
