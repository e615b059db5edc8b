//! Every backend against scalar, bit for bit, on awkward inputs.

use super::oracle::{awkward_inputs, backends, degrees, primes_for, Rng};
use blindmatch::{arith::Modulus, Backend, NttPlan};

suite_test! {
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
                    for bk in backends() {
                        let mut got = vec![0; len];
                        bk.mul(&m, a, b, &mut got);
                        assert_eq!(got, want, "mul len={len} q={q} {bk:?}");
                        let mut acc = acc0.clone();
                        bk.mul_acc(&m, a, b, &mut acc);
                        assert_eq!(acc, want_acc, "mul_acc len={len} q={q} {bk:?}");
                    }
                }
            }
        }
    }
}
