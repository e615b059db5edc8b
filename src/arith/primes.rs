//! NTT-friendly prime search and primitive roots of unity.
//!
//! These run once per parameter set on public values, so plain `u64` arithmetic
//! with `%` is fine here; the constant-time code is in [`super::Modulus`].

use crate::error::ArithError;

fn mul_mod(a: u64, b: u64, m: u64) -> u64 {
    ((a as u128 * b as u128) % m as u128) as u64
}

fn pow_mod(mut b: u64, mut e: u64, m: u64) -> u64 {
    let mut acc = 1 % m;
    b %= m;
    while e > 0 {
        if e & 1 == 1 {
            acc = mul_mod(acc, b, m);
        }
        b = mul_mod(b, b, m);
        e >>= 1;
    }
    acc
}

/// Deterministic Miller-Rabin for `n < 2^32` (bases 2, 7, 61 suffice).
pub fn is_prime(n: u64) -> bool {
    if n < 2 {
        return false;
    }
    for p in [2u64, 3, 5, 7, 11, 13, 61] {
        if n.is_multiple_of(p) {
            return n == p;
        }
    }
    assert!(n < 1 << 32, "is_prime is specified for n < 2^32");
    let mut d = n - 1;
    let mut s = 0;
    while d.is_multiple_of(2) {
        d /= 2;
        s += 1;
    }
    'witness: for a in [2u64, 7, 61] {
        let mut x = pow_mod(a, d, n);
        if x == 1 || x == n - 1 {
            continue;
        }
        for _ in 1..s {
            x = mul_mod(x, x, n);
            if x == n - 1 {
                continue 'witness;
            }
        }
        return false;
    }
    true
}

/// Smallest supported ring degree.
pub const MIN_DEGREE: usize = 1024;
/// Largest supported ring degree.
pub const MAX_DEGREE: usize = 16384;

/// Checks that `n` is a power of two in `MIN_DEGREE..=MAX_DEGREE`.
pub fn check_degree(n: usize) -> Result<(), ArithError> {
    if n.is_power_of_two() && (MIN_DEGREE..=MAX_DEGREE).contains(&n) {
        Ok(())
    } else {
        Err(ArithError::InvalidDegree {
            degree: n,
            minimum: MIN_DEGREE,
            maximum: MAX_DEGREE,
        })
    }
}

/// The `count` largest primes `q < 2^bits` with `q ≡ 1 (mod 2n)`, in descending order.
///
/// `bits` is at most 30 (the 32-bit kernels need `4q < 2^32`).
pub fn ntt_primes(bits: u32, n: usize, count: usize) -> Result<Vec<u32>, ArithError> {
    check_degree(n)?;
    if !(2..=30).contains(&bits) {
        return Err(ArithError::PrimeBitsOutOfRange { bits });
    }
    let two_n = 2 * n as u64;
    let mut out = Vec::with_capacity(count);
    // Largest candidate below 2^bits that is 1 mod 2n.
    let top = (1u64 << bits) - 1;
    let mut cand = top - (top - 1) % two_n;
    while out.len() < count && cand > two_n {
        if is_prime(cand) {
            out.push(cand as u32);
        }
        cand -= two_n;
    }
    if out.len() < count {
        return Err(ArithError::NotEnoughPrimes {
            bits,
            two_n,
            requested: count,
            found: out.len(),
        });
    }
    Ok(out)
}

/// Checks that `q` is a prime usable for a negacyclic NTT of degree `n`.
pub fn check_ntt_prime(n: usize, q: u64) -> Result<(), ArithError> {
    check_degree(n)?;
    if !(3..1 << 30).contains(&q) || q.is_multiple_of(2) {
        return Err(ArithError::ModulusOutOfRange { modulus: q });
    }
    if !is_prime(q) {
        return Err(ArithError::NotPrime { modulus: q as u32 });
    }
    let two_n = 2 * n as u64;
    if q % two_n != 1 {
        return Err(ArithError::NotNttFriendly {
            modulus: q as u32,
            two_n,
        });
    }
    Ok(())
}

/// The smallest primitive `2n`-th root of unity modulo the prime `q`.
///
/// `psi` is a primitive `2n`-th root exactly when `psi^n ≡ -1`, because `2n` is a
/// power of two. Taking the smallest one makes the choice canonical, so an
/// independent implementation (see `scripts/gen_kat.py`) finds the same root.
pub fn primitive_root(n: usize, q: u64) -> Result<u32, ArithError> {
    check_ntt_prime(n, q)?;
    let two_n = 2 * n as u64;
    let cofactor = (q - 1) / two_n;
    let mut g = 2;
    let psi = loop {
        let c = pow_mod(g, cofactor, q);
        if pow_mod(c, n as u64, q) == q - 1 {
            break c;
        }
        g += 1;
    };
    // The primitive 2n-th roots are psi^k for odd k; pick the smallest.
    let psi2 = mul_mod(psi, psi, q);
    let mut cur = psi;
    let mut best = psi;
    for _ in 0..n {
        best = best.min(cur);
        cur = mul_mod(cur, psi2, q);
    }
    Ok(best as u32)
}

/// Reverses the low `bits` bits of `x`.
pub fn bit_reverse(x: usize, bits: u32) -> usize {
    if bits == 0 {
        0
    } else {
        x.reverse_bits() >> (usize::BITS - bits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn miller_rabin_matches_trial_division() {
        let naive = |n: u64| {
            n >= 2
                && (2..)
                    .take_while(|d| d * d <= n)
                    .all(|d| !n.is_multiple_of(d))
        };
        for n in 0..20_000u64 {
            assert_eq!(is_prime(n), naive(n), "{n}");
        }
        for n in [
            (1u64 << 30) - 35,
            (1 << 31) - 1,
            4_294_967_291,
            3_215_031_751,
        ] {
            assert_eq!(is_prime(n), naive(n), "{n}");
        }
    }

    #[test]
    fn primes_are_ntt_friendly_and_descending() {
        for n in [1024, 2048, 4096, 8192, 16384] {
            let ps = ntt_primes(30, n, 4).unwrap();
            for w in ps.windows(2) {
                assert!(w[0] > w[1]);
            }
            for &p in &ps {
                assert!(is_prime(p as u64) && p as u64 % (2 * n as u64) == 1 && p < 1 << 30);
                let psi = primitive_root(n, p as u64).unwrap() as u64;
                assert_eq!(pow_mod(psi, n as u64, p as u64), p as u64 - 1);
            }
        }
    }

    #[test]
    fn rejects_bad_inputs() {
        assert!(ntt_primes(31, 4096, 1).is_err());
        assert!(ntt_primes(30, 3000, 1).is_err());
        assert!(ntt_primes(14, 4096, 100).is_err());
        assert!(primitive_root(4096, 12289).is_err()); // 12289 != 1 mod 8192
        assert!(primitive_root(4096, 40961 * 3).is_err());
    }
}
