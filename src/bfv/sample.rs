//! Samplers for secrets, errors and uniform residues. None of them branches
//! on the values it produces.

use super::rng::Prng;
use crate::arith::Modulus;

/// Centred binomial parameter: the error is `popcount(k bits) - popcount(k
/// bits)` with variance `k/2`. `k = 21` gives sigma = 3.24, the standard's 3.2.
pub const CBD_K: u32 = 21;

/// Fills `out` with uniform ternary values in {-1, 0, 1}: five per random
/// byte below 3^5 = 243 (bytes from 243 up are discarded, so each value is
/// exactly uniform). Rejection depends only on discarded bytes, and the digit
/// extraction is arithmetic, so accepted values leak nothing through timing.
pub fn fill_ternary(rng: &mut Prng, out: &mut [i8]) {
    let mut i = 0;
    while i < out.len() {
        for b in rng.next_u32().to_le_bytes() {
            if b >= 243 {
                continue;
            }
            let mut v = b;
            for _ in 0..5 {
                if i == out.len() {
                    return;
                }
                out[i] = (v % 3) as i8 - 1;
                v /= 3;
                i += 1;
            }
        }
    }
}

/// Fills `out` with centred binomial errors in `[-21, 21]` (variance 10.5):
/// each value is `popcount(21 bits) - popcount(21 bits)`, three values from
/// every 128 random bits (two `u64` draws, the first one low): value `j` of a
/// group reads bits `42j .. 42j + 21` and `42j + 21 .. 42j + 42`.
pub fn fill_cbd(rng: &mut Prng, out: &mut [i8]) {
    for chunk in out.chunks_mut(3) {
        let lo = rng.next_u64();
        let hi = rng.next_u64();
        for (o, v) in chunk.iter_mut().zip(cbd_triple(lo, hi)) {
            *o = v;
        }
    }
}

/// The three errors of the 128 bits `hi:lo`.
#[inline(always)]
fn cbd_triple(lo: u64, hi: u64) -> [i8; 3] {
    const K: u32 = CBD_K;
    // popcount(a) - popcount(b) = popcount(a) + popcount(!b) - K for K-bit a
    // and b: one popcount of the 2K-bit field with its b half inverted.
    const FIELD: u64 = (1 << (2 * K)) - 1;
    const FLIP_B: u64 = ((1 << K) - 1) << K;
    let fields = [
        lo,
        (lo >> (2 * K)) | (hi << (64 - 2 * K)),
        hi >> (4 * K - 64),
    ];
    fields.map(|f| (((f & FIELD) ^ FLIP_B).count_ones() as i32 - K as i32) as i8)
}

/// A uniform residue mod `q` by rejection on draws of `bitlen(q)` bits (for
/// the preset primes, just under `2^bits`, almost every draw is accepted).
/// Rejection depends only on discarded draws, so accepted values leak
/// nothing through timing.
pub fn uniform(rng: &mut Prng, q: u32) -> u32 {
    let shift = q.leading_zeros();
    loop {
        let x = rng.next_u32() >> shift;
        if x < q {
            return x;
        }
    }
}

/// Maps a small signed value into `[0, q)` without branching.
#[inline]
pub fn signed_to_residue(v: i64, m: &Modulus) -> u32 {
    let q = m.value() as i64;
    // |v| < q: add q when negative via the sign mask.
    let r = v + (q & (v >> 63));
    r as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The errors of `hi:lo` as first written, with u128 shifts.
    fn triple_reference(lo: u64, hi: u64) -> [i8; 3] {
        let x = lo as u128 | (hi as u128) << 64;
        let mask = (1u128 << CBD_K) - 1;
        [0, 1, 2].map(|j| {
            let bits = x >> (2 * CBD_K as usize * j);
            let a = (bits & mask).count_ones() as i32;
            let b = ((bits >> CBD_K) & mask).count_ones() as i32;
            (a - b) as i8
        })
    }

    #[test]
    fn cbd_triple_matches_reference_on_structured_words() {
        let mut words = vec![(0, 0), (!0, !0), (!0, 0), (0, !0)];
        // Every single bit, every single cleared bit, and runs that fill
        // or empty exactly one half of one field (the +-21 extremes).
        for k in 0..128u32 {
            let bit = 1u128 << k;
            let run = |from: u32| ((1u128 << 21) - 1) << from;
            for x in [bit, !bit, run(k.min(107)), !run(k.min(107))] {
                words.push((x as u64, (x >> 64) as u64));
            }
        }
        let mut state = 0x0123_4567_89ab_cdefu64;
        for _ in 0..10_000 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let lo = state;
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            words.push((lo, state));
        }
        let mut extremes = [false; 2];
        for (lo, hi) in words {
            let got = cbd_triple(lo, hi);
            assert_eq!(got, triple_reference(lo, hi), "{hi:016x}{lo:016x}");
            extremes[0] |= got.contains(&-21);
            extremes[1] |= got.contains(&21);
        }
        assert_eq!(extremes, [true, true]);
    }
}
