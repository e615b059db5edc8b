//! The ChaCha20 stream behind `Prng`: fixed words, and every backend's
//! kernel against scalar. The expected values come from an independent
//! Python ChaCha20 (20 rounds, 64-bit block counter in words 12-13, zero
//! stream id); the zero-seed words are the published all-zero key/IV test
//! vector of the original ChaCha20 (keystream bytes 76 b8 e0 ad a0 f1 3d 90
//! ...). They are also the words `rand_chacha`'s `ChaCha20Rng` gives, which
//! `tests/rng_oracle.rs` checks natively.

use super::oracle::{backends, Rng};
use blindmatch::bfv::Prng;
use blindmatch::Backend;

/// Seed bytes 1, 2, ..., 32.
fn counting_seed() -> [u8; 32] {
    std::array::from_fn(|i| i as u8 + 1)
}

fn skip(rng: &mut Prng, words: usize) {
    for _ in 0..words {
        rng.next_u32();
    }
}

/// Calls that cross the 64-word refill boundary of `rand_chacha` and the
/// 128-word one of ours, with `u64`s that straddle both.
fn check_known_words(backend: Backend) {
    let mut z = Prng::from_seed_with_backend([0; 32], backend);
    let first: Vec<u32> = (0..4).map(|_| z.next_u32()).collect();
    assert_eq!(
        first,
        [0xade0_b876, 0x903d_f1a0, 0xe56a_5d40, 0x28bd_8653],
        "{backend:?}"
    );

    let mut r = Prng::from_seed_with_backend(counting_seed(), backend);
    assert_eq!(r.next_u32(), 0x9f7e_69b1, "word 0, {backend:?}");
    assert_eq!(
        r.next_u64(),
        0xcf31_d183_191e_46c6,
        "words 1-2, {backend:?}"
    );
    skip(&mut r, 60);
    assert_eq!(
        r.next_u64(),
        0x48e0_040e_3631_433b,
        "words 63-64, {backend:?}"
    );
    skip(&mut r, 62);
    assert_eq!(
        r.next_u64(),
        0x5652_3985_7734_7415,
        "words 127-128, {backend:?}"
    );
    assert_eq!(
        r.seed(),
        [
            248, 4, 237, 51, 231, 46, 51, 48, 223, 24, 64, 174, 3, 129, 177, 229, 60, 22, 210, 155,
            125, 70, 85, 94, 188, 133, 210, 86, 9, 117, 180, 222
        ],
        "words 129-136 as a seed, {backend:?}"
    );
    skip(&mut r, 118);
    assert_eq!(
        r.next_u64(),
        0x71cd_67f0_42b6_fedf,
        "words 255-256, {backend:?}"
    );

    let mut r = Prng::from_seed_with_backend(counting_seed(), backend);
    let sum: u64 = (0..100_000).map(|_| r.next_u32() as u64).sum();
    assert_eq!(
        sum, 214_550_178_405_984,
        "sum of words 0..100000, {backend:?}"
    );
}

/// One `Prng` call chosen by `op`, its result as a `u64` (seeds folded).
fn call(rng: &mut Prng, op: u64) -> u64 {
    match op % 3 {
        0 => rng.next_u32() as u64,
        1 => rng.next_u64(),
        _ => rng.seed().chunks_exact(8).fold(0, |acc, c| {
            acc.rotate_left(17) ^ u64::from_le_bytes(c.try_into().unwrap())
        }),
    }
}

suite_test! {
    fn prng_gives_known_words() {
        check_known_words(Backend::scalar());
        for b in backends() {
            check_known_words(b);
        }
        // The default constructor picks the detected backend; same words.
        let mut a = Prng::from_seed(counting_seed());
        assert_eq!(a.next_u32(), 0x9f7e_69b1);
    }

    fn every_backend_matches_scalar_prng() {
        let mut rng = Rng::new(7);
        for round in 0..8 {
            let seed: [u8; 32] = std::array::from_fn(|_| rng.next_u64() as u8);
            // Runs of one call kind at a time, so that u64s and seeds land on
            // every alignment of the refill boundary.
            let ops: Vec<u64> = (0..600)
                .flat_map(|_| {
                    let op = rng.next_u64();
                    std::iter::repeat_n(op, 1 + (op >> 8) as usize % 9)
                })
                .collect();
            let mut want = Prng::from_seed_with_backend(seed, Backend::scalar());
            let want: Vec<u64> = ops.iter().map(|&op| call(&mut want, op)).collect();
            for b in backends() {
                let mut got = Prng::from_seed_with_backend(seed, b);
                for (k, (&op, w)) in ops.iter().zip(&want).enumerate() {
                    assert_eq!(call(&mut got, op), *w, "round {round}, call {k}, {b:?}");
                }
            }
        }
    }
}
