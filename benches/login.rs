//! Login-mode benchmarks at auth4096, d = 128 (feature `server`).
//!
//! * `login/matcher`: the matcher's part of one login on one core: the probe
//!   against a prepared template (multiply, relinearize, mask, flood the
//!   score positions for the decider, re-randomize) and the compact reply's
//!   bytes, what it sends to the decider.
//! * `login/decider`: the decider's part on one core: the reply parsed, the
//!   user's secret key derived from the master secret, the score positions
//!   decrypted and checked, the policy applied and the verdict signed
//!   (Ed25519 JWS).
//! * `login/decider_key_derivation`: of which deriving the user's secret key
//!   from the master secret.
//! * `login/total`: both, one after the other. These three are the score
//!   part alone (plain verify: no well-formedness checks; the decider reads
//!   the scores and signs).
//! * `login/hardened_matcher`, `login/hardened_decider`,
//!   `login/hardened_total`: a login as it runs, with the probe's
//!   well-formedness checks (docs/PROTOCOL.md, "Well-formed embeddings"):
//!   the matcher also computes the bits, sum and norm replies; the decider
//!   judges them before it reads a score.
//! * `login/total_allcores_x64`: 64 whole hardened logins spread over every core (a
//!   verdict rate: 64 / this time).
//! * `login/identify_1k_matcher`: 1:N in login mode, the matcher's part for
//!   a gallery of 1,024 templates (32 ciphertexts) on one core: the
//!   encrypted probe against each, masked and flooded as a login's reply,
//!   compacted, the probe's check replies, and the request's bytes.
//! * `login/identify_1k_decider`: the decider's part on one core: the
//!   request parsed, the gallery's key derived, 32 replies decrypted and
//!   checked, the probe's checks judged, the indices at or above the
//!   threshold signed.
//! * `login/append_32_matcher`, `login/append_32_decider`: a login-mode
//!   gallery append of 32 templates (one bundle), its well-formedness
//!   checks on one core: the matcher's check replies (a bits square per
//!   template, three sum checks, a norm per template) and their bytes; the
//!   decider's judgement of them under the gallery's key.
//!
//! scripts/bench_report.py puts each next to SEAL's multiply + relinearize
//! from the same run. The process keeps the heap pad `blindmatch-server`
//! sets at start (`server::heap`), as the server's requests run.

use blindmatch::bfv::{Params, Prng, PublicKey, RelinKey};
use blindmatch::matching::wellformed::{frame, split, CheckReplies, Checker, Packed};
use blindmatch::matching::{client, Quantizer, ScoreReply, Verifier};
use blindmatch::server::decider::identify::IdentifyRequest;
use blindmatch::server::decider::replies::{self, Candidate};
use blindmatch::server::decider::{Decider, KeyLabel, MasterSecret, Policy, Request};
use blindmatch::server::verdict::{VerdictKey, VerdictKeys};
use criterion::{black_box, criterion_group, criterion_main, Criterion};
use rayon::prelude::*;

const DIM: usize = 128;
const BATCH: usize = 64;

fn face(seed: usize) -> Vec<f32> {
    (0..DIM)
        .map(|i| ((((i + 1) * (seed + 3) * 7919) % 201) as f32) - 100.0)
        .collect()
}

fn login(c: &mut Criterion) {
    // The heap pad `blindmatch-server` (matcher and decider) sets at start.
    blindmatch::server::heap::keep_pad(blindmatch::server::heap::DEFAULT_PAD_MIB);
    let params = Params::auth4096();
    let q = Quantizer::new(&params, DIM).unwrap();
    let keys = VerdictKeys::new(vec![VerdictKey::from_seed(&[9; 32])]).unwrap();
    let master = MasterSecret::from_bytes([7; 32]);
    let decider = Decider::new(
        MasterSecret::from_bytes([7; 32]),
        &params,
        DIM,
        Policy::default(),
        keys,
        "https://login.example".into(),
        300,
    )
    .unwrap();
    let label = KeyLabel::user("alice", 3);
    let (pk, rk): (PublicKey, RelinKey) = decider.matcher_keys(&label).unwrap();
    let mut rng = Prng::from_seed([3; 32]);
    let faces: Vec<Vec<f32>> = (0..5).map(face).collect();
    let refs: Vec<&[f32]> = faces.iter().map(|f| f.as_slice()).collect();
    let template = client::encrypt_templates_public(&pk, &q, &refs, &mut rng).unwrap();
    let probe = client::encrypt_probe_public(&pk, &q, &faces[2], &mut rng).unwrap();
    let verifier = Verifier::for_decider(&params, DIM).unwrap();
    let prepared = verifier.prepare_template(&template).unwrap();
    let request = Request {
        label,
        audience: "https://app.example",
        nonce: "challenge-0123456789",
        samples: 5,
        template_checked: true,
    };
    let no_checks = CheckReplies {
        bits: vec![],
        sums: vec![],
        norms: vec![],
    };
    let matcher = |rng: &mut Prng| {
        let reply = verifier
            .verify_prepared_with(&prepared, &probe, &pk, Some(&rk), rng)
            .unwrap();
        verifier.compact(&reply).unwrap().to_bytes()
    };
    let decide = |bytes: &[u8]| {
        let reply = ScoreReply::from_bytes(&params, bytes).unwrap();
        decider
            .decide(&request, &reply, &no_checks, 1_796_000_000)
            .unwrap()
    };
    let sent = matcher(&mut rng);
    assert!(decide(&sent).contains('.'));
    // Hardened: the probe's bundle, its checks, the decider's judgement.
    let bundle = client::encrypt_probe_bundle(&pk, &q, &faces[2], &mut rng).unwrap();
    let checker = Checker::new(&params, DIM).unwrap();
    let hardened_matcher = |rng: &mut Prng| {
        let reply = verifier
            .verify_prepared_with(&prepared, &bundle.packed, &pk, Some(&rk), rng)
            .unwrap();
        let reply = verifier.compact(&reply).unwrap().to_bytes();
        let checks = checker
            .check_with(
                &bundle.packed,
                Packed::Probe,
                &bundle.one_hot,
                &pk,
                &rk,
                rng,
            )
            .unwrap()
            .items();
        frame(std::iter::once(reply.as_slice()).chain(checks.iter().map(|c| c.as_slice())))
    };
    let hardened_decide = |bytes: &[u8]| {
        let items = split(bytes).unwrap();
        let reply = ScoreReply::from_bytes(&params, items[0]).unwrap();
        let checks = CheckReplies::from_items(&params, &items[1..], 1, 1).unwrap();
        decider
            .decide(&request, &reply, &checks, 1_796_000_000)
            .unwrap()
    };
    let hardened = hardened_matcher(&mut rng);
    assert!(hardened_decide(&hardened).contains('.'));

    let mut g = c.benchmark_group("login");
    g.sample_size(20);
    g.bench_function("matcher", |b| b.iter(|| black_box(matcher(&mut rng))));
    g.bench_function("decider", |b| {
        b.iter(|| black_box(decide(black_box(&sent))))
    });
    g.bench_function("hardened_matcher", |b| {
        b.iter(|| black_box(hardened_matcher(&mut rng)))
    });
    g.bench_function("hardened_decider", |b| {
        b.iter(|| black_box(hardened_decide(black_box(&hardened))))
    });
    g.bench_function("hardened_total", |b| {
        b.iter(|| black_box(hardened_decide(&hardened_matcher(&mut rng))))
    });
    g.bench_function("decider_key_derivation", |b| {
        b.iter(|| black_box(master.secret_key(&params, black_box(&label))))
    });
    g.bench_function("total", |b| {
        b.iter(|| black_box(decide(&matcher(&mut rng))))
    });
    g.bench_function("total_allcores_x64", |b| {
        b.iter(|| {
            (0..BATCH as u8).into_par_iter().for_each(|i| {
                let mut rng = Prng::from_seed([i; 32]);
                black_box(hardened_decide(&hardened_matcher(&mut rng)));
            })
        })
    });

    // 1:N: a gallery of 32 ciphertexts under a gallery's key.
    let glabel = KeyLabel::gallery("staff", 11);
    let (gpk, grk): (PublicKey, RelinKey) = decider.matcher_keys(&glabel).unwrap();
    let people: Vec<Vec<f32>> = (0..32 * 32).map(|i| face(i + 10)).collect();
    let gallery: Vec<_> = people
        .chunks(32)
        .map(|chunk| {
            let refs: Vec<&[f32]> = chunk.iter().map(|f| f.as_slice()).collect();
            client::encrypt_templates_public(&gpk, &q, &refs, &mut rng).unwrap()
        })
        .collect();
    let gbundle = client::encrypt_probe_bundle(&gpk, &q, &people[700], &mut rng).unwrap();
    let gprobe = &gbundle.packed;
    let identify_matcher = |rng: &mut Prng| {
        let checks = checker
            .check_with(gprobe, Packed::Probe, &gbundle.one_hot, &gpk, &grk, rng)
            .unwrap()
            .items();
        let prepared = verifier.prepare_template(gprobe).unwrap();
        let list: Vec<Candidate> = gallery
            .iter()
            .map(|ct| {
                let r = verifier
                    .verify_prepared_with(&prepared, ct, &gpk, Some(&grk), rng)
                    .unwrap();
                Candidate {
                    candidates: u32::MAX as u64,
                    reply: verifier.compact(&r).unwrap(),
                }
            })
            .collect();
        let list = replies::to_bytes(&list);
        frame(std::iter::once(list.as_slice()).chain(checks.iter().map(|c| c.as_slice())))
    };
    let ireq = IdentifyRequest {
        label: glabel,
        audience: "https://app.example",
        nonce: "nonce-0123456789",
        top_k: 5,
    };
    let identify_decider = |bytes: &[u8]| {
        let items = split(bytes).unwrap();
        let list = replies::from_bytes(&params, DIM, items[0]).unwrap();
        let checks = CheckReplies::from_items(&params, &items[1..], 1, 1).unwrap();
        decider
            .identify(&ireq, &list, &checks, 1_796_000_000)
            .unwrap()
    };
    let list = identify_matcher(&mut rng);
    assert!(identify_decider(&list).contains('.'));
    g.sample_size(10);
    g.bench_function("identify_1k_matcher", |b| {
        b.iter(|| black_box(identify_matcher(&mut rng)))
    });
    g.bench_function("identify_1k_decider", |b| {
        b.iter(|| black_box(identify_decider(black_box(&list))))
    });

    // A gallery append: one bundle of 32 templates, checked.
    let refs: Vec<&[f32]> = people[..32].iter().map(|f| f.as_slice()).collect();
    let appended = client::encrypt_template_bundle(&gpk, &q, &refs, &mut rng).unwrap();
    let append_matcher = |rng: &mut Prng| {
        let kind = Packed::Template { samples: 32 };
        let items = checker
            .check_with(&appended.packed, kind, &appended.one_hot, &gpk, &grk, rng)
            .unwrap()
            .items();
        frame(items.iter().map(|i| i.as_slice()))
    };
    let append_decider = |bytes: &[u8]| {
        let items = split(bytes).unwrap();
        let checks = CheckReplies::from_items(&params, &items, 32, 1).unwrap();
        decider.check_template(&glabel, &checks).unwrap()
    };
    let checks = append_matcher(&mut rng);
    assert_eq!(append_decider(&checks), Ok(()));
    g.bench_function("append_32_matcher", |b| {
        b.iter(|| black_box(append_matcher(&mut rng)))
    });
    g.bench_function("append_32_decider", |b| {
        b.iter(|| black_box(append_decider(black_box(&checks))))
    });
    g.finish();
}

criterion_group!(benches, login);
criterion_main!(benches);
