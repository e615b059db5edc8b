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
/// every 128 random bits.
pub fn fill_cbd(rng: &mut Prng, out: &mut [i8]) {
    let mask = (1u128 << CBD_K) - 1;
    for chunk in out.chunks_mut(3) {
        let x = rng.next_u64() as u128 | (rng.next_u64() as u128) << 64;
        for (j, o) in chunk.iter_mut().enumerate() {
            let bits = x >> (2 * CBD_K as usize * j);
            let a = (bits & mask).count_ones() as i32;
            let b = ((bits >> CBD_K) & mask).count_ones() as i32;
            *o = (a - b) as i8;
        }
    }
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
