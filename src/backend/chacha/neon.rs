//! NEON ChaCha20: four blocks per pass, lane `j` of register `i` holding
//! word `i` of block `counter + j`; two passes fill the buffer.
//!
//! The rotation by 16 is `vrev32q_u16` (swap the halves of each word); the
//! others are a shift left and a shift-right-insert (`vsriq_n_u32`). A 4x4
//! transpose per group of four words turns lanes back into blocks.

use core::arch::aarch64::*;

use super::rounds::{initial_state, rounds_and_feed_forward};
use super::{block_counters, BLOCK_WORDS, BUF_WORDS};

const LANES: usize = 4;

#[inline]
#[target_feature(enable = "neon")]
fn rotl16(x: uint32x4_t) -> uint32x4_t {
    vreinterpretq_u32_u16(vrev32q_u16(vreinterpretq_u16_u32(x)))
}

#[inline]
#[target_feature(enable = "neon")]
fn rotl12(x: uint32x4_t) -> uint32x4_t {
    vsriq_n_u32::<20>(vshlq_n_u32::<12>(x), x)
}

#[inline]
#[target_feature(enable = "neon")]
fn rotl8(x: uint32x4_t) -> uint32x4_t {
    vsriq_n_u32::<24>(vshlq_n_u32::<8>(x), x)
}

#[inline]
#[target_feature(enable = "neon")]
fn rotl7(x: uint32x4_t) -> uint32x4_t {
    vsriq_n_u32::<25>(vshlq_n_u32::<7>(x), x)
}

/// Rows `r` are words `g..g+4` of four blocks; returns, for each block,
/// its words `g..g+4`.
#[inline]
#[target_feature(enable = "neon")]
fn transpose4(r: &[uint32x4_t]) -> [uint32x4_t; 4] {
    let t01 = vtrnq_u32(r[0], r[1]); // [a0 b0 a2 b2], [a1 b1 a3 b3]
    let t23 = vtrnq_u32(r[2], r[3]); // [c0 d0 c2 d2], [c1 d1 c3 d3]
    [
        vcombine_u32(vget_low_u32(t01.0), vget_low_u32(t23.0)),
        vcombine_u32(vget_low_u32(t01.1), vget_low_u32(t23.1)),
        vcombine_u32(vget_high_u32(t01.0), vget_high_u32(t23.0)),
        vcombine_u32(vget_high_u32(t01.1), vget_high_u32(t23.1)),
    ]
}

#[inline]
#[target_feature(enable = "neon")]
fn store4(out: &mut [u32], v: uint32x4_t) {
    assert!(out.len() >= LANES);
    // SAFETY: `out` has at least four writable `u32`s, borrowed exclusively;
    // `vst1q_u32` needs no alignment beyond that of `u32`.
    unsafe { vst1q_u32(out.as_mut_ptr(), v) }
}

/// Blocks `counter .. counter + 4` into `out[..64]`.
#[inline]
#[target_feature(enable = "neon")]
fn blocks4(key: &[u32; 8], counter: u64, out: &mut [u32]) {
    let (lo, hi) = block_counters::<LANES>(counter);
    // SAFETY: `lo` and `hi` are four readable `u32`s each.
    let (lo, hi) = unsafe { (vld1q_u32(lo.as_ptr()), vld1q_u32(hi.as_ptr())) };
    let mut x: [uint32x4_t; 16] = initial_state!(vdupq_n_u32, key, lo, hi, vdupq_n_u32(0));
    rounds_and_feed_forward!(
        x,
        add = vaddq_u32,
        xor = veorq_u32,
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
#[target_feature(enable = "neon")]
pub(super) fn blocks(key: &[u32; 8], counter: u64, out: &mut [u32; BUF_WORDS]) {
    for (p, chunk) in out.chunks_exact_mut(LANES * BLOCK_WORDS).enumerate() {
        blocks4(key, counter.wrapping_add((p * LANES) as u64), chunk);
    }
}
