//! Portable ChaCha20, one block at a time: the oracle every SIMD kernel is
//! tested against, and the kernel of targets without one.

use super::rounds::{initial_state, rounds_and_feed_forward};
use super::{BLOCK_WORDS, BUF_WORDS};

/// One 64-byte block: the input state (constants, key, 64-bit block counter,
/// zero nonce) after 20 rounds, plus the input state.
#[inline]
pub(crate) fn block(key: &[u32; 8], counter: u64, out: &mut [u32; BLOCK_WORDS]) {
    let mut x: [u32; 16] =
        initial_state!(|w: u32| w, key, counter as u32, (counter >> 32) as u32, 0);
    rounds_and_feed_forward!(
        x,
        add = u32::wrapping_add,
        xor = |a: u32, b: u32| a ^ b,
        rotl = [
            |v: u32| v.rotate_left(16),
            |v: u32| v.rotate_left(12),
            |v: u32| v.rotate_left(8),
            |v: u32| v.rotate_left(7)
        ]
    );
    *out = x;
}

/// Blocks `counter .. counter + BUF_BLOCKS` (the counter wraps at 2^64).
pub(crate) fn blocks(key: &[u32; 8], counter: u64, out: &mut [u32; BUF_WORDS]) {
    for (j, chunk) in out.chunks_exact_mut(BLOCK_WORDS).enumerate() {
        let chunk: &mut [u32; BLOCK_WORDS] = chunk.try_into().expect("16-word chunk");
        block(key, counter.wrapping_add(j as u64), chunk);
    }
}
