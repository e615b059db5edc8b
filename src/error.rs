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

/// Errors of BFV parameter validation.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ParamsError {
    /// A required parameter was not given to the builder.
    #[error("missing parameter: {what}")]
    Missing { what: &'static str },
    /// A degree or prime failed the arithmetic checks.
    #[error(transparent)]
    Arith(#[from] ArithError),
    /// The plaintext modulus is unusable.
    #[error("plaintext modulus {t}: {reason}")]
    PlaintextModulus { t: u64, reason: &'static str },
    /// The same prime appears twice (or equals t).
    #[error("prime {prime} appears more than once among the moduli")]
    DuplicatePrime { prime: u32 },
    /// log2(Q·P) exceeds the 128-bit security bound for this degree.
    #[error(
        "log2(Q·P) = {bits} bits exceeds the 128-bit security bound of {max_bits} bits for n = {n}"
    )]
    Insecure { n: usize, bits: u32, max_bits: u32 },
}

/// Errors of the BFV layer (keys, encryption, evaluation, encoding).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum BfvError {
    /// The system random number generator failed; nothing was produced.
    #[error("system random number generator failed: {reason}")]
    Rng { reason: String },
    /// Two objects were made for different parameters.
    #[error("parameter mismatch: expected parameter id {expected}, got {actual}")]
    ParamsMismatch { expected: String, actual: String },
    /// Wrong number of values for an encoder.
    #[error("{what}: expected at most {max} values, got {actual}")]
    TooManyValues {
        what: &'static str,
        max: usize,
        actual: usize,
    },
    /// A plaintext value is not below the plaintext modulus.
    #[error("value {value} at index {index} is not below the plaintext modulus {t}")]
    ValueOutOfRange { index: usize, value: i64, t: u32 },
    /// Slot batching needs t prime and t = 1 mod 2n.
    #[error("slot batching is not available with these parameters")]
    BatchingUnavailable,
    /// Ciphertexts of this size are not supported by the operation.
    #[error("{op}: ciphertext of size {size} is not supported (expected {expected})")]
    CiphertextSize {
        op: &'static str,
        size: usize,
        expected: &'static str,
    },
    /// Ciphertext limb counts (levels) do not match.
    #[error("{op}: ciphertexts have {a} and {b} primes")]
    LevelMismatch {
        op: &'static str,
        a: usize,
        b: usize,
    },
    /// No Galois key for the automorphism that the operation needs.
    #[error("no Galois key for element {element}: generate keys for this rotation")]
    MissingGaloisKey { element: u32 },
    /// The noise diagnostic is not available for a modulus this large.
    #[error("noise budget is only available for Q below 2^127")]
    NoiseUnavailable,
}
