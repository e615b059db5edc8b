//! What the decider reads of a template's or a probe's check replies:
//! `split` then `CheckReplies::from_items`, for 1 to 4 samples of 1 to 3
//! one-hot ciphertexts each, on raw input and on lists built from valid
//! ciphertexts and score replies (`blindmatch_fuzz::lists`): no panic, and
//! whatever loads re-encodes to the same bytes.
#![no_main]

use blindmatch::matching::wellformed::{frame, split, CheckReplies};
use blindmatch_fuzz::lists::list_inputs;
use blindmatch_fuzz::params;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&shape, data)) = data.split_first() else {
        return;
    };
    let (samples, per) = (1 + (shape & 3) as usize, 1 + (shape >> 2) as usize % 3);
    for bytes in list_inputs(data) {
        let Ok(items) = split(&bytes) else {
            continue;
        };
        assert_eq!(frame(items.iter().copied()), bytes);
        if let Ok(c) = CheckReplies::from_items(params(), &items, samples, per) {
            let again = c.items();
            assert_eq!(frame(again.iter().map(|i| i.as_slice())), bytes);
        }
    }
});
