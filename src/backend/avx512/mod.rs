//! AVX-512 kernels: sixteen 32-bit residues per `__m512i`.
//!
//! The arithmetic is the scalar backend's (Harvey lazy butterflies with Shoup
//! twiddles, same lazy ranges), so every result is the unique reduced value
//! and matches scalar bit for bit. The pass structure is the AVX2 backend's,
//! twice as wide:
//!
//! * Stages whose butterfly gap is at least 16 pair whole registers with one
//!   broadcast twiddle, two stages per pass over memory (radix-4); when their
//!   number is odd, the first stage runs alone.
//! * The last four stages (gaps 8, 4, 2, 1) work inside 16-coefficient rows.
//!   A 16x16 transpose of a 256-coefficient block puts its sixteen rows in the
//!   sixteen lanes, so these stages pair whole registers too, with per-lane
//!   twiddles that [`Tables`] lays out in advance. The final reduction happens
//!   before transposing back. Sixteen data registers fit in the 32 that
//!   AVX-512 has, with room for the twiddles.
//!
//! What AVX-512 changes in the arithmetic: `_mm512_mul_epu32` still multiplies
//! only the even lanes, but a masked in-lane shuffle merges the even lanes'
//! high halves into the odd lanes' products in one instruction (AVX2 needs a
//! shift and a blend).
//!
//! Measured on the development machine (AMD Zen 5, n = 4096) against the
//! layout above: radix-8 passes for the stages with gap >= 16 were slower
//! (about 1.4x the forward transform's time), and lane tables holding the odd
//! lanes' Shoup companions pre-shifted (a third vector per twiddle instead of
//! one shift) were no faster, so the smaller tables stay. IFMA (`vpmadd52*`) is not used: it works on eight 64-bit lanes, so
//! a 30-bit Shoup product would cost three IFMA per eight residues plus
//! widening, against four 32-bit multiplies per sixteen here.
//!
//! Only AVX-512F instructions are used. As in `avx2`, helpers are
//! `#[inline(always)] unsafe fn` without `#[target_feature]`, called only
//! from the `#[target_feature(enable = "avx512f")]` kernels, into which they
//! are inlined. The helpers on lanes are in `lanes.rs`, the transforms in
//! `transforms.rs`, the coefficient-wise kernels in `pointwise.rs` and the
//! 1:N dot products in `dot.rs`.

#[macro_use]
mod lanes;
mod dot;
mod pointwise;
mod transforms;

pub(crate) use dot::{dot2, dot2_blocks};
pub(crate) use pointwise::{
    floor_frac_sum, lincomb, mul, mul_acc, mul_mont_streaming, mul_sum, round_to_t_small,
    round_weighted_sum,
};
pub(crate) use transforms::{forward, inverse, inverse_from};

use crate::backend::tables::NttTables;

/// Lanes per register.
const W: usize = 16;

/// Smallest `n` these kernels handle: one 256-coefficient block (sixteen rows
/// of sixteen) for the transposed stages. Smaller plans (none exist today)
/// use the scalar kernels.
const MIN_N: usize = W * W;

/// One register's worth of values, aligned so that table loads never split
/// a cache line.
#[repr(C, align(64))]
#[derive(Clone, Copy)]
struct Lanes([u32; W]);

/// Per-plan tables in the layout these kernels read.
///
/// For each 256-coefficient block, the twiddles of the four stages that run
/// across lanes (gaps 8, 4, 2, 1): lane `r` holds the twiddle of row `r` of
/// the block. A stage with gap `g` has `8 / g` twiddles per row, hence
/// 1 + 2 + 4 + 8 vectors per block, each followed by its Shoup companion.
/// `fwd_lanes` is in forward order (gap 8 first), `inv_lanes` in inverse order
/// (gap 1 first), so each kernel reads its table front to back.
#[derive(Default)]
pub(crate) struct Tables {
    fwd_lanes: Vec<Lanes>,
    inv_lanes: Vec<Lanes>,
}

/// Vectors (values and Shoup companions) per block in each lane table.
const LANE_VECTORS: usize = 2 * (1 + 2 + 4 + 8);

impl Tables {
    pub(crate) fn new(t: &NttTables) -> Self {
        if t.n < MIN_N {
            return Self::default();
        }
        let layout = |w: &[u32], w_shoup: &[u32], gaps: [usize; 4]| {
            let mut out = Vec::with_capacity(t.n / MIN_N * LANE_VECTORS);
            for block in 0..t.n / MIN_N {
                for gap in gaps {
                    // The stage with this gap has n / (2 gap) groups, starting
                    // at table index n / (2 gap); each 16-coefficient row
                    // holds 8 / gap of them.
                    let first = t.n / (2 * gap);
                    let per_row = W / (2 * gap);
                    for h in 0..per_row {
                        let at = |r: usize| first + (W * block + r) * per_row + h;
                        out.push(Lanes(std::array::from_fn(|r| w[at(r)])));
                        out.push(Lanes(std::array::from_fn(|r| w_shoup[at(r)])));
                    }
                }
            }
            out
        };
        Self {
            fwd_lanes: layout(&t.fwd, &t.fwd_shoup, [8, 4, 2, 1]),
            inv_lanes: layout(&t.inv, &t.inv_shoup, [1, 2, 4, 8]),
        }
    }
}
