//! How many number-theoretic transforms each BFV operation makes.
//!
//! The transforms are most of the work of every operation but the pointwise
//! ones, so their number is a floor on its time: an operation can be no
//! faster than its transforms on the engine that runs it. The unit test
//! below pins the numbers, so that a change which adds a transform is seen;
//! `examples/transforms.rs` prints them for the bench report's table of
//! floors (`scripts/bench.sh`).
//!
//! Counting is compiled only into this crate's tests and into builds with
//! the `count-transforms` feature (which adds `count` and `per_operation`);
//! in every other build the hooks in `NttPlan`'s transforms are empty and
//! nothing is counted. The counter itself sits with the transforms, in
//! `ntt::count`; this module runs the operations.

pub use crate::ntt::count::Transforms;

#[cfg(any(test, feature = "count-transforms"))]
pub use crate::ntt::count::count;

/// The transforms of the operations the node-seal bench times
/// (`bench/node_seal/core.mjs`), made as that bench makes them: fresh keys,
/// a seeded secret-key ciphertext and a public-key one at the top level,
/// batch-encoded plaintexts.
#[cfg(any(test, feature = "count-transforms"))]
pub fn per_operation(params: &crate::bfv::Params) -> Vec<(&'static str, Transforms)> {
    use crate::bfv::{BatchEncoder, Evaluator, Prng, PublicKey, RelinKey, SecretKey};

    let mut rng = Prng::from_seed([7; 32]);
    let encoder = BatchEncoder::new(params).expect("the parameters batch");
    let ev = Evaluator::new(params);
    let slots: Vec<i64> = (0..params.degree() as i64).collect();
    let ((sk, pk), keygen) = count(|| {
        let sk = SecretKey::generate_with(params, &mut rng);
        let pk = PublicKey::new_with(&sk, &mut rng);
        (sk, pk)
    });
    let (_, keygen_secret) = count(|| SecretKey::generate_with(params, &mut rng));
    let (_, keygen_public) = count(|| PublicKey::new_with(&sk, &mut rng));
    let (rk, keygen_relin) = count(|| RelinKey::new_with(&sk, &mut rng));
    let (pt, encode) = count(|| encoder.encode(&slots).expect("slots fit"));
    let (_, decode) = count(|| encoder.decode(&pt));
    let (a, encrypt_secret) = count(|| sk.encrypt_with(&pt, &mut rng).expect("same parameters"));
    let (b, encrypt_public) = count(|| pk.encrypt_with(&pt, &mut rng).expect("same parameters"));
    let (_, decrypt) = count(|| sk.decrypt(&a).expect("same parameters"));
    let (_, add) = count(|| ev.add(&a, &b).expect("same level"));
    let (ab, multiply) = count(|| ev.multiply(&a, &b).expect("top level"));
    let (_, relinearize) = count(|| ev.relinearize(&ab, &rk).expect("size 3"));
    let (_, multiply_relin) = count(|| ev.multiply_relin(&a, &b, &rk).expect("top level"));
    let (_, multiply_plain) = count(|| ev.multiply_plain(&a, &pt).expect("same parameters"));
    vec![
        ("keygen", keygen),
        ("keygen_secret", keygen_secret),
        ("keygen_public", keygen_public),
        ("keygen_relin", keygen_relin),
        ("encode", encode),
        ("encrypt_secret", encrypt_secret),
        ("encrypt_public", encrypt_public),
        ("decrypt", decrypt),
        ("decode", decode),
        ("add", add),
        ("multiply", multiply),
        ("relinearize", relinearize),
        ("multiply_relin", multiply_relin),
        ("multiply_plain", multiply_plain),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bfv::Params;

    /// The numbers at auth4096 (three primes in Q, one special prime P), with
    /// where each comes from. A change to one of them is a change to the
    /// floor of that operation's time: update the table only on purpose.
    #[test]
    fn transforms_per_operation_at_auth4096() {
        let t = |forward, inverse| Transforms { forward, inverse };
        let want = [
            // s over Q; e of the public key over Q (a is drawn in NTT form).
            ("keygen", t(6, 0)),
            ("keygen_secret", t(3, 0)),
            ("keygen_public", t(3, 0)),
            // s over P, then e of each of the three digits over Q·P.
            ("keygen_relin", t(13, 0)),
            // One inverse transform mod t (slots to coefficients) and back.
            ("encode", t(0, 1)),
            ("encrypt_secret", t(3, 0)),
            // u, e0 and e1 over Q.
            ("encrypt_public", t(9, 0)),
            // The phase back to coefficients over Q.
            ("decrypt", t(0, 3)),
            ("decode", t(1, 0)),
            ("add", t(0, 0)),
            // The direct product (Q = 1 mod t): pointwise over Q, no transform.
            ("multiply", t(0, 0)),
            ("relinearize", t(15, 5)),
            // Relinearization's alone.
            ("multiply_relin", t(15, 5)),
            // The plaintext to NTT form over Q.
            ("multiply_plain", t(3, 0)),
        ];
        let auth4096 = Params::auth4096();
        assert_eq!(per_operation(&auth4096), want);
        // The same shape with a Q that is not 1 mod t multiplies through the
        // auxiliary base: inputs to coefficients (12), extended to the four
        // primes of B (16), the tensor back (3 × 7), the result over Q (9);
        // fused with relinearization, d2 skips its round trip.
        let q = [536_813_569, 536_690_689, 536_641_537];
        assert_ne!(q.iter().fold(1, |acc, x| acc * (x % 65537) % 65537), 1);
        let scaled = Params::builder()
            .degree(4096)
            .plaintext_modulus(65537)
            .batching(true)
            .ciphertext_primes(&q)
            .special_prime(auth4096.special_prime() as u64)
            .build()
            .unwrap();
        let products: Vec<_> = per_operation(&scaled)
            .into_iter()
            .filter(|(name, _)| name.starts_with("multiply") && *name != "multiply_plain")
            .collect();
        assert_eq!(
            products,
            [("multiply", t(25, 33)), ("multiply_relin", t(34, 35))]
        );
    }

    /// Counting sees transforms made through every entry point of a plan.
    #[test]
    fn count_sees_each_transform() {
        let q = crate::arith::ntt_primes(29, 1024, 1).unwrap()[0];
        let plan = crate::NttPlan::new(1024, q as u64).unwrap();
        let mut a = vec![1u32; 1024];
        let ((), n) = count(|| {
            plan.forward(&mut a);
            plan.inverse(&mut a);
            plan.inverse_scaled(&mut a, 3);
        });
        assert_eq!(
            n,
            Transforms {
                forward: 1,
                inverse: 2
            }
        );
        let ((), none) = count(|| plan.multiply_pointwise(&a.clone(), &a.clone(), &mut a));
        assert_eq!(none, Transforms::default());
    }
}
