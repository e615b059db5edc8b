//! NTT and pointwise-kernel benchmarks, per backend, with tfhe-ntt (Zama's
//! NTT) on the same prime in the same run as the peer.
//!
//! Ids: `forward/{backend}/{n}`, `inverse/{backend}/{n}`,
//! `mul_acc/{backend}/{n}`, `mul/{backend}/{n}`, `lincomb5/{backend}/{n}`
//! (five inputs, the shape of RNS base conversion), `dot2_blocks/{backend}/{n}`
//! (the key holder's 1:N block sums of one prime), `dot2_blocks_pair/{backend}/{n}`
//! (the same of two ciphertexts in one call, as the pass makes them) and, for the peer,
//! `forward/tfhe-ntt/{n}`, `inverse/tfhe-ntt/{n}`, `mul_acc/tfhe-ntt/{n}`.
//! `scripts/bench.sh` turns them into `bench/results.tsv` and `bench/REPORT.md`.

use blindmatch::{arith::ntt_primes, Backend, NttPlan};
use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};

const DEGREES: [usize; 3] = [2048, 4096, 8192];

fn random_residues(n: usize, q: u32, seed: u64) -> Vec<u32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 33) % q as u64) as u32
        })
        .collect()
}

/// The prime every figure uses: the largest 30-bit NTT prime for `n`.
fn prime(n: usize) -> u32 {
    ntt_primes(30, n, 1).expect("prime")[0]
}

fn transforms(c: &mut Criterion) {
    for op in ["forward", "inverse"] {
        let mut g = c.benchmark_group(op);
        for n in DEGREES {
            let q = prime(n);
            let input = random_residues(n, q, 1);
            for b in Backend::available() {
                let plan = NttPlan::with_backend(n, q as u64, b).unwrap();
                let mut buf = input.clone();
                g.bench_function(BenchmarkId::new(b.name(), n), |bench| {
                    bench.iter(|| {
                        if op == "forward" {
                            plan.forward(black_box(&mut buf));
                        } else {
                            plan.inverse(black_box(&mut buf));
                        }
                    })
                });
            }
            let peer = tfhe_ntt::prime32::Plan::try_new(n, q).expect("tfhe-ntt plan");
            let mut buf = input.clone();
            g.bench_function(BenchmarkId::new("tfhe-ntt", n), |bench| {
                bench.iter(|| {
                    if op == "forward" {
                        peer.fwd(black_box(&mut buf));
                    } else {
                        peer.inv(black_box(&mut buf));
                    }
                })
            });
        }
        g.finish();
    }
}

fn pointwise(c: &mut Criterion) {
    let mut g = c.benchmark_group("mul_acc");
    for n in DEGREES {
        let q = prime(n);
        let a = random_residues(n, q, 2);
        let b = random_residues(n, q, 3);
        let mut acc = random_residues(n, q, 4);
        for bk in Backend::available() {
            let plan = NttPlan::with_backend(n, q as u64, bk).unwrap();
            g.bench_function(BenchmarkId::new(bk.name(), n), |bench| {
                bench.iter(|| plan.multiply_accumulate(black_box(&a), black_box(&b), &mut acc))
            });
        }
        let peer = tfhe_ntt::prime32::Plan::try_new(n, q).expect("tfhe-ntt plan");
        g.bench_function(BenchmarkId::new("tfhe-ntt", n), |bench| {
            bench.iter(|| peer.mul_accumulate(&mut acc, black_box(&a), black_box(&b)))
        });
    }
    g.finish();

    let mut g = c.benchmark_group("mul");
    for n in DEGREES {
        let q = prime(n);
        let a = random_residues(n, q, 2);
        let b = random_residues(n, q, 3);
        let mut out = vec![0u32; n];
        for bk in Backend::available() {
            let plan = NttPlan::with_backend(n, q as u64, bk).unwrap();
            g.bench_function(BenchmarkId::new(bk.name(), n), |bench| {
                bench.iter(|| plan.multiply_pointwise(black_box(&a), black_box(&b), &mut out))
            });
        }
    }
    g.finish();
}

/// `Backend::lincomb` over five inputs: the shape of the base conversions and
/// the scale-and-round of ciphertext multiplication.
fn rns(c: &mut Criterion) {
    let mut g = c.benchmark_group("lincomb5");
    let n = 4096;
    let q = prime(n);
    let m = blindmatch::arith::Modulus::new(q as u64).expect("prime");
    let inputs: Vec<Vec<u32>> = (0..5).map(|i| random_residues(n, q, 10 + i)).collect();
    let refs: Vec<&[u32]> = inputs.iter().map(|x| x.as_slice()).collect();
    let weights: Vec<_> = (0..5u32).map(|i| m.shoup(q - 1 - 7 * i)).collect();
    let mut out = vec![0u32; n];
    for bk in Backend::available() {
        g.bench_function(BenchmarkId::new(bk.name(), n), |bench| {
            bench.iter(|| bk.lincomb(&m, black_box(&refs), &weights, &mut out))
        });
    }
    g.finish();
}

/// `Backend::dot2_blocks` over one prime of a gallery ciphertext: the key
/// holder's 1:N block sums at dimension 128 (32 blocks of 128 words), with
/// a 29-bit prime as the preset's, in cache.
fn dot(c: &mut Criterion) {
    let mut g = c.benchmark_group("dot2_blocks");
    let n = 4096;
    let q = ntt_primes(29, n, 1).expect("prime")[0];
    let m = blindmatch::arith::Modulus::new(q as u64).expect("prime");
    let v: Vec<Vec<u32>> = (0..4).map(|i| random_residues(n, q, 20 + i)).collect();
    let mut sums = vec![0u32; 32];
    for bk in Backend::available() {
        g.bench_function(BenchmarkId::new(bk.name(), n), |bench| {
            bench.iter(|| bk.dot2_blocks(&m, black_box(&v[0]), &v[1], &v[2], &v[3], &mut sums))
        });
    }
    g.finish();
    // Two ciphertexts against one probe, the probe read once.
    let mut g = c.benchmark_group("dot2_blocks_pair");
    let w: Vec<Vec<u32>> = (0..2).map(|i| random_residues(n, q, 30 + i)).collect();
    let mut more = [0u32; 32];
    for bk in Backend::available() {
        g.bench_function(BenchmarkId::new(bk.name(), n), |bench| {
            bench.iter(|| {
                let gallery = [(black_box(&v[0][..]), &v[2][..]), (&w[0][..], &w[1][..])];
                let sums = [&mut sums[..], &mut more[..]];
                bk.dot2_blocks_many(&m, gallery, &v[1], &v[3], sums, [None, None])
            })
        });
    }
    g.finish();
}

criterion_group!(benches, transforms, pointwise, rns, dot);
criterion_main!(benches);
