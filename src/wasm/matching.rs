//! Encrypted face matching for JavaScript: the key holder's side (`Keys`),
//! service-key enrollment (`PublicKeyEncryptor`) and the server's 1:1 step
//! (`Verifier`, for Node services and tests; a browser never verifies its own
//! login).

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::{Object, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;

use super::bfv::{JsParams, JsPublicKey, JsSecretKey};
use super::{array_in, bytes_in, decode, err, f32_in, uint_in, wire_in, wire_out, Check};
use crate::bfv::serialize::WireObject;
use crate::bfv::{Ciphertext, Params, Prng, PublicKey, RelinKey, SecretKey};
use crate::matching::{client, pack, Quantizer, ScoreReply, Verifier};

#[wasm_bindgen(typescript_custom_section)]
const SCORES_TS: &str = r#"
/** Scores read from a decrypted verification reply. */
export interface Scores {
  /** Exact integer inner products of the quantized vectors, one per template. */
  scores: number[];
  /** The same as cosine similarities (score / s², s the quantizer's scale). */
  cosines: number[];
}
"#;

/// The embedding dimension when a call does not give one.
const DEFAULT_DIM: f64 = 128.0;

fn quantizer(context: &str, params: &Params, dim: f64) -> Result<Quantizer, JsError> {
    let dim = uint_in(context, "dim", dim, 1 << 20)? as usize;
    Quantizer::new(params, dim).map_err(|e| err(context, e))
}

fn rng(context: &str) -> Result<Prng, JsError> {
    Prng::from_os().map_err(|e| err(context, e))
}

/// The embeddings of an `Array` of `Float32Array`s, each of length `dim`, at
/// most as many as fit in one ciphertext.
fn embeddings_in(
    context: &str,
    params: &Params,
    q: &Quantizer,
    embeddings: &JsValue,
) -> Result<Vec<Vec<f32>>, JsError> {
    let max = pack::templates_per_ciphertext(params, q.dim());
    let items = array_in(context, "embeddings", embeddings, max)?;
    if items.is_empty() {
        return Err(JsError::new(&format!(
            "{context}: at least one embedding is needed"
        )));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, v)| f32_in(context, &format!("embeddings[{i}]"), v, q.dim()))
        .collect()
}

fn as_slices(v: &[Vec<f32>]) -> Vec<&[f32]> {
    v.iter().map(Vec::as_slice).collect()
}

/// A user's keys for face matching, held in wasm memory. The secret key is
/// zeroized when this object (and every `SecretKey` obtained from it) is
/// freed.
///
/// ```js
/// const keys = Keys.generate(Params.auth4096());
/// upload(keys.publicKey());
/// const template = keys.encryptTemplates([emb1, emb2], 128);
/// const probe = keys.encryptProbe(emb, 128);
/// const { scores, cosines } = keys.decryptScores(reply, 2);
/// ```
#[wasm_bindgen(js_name = Keys)]
#[derive(Debug)]
pub struct JsKeys {
    params: Params,
    sk: Rc<SecretKey>,
    pk: PublicKey,
    rk: RefCell<Option<RelinKey>>,
}

impl JsKeys {
    fn with_secret(context: &str, sk: SecretKey) -> Result<JsKeys, JsError> {
        let pk = PublicKey::new(&sk).map_err(|e| err(context, e))?;
        Ok(JsKeys {
            params: sk.params().clone(),
            sk: Rc::new(sk),
            pk,
            rk: RefCell::new(None),
        })
    }
}

#[wasm_bindgen(js_class = Keys)]
impl JsKeys {
    /// Fresh keys (secret and public) from `crypto.getRandomValues`.
    pub fn generate(params: &JsParams) -> Result<JsKeys, JsError> {
        const C: &str = "Keys.generate";
        let sk = SecretKey::generate(&params.inner).map_err(|e| err(C, e))?;
        Self::with_secret(C, sk)
    }

    /// Keys from a secret key exported by `exportSecretKey()` (a fresh
    /// public key is derived).
    #[wasm_bindgen(js_name = fromSecretKey)]
    pub fn from_secret_key(
        params: &JsParams,
        #[wasm_bindgen(unchecked_param_type = "Uint8Array")] bytes: &JsValue,
    ) -> Result<JsKeys, JsError> {
        const C: &str = "Keys.fromSecretKey";
        let sk = wire_in(C, "secret key", &params.inner, bytes, Check::Format)?;
        Self::with_secret(C, sk)
    }

    /// The parameters.
    #[wasm_bindgen(getter)]
    pub fn params(&self) -> JsParams {
        JsParams {
            inner: self.params.clone(),
        }
    }

    /// The secret key's bytes, for the owner's own storage (e.g. wrapped
    /// with a non-extractable WebCrypto key). Never send them anywhere;
    /// overwrite the array (`fill(0)`) when done.
    #[wasm_bindgen(js_name = exportSecretKey)]
    pub fn export_secret_key(&self) -> Uint8Array {
        wire_out::<SecretKey>(&self.sk)
    }

    /// The secret key as a `SecretKey` object (shared, not copied) for the
    /// lower-level API.
    #[wasm_bindgen(js_name = secretKey)]
    pub fn secret_key(&self) -> JsSecretKey {
        JsSecretKey {
            inner: self.sk.clone(),
        }
    }

    /// The public key's bytes, to upload (about 44 KB at auth4096).
    #[wasm_bindgen(js_name = publicKey)]
    pub fn public_key(&self) -> Uint8Array {
        wire_out(&self.pk)
    }

    /// The public key as a `PublicKey` object.
    #[wasm_bindgen(js_name = publicKeyObject)]
    pub fn public_key_object(&self) -> JsPublicKey {
        JsPublicKey {
            inner: self.pk.clone(),
        }
    }

    /// The relinearization key's bytes, to upload if the server relinearizes
    /// (about 164 KB at auth4096). Generated on first use, then cached.
    #[wasm_bindgen(js_name = relinKey)]
    pub fn relin_key(&self) -> Result<Uint8Array, JsError> {
        let mut rk = self.rk.borrow_mut();
        if rk.is_none() {
            *rk = Some(RelinKey::new(&self.sk).map_err(|e| err("Keys.relinKey", e))?);
        }
        Ok(wire_out(rk.as_ref().expect("just set")))
    }

    /// Decrypts a verification reply and reads the first `count` scores
    /// (default: all n/dim) for embeddings of dimension `dim` (default 128).
    #[wasm_bindgen(js_name = decryptScores, unchecked_return_type = "Scores")]
    pub fn decrypt_scores(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Uint8Array")] reply: &JsValue,
        count: Option<f64>,
        dim: Option<f64>,
    ) -> Result<JsValue, JsError> {
        const C: &str = "Keys.decryptScores";
        let q = quantizer(C, &self.params, dim.unwrap_or(DEFAULT_DIM))?;
        let max = pack::templates_per_ciphertext(&self.params, q.dim());
        let count = match count {
            None => max,
            Some(c) => uint_in(C, "count", c, max as u64)? as usize,
        };
        // A reply is a score reply or a (size-3) ciphertext.
        let max = ScoreReply::max_len(&self.params).max(Ciphertext::max_len(&self.params));
        let b = bytes_in(C, "reply", reply, max)?;
        let s = client::decrypt_reply_bytes(&self.sk, &q, &b, count).map_err(|e| err(C, e))?;
        scores_out(C, &s.scores, &s.cosines)
    }
}

encrypt_methods!(JsKeys, "Keys", sk, client::encrypt_templates, client::encrypt_probe,
    templates: /// Encrypts up to n/dim embeddings (an `Array` of `Float32Array`s of
        /// length `dim`: 64, 128, 256 or 512) into one template ciphertext.
    probe: /// Encrypts a login probe (a `Float32Array` of length `dim`).
);

#[doc(hidden)]
impl JsKeys {
    /// Test-only (known-answer vectors): secret, public and relinearization
    /// keys drawn in that order from `rng`, as the native KAT draws them.
    pub fn generate_with_for_tests(params: &JsParams, rng: &mut Prng) -> JsKeys {
        let sk = SecretKey::generate_with(&params.inner, rng);
        let pk = PublicKey::new_with(&sk, rng);
        let rk = RelinKey::new_with(&sk, rng);
        JsKeys {
            params: params.inner.clone(),
            sk: Rc::new(sk),
            pk,
            rk: RefCell::new(Some(rk)),
        }
    }
}

/// `{ scores, cosines }` as a plain object (arrays through serde-wasm-bindgen).
fn scores_out(context: &str, scores: &[i64], cosines: &[f64]) -> Result<JsValue, JsError> {
    let obj = Object::new();
    let s = serde_wasm_bindgen::to_value(scores).map_err(|e| err(context, e))?;
    let c = serde_wasm_bindgen::to_value(cosines).map_err(|e| err(context, e))?;
    for (k, v) in [("scores", s), ("cosines", c)] {
        Reflect::set(&obj, &JsValue::from_str(k), &v)
            .map_err(|_| JsError::new(&format!("{context}: building the result failed")))?;
    }
    Ok(obj.into())
}

/// Encrypts gallery templates under a service's public key (1:N mode).
#[wasm_bindgen(js_name = PublicKeyEncryptor)]
#[derive(Debug)]
pub struct JsPublicKeyEncryptor {
    params: Params,
    pk: PublicKey,
}

#[wasm_bindgen(js_class = PublicKeyEncryptor)]
impl JsPublicKeyEncryptor {
    /// An encryptor for a public key's wire bytes.
    #[wasm_bindgen(js_name = fromPublicKey)]
    pub fn from_public_key(
        params: &JsParams,
        #[wasm_bindgen(unchecked_param_type = "Uint8Array")] bytes: &JsValue,
    ) -> Result<JsPublicKeyEncryptor, JsError> {
        const C: &str = "PublicKeyEncryptor.fromPublicKey";
        let pk = wire_in(C, "public key", &params.inner, bytes, Check::Format)?;
        Ok(JsPublicKeyEncryptor {
            params: params.inner.clone(),
            pk,
        })
    }
}

encrypt_methods!(JsPublicKeyEncryptor, "PublicKeyEncryptor", pk,
    client::encrypt_templates_public, client::encrypt_probe_public,
    templates: /// Encrypts up to n/dim embeddings into one template ciphertext, as
        /// `Keys.encryptTemplates` does, but with the public key.
    probe: /// Encrypts a 1:N probe (a `Float32Array` of length `dim`) under the
        /// service's public key, for a matcher that must not see it: the matcher
        /// scores it against a gallery kept for encrypted probes, and only the
        /// key holder reads the scores.
);

#[wasm_bindgen(js_class = PublicKeyEncryptor)]
impl JsPublicKeyEncryptor {
    /// Login mode: encrypts up to n/dim embeddings into one template under
    /// the user's public key, with each sample's one-hot ciphertexts, in the
    /// bundle framing the matcher's template upload takes (docs/FORMAT.md).
    /// The decider checks that every sample is a well-formed embedding
    /// before the template is stored.
    #[wasm_bindgen(js_name = encryptTemplateBundle)]
    pub fn encrypt_template_bundle(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Float32Array[]")] embeddings: &JsValue,
        dim: f64,
    ) -> Result<Uint8Array, JsError> {
        const C: &str = "PublicKeyEncryptor.encryptTemplateBundle";
        let q = quantizer(C, &self.params, dim)?;
        let e = embeddings_in(C, &self.params, &q, embeddings)?;
        let b = client::encrypt_template_bundle(&self.pk, &q, &as_slices(&e), &mut rng(C)?)
            .map_err(|e| err(C, e))?;
        Ok(Uint8Array::from(b.to_bytes().as_slice()))
    }

    /// Login mode: encrypts a probe (a `Float32Array` of length `dim`) under
    /// the user's public key with its one-hot ciphertexts, the bundle the
    /// login route takes. About 178 KB at d = 128.
    #[wasm_bindgen(js_name = encryptProbeBundle)]
    pub fn encrypt_probe_bundle(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Float32Array")] embedding: &JsValue,
        dim: f64,
    ) -> Result<Uint8Array, JsError> {
        const C: &str = "PublicKeyEncryptor.encryptProbeBundle";
        let q = quantizer(C, &self.params, dim)?;
        let e = f32_in(C, "embedding", embedding, q.dim())?;
        let b =
            client::encrypt_probe_bundle(&self.pk, &q, &e, &mut rng(C)?).map_err(|e| err(C, e))?;
        Ok(Uint8Array::from(b.to_bytes().as_slice()))
    }
}

/// The server's 1:1 step: template × probe, masked, re-randomized and
/// switched down. For Node services and tests; a browser must never act as
/// the verifier of its own login.
#[wasm_bindgen(js_name = Verifier)]
#[derive(Debug)]
pub struct JsVerifier {
    params: Params,
    inner: Verifier,
}

#[wasm_bindgen(js_class = Verifier)]
impl JsVerifier {
    /// A verifier for embeddings of dimension `dim`.
    #[wasm_bindgen(constructor)]
    pub fn new(params: &JsParams, dim: f64) -> Result<JsVerifier, JsError> {
        const C: &str = "new Verifier";
        let dim = uint_in(C, "dim", dim, 1 << 20)? as usize;
        let inner = Verifier::new(&params.inner, dim).map_err(|e| err(C, e))?;
        Ok(JsVerifier {
            params: params.inner.clone(),
            inner,
        })
    }

    /// The reply for a stored template and a login probe, under the user's
    /// public key (and relinearization key, if given: the reply is then in
    /// its compact form, about a quarter of the bytes). All inputs are wire
    /// bytes from the client and are checked as untrusted.
    pub fn verify(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Uint8Array")] template: &JsValue,
        #[wasm_bindgen(unchecked_param_type = "Uint8Array")] probe: &JsValue,
        #[wasm_bindgen(js_name = publicKey, unchecked_param_type = "Uint8Array")]
        public_key: &JsValue,
        #[wasm_bindgen(js_name = relinKey, unchecked_param_type = "Uint8Array | undefined")]
        relin_key: &JsValue,
    ) -> Result<Uint8Array, JsError> {
        const C: &str = "Verifier.verify";
        let p = &self.params;
        // Every decoding error names its argument.
        fn arg<T: WireObject>(p: &Params, what: &str, v: &JsValue) -> Result<T, JsError> {
            decode(p, bytes_in(C, what, v, T::max_len(p))?, Check::Untrusted)
                .map_err(|e| err(&format!("{C}: {what}"), e))
        }
        let t: Ciphertext = arg(p, "template", template)?;
        let pr: Ciphertext = arg(p, "probe", probe)?;
        let pk: PublicKey = arg(p, "publicKey", public_key)?;
        let rk: Option<RelinKey> = if relin_key.is_undefined() || relin_key.is_null() {
            None
        } else {
            Some(arg(p, "relinKey", relin_key)?)
        };
        let reply = self
            .inner
            .verify(&t, &pr, &pk, rk.as_ref())
            .map_err(|e| err(C, e))?;
        // Relinearized, the reply goes out in its compact form.
        Ok(match rk {
            Some(_) => wire_out(&self.inner.compact(&reply).map_err(|e| err(C, e))?),
            None => wire_out(&reply),
        })
    }
}
