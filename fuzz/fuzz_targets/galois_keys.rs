//! `GaloisKeys::from_bytes` with the auth4096 parameters: no panic, no unbounded
//! allocation, and whatever loads re-encodes to the same bytes.
#![no_main]

use blindmatch::bfv::GaloisKeys;
use blindmatch_fuzz::round_trip;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| round_trip::<GaloisKeys>(data, |_, _| {}));
