//! CPU-specific kernel choice. This file and `src/backend/` hold every
//! `cfg(target_arch)` / `cfg(target_feature)` of the crate, through the
//! short names `build.rs` gives them: `bm_avx` (x86_64), `bm_neon` (aarch64
//! with the `neon` feature) and `bm_simd128` (wasm32 with simd128). Every
//! call of a kernel goes through one macro, `dispatch!` (in
//! `backend/dispatch.rs`), which states for each backend why its `unsafe`
//! call is sound.
//!
//! | backend   | where                                   | chosen            |
//! |-----------|-----------------------------------------|-------------------|
//! | `scalar`  | every target                            | fallback, oracle  |
//! | `avx2`    | x86_64                                  | run time, cached  |
//! | `avx512`  | x86_64 (AVX-512F)                       | run time, cached  |
//! | `neon`    | aarch64 with the `neon` feature         | compile time      |
//! | `simd128` | wasm32 with `target-feature=+simd128`   | compile time      |
//!
//! The process uses [`Backend::detect`]: the best one, or the one the
//! environment variable `BLINDMATCH_BACKEND` names if this CPU can run it.
//!
//! A [`Backend`] value can only be obtained from [`Backend::detect`],
//! [`Backend::best`], [`Backend::by_name`], [`Backend::scalar`] or
//! [`Backend::available`], each of which only returns what the CPU can run,
//! so holding one proves that the CPU supports its instructions; that is what
//! makes the `unsafe` calls of `#[target_feature]` kernels below sound.

use crate::arith::{Modulus, ShoupConstant};
use tables::{InvScale, NttTables};

#[cfg(all(feature = "neon", not(target_arch = "aarch64")))]
compile_error!(
    "feature `neon` selects the aarch64 NEON kernels; this target is not aarch64 \
     (build without `--features neon`)"
);

#[macro_use]
mod dispatch;

pub(crate) mod scalar;

pub(crate) mod tables;

mod calibrate;
pub use calibrate::{Calibration, Preference};

#[cfg(test)]
pub(crate) mod test_helpers;

pub(crate) mod chacha;

#[cfg(bm_avx)]
pub(crate) mod avx2;

#[cfg(bm_avx)]
pub(crate) mod avx512;

#[cfg(bm_neon)]
pub(crate) mod neon;

#[cfg(bm_simd128)]
pub(crate) mod simd128;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Kind {
    Scalar,
    #[cfg(bm_avx)]
    Avx2,
    #[cfg(bm_avx)]
    Avx512,
    #[cfg(bm_neon)]
    Neon,
    #[cfg(bm_simd128)]
    Simd128,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Scalar => "scalar",
            #[cfg(bm_avx)]
            Kind::Avx2 => "avx2",
            #[cfg(bm_avx)]
            Kind::Avx512 => "avx512",
            #[cfg(bm_neon)]
            Kind::Neon => "neon",
            #[cfg(bm_simd128)]
            Kind::Simd128 => "simd128",
        }
    }
}

/// The operation families whose kernels a [`Backend`] chooses separately:
/// on a CPU that runs 512-bit operations as two 256-bit halves, AVX2 can be
/// the faster choice for some of them and AVX-512 for others.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    /// Forward and inverse NTTs.
    Transforms,
    /// Pointwise products, plain, Montgomery, accumulated and streamed.
    Products,
    /// Linear combinations of residues (base conversion, scaling, encryption's
    /// scaled message plus error).
    Lincomb,
    /// The key holder's 1:N dot products.
    Dot,
    /// The `f64` sums of base conversion, scaling and decryption's rounding.
    Rounding,
    /// The ChaCha20 stream, rejection sampling and centred binomial errors.
    Sampling,
}

impl Family {
    /// Every family, in the order [`Backend::kernels`] lists them.
    pub const ALL: [Family; 6] = [
        Family::Transforms,
        Family::Products,
        Family::Lincomb,
        Family::Dot,
        Family::Rounding,
        Family::Sampling,
    ];

    /// A short lowercase name: `transforms`, `products`, `lincomb`, `dot`,
    /// `rounding` or `sampling`.
    pub fn name(self) -> &'static str {
        match self {
            Family::Transforms => "transforms",
            Family::Products => "products",
            Family::Lincomb => "lincomb",
            Family::Dot => "dot",
            Family::Rounding => "rounding",
            Family::Sampling => "sampling",
        }
    }
}

/// A set of kernels the current CPU can run: one backend per [`Family`].
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Backend([Kind; Family::ALL.len()]);

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.uniform() {
            Some(kind) => f.write_str(kind.name()),
            None => std::fmt::Display::fmt(self, f),
        }
    }
}

/// Every family and its backend: `transforms=avx512 products=avx2 …`.
impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sets: Vec<String> = self
            .kernels()
            .map(|(family, kind)| format!("{}={kind}", family.name()))
            .collect();
        f.write_str(&sets.join(" "))
    }
}

/// AVX2 and POPCNT (which every AVX2 CPU has; the error sampler uses it).
#[cfg(bm_avx)]
fn avx2_detected() -> bool {
    use std::sync::OnceLock;
    static AVX2: OnceLock<bool> = OnceLock::new();
    *AVX2.get_or_init(|| {
        std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("popcnt")
    })
}

/// AVX-512F, the only AVX-512 subset the `avx512` kernels use (the check
/// includes the OS saving the 512-bit register state).
#[cfg(bm_avx)]
fn avx512_detected() -> bool {
    use std::sync::OnceLock;
    static AVX512: OnceLock<bool> = OnceLock::new();
    *AVX512.get_or_init(|| std::arch::is_x86_feature_detected!("avx512f"))
}

/// Terms a vector [`Backend::lincomb`] sums in 64-bit lanes before one
/// Montgomery reduction. For inputs below `2^31` and Montgomery weights
/// `w' = w·2^32 mod q` below `q < 2^30`, `k <= 6` products sum to
/// `s < k·2^31·q <= 3·2^32·q`, so `s + m·q < 4·2^32·q <= 2^64` (no
/// overflow), and the reduced `(s + m·q) / 2^32` is below `(k/2 + 1)·q <= 4q`.
/// (x86_64 only: in wasm the widening multiplies cost more than the
/// reductions they save; see bench/HISTORY.md.)
#[cfg(bm_avx)]
pub(crate) const MONT_TERMS: usize = 6;

/// Products a vector [`Backend::mul_sum`] sums in 64-bit lanes before one
/// Montgomery reduction. For inputs below `q < 2^30`, `k <= 4` products sum
/// to `s < 4q^2`, so `s + m·q < 4q^2 + 2^32·q < 2^64`, and the reduced
/// `(s + m·q) / 2^32 < q·(4q/2^32 + 1)` is below `2q`.
#[cfg(bm_avx)]
pub(crate) const SUM_TERMS: usize = 4;

/// How far ahead, in words (4 KiB), the x86_64 kernels that stream through
/// a whole gallery prefetch it: [`Backend::dot2`] (the key holder's 1:N
/// scores) and [`Backend::mul_mont_streaming`] (score ciphertexts). A hint, never
/// a read. On the development machine, per 100 000 templates on one core:
/// the key holder's identification took 18 ms without prefetching and
/// 14.5 / 12.5 / 11.0 / 12.6 / 15.3 ms prefetching 1, 2, 4, 8 and 16 KiB
/// ahead; the score ciphertexts 21 ms without, and 14.0 / 13.5 / 14.4 ms
/// with 2, 4 and 8 KiB.
///
/// The key holder's kernel prefetches into L2, not L1: per prime it reads
/// 32 KiB of probe beside 32 KiB of gallery, as much as L1 holds, so lines
/// fetched into L1 ahead were evicted before use. On an AMD EPYC with
/// AVX-512 (100 000 templates, one core, alternated runs) that took the
/// identification from 18.6 to 13.7 ms beside a 7.4 ms read floor; 512,
/// 2048 and 4096 words ahead into L2 took 15.9, 15.7 and 16.5 ms. The score
/// ciphertexts' kernel was no faster prefetching into L2 (19.5 ms either
/// way) and keeps L1. Where the caller knows what it reads next (the key
/// holder's pass: the next ciphertext), [`Backend::dot2_blocks_ahead`]
/// prefetches that instead, a whole call ahead: 11.8-12.4 ms where this
/// distance took 12.9-13.2 ms, three alternated rounds on the same CPU.
#[cfg(bm_avx)]
pub(crate) const STREAM_PREFETCH: usize = 1024;

/// Where a `dot2` step over `(a, b)` prefetches when no next ciphertext is
/// given: its own inputs, [`STREAM_PREFETCH`] words on.
#[cfg(bm_avx)]
pub(crate) const STREAM_AHEAD: (isize, isize) =
    (STREAM_PREFETCH as isize, STREAM_PREFETCH as isize);

/// Asks for the line holding `p` to be brought into L2 (x86_64
/// `prefetcht1`, aarch64 `prfm pldl2keep`, nothing elsewhere): a hint,
/// never a read, so any address will do. The memory floors the 1:N passes
/// are measured against (the matching bench, `blindmatch-server bench`)
/// read with it as well as without: where the hardware's own prefetching
/// stops at page boundaries, a plain loop is slower than a pass that
/// prefetches, so no floor (bench/HISTORY.md).
#[inline(always)]
pub fn prefetch_l2<T>(p: *const T) {
    #[cfg(bm_avx)]
    // SAFETY: a prefetch is a hint and cannot fault; SSE is baseline on
    // x86_64.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T1 }>(p.cast())
    };
    #[cfg(bm_neon)]
    // SAFETY: as above; `prfm` reads no memory and writes no register.
    unsafe {
        core::arch::asm!("prfm pldl2keep, [{0}]", in(reg) p, options(nostack, readonly, preserves_flags))
    };
    #[cfg(not(any(bm_avx, bm_neon)))]
    let _ = p;
}

impl Backend {
    /// The portable backend, compiled on every target.
    pub const fn scalar() -> Self {
        Backend::all(Kind::Scalar)
    }

    /// Every family on one kind.
    const fn all(kind: Kind) -> Self {
        Backend([kind; Family::ALL.len()])
    }

    /// The kind that runs `family`'s kernels.
    #[inline(always)]
    fn of(self, family: Family) -> Kind {
        self.0[family as usize]
    }

    /// The kind every family runs on, if they all run on one.
    fn uniform(self) -> Option<Kind> {
        let first = self.0[0];
        self.0.iter().all(|&k| k == first).then_some(first)
    }

    /// This set with `family`'s kernels taken from `other` (which this CPU
    /// can run, as every [`Backend`] is).
    pub fn with_family(mut self, family: Family, other: Backend) -> Self {
        self.0[family as usize] = other.of(family);
        self
    }

    /// The backend each family's kernels run on, by name, in
    /// [`Family::ALL`] order.
    pub fn kernels(self) -> impl Iterator<Item = (Family, &'static str)> {
        Family::ALL.into_iter().map(move |f| (f, self.of(f).name()))
    }

    /// The kernels this process uses: those `BLINDMATCH_BACKEND` names if
    /// this CPU can run them (see [`Backend::from_env`]), every family on
    /// that backend; otherwise, where more than one backend can run, the
    /// measured-faster one per [`Family`] ([`Backend::calibration`], a
    /// millisecond or two, once); otherwise [`Backend::best`]. Decided once, on
    /// the first call.
    ///
    /// An unknown or unavailable name is ignored here (this cannot fail);
    /// a program that honours the variable checks it with
    /// [`Backend::from_env`] first, as `blindmatch-server` does.
    pub fn detect() -> Self {
        use std::sync::OnceLock;
        static CHOSEN: OnceLock<Backend> = OnceLock::new();
        *CHOSEN.get_or_init(|| match Self::from_env() {
            Ok(Some(forced)) => forced,
            _ => Self::calibration().map_or_else(Self::best, |c| c.chosen),
        })
    }

    /// What the calibration of [`Backend::detect`] measured, run once on
    /// the first call; `None` where it does not run: when only one backend
    /// can run here, or on wasm32 (which has no clock without JavaScript,
    /// and one SIMD backend).
    pub fn calibration() -> Option<&'static calibrate::Calibration> {
        use std::sync::OnceLock;
        static CALIBRATION: OnceLock<Option<calibrate::Calibration>> = OnceLock::new();
        CALIBRATION
            .get_or_init(|| {
                let candidates = Self::available();
                (cfg!(not(target_arch = "wasm32")) && candidates.len() > 1)
                    .then(|| calibrate::calibrate(&candidates))
            })
            .as_ref()
    }

    /// The kernels `BLINDMATCH_BACKEND` asks for (see [`Backend::by_spec`]):
    /// `None` when the variable is unset or empty; an error when it names a
    /// backend that is unknown or that this CPU or build cannot run (for
    /// example `avx512` on an AVX2 machine), or an unknown family. Lets an
    /// operator run the AVX2 kernels on a CPU that slows down under
    /// AVX-512, or the scalar ones to rule the SIMD code out.
    pub fn from_env() -> Result<Option<Self>, String> {
        match std::env::var("BLINDMATCH_BACKEND") {
            Ok(spec) if !spec.is_empty() => Self::by_spec(&spec)
                .map(Some)
                .map_err(|e| format!("BLINDMATCH_BACKEND={e}")),
            _ => Ok(None),
        }
    }

    /// The kernels a comma-separated list names: a backend's name sets
    /// every family, `family=name` one family (see [`Family::name`]); the
    /// families the list leaves unset run on [`Backend::best`]. So `avx2`
    /// runs everything on AVX2 and `avx512,dot=avx2` everything on AVX-512
    /// but the 1:N dot products.
    pub fn by_spec(spec: &str) -> Result<Self, String> {
        let mut set = Self::best();
        for item in spec.split(',').map(str::trim) {
            match item.split_once('=') {
                None => set = Self::by_name(item)?,
                Some((family, name)) => {
                    let family = Family::ALL
                        .into_iter()
                        .find(|f| f.name() == family.trim())
                        .ok_or_else(|| {
                            let names: Vec<&str> = Family::ALL.iter().map(|f| f.name()).collect();
                            format!(
                                "{family:?} is not a kernel family (the families: {})",
                                names.join(", ")
                            )
                        })?;
                    set = set.with_family(family, Self::by_name(name.trim())?);
                }
            }
        }
        Ok(set)
    }

    /// The backend called `name` (as [`Backend::name`] spells it), if this
    /// CPU and build can run it; otherwise an error that lists those it can.
    pub fn by_name(name: &str) -> Result<Self, String> {
        let available = Self::available();
        available
            .iter()
            .copied()
            .find(|b| b.name() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = available.iter().map(|b| b.name()).collect();
                format!(
                    "{name:?} is not a backend this machine can run (it can run: {})",
                    names.join(", ")
                )
            })
    }

    /// The fastest backend this CPU supports. On x86_64 the AVX-512 and AVX2
    /// checks run once and are cached; AVX-512 is preferred.
    pub fn best() -> Self {
        cfg_if::cfg_if! {
            if #[cfg(bm_neon)] {
                Backend::all(Kind::Neon)
            } else if #[cfg(bm_simd128)] {
                Backend::all(Kind::Simd128)
            } else if #[cfg(bm_avx)] {
                // The avx512 kind also runs the AVX2 kernels of operations
                // that have no 512-bit version, so it needs both.
                if avx512_detected() && avx2_detected() {
                    Backend::all(Kind::Avx512)
                } else if avx2_detected() {
                    Backend::all(Kind::Avx2)
                } else {
                    Backend::scalar()
                }
            } else {
                Backend::scalar()
            }
        }
    }

    /// Every backend that can run here, scalar first and [`Backend::best`]
    /// last (on x86_64 with AVX-512: scalar, avx2, avx512).
    pub fn available() -> Vec<Self> {
        let mut v = vec![Self::scalar()];
        #[cfg(bm_avx)]
        if avx2_detected() {
            v.push(Backend::all(Kind::Avx2));
        }
        let best = Self::best();
        if !v.contains(&best) {
            v.push(best);
        }
        v
    }

    /// The SIMD backends compiled into this build, whether or not the CPU can
    /// run them, by name. Tests use this to say loudly which ones they skip.
    pub fn compiled_names() -> &'static [&'static str] {
        &[
            "scalar",
            #[cfg(bm_avx)]
            "avx2",
            #[cfg(bm_avx)]
            "avx512",
            #[cfg(bm_neon)]
            "neon",
            #[cfg(bm_simd128)]
            "simd128",
        ]
    }

    /// A short lowercase name: `scalar`, `avx2`, `avx512`, `neon` or
    /// `simd128` when every family runs on that backend, `mixed` when they
    /// do not (see [`Backend::kernels`]).
    pub fn name(&self) -> &'static str {
        self.uniform().map_or("mixed", Kind::name)
    }

    pub(crate) fn forward(self, t: &NttTables, a: &mut [u32]) {
        debug_assert_eq!(a.len(), t.n);
        dispatch!(self.of(Family::Transforms), forward(t, a))
    }

    pub(crate) fn inverse(self, t: &NttTables, a: &mut [u32], s: &InvScale) {
        debug_assert_eq!(a.len(), t.n);
        dispatch!(self.of(Family::Transforms), inverse(t, a, s))
    }

    /// [`Backend::inverse`] of `from` into `a`, the input left as it was:
    /// on AVX2 and AVX-512 the first pass reads `from`; elsewhere a copy,
    /// then the transform in place.
    pub(crate) fn inverse_from(self, t: &NttTables, from: &[u32], a: &mut [u32], s: &InvScale) {
        debug_assert_eq!(a.len(), t.n);
        dispatch!(self.of(Family::Transforms), inverse_from(t, from, a, s), [avx2, avx512], else {
            a.copy_from_slice(from);
            self.inverse(t, a, s)
        })
    }

    /// `out[i] = a[i] · b[i] mod q` for inputs in `[0, q)`.
    ///
    /// # Panics
    /// If the three lengths differ.
    pub fn mul(self, m: &Modulus, a: &[u32], b: &[u32], out: &mut [u32]) {
        self.products(Product::Mul, m, a, b, out);
    }

    /// `out[i] = a[i] · b[i] · 2^-32 mod q` for inputs in `[0, q)`: the
    /// Montgomery product, which is `a[i] · b'[i]` when `b` holds
    /// `b'·2^32 mod q` (an operand kept in Montgomery form, such as a
    /// secret key that is multiplied often). A multiplication cheaper than
    /// [`Backend::mul`].
    ///
    /// # Panics
    /// If the three lengths differ.
    pub fn mul_mont(self, m: &Modulus, a: &[u32], b: &[u32], out: &mut [u32]) {
        self.products(Product::MulMont, m, a, b, out);
    }

    /// [`Backend::mul_mont`] for results that are not read again soon (a
    /// gallery's score ciphertexts, by a probe held in Montgomery form):
    /// where the CPU has non-temporal stores (AVX2, AVX-512) they bypass the
    /// cache, which saves the read of every output line before its write.
    /// The same values as [`Backend::mul_mont`].
    ///
    /// # Panics
    /// If the three lengths differ.
    pub fn mul_mont_streaming(self, m: &Modulus, a: &[u32], b: &[u32], out: &mut [u32]) {
        assert!(
            a.len() == b.len() && a.len() == out.len(),
            "Backend::mul_mont_streaming: length mismatch"
        );
        dispatch!(self.of(Family::Products), mul_mont_streaming(m, a, b, out), [avx2, avx512], else self.mul_mont(m, a, b, out))
    }

    /// `acc[i] = acc[i] + a[i] · b[i] mod q` for inputs in `[0, q)`.
    ///
    /// # Panics
    /// If the three lengths differ.
    pub fn mul_acc(self, m: &Modulus, a: &[u32], b: &[u32], acc: &mut [u32]) {
        self.products(Product::MulAcc, m, a, b, acc);
    }

    /// `acc[i] = acc[i] + a[i] · b[i] · 2^-32 mod q`: [`Backend::mul_mont`]
    /// accumulated.
    ///
    /// # Panics
    /// If the three lengths differ.
    pub fn mul_acc_mont(self, m: &Modulus, a: &[u32], b: &[u32], acc: &mut [u32]) {
        self.products(Product::MulAccMont, m, a, b, acc);
    }

    /// `acc[i] = acc[i] - a[i] · b[i] · 2^-32 mod q`: [`Backend::mul_mont`]
    /// subtracted (such as `e - a·s` for a secret `s` in Montgomery form).
    ///
    /// # Panics
    /// If the three lengths differ.
    pub fn mul_sub_mont(self, m: &Modulus, a: &[u32], b: &[u32], acc: &mut [u32]) {
        self.products(Product::MulSubMont, m, a, b, acc);
    }

    /// `out[i] = Σ_k a[k][i] · b[k][i] mod q` for inputs in `[0, q)`: sums
    /// of products reduced once per few terms, where [`Backend::mul`] and
    /// [`Backend::mul_acc`] would reduce each product and pass over `out`
    /// once per term (the middle term of a tensor product).
    ///
    /// # Panics
    /// If the counts differ or a slice is shorter than `out`.
    pub fn mul_sum(self, m: &Modulus, a: &[&[u32]], b: &[&[u32]], out: &mut [u32]) {
        self.sums::<false>(m, a, b, out);
    }

    /// `out[i] = Σ_k a[k][i] · b[k][i] · 2^-32 mod q`: [`Backend::mul_sum`]
    /// of Montgomery products (key switching's digits times key parts).
    ///
    /// # Panics
    /// If the counts differ or a slice is shorter than `out`.
    pub fn mul_sum_mont(self, m: &Modulus, a: &[&[u32]], b: &[&[u32]], out: &mut [u32]) {
        self.sums::<true>(m, a, b, out);
    }

    fn sums<const MONT: bool>(self, m: &Modulus, a: &[&[u32]], b: &[&[u32]], out: &mut [u32]) {
        let n = out.len();
        assert!(
            a.len() == b.len() && a.iter().chain(b).all(|x| x.len() >= n),
            "Backend::mul_sum: length mismatch"
        );
        // Elsewhere, the backend's own products, one pass per term.
        dispatch!(self.of(Family::Products), mul_sum::<MONT>(m, a, b, out), [avx2, avx512], else {
            let op = if MONT { Product::MulAccMont } else { Product::MulAcc };
            out.fill(0);
            for (x, y) in a.iter().zip(b) {
                self.products(op, m, &x[..n], &y[..n], out);
            }
        })
    }

    /// The pointwise product kernels, one per [`Product`]: the kernels take
    /// plain or Montgomery products (`MONT`) and add or subtract them when
    /// they accumulate (`SUB`) as const parameters.
    #[inline(always)]
    fn products(self, op: Product, m: &Modulus, a: &[u32], b: &[u32], out: &mut [u32]) {
        assert!(
            a.len() == b.len() && a.len() == out.len(),
            "{}: length mismatch",
            op.name()
        );
        match op {
            Product::Mul => dispatch!(self.of(Family::Products), mul::<false>(m, a, b, out)),
            Product::MulMont => dispatch!(self.of(Family::Products), mul::<true>(m, a, b, out)),
            Product::MulAcc => dispatch!(
                self.of(Family::Products),
                mul_acc::<false, false>(m, a, b, out)
            ),
            Product::MulAccMont => dispatch!(
                self.of(Family::Products),
                mul_acc::<true, false>(m, a, b, out)
            ),
            Product::MulSubMont => dispatch!(
                self.of(Family::Products),
                mul_acc::<true, true>(m, a, b, out)
            ),
        }
    }
}

/// What a pointwise product kernel computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Product {
    /// `out = a·b`.
    Mul,
    /// `out = a·b·2^-32`.
    MulMont,
    /// `acc = acc + a·b`.
    MulAcc,
    /// `acc = acc + a·b·2^-32`.
    MulAccMont,
    /// `acc = acc - a·b·2^-32`.
    MulSubMont,
}

impl Product {
    /// The public method's name, for its panic message.
    fn name(self) -> &'static str {
        match self {
            Product::Mul => "Backend::mul",
            Product::MulMont => "Backend::mul_mont",
            Product::MulAcc => "Backend::mul_acc",
            Product::MulAccMont => "Backend::mul_acc_mont",
            Product::MulSubMont => "Backend::mul_sub_mont",
        }
    }
}

impl Backend {
    /// `out[i] = x[i] · w + e[i] mod q`, in `[0, q)`, for any `u32` inputs
    /// `x` and small signed `e` (`|e| < q`): a scaled message plus an error.
    ///
    /// # Panics
    /// If the lengths differ.
    pub(crate) fn scaled_plus_small(
        self,
        m: &Modulus,
        x: &[u32],
        w: ShoupConstant,
        e: &[i8],
        out: &mut [u32],
    ) {
        assert!(
            x.len() == out.len() && e.len() == out.len(),
            "Backend::scaled_plus_small: length mismatch"
        );
        // Without a one-pass kernel, two passes: the backend's own `lincomb`
        // (the widest vectors), then the error added with sign masks, which
        // the portable loop vectorizes at any width.
        dispatch!(self.of(Family::Lincomb), scaled_plus_small(m, x, w, e, out), [simd128], else {
            self.lincomb(m, &[x], &[w], out);
            scalar::add_small(m, e, out);
        })
    }

    /// Rejection sampling's inner loop: reads `words` in order and keeps
    /// `w >> shift` when it is below `q`, into `out`, until `out` is full or
    /// the words run out. Returns `(words read, values written)`. Which
    /// words are kept depends only on the words, never on the grouping.
    pub(crate) fn take_below(
        self,
        words: &[u32],
        shift: u32,
        q: u32,
        out: &mut [u32],
    ) -> (usize, usize) {
        dispatch!(self.of(Family::Sampling), take_below(words, shift, q, out), [avx2, avx512 = avx2, simd128],
            else scalar::take_below(words, shift, q, out))
    }

    /// Centred binomial errors from random 32-bit words, three from each
    /// group of four (the 128 bits `w0 | w1 << 32 | w2 << 64 | w3 << 96`):
    /// value `j` of a group is `popcount(21 bits) - popcount(21 bits)` from
    /// bits `42j .. 42j + 42`.
    ///
    /// # Panics
    /// If `words` holds fewer than `4·ceil(out.len()/3)` words.
    pub(crate) fn cbd(self, words: &[u32], out: &mut [i8]) {
        assert!(
            words.len() >= 4 * out.len().div_ceil(3),
            "Backend::cbd: too few words"
        );
        // The x86_64 kernel is the portable loop compiled with POPCNT; elsewhere
        // `count_ones` is one instruction (wasm `i64.popcnt`, NEON `cnt`) or
        // the portable fallback.
        dispatch!(self.of(Family::Sampling), cbd(words, out), [avx2, avx512 = avx2], else scalar::cbd(words, out))
    }

    /// Decryption's `round(t/Q · x) mod t` per coefficient from the rows of
    /// residues (one per prime, below `2^31`), the integer weights `ω_i` (as
    /// `f64`) and fractions `θ_i` in `[0, 1)`, for levels where
    /// `Σ_i x_i·ω_i < 2^52` (small plaintext moduli).
    ///
    /// # Panics
    /// If a row is shorter than `out` or the counts differ.
    pub(crate) fn round_to_t_small(
        self,
        rows: &[&[u32]],
        omega: &[f64],
        theta: &[f64],
        t: u32,
        out: &mut [u32],
    ) {
        assert!(
            rows.len() == omega.len()
                && rows.len() == theta.len()
                && rows.iter().all(|r| r.len() >= out.len()),
            "Backend::round_to_t_small: length mismatch"
        );
        // NEON is a baseline feature of its build, so the portable loops
        // compile to vector code there.
        dispatch!(self.of(Family::Rounding), round_to_t_small(rows, omega, theta, t, out), [avx2, avx512, simd128],
            else scalar::round_to_t_small(rows, omega, theta, t, out))
    }

    /// `out[x] = Σ_k inputs[k][x] · weights[k] mod q`, in `[0, q)`, for any
    /// `u32` inputs and `q < 2^30`: the linear combinations of RNS base
    /// conversion and scaling.
    ///
    /// # Panics
    /// If an input is shorter than `out` or the counts of inputs and weights
    /// differ.
    pub fn lincomb(
        self,
        m: &Modulus,
        inputs: &[&[u32]],
        weights: &[ShoupConstant],
        out: &mut [u32],
    ) {
        assert!(
            inputs.len() == weights.len() && inputs.iter().all(|x| x.len() >= out.len()),
            "Backend::lincomb: length mismatch"
        );
        // NEON is a baseline feature of its build, so the portable loops
        // compile to vector code there.
        dispatch!(self.of(Family::Lincomb), lincomb(m, inputs, weights, out), [avx2, avx512, simd128],
            else scalar::lincomb(m, inputs, weights, out))
    }

    /// `Σ_k a_k·x_k + b_k·y_k mod q` for residues below `q`: two dot
    /// products of equal length, reduced once (the key holder's 1:N scores).
    ///
    /// # Panics
    /// If the lengths differ.
    pub fn dot2(self, m: &Modulus, a: &[u32], x: &[u32], b: &[u32], y: &[u32]) -> u32 {
        assert!(
            a.len() == x.len() && b.len() == y.len() && a.len() == b.len(),
            "Backend::dot2: length mismatch"
        );
        // The vector kernels sum four products per 64-bit lane. NEON is a
        // baseline feature of its build, so the portable loop compiles to
        // vector code there.
        #[cfg(bm_avx)]
        let fits = m.value() < 1 << 30 && a.len() < 1 << 24;
        dispatch!(self.of(Family::Dot), dot2(m, a, x, b, y), [avx2, avx512] if fits,
            else scalar::dot2(m, a, x, b, y))
    }

    /// [`Backend::dot2`] of each block of `a.len() / sums.len()` words,
    /// into `sums` (the key holder's block sums of one prime, in one call).
    ///
    /// # Panics
    /// If the lengths differ or `sums.len()` does not divide them.
    pub fn dot2_blocks(
        self,
        m: &Modulus,
        a: &[u32],
        x: &[u32],
        b: &[u32],
        y: &[u32],
        sums: &mut [u32],
    ) {
        self.dot2_blocks_ahead(m, a, x, b, y, sums, None);
    }

    /// [`Backend::dot2_blocks`], with `next` (the next ciphertext's `a` and
    /// `b`, of the same lengths) read by the following call: on AVX2 and
    /// AVX-512 each step then prefetches the words of `next` at its own
    /// offset, a whole call ahead, instead of [`STREAM_PREFETCH`] words
    /// ahead in its own input. The same sums either way.
    ///
    /// # Panics
    /// As [`Backend::dot2_blocks`], or if `next`'s lengths differ from `a`'s.
    #[allow(clippy::too_many_arguments)]
    pub fn dot2_blocks_ahead(
        self,
        m: &Modulus,
        a: &[u32],
        x: &[u32],
        b: &[u32],
        y: &[u32],
        sums: &mut [u32],
        next: Option<(&[u32], &[u32])>,
    ) {
        self.dot2_blocks_many(m, [(a, b)], x, y, [sums], [next]);
    }

    /// [`Backend::dot2_blocks_ahead`] of `K` ciphertexts' residues against
    /// the same `x` and `y` in one call: `sums[k]` receives the block sums
    /// of `gallery[k] = (a, b)`, and `next[k]`, where given, is prefetched
    /// as `gallery[k]` is read. The sums are those of `K` calls; the AVX2
    /// and AVX-512 kernels load each word of `x` and `y` once for all `K`,
    /// where per call they read as many probe words as gallery words.
    ///
    /// # Panics
    /// If `K` is 0, a length differs from `x.len()`, or the `sums` differ in
    /// length or do not divide it.
    pub fn dot2_blocks_many<const K: usize>(
        self,
        m: &Modulus,
        gallery: [(&[u32], &[u32]); K],
        x: &[u32],
        y: &[u32],
        sums: [&mut [u32]; K],
        next: [Option<(&[u32], &[u32])>; K],
    ) {
        let n = x.len();
        let blocks = sums.first().map_or(0, |s| s.len());
        assert!(
            y.len() == n
                && blocks > 0
                && n.is_multiple_of(blocks)
                && sums.iter().all(|s| s.len() == blocks)
                && gallery
                    .iter()
                    .chain(next.iter().flatten())
                    .all(|(a, b)| a.len() == n && b.len() == n),
            "Backend::dot2_blocks: length mismatch"
        );
        #[cfg(bm_avx)]
        let fits = m.value() < 1 << 30 && n / blocks < 1 << 24;
        // Word distances from each input to where it prefetches: the same
        // offset of `next` (both `u32` slices, so their byte distance is a
        // multiple of 4), only ever prefetched, never read through.
        #[cfg(bm_avx)]
        let ahead = std::array::from_fn(|k| match next[k] {
            Some((na, nb)) => (
                (na.as_ptr() as isize - gallery[k].0.as_ptr() as isize) / 4,
                (nb.as_ptr() as isize - gallery[k].1.as_ptr() as isize) / 4,
            ),
            None => STREAM_AHEAD,
        });
        dispatch!(self.of(Family::Dot), dot2_blocks::<K>(m, gallery, x, y, sums, ahead), [avx2, avx512] if fits,
        else for ((a, b), sums) in gallery.into_iter().zip(sums) {
            scalar::each_block(a, x, b, y, sums, |a, x, b, y| self.dot2(m, a, x, b, y))
        })
    }

    /// `out[x] = round(Σ_k inputs[k][x] · coeffs[k])`, summed in `f64` in
    /// order, for inputs below `2^31` and sums in `[0, 2^31 - 1)`.
    ///
    /// # Panics
    /// If an input is shorter than `out` or the counts differ.
    pub fn round_weighted_sum(self, inputs: &[&[u32]], coeffs: &[f64], out: &mut [u32]) {
        assert!(
            inputs.len() == coeffs.len() && inputs.iter().all(|x| x.len() >= out.len()),
            "Backend::round_weighted_sum: length mismatch"
        );
        dispatch!(self.of(Family::Rounding), round_weighted_sum(inputs, coeffs, out), [avx2, avx512, simd128],
            else scalar::round_weighted_sum(inputs, coeffs, out))
    }

    /// `out[x] = Σ_k floor(p_k) + round(Σ_k frac(p_k))` for
    /// `p_k = inputs[k][x] · thetas[k]`: inputs below `2^31`, thetas in
    /// `[0, 1)`, totals below `2^32` (beyond, the result is unspecified).
    ///
    /// # Panics
    /// If an input is shorter than `out` or the counts differ.
    pub fn floor_frac_sum(self, inputs: &[&[u32]], thetas: &[f64], out: &mut [u32]) {
        assert!(
            inputs.len() == thetas.len() && inputs.iter().all(|x| x.len() >= out.len()),
            "Backend::floor_frac_sum: length mismatch"
        );
        dispatch!(self.of(Family::Rounding), floor_frac_sum(inputs, thetas, out), [avx2, avx512, simd128],
            else scalar::floor_frac_sum(inputs, thetas, out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Backends are found by the names `name()` gives them, the best one
    /// last; an unknown name is an error that lists what this machine runs.
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    #[cfg_attr(not(target_arch = "wasm32"), test)]
    fn backends_by_name() {
        for b in Backend::available() {
            assert_eq!(Backend::by_name(b.name()), Ok(b));
        }
        assert_eq!(Backend::available().last(), Some(&Backend::best()));
        assert_eq!(Backend::by_name("scalar"), Ok(Backend::scalar()));
        let err = Backend::by_name("avx9000").unwrap_err();
        assert!(
            err.contains("\"avx9000\"") && err.contains("scalar"),
            "{err}"
        );
    }

    /// A list sets every family by a backend's name and one by
    /// `family=name`; unknown families and backends are errors naming what
    /// there is.
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    #[cfg_attr(not(target_arch = "wasm32"), test)]
    fn specs_set_families() {
        let best = Backend::best();
        assert_eq!(Backend::by_spec("scalar"), Ok(Backend::scalar()));
        assert_eq!(Backend::by_spec(best.name()), Ok(best));
        let one = Backend::by_spec("dot=scalar").unwrap();
        for (family, kind) in one.kernels() {
            let want = if family == Family::Dot {
                "scalar"
            } else {
                best.name()
            };
            assert_eq!(kind, want, "{one:?}");
        }
        assert_eq!(
            Backend::by_spec(&format!("scalar, lincomb = {}", best.name())),
            Ok(Backend::scalar().with_family(Family::Lincomb, best))
        );
        if best != Backend::scalar() {
            assert_eq!(one.name(), "mixed");
        }
        let err = Backend::by_spec("speed=scalar").unwrap_err();
        assert!(
            err.contains("\"speed\"") && err.contains("transforms"),
            "{err}"
        );
        let err = Backend::by_spec("dot=avx9000").unwrap_err();
        assert!(
            err.contains("\"avx9000\"") && err.contains("scalar"),
            "{err}"
        );
    }

    /// Without `BLINDMATCH_BACKEND` the process runs what the calibration
    /// chose: per family, one of the backends this CPU runs, timed on each
    /// of them. Where it cannot time (wasm32) or there is nothing to choose,
    /// the best backend.
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    #[cfg_attr(not(target_arch = "wasm32"), test)]
    fn calibration_chooses_among_available_kernels() {
        let available = Backend::available();
        let names: Vec<&str> = available.iter().map(|b| b.name()).collect();
        let Some(c) = Backend::calibration() else {
            assert!(cfg!(target_arch = "wasm32") || available.len() == 1);
            if std::env::var_os("BLINDMATCH_BACKEND").is_none() {
                assert_eq!(Backend::detect(), Backend::best());
            }
            return;
        };
        for (family, kind) in c.chosen.kernels() {
            assert!(
                names.contains(&kind),
                "{family:?} on {kind}, not in {names:?}"
            );
            let timed: Vec<(&str, f64)> = c
                .timings
                .iter()
                .filter(|t| t.0 == family)
                .map(|t| (t.1, t.2))
                .collect();
            assert_eq!(timed.iter().map(|t| t.0).collect::<Vec<_>>(), names);
            assert!(
                timed.iter().all(|t| t.1 > 0.0 && t.1.is_finite()),
                "{timed:?}"
            );
            // The choice is the per-CPU preference where there is one,
            // else the default (the widest) unless another measured
            // faster by the margin.
            if let Some(p) = c.preferred.iter().find(|p| p.family == family) {
                assert_eq!(kind, p.backend, "{family:?}");
                continue;
            }
            let chosen = timed.iter().find(|t| t.0 == kind).unwrap().1;
            let widest = timed.last().unwrap();
            assert!(
                kind == widest.0 || chosen < calibrate::MARGIN * widest.1,
                "{family:?}: {timed:?} chose {kind}"
            );
        }
        assert!(c.micros > 0.0);
        if std::env::var_os("BLINDMATCH_BACKEND").is_none() {
            assert_eq!(Backend::detect(), c.chosen);
        }
    }

    /// Declares kernel tests, each one call of a shared check, for
    /// `cargo test` natively and wasm-bindgen-test on wasm32.
    macro_rules! kernel_tests {
        ($($(#[doc = $doc:literal])* fn $name:ident() => $check:ident;)*) => {$(
            $(#[doc = $doc])*
            #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
            #[cfg_attr(not(target_arch = "wasm32"), test)]
            fn $name() {
                test_helpers::$check();
            }
        )*};
    }

    kernel_tests! {
        /// Every backend's scaled-message-plus-error kernel gives the exact
        /// value, over lengths that end mid-vector and every `i8` error.
        fn scaled_plus_small_is_exact_on_every_backend() => check_scaled_plus_small;
        /// Forward, inverse and scaled inverse transforms match scalar.
        fn ntt_matches_scalar_on_every_backend() => check_ntt;
        /// Plain, Montgomery, streamed and accumulated products match scalar,
        /// and scalar matches `%`.
        fn products_match_scalar_on_every_backend() => check_products;
        /// Sums of products, plain and Montgomery, are exact.
        fn mul_sum_is_exact_on_every_backend() => check_mul_sum;
        /// Linear combinations of unreduced words are exact.
        fn lincomb_is_exact_on_every_backend() => check_lincomb;
        /// Two dot products reduced once are exact.
        fn dot2_is_exact_on_every_backend() => check_dot2;
        fn dot2_blocks_is_exact_on_every_backend() => check_dot2_blocks;
        /// The f64 kernels of base conversion, scaling and decryption match
        /// scalar.
        fn f64_sums_match_scalar_on_every_backend() => check_f64_sums;
        /// Rejection sampling and centred binomial errors match scalar.
        fn sampling_kernels_match_scalar_on_every_backend() => check_sampling;
    }
}
