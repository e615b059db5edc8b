//! `Ciphertext::from_bytes` and `from_bytes_untrusted` with the auth4096
//! parameters: no panic, no unbounded allocation, whatever loads re-encodes
//! to the same bytes, and the untrusted path differs only by refusing
//! transparent ciphertexts.
#![no_main]

use blindmatch::bfv::{Ciphertext, ObjectKind};
use blindmatch::error::FormatError;
use blindmatch_fuzz::{drive, params};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    drive(ObjectKind::Ciphertext, data, |bytes| {
        let untrusted = Ciphertext::from_bytes_untrusted(params(), bytes);
        let ct = Ciphertext::from_bytes(params(), bytes)?;
        assert_eq!(ct.to_bytes(), bytes);
        match untrusted {
            Ok(u) => assert!(u == ct && !ct.is_transparent()),
            Err(e) => assert!(e == FormatError::TransparentCiphertext && ct.is_transparent()),
        }
        Ok(())
    });
});
