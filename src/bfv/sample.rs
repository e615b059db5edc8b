//! Samplers for secrets, errors and uniform residues. None of them branches
//! on the values it produces.

use zeroize::Zeroize;

use super::rng::Prng;
use crate::arith::Modulus;

pub use crate::backend::scalar::CBD_K;

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
    // Read straight from the generator's buffer, four words per group of
    // three values; a group whose words straddle a refill is drawn word by
    // word (the same words in the same order).
    let backend = rng.backend();
    let mut i = 0;
    while i < out.len() {
        let words = rng.unread_words();
        let groups = (words.len() / 4).min((out.len() - i).div_ceil(3));
        let end = (i + 3 * groups.max(1)).min(out.len());
        if groups == 0 {
            let mut w: [u32; 4] = std::array::from_fn(|_| rng.next_u32());
            backend.cbd(&w, &mut out[i..end]);
            w.zeroize();
        } else {
            backend.cbd(&words[..4 * groups], &mut out[i..end]);
            rng.consume(4 * groups);
        }
        i = end;
    }
}

/// A uniform residue mod `q` by rejection on draws of `bitlen(q)` bits (of
/// the preset's primes, `q_0` keeps all but 1 draw in 10^4, `q_1` 98.5 %,
/// `q_2` 93.5 %).
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

/// Fills `out` with uniform residues mod `q`: the values [`uniform`] would
/// return one after the other, from the same words, read straight from the
/// generator's buffer. Each word is stored and kept only when below `q`
/// (the next one overwrites a rejected value), so there is no branch on
/// the values.
pub fn fill_uniform(rng: &mut Prng, q: u32, out: &mut [u32]) {
    let shift = q.leading_zeros();
    let backend = rng.backend();
    let mut i = 0;
    while i < out.len() {
        let (used, written) = backend.take_below(rng.unread_words(), shift, q, &mut out[i..]);
        rng.consume(used);
        i += written;
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
            let got = crate::backend::scalar::cbd_triple(lo, hi);
            assert_eq!(got, triple_reference(lo, hi), "{hi:016x}{lo:016x}");
            extremes[0] |= got.contains(&-21);
            extremes[1] |= got.contains(&21);
        }
        assert_eq!(extremes, [true, true]);
    }

    /// Every backend's error kernel gives the scalar one's values, over
    /// lengths that end mid-group and mid-batch.
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    #[cfg_attr(not(target_arch = "wasm32"), test)]
    fn cbd_is_the_same_on_every_backend() {
        for len in [0, 1, 2, 3, 11, 12, 13, 191, 192, 193, 4096] {
            let mut want = vec![0i8; len];
            fill_cbd(
                &mut Prng::from_seed_with_backend([3; 32], crate::Backend::scalar()),
                &mut want,
            );
            for b in crate::Backend::available() {
                let mut got = vec![0i8; len];
                fill_cbd(&mut Prng::from_seed_with_backend([3; 32], b), &mut got);
                assert_eq!(got, want, "{b:?} len {len}");
            }
        }
    }

    /// The batched uniform sampler, on every backend, returns what the
    /// one-at-a-time one does and leaves the stream at the same place,
    /// including across refills and with half of the draws rejected.
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    #[cfg_attr(not(target_arch = "wasm32"), test)]
    fn fill_uniform_matches_one_at_a_time() {
        for (q, backend) in [(1u32 << 28) + 3, 536_813_569, 12_289, 2]
            .into_iter()
            .flat_map(|q| crate::Backend::available().into_iter().map(move |b| (q, b)))
        {
            for len in [0, 1, 7, 8, 9, 255, 256, 257, 4096] {
                let mut a = Prng::from_seed_with_backend([8; 32], crate::Backend::scalar());
                let mut b = Prng::from_seed_with_backend([8; 32], backend);
                // Start mid-buffer.
                a.next_u32();
                b.next_u32();
                let want: Vec<u32> = (0..len).map(|_| uniform(&mut a, q)).collect();
                let mut got = vec![0; len];
                fill_uniform(&mut b, q, &mut got);
                assert_eq!(got, want, "q {q} len {len} {backend:?}");
                assert_eq!(
                    a.next_u32(),
                    b.next_u32(),
                    "stream position, q {q} len {len} {backend:?}"
                );
            }
        }
    }
}
