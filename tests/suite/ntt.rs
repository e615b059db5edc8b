//! The NTT against its definition and against naive negacyclic convolution.

use super::oracle::{backends, degrees, negacyclic_mul, ntt_by_definition, primes_for, Rng};
use blindmatch::NttPlan;

suite_test! {
    fn forward_matches_definition() {
        let mut rng = Rng::new(2);
        for &n in &[1024usize, 2048] {
            for q in primes_for(n) {
                for b in backends() {
                    let plan = NttPlan::with_backend(n, q as u64, b).unwrap();
                    let a = rng.vec(n, q);
                    let mut got = a.clone();
                    plan.forward(&mut got);
                    assert_eq!(got, ntt_by_definition(&a, plan.psi(), q), "n={n} q={q} {b:?}");
                }
            }
        }
    }

    fn forward_inverse_is_identity() {
        let mut rng = Rng::new(3);
        for &n in degrees() {
            for q in primes_for(n) {
                for b in backends() {
                    let plan = NttPlan::with_backend(n, q as u64, b).unwrap();
                    for a in super::oracle::awkward_inputs(n, q, &mut rng) {
                        let mut x = a.clone();
                        plan.forward(&mut x);
                        assert!(x.iter().all(|&v| v < q), "forward output not reduced");
                        let mut scaled = x.clone();
                        plan.inverse(&mut x);
                        assert_eq!(x, a, "n={n} q={q} {b:?}");
                        // A scaled inverse is the inverse times the factor.
                        let f = rng.vec(1, q)[0];
                        plan.inverse_scaled(&mut scaled, f);
                        let want: Vec<u32> =
                            a.iter().map(|&v| (v as u64 * f as u64 % q as u64) as u32).collect();
                        assert_eq!(scaled, want, "scaled by {f}: n={n} q={q} {b:?}");
                    }
                }
            }
        }
    }

    fn ntt_product_equals_naive_convolution() {
        let mut rng = Rng::new(4);
        let ns: &[usize] = if cfg!(target_arch = "wasm32") { &[1024] } else { &[1024, 4096] };
        for &n in ns {
            for q in primes_for(n) {
                let a = rng.vec(n, q);
                let b = rng.vec(n, q);
                let want = negacyclic_mul(&a, &b, q);
                for bk in backends() {
                    let plan = NttPlan::with_backend(n, q as u64, bk).unwrap();
                    let (mut fa, mut fb) = (a.clone(), b.clone());
                    plan.forward(&mut fa);
                    plan.forward(&mut fb);
                    let mut c = vec![0; n];
                    plan.multiply_pointwise(&fa, &fb, &mut c);
                    plan.inverse(&mut c);
                    assert_eq!(c, want, "n={n} q={q} {bk:?}");
                    // Multiply-accumulate onto an existing product doubles it.
                    let mut c2 = vec![0; n];
                    plan.multiply_pointwise(&fa, &fb, &mut c2);
                    plan.multiply_accumulate(&fa, &fb, &mut c2);
                    plan.inverse(&mut c2);
                    let doubled: Vec<u32> = want.iter().map(|&v| ((2 * v as u64) % q as u64) as u32).collect();
                    assert_eq!(c2, doubled, "mul_acc n={n} q={q} {bk:?}");
                }
            }
        }
    }
}
