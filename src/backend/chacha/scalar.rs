//! Portable ChaCha20, one block at a time: the oracle every SIMD kernel is
//! tested against, and the kernel of targets without one.

use super::{BLOCK_WORDS, BUF_WORDS, DOUBLE_ROUNDS, SIGMA};

#[inline(always)]
fn quarter_round(x: &mut [u32; 16], a: usize, b: usize, c: usize, d: usize) {
    x[a] = x[a].wrapping_add(x[b]);
    x[d] = (x[d] ^ x[a]).rotate_left(16);
    x[c] = x[c].wrapping_add(x[d]);
    x[b] = (x[b] ^ x[c]).rotate_left(12);
    x[a] = x[a].wrapping_add(x[b]);
    x[d] = (x[d] ^ x[a]).rotate_left(8);
    x[c] = x[c].wrapping_add(x[d]);
    x[b] = (x[b] ^ x[c]).rotate_left(7);
}

/// One 64-byte block: the input state (constants, key, 64-bit block counter,
/// zero nonce) after 20 rounds, plus the input state.
#[inline]
pub(crate) fn block(key: &[u32; 8], counter: u64, out: &mut [u32; BLOCK_WORDS]) {
    let mut input = [0u32; 16];
    input[..4].copy_from_slice(&SIGMA);
    input[4..12].copy_from_slice(key);
    input[12] = counter as u32;
    input[13] = (counter >> 32) as u32;
    let mut x = input;
    for _ in 0..DOUBLE_ROUNDS {
        quarter_round(&mut x, 0, 4, 8, 12);
        quarter_round(&mut x, 1, 5, 9, 13);
        quarter_round(&mut x, 2, 6, 10, 14);
        quarter_round(&mut x, 3, 7, 11, 15);
        quarter_round(&mut x, 0, 5, 10, 15);
        quarter_round(&mut x, 1, 6, 11, 12);
        quarter_round(&mut x, 2, 7, 8, 13);
        quarter_round(&mut x, 3, 4, 9, 14);
    }
    for (o, (x, i)) in out.iter_mut().zip(x.iter().zip(&input)) {
        *o = x.wrapping_add(*i);
    }
}

/// Blocks `counter .. counter + BUF_BLOCKS` (the counter wraps at 2^64).
pub(crate) fn blocks(key: &[u32; 8], counter: u64, out: &mut [u32; BUF_WORDS]) {
    for (j, chunk) in out.chunks_exact_mut(BLOCK_WORDS).enumerate() {
        let chunk: &mut [u32; BLOCK_WORDS] = chunk.try_into().expect("16-word chunk");
        block(key, counter.wrapping_add(j as u64), chunk);
    }
}
