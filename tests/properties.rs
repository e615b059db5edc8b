//! Property tests with shrinking (native only; the shared suite in
//! tests/suite/ covers the same properties with seeded inputs on every target).
#![cfg(not(target_arch = "wasm32"))]

use blindmatch::{arith::ntt_primes, Backend, NttPlan};
use proptest::prelude::*;

fn naive_negacyclic(a: &[u32], b: &[u32], q: u32) -> Vec<u32> {
    let n = a.len();
    let q = q as u64;
    let mut acc = vec![0u64; n];
    for i in 0..n {
        for j in 0..n {
            let p = a[i] as u64 * b[j] as u64 % q;
            if i + j < n {
                acc[i + j] = (acc[i + j] + p) % q;
            } else {
                acc[i + j - n] = (acc[i + j - n] + q - p) % q;
            }
        }
    }
    acc.into_iter().map(|v| v as u32).collect()
}

/// A prime for n = 1024 of 17..=30 bits, chosen by the strategy.
fn prime_1024() -> impl Strategy<Value = u32> {
    (17u32..=30).prop_map(|bits| ntt_primes(bits, 1024, 1).unwrap()[0])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn forward_then_inverse_is_identity(q in prime_1024(), seed in any::<u64>()) {
        let n = 1024;
        let mut s = seed;
        let a: Vec<u32> = (0..n).map(|_| { s = s.wrapping_mul(6364136223846793005).wrapping_add(1); ((s >> 33) % q as u64) as u32 }).collect();
        for b in Backend::available() {
            let plan = NttPlan::with_backend(n, q as u64, b).unwrap();
            let mut x = a.clone();
            plan.forward(&mut x);
            prop_assert!(x.iter().all(|&v| v < q));
            plan.inverse(&mut x);
            prop_assert_eq!(&x, &a);
        }
    }

    #[test]
    fn ntt_product_is_negacyclic_convolution(q in prime_1024(),
                                             a in proptest::collection::vec(any::<u32>(), 1024),
                                             b in proptest::collection::vec(any::<u32>(), 1024)) {
        let n = 1024;
        let a: Vec<u32> = a.into_iter().map(|v| v % q).collect();
        let b: Vec<u32> = b.into_iter().map(|v| v % q).collect();
        let want = naive_negacyclic(&a, &b, q);
        for bk in Backend::available() {
            let plan = NttPlan::with_backend(n, q as u64, bk).unwrap();
            let (mut fa, mut fb) = (a.clone(), b.clone());
            plan.forward(&mut fa);
            plan.forward(&mut fb);
            let mut c = vec![0; n];
            plan.multiply_pointwise(&fa, &fb, &mut c);
            plan.inverse(&mut c);
            prop_assert_eq!(&c, &want);
        }
    }
}
