//! 1:N in login mode, over real HTTP with the decider and the matcher as two
//! processes: galleries created with keys of their own from the decider,
//! templates and probes encrypted under them, identifications that are the
//! decider's signed indices (verified with `jose`), never scores; erasure
//! through the decider; the API key and its rate; and the crafted gallery
//! ciphertext that reads the key through the fused path's scores and not
//! through the decider.

use crate::harness::*;
use crate::login::{LoginMode, BEARER, KEY};
use blindmatch::server::verdict::{KeyStatement, PublicKeys};

/// The page's side of a gallery: its public key, checked against the
/// decider's statement.
pub(crate) struct GalleryClient {
    pub(crate) pk: PublicKey,
    pub(crate) epoch: u32,
    q: Quantizer,
}

impl GalleryClient {
    pub(crate) fn of(m: &LoginMode, gallery: &str) -> GalleryClient {
        let r = call(
            "GET",
            &m.url(&format!("/v1/galleries/{gallery}/public-key")),
            None,
        );
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        let keys = PublicKeys::from_jwks(&std::fs::read(&m.jwks).unwrap()).unwrap();
        let jws = r.header("x-key-statement").expect("a key statement");
        let statement = keys
            .verify_gallery_key_statement(jws)
            .expect("signed by the decider");
        // A gallery's statement cannot pass for a user's of the same name.
        assert!(keys.verify_key_statement(jws).is_err());
        assert_eq!(statement.sub, gallery);
        assert_eq!(statement.pk_sha256, KeyStatement::digest(&r.body));
        let epoch: u32 = r.header("x-key-epoch").unwrap().parse().unwrap();
        assert_eq!(statement.epoch, epoch);
        let params = Params::auth4096();
        GalleryClient {
            pk: PublicKey::from_bytes(&params, &r.body).unwrap(),
            epoch,
            q: Quantizer::new(&params, DIM).unwrap(),
        }
    }

    /// A template bundle: the packed templates and their one-hot
    /// ciphertexts.
    pub(crate) fn templates(&self, faces: &[Vec<f32>], rng: &mut Prng) -> Vec<u8> {
        let refs: Vec<&[f32]> = faces.iter().map(|e| e.as_slice()).collect();
        client::encrypt_template_bundle(&self.pk, &self.q, &refs, rng)
            .unwrap()
            .to_bytes()
    }

    /// A probe bundle.
    pub(crate) fn probe(&self, face: &[f32], rng: &mut Prng) -> Vec<u8> {
        client::encrypt_probe_bundle(&self.pk, &self.q, face, rng)
            .unwrap()
            .to_bytes()
    }

    /// What a modified page can send: a bundle of the given packed values
    /// (templates, or with `probe` a probe) and of the one-hot encodings of
    /// `one_hot`, each under the gallery's key.
    fn crafted(
        &self,
        packed: &[Vec<i32>],
        one_hot: &[Vec<i32>],
        probe: bool,
        rng: &mut Prng,
    ) -> Vec<u8> {
        use blindmatch::matching::pack;
        use blindmatch::matching::wellformed::{Bundle, OneHot};
        let params = Params::auth4096();
        let layout = OneHot::new(&params, &self.q).unwrap();
        let packed = match probe {
            true => pack::pack_probe(&params, &packed[0]).unwrap(),
            false => pack::pack_templates(&params, DIM, packed).unwrap(),
        };
        Bundle {
            packed: self.pk.encrypt_with(&packed, rng).unwrap(),
            one_hot: one_hot
                .iter()
                .flat_map(|v| layout.encrypt(&self.pk, v, rng).unwrap())
                .collect(),
        }
        .to_bytes()
    }
}

fn identify_url(m: &LoginMode, gallery: &str, nonce: &str, top_k: usize) -> String {
    m.url(&format!(
        "/v1/galleries/{gallery}/identify?aud={APP}&nonce={nonce}&top_k={top_k}"
    ))
}

/// An identification request with the API key, its answer as it comes.
fn identify_call(m: &LoginMode, gallery: &str, probe: &[u8]) -> Resp {
    call_with(
        "POST",
        &identify_url(m, gallery, "n", 3),
        &[("authorization", BEARER)],
        Some(probe),
    )
}

/// An identification with the API key: the decider's token, checked with
/// `jose` for this audience and nonce; its template indices.
pub(crate) fn identify(m: &LoginMode, gallery: &str, probe: &[u8], nonce: &str) -> Vec<u64> {
    let r = call_with(
        "POST",
        &identify_url(m, gallery, nonce, 3),
        &[("authorization", BEARER)],
        Some(probe),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let v = r.json();
    // The gallery and the signed token: no score, no cosine.
    let fields: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(fields, ["gallery", "identification"], "{v}");
    let token = v["identification"].as_str().unwrap();
    let (code, said) = jose_identification(&m.jwks, token, APP, nonce);
    assert_eq!(code, 0, "{said:?}");
    // Checked as a 1:1 login verdict, it is refused.
    assert_eq!(jose(&m.jwks, token, APP, nonce).0, 1);
    // For another relying party or nonce, jose refuses it.
    assert_eq!(
        jose_identification(&m.jwks, token, "https://other.example", nonce).0,
        1
    );
    assert_eq!(
        jose_identification(&m.jwks, token, APP, "another-nonce"),
        (1, Err("ERR_NONCE_MISMATCH".into()))
    );
    said.unwrap()
}

pub(crate) fn put_gallery(m: &LoginMode, gallery: &str) -> Resp {
    m.api("PUT", &format!("/v1/galleries/{gallery}"))
}

pub(crate) fn add(m: &LoginMode, gallery: &str, count: usize, body: &[u8]) -> Resp {
    call_with(
        "POST",
        &m.url(&format!("/v1/galleries/{gallery}/templates?count={count}")),
        &[("authorization", BEARER)],
        Some(body),
    )
}

#[test]
fn identification_is_the_deciders_signed_indices() {
    let _machine = shared();
    let mut m = LoginMode::start("identify", &[]);
    let mut rng = Prng::from_seed([71; 32]);

    // Creating a gallery needs the API key, and draws its key epoch.
    let before = m.rows();
    call("PUT", &m.url("/v1/galleries/staff"), None).expect_error(401, "unauthorized");
    call("GET", &m.url("/v1/galleries/staff/public-key"), None)
        .expect_error(404, "unknown_gallery");
    assert_eq!(m.rows(), before);
    let r = put_gallery(&m, "staff");
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    let epoch = r.json()["epoch"].as_u64().unwrap();
    let again = put_gallery(&m, "staff");
    assert_eq!(again.status, 200);
    assert_eq!(again.json()["epoch"], epoch);
    let g = GalleryClient::of(&m, "staff");
    assert_eq!(u64::from(g.epoch), epoch);
    // No service key in login mode.
    call("GET", &m.url("/v1/service/public-key"), None).expect_error(403, "login_mode");

    // 40 people, in two ciphertexts; writes need the API key.
    let people: Vec<Vec<f32>> = (0..40).map(|_| embedding(&mut rng)).collect();
    let first = g.templates(&people[..32], &mut rng);
    let before = m.rows();
    // (A bundle of one: the matcher drains at most 1 MiB of a refused
    // body, and 32 templates' bundle is 2.9 MB.)
    call(
        "POST",
        &m.url("/v1/galleries/staff/templates?count=1"),
        Some(&g.templates(&people[..1], &mut rng)),
    )
    .expect_error(401, "unauthorized");
    // A gallery that was not created takes no template.
    add(&m, "visitors", 32, &first).expect_error(404, "unknown_gallery");
    assert_eq!(m.rows(), before);
    assert_eq!(add(&m, "staff", 32, &first).status, 201);
    let r = add(&m, "staff", 8, &g.templates(&people[32..], &mut rng));
    assert_eq!(r.status, 201);
    assert_eq!(r.json()["first_index"], 32);

    // The genuine person first; an impostor matches nobody.
    assert_eq!(
        identify(
            &m,
            "staff",
            &g.probe(&near(&people[37], &mut rng), &mut rng),
            "n-1"
        )[0],
        37
    );
    assert_eq!(
        identify(
            &m,
            "staff",
            &g.probe(&near(&people[3], &mut rng), &mut rng),
            "n-2"
        )[0],
        3
    );
    let nobody = identify(&m, "staff", &g.probe(&embedding(&mut rng), &mut rng), "n-3");
    assert!(nobody.is_empty(), "{nobody:?}");

    // Refusals, nothing written: no API key, the old plaintext form, a
    // probe under a key of the client's own, bad queries.
    let before = m.rows();
    let probe = g.probe(&near(&people[3], &mut rng), &mut rng);
    call("POST", &identify_url(&m, "staff", "n", 3), Some(&probe))
        .expect_error(401, "unauthorized");
    try_request(
        "POST",
        &identify_url(&m, "staff", "n", 3),
        &[("authorization", BEARER)],
        Some(br#"{"embedding": [0.5]}"#),
        "application/json",
    )
    .unwrap()
    .expect_error(415, "unsupported_media_type");
    let mine = Identity::new(9);
    let foreign = client::encrypt_probe_bundle(&mine.pk, &mine.q, &people[3], &mut rng)
        .unwrap()
        .to_bytes();
    identify_call(&m, "staff", &foreign).expect_error(422, "not_under_key");
    for (query, code) in [
        (format!("aud={APP}&nonce=n&top_k=0"), "bad_top_k"),
        (format!("aud={APP}&nonce=n&top_k=101"), "bad_top_k"),
        (format!("aud={APP}&top_k=1"), "bad_query"),
        ("aud=https://other.example&nonce=n".to_string(), "bad_query"),
    ] {
        call_with(
            "POST",
            &m.url(&format!("/v1/galleries/staff/identify?{query}")),
            &[("authorization", BEARER)],
            Some(&probe),
        )
        .expect_error(400, code);
    }
    assert_eq!(m.rows(), before);

    // Erasing through the decider: 37 no longer matches, the others keep
    // their indices; the same after a restart (keys and templates stored).
    call("DELETE", &m.url("/v1/galleries/staff/templates/37"), None)
        .expect_error(401, "unauthorized");
    assert_eq!(
        m.api("DELETE", "/v1/galleries/staff/templates/37").status,
        204
    );
    let after = identify(
        &m,
        "staff",
        &g.probe(&near(&people[37], &mut rng), &mut rng),
        "n-4",
    );
    assert!(!after.contains(&37), "{after:?}");
    assert_eq!(
        identify(
            &m,
            "staff",
            &g.probe(&near(&people[36], &mut rng), &mut rng),
            "n-5"
        )[0],
        36
    );
    m.restart();
    assert_eq!(GalleryClient::of(&m, "staff").epoch, g.epoch);
    assert_eq!(
        identify(
            &m,
            "staff",
            &g.probe(&near(&people[5], &mut rng), &mut rng),
            "n-6"
        )[0],
        5
    );
    let after = identify(
        &m,
        "staff",
        &g.probe(&near(&people[37], &mut rng), &mut rng),
        "n-7",
    );
    assert!(!after.contains(&37), "{after:?}");
    let info = m.api("GET", "/v1/galleries/staff").json();
    assert_eq!(info["templates"], 39);
    assert_eq!(info["erased"], 1);

    // A deleted gallery's name, created again, has another key.
    assert_eq!(m.api("DELETE", "/v1/galleries/staff").status, 204);
    call("GET", &m.url("/v1/galleries/staff/public-key"), None)
        .expect_error(404, "unknown_gallery");
    assert_eq!(put_gallery(&m, "staff").status, 201);
    let fresh = GalleryClient::of(&m, "staff");
    assert_ne!(fresh.pk.to_bytes(), g.pk.to_bytes());
    // An empty gallery identifies nobody, signed.
    assert!(identify(&m, "staff", &fresh.probe(&people[5], &mut rng), "n-8").is_empty());
}

#[test]
fn identifications_are_rate_limited_per_api_key() {
    let _machine = shared();
    let mut m = LoginMode::start("identify-rate", &["--identify-rate", "2"]);
    // A second relying party's key.
    const OTHER: &str = "rp-key-other-0123456789abcdefghij";
    std::fs::write(m.dir.join("api.keys"), format!("{KEY}\n{OTHER}\n")).unwrap();
    m.restart();
    assert_eq!(put_gallery(&m, "g").status, 201);
    let g = GalleryClient::of(&m, "g");
    let mut rng = Prng::from_seed([72; 32]);
    let probe = g.probe(&embedding(&mut rng), &mut rng);
    let post = |bearer: &str| {
        call_with(
            "POST",
            &identify_url(&m, "g", "n", 1),
            &[("authorization", &format!("Bearer {bearer}"))],
            Some(&probe),
        )
    };
    assert_eq!(post(KEY).status, 200);
    assert_eq!(post(KEY).status, 200);
    let r = post(KEY);
    r.expect_error(429, "throttled");
    let wait: u64 = r.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=30).contains(&wait), "{wait}");
    // The other key has its own allowance.
    assert_eq!(post(OTHER).status, 200);
}

/// A modified page: templates and probes that are not well-formed
/// quantized embeddings are refused with their reason, nothing stored and
/// no identification signed; honest ones are taken as before.
#[test]
fn modified_pages_are_refused_at_galleries() {
    let _machine = shared();
    let m = LoginMode::start("identify-modified", &[]);
    let mut rng = Prng::from_seed([75; 32]);
    assert_eq!(put_gallery(&m, "staff").status, 201);
    let g = GalleryClient::of(&m, "staff");
    let people: Vec<Vec<f32>> = (0..8).map(|_| embedding(&mut rng)).collect();
    let quantized: Vec<Vec<i32>> = people.iter().map(|e| g.q.quantize(e).unwrap()).collect();
    let (lo, hi) = g.q.range();
    let tripled = |v: &[i32]| -> Vec<i32> { v.iter().map(|&x| 3 * x).collect() };
    let clip = |v: &[i32]| -> Vec<i32> { v.iter().map(|&x| x.clamp(lo, hi)).collect() };

    // Templates: one of eight tripled in the packed ciphertext only, or
    // tripled and clipped in both (its norm past the bound); a bare
    // ciphertext, the form before bundles.
    let mut scaled = quantized.clone();
    scaled[5] = tripled(&quantized[5]);
    let mut clipped = quantized.clone();
    clipped[5] = clip(&tripled(&quantized[5]));
    let before = m.rows();
    for body in [
        g.crafted(&scaled, &quantized, false, &mut rng),
        g.crafted(&clipped, &clipped, false, &mut rng),
    ] {
        add(&m, "staff", 8, &body).expect_error(422, "malformed_template");
    }
    let bare = client::encrypt_templates_public(&g.pk, &g.q, &[&people[0][..]], &mut rng)
        .unwrap()
        .to_bytes();
    add(&m, "staff", 1, &bare).expect_error(400, "wrong_kind");
    assert_eq!(m.rows(), before);
    let info = m.api("GET", "/v1/galleries/staff").json();
    assert_eq!(info["templates"], 0, "{info}");
    // The honest eight, with or without ?count=.
    assert_eq!(
        add(
            &m,
            "staff",
            8,
            &g.crafted(&quantized, &quantized, false, &mut rng)
        )
        .status,
        201
    );
    let r = call_with(
        "POST",
        &m.url("/v1/galleries/staff/templates"),
        &[("authorization", BEARER)],
        Some(&g.templates(
            &(0..3).map(|_| embedding(&mut rng)).collect::<Vec<_>>(),
            &mut rng,
        )),
    );
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["count"], 3);

    // Probes: an impostor tripled (packed only, then in both and
    // clipped), coefficients uniform mod t, a crafted ciphertext, a bare
    // ciphertext.
    let impostor = g.q.quantize(&embedding(&mut rng)).unwrap();
    let three = tripled(&impostor);
    let t = Params::auth4096().plaintext_modulus() as i64;
    let uniform: Vec<i32> = (0..DIM)
        .map(|_| (rng.next_u32() as i64 % t - t / 2) as i32)
        .collect();
    // And the key-reading ciphertext `(0, ⌊Q/t⌋)` as the packed probe,
    // with an honest probe's one-hot ciphertext.
    let params = Params::auth4096();
    let mut key_reading_probe = blindmatch::matching::wellformed::Bundle::from_bytes_untrusted(
        &params,
        &g.probe(&people[2], &mut rng),
    )
    .unwrap();
    key_reading_probe.packed =
        Ciphertext::from_bytes(&params, &key_reading_ciphertext(&params)).unwrap();
    let before = m.rows();
    for body in [
        g.crafted(
            std::slice::from_ref(&three),
            std::slice::from_ref(&impostor),
            true,
            &mut rng,
        ),
        g.crafted(&[clip(&three)], &[clip(&three)], true, &mut rng),
        g.crafted(&[uniform], std::slice::from_ref(&impostor), true, &mut rng),
        key_reading_probe.to_bytes(),
    ] {
        identify_call(&m, "staff", &body).expect_error(422, "malformed_probe");
    }
    let bare = client::encrypt_probe_public(&g.pk, &g.q, &people[2], &mut rng)
        .unwrap()
        .to_bytes();
    identify_call(&m, "staff", &bare).expect_error(400, "wrong_kind");
    assert_eq!(m.rows(), before);
    // An honest probe of the same person is identified.
    let found = identify(
        &m,
        "staff",
        &g.probe(&near(&people[2], &mut rng), &mut rng),
        "n-ok",
    );
    assert_eq!(found[0], 2, "{found:?}");
}

/// A gallery ciphertext `(0, ⌊Q/t⌋)`: it decrypts, under any key, to that
/// key's own coefficients.
fn key_reading_ciphertext(params: &Params) -> Vec<u8> {
    let primes = params.ciphertext_primes();
    let q: u128 = primes.iter().map(|&p| p as u128).product();
    let delta = q / params.plaintext_modulus() as u128;
    let n = params.degree();
    // Header (kind 6, unseeded), size 2, every limb: c0 = 0, then c1 = Δ
    // (a constant is Δ at every NTT position).
    let template = {
        let sk = SecretKey::generate(params).unwrap();
        let pk = PublicKey::new(&sk).unwrap();
        let pt = blindmatch::bfv::Plaintext::from_coeffs(params, &[0]).unwrap();
        pk.encrypt(&pt).unwrap().to_bytes()
    };
    let limb_bytes: Vec<usize> = primes
        .iter()
        .map(|&p| n * (32 - p.leading_zeros()) as usize / 8)
        .collect();
    let body: usize = 2 * limb_bytes.iter().sum::<usize>();
    let mut out = template[..template.len() - body].to_vec();
    for c in [0u128, delta] {
        for &p in primes {
            let bits = 32 - p.leading_zeros() as usize;
            let v = (c % p as u128) as u64;
            let mut limb = vec![0u8; n * bits / 8];
            for i in 0..n {
                for b in 0..bits {
                    if v >> b & 1 == 1 {
                        let y = i * bits + b;
                        limb[y / 8] |= 1 << (y % 8);
                    }
                }
            }
            out.extend_from_slice(&limb);
        }
    }
    assert_eq!(out.len(), template.len());
    out
}

#[test]
fn a_key_reading_gallery_ciphertext_reads_nothing_through_the_decider() {
    let _machine = shared();
    let params = Params::auth4096();
    let crafted = key_reading_ciphertext(&params);
    let q = Quantizer::new(&params, DIM).unwrap();
    let one_hot = |j: usize| {
        let mut e = vec![0f32; DIM];
        e[j] = 1.0;
        e
    };

    // The fused path (matcher and decider as one trust domain): the scores
    // of one-hot probes are the service key's coefficients, exactly; 128
    // probes would read all 4,096 of them.
    let dir = temp_dir("key-reading-fused");
    let (sk_path, _) = service_key(&dir);
    let sk = SecretKey::from_bytes(&params, &std::fs::read(&sk_path).unwrap()).unwrap();
    let truth = sk
        .decrypt(&Ciphertext::from_bytes(&params, &crafted).unwrap())
        .unwrap();
    let t = params.plaintext_modulus() as i64;
    let srv = Server::start(
        &dir,
        &[
            "--decider",
            "local",
            "--service-key",
            sk_path.to_str().unwrap(),
        ],
    );
    let r = call(
        "POST",
        &format!("{}/v1/galleries/g/templates?count=32", srv.url),
        Some(&crafted),
    );
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    let scale = q.quantize(&one_hot(0)).unwrap()[0] as i64;
    for j in [0usize, 1, 64, 127] {
        let body =
            serde_json::to_vec(&serde_json::json!({"embedding": one_hot(j), "top_k": 32})).unwrap();
        let v = call_json(&format!("{}/v1/galleries/g/identify", srv.url), &body).json();
        let matches = v["matches"].as_array().unwrap();
        assert_eq!(matches.len(), 32);
        for mt in matches {
            let k = mt["index"].as_u64().unwrap() as usize;
            let read = mt["score"].as_i64().unwrap() / scale;
            let coeff = truth.coeffs()[k * DIM + j] as i64;
            let key_coeff = if coeff > t / 2 { coeff - t } else { coeff };
            assert_eq!(read, key_coeff, "block {k}, position {j}");
        }
    }

    // Login mode: the same ciphertext, with the one-hot ciphertexts of 32
    // honest templates, is refused at the append (its sum checks fail:
    // the packed ciphertext does not hold what the one-hot ones say), and
    // nothing is stored.
    let m = LoginMode::start("key-reading-login", &[]);
    assert_eq!(put_gallery(&m, "g").status, 201);
    let g = GalleryClient::of(&m, "g");
    let mut rng = Prng::from_seed([73; 32]);
    let honest: Vec<Vec<f32>> = (0..32).map(|_| embedding(&mut rng)).collect();
    let mut bundle = blindmatch::matching::wellformed::Bundle::from_bytes_untrusted(
        &params,
        &g.templates(&honest, &mut rng),
    )
    .unwrap();
    bundle.packed = Ciphertext::from_bytes(&params, &crafted).unwrap();
    let before = m.rows();
    add(&m, "g", 32, &bundle.to_bytes()).expect_error(422, "malformed_template");
    assert_eq!(m.rows(), before);
    let info = m.api("GET", "/v1/galleries/g").json();
    assert_eq!(info["templates"], 0, "{info}");
    // Were it taken, what comes back is the decider's signed list of
    // indices at or above its threshold, at most top_k: no score to read
    // a coefficient from.
    assert_eq!(
        add(&m, "g", 32, &g.templates(&honest, &mut rng)).status,
        201
    );
    for j in [0usize, 1] {
        let probe = g.probe(&one_hot(j), &mut rng);
        let r = call_with(
            "POST",
            &identify_url(&m, "g", "n", 100),
            &[("authorization", BEARER)],
            Some(&probe),
        );
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        let v = r.json();
        let fields: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(fields, ["gallery", "identification"]);
        let token = v["identification"].as_str().unwrap();
        let keys = PublicKeys::from_jwks(&std::fs::read(&m.jwks).unwrap()).unwrap();
        let claims = keys.verify_identification(token).unwrap();
        // The signed payload as sent, every field of it.
        use base64::Engine as _;
        let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(token.split('.').nth(1).unwrap())
            .unwrap();
        let json: serde_json::Value = serde_json::from_slice(&payload).unwrap();
        let names: Vec<&String> = json.as_object().unwrap().keys().collect();
        assert_eq!(
            names,
            ["amr", "aud", "exp", "iat", "iss", "matches", "nonce", "sub"]
        );
        assert!(claims.matches.iter().all(|&i| i < 32));
    }
}
