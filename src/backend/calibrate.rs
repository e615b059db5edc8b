//! The one-time calibration behind [`Backend::detect`]: each [`Family`]'s
//! kernels timed on every backend this CPU can run, on the shapes the
//! auth4096 preset uses (degree 4096, 29-bit primes), and the faster one
//! kept per family. Every backend gives the same results (the kernel tests
//! check each against scalar), so the choice changes speed only.
//!
//! A backend more than twice as slow as the fastest after its first timed
//! run (scalar, on a SIMD CPU) leaves the race, and a family with one
//! backend left is decided: on a CPU with AVX2 alone the calibration takes
//! about 0.6 ms instead of 1.3 (bench/HISTORY.md). The widest backend never
//! leaves early: on a 2-core Intel Xeon with AVX-512 one stalled first run
//! put AVX-512 out of the race in 13 processes of 30, each then running at
//! least one family on AVX2 while AVX-512 was 1.1 to 1.5 times faster.
//!
//! The wider backend ([`Backend::best`]) stays unless another one is at
//! least [`MARGIN`] faster: on a noisy machine two backends within noise of
//! each other would otherwise trade places from one start to the next.
//!
//! A few families run, on the CPUs of [`PREFERENCES`], on a backend chosen
//! from measurements of whole operations instead: the calibration times a
//! kernel in cache, and where a family streams from memory (the key
//! holder's dot products) the backend faster in cache can be the slower.
//!
//! The timed buffers sit at different offsets in a page ([`STRIDE`]). Made
//! one after the other, 16 KiB each, they sat 16 bytes apart in every page,
//! and on a 2-core AMD EPYC with AVX-512 the AVX-512 products then ran 20 to
//! 60 % slower in about one process in three (and the AVX2 ones less so),
//! while the same kernels on other buffers of the same process did not: the
//! calibration chose the AVX2 products, which made multiply + relinearize
//! 6 % slower (bench/HISTORY.md).

use std::time::Instant;

use super::chacha;
use super::tables::NttTables;
use super::{Backend, Family};
use crate::arith::{ntt_primes, primitive_root, Modulus};

/// The degree the kernels are timed at (auth4096's).
const N: usize = 4096;

/// Timed runs of each kernel on each backend, the fastest kept; the
/// backends take turns so that a slow moment of the machine hits all.
const ROUNDS: usize = 15;

/// Rounds after which a backend far behind stops being timed, and a
/// family with one backend left in the race is decided.
const SETTLED: usize = 1;

/// How much faster than the wider backend another one must be to be chosen.
pub(crate) const MARGIN: f64 = 0.9;

/// A family that runs on `backend` on the CPUs of one vendor and family,
/// whatever the calibration measured (where `backend` can run).
#[derive(Clone, Copy, Debug)]
pub struct Preference {
    /// The CPUID vendor string, e.g. `AuthenticAMD`.
    pub vendor: &'static str,
    /// The CPUID family (base plus extended).
    pub cpu_family: u32,
    /// The kernel family.
    pub family: Family,
    /// The backend it runs on there.
    pub backend: &'static str,
}

/// The families whose backend comes from measurements of the operation
/// they serve, per CPU (see bench/HISTORY.md for the runs).
///
/// AMD family 25 (Zen 3 and 4; the AMD EPYC with AVX-512 of bench/cpus.tsv,
/// which runs 512-bit operations as two 256-bit halves): in cache the
/// avx512 dot products take 1.19 µs against 1.54 for avx2, so the
/// calibration chooses avx512; streaming 100,000 templates on one core
/// (`matching/identify_full_1core` against `gallery_read_1core`, seven
/// alternated rounds) the avx512 ones ran at 0.68 to 0.75 of the read
/// floor (mean 0.71) and the avx2 ones at 0.73 to 0.81 (mean 0.77). On
/// family 25 without AVX-512 the calibration has only avx2 to choose.
pub(crate) const PREFERENCES: &[Preference] = &[Preference {
    vendor: "AuthenticAMD",
    cpu_family: 25,
    family: Family::Dot,
    backend: "avx2",
}];

/// What [`Backend::detect`] measured: per family and backend, the fastest
/// of a few runs of that family's kernels on one auth4096-sized input.
#[derive(Clone, Debug)]
pub struct Calibration {
    /// The kernels chosen.
    pub chosen: Backend,
    /// `(family, backend name, nanoseconds)`, families in [`Family::ALL`]
    /// order, the candidates of each in [`Backend::available`] order.
    pub timings: Vec<(Family, &'static str, f64)>,
    /// The whole calibration's wall-clock time, in microseconds.
    pub micros: f64,
    /// The families whose backend came from [`PREFERENCES`], not from the
    /// timings.
    pub preferred: Vec<Preference>,
}

/// Times every family on every candidate (the last of which, the widest,
/// is the default) and chooses per family.
pub(crate) fn calibrate(candidates: &[Backend]) -> Calibration {
    let start = Instant::now();
    let mut work = Work::new();
    let default = *candidates.last().expect("at least one candidate");
    let mut chosen = default;
    let mut timings = Vec::new();
    for family in Family::ALL {
        let mut best = vec![f64::INFINITY; candidates.len()];
        for round in 0..=ROUNDS {
            let racing = racing(&best, round);
            if racing.iter().filter(|&&r| r).count() < 2 {
                break;
            }
            // Each round starts with another backend, so that none is always
            // timed right after the same one.
            for j in 0..candidates.len() {
                let i = (round + j) % candidates.len();
                if !racing[i] {
                    continue;
                }
                let t = Instant::now();
                work.run(family, candidates[i]);
                let ns = t.elapsed().as_nanos() as f64;
                // Round 0 warms the caches and the kernels' pages.
                if round > 0 {
                    best[i] = best[i].min(ns);
                }
            }
        }
        let d = candidates.len() - 1;
        let mut pick = d;
        for i in 0..candidates.len() {
            if best[i] < best[pick] && best[i] < MARGIN * best[d] {
                pick = i;
            }
        }
        chosen = chosen.with_family(family, candidates[pick]);
        for (i, b) in candidates.iter().enumerate() {
            timings.push((family, b.of(family).name(), best[i]));
        }
    }
    let here = cpu();
    let mut preferred = Vec::new();
    let this_cpu = |p: &&Preference| {
        here.as_ref()
            .is_some_and(|(vendor, family)| vendor == p.vendor && *family == p.cpu_family)
    };
    for p in PREFERENCES.iter().filter(this_cpu) {
        if let Some(&b) = candidates
            .iter()
            .find(|b| b.of(p.family).name() == p.backend)
        {
            chosen = chosen.with_family(p.family, b);
            preferred.push(*p);
        }
    }
    Calibration {
        chosen,
        timings,
        micros: start.elapsed().as_secs_f64() * 1e6,
        preferred,
    }
}

/// This CPU's CPUID vendor string and family (base plus extended), on
/// x86_64; `None` elsewhere.
fn cpu() -> Option<(String, u32)> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::__cpuid;
        #[allow(unused_unsafe)]
        // SAFETY: every x86_64 CPU has CPUID, and leaves 0 and 1.
        let (l0, l1) = unsafe { (__cpuid(0), __cpuid(1)) };
        let vendor: Vec<u8> = [l0.ebx, l0.edx, l0.ecx]
            .iter()
            .flat_map(|r| r.to_le_bytes())
            .collect();
        let base = (l1.eax >> 8) & 0xf;
        let family = if base == 0xf {
            base + ((l1.eax >> 20) & 0xff)
        } else {
            base
        };
        Some((String::from_utf8_lossy(&vendor).into_owned(), family))
    }
    #[cfg(not(target_arch = "x86_64"))]
    None
}

/// Which backends still race after `round` rounds, given the fastest
/// timed run of each so far (`best`, in candidate order, infinite before
/// the first): a backend at more than twice the fastest after its first
/// timed run is out (scalar, on a SIMD CPU), except the last, the widest
/// and the default, which races to the end: one stalled run must not
/// decide against it. With one left, the family is decided.
fn racing(best: &[f64], round: usize) -> Vec<bool> {
    let fastest = best.iter().copied().fold(f64::INFINITY, f64::min);
    let default = best.len() - 1;
    best.iter()
        .enumerate()
        .map(|(i, &b)| i == default || round <= SETTLED || b <= 2.0 * fastest)
        .collect()
}

/// Words from the start of one of [`Work`]'s buffers to the next: a
/// degree's worth and five cache lines, so that no two start at the same
/// offset in a page.
const STRIDE: usize = N + 80;

/// [`Work`]'s buffers: four inputs, then two outputs.
const BUFFERS: usize = 6;

/// The inputs and outputs the timed kernels work on, made once.
struct Work {
    tables: NttTables,
    m: Modulus,
    /// Four rows of residues, then two outputs, [`STRIDE`] apart.
    buffers: Vec<u32>,
    words: Vec<u32>,
    small: Vec<i8>,
    stream: [u32; chacha::BUF_WORDS],
}

impl Work {
    fn new() -> Self {
        let q = ntt_primes(29, N, 1).expect("a 29-bit NTT prime")[0];
        let m = Modulus::new(q as u64).expect("a prime below 2^30");
        let psi = primitive_root(N, q as u64).expect("an NTT prime");
        // A fixed, cheap fill: the kernels' time does not depend on values.
        let mut buffers = vec![0; BUFFERS * STRIDE];
        for (k, row) in buffers.chunks_mut(STRIDE).take(4).enumerate() {
            for (i, x) in row.iter_mut().enumerate() {
                *x = (i as u32)
                    .wrapping_mul(0x9e37_79b9)
                    .wrapping_add(k as u32 + 1)
                    % q;
            }
        }
        Work {
            tables: NttTables::for_root(m, N, psi),
            m,
            buffers,
            words: (0..N as u32).map(|i| i.wrapping_mul(0x85eb_ca6b)).collect(),
            small: vec![0; 3 * N / 4],
            stream: [0; chacha::BUF_WORDS],
        }
    }

    /// One run of `family`'s kernels on `b`, in the proportions a
    /// multiplication uses them.
    fn run(&mut self, family: Family, b: Backend) {
        let t = &self.tables;
        let m = &self.m;
        let (rows, outs) = self.buffers.split_at_mut(4 * STRIDE);
        let [r0, r1, r2, r3]: [&[u32]; 4] =
            std::array::from_fn(|k| &rows[k * STRIDE..k * STRIDE + N]);
        let (out, acc) = outs.split_at_mut(STRIDE);
        let (out, acc) = (&mut out[..N], &mut acc[..N]);
        match family {
            Family::Transforms => {
                out.copy_from_slice(r0);
                b.forward(t, out);
                b.inverse(t, out, &t.inv_unscaled());
            }
            Family::Products => {
                b.mul(m, r0, r1, out);
                b.mul_acc_mont(m, r2, r3, out);
                b.mul_mont(m, r1, r2, acc);
            }
            Family::Lincomb => {
                let w = [3, 5, 7, 11].map(|w| m.shoup(w));
                b.lincomb(m, &[r0, r1, r2, r3], &w, out);
            }
            Family::Dot => {
                // The key holder's blocks, 32 of 128 words, of two
                // ciphertexts against one probe, as the pass calls it.
                let (s0, s1) = out[..64].split_at_mut(32);
                b.dot2_blocks_many(m, [(r0, r2), (r2, r0)], r1, r3, [s0, s1], [None, None]);
            }
            Family::Rounding => {
                let c = [0.25, 0.5, 0.125, 0.0625];
                b.round_weighted_sum(&[r0, r1, r2, r3], &c, out);
                b.floor_frac_sum(&[r0, r1, r2, r3], &c, acc);
                // Decryption's rounding over two primes, as the key
                // holder's 1:N pass rounds its scores.
                b.round_to_t_small(&[r0, r1], &[3.0, 5.0], &c[..2], 65537, out);
            }
            Family::Sampling => {
                chacha::blocks(b, &[7; 8], 0, &mut self.stream);
                b.take_below(&self.words, 2, m.value(), out);
                b.cbd(&self.words, &mut self.small);
            }
        }
        std::hint::black_box(&self.buffers);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One slow first run of the widest backend (an interrupt, a page
    /// fault, a frequency change) must not put it out of the race: it is
    /// the default, and its later runs show its speed. Scalar, more than
    /// twice as slow as the fastest, leaves.
    #[test]
    fn one_slow_run_of_the_default_keeps_it_racing() {
        // scalar, avx2, avx512 (the default) after the first timed round:
        // the default's one run hit a stall three times its usual time.
        let best = [10_000.0, 2_500.0, 7_000.0];
        assert_eq!(racing(&best, SETTLED + 1), [false, true, true]);
        // Two backends, the narrower one far behind: it leaves and the
        // family is decided.
        assert_eq!(racing(&[10_000.0, 2_500.0], SETTLED + 1), [false, true]);
        // Before the first timed run every backend races.
        let none = [f64::INFINITY; 3];
        assert_eq!(racing(&none, 0), [true, true, true]);
    }
}
