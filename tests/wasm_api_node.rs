//! The JavaScript facade (`src/wasm/`), called from Rust in Node by
//! wasm-bindgen-test: `wasm-pack test --node -- --test wasm_api_node`.
//!
//! Round trips, scores equal to i64 inner products of the quantized vectors,
//! the homomorphic identities through `Evaluator`, error cases (each a JS
//! `Error` with a message, and the instance still working afterwards), a
//! failing RNG, and known-answer bytes equal to the native build's (the same
//! constants as `tests/suite/serialize.rs`).
//!
//! Longer than the project's usual 600 lines: it is one wasm test binary
//! (each binary is a separate wasm build and Node run in `scripts/test.sh`),
//! and its tests share the keys and fixtures made at its top.
#![cfg(target_arch = "wasm32")]

use blindmatch::bfv::Prng;
use blindmatch::matching::{Gallery, Identifier, Quantizer};
use blindmatch::wasm::{
    JsBatchEncoder, JsCiphertext, JsCoefficientEncoder, JsEvaluator, JsKeys, JsParams, JsPlaintext,
    JsPublicKey, JsPublicKeyEncryptor, JsRelinKey, JsSecretKey, JsVerifier,
};
use js_sys::{Array, Float32Array, Int32Array, Reflect, Uint32Array, Uint8Array};
use wasm_bindgen::{JsCast, JsError, JsValue};
use wasm_bindgen_test::wasm_bindgen_test;

const DIM: usize = 128;

#[path = "suite/known_answers.rs"]
mod known_answers;
use known_answers::{fnv1a, SEEDED_OBJECTS};

fn message(e: JsError) -> String {
    let v: JsValue = e.into();
    let err = v
        .dyn_into::<js_sys::Error>()
        .expect("every facade error is a JS Error");
    String::from(err.message())
}

fn ok<T>(r: Result<T, JsError>) -> T {
    r.unwrap_or_else(|e| panic!("unexpected error: {}", message(e)))
}

/// The error's message, which must contain every one of `words`.
fn fails<T>(r: Result<T, JsError>, words: &[&str]) -> String {
    let m = match r {
        Ok(_) => panic!("expected an error mentioning {words:?}"),
        Err(e) => message(e),
    };
    for w in words {
        assert!(m.contains(w), "error {m:?} does not mention {w:?}");
    }
    m
}

fn u8s(b: &[u8]) -> JsValue {
    Uint8Array::from(b).into()
}

fn vecu8(v: &Uint8Array) -> Vec<u8> {
    v.to_vec()
}

/// A deterministic pseudo-random embedding (not unit length).
fn embedding(seed: u64) -> Vec<f32> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..DIM)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ((x >> 40) as f32 / (1u64 << 24) as f32) - 0.5
        })
        .collect()
}

fn f32s(v: &[f32]) -> JsValue {
    Float32Array::from(v).into()
}

fn list(items: &[JsValue]) -> JsValue {
    items.iter().collect::<Array>().into()
}

fn inner(a: &[i32], b: &[i32]) -> i64 {
    a.iter().zip(b).map(|(&x, &y)| x as i64 * y as i64).sum()
}

/// `(scores, cosines)` of a `decryptScores` result (a plain object).
fn read_scores(v: &JsValue) -> (Vec<f64>, Vec<f64>) {
    assert!(v.is_object() && !Array::is_array(v), "a plain object");
    let arr = |k: &str| -> Vec<f64> {
        let a = Reflect::get(v, &JsValue::from_str(k)).unwrap();
        assert!(Array::is_array(&a), "{k} is an array");
        Array::from(&a)
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect()
    };
    (arr("scores"), arr("cosines"))
}

/// Parameters other than auth4096: n = 2048, two 20-bit primes and a
/// 14-bit special prime (54 bits, the bound for n = 2048).
fn other_params() -> JsParams {
    let q = blindmatch::arith::ntt_primes(20, 2048, 2).unwrap();
    let sp = blindmatch::arith::ntt_primes(14, 2048, 1).unwrap()[0];
    let q: JsValue = Uint32Array::from(&q[..]).into();
    ok(JsParams::custom(2048.0, 65537.0, &q, sp as f64, false))
}

/// The instance still works: keygen, encryption, verify, decryption.
fn still_works() {
    let p = JsParams::auth4096();
    let keys = ok(JsKeys::generate(&p));
    let e = embedding(99);
    let t = ok(keys.encrypt_templates(&list(&[f32s(&e)]), DIM as f64));
    let pr = ok(keys.encrypt_probe(&f32s(&e), DIM as f64));
    let v = ok(JsVerifier::new(&p, DIM as f64));
    let reply = ok(v.verify(
        &t.into(),
        &pr.into(),
        &keys.public_key().into(),
        &JsValue::UNDEFINED,
    ));
    let (s, c) = read_scores(&ok(keys.decrypt_scores(&reply.into(), Some(1.0), None)));
    let q = Quantizer::new(&blindmatch::bfv::Params::auth4096(), DIM).unwrap();
    let a = q.quantize(&e).unwrap();
    assert_eq!(s, vec![inner(&a, &a) as f64]);
    assert!((c[0] - 1.0).abs() < 0.02, "self-similarity {}", c[0]);
}

#[wasm_bindgen_test]
fn params_getters() {
    let p = JsParams::auth4096();
    assert_eq!(p.degree(), 4096);
    assert_eq!(p.plaintext_modulus(), 65537);
    assert_eq!(p.id(), "d22069770380e00c");
    assert_eq!(
        p.ciphertext_primes().to_vec(),
        vec![536_813_569, 528_916_481, 501_882_881]
    );
    assert_eq!(p.special_prime(), 4_169_729);
    assert_eq!(p.modulus_bits(), 109);
    assert!(p.batching());
    // The security gate: one more bit of Q·P is refused.
    let q: JsValue = Uint32Array::from(&[536_813_569u32, 528_916_481, 501_882_881][..]).into();
    let again = ok(JsParams::custom(4096.0, 65537.0, &q, 4_169_729.0, true));
    assert_eq!(again.id(), p.id());
    let big = blindmatch::arith::ntt_primes(23, 4096, 1).unwrap()[0];
    fails(
        JsParams::custom(4096.0, 65537.0, &q, big as f64, true),
        &["Params.custom"],
    );
    fails(
        JsParams::custom(f64::NAN, 65537.0, &q, 4_169_729.0, true),
        &["degree"],
    );
    fails(
        JsParams::custom(4096.0, 65537.0, &JsValue::from(3), 4_169_729.0, true),
        &["ciphertextPrimes", "Uint32Array"],
    );
}

#[wasm_bindgen_test]
fn known_answer_bytes_equal_the_native_build() {
    // The same draws as tests/suite/serialize.rs (whose constants the native,
    // aarch64 and wasm32 runs all check), through the facade.
    let p = JsParams::auth4096();
    let mut prng = Prng::from_seed([42; 32]);
    let keys = JsKeys::generate_with_for_tests(&p, &mut prng);
    let t = p.plaintext_modulus();
    let coeffs: Vec<u32> = (0..4096u32).map(|i| (i * i + 3) % t).collect();
    let pt = ok(JsPlaintext::from_coefficients(
        &p,
        &Uint32Array::from(&coeffs[..]).into(),
    ));
    let ct_sk = keys.secret_key().encrypt_with_for_tests(&pt, &mut prng);
    let ct_pk = keys
        .public_key_object()
        .encrypt_with_for_tests(&pt, &mut prng);
    let got: Vec<(&str, Vec<u8>)> = vec![
        ("secret key", vecu8(&keys.export_secret_key())),
        ("public key", vecu8(&keys.public_key())),
        ("relin key", vecu8(&ok(keys.relin_key()))),
        ("plaintext", vecu8(&pt.to_bytes())),
        ("secret-key ciphertext", vecu8(&ct_sk.to_bytes())),
        ("public-key ciphertext", vecu8(&ct_pk.to_bytes())),
    ];
    let got: Vec<(&str, usize, u64)> = got.iter().map(|(k, b)| (*k, b.len(), fnv1a(b))).collect();
    assert_eq!(got, SEEDED_OBJECTS);
    // The exported secret key loads back to the same key.
    let again = ok(JsKeys::from_secret_key(
        &p,
        &keys.export_secret_key().into(),
    ));
    assert_eq!(
        vecu8(&again.export_secret_key()),
        vecu8(&keys.export_secret_key())
    );
}

#[wasm_bindgen_test]
fn matching_scores_equal_integer_inner_products() {
    let p = JsParams::auth4096();
    let params = blindmatch::bfv::Params::auth4096();
    let q = Quantizer::new(&params, DIM).unwrap();
    let keys = ok(JsKeys::generate(&p));
    let embs: Vec<Vec<f32>> = (0..5).map(embedding).collect();
    let tmpl = ok(keys.encrypt_templates(
        &list(&embs.iter().map(|e| f32s(e)).collect::<Vec<_>>()),
        128.0,
    ));
    let probe_emb = embedding(2);
    let probe = ok(keys.encrypt_probe(&f32s(&probe_emb), 128.0));
    let b = q.quantize(&probe_emb).unwrap();
    let want: Vec<f64> = embs
        .iter()
        .map(|e| inner(&q.quantize(e).unwrap(), &b) as f64)
        .collect();
    let v = ok(JsVerifier::new(&p, 128.0));
    let rk = ok(keys.relin_key());
    for relin in [JsValue::UNDEFINED, rk.into()] {
        let reply = ok(v.verify(
            &tmpl.clone().into(),
            &probe.clone().into(),
            &keys.public_key().into(),
            &relin,
        ));
        let (s, c) = read_scores(&ok(keys.decrypt_scores(
            &reply.clone().into(),
            Some(5.0),
            None,
        )));
        assert_eq!(s, want);
        assert!((c[2] - 1.0).abs() < 0.02);
        for (si, ci) in s.iter().zip(&c) {
            assert_eq!(*ci, q.cosine(*si as i64));
        }
        // Default count: every block of the ciphertext.
        let (all, _) = read_scores(&ok(keys.decrypt_scores(&reply.into(), None, Some(128.0))));
        assert_eq!(all.len(), 32);
        assert_eq!(&all[..5], &want[..]);
    }
    // Relinearized, the reply is the compact kind (7): 16 + 4 + 4·32 + 4·4096
    // bytes, against a size-3 ciphertext without the key.
    let compact = ok(v.verify(
        &tmpl.clone().into(),
        &probe.clone().into(),
        &keys.public_key().into(),
        &ok(keys.relin_key()).into(),
    ))
    .to_vec();
    assert_eq!((compact.len(), compact[6]), (16 + 4 + 128 + 4 * 4096, 7));
    // Read for another dimension: an error that says so, and the keys work on.
    fails(
        keys.decrypt_scores(&u8s(&compact), None, Some(64.0)),
        &["Keys.decryptScores", "dimension 128, not 64"],
    );
    let (s, _) = read_scores(&ok(keys.decrypt_scores(&u8s(&compact), Some(5.0), None)));
    assert_eq!(s, want);
    // A key restored from its bytes reads the same replies.
    let restored = ok(JsKeys::from_secret_key(
        &p,
        &keys.export_secret_key().into(),
    ));
    let reply = ok(v.verify(
        &tmpl.into(),
        &probe.into(),
        &restored.public_key().into(),
        &JsValue::NULL,
    ));
    let (s, _) = read_scores(&ok(restored.decrypt_scores(&reply.into(), Some(5.0), None)));
    assert_eq!(s, want);
}

#[wasm_bindgen_test]
fn public_key_encryptor_templates_match() {
    let p = JsParams::auth4096();
    let params = blindmatch::bfv::Params::auth4096();
    let q = Quantizer::new(&params, DIM).unwrap();
    let keys = ok(JsKeys::generate(&p));
    let enc = ok(JsPublicKeyEncryptor::from_public_key(
        &p,
        &keys.public_key().into(),
    ));
    let embs: Vec<Vec<f32>> = (10..13).map(embedding).collect();
    let tmpl = ok(enc.encrypt_templates(
        &list(&embs.iter().map(|e| f32s(e)).collect::<Vec<_>>()),
        128.0,
    ));
    let tmpl_bytes = tmpl.clone();
    // Public-key ciphertexts are never seeded: two full polynomials.
    let ct = ok(JsCiphertext::from_bytes(&p, &tmpl.clone().into()));
    assert!(!ct.seeded());
    let probe = ok(keys.encrypt_probe(&f32s(&embs[1]), 128.0));
    let v = ok(JsVerifier::new(&p, 128.0));
    let reply = ok(v.verify(
        &tmpl.into(),
        &probe.into(),
        &keys.public_key().into(),
        &JsValue::UNDEFINED,
    ));
    let (s, _) = read_scores(&ok(keys.decrypt_scores(&reply.into(), Some(3.0), None)));
    let b = q.quantize(&embs[1]).unwrap();
    let want: Vec<f64> = embs
        .iter()
        .map(|e| inner(&q.quantize(e).unwrap(), &b) as f64)
        .collect();
    assert_eq!(s, want);

    // 1:N with the probe hidden from the matcher: encrypted here under the
    // service key, scored against a gallery kept for encrypted probes, ranked
    // by the key holder; the exact inner products, best first.
    let sk =
        blindmatch::bfv::SecretKey::from_bytes(&params, &vecu8(&keys.export_secret_key())).unwrap();
    let rk = blindmatch::bfv::RelinKey::from_bytes(&params, &vecu8(&ok(keys.relin_key()))).unwrap();
    let mut gallery = Gallery::for_encrypted_probes(&params, DIM).unwrap();
    gallery
        .push(
            blindmatch::bfv::Ciphertext::from_bytes(&params, &vecu8(&tmpl_bytes)).unwrap(),
            3,
        )
        .unwrap();
    let hidden = ok(enc.encrypt_probe(&f32s(&embs[2]), 128.0));
    let hidden = blindmatch::bfv::Ciphertext::from_bytes(&params, &vecu8(&hidden)).unwrap();
    let id = Identifier::new(&params, DIM).unwrap();
    let mut scores = Vec::new();
    id.score_encrypted_probe_into(&gallery, &hidden, &rk, &mut scores)
        .unwrap();
    let best = id.rank(&gallery, &sk, &scores, 3).unwrap();
    let b = q.quantize(&embs[2]).unwrap();
    let mut want: Vec<(usize, i64)> = embs
        .iter()
        .enumerate()
        .map(|(i, e)| (i, inner(&q.quantize(e).unwrap(), &b)))
        .collect();
    want.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
    assert_eq!(
        best.iter().map(|m| (m.index, m.score)).collect::<Vec<_>>(),
        want
    );
    fails(
        enc.encrypt_probe(&f32s(&embs[2][..100]), 128.0),
        &["PublicKeyEncryptor.encryptProbe", "100", "128"],
    );
}

#[wasm_bindgen_test]
fn evaluator_identities_mod_t() {
    let p = JsParams::auth4096();
    let t = 65537i64;
    let sk = ok(JsSecretKey::generate(&p));
    let pk = ok(sk.public_key());
    let rk = ok(sk.relin_key());
    let enc = ok(JsBatchEncoder::new(&p));
    assert_eq!(enc.slots(), 4096);
    let a: Vec<i32> = (0..4096).map(|i| (i * 37 % 2001) - 1000).collect();
    let b: Vec<i32> = (0..4096).map(|i| (i * 91 % 3001) - 1500).collect();
    let pa = ok(enc.encode(&Int32Array::from(&a[..]).into()));
    let pb = ok(enc.encode(&Int32Array::from(&b[..]).into()));
    let ca = ok(sk.encrypt(&pa));
    let cb = ok(pk.encrypt(&pb));
    let ev = JsEvaluator::new(&p);
    let dec = |c: &JsCiphertext| ok(enc.decode(&ok(sk.decrypt(c)))).to_vec();
    let centred = |v: i64| {
        let r = v.rem_euclid(t);
        (if r > t / 2 { r - t } else { r }) as i32
    };
    let map2 = |f: &dyn Fn(i64, i64) -> i64| -> Vec<i32> {
        a.iter()
            .zip(&b)
            .map(|(&x, &y)| centred(f(x as i64, y as i64)))
            .collect()
    };
    assert_eq!(dec(&ca), a);
    assert_eq!(dec(&ok(ev.add(&ca, &cb))), map2(&|x, y| x + y));
    assert_eq!(dec(&ok(ev.sub(&ca, &cb))), map2(&|x, y| x - y));
    assert_eq!(dec(&ok(ev.negate(&ca))), map2(&|x, _| -x));
    assert_eq!(dec(&ok(ev.add_plain(&ca, &pb))), map2(&|x, y| x + y));
    assert_eq!(dec(&ok(ev.multiply_plain(&ca, &pb))), map2(&|x, y| x * y));
    let prod = ok(ev.multiply(&ca, &cb));
    assert_eq!(prod.size(), 3);
    assert_eq!(dec(&prod), map2(&|x, y| x * y));
    let lin = ok(ev.relinearize(&prod, &rk));
    assert_eq!(lin.size(), 2);
    assert_eq!(dec(&lin), map2(&|x, y| x * y));
    assert!(ok(sk.noise_budget(&lin)) > 10.0);
    let fused = ok(ev.multiply_relin(&ca, &cb, &rk));
    assert_eq!(fused.size(), 2);
    assert_eq!(dec(&fused), map2(&|x, y| x * y));
    fails(
        ev.multiply_relin(&prod, &cb, &rk),
        &["Evaluator.multiplyRelin", "size"],
    );
    let down = ok(ev.mod_switch_to_next(&lin));
    assert_eq!(down.level(), 2);
    assert_eq!(dec(&down), map2(&|x, y| x * y));
    // Rotations.
    let gk = ok(sk.galois_keys(&Int32Array::from(&[1i32][..]).into()));
    let half = 2048;
    let rot: Vec<i32> = (0..4096)
        .map(|i| a[(i / half) * half + (i % half + 1) % half])
        .collect();
    assert_eq!(dec(&ok(ev.rotate_rows(&ca, 1, &gk))), rot);
    let swapped: Vec<i32> = (0..4096).map(|i| a[(i + half) % 4096]).collect();
    assert_eq!(dec(&ok(ev.rotate_columns(&ca, &gk))), swapped);
    fails(
        ev.rotate_rows(&ca, 2, &gk),
        &["Evaluator.rotateRows", "Galois key"],
    );
    // Wire round trips of every object.
    let bytes = |b: Uint8Array| -> JsValue { b.into() };
    let ca2 = ok(JsCiphertext::from_bytes(&p, &bytes(ca.to_bytes())));
    assert_eq!(dec(&ca2), a);
    let sk2 = ok(JsSecretKey::from_bytes(&p, &bytes(sk.to_bytes())));
    assert_eq!(
        ok(enc.decode(&ok(sk2.decrypt(&prod)))).to_vec(),
        map2(&|x, y| x * y)
    );
    let pk2 = ok(JsPublicKey::from_bytes(&p, &bytes(pk.to_bytes())));
    assert_eq!(dec(&ok(pk2.encrypt(&pa))), a);
    let rk2 = ok(JsRelinKey::from_bytes(&p, &bytes(rk.to_bytes())));
    assert_eq!(dec(&ok(ev.relinearize(&prod, &rk2))), map2(&|x, y| x * y));
    let pa2 = ok(JsPlaintext::from_bytes(&p, &bytes(pa.to_bytes())));
    assert_eq!(ok(enc.decode(&pa2)).to_vec(), a);
    // BigInt64Array and plain arrays of numbers encode the same way.
    let wide: Vec<i64> = a.iter().map(|&x| x as i64).collect();
    let pw = ok(enc.encode(&js_sys::BigInt64Array::from(&wide[..]).into()));
    assert_eq!(ok(enc.decode_bigint64(&pw)).to_vec(), wide);
    let arr: JsValue = [1.0, -2.0, 3.0]
        .iter()
        .map(|&x| JsValue::from(x))
        .collect::<Array>()
        .into();
    assert_eq!(
        &ok(enc.decode(&ok(enc.encode(&arr)))).to_vec()[..4],
        &[1, -2, 3, 0]
    );
    // The coefficient encoder: products are negacyclic convolutions.
    let ce = JsCoefficientEncoder::new(&p);
    let x = ok(ce.encode(&Int32Array::from(&[0, 1][..]).into())); // X
    let y = ok(ce.encode(&Int32Array::from(&[2, 0, 5][..]).into())); // 2 + 5X^2
    let xy = ok(ev.multiply_plain(&ok(sk.encrypt(&x)), &y));
    assert_eq!(
        &ok(ce.decode(&ok(sk.decrypt(&xy)))).to_vec()[..4],
        &[0, 2, 0, 5]
    );
}

#[wasm_bindgen_test]
fn bad_embeddings_are_errors_and_the_instance_keeps_working() {
    let p = JsParams::auth4096();
    let keys = ok(JsKeys::generate(&p));
    let good = embedding(1);
    let mut nan = good.clone();
    nan[7] = f32::NAN;
    let mut inf = good.clone();
    inf[0] = f32::INFINITY;
    let one = |e: JsValue| list(&[e]);
    let cases: Vec<(JsValue, f64, Vec<&str>)> = vec![
        (
            one(f32s(&good[..127])),
            128.0,
            vec!["embeddings[0]", "127", "128"],
        ),
        (one(f32s(&nan)), 128.0, vec!["component 7", "finite"]),
        (one(f32s(&inf)), 128.0, vec!["component 0", "finite"]),
        (one(f32s(&[0.0; 128])), 128.0, vec!["zero vector"]),
        (
            one(JsValue::from_str("face")),
            128.0,
            vec!["Float32Array", "a string"],
        ),
        (f32s(&good), 128.0, vec!["must be an Array"]),
        (
            JsValue::UNDEFINED,
            128.0,
            vec!["must be an Array", "undefined"],
        ),
        (list(&[]), 128.0, vec!["at least one"]),
        (
            list(&vec![f32s(&good); 33]),
            128.0,
            vec!["33", "at most 32"],
        ),
        (one(f32s(&good)), 100.0, vec!["dimension 100"]),
        (one(f32s(&good)), f64::NAN, vec!["dim", "whole number"]),
        (one(f32s(&good)), -128.0, vec!["dim"]),
    ];
    for (input, dim, words) in cases {
        let m = fails(keys.encrypt_templates(&input, dim), &words);
        assert!(m.starts_with("Keys.encryptTemplates: "), "{m}");
    }
    fails(
        keys.encrypt_probe(&f32s(&nan), 128.0),
        &["Keys.encryptProbe", "finite"],
    );
    fails(
        keys.encrypt_probe(&f32s(&good), 64.0),
        &["Keys.encryptProbe", "128", "64"],
    );
    fails(
        keys.encrypt_probe(&JsValue::NULL, 128.0),
        &["Float32Array", "null"],
    );
    let enc = ok(JsPublicKeyEncryptor::from_public_key(
        &p,
        &keys.public_key().into(),
    ));
    fails(
        enc.encrypt_templates(&one(f32s(&nan)), 128.0),
        &["PublicKeyEncryptor.encryptTemplates", "finite"],
    );
    still_works();
}

#[wasm_bindgen_test]
fn bad_bytes_are_errors_and_the_instance_keeps_working() {
    let p = JsParams::auth4096();
    let keys = ok(JsKeys::generate(&p));
    let sk = vecu8(&keys.export_secret_key());
    let pk = vecu8(&keys.public_key());
    let probe = vecu8(&ok(keys.encrypt_probe(&f32s(&embedding(3)), 128.0)));
    let other = other_params();
    let other_sk = vecu8(&ok(JsKeys::generate(&other)).export_secret_key());
    let mut bad_magic = sk.clone();
    bad_magic[0] ^= 0xff;
    let mut bad_code = sk.clone();
    let last = bad_code.len() - 1;
    bad_code[last] = 0b10;
    let cases: Vec<(JsValue, Vec<&str>)> = vec![
        (u8s(&[]), vec!["truncated"]),
        (u8s(&sk[..sk.len() - 1]), vec!["truncated"]),
        (
            u8s(&[&sk[..], &[0]].concat()),
            vec!["1041 bytes", "at most 1040"],
        ),
        (u8s(&pk), vec!["kind"]),
        (u8s(&other_sk), vec!["parameter id"]),
        (u8s(&bad_magic), vec!["magic"]),
        (u8s(&bad_code), vec!["0b10"]),
        (JsValue::from_str("secret"), vec!["Uint8Array", "a string"]),
        (Array::new().into(), vec!["Uint8Array", "an Array"]),
        (JsValue::UNDEFINED, vec!["Uint8Array", "undefined"]),
    ];
    for (input, words) in cases {
        let m = fails(JsKeys::from_secret_key(&p, &input), &words);
        assert!(m.starts_with("Keys.fromSecretKey: "), "{m}");
    }
    fails(
        JsSecretKey::from_bytes(&p, &u8s(&pk)),
        &["SecretKey.fromBytes", "kind"],
    );
    fails(
        JsPublicKeyEncryptor::from_public_key(&p, &u8s(&sk)),
        &["fromPublicKey", "kind"],
    );
    fails(
        JsPublicKeyEncryptor::from_public_key(&p, &u8s(&pk[..100])),
        &["truncated"],
    );
    fails(
        JsCiphertext::from_bytes(&p, &u8s(&pk)),
        &["Ciphertext.fromBytes", "kind"],
    );
    fails(
        JsRelinKey::from_bytes(&p, &u8s(&probe)),
        &["RelinKey.fromBytes", "kind"],
    );
    fails(
        JsPlaintext::from_bytes(&p, &u8s(&probe)),
        &["Plaintext.fromBytes", "kind"],
    );
    fails(
        keys.decrypt_scores(&u8s(&probe[..probe.len() - 3]), None, None),
        &["Keys.decryptScores", "truncated"],
    );
    fails(
        keys.decrypt_scores(&u8s(&pk), None, None),
        &["Keys.decryptScores", "kind"],
    );
    fails(
        keys.decrypt_scores(&u8s(&probe), Some(33.0), None),
        &["count", "32"],
    );
    fails(
        keys.decrypt_scores(&u8s(&probe), Some(1.5), None),
        &["count"],
    );
    // The verifier treats every input as untrusted.
    let v = ok(JsVerifier::new(&p, 128.0));
    let t = vecu8(&ok(
        keys.encrypt_templates(&list(&[f32s(&embedding(4))]), 128.0)
    ));
    fails(
        v.verify(&u8s(&t), &u8s(&probe[..50]), &u8s(&pk), &JsValue::UNDEFINED),
        &["probe", "truncated"],
    );
    fails(
        v.verify(&u8s(&t), &u8s(&probe), &u8s(&sk), &JsValue::UNDEFINED),
        &["publicKey", "kind"],
    );
    fails(
        v.verify(&u8s(&t), &u8s(&probe), &u8s(&pk), &u8s(&pk)),
        &["relinKey", "kind"],
    );
    // A transparent ciphertext (c1 = 0) is refused: expand the probe and zero c1.
    let ct = ok(JsCiphertext::from_bytes(&p, &u8s(&probe)));
    let ev = JsEvaluator::new(&p);
    let zero = ok(ev.sub(&ct, &ct));
    fails(
        v.verify(
            &u8s(&t),
            &zero.to_bytes().into(),
            &u8s(&pk),
            &JsValue::UNDEFINED,
        ),
        &["transparent"],
    );
    fails(
        JsCiphertext::from_bytes_untrusted(&p, &zero.to_bytes().into()),
        &["transparent"],
    );
    // Objects of other parameters are refused by the evaluator and the keys.
    let osk = ok(JsSecretKey::generate(&other));
    let one = ok(JsCoefficientEncoder::new(&other).encode(&Int32Array::from(&[1][..]).into()));
    let oct = ok(osk.encrypt(&one));
    fails(ev.add(&ct, &oct), &["Evaluator.add", "parameter"]);
    fails(keys.secret_key().decrypt(&oct), &["SecretKey.decrypt"]);
    let prod = ok(ev.multiply(&ct, &ct));
    fails(ev.multiply(&prod, &ct), &["Evaluator.multiply", "size"]);
    still_works();
}

#[wasm_bindgen_test]
fn a_failing_rng_is_an_error() {
    let crypto = Reflect::get(&js_sys::global(), &JsValue::from_str("crypto")).unwrap();
    let key = JsValue::from_str("getRandomValues");
    let throwing = js_sys::Function::new_no_args("throw new Error('entropy source unavailable')");
    Reflect::set(&crypto, &key, &throwing).unwrap();
    let p = JsParams::auth4096();
    let r = JsKeys::generate(&p);
    let r2 = JsSecretKey::generate(&p);
    // Restore before asserting, so a failure does not break other tests.
    Reflect::delete_property(crypto.unchecked_ref::<js_sys::Object>(), &key).unwrap();
    fails(r, &["Keys.generate", "random number generator"]);
    fails(r2, &["SecretKey.generate", "random number generator"]);
    // Two key generations differ.
    let a = vecu8(&ok(JsKeys::generate(&p)).export_secret_key());
    let b = vecu8(&ok(JsKeys::generate(&p)).export_secret_key());
    assert_ne!(a, b);
    still_works();
}
