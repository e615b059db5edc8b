//! The JavaScript facade (wasm32 only), exported with wasm-bindgen under
//! camelCase names. Errors become JS `Error`s here and nowhere else.
//!
//! * [`matching`]: the face-matching API a login page uses (`Keys`,
//!   `PublicKeyEncryptor`, and the server-side `Verifier` for Node).
//! * [`bfv`]: general BFV (`Params`, `SecretKey`, `PublicKey`, `RelinKey`,
//!   `GaloisKeys`, `Plaintext`, `Ciphertext`, `BatchEncoder`,
//!   `CoefficientEncoder`, `Evaluator`). Keys, plaintexts and ciphertexts are
//!   objects held in wasm memory; `toBytes()` / `fromBytes()` convert them to
//!   and from the wire format (docs/FORMAT.md).
//! * [`ntt`]: `NttPlan` and `nttPrimes`, for benchmarks.
//!
//! Robustness rules followed by every function here:
//!
//! * every failure is a returned `JsError` with a message that names the
//!   function and says what was wrong; no input reaches a panic (a panic in
//!   wasm is a trap);
//! * JS inputs of variable size are taken as JS values and their length is
//!   checked *before* anything is copied into wasm memory, so no input can
//!   make an allocation fail (which would abort, that is trap);
//! * JS values are inspected only with calls that cannot throw through Rust
//!   frames (`instanceof`, which wasm-bindgen wraps in `try`, and
//!   `Reflect.get`, imported with `catch`), so an exception never leaves a
//!   wasm-bindgen borrow flag set.

#[macro_use]
mod methods;

pub mod bfv;
pub mod matching;
pub mod ntt;

pub use self::bfv::{
    JsBatchEncoder, JsCiphertext, JsCoefficientEncoder, JsEvaluator, JsGaloisKeys, JsParams,
    JsPlaintext, JsPublicKey, JsRelinKey, JsSecretKey,
};
pub use self::matching::{JsKeys, JsPublicKeyEncryptor, JsVerifier};
pub use self::ntt::{ntt_primes, JsNttPlan};

use js_sys::{Float32Array, Int32Array, Reflect, Uint32Array, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use zeroize::Zeroize;

use crate::bfv::serialize::WireObject;
use crate::bfv::Params;
use crate::error::FormatError;

/// The largest byte input accepted (64 MiB): far above any object of the
/// supported parameters, far below what would exhaust wasm memory.
pub const MAX_INPUT_BYTES: u32 = 64 << 20;

/// A value, or the JS `Error` to throw.
pub(crate) type JsResult<T> = Result<T, JsError>;

/// `"{context}: {error}"` as a JS `Error`.
pub(crate) fn err(context: &str, e: impl std::fmt::Display) -> JsError {
    JsError::new(&format!("{context}: {e}"))
}

/// A short description of a JS value's type, for error messages.
pub(crate) fn type_name(v: &JsValue) -> String {
    if v.is_undefined() {
        "undefined".into()
    } else if v.is_null() {
        "null".into()
    } else if v.is_instance_of::<Uint8Array>() {
        "a Uint8Array".into()
    } else if v.is_instance_of::<Float32Array>() {
        "a Float32Array".into()
    } else if v.is_instance_of::<js_sys::Array>() {
        "an Array".into()
    } else if v.is_instance_of::<js_sys::ArrayBuffer>() {
        "an ArrayBuffer".into()
    } else if v.as_f64().is_some() {
        "a number".into()
    } else if v.is_string() {
        "a string".into()
    } else if v.is_bigint() {
        "a bigint".into()
    } else {
        "an object of another type".into()
    }
}

/// `v` as the JS class `A` (`name` is how messages call it, e.g. "a
/// Uint8Array"); `instanceof` cannot throw.
fn typed_in<'a, A: JsCast>(
    context: &str,
    what: &str,
    v: &'a JsValue,
    name: &str,
) -> JsResult<&'a A> {
    v.dyn_ref::<A>().ok_or_else(|| {
        JsError::new(&format!(
            "{context}: {what} must be {name}, got {}",
            type_name(v)
        ))
    })
}

/// Refuses a typed array of more than `max` values.
fn values_at_most(context: &str, what: &str, len: usize, max: usize) -> JsResult<()> {
    if len > max {
        return Err(JsError::new(&format!(
            "{context}: {what} has {len} values, at most {max} allowed"
        )));
    }
    Ok(())
}

/// `r` as a JS result: the value made into its class (`From`), the error
/// prefixed with `context` as [`err`] does.
pub(crate) fn js_result<T, U: From<T>, E: std::fmt::Display>(
    context: &str,
    r: Result<T, E>,
) -> JsResult<U> {
    r.map(U::from).map_err(|e| err(context, e))
}

/// The bytes of a `Uint8Array`, after checking its type and size.
pub(crate) fn bytes_in(context: &str, what: &str, v: &JsValue) -> JsResult<Vec<u8>> {
    let a: &Uint8Array = typed_in(context, what, v, "a Uint8Array")?;
    let len = a.length();
    if len > MAX_INPUT_BYTES {
        return Err(JsError::new(&format!(
            "{context}: {what} is {len} bytes, over the limit of {MAX_INPUT_BYTES}"
        )));
    }
    Ok(a.to_vec())
}

/// A `Uint8Array` copy of `bytes` (owned by the JS heap).
pub(crate) fn bytes_out(bytes: &[u8]) -> Uint8Array {
    Uint8Array::from(bytes)
}

/// Which loader of a wire object a call uses.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Check {
    /// `from_bytes`: every field checked.
    Format,
    /// `from_bytes_untrusted`: for input from another party (a ciphertext
    /// must also not be transparent).
    Untrusted,
}

/// Decodes wire bytes copied from JS, then zeroizes the copy. Every kind's
/// copy is zeroized: a secret key's bytes are secret, and one rule for all
/// kinds needs no flag.
pub(crate) fn decode<T: WireObject>(
    params: &Params,
    mut bytes: Vec<u8>,
    check: Check,
) -> Result<T, FormatError> {
    let r = match check {
        Check::Format => T::from_bytes(params, &bytes),
        Check::Untrusted => T::from_bytes_untrusted(params, &bytes),
    };
    bytes.zeroize();
    r
}

/// A wire object from a `Uint8Array` argument (`what` names it); every
/// error starts with `context`.
pub(crate) fn wire_in<T: WireObject>(
    context: &str,
    what: &str,
    params: &Params,
    v: &JsValue,
    check: Check,
) -> JsResult<T> {
    decode(params, bytes_in(context, what, v)?, check).map_err(|e| err(context, e))
}

/// The wire bytes of `obj` as a `Uint8Array`; the copy in wasm memory is
/// zeroized, as in [`decode`].
pub(crate) fn wire_out<T: WireObject>(obj: &T) -> Uint8Array {
    let mut b = obj.to_bytes();
    let out = bytes_out(&b);
    b.zeroize();
    out
}

/// The values of a `Float32Array` of exactly `n` elements.
pub(crate) fn f32_in(context: &str, what: &str, v: &JsValue, n: usize) -> JsResult<Vec<f32>> {
    let a: &Float32Array = typed_in(context, what, v, "a Float32Array")?;
    let len = a.length() as usize;
    if len != n {
        return Err(JsError::new(&format!(
            "{context}: {what} has {len} components; expected {n}"
        )));
    }
    Ok(a.to_vec())
}

/// `v[key]` through `Reflect.get` (a throwing getter becomes an error).
pub(crate) fn get(context: &str, v: &JsValue, key: &JsValue) -> JsResult<JsValue> {
    Reflect::get(v, key).map_err(|_| JsError::new(&format!("{context}: reading the input threw")))
}

/// The elements of a JS `Array` of at most `max` elements (not copied).
pub(crate) fn array_in(
    context: &str,
    what: &str,
    v: &JsValue,
    max: usize,
) -> JsResult<Vec<JsValue>> {
    if !v.is_instance_of::<js_sys::Array>() {
        return Err(JsError::new(&format!(
            "{context}: {what} must be an Array, got {}",
            type_name(v)
        )));
    }
    let len = get(context, v, &JsValue::from_str("length"))?
        .as_f64()
        .unwrap_or(-1.0);
    if !(len >= 0.0 && len.fract() == 0.0) {
        return Err(JsError::new(&format!(
            "{context}: {what} has no valid length"
        )));
    }
    if len > max as f64 {
        return Err(JsError::new(&format!(
            "{context}: {what} has {len} elements, at most {max} allowed"
        )));
    }
    (0..len as u32)
        .map(|i| get(context, v, &JsValue::from(i)))
        .collect()
}

/// Integers from an `Int32Array`, a `BigInt64Array`, or an `Array` of safe
/// integer numbers, at most `max` of them.
pub(crate) fn ints_in(context: &str, what: &str, v: &JsValue, max: usize) -> JsResult<Vec<i64>> {
    if let Some(a) = v.dyn_ref::<Int32Array>() {
        values_at_most(context, what, a.length() as usize, max)?;
        return Ok(a.to_vec().into_iter().map(i64::from).collect());
    }
    if let Some(a) = v.dyn_ref::<js_sys::BigInt64Array>() {
        values_at_most(context, what, a.length() as usize, max)?;
        return Ok(a.to_vec());
    }
    if v.is_instance_of::<js_sys::Array>() {
        let items = array_in(context, what, v, max)?;
        return items
            .iter()
            .enumerate()
            .map(|(i, x)| match x.as_f64() {
                Some(f) if f.fract() == 0.0 && f.abs() <= 9_007_199_254_740_991.0 => Ok(f as i64),
                _ => Err(JsError::new(&format!(
                    "{context}: {what}[{i}] is not a safe integer number"
                ))),
            })
            .collect();
    }
    Err(JsError::new(&format!(
        "{context}: {what} must be an Int32Array, a BigInt64Array or an Array of integers, got {}",
        type_name(v)
    )))
}

/// `Uint32Array` input of at most `max` values.
pub(crate) fn u32s_in(context: &str, what: &str, v: &JsValue, max: usize) -> JsResult<Vec<u32>> {
    let a: &Uint32Array = typed_in(context, what, v, "a Uint32Array")?;
    values_at_most(context, what, a.length() as usize, max)?;
    Ok(a.to_vec())
}

/// A JS number that must be a whole number in `0..=max` (`what` names it).
pub(crate) fn uint_in(context: &str, what: &str, v: f64, max: u64) -> JsResult<u64> {
    if v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v <= max as f64 {
        Ok(v as u64)
    } else {
        Err(JsError::new(&format!(
            "{context}: {what} must be a whole number from 0 to {max}, got {v}"
        )))
    }
}
