//! AVX2 kernels: eight 32-bit residues per `__m256i`.
//!
//! The arithmetic is the scalar backend's (Harvey lazy butterflies with Shoup
//! twiddles, same lazy ranges), so every result is the unique reduced value
//! and matches scalar bit for bit. What changes is the order of memory passes:
//!
//! * Stages whose butterfly gap is at least 8 pair whole registers with one
//!   broadcast twiddle. They run two at a time (radix-4: four registers are
//!   loaded, go through two stages and are stored once); when their number is
//!   odd, the first stage runs alone.
//! * The last three stages (gaps 4, 2, 1) work inside 8-coefficient rows. An
//!   8x8 transpose of a 64-coefficient block puts its eight rows in the eight
//!   lanes, so these stages pair whole registers too, with per-lane twiddles
//!   that [`Tables`] lays out in advance. The final reduction happens before
//!   transposing back.
//!
//! The inverse runs the same passes in the opposite order; its last pass
//! folds in the scaling by `n^-1` as scalar does.
//!
//! Measured on the development machine (AMD Zen 5, n = 4096): folding the
//! gap-32/16/8 stages into the transposed block pass, or using radix-8
//! passes, was slower than the layout above.
//!
//! Helpers are `#[inline(always)] unsafe fn` without `#[target_feature]`, so
//! the same code compiles whether or not the compiler treats intrinsics as
//! safe inside `#[target_feature]` functions. They are only called from the
//! `#[target_feature(enable = "avx2")]` kernels, into which they are inlined.
//!
//! The helpers on lanes are in `lanes.rs`, the transforms in `transforms.rs`,
//! the coefficient-wise kernels in `pointwise.rs`, the 1:N dot products in
//! `dot.rs`.

mod dot;
mod lanes;
mod pointwise;
mod transforms;

pub(crate) use dot::{dot2, dot2_blocks};
pub(crate) use pointwise::{
    cbd, floor_frac_sum, lincomb, mul, mul_acc, mul_mont_streaming, mul_sum, round_to_t_small,
    round_weighted_sum, take_below,
};
pub(crate) use transforms::{forward, inverse, inverse_from};

use crate::backend::tables::NttTables;

/// Smallest `n` these kernels handle: one 64-coefficient block (eight rows of
/// eight) for the transposed stages. Smaller plans (none exist today) use the
/// scalar kernels.
const MIN_N: usize = 64;

/// One register's worth of values, aligned so that table loads never split
/// a cache line.
#[repr(C, align(32))]
#[derive(Clone, Copy)]
struct Lanes([u32; 8]);

/// Per-plan tables in the layout these kernels read.
///
/// For each 64-coefficient block, the twiddles of the three stages that run
/// across lanes (gaps 4, 2, 1): lane `r` holds the twiddle of row `r` of the
/// block. A stage with gap `g` has `4 / g` twiddles per row, hence 1 + 2 + 4
/// vectors per block, each followed by its Shoup companion. `fwd_lanes` is in
/// forward order (gap 4 first), `inv_lanes` in inverse order (gap 1 first), so
/// each kernel reads its table front to back.
#[derive(Default)]
pub(crate) struct Tables {
    fwd_lanes: Vec<Lanes>,
    inv_lanes: Vec<Lanes>,
}

/// Vectors (values and Shoup companions) per block in each lane table.
const LANE_VECTORS: usize = 2 * (1 + 2 + 4);

impl Tables {
    pub(crate) fn new(t: &NttTables) -> Self {
        if t.n < MIN_N {
            return Self::default();
        }
        let layout = |w: &[u32], w_shoup: &[u32], gaps: [usize; 3]| {
            let mut out = Vec::with_capacity(t.n / 64 * LANE_VECTORS);
            for block in 0..t.n / 64 {
                for gap in gaps {
                    // The stage with this gap has n / (2 gap) groups, starting at
                    // table index n / (2 gap); each 8-coefficient row holds 4 / gap.
                    let first = t.n / (2 * gap);
                    let per_row = 4 / gap;
                    for h in 0..per_row {
                        let at = |r: usize| first + (8 * block + r) * per_row + h;
                        out.push(Lanes(std::array::from_fn(|r| w[at(r)])));
                        out.push(Lanes(std::array::from_fn(|r| w_shoup[at(r)])));
                    }
                }
            }
            out
        };
        Self {
            fwd_lanes: layout(&t.fwd, &t.fwd_shoup, [4, 2, 1]),
            inv_lanes: layout(&t.inv, &t.inv_shoup, [1, 2, 4]),
        }
    }
}
