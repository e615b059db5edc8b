//! Modulus operations against naive `%`, on every target.

use super::oracle::Rng;
use blindmatch::arith::{is_prime, ntt_primes, primitive_root, Modulus};

suite_test! {
    fn modulus_ops_match_naive() {
        let mut rng = Rng::new(1);
        for q in [12289u32, 65537, 536_813_569, ntt_primes(30, 1024, 1).unwrap()[0]] {
            let m = Modulus::new(q as u64).unwrap();
            let q64 = q as u64;
            for i in 0..3000u32 {
                let edge = [0, 1, q - 1, q / 2];
                let (a, b) = if i < 16 {
                    (edge[(i % 4) as usize], edge[(i / 4) as usize])
                } else {
                    (rng.below(q), rng.below(q))
                };
                assert_eq!(m.mul(a, b) as u64, a as u64 * b as u64 % q64);
                assert_eq!(m.add(a, b) as u64, (a as u64 + b as u64) % q64);
                assert_eq!(m.sub(a, b) as u64, (a as u64 + q64 - b as u64) % q64);
                let w = m.shoup(b);
                let any = rng.next_u64() as u32;
                assert_eq!(m.mul_shoup(any, w) as u64, any as u64 * b as u64 % q64);
                assert_eq!(m.from_montgomery(m.mont_mul(m.to_montgomery(a), m.to_montgomery(b))) as u64,
                           a as u64 * b as u64 % q64);
            }
        }
    }

    fn primes_and_roots_are_sound() {
        for n in [1024usize, 2048, 4096, 8192, 16384] {
            for p in ntt_primes(30, n, 3).unwrap() {
                assert!(is_prime(p as u64));
                assert_eq!(p as u64 % (2 * n as u64), 1);
                let m = Modulus::new(p as u64).unwrap();
                let psi = primitive_root(n, p as u64).unwrap();
                assert_eq!(m.pow(psi, n as u64), p - 1, "psi^n must be -1");
            }
        }
    }

    fn bad_parameters_are_typed_errors() {
        use blindmatch::ArithError;
        assert!(matches!(blindmatch::NttPlan::new(1000, 12289), Err(ArithError::InvalidDegree { degree: 1000, .. })));
        assert!(matches!(blindmatch::NttPlan::new(32768, 65537), Err(ArithError::InvalidDegree { .. })));
        assert!(matches!(blindmatch::NttPlan::new(4096, 12289), Err(ArithError::NotNttFriendly { modulus: 12289, two_n: 8192 })));
        assert!(matches!(blindmatch::NttPlan::new(1024, 2049 * 3), Err(ArithError::NotPrime { .. })));
        assert!(matches!(blindmatch::NttPlan::new(1024, 1 << 30), Err(ArithError::ModulusOutOfRange { .. })));
        assert!(matches!(ntt_primes(31, 1024, 1), Err(ArithError::PrimeBitsOutOfRange { bits: 31 })));
        assert!(matches!(ntt_primes(13, 4096, 1), Err(ArithError::NotEnoughPrimes { .. })));
    }
}
