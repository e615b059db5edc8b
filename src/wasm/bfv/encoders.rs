//! Encoders for JavaScript: `BatchEncoder` (slots) and `CoefficientEncoder`
//! (coefficients).

use js_sys::{BigInt64Array, Int32Array};
use wasm_bindgen::prelude::*;

use super::{JsParams, JsPlaintext};
use crate::bfv::{BatchEncoder, CoefficientEncoder, Params};
use crate::wasm::{err, ints_in, js_result};

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

encoder_methods!(JsBatchEncoder, "BatchEncoder",
    encode: /// Encodes up to n integers in `(-t, t)` (an `Int32Array`, a
        /// `BigInt64Array` or an array of safe integers); missing slots are 0.
    decode: /// All n slots, centred into `(-t/2, t/2]`.
);

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
}

encoder_methods!(JsCoefficientEncoder, "CoefficientEncoder",
    encode: /// Encodes up to n integers in `(-t, t)`; missing coefficients are 0.
    decode: /// All n coefficients, centred into `(-t/2, t/2]`.
);
