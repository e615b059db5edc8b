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
//! * byte inputs are checked against the largest valid object of their kind
//!   (`WireObject::max_len`), other typed arrays against their own limit;
//! * JS values are inspected only with calls that cannot throw through Rust
//!   frames (`instanceof`, which wasm-bindgen wraps in `try`, and
//!   `Reflect.get`, `Function.prototype.call`, imported with `catch`), so an
//!   exception never leaves a wasm-bindgen borrow flag set. Typed arrays are
//!   measured and copied with the built-in `%TypedArray%.prototype` length
//!   getter and `set` (a subclass's own `length` getter is never called; a
//!   detached buffer has length 0).

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

use js_sys::{Float32Array, Function, Int32Array, Object, Reflect, Uint32Array, Uint8Array};
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

/// The built-in `%TypedArray%.prototype` length getter and `set`, which
/// read a typed array's internal slots whatever its class overrides.
struct TypedArrayIntrinsics {
    length: Function,
    set: Function,
}

thread_local! {
    static INTRINSICS: Option<TypedArrayIntrinsics> = {
        let proto = Object::get_prototype_of(&Object::get_prototype_of(&Uint8Array::new_with_length(0)));
        let desc = Object::get_own_property_descriptor(&proto, &JsValue::from_str("length"));
        let length = Reflect::get(&desc, &JsValue::from_str("get")).ok()
            .and_then(|f| f.dyn_into::<Function>().ok());
        let set = Reflect::get(&proto, &JsValue::from_str("set")).ok()
            .and_then(|f| f.dyn_into::<Function>().ok());
        Some(TypedArrayIntrinsics { length: length?, set: set? })
    };
}

fn intrinsics<T>(
    context: &str,
    f: impl FnOnce(&TypedArrayIntrinsics) -> JsResult<T>,
) -> JsResult<T> {
    INTRINSICS.with(|i| match i {
        Some(i) => f(i),
        None => Err(JsError::new(&format!(
            "{context}: typed arrays are not available"
        ))),
    })
}

/// The number of elements of typed array `a` (0 if its buffer is
/// detached), read without calling anything `a` overrides.
fn typed_len(context: &str, what: &str, a: &JsValue) -> JsResult<usize> {
    intrinsics(context, |i| {
        i.length
            .call0(a)
            .ok()
            .and_then(|n| n.as_f64())
            .map(|n| n as usize)
            .ok_or_else(|| JsError::new(&format!("{context}: {what} is not a typed array")))
    })
}

/// Copies typed array `src` into `view` (a view of wasm memory of the same
/// length) with the built-in `set`; a failure is an error, not a throw.
fn typed_copy(context: &str, what: &str, view: &JsValue, src: &JsValue) -> JsResult<()> {
    intrinsics(context, |i| {
        i.set
            .call1(view, src)
            .map(drop)
            .map_err(|_| JsError::new(&format!("{context}: reading {what} threw")))
    })
}

/// The values of typed array `v` (of class `A`, `name` in messages, e.g. "a
/// Float32Array"), at most `max` of them, copied with the built-ins.
/// `view` makes a view of wasm memory over the output.
fn typed_in<A: JsCast, T: Default + Clone>(
    context: &str,
    what: &str,
    v: &JsValue,
    name: &str,
    max: usize,
    view: unsafe fn(*mut T, usize) -> A,
) -> JsResult<Vec<T>> {
    if !v.is_instance_of::<A>() {
        return Err(JsError::new(&format!(
            "{context}: {what} must be {name}, got {}",
            type_name(v)
        )));
    }
    let len = typed_len(context, what, v)?;
    values_at_most(context, what, len, max)?;
    let mut out = vec![T::default(); len];
    if len > 0 {
        // SAFETY: the view covers `out` exactly and is used (by `set`, which
        // allocates nothing in wasm memory) before `out` moves or drops.
        let view = unsafe { view(out.as_mut_ptr(), len) };
        typed_copy(context, what, view.unchecked_ref(), v)?;
    }
    Ok(out)
}

/// The bytes of a `Uint8Array` of at most `max` bytes (`max` no larger than
/// [`MAX_INPUT_BYTES`]): checked before anything is copied.
pub(crate) fn bytes_in(context: &str, what: &str, v: &JsValue, max: u64) -> JsResult<Vec<u8>> {
    if !v.is_instance_of::<Uint8Array>() {
        return Err(JsError::new(&format!(
            "{context}: {what} must be a Uint8Array, got {}",
            type_name(v)
        )));
    }
    let max = max.min(MAX_INPUT_BYTES as u64) as usize;
    let len = typed_len(context, what, v)?;
    if len > max {
        return Err(JsError::new(&format!(
            "{context}: {what} is {len} bytes, at most {max} bytes for this kind of object"
        )));
    }
    typed_in(
        context,
        what,
        v,
        "a Uint8Array",
        max,
        Uint8Array::view_mut_raw,
    )
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
    decode(
        params,
        bytes_in(context, what, v, T::max_len(params))?,
        check,
    )
    .map_err(|e| err(context, e))
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
    if v.is_instance_of::<Float32Array>() {
        let len = typed_len(context, what, v)?;
        if len != n {
            return Err(JsError::new(&format!(
                "{context}: {what} has {len} components; expected {n}"
            )));
        }
    }
    typed_in(
        context,
        what,
        v,
        "a Float32Array",
        n,
        Float32Array::view_mut_raw,
    )
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
    if v.is_instance_of::<Int32Array>() {
        let a = typed_in(
            context,
            what,
            v,
            "an Int32Array",
            max,
            Int32Array::view_mut_raw,
        )?;
        return Ok(a.into_iter().map(i64::from).collect());
    }
    if v.is_instance_of::<js_sys::BigInt64Array>() {
        return typed_in(
            context,
            what,
            v,
            "a BigInt64Array",
            max,
            js_sys::BigInt64Array::view_mut_raw,
        );
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
    typed_in(
        context,
        what,
        v,
        "a Uint32Array",
        max,
        Uint32Array::view_mut_raw,
    )
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
