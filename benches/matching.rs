//! Matching benchmarks at auth4096, d = 128.
//!
//! * `matching/verify` and `matching/verify_no_relin`: one 1:1 verification on
//!   the server (multiply, optional relinearization, masking,
//!   re-randomization, switching the reply down) against a prepared template,
//!   as the server keeps it in its cache of recent users.
//! * `matching/verify_unprepared`: the same with the template's part of the
//!   multiplication redone on every call (a user not in the cache).
//! * `matching/identify_scores_1core` and `matching/identify_scores_allcores`:
//!   scoring a plaintext probe against a gallery of 100 000 templates (3 125
//!   ciphertexts), on one core and on every core, into score buffers kept
//!   from probe to probe.
//! * `matching/identify_full_1core` and `matching/identify_full_allcores`:
//!   the key holder's whole identification (scores decrypted, ranked) on one
//!   core and on every core.
//! * `matching/gallery_read_1core` and `matching/gallery_copy_1core`: the
//!   memory floor of the two passes above, the gallery's bytes read (and
//!   copied) once on one core with no arithmetic, in fresh buffers;
//!   `matching/gallery_read_stored_1core`: the same read over the
//!   gallery's own stored ciphertexts. Each also as `*_prefetched_1core`,
//!   the same loop asking for every line 8 KiB before it reads it; the
//!   report takes the faster of the two ways as the floor (see
//!   `blindmatch::matching::floor`).
//! * `matching/identify_encrypted_probe_1core`: a probe encrypted under the
//!   service key scored against 3 200 templates (100 ciphertexts kept at the
//!   top level), one relinearized product per ciphertext, on one core.
//! * `matching/client_encrypt_probe` and `matching/client_decrypt_scores`.

use blindmatch::bfv::{Params, Prng, PublicKey, RelinKey, SecretKey};
use blindmatch::matching::{client, floor, Gallery, Identifier, Quantizer, Verifier};
use criterion::{black_box, criterion_group, criterion_main, Criterion};

const GALLERY_TEMPLATES: usize = 100_000;

/// Ciphertexts of the encrypted-probe gallery (32 templates each).
const HIDDEN_PROBE_CTS: usize = 100;

fn face(seed: usize) -> Vec<f32> {
    (0..128)
        .map(|i| ((((i + 1) * (seed + 3) * 7919) % 201) as f32) - 100.0)
        .collect()
}

/// Every buffer read (`copy`: copied into `to`) once, one way or the other
/// (see [`floor`]).
fn read_all(buffers: &[&[u32]], prefetch: bool) -> u32 {
    (0..buffers.len())
        .map(|i| floor::read(buffers, i, prefetch))
        .fold(0, u32::wrapping_add)
}

fn copy_all(from: &[&[u32]], to: &mut [Vec<u32>], prefetch: bool) {
    for (i, to) in to.iter_mut().enumerate() {
        floor::copy(from, i, to, prefetch);
    }
}

fn matching(c: &mut Criterion) {
    let params = Params::auth4096();
    let q = Quantizer::new(&params, 128).unwrap();
    let mut rng = Prng::from_seed([3; 32]);
    let sk = SecretKey::generate_with(&params, &mut rng);
    let pk = PublicKey::new_with(&sk, &mut rng);
    let rk = RelinKey::new_with(&sk, &mut rng);
    let faces: Vec<Vec<f32>> = (0..32).map(face).collect();
    let refs: Vec<&[f32]> = faces.iter().map(|f| f.as_slice()).collect();
    let template = client::encrypt_templates(&sk, &q, &refs, &mut rng).unwrap();
    let probe = client::encrypt_probe(&sk, &q, &faces[5], &mut rng).unwrap();
    let verifier = Verifier::new(&params, 128).unwrap();
    let reply = verifier
        .verify_with(&template, &probe, &pk, Some(&rk), &mut rng)
        .unwrap();

    let prepared = verifier.prepare_template(&template).unwrap();

    let mut g = c.benchmark_group("matching");
    g.sample_size(20);
    g.bench_function("verify", |b| {
        b.iter(|| {
            verifier
                .verify_prepared_with(
                    black_box(&prepared),
                    black_box(&probe),
                    &pk,
                    Some(&rk),
                    &mut rng,
                )
                .unwrap()
        })
    });
    // What the server does for a user with a relinearization key: verify,
    // then the compact reply (the bytes it sends).
    g.bench_function("verify_compact", |b| {
        b.iter(|| {
            let reply = verifier
                .verify_prepared_with(
                    black_box(&prepared),
                    black_box(&probe),
                    &pk,
                    Some(&rk),
                    &mut rng,
                )
                .unwrap();
            verifier.compact(&reply).unwrap()
        })
    });
    g.bench_function("verify_unprepared", |b| {
        b.iter(|| {
            verifier
                .verify_with(
                    black_box(&template),
                    black_box(&probe),
                    &pk,
                    Some(&rk),
                    &mut rng,
                )
                .unwrap()
        })
    });
    g.bench_function("verify_no_relin", |b| {
        b.iter(|| {
            verifier
                .verify_prepared_with(black_box(&prepared), black_box(&probe), &pk, None, &mut rng)
                .unwrap()
        })
    });
    g.bench_function("client_encrypt_probe", |b| {
        b.iter(|| client::encrypt_probe(&sk, &q, black_box(&faces[5]), &mut rng).unwrap())
    });
    g.bench_function("client_decrypt_scores", |b| {
        b.iter(|| client::decrypt_scores(&sk, &q, black_box(&reply), 32).unwrap())
    });
    let compact = verifier.compact(&reply).unwrap();
    g.bench_function("client_decrypt_score_reply", |b| {
        b.iter(|| client::decrypt_score_reply(&sk, &q, black_box(&compact), 32).unwrap())
    });

    // A gallery of 100 000 templates under a service key.
    let service_sk = SecretKey::generate_with(&params, &mut rng);
    let service_pk = PublicKey::new_with(&service_sk, &mut rng);
    let mut gallery = Gallery::new(&params, 128).unwrap();
    let per = 32;
    for _ in 0..GALLERY_TEMPLATES.div_ceil(per) {
        let ct = client::encrypt_templates_public(&service_pk, &q, &refs, &mut rng).unwrap();
        gallery.push(ct, per).unwrap();
    }
    let id = Identifier::new(&params, 128).unwrap();
    let prepared = id.prepare_probe(&faces[7]).unwrap();
    g.sample_size(10);
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    // Score buffers kept from probe to probe, as SEAL's side of the
    // comparison keeps its output ciphertexts.
    let mut scores = Vec::new();
    g.bench_function("identify_scores_1core", |b| {
        b.iter(|| {
            one.install(|| {
                id.score_ciphertexts_into(black_box(&gallery), &prepared, &mut scores)
                    .unwrap()
            })
        })
    });
    g.bench_function("identify_scores_allcores", |b| {
        b.iter(|| {
            id.score_ciphertexts_into(black_box(&gallery), &prepared, &mut scores)
                .unwrap()
        })
    });
    g.bench_function("identify_full_1core", |b| {
        b.iter(|| {
            one.install(|| {
                id.identify(black_box(&gallery), &service_sk, &faces[7], 5)
                    .unwrap()
            })
        })
    });
    g.bench_function("identify_full_allcores", |b| {
        b.iter(|| {
            id.identify(black_box(&gallery), &service_sk, &faces[7], 5)
                .unwrap()
        })
    });
    // The floor of any 1:N pass on this machine: the gallery's bytes only
    // read (what the key holder's identification must do), and read and
    // written once more (what making a score ciphertext per gallery
    // ciphertext must do), on one core, in buffers of the gallery's size
    // and shape (one per ciphertext).
    let words = gallery.memory_bytes() / gallery.ciphertexts() / 4;
    let src: Vec<Vec<u32>> = (0..gallery.ciphertexts())
        .map(|i| (0..words as u32).map(|w| w ^ i as u32).collect())
        .collect();
    let mut dst: Vec<Vec<u32>> = src.iter().map(|c| vec![0u32; c.len()]).collect();
    let fresh: Vec<&[u32]> = src.iter().map(Vec::as_slice).collect();
    // The gallery's own stored ciphertexts, where the pass reads them:
    // allocated one by one as the gallery was built.
    let own: Vec<&[u32]> = gallery.stored_residues().collect();
    for (way, prefetch) in [("", false), ("_prefetched", true)] {
        g.bench_function(format!("gallery_read{way}_1core"), |b| {
            b.iter(|| read_all(black_box(&fresh), prefetch))
        });
        g.bench_function(format!("gallery_read_stored{way}_1core"), |b| {
            b.iter(|| read_all(black_box(&own), prefetch))
        });
        g.bench_function(format!("gallery_copy{way}_1core"), |b| {
            b.iter(|| {
                copy_all(black_box(&fresh), &mut dst, prefetch);
                black_box(&dst);
            })
        });
    }
    drop((fresh, own));
    drop((src, dst));
    drop(gallery);

    // The probe hidden from the matcher: encrypted under the service key,
    // against a gallery kept at the top level.
    let service_rk = RelinKey::new_with(&service_sk, &mut rng);
    let mut hidden = Gallery::for_encrypted_probes(&params, 128).unwrap();
    for _ in 0..HIDDEN_PROBE_CTS {
        let ct = client::encrypt_templates_public(&service_pk, &q, &refs, &mut rng).unwrap();
        hidden.push(ct, per).unwrap();
    }
    let probe_ct = client::encrypt_probe_public(&service_pk, &q, &faces[7], &mut rng).unwrap();
    let mut hidden_scores = Vec::new();
    g.bench_function("identify_encrypted_probe_1core", |b| {
        b.iter(|| {
            one.install(|| {
                id.score_encrypted_probe_into(
                    black_box(&hidden),
                    &probe_ct,
                    &service_rk,
                    &mut hidden_scores,
                )
                .unwrap()
            })
        })
    });
    g.finish();
}

criterion_group!(benches, matching);
criterion_main!(benches);
