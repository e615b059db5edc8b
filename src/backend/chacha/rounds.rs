//! The parts of ChaCha20 that every kernel shares, written once.
//!
//! They are macros rather than generic functions over a lane type so that
//! each kernel's intrinsics are expanded inside that kernel's own
//! `#[target_feature]` function, where they are safe and inlined; a generic
//! function would be compiled without the feature.

/// The sixteen input words (constants, key, 64-bit block counter, zero
/// stream id), each made a lane value by `$splat`; `$lo` and `$hi` are the
/// counters' low and high words and `$zero` the zero word, as lane values.
macro_rules! initial_state {
    ($splat:expr, $key:expr, $lo:expr, $hi:expr, $zero:expr) => {
        [
            ($splat)(super::SIGMA[0]),
            ($splat)(super::SIGMA[1]),
            ($splat)(super::SIGMA[2]),
            ($splat)(super::SIGMA[3]),
            ($splat)($key[0]),
            ($splat)($key[1]),
            ($splat)($key[2]),
            ($splat)($key[3]),
            ($splat)($key[4]),
            ($splat)($key[5]),
            ($splat)($key[6]),
            ($splat)($key[7]),
            $lo,
            $hi,
            $zero,
            $zero,
        ]
    };
}

/// One quarter round on words (or lanes of words) `a, b, c, d` of `$x`.
macro_rules! quarter_round {
    ($x:ident, $add:expr, $xor:expr, [$r16:expr, $r12:expr, $r8:expr, $r7:expr], $a:literal, $b:literal, $c:literal, $d:literal) => {
        $x[$a] = ($add)($x[$a], $x[$b]);
        $x[$d] = ($r16)(($xor)($x[$d], $x[$a]));
        $x[$c] = ($add)($x[$c], $x[$d]);
        $x[$b] = ($r12)(($xor)($x[$b], $x[$c]));
        $x[$a] = ($add)($x[$a], $x[$b]);
        $x[$d] = ($r8)(($xor)($x[$d], $x[$a]));
        $x[$c] = ($add)($x[$c], $x[$d]);
        $x[$b] = ($r7)(($xor)($x[$b], $x[$c]));
    };
}

/// ChaCha20's 20 rounds and the feed-forward on the state `$x` (16 words, or
/// 16 vectors of one word of several blocks each): `$x` becomes
/// rounds(`$x`) + `$x`, lane by lane. `$add` and `$xor` are the lane
/// operations, the list the rotations left by 16, 12, 8 and 7.
macro_rules! rounds_and_feed_forward {
    ($x:ident, add = $add:expr, xor = $xor:expr, rotl = [$r16:expr, $r12:expr, $r8:expr, $r7:expr]) => {{
        let input = $x;
        for _ in 0..super::DOUBLE_ROUNDS {
            // Columns, then diagonals.
            super::rounds::quarter_round!($x, $add, $xor, [$r16, $r12, $r8, $r7], 0, 4, 8, 12);
            super::rounds::quarter_round!($x, $add, $xor, [$r16, $r12, $r8, $r7], 1, 5, 9, 13);
            super::rounds::quarter_round!($x, $add, $xor, [$r16, $r12, $r8, $r7], 2, 6, 10, 14);
            super::rounds::quarter_round!($x, $add, $xor, [$r16, $r12, $r8, $r7], 3, 7, 11, 15);
            super::rounds::quarter_round!($x, $add, $xor, [$r16, $r12, $r8, $r7], 0, 5, 10, 15);
            super::rounds::quarter_round!($x, $add, $xor, [$r16, $r12, $r8, $r7], 1, 6, 11, 12);
            super::rounds::quarter_round!($x, $add, $xor, [$r16, $r12, $r8, $r7], 2, 7, 8, 13);
            super::rounds::quarter_round!($x, $add, $xor, [$r16, $r12, $r8, $r7], 3, 4, 9, 14);
        }
        for (x, i) in $x.iter_mut().zip(&input) {
            *x = ($add)(*x, *i);
        }
    }};
}

pub(super) use {initial_state, quarter_round, rounds_and_feed_forward};
