//! Every backend against scalar, bit for bit, on awkward inputs.

use super::oracle::{awkward_inputs, backends, degrees, primes_for, Rng};
use blindmatch::{arith::Modulus, Backend, NttPlan};

suite_test! {
    fn every_backend_dot2_is_exact() {
        // Σ a·x + b·y mod q against u128 arithmetic: random residues and the
        // largest ones (every input q − 1), lengths around the vector widths,
        // primes the vector kernels take (below 2^30) and wider ones (the
        // scalar sums, one product at a time above 2^31.5).
        let mut rng = Rng::new(12);
        let mut qs = primes_for(4096);
        qs.extend(blindmatch::arith::ntt_primes(31, 4096, 1).unwrap_or_default());
        qs.push(4_294_967_291);
        for q in qs {
            let Ok(m) = Modulus::new(q as u64) else { continue };
            for len in [0, 1, 7, 8, 15, 16, 17, 31, 64, 128, 129, 512, 4096] {
                let random: Vec<Vec<u32>> = (0..4).map(|_| (0..len).map(|_| rng.below(q)).collect()).collect();
                let top = vec![vec![q - 1; len]; 4];
                for v in [random, top] {
                    let want = (v[0].iter().zip(&v[1]).chain(v[2].iter().zip(&v[3])))
                        .map(|(&a, &x)| a as u128 * x as u128)
                        .sum::<u128>()
                        % q as u128;
                    for b in backends() {
                        assert_eq!(b.dot2(&m, &v[0], &v[1], &v[2], &v[3]) as u128, want, "q={q} len={len} {b:?}");
                    }
                }
            }
        }
    }

    fn every_backend_matches_scalar_ntt() {
        let mut rng = Rng::new(5);
        for &n in degrees() {
            for q in primes_for(n) {
                let oracle = NttPlan::with_backend(n, q as u64, Backend::scalar()).unwrap();
                for b in backends() {
                    let plan = NttPlan::with_backend(n, q as u64, b).unwrap();
                    for a in awkward_inputs(n, q, &mut rng) {
                        let (mut x, mut y) = (a.clone(), a.clone());
                        oracle.forward(&mut x);
                        plan.forward(&mut y);
                        assert_eq!(x, y, "forward n={n} q={q} {b:?}");
                        let (mut x, mut y) = (a.clone(), a.clone());
                        oracle.inverse(&mut x);
                        plan.inverse(&mut y);
                        assert_eq!(x, y, "inverse n={n} q={q} {b:?}");
                    }
                }
            }
        }
    }

    fn every_backend_matches_scalar_pointwise() {
        let mut rng = Rng::new(6);
        // Odd lengths exercise the vector kernels' tails.
        for len in [0usize, 1, 3, 4, 7, 8, 9, 15, 16, 17, 31, 33, 64, 1000, 4096] {
            for q in primes_for(1024) {
                let m = Modulus::new(q as u64).unwrap();
                let ins = awkward_inputs(len, q, &mut rng);
                for (i, a) in ins.iter().enumerate() {
                    let b = &ins[(i + 3) % ins.len()];
                    let acc0 = rng.vec(len, q);
                    let mut want = vec![0; len];
                    Backend::scalar().mul(&m, a, b, &mut want);
                    let mut want_acc = acc0.clone();
                    Backend::scalar().mul_acc(&m, a, b, &mut want_acc);
                    for (k, w) in want.iter().enumerate() {
                        assert_eq!(*w as u64, a[k] as u64 * b[k] as u64 % q as u64);
                    }
                    // The Montgomery products: a·b·2^-32 mod q, so b = b'·2^32
                    // gives a·b'.
                    let mut want_mont = vec![0; len];
                    Backend::scalar().mul_mont(&m, a, b, &mut want_mont);
                    let mut want_acc_mont = acc0.clone();
                    Backend::scalar().mul_acc_mont(&m, a, b, &mut want_acc_mont);
                    let mut want_sub_mont = acc0.clone();
                    Backend::scalar().mul_sub_mont(&m, a, b, &mut want_sub_mont);
                    let r_inv = m.inv(m.r()) as u64;
                    for k in 0..len {
                        let exact = a[k] as u64 * b[k] as u64 % q as u64 * r_inv % q as u64;
                        assert_eq!(want_mont[k] as u64, exact, "scalar mul_mont q={q}");
                        assert_eq!(want_acc_mont[k] as u64, (acc0[k] as u64 + exact) % q as u64);
                        let diff = (acc0[k] as u64 + q as u64 - exact) % q as u64;
                        assert_eq!(want_sub_mont[k] as u64, diff, "scalar mul_sub_mont q={q}");
                    }
                    for bk in backends() {
                        let mut got = vec![0; len];
                        bk.mul(&m, a, b, &mut got);
                        assert_eq!(got, want, "mul len={len} q={q} {bk:?}");
                        // Every start offset within a cache line, so the
                        // aligned middle and both ends are all exercised.
                        for skip in 0..len.min(17) {
                            let mut got = vec![0; len];
                            bk.mul_mont_streaming(&m, &a[skip..], &b[skip..], &mut got[skip..]);
                            assert_eq!(got[skip..], want_mont[skip..], "mul_mont_streaming len={len} skip={skip} q={q} {bk:?}");
                        }
                        let mut acc = acc0.clone();
                        bk.mul_acc(&m, a, b, &mut acc);
                        assert_eq!(acc, want_acc, "mul_acc len={len} q={q} {bk:?}");
                        let mut got = vec![0; len];
                        bk.mul_mont(&m, a, b, &mut got);
                        assert_eq!(got, want_mont, "mul_mont len={len} q={q} {bk:?}");
                        let mut acc = acc0.clone();
                        bk.mul_acc_mont(&m, a, b, &mut acc);
                        assert_eq!(acc, want_acc_mont, "mul_acc_mont len={len} q={q} {bk:?}");
                        let mut acc = acc0.clone();
                        bk.mul_sub_mont(&m, a, b, &mut acc);
                        assert_eq!(acc, want_sub_mont, "mul_sub_mont len={len} q={q} {bk:?}");
                    }
                }
            }
        }
    }

    fn every_backend_matches_scalar_rns_kernels() {
        let mut rng = Rng::new(7);
        for len in [0usize, 1, 3, 4, 5, 7, 8, 9, 17, 63, 64, 65, 1000, 4096] {
            for q in primes_for(1024).into_iter().filter(|&q| q < 1 << 30) {
                let m = Modulus::new(q as u64).unwrap();
                // Any u32 input, including 2^32 - 1; and inputs below 2^31
                // (as base conversion's are), up to 2^31 - 1, which vector
                // kernels may sum in 64 bits before reducing; and those with
                // one word of one input at 2^32 - 1.
                for (terms, class) in [1usize, 2, 3, 4, 5, 6, 7, 13, 17]
                    .into_iter()
                    .flat_map(|t| [(t, 0), (t, 1), (t, 2)])
                {
                    let top = if class == 0 { u32::MAX } else { (1 << 31) - 1 };
                    let mut inputs: Vec<Vec<u32>> = (0..terms)
                        .map(|t| match t % 3 {
                            0 => rng.vec(len, top),
                            1 => vec![top; len],
                            _ => rng.vec(len, q),
                        })
                        .collect();
                    if class == 2 && len > 0 {
                        let (t, x) = (rng.below(terms as u32) as usize, rng.below(len as u32) as usize);
                        inputs[t][x] = u32::MAX;
                    }
                    let ws: Vec<u32> = (0..terms).map(|t| if t == 1 { q - 1 } else { rng.below(q) }).collect();
                    let weights: Vec<_> = ws.iter().map(|&w| m.shoup(w)).collect();
                    let refs: Vec<&[u32]> = inputs.iter().map(|v| v.as_slice()).collect();
                    let mut want = vec![0; len];
                    Backend::scalar().lincomb(&m, &refs, &weights, &mut want);
                    for (x, w) in want.iter().enumerate() {
                        let exact = refs
                            .iter()
                            .zip(&ws)
                            .map(|(r, &c)| r[x] as u128 * c as u128)
                            .sum::<u128>()
                            % q as u128;
                        assert_eq!(*w as u128, exact, "lincomb oracle len={len} q={q}");
                    }
                    for bk in backends() {
                        let mut got = vec![1; len];
                        bk.lincomb(&m, &refs, &weights, &mut got);
                        assert_eq!(got, want, "lincomb len={len} q={q} terms={terms} {bk:?}");
                    }
                }
                // The worst case for any lazy reduction: every input
                // 2^32 - 1 (or 2^31 - 1), every weight q - 1 either as a
                // residue or in Montgomery form (w·2^32 ≡ q - 1).
                for (x, w) in [u32::MAX, (1 << 31) - 1]
                    .into_iter()
                    .flat_map(|x| [(x, q - 1), (x, m.from_montgomery(q - 1))])
                {
                    let max = vec![x; len];
                    for terms in 1..=13 {
                        let refs = vec![max.as_slice(); terms];
                        let weights = vec![m.shoup(w); terms];
                        let exact = (terms as u128 * x as u128 * w as u128 % q as u128) as u32;
                        for bk in std::iter::once(Backend::scalar()).chain(backends()) {
                            let mut got = vec![1; len];
                            bk.lincomb(&m, &refs, &weights, &mut got);
                            assert!(
                                got.iter().all(|&g| g == exact),
                                "lincomb worst case len={len} q={q} w={w} terms={terms} {bk:?}"
                            );
                        }
                    }
                }
            }
            // The f64 kernels of base conversion and scaling: residues below
            // 2^30 weighted by 1/q_i (sums below the number of terms), or by
            // fractions in [0, 1) (four terms keep the total below 2^32).
            let primes: Vec<u32> = primes_for(1024).into_iter().filter(|&q| q < 1 << 30).collect();
            let inputs: Vec<Vec<u32>> = primes
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
            let inv: Vec<f64> = primes.iter().map(|&q| 1.0 / q as f64).collect();
            let mut want = vec![0; len];
            Backend::scalar().round_weighted_sum(&refs, &inv, &mut want);
            for (x, w) in want.iter().enumerate() {
                let exact: f64 = refs.iter().zip(&inv).map(|(r, c)| r[x] as f64 * c).sum();
                assert!((*w as f64 - exact).abs() <= 0.5 + 1e-9, "round_weighted_sum oracle");
            }
            for bk in backends() {
                let mut got = vec![7; len];
                bk.round_weighted_sum(&refs, &inv, &mut got);
                assert_eq!(got, want, "round_weighted_sum len={len} {bk:?}");
            }
            let refs = &refs[..refs.len().min(4)];
            let thetas: Vec<f64> = (0..refs.len())
                .map(|_| rng.below(1 << 30) as f64 / (1u64 << 30) as f64)
                .collect();
            let mut want = vec![0; len];
            Backend::scalar().floor_frac_sum(refs, &thetas, &mut want);
            for (x, w) in want.iter().enumerate() {
                let exact: f64 = refs.iter().zip(&thetas).map(|(r, t)| r[x] as f64 * t).sum();
                assert!((*w as f64 - exact).abs() <= 0.5 + 1e-6, "floor_frac_sum oracle");
            }
            for bk in backends() {
                let mut got = vec![7; len];
                bk.floor_frac_sum(refs, &thetas, &mut got);
                assert_eq!(got, want, "floor_frac_sum len={len} {bk:?}");
            }
        }
    }
}
