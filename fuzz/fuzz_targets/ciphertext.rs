//! `Ciphertext::from_bytes` and `from_bytes_untrusted` with the auth4096
//! parameters: no panic, no unbounded allocation, whatever loads re-encodes
//! to the same bytes, and the untrusted path differs only by refusing
//! transparent ciphertexts.
#![no_main]

use blindmatch::bfv::Ciphertext;
use blindmatch::error::FormatError;
use blindmatch_fuzz::{params, round_trip};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    round_trip::<Ciphertext>(data, |bytes, ct| {
        match Ciphertext::from_bytes_untrusted(params(), bytes) {
            Ok(u) => assert!(u == *ct && !ct.is_transparent()),
            Err(e) => assert!(e == FormatError::TransparentCiphertext && ct.is_transparent()),
        }
    });
});
