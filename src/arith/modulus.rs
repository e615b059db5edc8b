//! A 32-bit prime modulus with Montgomery and Shoup precomputation.

use crate::error::ArithError;

/// Largest supported modulus (exclusive): `4q` must fit in a `u32`.
pub const MODULUS_LIMIT: u64 = 1 << 30;

/// An odd modulus `q < 2^30` with its precomputed constants.
///
/// All operations are branch-free: conditional subtractions use masks, never
/// `if` on the value, so timing does not depend on secret residues.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Modulus {
    q: u32,
    /// `-q^{-1} mod 2^32`, for Montgomery reduction.
    q_neg_inv: u32,
    /// `2^32 mod q` (R).
    r: u32,
    /// `2^64 mod q` (R^2), to enter the Montgomery domain.
    r2: u32,
    /// `floor(2^64 / q)`, for Barrett reduction of 64-bit values.
    barrett: u64,
}

/// A constant `w < q` with its Shoup companion `floor(w * 2^32 / q)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShoupConstant {
    pub value: u32,
    pub shoup: u32,
}

/// Returns `x - m` if `x >= m`, else `x`, without branching. Needs `x < m + 2^31`
/// and `m <= 2^31` so the borrow shows in the top bit.
#[inline(always)]
pub(crate) fn csub(x: u32, m: u32) -> u32 {
    let y = x.wrapping_sub(m);
    let mask = 0u32.wrapping_sub(y >> 31);
    y.wrapping_add(m & mask)
}

impl Modulus {
    /// Creates a modulus. `q` must be odd and in `3..2^30` (primality is checked by
    /// the NTT plan, which is where it matters).
    pub fn new(q: u64) -> Result<Self, ArithError> {
        if !(3..MODULUS_LIMIT).contains(&q) || q.is_multiple_of(2) {
            return Err(ArithError::ModulusOutOfRange { modulus: q });
        }
        let q = q as u32;
        // Newton iteration for q^{-1} mod 2^32: each step doubles the correct bits.
        let mut inv: u32 = q; // correct to 3 bits for odd q
        for _ in 0..5 {
            inv = inv.wrapping_mul(2u32.wrapping_sub(q.wrapping_mul(inv)));
        }
        debug_assert_eq!(q.wrapping_mul(inv), 1);
        let r = ((1u64 << 32) % q as u64) as u32;
        let r2 = ((r as u64 * r as u64) % q as u64) as u32;
        Ok(Self {
            q,
            q_neg_inv: inv.wrapping_neg(),
            r,
            r2,
            barrett: (u64::MAX / q as u64),
        })
    }

    /// The modulus `q`.
    #[inline(always)]
    pub const fn value(&self) -> u32 {
        self.q
    }

    /// `-q^{-1} mod 2^32`.
    #[inline(always)]
    pub const fn q_neg_inv(&self) -> u32 {
        self.q_neg_inv
    }

    /// `2^32 mod q`.
    #[inline(always)]
    pub const fn r(&self) -> u32 {
        self.r
    }

    /// `2^64 mod q`.
    #[inline(always)]
    pub const fn r2(&self) -> u32 {
        self.r2
    }

    /// `(a + b) mod q` for `a, b < q`.
    #[inline(always)]
    pub fn add(&self, a: u32, b: u32) -> u32 {
        csub(a + b, self.q)
    }

    /// `(a - b) mod q` for `a, b < q`.
    #[inline(always)]
    pub fn sub(&self, a: u32, b: u32) -> u32 {
        csub(a + self.q - b, self.q)
    }

    /// `-a mod q` for `a < q`.
    #[inline(always)]
    pub fn neg(&self, a: u32) -> u32 {
        csub(self.q - a, self.q)
    }

    /// Reduces `a < 2q` to `[0, q)`.
    #[inline(always)]
    pub fn reduce_2q(&self, a: u32) -> u32 {
        csub(a, self.q)
    }

    /// Reduces `a < 4q` to `[0, q)`.
    #[inline(always)]
    pub fn reduce_4q(&self, a: u32) -> u32 {
        csub(csub(a, 2 * self.q), self.q)
    }

    /// Reduces any `u32` to `[0, q)` (constant-time: Montgomery round trip).
    #[inline(always)]
    pub fn reduce_u32(&self, a: u32) -> u32 {
        self.mont_mul(self.mont_mul(a, self.r2), 1)
    }

    /// Reduces any `u64` to `[0, q)` (Barrett; branch-free).
    #[inline(always)]
    pub fn reduce_u64(&self, x: u64) -> u32 {
        let est = ((x as u128 * self.barrett as u128) >> 64) as u64;
        // x - est·q is in [0, 2q) because est undershoots by at most one.
        csub(
            x.wrapping_sub(est.wrapping_mul(self.q as u64)) as u32,
            self.q,
        )
    }

    /// Lazy Montgomery product: `a * b * 2^-32 mod q`, in `[0, 2q)`, for any
    /// `a, b` with `a * b < q * 2^32` (for example `a < 4q`, `b < q`, or `a, b < 2q`).
    #[inline(always)]
    pub fn mont_mul_lazy(&self, a: u32, b: u32) -> u32 {
        let t = a as u64 * b as u64;
        let m = (t as u32).wrapping_mul(self.q_neg_inv);
        ((t + m as u64 * self.q as u64) >> 32) as u32
    }

    /// Montgomery product reduced to `[0, q)`.
    #[inline(always)]
    pub fn mont_mul(&self, a: u32, b: u32) -> u32 {
        csub(self.mont_mul_lazy(a, b), self.q)
    }

    /// `a * 2^32 mod q` for `a < q`: enters the Montgomery domain.
    #[inline(always)]
    pub fn to_montgomery(&self, a: u32) -> u32 {
        self.mont_mul(a, self.r2)
    }

    /// `a * 2^-32 mod q`: leaves the Montgomery domain.
    #[inline(always)]
    pub fn from_montgomery(&self, a: u32) -> u32 {
        self.mont_mul(a, 1)
    }

    /// `a * b mod q` for `a, b < q`, both in standard form.
    #[inline(always)]
    pub fn mul(&self, a: u32, b: u32) -> u32 {
        // (a*b*R^-1) * R^2 * R^-1 = a*b.
        self.mont_mul(self.mont_mul_lazy(a, b), self.r2)
    }

    /// `base^exp mod q`. Branches on the public exponent only.
    pub fn pow(&self, base: u32, mut exp: u64) -> u32 {
        let mut acc = self.to_montgomery(1);
        let mut b = self.to_montgomery(base % self.q);
        while exp > 0 {
            if exp & 1 == 1 {
                acc = self.mont_mul(acc, b);
            }
            b = self.mont_mul(b, b);
            exp >>= 1;
        }
        self.from_montgomery(acc)
    }

    /// Multiplicative inverse of a nonzero `a` modulo a prime `q` (Fermat).
    pub fn inv(&self, a: u32) -> u32 {
        self.pow(a, self.q as u64 - 2)
    }

    /// Precomputes the Shoup companion of `w < q`.
    pub fn shoup(&self, w: u32) -> ShoupConstant {
        debug_assert!(w < self.q);
        ShoupConstant {
            value: w,
            shoup: (((w as u64) << 32) / self.q as u64) as u32,
        }
    }

    /// Lazy Shoup product `a * w mod q` in `[0, 2q)`, for any `a < 2^32`.
    #[inline(always)]
    pub fn mul_shoup_lazy(&self, a: u32, w: ShoupConstant) -> u32 {
        let est = ((a as u64 * w.shoup as u64) >> 32) as u32;
        a.wrapping_mul(w.value)
            .wrapping_sub(est.wrapping_mul(self.q))
    }

    /// Shoup product `a * w mod q` in `[0, q)`, for any `a < 2^32`.
    #[inline(always)]
    pub fn mul_shoup(&self, a: u32, w: ShoupConstant) -> u32 {
        csub(self.mul_shoup_lazy(a, w), self.q)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const QS: [u64; 5] = [3, 12289, 65537, 536_813_569, (1 << 30) - 35];

    fn lcg(state: &mut u64) -> u32 {
        *state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (*state >> 32) as u32
    }

    #[test]
    fn rejects_bad_moduli() {
        for q in [0u64, 1, 2, 4, 1 << 30, (1 << 30) + 1, u64::MAX] {
            assert!(Modulus::new(q).is_err(), "{q}");
        }
    }

    #[test]
    fn ops_match_naive() {
        let mut s = 7;
        for &q in &QS {
            let m = Modulus::new(q).unwrap();
            let edge = [0, 1, q as u32 - 1, q as u32 / 2];
            for i in 0..2000 {
                let (a, b) = if i < 16 {
                    (edge[i % 4], edge[i / 4])
                } else {
                    (lcg(&mut s) % q as u32, lcg(&mut s) % q as u32)
                };
                let (a64, b64) = (a as u64, b as u64);
                assert_eq!(m.add(a, b) as u64, (a64 + b64) % q);
                assert_eq!(m.sub(a, b) as u64, (a64 + q - b64) % q);
                assert_eq!(m.neg(a) as u64, (q - a64) % q);
                assert_eq!(m.mul(a, b) as u64, a64 * b64 % q);
                assert_eq!(m.from_montgomery(m.to_montgomery(a)), a);
                let w = m.shoup(b);
                assert_eq!(m.mul_shoup(a, w) as u64, a64 * b64 % q);
                // Shoup accepts any u32 input.
                let big = lcg(&mut s);
                let lazy = m.mul_shoup_lazy(big, w);
                assert!(lazy < 2 * q as u32);
                assert_eq!(lazy as u64 % q, big as u64 * b64 % q);
                // Lazy Montgomery accepts a < 4q, b < q.
                let a4 = lcg(&mut s) % (4 * q as u32);
                let lm = m.mont_mul_lazy(a4, b);
                assert!(lm < 2 * q as u32);
                assert_eq!(
                    (lm as u128 * (1u128 << 32)) % q as u128,
                    (a4 as u128 * b as u128) % q as u128
                );
                assert_eq!(m.reduce_4q(a4) as u64, a4 as u64 % q);
                assert_eq!(m.reduce_u32(big) as u64, big as u64 % q);
                let wide = (lcg(&mut s) as u64) << 32 | lcg(&mut s) as u64;
                for x in [wide, u64::MAX, 0, q - 1, q, q * q - 1] {
                    assert_eq!(m.reduce_u64(x) as u64, x % q, "reduce_u64({x}) mod {q}");
                }
            }
        }
    }
}
