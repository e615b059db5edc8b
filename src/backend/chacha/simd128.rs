//! wasm simd128 ChaCha20: four blocks per pass, lane `j` of register `i`
//! holding word `i` of block `counter + j`; two passes fill the buffer.
//!
//! Rotations by 16 and 8 are byte shuffles (`i8x16.shuffle`), by 12 and 7
//! two shifts and an OR. A 4x4 transpose per group of four words turns lanes
//! back into blocks.
//!
//! simd128 is enabled for the whole wasm build, so these are safe functions;
//! the only `unsafe` is the unaligned 16-byte store.

use core::arch::wasm32::*;

use super::rounds::{initial_state, rounds_and_feed_forward};
use super::{block_counters, BLOCK_WORDS, BUF_WORDS};

const LANES: usize = 4;

#[inline(always)]
fn rotl16(x: v128) -> v128 {
    i8x16_shuffle::<2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13>(x, x)
}

#[inline(always)]
fn rotl8(x: v128) -> v128 {
    i8x16_shuffle::<3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10, 15, 12, 13, 14>(x, x)
}

#[inline(always)]
fn rotl12(x: v128) -> v128 {
    v128_or(u32x4_shl(x, 12), u32x4_shr(x, 20))
}

#[inline(always)]
fn rotl7(x: v128) -> v128 {
    v128_or(u32x4_shl(x, 7), u32x4_shr(x, 25))
}

/// Rows `r` are words `g..g+4` of four blocks; returns, for each block,
/// its words `g..g+4`.
#[inline(always)]
fn transpose4(r: &[v128]) -> [v128; 4] {
    let t0 = i32x4_shuffle::<0, 4, 1, 5>(r[0], r[1]); // a0 b0 a1 b1
    let t1 = i32x4_shuffle::<2, 6, 3, 7>(r[0], r[1]); // a2 b2 a3 b3
    let t2 = i32x4_shuffle::<0, 4, 1, 5>(r[2], r[3]); // c0 d0 c1 d1
    let t3 = i32x4_shuffle::<2, 6, 3, 7>(r[2], r[3]); // c2 d2 c3 d3
    [
        i64x2_shuffle::<0, 2>(t0, t2),
        i64x2_shuffle::<1, 3>(t0, t2),
        i64x2_shuffle::<0, 2>(t1, t3),
        i64x2_shuffle::<1, 3>(t1, t3),
    ]
}

#[inline(always)]
fn store4(out: &mut [u32], v: v128) {
    assert!(out.len() >= LANES);
    // SAFETY: `out` has at least four writable `u32`s (16 bytes), borrowed
    // exclusively; `v128_store` has no alignment requirement.
    unsafe { v128_store(out.as_mut_ptr().cast(), v) }
}

/// Blocks `counter .. counter + 4` into `out[..64]`.
#[inline]
fn blocks4(key: &[u32; 8], counter: u64, out: &mut [u32]) {
    let (lo, hi) = block_counters::<LANES>(counter);
    let mut x: [v128; 16] = initial_state!(
        u32x4_splat,
        key,
        u32x4(lo[0], lo[1], lo[2], lo[3]),
        u32x4(hi[0], hi[1], hi[2], hi[3]),
        u32x4_splat(0)
    );
    rounds_and_feed_forward!(
        x,
        add = u32x4_add,
        xor = v128_xor,
        rotl = [rotl16, rotl12, rotl8, rotl7]
    );
    for g in 0..BLOCK_WORDS / LANES {
        let rows = transpose4(&x[g * LANES..(g + 1) * LANES]);
        for (j, row) in rows.into_iter().enumerate() {
            store4(&mut out[j * BLOCK_WORDS + g * LANES..], row);
        }
    }
}

/// Blocks `counter .. counter + BUF_BLOCKS`, as `scalar::blocks`.
pub(super) fn blocks(key: &[u32; 8], counter: u64, out: &mut [u32; BUF_WORDS]) {
    for (p, chunk) in out.chunks_exact_mut(LANES * BLOCK_WORDS).enumerate() {
        blocks4(key, counter.wrapping_add((p * LANES) as u64), chunk);
    }
}
