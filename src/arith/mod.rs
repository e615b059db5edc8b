//! Arithmetic modulo 32-bit NTT-friendly primes.
//!
//! Residues are `u32`. Every modulus is an odd prime `q < 2^30`, so lazy values in
//! `[0, 4q)` still fit in a `u32`; this headroom is what lets the NTT butterflies
//! skip reductions (Harvey's trick).
//!
//! * [`Modulus`]: add, sub, Montgomery multiplication (R = 2^32), Shoup
//!   multiplication by a precomputed constant; all branch-free.
//! * [`primes`]: NTT-friendly prime search and primitive roots of unity.

mod modulus;
pub mod primes;

pub(crate) use modulus::csub;
pub use modulus::{Modulus, ShoupConstant};
pub use primes::{bit_reverse, is_prime, ntt_primes, primitive_root};
