//! Scaling from the RNS modulus Q down to 2^32: the modulus switch to a
//! power of two that makes the matching layer's compact score reply.

use crate::arith::{Modulus, ShoupConstant};
use crate::backend::Backend;

/// `round(2^32 · x / Q) mod 2^32` from the residues of `x` mod the primes of
/// `Q`: with `y_i = [x_i · (Q/q_i)^-1]_{q_i}`, `x/Q = Σ y_i/q_i (mod 1)`, and
/// `y_i · floor(2^64/q_i)` in wrapping 64-bit arithmetic is `2^64 · y_i/q_i`
/// mod 2^64 less an error below `y_i < 2^30`; the top 32 bits of the
/// rounded sum are the result, within 1.25 of the exact quotient for up to
/// three primes.
pub(crate) struct ToPowerOfTwo {
    moduli: Vec<Modulus>,
    inv_hat: Vec<ShoupConstant>,
    weight: Vec<u64>,
}

impl ToPowerOfTwo {
    pub(crate) fn new(moduli: Vec<Modulus>) -> Self {
        let inv_hat = moduli
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let hat = moduli
                    .iter()
                    .enumerate()
                    .filter(|&(j, _)| j != i)
                    .fold(1, |acc, (_, o)| m.mul(acc, m.reduce_u32(o.value())));
                m.shoup(m.inv(hat))
            })
            .collect();
        let weight = moduli.iter().map(|m| u64::MAX / m.value() as u64).collect();
        Self {
            moduli,
            inv_hat,
            weight,
        }
    }

    /// The scaled values of `x`, `rows` holding one limb of residues per
    /// prime; the products `y_i` are computed a limb at a time by the
    /// backend's vector kernel.
    pub(crate) fn scale(&self, rows: &[&[u32]], backend: Backend) -> Vec<u32> {
        let n = rows.first().map_or(0, |r| r.len());
        let mut sum = vec![0u64; n];
        let mut y = vec![0u32; n];
        for (((m, &c), &w), row) in self
            .moduli
            .iter()
            .zip(&self.inv_hat)
            .zip(&self.weight)
            .zip(rows)
        {
            backend.lincomb(m, &[row], &[c], &mut y);
            for (s, &y) in sum.iter_mut().zip(&y) {
                *s = s.wrapping_add((y as u64).wrapping_mul(w));
            }
        }
        sum.into_iter()
            .map(|s| (s.wrapping_add(1 << 31) >> 32) as u32)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bfv::{Params, Prng};

    /// Against exact integers: CRT to x < Q in u128, then
    /// `got · Q - 2^32 · x` taken mod `2^32 · Q` is within 1.25 · Q.
    #[test]
    fn scaling_to_two_to_the_32_is_within_its_bound() {
        let params = Params::auth4096();
        let primes: Vec<Modulus> = params.plans_q().iter().map(|p| *p.modulus()).collect();
        let mut rng = Prng::from_seed([4; 32]);
        for l in 1..=primes.len() {
            let moduli = primes[..l].to_vec();
            let big_q: u128 = moduli.iter().map(|m| m.value() as u128).product();
            let scale = ToPowerOfTwo::new(moduli.clone());
            let mut worst = 0f64;
            for case in 0..20_000u32 {
                // Random x, plus the edges 0, 1, Q - 1 and values near Q/2.
                let x: u128 = match case {
                    0 => 0,
                    1 => 1,
                    2 => big_q - 1,
                    3 => big_q / 2,
                    4 => big_q / 2 + 1,
                    _ => ((rng.next_u64() as u128) << 64 | rng.next_u64() as u128) % big_q,
                };
                let rows: Vec<Vec<u32>> = moduli
                    .iter()
                    .map(|m| vec![(x % m.value() as u128) as u32])
                    .collect();
                let refs: Vec<&[u32]> = rows.iter().map(|r| r.as_slice()).collect();
                let got = scale.scale(&refs, Backend::scalar())[0] as u128;
                let m = big_q << 32;
                let diff = (got * big_q + m - (x << 32) % m) % m;
                let err = if diff > m / 2 { m - diff } else { diff };
                let rel = err as f64 / big_q as f64;
                worst = worst.max(rel);
                assert!(rel <= 1.25, "{l} primes, x = {x}: off by {rel}");
            }
            assert!(
                worst >= 0.25,
                "{l} primes: the edges were not reached ({worst})"
            );
            // Every backend gives the scalar kernel's values.
            let rows: Vec<Vec<u32>> = moduli
                .iter()
                .map(|m| (0..4096).map(|_| rng.next_u32() % m.value()).collect())
                .collect();
            let refs: Vec<&[u32]> = rows.iter().map(|r| r.as_slice()).collect();
            for backend in Backend::available() {
                assert_eq!(
                    scale.scale(&refs, backend),
                    scale.scale(&refs, Backend::scalar()),
                    "{l} primes, {backend:?}"
                );
            }
        }
    }
}
