//! The ChaCha20 keystream behind `Prng`: our kernels (the detected backend
//! and scalar) against `rand_chacha`'s `ChaCha20Rng`, in bytes per second,
//! drawn the way the samplers draw it (`next_u32` and `next_u64` calls).
//!
//!   cargo bench --bench rng

use blindmatch::bfv::Prng;
use blindmatch::Backend;
use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use rand_chacha::rand_core::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

/// 16 KiB per iteration: a little more than one 4096-coefficient limb.
const WORDS: usize = 4096;

fn keystream(c: &mut Criterion) {
    let seed = [7u8; 32];
    let mut g = c.benchmark_group("rng");
    g.throughput(Throughput::Bytes((WORDS * 4) as u64));

    for b in Backend::available() {
        let mut ours = Prng::from_seed_with_backend(seed, b);
        g.bench_function(format!("next_u32/{}", b.name()), |bch| {
            bch.iter(|| {
                let mut acc = 0u32;
                for _ in 0..WORDS {
                    acc ^= ours.next_u32();
                }
                black_box(acc)
            })
        });
        g.bench_function(format!("next_u64/{}", b.name()), |bch| {
            bch.iter(|| {
                let mut acc = 0u64;
                for _ in 0..WORDS / 2 {
                    acc ^= ours.next_u64();
                }
                black_box(acc)
            })
        });
    }

    let mut theirs = ChaCha20Rng::from_seed(seed);
    g.bench_function("next_u32/rand_chacha", |bch| {
        bch.iter(|| {
            let mut acc = 0u32;
            for _ in 0..WORDS {
                acc ^= theirs.next_u32();
            }
            black_box(acc)
        })
    });
    g.bench_function("next_u64/rand_chacha", |bch| {
        bch.iter(|| {
            let mut acc = 0u64;
            for _ in 0..WORDS / 2 {
                acc ^= theirs.next_u64();
            }
            black_box(acc)
        })
    });
    g.finish();
}

criterion_group!(benches, keystream);
criterion_main!(benches);
