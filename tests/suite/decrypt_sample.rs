//! Decryption rounding and error sampling against the straightforward
//! versions they replaced, which are kept here as oracles: the results must
//! be identical, not just close.
//!
//! Rounding `round(t/Q · x) mod t` is compared with the per-coefficient
//! reference (with its own constants) at every level, for size-2 and size-3
//! ciphertexts, on phases that are all zero, all `q_i - 1`, random, or within
//! a few units of a rounding boundary. A ciphertext with a chosen phase `x`
//! is built from the documented wire format (docs/FORMAT.md): the secret key
//! is `s = 1` (coefficient 0 set), `c1` (and `c2`) are random and
//! `c0 = NTT(x) - c1 (- c2)`, so `c0 + c1·s (+ c2·s²) = x`.
//!
//! The centred binomial sampler is compared with the u128 reference on the
//! same ChaCha stream: same values, and the same number of words drawn.

use super::oracle::Rng;
use blindmatch::bfv::sample::{fill_cbd, CBD_K};
use blindmatch::bfv::{
    Ciphertext, ObjectKind, Params, Prng, SecretKey, FORMAT_MAGIC, FORMAT_VERSION,
};

fn header(kind: ObjectKind, params: &Params) -> Vec<u8> {
    let mut out = FORMAT_MAGIC.to_vec();
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.push(kind as u8);
    out.push(0);
    out.extend_from_slice(&params.id());
    out
}

/// Appends `vals` at `bits` bits each, least significant bit first.
fn pack(out: &mut Vec<u8>, vals: &[u32], bits: u32) {
    let (mut acc, mut have) = (0u64, 0u32);
    for &v in vals {
        acc |= (v as u64) << have;
        have += bits;
        while have >= 8 {
            out.push(acc as u8);
            acc >>= 8;
            have -= 8;
        }
    }
    assert_eq!(have, 0);
}

fn bitlen(q: u32) -> u32 {
    32 - q.leading_zeros()
}

/// The secret key `s = 1`.
fn unit_key(params: &Params) -> SecretKey {
    let mut bytes = header(ObjectKind::SecretKey, params);
    let mut codes = vec![0u8; params.degree() / 4];
    codes[0] = 0b01;
    bytes.extend_from_slice(&codes);
    SecretKey::from_bytes(params, &bytes).unwrap()
}

/// A ciphertext of `size` polynomials over the first `x.len()` primes whose
/// phase under [`unit_key`] is `x` (one coefficient vector per limb).
fn with_phase(params: &Params, x: &[Vec<u32>], size: usize, rng: &mut Rng) -> Ciphertext {
    let plans = &params.plans_q()[..x.len()];
    let n = params.degree();
    let mut polys = vec![Vec::new(); size];
    for (limb, plan) in x.iter().zip(plans) {
        let q = plan.modulus().value();
        let mut c0 = limb.clone();
        plan.forward(&mut c0);
        for poly in polys.iter_mut().skip(1) {
            let c = rng.vec(n, q);
            for (a, &b) in c0.iter_mut().zip(&c) {
                *a = ((*a as u64 + (q - b) as u64) % q as u64) as u32;
            }
            poly.push(c);
        }
        polys[0].push(c0);
    }
    let mut bytes = header(ObjectKind::Ciphertext, params);
    bytes.push(size as u8);
    bytes.push(x.len() as u8);
    for poly in &polys {
        for (limb, plan) in poly.iter().zip(plans) {
            pack(&mut bytes, limb, bitlen(plan.modulus().value()));
        }
    }
    Ciphertext::from_bytes(params, &bytes).unwrap()
}

/// The per-coefficient rounding that decryption used before it worked limb
/// by limb: u64 integer part, f64 fractions summed in limb order.
struct Reference {
    t: u32,
    omega: Vec<u64>,
    theta: Vec<f64>,
}

fn pow_mod(mut b: u64, mut e: u64, q: u64) -> u64 {
    let mut r = 1;
    while e > 0 {
        if e & 1 == 1 {
            r = r * b % q;
        }
        b = b * b % q;
        e >>= 1;
    }
    r
}

impl Reference {
    fn new(q: &[u32], t: u32) -> Self {
        let (mut omega, mut theta) = (Vec::new(), Vec::new());
        for (i, &qi) in q.iter().enumerate() {
            let qi64 = qi as u64;
            let prod = q
                .iter()
                .enumerate()
                .filter(|&(j, _)| j != i)
                .fold(1u64, |acc, (_, &qj)| acc * (qj as u64 % qi64) % qi64);
            let qt = pow_mod(prod, qi64 - 2, qi64);
            let num = t as u128 * qt as u128;
            omega.push(((num / qi as u128) % t as u128) as u64);
            theta.push((num % qi as u128) as f64 / qi as f64);
        }
        Reference { t, omega, theta }
    }

    fn round(&self, x: &[Vec<u32>], j: usize) -> u32 {
        let mut int = 0u64;
        let mut frac = 0f64;
        for (i, limb) in x.iter().enumerate() {
            let xi = limb[j] as u64;
            int += xi * self.omega[i];
            let p = xi as f64 * self.theta[i];
            let fl = p as u64;
            int += fl;
            frac += p - fl as f64;
        }
        int += (frac + 0.5) as u64;
        (int % self.t as u64) as u32
    }
}

/// Little-endian base-2^32 naturals, just enough for points near `(k + 1/2)·Q/t`.
fn big_mul_small(a: &[u32], m: u32) -> Vec<u32> {
    let mut out = Vec::with_capacity(a.len() + 1);
    let mut carry = 0u64;
    for &d in a {
        let v = d as u64 * m as u64 + carry;
        out.push(v as u32);
        carry = v >> 32;
    }
    out.push(carry as u32);
    out
}

fn big_div_small(a: &[u32], d: u32) -> Vec<u32> {
    let mut out = vec![0u32; a.len()];
    let mut rem = 0u64;
    for (o, &v) in out.iter_mut().zip(a).rev() {
        let cur = rem << 32 | v as u64;
        *o = (cur / d as u64) as u32;
        rem = cur % d as u64;
    }
    out
}

fn big_rem_small(a: &[u32], d: u32) -> u32 {
    a.iter()
        .rev()
        .fold(0u64, |rem, &v| (rem << 32 | v as u64) % d as u64) as u32
}

/// Phases (one vector per limb) of the kinds the rounding must get right.
fn phases(q: &[u32], t: u32, n: usize, rng: &mut Rng) -> Vec<(&'static str, Vec<Vec<u32>>)> {
    let zero = q.iter().map(|_| vec![0; n]).collect();
    let minus_one = q.iter().map(|&qi| vec![qi - 1; n]).collect();
    let random = q.iter().map(|&qi| rng.vec(n, qi)).collect();
    // floor((2k+1)·Q / 2t) + d for d in -3..=3: t·x/Q within a few t/Q of k + 1/2.
    let big_q = q
        .iter()
        .fold(vec![1u32], |acc, &qi| big_mul_small(&acc, qi));
    let mut near: Vec<Vec<u32>> = q.iter().map(|_| Vec::with_capacity(n)).collect();
    for j in 0..n {
        let k = if j < 4 {
            [0, t - 1, t / 2, 1][j]
        } else {
            rng.below(t)
        };
        let d = (j % 7) as i64 - 3;
        let centre = big_div_small(&big_mul_small(&big_q, 2 * k + 1), 2 * t);
        for (limb, &qi) in near.iter_mut().zip(q) {
            let r = big_rem_small(&centre, qi) as i64 + d;
            limb.push(r.rem_euclid(qi as i64) as u32);
        }
    }
    vec![
        ("zero", zero),
        ("q-1", minus_one),
        ("random", random),
        ("near 1/2", near),
    ]
}

/// Decrypts every kind of phase at each level in `levels`, as size-2 and
/// size-3 ciphertexts, and compares with the reference; also checks
/// `decrypt_coefficients` on a few positions.
fn check_params(params: &Params, levels: &[usize], seed: u64) {
    let sk = unit_key(params);
    let (n, t) = (params.degree(), params.plaintext_modulus());
    let mut rng = Rng::new(seed);
    for &l in levels {
        let q = &params.ciphertext_primes()[..l];
        let reference = Reference::new(q, t);
        for (kind, x) in phases(q, t, n, &mut rng) {
            let want: Vec<u32> = (0..n).map(|j| reference.round(&x, j)).collect();
            for size in [2, 3] {
                let ct = with_phase(params, &x, size, &mut rng);
                let got = sk.decrypt(&ct).unwrap();
                assert!(
                    got.coeffs() == want.as_slice(),
                    "t={t} level {l} size {size} {kind}: first difference at {:?}",
                    (0..n).find(|&j| got.coeffs()[j] != want[j])
                );
                let positions = [n - 1, 0, 3, n / 2 + 1, 3, rng.below(n as u32) as usize];
                for take in [0, 1, positions.len()] {
                    let p = &positions[..take];
                    let got = sk.decrypt_coefficients(&ct, p).unwrap();
                    let want: Vec<u32> = p.iter().map(|&j| want[j]).collect();
                    assert_eq!(got, want, "t={t} level {l} size {size} {kind} at {p:?}");
                }
            }
        }
    }
}

fn primes(bits: u32, n: usize, count: usize) -> Vec<u64> {
    blindmatch::arith::ntt_primes(bits, n, count)
        .unwrap()
        .into_iter()
        .map(u64::from)
        .collect()
}

/// Centred binomial errors as first written: three values per 128-bit draw.
fn cbd_reference(rng: &mut Prng, out: &mut [i8]) {
    let mask = (1u128 << CBD_K) - 1;
    for chunk in out.chunks_mut(3) {
        let x = rng.next_u64() as u128 | (rng.next_u64() as u128) << 64;
        for (j, o) in chunk.iter_mut().enumerate() {
            let bits = x >> (2 * CBD_K as usize * j);
            let a = (bits & mask).count_ones() as i32;
            let b = ((bits >> CBD_K) & mask).count_ones() as i32;
            *o = (a - b) as i8;
        }
    }
}

suite_test! {
    fn cbd_matches_reference() {
        // Words already drawn before the errors: none, an odd count, and
        // counts that leave 3, 2 or 1 words before the generator refills
        // (it holds 256 words), so groups straddle the refill.
        for skip in [0usize, 1, 2, 3, 253, 254, 255] {
            for (seed, len) in [(1u8, 0), (2, 1), (3, 2), (4, 3), (5, 4), (6, 5), (7, 4096), (8, 20_001)] {
                let (mut a, mut b) = (Prng::from_seed([seed; 32]), Prng::from_seed([seed; 32]));
                for _ in 0..skip {
                    assert_eq!(a.next_u32(), b.next_u32());
                }
                let (mut got, mut want) = (vec![0i8; len], vec![0i8; len]);
                fill_cbd(&mut a, &mut got);
                cbd_reference(&mut b, &mut want);
                assert_eq!(got, want, "length {len} after {skip} words");
                assert_eq!(a.next_u32(), b.next_u32(), "words drawn for length {len} after {skip}");
            }
        }
    }

    fn rounding_matches_reference_auth4096() {
        let params = Params::auth4096();
        check_params(&params, &[1, 2, 3], 61);
    }

    fn rounding_matches_reference_widest_t_and_primes() {
        // The largest t (2^30 - 1, odd and composite) and 30-bit primes: the
        // widest integer parts the rounding accumulates.
        let n = 8192;
        let params = Params::builder()
            .degree(n)
            .plaintext_modulus((1 << 30) - 1)
            .ciphertext_primes(&primes(30, n, 6))
            .special_prime(primes(30, n, 7)[6])
            .build()
            .unwrap();
        check_params(&params, &[1, 2, 6], 62);
    }

    fn rounding_matches_reference_fifteen_primes_even_t() {
        // MAX_PRIMES ciphertext primes (the bound on the sums) and an even t.
        let n = 16384;
        let params = Params::builder()
            .degree(n)
            .plaintext_modulus(1 << 16)
            .ciphertext_primes(&primes(28, n, 15))
            .special_prime(primes(18, n, 1)[0])
            .build()
            .unwrap();
        assert_eq!(params.limbs(), blindmatch::bfv::params::MAX_PRIMES);
        check_params(&params, &[1, 15], 63);
    }
}
