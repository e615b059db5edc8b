//! `Bundle::from_bytes_untrusted` (what a page uploads in login mode) with
//! the auth4096 parameters, on raw input and on lists built from valid
//! ciphertexts and score replies (`blindmatch_fuzz::lists`): no panic, no
//! unbounded allocation, and whatever loads re-encodes to the same bytes
//! with no transparent ciphertext in it.
#![no_main]

use blindmatch::matching::wellformed::Bundle;
use blindmatch_fuzz::lists::list_inputs;
use blindmatch_fuzz::params;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for bytes in list_inputs(data) {
        if let Ok(b) = Bundle::from_bytes_untrusted(params(), &bytes) {
            assert_eq!(b.to_bytes(), bytes);
            assert!(!b.one_hot.is_empty());
            assert!(!b.packed.is_transparent());
            assert!(b.one_hot.iter().all(|c| !c.is_transparent()));
        }
    }
});
