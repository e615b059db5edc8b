//! `Prng` against `rand_chacha`'s `ChaCha20Rng`, the generator it replaced:
//! for random seeds and random sequences of the calls the crate makes, every
//! backend gives the same values (native only; `rand_chacha` is a
//! dev-dependency kept as this oracle).
#![cfg(not(target_arch = "wasm32"))]

use blindmatch::bfv::Prng;
use blindmatch::Backend;
use proptest::prelude::*;
use rand_chacha::rand_core::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

#[derive(Clone, Copy, Debug)]
enum Call {
    U32,
    U64,
    Seed,
}

fn calls() -> impl Strategy<Value = Vec<(Call, usize)>> {
    let call = prop_oneof![Just(Call::U32), Just(Call::U64), Just(Call::Seed)];
    // (call, repetitions): runs of one kind shift the u64 and seed reads
    // over every word alignment of both generators' refill boundaries.
    prop::collection::vec((call, 1usize..40), 0..200)
}

fn check(seed: [u8; 32], calls: &[(Call, usize)]) -> Result<(), TestCaseError> {
    for b in Backend::available() {
        let mut ours = Prng::from_seed_with_backend(seed, b);
        let mut theirs = ChaCha20Rng::from_seed(seed);
        for (k, &(call, reps)) in calls.iter().enumerate() {
            for _ in 0..reps {
                match call {
                    Call::U32 => {
                        prop_assert_eq!(ours.next_u32(), theirs.next_u32(), "call {} {:?}", k, b)
                    }
                    Call::U64 => {
                        prop_assert_eq!(ours.next_u64(), theirs.next_u64(), "call {} {:?}", k, b)
                    }
                    Call::Seed => {
                        let mut s = [0u8; 32];
                        theirs.fill_bytes(&mut s);
                        prop_assert_eq!(ours.seed(), s, "call {} {:?}", k, b);
                    }
                }
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn prng_matches_rand_chacha(seed in any::<[u8; 32]>(), calls in calls()) {
        check(seed, &calls)?;
    }
}

#[test]
fn prng_matches_rand_chacha_on_long_streams() {
    // The encryption pattern: a seed, then thousands of words.
    for s in 0..4u8 {
        let seed = [s.wrapping_mul(37); 32];
        let calls = [
            (Call::Seed, 1),
            (Call::U32, 12_289),
            (Call::U64, 4_097),
            (Call::Seed, 3),
            (Call::U32, 1),
            (Call::U64, 10_000),
        ];
        check(seed, &calls).unwrap();
    }
}
