//! One check per kernel family, shared by the crate's kernel tests: each
//! `check_*` runs every backend this CPU can run against the scalar kernels
//! (and the scalar kernels against exact integer arithmetic where that is
//! cheap), on awkward inputs: 0, 1 and q - 1 everywhere, alternating
//! extremes, words near 2q and 4q and at 2^31 - 1 and 2^32 - 1 where a kernel
//! takes unreduced inputs, lengths that end mid-vector, and every prime of
//! the preset plus wider and narrower ones.

use super::tables::NttTables;
use super::{Backend, Family};
use crate::arith::{ntt_primes, primitive_root, Modulus};

/// SplitMix64, as the integration suite's oracle uses: small, deterministic,
/// identical on every target.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub(crate) fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }

    pub(crate) fn below(&mut self, q: u32) -> u32 {
        (self.next_u64() % q as u64) as u32
    }

    pub(crate) fn vec(&mut self, n: usize, q: u32) -> Vec<u32> {
        (0..n).map(|_| self.below(q)).collect()
    }
}

/// Every backend this CPU can run, scalar first. Says on stderr, once, which
/// backends compiled into this build cannot run here, and fails when the
/// build was told (at compile time, `BLINDMATCH_REQUIRE_BACKEND=name`, as
/// `scripts/test.sh` does) that a backend must be exercised and it is not
/// available: a run that silently fell back to scalar would test scalar
/// against itself.
pub(crate) fn backends() -> Vec<Backend> {
    let avail = Backend::available();
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let mut msg = format!("kernels compared with scalar in this run: {avail:?}\n");
        for name in Backend::compiled_names() {
            if !avail.iter().any(|b| b.name() == *name) {
                msg += &format!(
                    "WARNING: backend {name} is compiled in but this CPU cannot run it; not tested here\n"
                );
            }
        }
        // Straight to the stream: libtest captures eprintln! of passing tests.
        use std::io::Write;
        let _ = std::io::stderr().write_all(msg.as_bytes());
    });
    if let Some(req) = option_env!("BLINDMATCH_REQUIRE_BACKEND") {
        assert!(
            avail.iter().any(|b| b.name() == req),
            "backend {req} is required by this test build but not available (have {avail:?})"
        );
    }
    // And sets that mix backends across families, as the calibration can
    // choose: each SIMD backend with scalar products, dot products and
    // sampling.
    let mixed = avail.iter().filter(|b| **b != Backend::scalar()).map(|b| {
        [Family::Products, Family::Dot, Family::Sampling]
            .into_iter()
            .fold(*b, |set, f| set.with_family(f, Backend::scalar()))
    });
    let mixed: Vec<Backend> = mixed.collect();
    static MIXED: std::sync::Once = std::sync::Once::new();
    MIXED.call_once(|| {
        use std::io::Write;
        let msg = format!("and kernel sets mixing backends: {mixed:?}\n");
        let _ = std::io::stderr().write_all(msg.as_bytes());
    });
    avail.into_iter().chain(mixed).collect()
}

/// The primes the kernels are checked over at degree `n <= 4096`: the
/// preset's (auth4096: three 29-bit ciphertext primes, the 22-bit special
/// prime, the 30-bit primes that multiplication extends to, t = 65537),
/// then the largest 27- and 20-bit NTT primes.
pub(crate) fn primes(n: usize) -> Vec<u32> {
    let mut v = Vec::new();
    for (bits, count) in [(29, 3), (22, 1), (30, 5), (27, 1), (20, 1)] {
        for q in ntt_primes(bits, 4096, count).expect("the preset's primes exist") {
            if (q as u64 - 1).is_multiple_of(2 * n as u64) {
                v.push(q);
            }
        }
    }
    v.push(65537);
    v
}

/// Lengths around every vector width, for the coefficient-wise kernels.
const LENGTHS: &[usize] = &[
    0, 1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 64, 65, 128, 256, 1000, 4096,
];

/// Residues below `q` that stress the lazy ranges: zeros, ones, q - 1
/// everywhere, alternating extremes, a painted ramp and random ones.
pub(crate) fn residues(n: usize, q: u32, rng: &mut Rng) -> Vec<Vec<u32>> {
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

/// Unreduced words for kernels that take any `u32`: around 2q and 4q, at
/// 2^31 - 1 and 2^32 - 1, and random.
fn words(n: usize, q: u32, rng: &mut Rng) -> Vec<Vec<u32>> {
    let near = [
        2 * q - 1,
        2 * q,
        2 * q + 1,
        (4 * q as u64 - 1) as u32,
        (4 * q as u64).min(u32::MAX as u64) as u32,
        (1 << 31) - 1,
        u32::MAX,
    ];
    let mut v: Vec<Vec<u32>> = near.iter().map(|&x| vec![x; n]).collect();
    v.push((0..n).map(|i| near[i % near.len()]).collect());
    v.push((0..n).map(|_| rng.next_u32()).collect());
    v
}

/// The tables of the negacyclic NTT of degree `n` mod `q`, with the
/// twiddles in the layout the plan gives them (powers of the smallest
/// primitive `2n`-th root, at bit-reversed indices).
fn tables(n: usize, q: u32) -> NttTables {
    let m = Modulus::new(q as u64).unwrap();
    let psi = primitive_root(n, q as u64).unwrap();
    let psi_inv = m.inv(psi);
    let bits = n.trailing_zeros();
    let (mut fwd, mut inv) = (vec![0; n], vec![0; n]);
    let (mut p, mut pi) = (1, 1);
    for i in 0..n {
        let k = i.reverse_bits() >> (usize::BITS - bits);
        fwd[k] = p;
        inv[k] = pi;
        p = m.mul(p, psi);
        pi = m.mul(pi, psi_inv);
    }
    NttTables::new(m, fwd, inv)
}

/// Forward, inverse and scaled inverse transforms (in place and out of
/// place) at degrees 1024 and 4096.
pub(crate) fn check_ntt() {
    let mut rng = Rng::new(1);
    for n in [1024, 4096] {
        for q in primes(n) {
            let t = tables(n, q);
            let factor = rng.below(q);
            let scale = t.inv_scale(factor);
            for a in residues(n, q, &mut rng) {
                let mut want = a.clone();
                Backend::scalar().forward(&t, &mut want);
                let mut want_inv = a.clone();
                Backend::scalar().inverse(&t, &mut want_inv, &t.inv_unscaled());
                let mut want_scaled = a.clone();
                Backend::scalar().inverse(&t, &mut want_scaled, &scale);
                let mut back = want.clone();
                Backend::scalar().inverse(&t, &mut back, &t.inv_unscaled());
                assert_eq!(back, a, "scalar inverse(forward) n={n} q={q}");
                for b in std::iter::once(Backend::scalar()).chain(backends()) {
                    // Out of place: the input unchanged, the output the same.
                    let mut got = vec![7; n];
                    b.inverse_from(&t, &a, &mut got, &scale);
                    assert_eq!(got, want_scaled, "inverse_from n={n} q={q} {b:?}");
                }
                for b in backends() {
                    let mut got = a.clone();
                    b.forward(&t, &mut got);
                    assert_eq!(got, want, "forward n={n} q={q} {b:?}");
                    let mut got = a.clone();
                    b.inverse(&t, &mut got, &t.inv_unscaled());
                    assert_eq!(got, want_inv, "inverse n={n} q={q} {b:?}");
                    let mut got = a.clone();
                    b.inverse(&t, &mut got, &scale);
                    assert_eq!(got, want_scaled, "inverse by {factor} n={n} q={q} {b:?}");
                }
            }
        }
    }
}

/// The pointwise products: plain and Montgomery, written, streamed (at every
/// start offset within a cache line) and accumulated.
pub(crate) fn check_products() {
    let mut rng = Rng::new(2);
    for &len in LENGTHS {
        for q in primes(1024) {
            let m = Modulus::new(q as u64).unwrap();
            let r_inv = m.inv(m.r()) as u64;
            let ins = residues(len, q, &mut rng);
            for (i, a) in ins.iter().enumerate() {
                let b = &ins[(i + 3) % ins.len()];
                let acc0 = rng.vec(len, q);
                let s = Backend::scalar();
                let (mut mul, mut mont) = (vec![0; len], vec![0; len]);
                let (mut acc, mut acc_mont, mut sub_mont) =
                    (acc0.clone(), acc0.clone(), acc0.clone());
                s.mul(&m, a, b, &mut mul);
                s.mul_mont(&m, a, b, &mut mont);
                s.mul_acc(&m, a, b, &mut acc);
                s.mul_acc_mont(&m, a, b, &mut acc_mont);
                s.mul_sub_mont(&m, a, b, &mut sub_mont);
                let q64 = q as u64;
                for k in 0..len {
                    let exact = a[k] as u64 * b[k] as u64 % q64;
                    let exact_mont = exact * r_inv % q64;
                    assert_eq!(mul[k] as u64, exact, "scalar mul q={q}");
                    assert_eq!(acc[k] as u64, (acc0[k] as u64 + exact) % q64);
                    assert_eq!(mont[k] as u64, exact_mont, "scalar mul_mont q={q}");
                    assert_eq!(acc_mont[k] as u64, (acc0[k] as u64 + exact_mont) % q64);
                    assert_eq!(
                        sub_mont[k] as u64,
                        (acc0[k] as u64 + q64 - exact_mont) % q64
                    );
                }
                for bk in backends() {
                    let mut got = vec![0; len];
                    bk.mul(&m, a, b, &mut got);
                    assert_eq!(got, mul, "mul len={len} q={q} {bk:?}");
                    for skip in 0..len.min(17) {
                        let mut got = vec![0; len];
                        bk.mul_mont_streaming(&m, &a[skip..], &b[skip..], &mut got[skip..]);
                        assert_eq!(
                            got[skip..],
                            mont[skip..],
                            "mul_mont_streaming len={len} skip={skip} q={q} {bk:?}"
                        );
                    }
                    let mut got = vec![0; len];
                    bk.mul_mont(&m, a, b, &mut got);
                    assert_eq!(got, mont, "mul_mont len={len} q={q} {bk:?}");
                    let mut got = acc0.clone();
                    bk.mul_acc(&m, a, b, &mut got);
                    assert_eq!(got, acc, "mul_acc len={len} q={q} {bk:?}");
                    let mut got = acc0.clone();
                    bk.mul_acc_mont(&m, a, b, &mut got);
                    assert_eq!(got, acc_mont, "mul_acc_mont len={len} q={q} {bk:?}");
                    let mut got = acc0.clone();
                    bk.mul_sub_mont(&m, a, b, &mut got);
                    assert_eq!(got, sub_mont, "mul_sub_mont len={len} q={q} {bk:?}");
                }
            }
        }
    }
}

/// Sums of 0 to 9 products (across the vector kernels' groups of four), plain
/// and Montgomery, on every backend against exact sums, for the awkward
/// residues and for residues near q in every term.
pub(crate) fn check_mul_sum() {
    let mut rng = Rng::new(6);
    for &len in LENGTHS {
        for q in primes(1024) {
            let m = Modulus::new(q as u64).unwrap();
            let r_inv = m.inv(m.r()) as u128;
            let mut ins = residues(len, q, &mut rng);
            // Residues near q (the largest sums), each lane its own.
            ins.push((0..len).map(|_| q - 1 - rng.below(q / 64)).collect());
            let top = ins.len() - 1;
            // Mixed inputs, and every input near q.
            for (terms, mixed) in [0, 1, 2, 3, 4, 5, 8, 9]
                .into_iter()
                .flat_map(|t| [(t, true), (t, false)])
            {
                let pick = |k: usize| if mixed { k % ins.len() } else { top };
                let a: Vec<&[u32]> = (0..terms).map(|k| ins[pick(k)].as_slice()).collect();
                let b: Vec<&[u32]> = (0..terms)
                    .map(|k| ins[if mixed { (k * 5 + 2) % ins.len() } else { top }].as_slice())
                    .collect();
                let exact: Vec<u128> = (0..len)
                    .map(|x| {
                        a.iter()
                            .zip(&b)
                            .map(|(u, v)| u[x] as u128 * v[x] as u128)
                            .sum::<u128>()
                            % q as u128
                    })
                    .collect();
                let want: Vec<u32> = exact.iter().map(|&e| e as u32).collect();
                let want_mont: Vec<u32> = exact
                    .iter()
                    .map(|&e| (e * r_inv % q as u128) as u32)
                    .collect();
                for bk in std::iter::once(Backend::scalar()).chain(backends()) {
                    let mut got = vec![7; len];
                    bk.mul_sum(&m, &a, &b, &mut got);
                    assert_eq!(got, want, "mul_sum len={len} q={q} terms={terms} {bk:?}");
                    bk.mul_sum_mont(&m, &a, &b, &mut got);
                    assert_eq!(
                        got, want_mont,
                        "mul_sum_mont len={len} q={q} terms={terms} {bk:?}"
                    );
                }
            }
        }
    }
}

/// Linear combinations of unreduced words with Shoup weights (residues,
/// q - 1, and q - 1 in Montgomery form), for 1 to 13 terms, against exact
/// sums.
pub(crate) fn check_lincomb() {
    let mut rng = Rng::new(3);
    for &len in LENGTHS {
        for q in primes(1024) {
            let m = Modulus::new(q as u64).unwrap();
            let pool = words(len, q, &mut rng);
            for terms in [1, 2, 3, 4, 5, 6, 7, 13] {
                let refs: Vec<&[u32]> = (0..terms)
                    .map(|k| pool[(k + len) % pool.len()].as_slice())
                    .collect();
                let ws: Vec<u32> = (0..terms)
                    .map(|k| match k % 3 {
                        0 => rng.below(q),
                        1 => q - 1,
                        _ => m.from_montgomery(q - 1),
                    })
                    .collect();
                let weights: Vec<_> = ws.iter().map(|&w| m.shoup(w)).collect();
                let want: Vec<u32> = (0..len)
                    .map(|x| {
                        let s: u128 = refs
                            .iter()
                            .zip(&ws)
                            .map(|(r, &w)| r[x] as u128 * w as u128)
                            .sum();
                        (s % q as u128) as u32
                    })
                    .collect();
                for b in std::iter::once(Backend::scalar()).chain(backends()) {
                    let mut got = vec![1; len];
                    b.lincomb(&m, &refs, &weights, &mut got);
                    assert_eq!(got, want, "lincomb len={len} q={q} terms={terms} {b:?}");
                }
            }
        }
    }
}

/// Two dot products reduced once, against u128 sums, for primes the vector
/// kernels take and wider ones (which fall back to scalar).
pub(crate) fn check_dot2() {
    let mut rng = Rng::new(4);
    let mut qs = primes(1024);
    qs.extend([(1u32 << 31) - 1, 4_294_967_291]);
    for q in qs {
        let Ok(m) = Modulus::new(q as u64) else {
            continue;
        };
        for &len in LENGTHS {
            let random: Vec<Vec<u32>> = (0..4).map(|_| rng.vec(len, q)).collect();
            let top = vec![vec![q - 1; len]; 4];
            for v in [random, top] {
                let want = (v[0].iter().zip(&v[1]).chain(v[2].iter().zip(&v[3])))
                    .map(|(&a, &x)| a as u128 * x as u128)
                    .sum::<u128>()
                    % q as u128;
                for b in std::iter::once(Backend::scalar()).chain(backends()) {
                    let got = b.dot2(&m, &v[0], &v[1], &v[2], &v[3]);
                    assert_eq!(got as u128, want, "dot2 q={q} len={len} {b:?}");
                }
            }
        }
    }
}

/// Block sums: each equals its block's u128 sum, for blocks the vector
/// kernels sum in one accumulator per lane (128 words of a 29-bit prime)
/// and longer or odd ones, at q - 1 everywhere and random.
pub(crate) fn check_dot2_blocks() {
    let mut rng = Rng::new(6);
    let mut qs = primes(1024);
    qs.push((1u32 << 31) - 1);
    for q in qs {
        let Ok(m) = Modulus::new(q as u64) else {
            continue;
        };
        for (blocks, len) in [
            (1, 0),
            (32, 128),
            (16, 256),
            (8, 512),
            (4, 1000),
            (3, 7),
            (2, 4096),
            // Groups of blocks of an odd number of vectors.
            (4, 24),
            (8, 8),
        ] {
            let n = blocks * len;
            let random: Vec<Vec<u32>> = (0..4).map(|_| rng.vec(n, q)).collect();
            let top = vec![vec![q - 1; n]; 4];
            for v in [random, top] {
                let want = |a: &[u32], x: &[u32], b: &[u32], y: &[u32]| -> Vec<u32> {
                    (0..blocks)
                        .map(|i| {
                            let r = i * len..(i + 1) * len;
                            (r.clone().map(|k| a[k] as u128 * x[k] as u128))
                                .chain(r.map(|k| b[k] as u128 * y[k] as u128))
                                .sum::<u128>()
                                .rem_euclid(q as u128) as u32
                        })
                        .collect()
                };
                let (a, x, b, y) = (&v[0][..], &v[1][..], &v[2][..], &v[3][..]);
                let first = want(a, x, b, y);
                // Two more ciphertexts against the same probe: the
                // probe's own words, and the gallery's swapped.
                let second = want(x, x, y, y);
                let third = want(b, x, a, y);
                for bk in std::iter::once(Backend::scalar()).chain(backends()) {
                    let mut got = vec![u32::MAX; blocks];
                    bk.dot2_blocks(&m, a, x, b, y, &mut got);
                    assert_eq!(got, first, "dot2_blocks q={q} {blocks} x {len} {bk:?}");
                    // Prefetching another pair of slices changes no sum.
                    let mut got = vec![u32::MAX; blocks];
                    bk.dot2_blocks_ahead(&m, a, x, b, y, &mut got, Some((b, a)));
                    assert_eq!(
                        got, first,
                        "dot2_blocks_ahead q={q} {blocks} x {len} {bk:?}"
                    );
                    // Two and three ciphertexts in one call, prefetching or
                    // not: each gets its own sums.
                    let mut got = [(); 3].map(|_| vec![u32::MAX; blocks]);
                    let [g0, g1, g2] = got.each_mut().map(|g| g.as_mut_slice());
                    bk.dot2_blocks_many(&m, [(a, b), (x, y)], x, y, [g0, g1], [Some((x, y)), None]);
                    bk.dot2_blocks_many(&m, [(b, a)], x, y, [g2], [None]);
                    assert_eq!(
                        got,
                        [first.clone(), second.clone(), third.clone()],
                        "dot2_blocks_many 2 q={q} {blocks} x {len} {bk:?}"
                    );
                    let mut got = [(); 3].map(|_| vec![u32::MAX; blocks]);
                    let [g0, g1, g2] = got.each_mut().map(|g| g.as_mut_slice());
                    bk.dot2_blocks_many(
                        &m,
                        [(a, b), (x, y), (b, a)],
                        x,
                        y,
                        [g0, g1, g2],
                        [None, Some((a, b)), None],
                    );
                    assert_eq!(
                        got,
                        [first.clone(), second.clone(), third.clone()],
                        "dot2_blocks_many 3 q={q} {blocks} x {len} {bk:?}"
                    );
                }
            }
        }
    }
}

/// The `f64` kernels of base conversion, scaling and decryption's rounding:
/// residues (the first of each row q - 1) weighted by `1/q_i`, by fractions
/// in `[0, 1)`, and by integer weights with fractions modulo t.
pub(crate) fn check_f64_sums() {
    let mut rng = Rng::new(5);
    let qs: Vec<u32> = primes(1024).into_iter().take(4).collect();
    for &len in LENGTHS {
        let inputs: Vec<Vec<u32>> = qs
            .iter()
            .map(|&q| {
                let mut v = rng.vec(len, q);
                if let Some(x) = v.first_mut() {
                    *x = q - 1;
                }
                v
            })
            .collect();
        let refs: Vec<&[u32]> = inputs.iter().map(|v| v.as_slice()).collect();
        let inv: Vec<f64> = qs.iter().map(|&q| 1.0 / q as f64).collect();
        let thetas: Vec<f64> = (0..refs.len())
            .map(|_| rng.below(1 << 30) as f64 / (1u64 << 30) as f64)
            .collect();
        let omega: Vec<f64> = (0..refs.len()).map(|_| rng.below(1 << 16) as f64).collect();
        let s = Backend::scalar();
        let (mut rws, mut ffs, mut rts) = (vec![0; len], vec![0; len], vec![0; len]);
        s.round_weighted_sum(&refs, &inv, &mut rws);
        s.floor_frac_sum(&refs, &thetas, &mut ffs);
        s.round_to_t_small(&refs, &omega, &thetas, 65537, &mut rts);
        for x in 0..len {
            let exact: f64 = refs.iter().zip(&inv).map(|(r, c)| r[x] as f64 * c).sum();
            assert!(
                (rws[x] as f64 - exact).abs() <= 0.5 + 1e-9,
                "round_weighted_sum"
            );
            let exact: f64 = refs.iter().zip(&thetas).map(|(r, t)| r[x] as f64 * t).sum();
            assert!(
                (ffs[x] as f64 - exact).abs() <= 0.5 + 1e-6,
                "floor_frac_sum"
            );
        }
        for b in backends() {
            let mut got = vec![7; len];
            b.round_weighted_sum(&refs, &inv, &mut got);
            assert_eq!(got, rws, "round_weighted_sum len={len} {b:?}");
            let mut got = vec![7; len];
            b.floor_frac_sum(&refs, &thetas, &mut got);
            assert_eq!(got, ffs, "floor_frac_sum len={len} {b:?}");
            let mut got = vec![7; len];
            b.round_to_t_small(&refs, &omega, &thetas, 65537, &mut got);
            assert_eq!(got, rts, "round_to_t_small len={len} {b:?}");
        }
    }
}

/// The samplers' kernels: rejection of words at or above q (random words,
/// and runs with every word rejected or kept), and centred binomial errors.
pub(crate) fn check_sampling() {
    let mut rng = Rng::new(6);
    for q in primes(1024) {
        let shift = q.leading_zeros();
        for &len in LENGTHS {
            let mut ws: Vec<u32> = (0..len + len / 2).map(|_| rng.next_u32()).collect();
            for (i, w) in ws.iter_mut().enumerate().filter(|(i, _)| i % 11 < 3) {
                *w = if i % 2 == 0 {
                    u32::MAX
                } else {
                    (q - 1) << shift
                };
            }
            // The definition: one word at a time, until out is full.
            let mut want = vec![0; len];
            let (mut used, mut kept) = (0, 0);
            while used < ws.len() && kept < len {
                let x = ws[used] >> shift;
                if x < q {
                    want[kept] = x;
                    kept += 1;
                }
                used += 1;
            }
            for b in backends() {
                let mut got = vec![0; len];
                let r = b.take_below(&ws, shift, q, &mut got);
                assert_eq!(r, (used, kept), "take_below len={len} q={q} {b:?}");
                assert_eq!(
                    got[..kept],
                    want[..kept],
                    "take_below len={len} q={q} {b:?}"
                );
            }
        }
    }
    for &len in LENGTHS {
        let words: Vec<u32> = (0..4 * len.div_ceil(3)).map(|_| rng.next_u32()).collect();
        let mut want = vec![0; len];
        super::scalar::cbd(&words, &mut want);
        for b in backends() {
            let mut got = vec![0; len];
            b.cbd(&words, &mut got);
            assert_eq!(got, want, "cbd len={len} {b:?}");
        }
    }
}

/// A scaled message plus a small error, exact, over lengths that end
/// mid-vector and every `i8` error.
pub(crate) fn check_scaled_plus_small() {
    let mut rng = Rng::new(7);
    for q in [536_813_569u32, 1_073_707_009, 12_289] {
        let m = Modulus::new(q as u64).unwrap();
        for len in [0, 1, 3, 4, 5, 255, 256, 4096] {
            let x: Vec<u32> = (0..len)
                .map(|i| {
                    if i % 7 == 0 {
                        u32::MAX - i as u32
                    } else {
                        rng.next_u32()
                    }
                })
                .collect();
            let e: Vec<i8> = (0..len)
                .map(|i| (i as i32 * 37 % 256 - 128) as i8)
                .collect();
            let w = m.shoup(rng.below(q));
            let want: Vec<u32> = x
                .iter()
                .zip(&e)
                .map(|(&x, &e)| {
                    let v = (x as u64 * w.value as u64 % q as u64) as i64 + e as i64;
                    v.rem_euclid(q as i64) as u32
                })
                .collect();
            for b in backends() {
                let mut got = vec![0; len];
                b.scaled_plus_small(&m, &x, w, &e, &mut got);
                assert_eq!(got, want, "{b:?} q {q} len {len}");
            }
        }
    }
}
