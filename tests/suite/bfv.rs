//! BFV: parameter gates, round trips and homomorphic identities against an
//! i64 reference mod t.

use super::oracle::Rng;
use blindmatch::bfv::{
    params::{max_modulus_bits, SECURITY_128},
    BatchEncoder, CoefficientEncoder, Evaluator, Params, Prng, PublicKey, SecretKey,
};
use blindmatch::{arith::ntt_primes, ParamsError};

fn seeded(tag: u8) -> Prng {
    Prng::from_seed([tag; 32])
}

fn random_values(rng: &mut Rng, n: usize, t: u32) -> Vec<i64> {
    (0..n)
        .map(|_| rng.below(t) as i64 - (t / 2) as i64)
        .collect()
}

fn modt(v: i64, t: u32) -> i64 {
    let t = t as i64;
    let r = v.rem_euclid(t);
    if r > t / 2 {
        r - t
    } else {
        r
    }
}

/// Primes of exactly `bits` bits for degree n, as u64.
fn primes(bits: u32, n: usize, count: usize) -> Vec<u64> {
    ntt_primes(bits, n, count)
        .unwrap()
        .into_iter()
        .map(u64::from)
        .collect()
}

suite_test! {
    fn security_gate_edge_at_4096() {
        // 109 bits accepted, 110 refused (SEAL's count: sum of prime bit lengths).
        let q = primes(29, 4096, 3);
        let ok = Params::builder().degree(4096).plaintext_modulus(65537)
            .ciphertext_primes(&q).special_prime(primes(22, 4096, 1)[0]).build();
        assert_eq!(ok.unwrap().modulus_bits(), 109);
        let bad = Params::builder().degree(4096).plaintext_modulus(65537)
            .ciphertext_primes(&q).special_prime(primes(23, 4096, 1)[0]).build();
        assert_eq!(bad.unwrap_err(), ParamsError::Insecure { n: 4096, bits: 110, max_bits: 109 });
    }

    fn security_gate_every_row() {
        // For each row: prime sizes (Q..., P) that sum to the bound exactly, and
        // sizes one bit over. n = 1024 has no NTT primes of 12 or 13 bits and
        // only one of 14, so no pair sums to 27 or 28 bits: there the smallest
        // pair over the bound (14 + 15) is checked.
        type Row<'a> = (usize, Option<&'a [u32]>, &'a [u32]);
        let rows: [Row; 5] = [
            (1024, None, &[14, 15]),
            (2048, Some(&[27, 27]), &[27, 28]),
            (4096, Some(&[29, 29, 29, 22]), &[29, 29, 29, 23]),
            (8192, Some(&[30, 30, 30, 30, 30, 30, 18, 20]), &[30, 30, 30, 30, 30, 30, 18, 21]),
            (16384, Some(&[30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 24, 24]),
                    &[30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 24, 25]),
        ];
        let build = |n: usize, sizes: &[u32]| {
            // Distinct primes: the k-th prime of a size for its k-th use.
            let mut used = std::collections::HashMap::new();
            let all: Vec<u64> = sizes.iter().map(|&b| {
                let k = used.entry(b).or_insert(0usize);
                *k += 1;
                let p = primes(b, n, *k)[*k - 1];
                assert_eq!(64 - p.leading_zeros(), b, "no {k}-th {b}-bit NTT prime for n={n}");
                p
            }).collect();
            let (p, q) = all.split_last().unwrap();
            Params::builder().degree(n).plaintext_modulus(65537).ciphertext_primes(q).special_prime(*p).build()
        };
        assert_eq!(SECURITY_128.len(), rows.len());
        for (&(n, max), (rn, ok, over)) in SECURITY_128.iter().zip(rows) {
            assert_eq!(n, rn);
            assert_eq!(max_modulus_bits(n), Some(max));
            if let Some(ok) = ok {
                assert_eq!(ok.iter().sum::<u32>(), max);
                assert_eq!(build(n, ok).unwrap().modulus_bits(), max, "n={n}");
            }
            let bits = over.iter().sum::<u32>();
            assert!(bits == max + 1 || n == 1024);
            assert_eq!(build(n, over).unwrap_err(), ParamsError::Insecure { n, bits, max_bits: max });
        }
        assert_eq!(max_modulus_bits(32768), None);
    }

    fn plaintext_modulus_is_checked() {
        let q = primes(29, 4096, 3);
        let p = primes(22, 4096, 1)[0];
        let b = |t: u64, batching: bool| Params::builder().degree(4096).plaintext_modulus(t)
            .batching(batching).ciphertext_primes(&q).special_prime(p).build();
        assert!(b(65537, true).is_ok());
        assert!(matches!(b(65536, true), Err(ParamsError::PlaintextModulus { t: 65536, .. })));
        assert!(matches!(b(12289, true), Err(ParamsError::PlaintextModulus { t: 12289, .. }))); // prime, not 1 mod 8192
        assert!(b(12289, false).is_ok()); // fine without batching
        assert!(matches!(b(1, false), Err(ParamsError::PlaintextModulus { .. })));
        assert!(matches!(b(1 << 30, false), Err(ParamsError::PlaintextModulus { .. })));
        assert!(matches!(Params::builder().degree(4096).build(), Err(ParamsError::Missing { .. })));
    }

    fn round_trips_secret_and_public_key() {
        let params = Params::auth4096();
        let t = params.plaintext_modulus();
        let n = params.degree();
        let mut rng = Rng::new(10);
        let sk = SecretKey::generate(&params).unwrap();
        let pk = PublicKey::new(&sk).unwrap();
        let coeff = CoefficientEncoder::new(&params);
        let batch = BatchEncoder::new(&params).unwrap();
        for round in 0..3 {
            let v = random_values(&mut rng, n, t);
            let pt = coeff.encode(&v).unwrap();
            // Unseeded (OS RNG) and seeded generators, secret and public key.
            let mut prng = seeded(round);
            for ct in [sk.encrypt(&pt).unwrap(), sk.encrypt_with(&pt, &mut prng).unwrap(),
                       pk.encrypt(&pt).unwrap(), pk.encrypt_with(&pt, &mut prng).unwrap()] {
                assert_eq!(coeff.decode(&sk.decrypt(&ct).unwrap()).unwrap(), v);
            }
            let pt = batch.encode(&v).unwrap();
            assert_eq!(batch.decode(&pt).unwrap(), v);
            let ct = pk.encrypt(&pt).unwrap();
            assert_eq!(batch.decode(&sk.decrypt(&ct).unwrap()).unwrap(), v);
        }
        // Short inputs are zero-padded; extreme values round-trip.
        let edge = [-(t as i64 / 2), t as i64 / 2, 0, 1, -1];
        let ct = sk.encrypt(&coeff.encode(&edge).unwrap()).unwrap();
        let back = coeff.decode(&sk.decrypt(&ct).unwrap()).unwrap();
        assert_eq!(&back[..5], &edge);
        assert!(back[5..].iter().all(|&x| x == 0));
    }

    fn homomorphic_add_sub_multiply_plain() {
        let params = Params::auth4096();
        let t = params.plaintext_modulus();
        let n = params.degree();
        let mut rng = Rng::new(11);
        let mut prng = seeded(42);
        let sk = SecretKey::generate_with(&params, &mut prng);
        let pk = PublicKey::new_with(&sk, &mut prng);
        let ev = Evaluator::new(&params);
        let batch = BatchEncoder::new(&params).unwrap();
        let coeff = CoefficientEncoder::new(&params);
        let a = random_values(&mut rng, n, t);
        let b = random_values(&mut rng, n, t);
        let ca = sk.encrypt_with(&batch.encode(&a).unwrap(), &mut prng).unwrap();
        let cb = pk.encrypt_with(&batch.encode(&b).unwrap(), &mut prng).unwrap();
        let dec = |ct: &blindmatch::bfv::Ciphertext| batch.decode(&sk.decrypt(ct).unwrap()).unwrap();
        let want: Vec<i64> = a.iter().zip(&b).map(|(x, y)| modt(x + y, t)).collect();
        assert_eq!(dec(&ev.add(&ca, &cb).unwrap()), want);
        let want: Vec<i64> = a.iter().zip(&b).map(|(x, y)| modt(x - y, t)).collect();
        assert_eq!(dec(&ev.sub(&ca, &cb).unwrap()), want);
        let mut neg = ca.clone();
        ev.negate_assign(&mut neg).unwrap();
        assert_eq!(dec(&neg), a.iter().map(|x| modt(-x, t)).collect::<Vec<_>>());
        let mut ap = ca.clone();
        ev.add_plain_assign(&mut ap, &batch.encode(&b).unwrap()).unwrap();
        assert_eq!(dec(&ap), a.iter().zip(&b).map(|(x, y)| modt(x + y, t)).collect::<Vec<_>>());
        // Slot-wise product.
        let prod = ev.multiply_plain(&ca, &batch.encode(&b).unwrap()).unwrap();
        assert_eq!(dec(&prod), a.iter().zip(&b).map(|(x, y)| modt(x * y, t)).collect::<Vec<_>>());
        // Coefficient product is a negacyclic convolution mod t.
        let small_a: Vec<i64> = (0..n).map(|_| rng.below(201) as i64 - 100).collect();
        let small_b: Vec<i64> = (0..n).map(|_| rng.below(201) as i64 - 100).collect();
        let ct = sk.encrypt_with(&coeff.encode(&small_a).unwrap(), &mut prng).unwrap();
        let got = coeff.decode(&sk.decrypt(&ev.multiply_plain(&ct, &coeff.encode(&small_b).unwrap()).unwrap()).unwrap()).unwrap();
        let mut want = vec![0i64; n];
        for i in 0..n {
            for j in 0..n {
                let p = small_a[i] * small_b[j];
                if i + j < n { want[i + j] += p } else { want[i + j - n] -= p }
            }
        }
        let want: Vec<i64> = want.into_iter().map(|v| modt(v, t)).collect();
        assert_eq!(got, want);
    }

    fn mismatched_parameters_are_refused() {
        let a = Params::auth4096();
        let q = primes(28, 4096, 3);
        let b = Params::builder().degree(4096).plaintext_modulus(65537).batching(true)
            .ciphertext_primes(&q).special_prime(primes(24, 4096, 1)[0]).build().unwrap();
        assert_ne!(a.id(), b.id());
        let sk_a = SecretKey::generate(&a).unwrap();
        let pt_b = CoefficientEncoder::new(&b).encode(&[1, 2, 3]).unwrap();
        assert!(matches!(sk_a.encrypt(&pt_b), Err(blindmatch::BfvError::ParamsMismatch { .. })));
    }

    fn keys_differ_and_secrets_stay_out_of_debug() {
        let params = Params::auth4096();
        let a = SecretKey::generate(&params).unwrap();
        let b = SecretKey::generate(&params).unwrap();
        let ct_a = a.encrypt(&CoefficientEncoder::new(&params).encode(&[7]).unwrap()).unwrap();
        // A different key does not decrypt it.
        assert_ne!(CoefficientEncoder::new(&params).decode(&b.decrypt(&ct_a).unwrap()).unwrap()[0], 7);
        let dbg = format!("{a:?}");
        assert!(dbg.starts_with("SecretKey") && dbg.len() < 64, "{dbg}");
    }
}

/// Pearson chi-square statistic of observed counts against equal expectation.
fn chi_square(counts: &[u64]) -> f64 {
    let total: u64 = counts.iter().sum();
    let e = total as f64 / counts.len() as f64;
    counts.iter().map(|&c| (c as f64 - e).powi(2) / e).sum()
}

suite_test! {
    fn samplers_have_the_stated_distributions() {
        use blindmatch::bfv::sample::{fill_cbd, fill_ternary, uniform, CBD_K};
        let mut rng = seeded(9);
        const N: usize = 300_000;
        // Ternary: -1, 0, 1 equally likely. 2 degrees of freedom: the 99.99%
        // quantile is 18.4.
        let mut counts = [0u64; 3];
        let mut trits = vec![0i8; N];
        fill_ternary(&mut rng, &mut trits);
        for &t in &trits {
            counts[(t + 1) as usize] += 1;
        }
        // Consecutive values are independent: pairs are uniform over 9 cells
        // (8 d.o.f.: the 99.99% quantile is 31.8).
        let mut pairs = [0u64; 9];
        for w in trits.chunks(2) {
            pairs[((w[0] + 1) * 3 + (w[1] + 1)) as usize] += 1;
        }
        assert!(chi_square(&pairs) < 31.8, "ternary pairs {pairs:?}");
        assert!(chi_square(&counts) < 18.4, "ternary {counts:?}");
        // Centred binomial: mean 0, variance k/2 = 10.5, support [-k, k].
        let (mut sum, mut sq) = (0f64, 0f64);
        let mut errs = vec![0i8; N];
        fill_cbd(&mut rng, &mut errs);
        for &e in &errs {
            let e = e as f64;
            assert!(e.abs() <= CBD_K as f64);
            sum += e;
            sq += e * e;
        }
        let mean = sum / N as f64;
        let var = sq / N as f64 - mean * mean;
        assert!(mean.abs() < 0.03, "cbd mean {mean}");
        assert!((var - 10.5).abs() < 0.15, "cbd variance {var}");
        // Uniform residues mod each prime of the preset, in 64 buckets
        // (63 d.o.f.: the 99.99% quantile is 117.6).
        let params = Params::auth4096();
        for &q in params.ciphertext_primes().iter().chain([params.special_prime()].iter()) {
            let mut buckets = [0u64; 64];
            for _ in 0..N / 4 {
                let x = uniform(&mut rng, q);
                assert!(x < q);
                buckets[(x as u64 * 64 / q as u64) as usize] += 1;
            }
            assert!(chi_square(&buckets) < 117.6, "uniform mod {q}: {buckets:?}");
        }
    }
}

suite_test! {
    fn fresh_noise_budget_is_large() {
        // Q = 87 bits, t = 17 bits: a fresh ciphertext has about 87 - 17 - 1 -
        // log2(fresh noise) bits of budget. SEAL measures 64 for this shape.
        let params = Params::auth4096();
        let mut prng = seeded(3);
        let sk = SecretKey::generate_with(&params, &mut prng);
        let pk = PublicKey::new_with(&sk, &mut prng);
        let pt = CoefficientEncoder::new(&params).encode(&[1, 2, 3]).unwrap();
        let b_sk = sk.noise_budget(&sk.encrypt_with(&pt, &mut prng).unwrap()).unwrap();
        let b_pk = sk.noise_budget(&pk.encrypt_with(&pt, &mut prng).unwrap()).unwrap();
        eprintln!("fresh noise budget: secret key {b_sk:.1} bits, public key {b_pk:.1} bits");
        assert!(b_sk > 60.0 && b_sk < 70.0, "{b_sk}");
        assert!(b_pk > 55.0 && b_pk < b_sk, "{b_pk}");
        // After one ciphertext product of worst-case packed inputs (every
        // coefficient ±175, the quantizer's largest magnitude). SEAL measures
        // 37 bits for this shape.
        let coeff = CoefficientEncoder::new(&params);
        let n = params.degree();
        let x: Vec<i64> = (0..n).map(|i| if i % 3 == 0 { -175 } else { 175 }).collect();
        let cx = sk.encrypt_with(&coeff.encode(&x).unwrap(), &mut prng).unwrap();
        let cy = pk.encrypt_with(&coeff.encode(&x).unwrap(), &mut prng).unwrap();
        let prod = Evaluator::new(&params).multiply(&cx, &cy).unwrap();
        let b_mul = sk.noise_budget(&prod).unwrap();
        eprintln!("noise budget after multiply: {b_mul:.1} bits");
        let mut r = Rng::new(1);
        let xr: Vec<i64> = (0..n).map(|_| r.below(351) as i64 - 175).collect();
        let cx = sk.encrypt_with(&coeff.encode(&xr).unwrap(), &mut prng).unwrap();
        let cy = pk.encrypt_with(&coeff.encode(&xr).unwrap(), &mut prng).unwrap();
        let prod = Evaluator::new(&params).multiply(&cx, &cy).unwrap();
        let b_rand = sk.noise_budget(&prod).unwrap();
        eprintln!("noise budget after multiply (random ±175): {b_rand:.1} bits");
        assert!(b_rand > 27.0, "{b_rand}");
        // Measured about 30 bits (it varies by a bit with the seed); the
        // matching circuits need far less than the 27 asserted here.
        assert!(b_mul > 27.0, "{b_mul}");
    }
}

suite_test! {
    fn multiply_matches_reference_and_decrypts_at_size_three() {
        let params = Params::auth4096();
        let t = params.plaintext_modulus();
        let n = params.degree();
        let mut rng = Rng::new(12);
        let mut prng = seeded(77);
        let sk = SecretKey::generate_with(&params, &mut prng);
        let pk = PublicKey::new_with(&sk, &mut prng);
        let ev = Evaluator::new(&params);
        let batch = BatchEncoder::new(&params).unwrap();
        let a = random_values(&mut rng, n, t);
        let b = random_values(&mut rng, n, t);
        let ca = sk.encrypt_with(&batch.encode(&a).unwrap(), &mut prng).unwrap();
        let cb = pk.encrypt_with(&batch.encode(&b).unwrap(), &mut prng).unwrap();
        let prod = ev.multiply(&ca, &cb).unwrap();
        assert_eq!(prod.size(), 3);
        let want: Vec<i64> = a.iter().zip(&b).map(|(x, y)| modt(x * y, t)).collect();
        assert_eq!(batch.decode(&sk.decrypt(&prod).unwrap()).unwrap(), want);
        // Coefficient packing: the product is the negacyclic convolution mod t.
        let coeff = CoefficientEncoder::new(&params);
        let x: Vec<i64> = (0..n).map(|_| rng.below(351) as i64 - 175).collect();
        let y: Vec<i64> = (0..n).map(|_| rng.below(351) as i64 - 175).collect();
        let cx = sk.encrypt_with(&coeff.encode(&x).unwrap(), &mut prng).unwrap();
        let cy = sk.encrypt_with(&coeff.encode(&y).unwrap(), &mut prng).unwrap();
        let got = coeff.decode(&sk.decrypt(&ev.multiply(&cx, &cy).unwrap()).unwrap()).unwrap();
        let mut want = vec![0i64; n];
        for i in 0..n {
            for j in 0..n {
                let p = x[i] * y[j];
                if i + j < n { want[i + j] += p } else { want[i + j - n] -= p }
            }
        }
        let want: Vec<i64> = want.into_iter().map(|v| modt(v, t)).collect();
        assert_eq!(got, want);
    }
}

suite_test! {
    fn relinearize_and_rotate_match_reference() {
        use blindmatch::bfv::{GaloisKeys, RelinKey};
        let params = Params::auth4096();
        let t = params.plaintext_modulus();
        let n = params.degree();
        let half = n / 2;
        let mut rng = Rng::new(13);
        let mut prng = seeded(88);
        let sk = SecretKey::generate_with(&params, &mut prng);
        let rk = RelinKey::new_with(&sk, &mut prng);
        let gk = GaloisKeys::new_with(&sk, &[1, -1, 5], &mut prng).unwrap();
        let ev = Evaluator::new(&params);
        let batch = BatchEncoder::new(&params).unwrap();
        let a = random_values(&mut rng, n, t);
        let b = random_values(&mut rng, n, t);
        let ca = sk.encrypt_with(&batch.encode(&a).unwrap(), &mut prng).unwrap();
        let cb = sk.encrypt_with(&batch.encode(&b).unwrap(), &mut prng).unwrap();
        let dec = |ct: &blindmatch::bfv::Ciphertext| batch.decode(&sk.decrypt(ct).unwrap()).unwrap();
        let prod = ev.multiply_relin(&ca, &cb, &rk).unwrap();
        assert_eq!(prod.size(), 2);
        let want: Vec<i64> = a.iter().zip(&b).map(|(x, y)| modt(x * y, t)).collect();
        assert_eq!(dec(&prod), want);
        let budget = sk.noise_budget(&prod).unwrap();
        eprintln!("noise budget after multiply + relinearize: {budget:.1} bits");
        assert!(budget > 25.0, "{budget}");
        // The fused call is exactly multiply, then relinearize.
        let two_step = ev.relinearize(&ev.multiply(&ca, &cb).unwrap(), &rk).unwrap();
        assert_eq!(two_step, prod);
        // A prepared first factor gives the very same ciphertexts.
        let prepared = ev.prepare_multiplicand(&ca).unwrap();
        assert_eq!(prepared.ciphertext(), &ca);
        assert_eq!(ev.multiply_relin_prepared(&prepared, &cb, &rk).unwrap(), prod);
        assert_eq!(ev.multiply_prepared(&prepared, &cb).unwrap(), ev.multiply(&ca, &cb).unwrap());
        // A square extends its one factor once: the same ciphertext as the
        // product of two copies.
        let square = ev.multiply_relin(&ca, &ca, &rk).unwrap();
        assert_eq!(square, ev.multiply_relin(&ca, &ca.clone(), &rk).unwrap());
        assert_eq!(dec(&square), a.iter().map(|x| modt(x * x, t)).collect::<Vec<_>>());
        // Multiplying straight down to fewer primes gives the same message.
        for limbs in [3, 2] {
            let c = ev.multiply_prepared_to(&prepared, &cb, Some(&rk), limbs).unwrap();
            assert_eq!((c.size(), c.level()), (2, limbs));
            assert_eq!(dec(&c), want, "relinearized, {limbs} primes");
            let c3 = ev.multiply_prepared_to(&prepared, &cb, None, limbs).unwrap();
            assert_eq!((c3.size(), c3.level()), (3, limbs));
            assert_eq!(dec(&c3), want, "size 3, {limbs} primes");
        }
        for limbs in [0, 4] {
            assert!(matches!(
                ev.multiply_prepared_to(&prepared, &cb, Some(&rk), limbs),
                Err(blindmatch::BfvError::LevelMismatch { .. })
            ));
        }
        assert!(ev.prepare_multiplicand(&prod.clone()).is_ok());
        assert!(matches!(
            ev.prepare_multiplicand(&ev.multiply(&ca, &cb).unwrap()),
            Err(blindmatch::BfvError::CiphertextSize { .. })
        ));
        // Rows rotate left by `step`; columns swap rows.
        let rotated = |v: &[i64], step: i64| -> Vec<i64> {
            let h = half as i64;
            (0..n)
                .map(|i| {
                    let (row, k) = (i / half, (i % half) as i64);
                    v[row * half + (k + step).rem_euclid(h) as usize]
                })
                .collect()
        };
        for step in [1i32, -1, 5] {
            assert_eq!(dec(&ev.rotate_rows(&ca, step, &gk).unwrap()), rotated(&a, step as i64), "step {step}");
        }
        let swapped: Vec<i64> = (0..n).map(|i| a[(i + half) % n]).collect();
        assert_eq!(dec(&ev.rotate_columns(&ca, &gk).unwrap()), swapped);
        // A rotation without its key is a typed error.
        assert!(matches!(ev.rotate_rows(&ca, 2, &gk), Err(blindmatch::BfvError::MissingGaloisKey { .. })));
        // Rotating a product (after relinearization) still works.
        assert_eq!(dec(&ev.rotate_rows(&prod, 1, &gk).unwrap()), rotated(&want, 1));
    }
}

suite_test! {
    fn modulus_switching_keeps_the_message() {
        let params = Params::auth4096();
        let t = params.plaintext_modulus();
        let n = params.degree();
        let mut rng = Rng::new(14);
        let mut prng = seeded(99);
        let sk = SecretKey::generate_with(&params, &mut prng);
        let ev = Evaluator::new(&params);
        let batch = BatchEncoder::new(&params).unwrap();
        let a = random_values(&mut rng, n, t);
        let b = random_values(&mut rng, n, t);
        let ca = sk.encrypt_with(&batch.encode(&a).unwrap(), &mut prng).unwrap();
        let cb = sk.encrypt_with(&batch.encode(&b).unwrap(), &mut prng).unwrap();
        let prod = ev.multiply(&ca, &cb).unwrap();
        let want: Vec<i64> = a.iter().zip(&b).map(|(x, y)| modt(x * y, t)).collect();
        // The product still decrypts over two primes (58 bits); a fresh
        // ciphertext, with far less noise, even over one (29 bits).
        let before = sk.noise_budget(&prod).unwrap();
        let down = ev.mod_switch_to(&prod, 2).unwrap();
        assert_eq!(down.level(), 2);
        assert!(batch.decode(&sk.decrypt(&down).unwrap()).unwrap() == want, "product at 2 primes");
        let after = sk.noise_budget(&down).unwrap();
        eprintln!("product: {before:.1} bits over 3 primes, {after:.1} over 2");
        assert!(after > 0.5 && after < before, "{after}");
        let one = ev.mod_switch_to(&ca, 1).unwrap();
        assert_eq!(one.level(), 1);
        assert!(batch.decode(&sk.decrypt(&one).unwrap()).unwrap() == a, "fresh at 1 prime");
        eprintln!("fresh: {:.1} bits over 1 prime", sk.noise_budget(&one).unwrap());
        assert!(ev.mod_switch_to(&prod, 0).is_err());
        assert!(ev.mod_switch_to_next(&ev.mod_switch_to(&prod, 1).unwrap()).is_err());
    }
}

suite_test! {
    fn decrypting_selected_coefficients_matches_full_decryption() {
        let params = Params::auth4096();
        let mut rng = Rng::new(15);
        let mut prng = seeded(15);
        let sk = SecretKey::generate_with(&params, &mut prng);
        let coeff = CoefficientEncoder::new(&params);
        let v = random_values(&mut rng, params.degree(), params.plaintext_modulus());
        let ct = sk.encrypt_with(&coeff.encode(&v).unwrap(), &mut prng).unwrap();
        let full = sk.decrypt(&ct).unwrap();
        let positions = [0usize, 1, 127, 128, 4095, 2048, 7];
        let some = sk.decrypt_coefficients(&ct, &positions).unwrap();
        for (&p, &x) in positions.iter().zip(&some) {
            assert_eq!(x, full.coeffs()[p], "position {p}");
        }
        assert!(sk.decrypt_coefficients(&ct, &[4096]).is_err());
    }
}

suite_test! {
    fn add_plain_works_at_every_level() {
        let params = Params::auth4096();
        let t = params.plaintext_modulus();
        let mut rng = Rng::new(16);
        let mut prng = seeded(16);
        let sk = SecretKey::generate_with(&params, &mut prng);
        let ev = Evaluator::new(&params);
        let batch = BatchEncoder::new(&params).unwrap();
        let a = random_values(&mut rng, params.degree(), t);
        let b = random_values(&mut rng, params.degree(), t);
        let ct = sk.encrypt_with(&batch.encode(&a).unwrap(), &mut prng).unwrap();
        let want: Vec<i64> = a.iter().zip(&b).map(|(x, y)| modt(x + y, t)).collect();
        for limbs in (1..=params.limbs()).rev() {
            let mut c = ev.mod_switch_to(&ct, limbs).unwrap();
            ev.add_plain_assign(&mut c, &batch.encode(&b).unwrap()).unwrap();
            assert!(batch.decode(&sk.decrypt(&c).unwrap()).unwrap() == want, "at {limbs} primes");
        }
    }
}
