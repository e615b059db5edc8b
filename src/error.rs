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
    /// More ciphertext primes than the RNS kernels accumulate without overflow.
    #[error("{count} ciphertext primes: at most {max} are supported")]
    TooManyPrimes { count: usize, max: usize },
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
    #[error("parameter mismatch: expected parameter id {expected}, got {found}")]
    ParamsMismatch { expected: String, found: String },
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

/// Errors of the wire format (docs/FORMAT.md): every way that untrusted bytes
/// can fail to be a valid object. Decoders return these, never panic.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FormatError {
    /// The input ends before the object does (lengths are checked before any
    /// allocation, so this is also what an oversized length field gives).
    #[error("input is truncated: {expected} bytes needed, {actual} given")]
    Truncated { expected: u64, actual: u64 },
    /// Bytes follow the end of the object.
    #[error("trailing bytes: the object ends at {expected} bytes, {actual} given")]
    TrailingBytes { expected: u64, actual: u64 },
    /// The first four bytes are not the format's magic.
    #[error("bad magic {found:02x?}: not a blindmatch object")]
    BadMagic { found: [u8; 4] },
    /// A format version this build cannot read.
    #[error("format version {found} is not supported (this build reads version {supported})")]
    UnsupportedVersion { found: u16, supported: u16 },
    /// A single object where a list (docs/FORMAT.md, "Lists") is expected.
    #[error("a single blindmatch object where a list (a bundle: the packed ciphertext and its one-hot ciphertexts) is expected")]
    NotAList,
    /// The object kind byte names another kind (or none).
    #[error("object kind {found} where kind {expected} was expected")]
    WrongKind { expected: u8, found: u8 },
    /// Flag bits that this version does not define are set.
    #[error("unknown flag bits {flags:#04x}")]
    UnknownFlags { flags: u8 },
    /// The object was made for other parameters (other n, t or primes).
    #[error("parameter id {found} does not match the parameters' id {expected}")]
    ParamsMismatch { expected: String, found: String },
    /// The seeded flag is set on an object that has no seeded form.
    #[error("the seeded flag is not allowed on a {what}")]
    SeededNotAllowed { what: &'static str },
    /// A ciphertext size other than 2 or 3.
    #[error("ciphertext size {found} is not supported (expected 2 or 3)")]
    CiphertextSize { found: u8 },
    /// A ciphertext limb count outside `1..=L`.
    #[error("limb count {found} is out of range 1..={max}")]
    LimbCount { found: u8, max: usize },
    /// A count field larger than the parameters allow.
    #[error("{what}: count {count} exceeds the maximum {max}")]
    CountOutOfRange {
        what: &'static str,
        count: u64,
        max: u64,
    },
    /// An RNS residue that is not below its prime.
    #[error("residue {value} at limb {limb}, index {index} is not below its prime {modulus}")]
    ResidueOutOfRange {
        limb: usize,
        index: usize,
        value: u32,
        modulus: u32,
    },
    /// A compact score reply whose dimension or score count does not fit
    /// the parameters.
    #[error("score reply for dimension {dim} with {count} scores does not fit the parameters")]
    ReplyShape { dim: u16, count: u16 },
    /// A plaintext coefficient that is not below t.
    #[error("plaintext coefficient {value} at index {index} is not below t = {t}")]
    CoefficientOutOfRange { index: usize, value: u32, t: u32 },
    /// A secret-key coefficient with the unused 2-bit code `0b10`.
    #[error("secret key coefficient {index} has the invalid code 0b10")]
    InvalidSecretCoefficient { index: usize },
    /// A Galois element that is even, 1, not below 2n, or out of order.
    #[error("Galois element {element} at position {index}: {reason}")]
    GaloisElement {
        index: usize,
        element: u32,
        reason: &'static str,
    },
    /// A ciphertext whose polynomials past `c0` are all zero, refused on the
    /// untrusted (server) path: anyone can read it.
    #[error("transparent ciphertext (every polynomial past c0 is zero) refused")]
    TransparentCiphertext,
}

/// Errors of the matching layer (embeddings, packing, verify, identify).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum MatchError {
    /// The embedding dimension is not one the packing supports.
    #[error("embedding dimension {dim} is not supported (use 64, 128, 256 or 512)")]
    UnsupportedDimension { dim: usize },
    /// An embedding has the wrong length.
    #[error("embedding has {actual} components; expected {expected}")]
    WrongLength { expected: usize, actual: usize },
    /// An embedding component is NaN or infinite.
    #[error("embedding component {index} is not a finite number")]
    NotFinite { index: usize },
    /// The embedding is zero (or too close to it to normalize).
    #[error("embedding is the zero vector and cannot be normalized")]
    ZeroVector,
    /// A quantized vector's norm would let an inner product wrap mod t.
    #[error("quantized squared norm {norm2} exceeds {max}: inner products could wrap modulo t")]
    NormTooLarge { norm2: i64, max: i64 },
    /// A quantized component outside the quantizer's levels.
    #[error("quantized component {index} is {value}, outside the quantizer's levels")]
    OutOfRange { index: usize, value: i32 },
    /// Not one one-hot ciphertext per sample and ciphertext of the layout.
    #[error("expected {expected} one-hot ciphertexts, got {found}")]
    OneHotCount { expected: usize, found: usize },
    /// More templates than fit in one ciphertext.
    #[error("{actual} templates do not fit in one ciphertext (at most {max})")]
    TooManyTemplates { max: usize, actual: usize },
    /// No templates were given.
    #[error("at least one template is needed")]
    NoTemplates,
    /// A ciphertext whose uniform part is zero (anyone could read it).
    #[error("transparent ciphertext refused")]
    TransparentCiphertext,
    /// A gallery has no template at this index (never added, or erased).
    #[error("the gallery has no template {index}")]
    UnknownTemplate { index: usize },
    /// A gallery of another embedding dimension than the identifier's.
    #[error("the gallery holds templates of dimension {found}, not {expected}")]
    GalleryDimension { expected: usize, found: usize },
    /// An encrypted probe against a gallery kept for plaintext probes only.
    #[error(
        "this gallery keeps its ciphertexts switched down for plaintext probes; an encrypted probe needs a gallery made with Gallery::for_encrypted_probes"
    )]
    GalleryLevel,
    /// Score ciphertexts that are not one per gallery ciphertext.
    #[error("expected {expected} score ciphertexts (one per gallery ciphertext), got {found}")]
    ScoreCiphertexts { expected: usize, found: usize },
    /// An erasure computed before another change to the same ciphertext.
    #[error(
        "the gallery changed since the erasure of template {index} was computed; compute it again"
    )]
    StaleErasure { index: usize },
    /// Only a relinearized (size-2) reply has a compact form.
    #[error(
        "a reply of size {size} has no compact form: relinearize it (upload a relinearization key)"
    )]
    ReplyNotRelinearized { size: usize },
    /// A compact reply made for another embedding dimension.
    #[error("the reply is for embeddings of dimension {found}, not {expected}")]
    ReplyDimension { expected: usize, found: usize },
    /// An error of the BFV layer.
    #[error(transparent)]
    Bfv(#[from] BfvError),
    /// Bytes that are not a valid reply.
    #[error(transparent)]
    Format(#[from] FormatError),
}
