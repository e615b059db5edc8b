//! Samplers for secrets, errors and uniform residues. None of them branches
//! on the values it produces.

use super::rng::Prng;
use crate::arith::Modulus;

/// Centred binomial parameter: the error is `popcount(k bits) - popcount(k
/// bits)` with variance `k/2`. `k = 21` gives sigma = 3.24, the standard's 3.2.
pub const CBD_K: u32 = 21;

/// A uniform ternary value in {-1, 0, 1}, each with probability 1/3
/// (to within 2^-32): the top of `3·x / 2^32` for a uniform 32-bit `x`.
pub fn ternary(rng: &mut Prng) -> i8 {
    (((rng.next_u32() as u64 * 3) >> 32) as i32 - 1) as i8
}

/// A centred binomial error in `[-21, 21]` with variance 10.5.
pub fn cbd(rng: &mut Prng) -> i8 {
    let x = rng.next_u64();
    let mask = (1u64 << CBD_K) - 1;
    let a = (x & mask).count_ones() as i32;
    let b = ((x >> CBD_K) & mask).count_ones() as i32;
    (a - b) as i8
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
