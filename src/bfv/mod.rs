//! The BFV scheme over the 32-bit RNS NTT core.
//!
//! Keys and ciphertexts are kept in the NTT domain; the uniform part of a
//! secret-key ciphertext is expanded from a 32-byte seed.

mod ciphertext;
mod encoding;
mod encrypt;
mod eval;
mod galois;
mod keys;
mod keyswitch;
mod mul;
mod mul_direct;
pub mod params;
mod plaintext;
pub mod poly;
mod rng;
pub mod sample;
mod scaling;
mod scaling_pow2;
pub(crate) mod serialize;

pub use ciphertext::Ciphertext;
pub(crate) use encoding::centred;
pub use encoding::{BatchEncoder, CoefficientEncoder};
pub(crate) use encrypt::{flood, scaled_message, PkEncryptionParts};
pub use eval::{Evaluator, PlaintextNtt, PreparedCiphertext};
pub use galois::{
    column_swap_element, row_rotation_element, GaloisKeys, RelinKey, MAX_GALOIS_KEYS,
};
pub use keys::{PublicKey, SecretKey};
pub use params::{Params, ParamsBuilder};
pub use plaintext::Plaintext;
pub use rng::{os_seed, Prng};
pub(crate) use scaling::round_residue_rows_to_t;
pub(crate) use scaling_pow2::ToPowerOfTwo;
pub use serialize::{ObjectKind, FORMAT_MAGIC, FORMAT_VERSION, HEADER_LEN};
