//! `ScoreReply::from_bytes` with the auth4096 parameters: no panic, no
//! unbounded allocation, and whatever loads re-encodes to the same bytes.
#![no_main]

use blindmatch::bfv::ObjectKind;
use blindmatch::matching::ScoreReply;
use blindmatch_fuzz::{drive, params};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    drive(ObjectKind::ScoreReply, data, |bytes| {
        let x = ScoreReply::from_bytes(params(), bytes)?;
        assert_eq!(x.to_bytes(), bytes);
        Ok(())
    });
});
