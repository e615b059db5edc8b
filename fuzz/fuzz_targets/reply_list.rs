//! The decider's reading of an identification's score reply list
//! (`server::decider::replies::from_bytes`) with the auth4096 parameters at
//! d = 128, on raw input and on lists built from valid score replies and
//! ciphertexts (`blindmatch_fuzz::lists`): no panic, no unbounded
//! allocation, every reply of the decider's dimension, and whatever loads
//! re-encodes to the same bytes.
#![no_main]

use blindmatch::server::decider::replies;
use blindmatch_fuzz::lists::{items, reply_list, Recipe, DIM};
use blindmatch_fuzz::params;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut r = Recipe::new(data);
    let (count, list) = items(&mut r);
    let list: Vec<_> = list
        .into_iter()
        .map(|i| (r.u64().to_le_bytes(), i))
        .collect();
    let trailing = if r.byte() & 1 == 1 { r.rest() } else { &[] };
    for bytes in [reply_list(count, &list, trailing), data.to_vec()] {
        if let Ok(replies) = replies::from_bytes(params(), DIM, &bytes) {
            assert_eq!(replies::to_bytes(&replies), bytes);
            assert!(replies.iter().all(|c| c.reply.dim() == DIM));
        }
    }
});
