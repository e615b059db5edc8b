//! The matching layer: quantizer bounds, packed inner products, 1:1 verify
//! with response hygiene, 1:N identify, the well-formedness checks on the
//! client's bundles; all against i64 references.

use super::oracle::Rng;
use blindmatch::bfv::{CoefficientEncoder, Params, Prng, PublicKey, RelinKey, SecretKey};
use blindmatch::matching::wellformed::{Bundle, Checker, Malformed, Packed};
use blindmatch::matching::{
    client, pack, Gallery, Identifier, Quantizer, ScoreReply, Verifier, DIMENSIONS,
};
use blindmatch::{FormatError, MatchError};

fn seeded(tag: u8) -> Prng {
    Prng::from_seed([tag; 32])
}

/// A Gaussian-ish embedding (sum of uniforms), deterministic.
fn embedding(rng: &mut Rng, d: usize) -> Vec<f32> {
    (0..d)
        .map(|_| (0..4).map(|_| rng.below(2001) as f32 - 1000.0).sum::<f32>())
        .collect()
}

/// Embeddings that push the quantized vectors to extremes: one-hot (largest
/// component), flat with alternating signs (largest l1 norm), and halfway
/// roundings (largest rounding error).
fn extreme_embeddings(d: usize) -> Vec<Vec<f32>> {
    let one_hot: Vec<f32> = (0..d).map(|i| if i == 3 { 1.0 } else { 0.0 }).collect();
    let neg_hot: Vec<f32> = (0..d).map(|i| if i == 0 { -1.0 } else { 0.0 }).collect();
    let flat: Vec<f32> = (0..d)
        .map(|i| if i % 2 == 0 { 1.0 } else { -1.0 })
        .collect();
    let flat_pos = vec![1.0f32; d];
    let s = Quantizer::new(&Params::auth4096(), d).unwrap().scale() as f32;
    // Components that land just above .5 after scaling, so every one rounds up.
    let x = (0.5 + 1e-3) / s * (d as f32).sqrt();
    let halfway: Vec<f32> = (0..d).map(|i| if i == 0 { 1.0 } else { x }).collect();
    vec![one_hot, neg_hot, flat, flat_pos, halfway]
}

fn dot(a: &[i32], b: &[i32]) -> i64 {
    a.iter().zip(b).map(|(&x, &y)| x as i64 * y as i64).sum()
}

suite_test! {
    fn quantizer_scales_and_refuses_bad_input() {
        let params = Params::auth4096();
        assert_eq!(
            DIMENSIONS.map(|d| Quantizer::new(&params, d).unwrap().scale()),
            [68, 47, 67, 64]
        );
        assert!(matches!(Quantizer::new(&params, 100), Err(MatchError::UnsupportedDimension { dim: 100 })));
        let q = Quantizer::new(&params, 128).unwrap();
        assert_eq!(q.quantize(&[1.0; 127]), Err(MatchError::WrongLength { expected: 128, actual: 127 }));
        let mut v = vec![0.5f32; 128];
        v[7] = f32::NAN;
        assert_eq!(q.quantize(&v), Err(MatchError::NotFinite { index: 7 }));
        v[7] = f32::INFINITY;
        assert_eq!(q.quantize(&v), Err(MatchError::NotFinite { index: 7 }));
        assert_eq!(q.quantize(&[0.0; 128]), Err(MatchError::ZeroVector));
        // The norm is taken in f64, so even f32::MAX components normalize.
        assert_eq!(q.quantize(&[f32::MAX; 128]).unwrap(), q.quantize(&[1.0; 128]).unwrap());
        let tiny = vec![1e-30f32; 128];
        assert!(q.quantize(&tiny).is_ok(), "tiny but nonzero vectors normalize");
    }

    fn accepted_vectors_never_wrap() {
        // Property: for every pair of accepted vectors, |<a, b>| <= (t-1)/2,
        // so the inner product is exact after centred decoding mod t.
        let params = Params::auth4096();
        let half_t = (params.plaintext_modulus() as i64 - 1) / 2;
        let mut rng = Rng::new(21);
        for d in DIMENSIONS {
            let q = Quantizer::new(&params, d).unwrap();
            let mut vs: Vec<Vec<i32>> = extreme_embeddings(d).iter().map(|e| q.quantize(e).unwrap()).collect();
            for _ in 0..40 {
                vs.push(q.quantize(&embedding(&mut rng, d)).unwrap());
            }
            for a in &vs {
                let n2 = dot(a, a);
                assert!(n2 <= q.max_norm2(), "d={d}: norm² {n2}");
                let (lo, hi) = q.range();
                assert!(a.iter().all(|&x| (lo..=hi).contains(&x)));
                for b in &vs {
                    assert!(dot(a, b).abs() <= half_t);
                }
            }
        }
    }

    fn packed_product_holds_every_inner_product() {
        // Plain i64 negacyclic product of the packed polynomials, no encryption:
        // the packing layout alone is exact, including full blocks and extremes.
        let params = Params::auth4096();
        let n = params.degree();
        let mut rng = Rng::new(22);
        for d in [128usize, 512] {
            let q = Quantizer::new(&params, d).unwrap();
            let per = pack::templates_per_ciphertext(&params, d);
            let mut embs = extreme_embeddings(d);
            while embs.len() < per {
                embs.push(embedding(&mut rng, d));
            }
            let tq: Vec<Vec<i32>> = embs.iter().map(|e| q.quantize(e).unwrap()).collect();
            let probe = tq[2].clone();
            let coeff = CoefficientEncoder::new(&params);
            let a = coeff.decode(&pack::pack_templates(&params, d, &tq).unwrap()).unwrap();
            let b = coeff.decode(&pack::pack_probe(&params, &probe).unwrap()).unwrap();
            let mut prod = vec![0i64; n];
            for (i, &x) in a.iter().enumerate().filter(|(_, &x)| x != 0) {
                for (j, &y) in b.iter().enumerate().filter(|(_, &y)| y != 0) {
                    if i + j < n { prod[i + j] += x * y } else { prod[i + j - n] -= x * y }
                }
            }
            for (k, t) in tq.iter().enumerate() {
                assert_eq!(prod[pack::score_position(d, k)], dot(t, &probe), "d={d} k={k}");
            }
        }
        assert!(matches!(
            pack::pack_templates(&params, 128, &vec![vec![0; 128]; 33]),
            Err(MatchError::TooManyTemplates { max: 32, actual: 33 })
        ));
        assert!(matches!(pack::pack_templates(&params, 128, &[]), Err(MatchError::NoTemplates)));
    }

    fn verify_returns_exact_scores_with_hygiene() {
        let params = Params::auth4096();
        let d = 128;
        let n = params.degree();
        let mut rng = Rng::new(23);
        let mut prng = seeded(5);
        let sk = SecretKey::generate_with(&params, &mut prng);
        let pk = PublicKey::new_with(&sk, &mut prng);
        let rk = RelinKey::new_with(&sk, &mut prng);
        let q = Quantizer::new(&params, d).unwrap();
        let verifier = Verifier::new(&params, d).unwrap();
        assert_eq!(verifier.reply_level(), 2);
        // A full template ciphertext of 32 samples including the extremes.
        let mut embs = extreme_embeddings(d);
        while embs.len() < 32 {
            embs.push(embedding(&mut rng, d));
        }
        let refs: Vec<&[f32]> = embs.iter().map(|e| e.as_slice()).collect();
        let template = client::encrypt_templates(&sk, &q, &refs, &mut prng).unwrap();
        let tq: Vec<Vec<i32>> = embs.iter().map(|e| q.quantize(e).unwrap()).collect();
        let rounds = if cfg!(target_arch = "wasm32") { 2 } else { 6 };
        let mut worst_budget = f64::INFINITY;
        for round in 0..rounds {
            // Probes: the extremes themselves, then random ones.
            let probe_emb = if round < embs.len() { embs[round].clone() } else { embedding(&mut rng, d) };
            let probe = client::encrypt_probe(&sk, &q, &probe_emb, &mut prng).unwrap();
            let pq = q.quantize(&probe_emb).unwrap();
            for relin in [Some(&rk), None] {
                let reply = verifier.verify_with(&template, &probe, &pk, relin, &mut prng).unwrap();
                assert_eq!(reply.level(), 2);
                assert_eq!(reply.size(), if relin.is_some() { 2 } else { 3 });
                assert!(!reply.is_seeded());
                let got = client::decrypt_scores(&sk, &q, &reply, 32).unwrap();
                let want: Vec<i64> = tq.iter().map(|t| dot(t, &pq)).collect();
                assert_eq!(got.scores, want, "round {round} relin {}", relin.is_some());
                for (c, w) in got.cosines.iter().zip(&want) {
                    assert!((c - *w as f64 / (47.0 * 47.0)).abs() < 1e-12);
                }
                let budget = sk.noise_budget(&reply).unwrap();
                worst_budget = worst_budget.min(budget);
                // The compact form (what the server sends for a relinearized
                // reply) decrypts to the same exact scores, through its bytes.
                if relin.is_some() {
                    let compact = verifier.compact(&reply).unwrap();
                    let bytes = compact.to_bytes();
                    assert_eq!(bytes.len(), 16 + 4 + 4 * 32 + 4 * n);
                    let back = ScoreReply::from_bytes(&params, &bytes).unwrap();
                    assert_eq!(back, compact);
                    let got = client::decrypt_score_reply(&sk, &q, &back, 32).unwrap();
                    assert_eq!(got.scores, want, "compact, round {round}");
                } else {
                    assert!(matches!(
                        verifier.compact(&reply),
                        Err(MatchError::ReplyNotRelinearized { size: 3 })
                    ));
                }
                // Hygiene: every non-score coefficient is masked. Unmasked, the
                // product's non-score coefficients are partial sums, mostly
                // small; masked, they are uniform mod t.
                let all = CoefficientEncoder::new(&params).decode(&sk.decrypt(&reply).unwrap()).unwrap();
                let large = (0..n)
                    .filter(|&i| !pack::is_score_position(d, i))
                    .filter(|&i| all[i].abs() > 1000)
                    .count();
                let others = n - n / d;
                // Uniform values in (-t/2, t/2] exceed 1000 in magnitude with
                // probability 0.97; fewer than 90% means the mask is missing.
                assert!(large * 10 > others * 9, "only {large} of {others} masked coefficients look uniform");
            }
        }
        eprintln!("verify circuit, worst noise budget over {rounds} rounds: {worst_budget:.1} bits (reply over 2 primes)");
        assert!(worst_budget > 10.0, "margin {worst_budget}");
    }

    fn compact_replies_refuse_bad_bytes_and_other_dimensions() {
        let params = Params::auth4096();
        let n = params.degree();
        let mut prng = seeded(9);
        let sk = SecretKey::generate_with(&params, &mut prng);
        let pk = PublicKey::new_with(&sk, &mut prng);
        let rk = RelinKey::new_with(&sk, &mut prng);
        let q = Quantizer::new(&params, 64).unwrap();
        let verifier = Verifier::new(&params, 64).unwrap();
        let mut rng = Rng::new(3);
        let e = embedding(&mut rng, 64);
        let template = client::encrypt_templates(&sk, &q, &[&e], &mut prng).unwrap();
        let probe = client::encrypt_probe(&sk, &q, &e, &mut prng).unwrap();
        let reply = verifier.verify_with(&template, &probe, &pk, Some(&rk), &mut prng).unwrap();
        let compact = verifier.compact(&reply).unwrap();
        assert_eq!((compact.dim(), compact.len()), (64, n / 64));
        let bytes = compact.to_bytes();
        let qe = q.quantize(&e).unwrap();
        let got = client::decrypt_score_reply(&sk, &q, &compact, 1).unwrap();
        assert_eq!(got.scores, vec![dot(&qe, &qe)]);
        // Read with the wrong dimension: a typed error.
        let q128 = Quantizer::new(&params, 128).unwrap();
        assert!(matches!(
            client::decrypt_score_reply(&sk, &q128, &compact, 1),
            Err(MatchError::ReplyDimension { expected: 128, found: 64 })
        ));
        // Truncated, extended, another kind, a bad shape: typed errors.
        for cut in [0, 10, 16, 19, bytes.len() - 1] {
            assert!(ScoreReply::from_bytes(&params, &bytes[..cut]).is_err(), "cut {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(matches!(
            ScoreReply::from_bytes(&params, &longer),
            Err(FormatError::TrailingBytes { .. })
        ));
        assert!(matches!(
            ScoreReply::from_bytes(&params, &reply.to_bytes()),
            Err(FormatError::WrongKind { expected: 7, found: 6 })
        ));
        for (dim, count) in [(100u16, 40u16), (64, 63), (128, 64), (0, 0), (8192, 0)] {
            let mut b = bytes.clone();
            b[16..18].copy_from_slice(&dim.to_le_bytes());
            b[18..20].copy_from_slice(&count.to_le_bytes());
            assert!(matches!(
                ScoreReply::from_bytes(&params, &b),
                Err(FormatError::ReplyShape { .. })
            ), "dim {dim} count {count}");
        }
        // A reply for other parameters (the header's parameter id).
        let mut b = bytes.clone();
        b[8] ^= 1;
        assert!(matches!(
            ScoreReply::from_bytes(&params, &b),
            Err(FormatError::ParamsMismatch { .. })
        ));
    }

    fn verify_refuses_transparent_and_foreign_ciphertexts() {
        let params = Params::auth4096();
        let mut prng = seeded(6);
        let sk = SecretKey::generate_with(&params, &mut prng);
        let pk = PublicKey::new_with(&sk, &mut prng);
        let q = Quantizer::new(&params, 128).unwrap();
        let verifier = Verifier::new(&params, 128).unwrap();
        let e = vec![1.0f32; 128];
        let template = client::encrypt_templates(&sk, &q, &[&e], &mut prng).unwrap();
        // A transparent ciphertext: c1 = 0, so c0 alone reveals the message.
        let transparent = {
            let ev = blindmatch::bfv::Evaluator::new(&params);
            let pt = CoefficientEncoder::new(&params).encode(&[5]).unwrap();
            // (c0, c1) - (c0, c1) + Δ·m has c1 = 0.
            let mut z = ev.sub(&template, &template).unwrap();
            ev.add_plain_assign(&mut z, &pt).unwrap();
            z
        };
        assert!(transparent.is_transparent());
        assert!(matches!(
            verifier.verify_with(&transparent, &template, &pk, None, &mut prng),
            Err(MatchError::TransparentCiphertext)
        ));
        assert!(matches!(
            verifier.verify_with(&template, &transparent, &pk, None, &mut prng),
            Err(MatchError::TransparentCiphertext)
        ));
    }

    fn identify_finds_the_enrolled_person() {
        let params = Params::auth4096();
        let d = 128;
        let mut rng = Rng::new(24);
        let mut prng = seeded(7);
        let service_sk = SecretKey::generate_with(&params, &mut prng);
        let service_pk = PublicKey::new_with(&service_sk, &mut prng);
        let q = Quantizer::new(&params, d).unwrap();
        let mut gallery = Gallery::new(&params, d).unwrap();
        let people: Vec<Vec<f32>> = (0..70).map(|_| embedding(&mut rng, d)).collect();
        let mut index_of = Vec::new();
        for chunk in people.chunks(32) {
            let refs: Vec<&[f32]> = chunk.iter().map(|e| e.as_slice()).collect();
            let ct = client::encrypt_templates_public(&service_pk, &q, &refs, &mut prng).unwrap();
            let first = gallery.push(ct, chunk.len()).unwrap();
            index_of.extend((0..chunk.len()).map(|k| first + k));
        }
        assert_eq!(gallery.len(), 70);
        assert_eq!(gallery.ciphertexts(), 3);
        let id = Identifier::new(&params, d).unwrap();
        // A fresh capture of person 45: the template plus small noise.
        let target = 45;
        let capture: Vec<f32> = people[target].iter().map(|&v| v + (rng.below(201) as f32 - 100.0)).collect();
        let matches = id.identify(&gallery, &service_sk, &capture, 5).unwrap();
        assert_eq!(matches.len(), 5);
        assert_eq!(matches[0].index, index_of[target]);
        // Scores are the exact integer inner products.
        let pq = q.quantize(&capture).unwrap();
        for m in &matches {
            let who = index_of.iter().position(|&i| i == m.index).unwrap();
            assert_eq!(m.score, dot(&q.quantize(&people[who]).unwrap(), &pq));
        }
        assert!(matches.windows(2).all(|w| w[0].score >= w[1].score));
        // Every score exact, the gallery's ciphertexts scored two at a time
        // in runs rounded together: a run of two and one of an odd one (3
        // ciphertexts), two runs of two (4), then four runs of four and one
        // of three, a pair and an odd one (19).
        let mut more: Vec<Vec<f32>> = Vec::new();
        for added in [0, 1, 15] {
            for _ in 0..added {
                let start = more.len();
                more.extend((0..10).map(|_| embedding(&mut rng, d)));
                let refs: Vec<&[f32]> = more[start..].iter().map(|e| e.as_slice()).collect();
                let ct = client::encrypt_templates_public(&service_pk, &q, &refs, &mut prng).unwrap();
                let first = gallery.push(ct, refs.len()).unwrap();
                index_of.extend((0..refs.len()).map(|k| first + k));
            }
            let everyone: Vec<&Vec<f32>> = people.iter().chain(&more).collect();
            let all = id.identify(&gallery, &service_sk, &capture, everyone.len()).unwrap();
            assert_eq!(all.len(), everyone.len());
            for m in &all {
                let who = index_of.iter().position(|&i| i == m.index).unwrap();
                assert_eq!(m.score, dot(&q.quantize(everyone[who]).unwrap(), &pq), "{} ciphertexts", gallery.ciphertexts());
            }
        }
        assert_eq!(gallery.ciphertexts(), 19);

        // Worst-case inputs: a ciphertext of extreme templates, probed by each
        // extreme in turn; every score is exact.
        let mut extremes = extreme_embeddings(d);
        while extremes.len() < 32 {
            extremes.push(embedding(&mut rng, d));
        }
        let refs: Vec<&[f32]> = extremes.iter().map(|e| e.as_slice()).collect();
        let mut worst = Gallery::new(&params, d).unwrap();
        worst.push(client::encrypt_templates_public(&service_pk, &q, &refs, &mut prng).unwrap(), 32).unwrap();
        let tq: Vec<Vec<i32>> = extremes.iter().map(|e| q.quantize(e).unwrap()).collect();
        let mut worst_budget = f64::INFINITY;
        // Reused score buffers: longer than the gallery at first, and
        // carried from probe to probe.
        let mut reused: Vec<_> = (0..worst.ciphertexts() + 2)
            .map(|_| client::encrypt_templates_public(&service_pk, &q, &refs[..1], &mut prng).unwrap())
            .collect();
        for probe in extreme_embeddings(d) {
            let pq = q.quantize(&probe).unwrap();
            let all = id.identify(&worst, &service_sk, &probe, 32).unwrap();
            assert_eq!(all.len(), 32);
            for m in all {
                assert_eq!(m.score, dot(&tq[m.index], &pq), "template {}", m.index);
            }
            let prepared = id.prepare_probe(&probe).unwrap();
            id.score_ciphertexts_into(&worst, &prepared, &mut reused).unwrap();
            assert_eq!(reused, id.score_ciphertexts(&worst, &prepared).unwrap());
            for ct in id.score_ciphertexts(&worst, &prepared).unwrap() {
                let budget = service_sk.noise_budget(&ct).unwrap();
                assert!(budget > 8.0, "identify margin {budget}");
                worst_budget = worst_budget.min(budget);
            }
        }
        eprintln!("identify on extreme inputs, gallery over 2 primes: worst budget {worst_budget:.1} bits");
    }

    fn identify_with_an_encrypted_probe() {
        // A probe encrypted under the service key: the matcher multiplies it
        // into a top-level gallery without seeing it, the key holder ranks
        // the products; the scores are the exact inner products, on extreme
        // inputs too, and the ranking is the plaintext probe's.
        let params = Params::auth4096();
        let d = 128;
        let mut rng = Rng::new(61);
        let mut prng = seeded(61);
        let sk = SecretKey::generate_with(&params, &mut prng);
        let pk = PublicKey::new_with(&sk, &mut prng);
        let rk = RelinKey::new_with(&sk, &mut prng);
        let q = Quantizer::new(&params, d).unwrap();
        let id = Identifier::new(&params, d).unwrap();
        let mut people = extreme_embeddings(d);
        while people.len() < 40 {
            people.push(embedding(&mut rng, d));
        }
        let mut gallery = Gallery::for_encrypted_probes(&params, d).unwrap();
        let mut plain = Gallery::new(&params, d).unwrap();
        for chunk in people.chunks(32) {
            let refs: Vec<&[f32]> = chunk.iter().map(|e| e.as_slice()).collect();
            let ct = client::encrypt_templates_public(&pk, &q, &refs, &mut prng).unwrap();
            gallery.push(ct.clone(), chunk.len()).unwrap();
            plain.push(ct, chunk.len()).unwrap();
        }
        assert_eq!(gallery.stored_level(), params.limbs());
        assert_eq!(2 * gallery.memory_bytes(), 3 * plain.memory_bytes());
        // One erased template stays out of the ranking.
        let e = gallery.erase(33, &sk, &pk).unwrap();
        gallery.apply(e).unwrap();
        let tq: Vec<Vec<i32>> = people.iter().map(|e| q.quantize(e).unwrap()).collect();
        let mut scores = Vec::new();
        let mut worst_budget = f64::INFINITY;
        for (i, probe) in extreme_embeddings(d).into_iter().chain([people[20].clone()]).enumerate() {
            let ct = client::encrypt_probe_public(&pk, &q, &probe, &mut prng).unwrap();
            id.score_encrypted_probe_into(&gallery, &ct, &rk, &mut scores).unwrap();
            assert_eq!(scores.len(), 2);
            for s in &scores {
                assert_eq!(s.level(), params.limbs() - 1);
                worst_budget = worst_budget.min(sk.noise_budget(s).unwrap());
            }
            let all = id.rank(&gallery, &sk, &scores, 40).unwrap();
            assert_eq!(all.len(), 39, "probe {i}");
            let pq = q.quantize(&probe).unwrap();
            for m in &all {
                assert_ne!(m.index, 33);
                assert_eq!(m.score, dot(&tq[m.index], &pq), "probe {i}, template {}", m.index);
            }
            // The same ranking as the plaintext probe's, erased template aside.
            let mut expected = id.identify(&plain, &sk, &probe, 40).unwrap();
            expected.retain(|m| m.index != 33);
            assert_eq!(all, expected, "probe {i}");
            assert_eq!(id.rank(&gallery, &sk, &scores, 3).unwrap(), expected[..3].to_vec());
        }
        assert!(worst_budget > 4.0, "encrypted-probe margin {worst_budget}");
        eprintln!("identify with an encrypted probe, extreme inputs: worst budget {worst_budget:.1} bits");

        // Typed refusals: a gallery switched down for plaintext probes, a
        // transparent probe, score ciphertexts that do not match the gallery.
        let ct = client::encrypt_probe_public(&pk, &q, &people[0], &mut prng).unwrap();
        assert!(matches!(
            id.score_encrypted_probe_into(&plain, &ct, &rk, &mut scores),
            Err(MatchError::GalleryLevel)
        ));
        let transparent = {
            let ev = blindmatch::bfv::Evaluator::new(&params);
            let pt = CoefficientEncoder::new(&params).encode(&[5]).unwrap();
            let mut z = ev.sub(&ct, &ct).unwrap();
            ev.add_plain_assign(&mut z, &pt).unwrap();
            z
        };
        assert!(matches!(
            id.score_encrypted_probe_into(&gallery, &transparent, &rk, &mut scores),
            Err(MatchError::TransparentCiphertext)
        ));
        id.score_encrypted_probe_into(&gallery, &ct, &rk, &mut scores).unwrap();
        assert!(matches!(
            id.rank(&gallery, &sk, &scores[..1], 5),
            Err(MatchError::ScoreCiphertexts { expected: 2, found: 1 })
        ));
        assert!(id.rank(&gallery, &sk, &scores, 0).unwrap().is_empty());
    }

    fn gallery_erasure_removes_one_template_and_keeps_the_rest() {
        let params = Params::auth4096();
        let mut rng = Rng::new(31);
        let mut prng = seeded(8);
        let sk = SecretKey::generate_with(&params, &mut prng);
        let pk = PublicKey::new_with(&sk, &mut prng);
        let id_of = |d| Identifier::new(&params, d).unwrap();
        for (d, people, erase) in [(128, 40, [35, 0, 39]), (64, 64, [63, 0, 31])] {
            let q = Quantizer::new(&params, d).unwrap();
            let per = pack::templates_per_ciphertext(&params, d);
            let faces: Vec<Vec<f32>> = (0..people).map(|_| embedding(&mut rng, d)).collect();
            let quantized: Vec<Vec<i32>> = faces.iter().map(|e| q.quantize(e).unwrap()).collect();
            let mut gallery = Gallery::new(&params, d).unwrap();
            let mut stored = Vec::new();
            for chunk in faces.chunks(per) {
                let refs: Vec<&[f32]> = chunk.iter().map(|e| e.as_slice()).collect();
                let ct = client::encrypt_templates_public(&pk, &q, &refs, &mut prng).unwrap();
                gallery.push(ct.clone(), chunk.len()).unwrap();
                stored.push((ct, chunk.len(), 0u64));
            }
            let id = id_of(d);
            let probe = embedding(&mut rng, d);
            let pq = q.quantize(&probe).unwrap();
            let mut gone = Vec::new();
            for &index in &erase {
                let e = gallery.erase(index, &sk, &pk).unwrap();
                // Nothing changes until the erasure is applied.
                assert!(gallery.contains(index));
                let (pos, k) = (index / per, index % per);
                assert_eq!((e.index(), e.position()), (index, pos));
                // The replacement holds every other template of its
                // ciphertext, and zeros in the erased one's block.
                let pt = sk.decrypt(e.ciphertext()).unwrap();
                assert_eq!(e.ciphertext().level(), params.limbs());
                for (j, tq) in quantized.iter().enumerate().skip(pos * per).take(per) {
                    let block = &pt.coeffs()[(j % per) * d..(j % per + 1) * d];
                    let want: Vec<u32> = if j == index || gone.contains(&j) {
                        vec![0; d]
                    } else {
                        tq.iter().map(|&v| v.rem_euclid(65537) as u32).collect()
                    };
                    assert_eq!(block, &want[..], "d={d} template {j}");
                }
                gallery.apply(e.clone()).unwrap();
                gone.push(index);
                stored[pos] = (e.ciphertext().clone(), stored[pos].1, e.erased_mask());
                assert_eq!(e.erased_mask() >> k & 1, 1);
                assert!(!gallery.contains(index));
                // Erased, or never there: the same typed error.
                for bad in [index, people, 100_000] {
                    assert!(matches!(gallery.erase(bad, &sk, &pk), Err(MatchError::UnknownTemplate { index }) if index == bad));
                }
                assert!(matches!(gallery.apply(e), Err(MatchError::UnknownTemplate { .. })));
            }
            assert_eq!((gallery.len(), gallery.erased()), (people - erase.len(), erase.len()));
            // Every remaining template, with its exact score; none erased.
            let all = id.identify(&gallery, &sk, &probe, people).unwrap();
            assert_eq!(all.len(), people - erase.len());
            for m in &all {
                assert!(!gone.contains(&m.index));
                assert_eq!(m.score, dot(&quantized[m.index], &pq), "d={d} template {}", m.index);
            }
            // Rebuilt from the stored ciphertexts and masks: the same gallery.
            let mut again = Gallery::new(&params, d).unwrap();
            for (ct, count, mask) in stored {
                again.restore(ct, count, mask).unwrap();
            }
            assert_eq!(id.identify(&again, &sk, &probe, people).unwrap(), all);
        }

        // Two erasures computed from one state: the second, applied after the
        // first, would bring the first template back; it is refused.
        let d = 128;
        let q = Quantizer::new(&params, d).unwrap();
        let faces: Vec<Vec<f32>> = (0..4).map(|_| embedding(&mut rng, d)).collect();
        let refs: Vec<&[f32]> = faces.iter().map(|e| e.as_slice()).collect();
        let mut gallery = Gallery::new(&params, d).unwrap();
        gallery.push(client::encrypt_templates_public(&pk, &q, &refs, &mut prng).unwrap(), 4).unwrap();
        let (a, b) = (gallery.erase(1, &sk, &pk).unwrap(), gallery.erase(2, &sk, &pk).unwrap());
        gallery.apply(a).unwrap();
        assert!(matches!(gallery.apply(b), Err(MatchError::StaleErasure { index: 2 })));
        assert!(gallery.contains(2));
        // Keys of other parameters are refused.
        let ps: Vec<u64> = blindmatch::arith::ntt_primes(28, 4096, 3).unwrap().into_iter().map(u64::from).collect();
        let other = Params::builder().degree(4096).plaintext_modulus(65537)
            .ciphertext_primes(&ps[..2]).special_prime(ps[2]).build().unwrap();
        let osk = SecretKey::generate_with(&other, &mut prng);
        let opk = PublicKey::new_with(&osk, &mut prng);
        assert!(matches!(gallery.erase(0, &osk, &opk), Err(MatchError::Bfv(_))));
        // An identifier of another dimension refuses the gallery.
        assert_eq!(
            id_of(64).identify(&gallery, &sk, &[1.0; 64], 1),
            Err(MatchError::GalleryDimension { expected: 64, found: 128 })
        );
    }

    fn client_bundles_pass_the_checks_and_scaled_probes_do_not() {
        // The browser's side of the well-formedness checks (quantize, one-hot
        // encode, encrypt, frame) and the matcher's and decider's, on this
        // target: an honest probe and template pass with their exact squared
        // norms; a packed probe doubled beside its honest one-hot part fails
        // the sum checks.
        let params = Params::auth4096();
        let d = 128;
        let mut prng = seeded(9);
        let sk = SecretKey::generate_with(&params, &mut prng);
        let pk = PublicKey::new_with(&sk, &mut prng);
        let rk = RelinKey::new_with(&sk, &mut prng);
        let q = Quantizer::new(&params, d).unwrap();
        let checker = Checker::new(&params, d).unwrap();
        let mut rng = Rng::new(29);
        let faces: Vec<Vec<f32>> = (0..2).map(|_| embedding(&mut rng, d)).collect();
        let norm2 = |e: &[f32]| { let a = q.quantize(e).unwrap(); dot(&a, &a) as u32 };

        let bundle = client::encrypt_probe_bundle(&pk, &q, &faces[0], &mut prng).unwrap();
        let bytes = bundle.to_bytes();
        let back = Bundle::from_bytes_untrusted(&params, &bytes).unwrap();
        assert_eq!(back, bundle);
        let replies = checker
            .check_with(&back.packed, Packed::Probe, &back.one_hot, &pk, &rk, &mut prng)
            .unwrap();
        assert_eq!(replies.judge(&sk, &q).unwrap(), Ok(vec![norm2(&faces[0])]));

        let doubled: Vec<i32> = q.quantize(&faces[0]).unwrap().iter().map(|&x| 2 * x).collect();
        let packed = pk.encrypt_with(&pack::pack_probe(&params, &doubled).unwrap(), &mut prng).unwrap();
        let replies = checker
            .check_with(&packed, Packed::Probe, &back.one_hot, &pk, &rk, &mut prng)
            .unwrap();
        assert!(matches!(replies.judge(&sk, &q).unwrap(), Err(Malformed::Sums { .. })));

        let refs: Vec<&[f32]> = faces.iter().map(|e| e.as_slice()).collect();
        let template = client::encrypt_template_bundle(&pk, &q, &refs, &mut prng).unwrap();
        let replies = checker
            .check_with(&template.packed, Packed::Template { samples: 2 }, &template.one_hot, &pk, &rk, &mut prng)
            .unwrap();
        assert_eq!(replies.judge(&sk, &q).unwrap(), Ok(faces.iter().map(|e| norm2(e)).collect()));
    }
}
