//! Typed errors, one enum per layer. Variants carry the numbers that were wrong.

use thiserror::Error;

/// Errors of the arithmetic layer: moduli, prime search, roots of unity, NTT plans.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ArithError {
    /// The ring degree is not a power of two in the supported range.
    #[error("ring degree {degree} is not a power of two in {minimum}..={maximum}")]
    InvalidDegree {
        degree: usize,
        minimum: usize,
        maximum: usize,
    },
    /// The modulus does not fit the 32-bit kernels (q must be odd, at least 3 and below 2^30).
    #[error("modulus {modulus} is out of range: it must be odd and in 3..2^30")]
    ModulusOutOfRange { modulus: u64 },
    /// The modulus is not prime.
    #[error("modulus {modulus} is not prime")]
    NotPrime { modulus: u32 },
    /// The modulus is prime but q != 1 (mod 2N), so no negacyclic NTT of that size exists.
    #[error("modulus {modulus} is not 1 mod 2N = {two_n}: no negacyclic NTT of degree {}", two_n / 2)]
    NotNttFriendly { modulus: u32, two_n: u64 },
    /// Fewer NTT-friendly primes of the requested size exist than were asked for.
    #[error("only {found} primes below 2^{bits} are 1 mod {two_n}; {requested} were requested")]
    NotEnoughPrimes {
        bits: u32,
        two_n: u64,
        requested: usize,
        found: usize,
    },
    /// Requested prime size outside what the 32-bit kernels support.
    #[error("prime size {bits} bits is out of range 2..=30")]
    PrimeBitsOutOfRange { bits: u32 },
    /// A vector passed to a plan does not have the plan's length.
    #[error("length mismatch: expected {expected} residues, got {actual}")]
    LengthMismatch { expected: usize, actual: usize },
}
