//! The one `match` over backends. Every kernel call goes through
//! `dispatch!`, which writes each backend's arm, its `cfg` and the reason
//! its `unsafe` is sound, once for the whole crate.

/// `dispatch!(kind, kernel::<G>(args), [kinds], else fallback)`, where
/// `kind` is the [`super::Kind`] a [`super::Backend`] runs a family on: for
/// each kind listed, an arm that calls `kernel` in the module named after the
/// kind (`scalar`, `avx2`, `avx512`, `neon`, `simd128`, resolved where the
/// macro is used, so `backend::chacha` reaches its own kernels). Without a
/// list every kind is listed; without `else` the listed kinds must be all of
/// them. `avx512 = avx2` runs the AVX2 module's kernel on AVX-512 CPUs; `if
/// guard` after the list restricts every listed arm.
macro_rules! dispatch {
    ($b:expr, $f:ident $(::<$($g:tt),*>)? ($($arg:expr),* $(,)?)) => {
        dispatch!($b, $f $(::<$($g),*>)? ($($arg),*), [scalar, avx2, avx512, neon, simd128])
    };
    ($b:expr, $f:ident $(::<$($g:tt),*>)? ($($arg:expr),* $(,)?),
     [$($kinds:tt)*] $(if $guard:expr)? $(, else $fb:expr)?) => {
        dispatch!(@arms $b; ($f $(::<$($g),*>)? ($($arg),*)); [$($guard)?]; [$($fb)?]; []; [$($kinds)*])
    };

    // All kinds turned into arms: the match.
    (@arms $b:expr; $call:tt; $guard:tt; [$($fb:tt)?]; [$($arms:tt)*]; []) => {
        match $b {
            $($arms)*
            $(_ => $fb,)?
        }
    };

    (@arms $b:expr; ($($call:tt)*); [$($g:tt)?]; $fb:tt; [$($arms:tt)*];
     [scalar $(, $($rest:tt)*)?]) => {
        dispatch!(@arms $b; ($($call)*); [$($g)?]; $fb; [$($arms)*
            $crate::backend::Kind::Scalar $(if $g)? => scalar::$($call)*,
        ]; [$($($rest)*)?])
    };

    (@arms $b:expr; ($($call:tt)*); [$($g:tt)?]; $fb:tt; [$($arms:tt)*];
     [avx2 $(, $($rest:tt)*)?]) => {
        dispatch!(@arms $b; ($($call)*); [$($g)?]; $fb; [$($arms)*
            // SAFETY: a `Backend` holds `Kind::Avx2` only after
            // `avx2_detected()` (AVX2 and POPCNT).
            #[cfg(bm_avx)]
            $crate::backend::Kind::Avx2 $(if $g)? => unsafe { avx2::$($call)* },
        ]; [$($($rest)*)?])
    };

    (@arms $b:expr; $call:tt; $guard:tt; $fb:tt; $arms:tt;
     [avx512 = $m:ident $(, $($rest:tt)*)?]) => {
        dispatch!(@avx512 $b; $call; $guard; $fb; $arms; $m; [$($($rest)*)?])
    };
    (@arms $b:expr; $call:tt; $guard:tt; $fb:tt; $arms:tt;
     [avx512 $(, $($rest:tt)*)?]) => {
        dispatch!(@avx512 $b; $call; $guard; $fb; $arms; avx512; [$($($rest)*)?])
    };
    (@avx512 $b:expr; ($($call:tt)*); [$($g:tt)?]; $fb:tt; [$($arms:tt)*]; $m:ident; $rest:tt) => {
        dispatch!(@arms $b; ($($call)*); [$($g)?]; $fb; [$($arms)*
            // SAFETY: a `Backend` holds `Kind::Avx512` only after both
            // `avx512_detected()` and `avx2_detected()`, so its CPU runs the
            // AVX-512F kernels and the AVX2 (and POPCNT) ones.
            #[cfg(bm_avx)]
            $crate::backend::Kind::Avx512 $(if $g)? => unsafe { $m::$($call)* },
        ]; $rest)
    };

    (@arms $b:expr; ($($call:tt)*); [$($g:tt)?]; $fb:tt; [$($arms:tt)*];
     [neon $(, $($rest:tt)*)?]) => {
        dispatch!(@arms $b; ($($call)*); [$($g)?]; $fb; [$($arms)*
            // SAFETY: `Kind::Neon` exists only on aarch64, where NEON is part
            // of the baseline.
            #[cfg(bm_neon)]
            $crate::backend::Kind::Neon $(if $g)? => unsafe { neon::$($call)* },
        ]; [$($($rest)*)?])
    };

    (@arms $b:expr; ($($call:tt)*); [$($g:tt)?]; $fb:tt; [$($arms:tt)*];
     [simd128 $(, $($rest:tt)*)?]) => {
        dispatch!(@arms $b; ($($call)*); [$($g)?]; $fb; [$($arms)*
            // simd128 is enabled for the whole build (a compile-time cfg), so
            // these kernels are safe functions.
            #[cfg(bm_simd128)]
            $crate::backend::Kind::Simd128 $(if $g)? => simd128::$($call)*,
        ]; [$($($rest)*)?])
    };
}
