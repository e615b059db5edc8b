//! Independent references: a deterministic RNG and naive `%` arithmetic.

use blindmatch::Backend;

/// SplitMix64: small, deterministic, identical on every target.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, q: u32) -> u32 {
        (self.next_u64() % q as u64) as u32
    }
    pub fn vec(&mut self, n: usize, q: u32) -> Vec<u32> {
        (0..n).map(|_| self.below(q)).collect()
    }
}

/// Naive O(n^2) product in `Z_q[X]/(X^n + 1)`.
pub fn negacyclic_mul(a: &[u32], b: &[u32], q: u32) -> Vec<u32> {
    let n = a.len();
    let q = q as u64;
    let mut acc = vec![0u64; n];
    for (i, &x) in a.iter().enumerate() {
        if x == 0 {
            continue;
        }
        for (j, &y) in b.iter().enumerate() {
            let p = x as u64 * y as u64 % q;
            let k = i + j;
            if k < n {
                acc[k] = (acc[k] + p) % q;
            } else {
                acc[k - n] = (acc[k - n] + q - p) % q;
            }
        }
    }
    acc.into_iter().map(|v| v as u32).collect()
}

/// Direct evaluation of the forward NTT's definition: output `i` is
/// `a(psi^(2·brv(i)+1))`.
pub fn ntt_by_definition(a: &[u32], psi: u32, q: u32) -> Vec<u32> {
    let n = a.len();
    let bits = n.trailing_zeros();
    let q64 = q as u64;
    let pow = |mut b: u64, mut e: u64| {
        let mut r = 1u64;
        b %= q64;
        while e > 0 {
            if e & 1 == 1 {
                r = r * b % q64;
            }
            b = b * b % q64;
            e >>= 1;
        }
        r
    };
    (0..n)
        .map(|i| {
            let brv = i.reverse_bits() >> (usize::BITS - bits);
            let x = pow(psi as u64, 2 * brv as u64 + 1);
            // Horner.
            let mut acc = 0u64;
            for &c in a.iter().rev() {
                acc = (acc * x + c as u64) % q64;
            }
            acc as u32
        })
        .collect()
}

/// Inputs that stress edges: zeros, ones, q-1 everywhere, alternating
/// extremes, a painted ramp, and random residues.
pub fn awkward_inputs(n: usize, q: u32, rng: &mut Rng) -> Vec<Vec<u32>> {
    vec![
        vec![0; n],
        vec![1; n],
        vec![q - 1; n],
        (0..n).map(|i| if i % 2 == 0 { q - 1 } else { 0 }).collect(),
        (0..n).map(|i| if i % 3 == 0 { 1 } else { q - 1 }).collect(),
        (0..n)
            .map(|i| (i as u64 * 0x9E37_79B9 % q as u64) as u32)
            .collect(),
        rng.vec(n, q),
        rng.vec(n, q),
    ]
}

/// The primes the suite covers for degree `n`: the largest 30-, 29- and 27-bit
/// NTT primes, the smallest 20-bit one reached by the search, and 65537 (the
/// plaintext modulus, NTT-friendly up to n = 32768).
pub fn primes_for(n: usize) -> Vec<u32> {
    let mut v = Vec::new();
    for bits in [30, 29, 27, 20] {
        v.extend(blindmatch::arith::ntt_primes(bits, n, 1).unwrap());
    }
    v.push(65537);
    v
}

/// Backends to compare with scalar. Says loudly on stderr, once per test
/// binary, which backends it compares and which ones are compiled into this
/// build but cannot run on this CPU (e.g. avx512 on an AVX2-only machine),
/// and fails if the build was told (at compile time,
/// `BLINDMATCH_REQUIRE_BACKEND=name`) that a backend must be exercised.
pub fn backends() -> Vec<Backend> {
    let avail = Backend::available();
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let mut msg = format!("backends compared with scalar in this run: {avail:?}\n");
        for name in Backend::compiled_names() {
            if !avail.iter().any(|b| b.name() == *name) {
                msg += &format!(
                    "WARNING: backend {name} is compiled in but this CPU cannot run it; not tested here\n"
                );
            }
        }
        // Straight to the stream: libtest captures eprintln! of passing
        // tests, and this must show in every run.
        use std::io::Write;
        let _ = std::io::stderr().write_all(msg.as_bytes());
    });
    if let Some(req) = option_env!("BLINDMATCH_REQUIRE_BACKEND") {
        assert!(
            avail.iter().any(|b| b.name() == req),
            "backend {req} is required by this test build but not available (have {avail:?})"
        );
    }
    avail
}

/// Degrees the suite covers. wasm tests run unoptimized, so they stop earlier.
pub fn degrees() -> &'static [usize] {
    if cfg!(target_arch = "wasm32") {
        &[1024, 2048, 4096]
    } else {
        &[1024, 2048, 4096, 8192, 16384]
    }
}
