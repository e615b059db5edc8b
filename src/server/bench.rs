//! `blindmatch-server bench`: matching throughput on this machine, 1:1 and
//! 1:N, on one thread and on all of them.

use std::time::Instant;

use crate::bfv::{Prng, PublicKey, SecretKey};
use crate::matching::{client, Identifier, Quantizer, Verifier};

use super::cli::BenchArgs;
use super::{cores, params};

/// The shortest of three timed runs of `f`, in seconds (a short pass on a
/// shared machine is noisy), or its first error.
fn best_of_3(mut f: impl FnMut() -> Result<(), String>) -> Result<f64, String> {
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        let start = Instant::now();
        f()?;
        best = best.min(start.elapsed().as_secs_f64());
    }
    Ok(best)
}

/// A wrapping sum of every word of `residues` (a gallery's, in memory
/// order), over the current rayon pool: one read of its bytes, one way or
/// the other (see [`crate::matching::floor`]).
fn read_gallery(residues: &[&[u32]], prefetch: bool) -> u32 {
    use rayon::prelude::*;
    (0..residues.len())
        .into_par_iter()
        .map(|i| crate::matching::floor::read(residues, i, prefetch))
        .reduce(|| 0, u32::wrapping_add)
}

fn unit_embedding(rng: &mut Prng, dim: usize) -> Vec<f32> {
    (0..dim)
        .map(|_| (rng.next_u32() as f32 / u32::MAX as f32) - 0.5)
        .collect()
}

pub(super) fn bench(args: &BenchArgs) -> Result<(), String> {
    let params = params();
    let dim = 128;
    let err = |e: crate::error::MatchError| e.to_string();
    let mut rng = Prng::from_os().map_err(|e| e.to_string())?;
    let sk = SecretKey::generate_with(&params, &mut rng);
    let pk = PublicKey::new_with(&sk, &mut rng);
    let rk = crate::bfv::RelinKey::new_with(&sk, &mut rng);
    let q = Quantizer::new(&params, dim).map_err(err)?;
    let verifier = Verifier::new(&params, dim).map_err(err)?;
    let embs: Vec<Vec<f32>> = (0..32).map(|_| unit_embedding(&mut rng, dim)).collect();
    let refs: Vec<&[f32]> = embs.iter().map(|e| e.as_slice()).collect();
    let template = client::encrypt_templates(&sk, &q, &refs, &mut rng).map_err(err)?;
    let probe = client::encrypt_probe(&sk, &q, &embs[0], &mut rng).map_err(err)?;
    // As `serve` does for a cached user: the template is prepared once.
    let template = verifier.prepare_template(&template).map_err(err)?;
    let n = args.verifications.max(1);
    let all = args.threads.unwrap_or_else(cores).max(1);
    let kernels = crate::Backend::detect();
    println!("backend {}, parameters {}", kernels.name(), params.id_hex());
    println!("kernels {kernels}");
    if let Some(c) = crate::Backend::calibration() {
        for (family, backend, ns) in &c.timings {
            println!(
                "calibration\t{}\t{backend}\t{:.2} us",
                family.name(),
                ns / 1e3
            );
        }
        println!("calibration\ttotal\t{:.0} us", c.micros);
        for p in &c.preferred {
            println!(
                "preferred\t{}\t{}\t{} family {}",
                p.family.name(),
                p.backend,
                p.vendor,
                p.cpu_family
            );
        }
    }
    for threads in [1, all] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .map_err(|e| e.to_string())?;
        // What `serve` does for a cached user with a relinearization key:
        // verify, then the compact reply's bytes.
        let one = || {
            let reply = verifier.verify_prepared(&template, &probe, &pk, Some(&rk))?;
            Ok::<_, crate::error::MatchError>(verifier.compact(&reply)?.to_bytes().len())
        };
        // Warm-up (allocator, caches), untimed.
        pool.install(one).map_err(err)?;
        let best = best_of_3(|| {
            pool.install(|| {
                use rayon::prelude::*;
                (0..n)
                    .into_par_iter()
                    .map(|_| one())
                    .collect::<Result<Vec<usize>, _>>()
            })
            .map(drop)
            .map_err(err)
        })?;
        println!(
            "verify_1to1\tthreads={threads}\t{:.1} verifications/s\t{:.2} ms each (relinearized, compact reply; best of 3)",
            n as f64 / best,
            best * 1e3 * threads as f64 / n as f64
        );
        if threads == all {
            break;
        }
    }
    // 1:N over a gallery of public-key encryptions.
    let per = crate::matching::pack::templates_per_ciphertext(&params, dim);
    let cts = args.gallery.div_ceil(per).max(1);
    let mut gallery = crate::matching::Gallery::new(&params, dim).map_err(err)?;
    let ct = client::encrypt_templates_public(&pk, &q, &refs, &mut rng).map_err(err)?;
    for _ in 0..cts {
        gallery.push(ct.clone(), per).map_err(err)?;
    }
    let gallery_bytes = gallery.memory_bytes();
    let identifier = Identifier::new(&params, dim).map_err(err)?;
    let probe_pt = identifier.prepare_probe(&embs[0]).map_err(err)?;
    let residues: Vec<&[u32]> = gallery.stored_residues().collect();
    for threads in [1, all] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .map_err(|e| e.to_string())?;
        // Score buffers kept from pass to pass, as a server answering probe
        // after probe keeps them. One untimed pass first (the first touch of
        // the output's pages would otherwise dominate), then the best of
        // three.
        let mut scores = Vec::new();
        pool.install(|| identifier.score_ciphertexts_into(&gallery, &probe_pt, &mut scores))
            .map_err(err)?;
        let s = best_of_3(|| {
            pool.install(|| identifier.score_ciphertexts_into(&gallery, &probe_pt, &mut scores))
                .map_err(err)
        })?;
        drop(scores);
        println!(
            "identify_1toN\tthreads={threads}\t{} templates\t{:.0} comparisons/s (encrypted scores, before decryption; best of 3)\tgallery {:.1} MiB",
            gallery.len(),
            gallery.len() as f64 / s,
            gallery_bytes as f64 / (1u64 << 20) as f64
        );
        // What `serve --service-key` runs per request: the key holder's
        // scores, decrypted and ranked.
        let d = best_of_3(|| {
            pool.install(|| identifier.identify(&gallery, &sk, &embs[0], 5))
                .map(drop)
                .map_err(err)
        })?;
        println!(
            "identify_1toN_decrypted\tthreads={threads}\t{} templates\t{:.0} comparisons/s (scores decrypted, top 5 ranked; best of 3)",
            gallery.len(),
            gallery.len() as f64 / d,
        );
        // The ceiling this machine's memory puts on both: the gallery's
        // words read once with as many threads, no arithmetic, the faster
        // of the two ways.
        let mut best = (f64::INFINITY, "");
        for (prefetch, way) in [(false, "plain"), (true, "prefetching")] {
            let r = best_of_3(|| {
                std::hint::black_box(pool.install(|| read_gallery(&residues, prefetch)));
                Ok(())
            })?;
            if r < best.0 {
                best = (r, way);
            }
        }
        let (r, way) = best;
        let ahead_kib = crate::matching::floor::AHEAD * 4 / 1024;
        println!(
            "memory_1toN\tthreads={threads}\t{} templates\t{:.0} comparisons/s (the gallery only read, no arithmetic: the memory's ceiling for both rows above; {:.1} GB/s; {way}, the faster of a plain read and one prefetching {ahead_kib} KiB ahead; best of 3)",
            gallery.len(),
            gallery.len() as f64 / r,
            gallery_bytes as f64 / r / 1e9,
        );
        if threads == all {
            break;
        }
    }
    Ok(())
}
