//! The wire format (docs/FORMAT.md): round trips of every object, seeded =
//! expanded forms, known-answer bytes (one constant for x86_64, aarch64 and
//! wasm32), exact sizes at auth4096, truncations and out-of-range residues.
//! The bad-input corpus of `tests/data/bad/` is in `bad_corpus.rs`.

use blindmatch::bfv::{
    BatchEncoder, Ciphertext, Evaluator, GaloisKeys, ObjectKind, Params, Plaintext, Prng,
    PublicKey, RelinKey, SecretKey, HEADER_LEN, MAX_GALOIS_KEYS,
};
use blindmatch::error::FormatError;

use super::known_answers::{fnv1a, SEEDED_OBJECTS};

fn batch_values(n: usize, salt: i64) -> Vec<i64> {
    (0..n as i64)
        .map(|i| (i * 37 + salt) % 1000 - 500)
        .collect()
}

fn truncated_at(len: usize) -> impl Fn(&FormatError) -> bool {
    move |e| matches!(e, FormatError::Truncated { actual, .. } if *actual == len as u64)
}

/// Every prefix in `lens` of `bytes` fails with `Truncated`, never a panic.
fn check_prefixes(
    what: &str,
    bytes: &[u8],
    lens: impl Iterator<Item = usize>,
    load: impl Fn(&[u8]) -> Result<(), FormatError>,
) {
    for len in lens {
        let err = load(&bytes[..len]).unwrap_err();
        assert!(truncated_at(len)(&err), "{what} cut at {len}: {err:?}");
    }
}

/// The first 64 prefixes, then every `step`-th, then the last 64.
fn prefix_lens(total: usize, step: usize) -> impl Iterator<Item = usize> {
    (0..64.min(total))
        .chain((64..total).step_by(step))
        .chain(total.saturating_sub(64)..total)
}

/// Overwrites the `bits`-bit value at `index` of a packed limb that starts
/// at byte `start` (LSB-first packing, as docs/FORMAT.md says).
fn poke(bytes: &mut [u8], start: usize, bits: u32, index: usize, value: u32) {
    for b in 0..bits as usize {
        let bit = index * bits as usize + b;
        let (byte, shift) = (start + bit / 8, bit % 8);
        bytes[byte] &= !(1 << shift);
        bytes[byte] |= (((value >> b) & 1) as u8) << shift;
    }
}

pub(super) fn bit_len(q: u32) -> u32 {
    32 - q.leading_zeros()
}

suite_test! {
    fn secret_key_round_trip() {
        let params = Params::auth4096();
        let mut prng = Prng::from_seed([1; 32]);
        let sk = SecretKey::generate_with(&params, &mut prng);
        let bytes = sk.to_bytes();
        assert_eq!(bytes.len(), HEADER_LEN + params.degree() / 4);
        let back = SecretKey::from_bytes(&params, &bytes).unwrap();
        assert_eq!(back.to_bytes(), bytes);
        // The loaded key decrypts what the original encrypted, and back.
        let batch = BatchEncoder::new(&params).unwrap();
        let v = batch_values(params.degree(), 1);
        let pt = batch.encode(&v).unwrap();
        let ct = sk.encrypt_with(&pt, &mut prng).unwrap();
        assert_eq!(batch.decode(&back.decrypt(&ct).unwrap()).unwrap(), v);
        let ct = back.encrypt_with(&pt, &mut prng).unwrap();
        assert_eq!(batch.decode(&sk.decrypt(&ct).unwrap()).unwrap(), v);
    }

    fn public_key_round_trip_seeded_and_expanded() {
        let params = Params::auth4096();
        let mut prng = Prng::from_seed([2; 32]);
        let sk = SecretKey::generate_with(&params, &mut prng);
        let pk = PublicKey::new_with(&sk, &mut prng);
        let seeded = pk.to_bytes();
        let expanded = pk.to_bytes_expanded();
        assert_eq!([seeded.len(), expanded.len()], [44_592, 89_104]);
        let from_seeded = PublicKey::from_bytes(&params, &seeded).unwrap();
        assert_eq!(from_seeded, pk);
        assert_eq!(from_seeded.to_bytes(), seeded);
        // The seed expands to exactly the polynomial that was generated.
        let from_expanded = PublicKey::from_bytes(&params, &expanded).unwrap();
        assert_eq!(from_seeded.to_bytes_expanded(), expanded);
        assert_eq!(from_expanded.to_bytes(), expanded);
        let batch = BatchEncoder::new(&params).unwrap();
        let v = batch_values(params.degree(), 2);
        for key in [&from_seeded, &from_expanded] {
            let ct = key.encrypt_with(&batch.encode(&v).unwrap(), &mut prng).unwrap();
            assert!(!ct.is_seeded(), "public-key ciphertexts are never seeded");
            assert_eq!(batch.decode(&sk.decrypt(&ct).unwrap()).unwrap(), v);
        }
    }

    fn plaintext_round_trip() {
        let params = Params::auth4096();
        let t = params.plaintext_modulus();
        let coeffs: Vec<u32> = (0..params.degree() as u32).map(|i| (i * 7919) % t).collect();
        let mut coeffs = coeffs;
        coeffs[0] = t - 1;
        let pt = Plaintext::from_coeffs(&params, &coeffs).unwrap();
        let bytes = pt.to_bytes();
        assert_eq!(bytes.len(), HEADER_LEN + params.degree() * 17 / 8);
        assert_eq!(Plaintext::from_bytes(&params, &bytes).unwrap(), pt);
    }

    fn ciphertext_round_trips_at_every_shape() {
        let params = Params::auth4096();
        let mut prng = Prng::from_seed([3; 32]);
        let sk = SecretKey::generate_with(&params, &mut prng);
        let pk = PublicKey::new_with(&sk, &mut prng);
        let ev = Evaluator::new(&params);
        let batch = BatchEncoder::new(&params).unwrap();
        let v = batch_values(params.degree(), 3);
        let pt = batch.encode(&v).unwrap();
        let fresh = sk.encrypt_with(&pt, &mut prng).unwrap();
        assert!(fresh.is_seeded());
        let by_pk = pk.encrypt_with(&pt, &mut prng).unwrap();
        let small = batch.encode(&[3, -2, 1]).unwrap();
        let product = ev.multiply(&fresh, &sk.encrypt_with(&small, &mut prng).unwrap()).unwrap();
        assert_eq!(product.size(), 3);
        let switched = ev.mod_switch_to(&by_pk, 1).unwrap();
        // A seeded encryption over one prime (as a re-randomizer would use).
        for (name, ct) in [("seeded", &fresh), ("public-key", &by_pk), ("size 3", &product),
                           ("one limb", &switched)] {
            let want = sk.decrypt(ct).unwrap();
            for bytes in [ct.to_bytes(), ct.to_bytes_expanded()] {
                let back = Ciphertext::from_bytes(&params, &bytes).unwrap();
                let back_u = Ciphertext::from_bytes_untrusted(&params, &bytes).unwrap();
                assert_eq!(back, back_u);
                assert_eq!((back.size(), back.level()), (ct.size(), ct.level()), "{name}");
                assert_eq!(back.to_bytes(), bytes, "{name}");
                assert_eq!(back.to_bytes_expanded(), ct.to_bytes_expanded(), "{name}");
                assert_eq!(sk.decrypt(&back).unwrap(), want, "{name}");
            }
        }
        // Seeded = expanded: the seeded form loads to the very same object.
        assert_eq!(Ciphertext::from_bytes(&params, &fresh.to_bytes()).unwrap(), fresh);
        assert_eq!(fresh.to_bytes().len(), HEADER_LEN + 2 + 3 * 4096 * 29 / 8 + 32);
        assert_eq!(by_pk.to_bytes().len(), HEADER_LEN + 2 + 2 * 3 * 4096 * 29 / 8);
        assert_eq!(switched.to_bytes().len(), HEADER_LEN + 2 + 2 * 4096 * 29 / 8);
        // The numbers of docs/FORMAT.md.
        assert_eq!([fresh.to_bytes().len(), by_pk.to_bytes().len(), product.to_bytes().len(),
                    switched.to_bytes().len(), fresh.to_bytes_expanded().len()],
                   [44_594, 89_106, 133_650, 29_714, 89_106]);
        assert_eq!(ObjectKind::of(&fresh.to_bytes()).unwrap(), ObjectKind::Ciphertext);
    }

    fn relin_and_galois_keys_round_trip_and_still_work() {
        let params = Params::auth4096();
        let n = params.degree();
        let mut prng = Prng::from_seed([4; 32]);
        let sk = SecretKey::generate_with(&params, &mut prng);
        let rk = RelinKey::new_with(&sk, &mut prng);
        let gk = GaloisKeys::new_with(&sk, &[1], &mut prng).unwrap();
        let rk_bytes = rk.to_bytes();
        let rk_back = RelinKey::from_bytes(&params, &rk_bytes).unwrap();
        assert_eq!(rk_back, rk);
        let rk_full = RelinKey::from_bytes(&params, &rk.to_bytes_expanded()).unwrap();
        assert_eq!(rk_full.to_bytes_expanded(), rk.to_bytes_expanded());
        assert_eq!(rk_back.to_bytes_expanded(), rk.to_bytes_expanded());
        let gk_bytes = gk.to_bytes();
        let gk_back = GaloisKeys::from_bytes(&params, &gk_bytes).unwrap();
        assert_eq!(gk_back, gk);
        assert_eq!(gk_back.to_bytes(), gk_bytes);
        let gk_full = GaloisKeys::from_bytes(&params, &gk.to_bytes_expanded()).unwrap();
        assert_eq!(gk_full.to_bytes_expanded(), gk.to_bytes_expanded());
        assert!(gk_back.has_element(3) && gk_back.has_element(2 * n as u32 - 1));
        // The loaded keys relinearize and rotate (expanded forms too).
        let ev = Evaluator::new(&params);
        let batch = BatchEncoder::new(&params).unwrap();
        let a = batch_values(n, 4);
        let ca = sk.encrypt_with(&batch.encode(&a).unwrap(), &mut prng).unwrap();
        let cb = sk.encrypt_with(&batch.encode(&[2]).unwrap(), &mut prng).unwrap();
        let t = params.plaintext_modulus() as i64;
        let centred = |x: i64| { let r = x.rem_euclid(t); if r > t / 2 { r - t } else { r } };
        let want: Vec<i64> = (0..n).map(|i| if i == 0 { centred(2 * a[0]) } else { 0 }).collect();
        let dec = |ct: &Ciphertext| batch.decode(&sk.decrypt(ct).unwrap()).unwrap();
        let prod = ev.multiply_relin(&ca, &cb, &rk_full).unwrap();
        assert_eq!(dec(&prod), want);
        let half = n / 2;
        let rotated: Vec<i64> = (0..n).map(|i| a[(i / half) * half + (i % half + 1) % half]).collect();
        assert_eq!(dec(&ev.rotate_rows(&ca, 1, &gk_full).unwrap()), rotated);
        let swapped: Vec<i64> = (0..n).map(|i| a[(i + half) % n]).collect();
        assert_eq!(dec(&ev.rotate_columns(&ca, &gk_back).unwrap()), swapped);
        // Sizes at auth4096 (docs/FORMAT.md): one digit = k0 over Q·P + seed.
        let qp_poly = 3 * 4096 * 29 / 8 + 4096 * 22 / 8;
        assert_eq!(rk_bytes.len(), HEADER_LEN + 3 * (qp_poly + 32));
        assert_eq!(rk.to_bytes_expanded().len(), HEADER_LEN + 3 * 2 * qp_poly);
        assert_eq!(gk_bytes.len(), HEADER_LEN + 4 + 2 * (4 + 3 * (qp_poly + 32)));
        assert_eq!([rk_bytes.len(), rk.to_bytes_expanded().len(), gk_bytes.len()],
                   [167_536, 334_864, 335_068]);
    }

    fn known_answer_bytes_are_the_same_on_every_target() {
        // Seeded key generation and encryption: the same bytes on x86_64,
        // aarch64 and wasm32 (this one test runs on all three).
        let params = Params::auth4096();
        // The parameters that docs/FORMAT.md states for auth4096.
        assert_eq!(params.ciphertext_primes(), &[536_813_569, 528_916_481, 501_882_881]);
        assert_eq!(params.special_prime(), 4_169_729);
        assert_eq!(params.id_hex(), "d22069770380e00c");
        let mut prng = Prng::from_seed([42; 32]);
        let sk = SecretKey::generate_with(&params, &mut prng);
        let pk = PublicKey::new_with(&sk, &mut prng);
        let rk = RelinKey::new_with(&sk, &mut prng);
        let t = params.plaintext_modulus();
        let coeffs: Vec<u32> = (0..params.degree() as u32).map(|i| (i * i + 3) % t).collect();
        let pt = Plaintext::from_coeffs(&params, &coeffs).unwrap();
        let ct_sk = sk.encrypt_with(&pt, &mut prng).unwrap();
        let ct_pk = pk.encrypt_with(&pt, &mut prng).unwrap();
        let got = [
            ("secret key", sk.to_bytes()),
            ("public key", pk.to_bytes()),
            ("relin key", rk.to_bytes()),
            ("plaintext", pt.to_bytes()),
            ("secret-key ciphertext", ct_sk.to_bytes()),
            ("public-key ciphertext", ct_pk.to_bytes()),
        ];
        let got: Vec<(&str, usize, u64)> =
            got.iter().map(|(k, b)| (*k, b.len(), fnv1a(b))).collect();
        assert_eq!(got, SEEDED_OBJECTS);
    }

    fn every_prefix_is_truncated_never_a_panic() {
        let params = Params::auth4096();
        let mut prng = Prng::from_seed([5; 32]);
        let sk = SecretKey::generate_with(&params, &mut prng);
        let pk = PublicKey::new_with(&sk, &mut prng);
        let rk = RelinKey::new_with(&sk, &mut prng);
        let pt = Plaintext::from_coeffs(&params, &[1, 2, 3]).unwrap();
        let ct = sk.encrypt_with(&pt, &mut prng).unwrap();
        let b = sk.to_bytes();
        check_prefixes("secret key", &b, 0..b.len(), |x| SecretKey::from_bytes(&params, x).map(drop));
        let b = pt.to_bytes();
        check_prefixes("plaintext", &b, prefix_lens(b.len(), 7), |x| Plaintext::from_bytes(&params, x).map(drop));
        let b = ct.to_bytes();
        check_prefixes("ciphertext", &b, prefix_lens(b.len(), 13), |x| Ciphertext::from_bytes(&params, x).map(drop));
        let b = ct.to_bytes_expanded();
        check_prefixes("ciphertext", &b, prefix_lens(b.len(), 29), |x| Ciphertext::from_bytes_untrusted(&params, x).map(drop));
        let b = pk.to_bytes();
        check_prefixes("public key", &b, prefix_lens(b.len(), 13), |x| PublicKey::from_bytes(&params, x).map(drop));
        let b = rk.to_bytes();
        check_prefixes("relin key", &b, prefix_lens(b.len(), 97), |x| RelinKey::from_bytes(&params, x).map(drop));
        let gk = GaloisKeys::from_bytes(&params, &{
            // An empty key set is a valid object: header + count 0.
            let mut e = b[..HEADER_LEN].to_vec();
            e[6] = ObjectKind::GaloisKeys as u8;
            e[7] = 0;
            e.extend_from_slice(&0u32.to_le_bytes());
            e
        }).unwrap();
        let b = gk.to_bytes();
        check_prefixes("Galois keys", &b, 0..b.len(), |x| GaloisKeys::from_bytes(&params, x).map(drop));
        // One extra byte anywhere past the end is refused.
        let mut long = ct.to_bytes();
        long.push(0);
        assert_eq!(Ciphertext::from_bytes(&params, &long).unwrap_err(),
                   FormatError::TrailingBytes { expected: long.len() as u64 - 1, actual: long.len() as u64 });
    }

    fn residues_at_or_above_their_prime_are_refused_in_every_limb() {
        let params = Params::auth4096();
        let n = params.degree();
        let q = params.ciphertext_primes().to_vec();
        let p = params.special_prime();
        let mut prng = Prng::from_seed([6; 32]);
        let sk = SecretKey::generate_with(&params, &mut prng);
        let pk = PublicKey::new_with(&sk, &mut prng);
        let limb = |qi: u32| n * bit_len(qi) as usize / 8;
        // p1 of an expanded public key, each limb, at the first, a middle and
        // the last index, with the prime itself and with all ones.
        let base = pk.to_bytes_expanded();
        let mut start = HEADER_LEN + q.iter().map(|&x| limb(x)).sum::<usize>();
        for (i, &qi) in q.iter().enumerate() {
            for (index, value) in [(0, qi), (n / 2 + 1, (1 << bit_len(qi)) - 1), (n - 1, qi)] {
                let mut bad = base.clone();
                poke(&mut bad, start, bit_len(qi), index, value);
                assert_eq!(PublicKey::from_bytes(&params, &bad).unwrap_err(),
                           FormatError::ResidueOutOfRange { limb: i, index, value, modulus: qi });
                // q - 1 is fine.
                poke(&mut bad, start, bit_len(qi), index, qi - 1);
                assert!(PublicKey::from_bytes(&params, &bad).is_ok());
            }
            start += limb(qi);
        }
        // The P limb of a relinearization key's second digit.
        let rk = RelinKey::new_with(&sk, &mut prng);
        let mut bad = rk.to_bytes();
        let qp_poly: usize = q.iter().map(|&x| limb(x)).sum::<usize>() + limb(p);
        let at = HEADER_LEN + (qp_poly + 32) + qp_poly - limb(p);
        poke(&mut bad, at, bit_len(p), 17, p);
        assert_eq!(RelinKey::from_bytes(&params, &bad).unwrap_err(),
                   FormatError::ResidueOutOfRange { limb: 3, index: 17, value: p, modulus: p });
    }

    fn galois_elements_and_counts_are_checked() {
        let params = Params::auth4096();
        let n = params.degree() as u32;
        let mut prng = Prng::from_seed([7; 32]);
        let sk = SecretKey::generate_with(&params, &mut prng);
        // Steps [] give one key, for the column swap 2n - 1; use two elements.
        let gk = GaloisKeys::new_with(&sk, &[1], &mut prng).unwrap();
        let good = gk.to_bytes();
        let key_len = (good.len() - HEADER_LEN - 4) / 2;
        let first = HEADER_LEN + 4;
        let second = first + key_len;
        let set = |at: usize, v: u32| { let mut b = good.clone(); b[at..at + 4].copy_from_slice(&v.to_le_bytes()); b };
        let err = |b: Vec<u8>| GaloisKeys::from_bytes(&params, &b).unwrap_err();
        let elem = |index, element, reason| FormatError::GaloisElement { index, element, reason };
        assert_eq!(err(set(first, 4)), elem(0, 4, "must be odd"));
        assert_eq!(err(set(first, 2 * n + 1)), elem(0, 2 * n + 1, "must be below 2n"));
        assert_eq!(err(set(first, u32::MAX)), elem(0, u32::MAX, "must be below 2n"));
        assert_eq!(err(set(first, 1)), elem(0, 1, "the identity has no key"));
        assert_eq!(err(set(second, 3)), elem(1, 3, "elements must be strictly increasing"));
        assert_eq!(err(set(second, 1)), elem(1, 1, "the identity has no key"));
        assert_eq!(err(set(first, 2 * n - 1)), elem(1, 2 * n - 1, "elements must be strictly increasing"));
        // Counts that disagree with the length, and counts past n - 1.
        let total = good.len() as u64;
        assert_eq!(err(set(HEADER_LEN, 1)), FormatError::TrailingBytes { expected: total - key_len as u64, actual: total });
        assert_eq!(err(set(HEADER_LEN, 3)), FormatError::Truncated { expected: total + key_len as u64, actual: total });
        let max = MAX_GALOIS_KEYS as u64;
        assert_eq!(err(set(HEADER_LEN, n)),
                   FormatError::CountOutOfRange { what: "Galois keys", count: n as u64, max });
        // One key past the limit, with exactly the bytes that many keys take:
        // refused on the count, before any key is read.
        let mut over = good[..HEADER_LEN + 4].to_vec();
        over[HEADER_LEN..].copy_from_slice(&(max as u32 + 1).to_le_bytes());
        over.resize(HEADER_LEN + 4 + (max as usize + 1) * key_len, 0);
        assert_eq!(err(over), FormatError::CountOutOfRange { what: "Galois keys", count: max + 1, max });
        // The largest valid set is what matching::max_len says.
        assert_eq!(blindmatch::matching::max_len(ObjectKind::GaloisKeys, &params),
                   (HEADER_LEN + 4) as u64 + max * (gk.to_bytes_expanded().len() - HEADER_LEN - 4) as u64 / 2);
        // Nor can a larger set be made (refused before any key is generated).
        let too_many: Vec<i32> = (1..=MAX_GALOIS_KEYS as i32).collect();
        assert!(GaloisKeys::new_with(&sk, &too_many, &mut prng).is_err());
        // An empty set is written unseeded; with the seeded flag it is refused.
        let mut empty = good[..HEADER_LEN].to_vec();
        empty.extend_from_slice(&0u32.to_le_bytes());
        assert_eq!(err(empty.clone()), FormatError::SeededNotAllowed { what: "empty Galois key set" });
        empty[7] = 0;
        assert_eq!(GaloisKeys::from_bytes(&params, &empty).unwrap().to_bytes(), empty);
        // Seeded flag cleared: the layout (and so the length) changes.
        let mut b = good.clone();
        b[7] = 0;
        assert!(matches!(err(b), FormatError::Truncated { .. }));
    }
}

suite_test! {
    fn object_kind_dispatch() {
        let params = Params::auth4096();
        let pt = Plaintext::from_coeffs(&params, &[1]).unwrap();
        assert_eq!(ObjectKind::of(&pt.to_bytes()).unwrap(), ObjectKind::Plaintext);
        assert_eq!(ObjectKind::of(b"BMAT\x01\x00\x09").unwrap_err(), FormatError::WrongKind { expected: 0, found: 9 });
        assert_eq!(ObjectKind::of(b"BM").unwrap_err(), FormatError::Truncated { expected: 4, actual: 2 });
    }
}

// `matching::max_len` is the length of the largest valid object of each
// kind (what a receiver may refuse an input over, unread).
suite_test! {
    fn max_len_is_the_largest_valid_object() {
        let params = Params::auth4096();
        let mut prng = Prng::from_seed([11; 32]);
        let sk = SecretKey::generate_with(&params, &mut prng);
        let pk = PublicKey::new_with(&sk, &mut prng);
        let rk = RelinKey::new_with(&sk, &mut prng);
        let pt = Plaintext::from_coeffs(&params, &[1]).unwrap();
        let ct = sk.encrypt_with(&pt, &mut prng).unwrap();
        let product = Evaluator::new(&params).multiply(&ct, &ct).unwrap();
        let len = |k: ObjectKind| blindmatch::matching::max_len(k, &params) as usize;
        assert_eq!(len(ObjectKind::SecretKey), sk.to_bytes().len());
        assert_eq!(len(ObjectKind::PublicKey), pk.to_bytes_expanded().len());
        assert_eq!(len(ObjectKind::RelinKey), rk.to_bytes_expanded().len());
        assert_eq!(len(ObjectKind::Plaintext), pt.to_bytes().len());
        assert_eq!(len(ObjectKind::Ciphertext), product.to_bytes().len());
        assert_eq!(len(ObjectKind::Ciphertext), 133_650);
        // 64 scores (dimension 64) of a 4096-slot reply: c0 at 64 positions, all of c1.
        assert_eq!(len(ObjectKind::ScoreReply), HEADER_LEN + 4 + 4 * 64 + 4 * 4096);
    }
}
