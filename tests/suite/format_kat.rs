//! The worked examples of docs/FORMAT.md (`tests/data/kat_format.txt`),
//! computed by `scripts/format_examples.py` from the specification alone
//! (its own ChaCha20, seed expansion and FNV-1a), against what the crate
//! reads and writes. `python3 scripts/gen_kat.py --check` checks that the
//! document shows the same numbers.

use blindmatch::bfv::{Ciphertext, GaloisKeys, Params, RelinKey};

const TEXT: &str = include_str!("../data/kat_format.txt");

fn unhex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "odd hex length");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex digit"))
        .collect()
}

/// The record tagged `tag`'s words, every occurrence in file order.
fn records<'a>(tag: &'a str) -> impl Iterator<Item = Vec<&'static str>> + 'a {
    TEXT.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(move |w| w[0] == tag)
        .map(|w| w[1..].to_vec())
}

fn one(tag: &str) -> Vec<&'static str> {
    let mut all: Vec<_> = records(tag).collect();
    assert_eq!(all.len(), 1, "exactly one {tag} record");
    all.remove(0)
}

fn num(w: &str) -> u64 {
    w.parse()
        .unwrap_or_else(|e| panic!("bad number {w:?}: {e}"))
}

/// The parameters of the records, built from their values.
fn params() -> Params {
    let w = one("params");
    let q: Vec<u64> = w[4..].iter().map(|x| num(x)).collect();
    Params::builder()
        .degree(num(w[0]) as usize)
        .plaintext_modulus(num(w[1]))
        .batching(num(w[2]) == 1)
        .special_prime(num(w[3]))
        .ciphertext_primes(&q)
        .build()
        .unwrap()
}

/// The first `count` residues of a limb packed at `bitlen(q)` bits, LSB first.
fn first_residues(limb: &[u8], q: u32, count: usize) -> Vec<u64> {
    let bits = 32 - q.leading_zeros() as usize;
    (0..count)
        .map(|i| {
            (0..bits).fold(0u64, |v, b| {
                let k = i * bits + b;
                v | (((limb[k / 8] >> (k % 8)) & 1) as u64) << b
            })
        })
        .collect()
}

/// `(modulus, residues)` of each `expand` record, in basis order.
fn expansion() -> Vec<(u32, Vec<u64>)> {
    records("expand")
        .map(|w| {
            let v: Vec<u64> = w.iter().map(|x| num(x)).collect();
            (v[0] as u32, v[1..].to_vec())
        })
        .collect()
}

suite_test! {
    fn format_kat_parameter_id() {
        let params = params();
        assert_eq!(params, Params::auth4096(), "the records are for auth4096");
        let id = unhex(one("id")[0]);
        assert_eq!(params.id().as_slice(), id.as_slice());
        assert_eq!(params.id_hex(), one("id")[0]);
    }

    fn format_kat_seed_expansion_over_q_and_p() {
        // A seeded relinearization key whose k0 parts are zero and whose
        // k1 seeds are the example seed: its expanded form holds the
        // expansion over q_0..q_{L-1}, P as packed limbs.
        let params = params();
        let seed = unhex(one("seed")[0]);
        let want = expansion();
        let basis: Vec<u32> = params
            .ciphertext_primes()
            .iter()
            .copied()
            .chain([params.special_prime()])
            .collect();
        assert_eq!(want.iter().map(|w| w.0).collect::<Vec<_>>(), basis);
        let n = params.degree();
        let limb_bytes = |q: u32| n * (32 - q.leading_zeros() as usize) / 8;
        let poly_qp: usize = basis.iter().map(|&q| limb_bytes(q)).sum();
        let mut bytes = b"BMAT\x01\x00\x03\x01".to_vec();
        bytes.extend_from_slice(&params.id());
        for _ in 0..params.limbs() {
            bytes.extend(std::iter::repeat_n(0u8, poly_qp));
            bytes.extend_from_slice(&seed);
        }
        let rk = RelinKey::from_bytes(&params, &bytes).unwrap();
        let expanded = rk.to_bytes_expanded();
        // Header, then digit 0: k0 (zero), then k1 limb by limb.
        let mut at = 16 + poly_qp;
        for (q, residues) in &want {
            let got = first_residues(&expanded[at..], *q, residues.len());
            assert_eq!(&got, residues, "limb mod {q}");
            at += limb_bytes(*q);
        }
    }

    fn format_kat_seeded_ciphertext_prefix() {
        let params = params();
        let seed = unhex(one("seed")[0]);
        let w = one("prefix");
        assert_eq!(w[0], "6");
        let total = num(w[1]) as usize;
        let mut bytes = unhex(w[2]);
        let q0 = params.ciphertext_primes()[0];
        // c0 = 0 over one prime, then the seed.
        bytes.resize(total - 32, 0);
        bytes.extend_from_slice(&seed);
        let ct = Ciphertext::from_bytes(&params, &bytes).unwrap();
        assert!(ct.is_seeded() && ct.level() == 1 && ct.size() == 2);
        assert_eq!(ct.to_bytes(), bytes);
        let expanded = ct.to_bytes_expanded();
        let c1 = &expanded[total - 32..];
        let (q, residues) = &expansion()[0];
        assert_eq!(*q, q0);
        assert_eq!(&first_residues(c1, q0, residues.len()), residues);
    }

    fn format_kat_smallest_object() {
        let params = params();
        let w = one("object");
        assert_eq!(w[0], "4");
        let bytes = unhex(w[1]);
        let keys = GaloisKeys::from_bytes(&params, &bytes).unwrap();
        assert_eq!(keys.to_bytes(), bytes);
    }
}
