//! `PublicKey::from_bytes` with the auth4096 parameters: no panic, no unbounded
//! allocation, and whatever loads re-encodes to the same bytes.
#![no_main]

use blindmatch::bfv::{ObjectKind, PublicKey};
use blindmatch_fuzz::{drive, params};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    drive(ObjectKind::PublicKey, data, |bytes| {
        let x = PublicKey::from_bytes(params(), bytes)?;
        assert_eq!(x.to_bytes(), bytes);
        Ok(())
    });
});
