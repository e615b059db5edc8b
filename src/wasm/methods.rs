//! The macros that write methods several classes share, each under the
//! class's own doc comments (wasm-bindgen turns those into the `.d.ts`, so
//! they cannot be shared). Each expands where it is used: the helpers it
//! names (`wire_in`, `quantizer`, ...) are the ones in scope there.

/// `From<$ty>` for a class whose only field `inner` holds a `$ty`, so that
/// [`js_result`](super::js_result) can make the class from a result.
macro_rules! wraps {
    ($js:ident, $ty:ident) => {
        impl From<$ty> for $js {
            fn from(inner: $ty) -> $js {
                $js { inner }
            }
        }
    };
}

/// `fromBytes` and `toBytes` of a class whose `inner` holds the wire object
/// `$ty`: one generic load ([`wire_in`](super::wire_in)) and store
/// ([`wire_out`](super::wire_out)) for every kind. The class is made from
/// the object by its `From<$ty>`; the doc comments are the class's own.
macro_rules! wire_methods {
    ($js:ident, $ty:ident, $class:tt,
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
                wire_in::<$ty>(C, "bytes", &params.inner, bytes, Check::Format).map(<$js>::from)
            }

            $(#[doc = $to])*
            #[wasm_bindgen(js_name = toBytes)]
            pub fn to_bytes(&self) -> Uint8Array {
                wire_out::<$ty>(&self.inner)
            }
        }
    };
}

/// A class that only holds the wire object `$ty` (in `inner`): the struct
/// under its doc comment, its `From<$ty>` and its [`wire_methods`].
macro_rules! wire_class {
    ($(#[doc = $doc:tt])* $js:ident($ty:ident) as $class:tt,
        from: $(#[doc = $from:tt])*
        to: $(#[doc = $to:tt])*
    ) => {
        $(#[doc = $doc])*
        #[wasm_bindgen(js_name = $class)]
        #[derive(Clone, Debug)]
        pub struct $js {
            pub(crate) inner: $ty,
        }

        wraps!($js, $ty);

        wire_methods!($js, $ty, $class, from: $(#[doc = $from])* to: $(#[doc = $to])*);
    };
}

/// `encode` and `decode` of an encoder class with fields `inner` (the
/// encoder) and `params`; the doc comments are the class's own.
macro_rules! encoder_methods {
    ($js:ident, $class:tt,
        encode: $(#[doc = $enc:tt])*
        decode: $(#[doc = $dec:tt])*
    ) => {
        #[wasm_bindgen(js_class = $class)]
        impl $js {
            $(#[doc = $enc])*
            pub fn encode(
                &self,
                #[wasm_bindgen(unchecked_param_type = "Int32Array | BigInt64Array | number[]")]
                values: &JsValue,
            ) -> Result<JsPlaintext, JsError> {
                const C: &str = concat!($class, ".encode");
                let v = ints_in(C, "values", values, self.params.degree())?;
                js_result(C, self.inner.encode(&v))
            }

            $(#[doc = $dec])*
            pub fn decode(&self, plaintext: &JsPlaintext) -> Result<Int32Array, JsError> {
                const C: &str = concat!($class, ".decode");
                let v = self.inner.decode(&plaintext.inner).map_err(|e| err(C, e))?;
                Ok(to_i32_array(&v))
            }
        }
    };
}

/// `encryptTemplates` and `encryptProbe` of a class with fields `params`
/// and `$key`, which `$templates` and `$probe` encrypt with; the doc comments
/// are the class's own.
macro_rules! encrypt_methods {
    ($js:ident, $class:tt, $key:ident, $templates:path, $probe:path,
        templates: $(#[doc = $t:tt])*
        probe: $(#[doc = $p:tt])*
    ) => {
        #[wasm_bindgen(js_class = $class)]
        impl $js {
            $(#[doc = $t])*
            #[wasm_bindgen(js_name = encryptTemplates)]
            pub fn encrypt_templates(
                &self,
                #[wasm_bindgen(unchecked_param_type = "Float32Array[]")] embeddings: &JsValue,
                dim: f64,
            ) -> Result<Uint8Array, JsError> {
                const C: &str = concat!($class, ".encryptTemplates");
                let q = quantizer(C, &self.params, dim)?;
                let e = embeddings_in(C, &self.params, &q, embeddings)?;
                let ct = $templates(&self.$key, &q, &as_slices(&e), &mut rng(C)?)
                    .map_err(|e| err(C, e))?;
                Ok(wire_out(&ct))
            }

            $(#[doc = $p])*
            #[wasm_bindgen(js_name = encryptProbe)]
            pub fn encrypt_probe(
                &self,
                #[wasm_bindgen(unchecked_param_type = "Float32Array")] embedding: &JsValue,
                dim: f64,
            ) -> Result<Uint8Array, JsError> {
                const C: &str = concat!($class, ".encryptProbe");
                let q = quantizer(C, &self.params, dim)?;
                let e = f32_in(C, "embedding", embedding, q.dim())?;
                let ct = $probe(&self.$key, &q, &e, &mut rng(C)?).map_err(|e| err(C, e))?;
                Ok(wire_out(&ct))
            }
        }
    };
}
