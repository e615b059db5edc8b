//! The checks against honest clients and against the attacks of
//! docs/PROTOCOL.md ("Well-formed embeddings"): every attack is refused,
//! with its reason; every honest client passes, its scores unchanged.

use super::*;
use crate::bfv::Prng;
use crate::matching::{client, Verifier};

struct Setup {
    params: Params,
    sk: SecretKey,
    pk: PublicKey,
    rk: RelinKey,
    q: Quantizer,
    checker: Checker,
    rng: Prng,
}

fn setup(dim: usize, seed: u8) -> Setup {
    let params = Params::auth4096();
    let mut rng = Prng::from_seed([seed; 32]);
    let sk = SecretKey::generate_with(&params, &mut rng);
    let pk = PublicKey::new_with(&sk, &mut rng);
    let rk = RelinKey::new_with(&sk, &mut rng);
    Setup {
        q: Quantizer::new(&params, dim).unwrap(),
        checker: Checker::new(&params, dim).unwrap(),
        params,
        sk,
        pk,
        rk,
        rng,
    }
}

/// A random unit-ish embedding.
fn embedding(rng: &mut Prng, d: usize) -> Vec<f32> {
    (0..d)
        .map(|_| {
            // Sum of four uniforms: roughly Gaussian.
            (0..4)
                .map(|_| rng.next_u32() as f32 / u32::MAX as f32 - 0.5)
                .sum::<f32>()
        })
        .collect()
}

impl Setup {
    /// The packed probe of `values` (any integers mod t) and the one-hot
    /// encryption of `one_hot` (a quantized sample).
    fn probe(&mut self, values: &[i64], one_hot: &[i32]) -> (Ciphertext, Vec<Ciphertext>) {
        let d = self.q.dim();
        let mut coeffs = vec![0i64; d];
        for (j, &v) in values.iter().enumerate() {
            coeffs[d - 1 - j] = v;
        }
        let pt = crate::bfv::CoefficientEncoder::new(&self.params)
            .encode(
                &coeffs
                    .iter()
                    .map(|v| v.rem_euclid(65537))
                    .collect::<Vec<_>>(),
            )
            .unwrap();
        let p = self.pk.encrypt_with(&pt, &mut self.rng).unwrap();
        let h = self
            .checker
            .layout()
            .encrypt(&self.pk, one_hot, &mut self.rng)
            .unwrap();
        (p, h)
    }

    fn judge(
        &mut self,
        packed: &Ciphertext,
        kind: Packed,
        one_hot: &[Ciphertext],
    ) -> Result<Vec<u32>, Malformed> {
        let replies = self
            .checker
            .check_with(packed, kind, one_hot, &self.pk, &self.rk, &mut self.rng)
            .unwrap();
        replies.judge(&self.sk, &self.q).unwrap()
    }
}

fn norm2(v: &[i32]) -> u32 {
    v.iter().map(|&x| (x * x) as u32).sum()
}

#[test]
fn honest_clients_pass_and_keep_their_budget() {
    for d in [128, 256] {
        let mut s = setup(d, 1);
        let e = embedding(&mut s.rng, d);
        let a = s.q.quantize(&e).unwrap();
        let values: Vec<i64> = a.iter().map(|&x| x as i64).collect();
        let (p, h) = s.probe(&values, &a);
        assert_eq!(h.len(), d / 128);
        let replies = s
            .checker
            .check_with(&p, Packed::Probe, &h, &s.pk, &s.rk, &mut s.rng)
            .unwrap();
        assert_eq!(replies.judge(&s.sk, &s.q).unwrap(), Ok(vec![norm2(&a)]));
        // The replies' own noise (no flood), then flooded.
        let unflooded = Checker {
            floods: None,
            ..s.checker.clone()
        };
        let own = unflooded
            .check_with(&p, Packed::Probe, &h, &s.pk, &s.rk, &mut s.rng)
            .unwrap();
        let least = |cts: &mut dyn Iterator<Item = &Ciphertext>| {
            cts.map(|x| s.sk.noise_budget(x).unwrap())
                .fold(f64::INFINITY, f64::min)
        };
        let own = least(&mut own.bits.iter());
        let flooded = least(&mut replies.bits.iter());
        // The sum and norm replies before their compact form.
        let (y, c) = s
            .checker
            .sum_check(&p, Packed::Probe, &h, &mut s.rng)
            .unwrap();
        let norm = s.checker.norm(&h, 0).unwrap();
        let mut raw = |checker: &Checker, y: &Ciphertext, c: u32| {
            let (mut ct, plus) = checker.finish_parts(y.clone(), c, &mut s.rng).unwrap();
            let plans = &s.params.plans_q()[..ct.level()];
            ct.polys[0].add_assign(&plus.into_ntt(plans), plans);
            s.sk.noise_budget(&ct).unwrap()
        };
        let own_sums = raw(&unflooded, &y, c).min(raw(&unflooded, &norm, 0));
        let sums = raw(&s.checker, &y, c).min(raw(&s.checker, &norm, 0));
        eprintln!(
            "d = {d}: bits replies' own budget {own:.1} bits, flooded {flooded:.1}; sums and \
             norms {own_sums:.1}, flooded {sums:.1}"
        );
        assert!(own >= 26.0, "own budget {own}");
        assert!(flooded >= 0.5, "flooded budget {flooded}");
        assert!(own_sums >= 30.0, "sums' own budget {own_sums}");
        assert!(sums >= 4.5, "flooded sum budget {sums}");
    }
}

#[test]
fn honest_templates_pass_and_scores_are_unchanged() {
    let d = 128;
    let mut s = setup(d, 2);
    let embs: Vec<Vec<f32>> = (0..3).map(|_| embedding(&mut s.rng, d)).collect();
    let refs: Vec<&[f32]> = embs.iter().map(|e| e.as_slice()).collect();
    let template = client::encrypt_templates_public(&s.pk, &s.q, &refs, &mut s.rng).unwrap();
    let quantized: Vec<Vec<i32>> = embs.iter().map(|e| s.q.quantize(e).unwrap()).collect();
    let mut h = Vec::new();
    for a in &quantized {
        h.extend(s.checker.layout().encrypt(&s.pk, a, &mut s.rng).unwrap());
    }
    let kind = Packed::Template { samples: 3 };
    assert_eq!(
        s.judge(&template, kind, &h),
        Ok(quantized.iter().map(|a| norm2(a)).collect())
    );
    // The checks read copies: the score of a probe is what it was.
    let probe = client::encrypt_probe_public(&s.pk, &s.q, &embs[1], &mut s.rng).unwrap();
    let v = Verifier::for_decider(&s.params, d).unwrap();
    let reply = v.verify(&template, &probe, &s.pk, Some(&s.rk)).unwrap();
    let got = client::decrypt_scores(&s.sk, &s.q, &reply, 3)
        .unwrap()
        .scores;
    let dot = |a: &[i32], b: &[i32]| {
        a.iter()
            .zip(b)
            .map(|(&x, &y)| x as i64 * y as i64)
            .sum::<i64>()
    };
    let want: Vec<i64> = quantized.iter().map(|t| dot(t, &quantized[1])).collect();
    assert_eq!(got, want);
}

/// `x` mod t, in `[0, t)`.
fn modt(x: i64) -> i64 {
    x.rem_euclid(65537)
}

/// `a^-1` mod t.
fn inv(a: i64) -> i64 {
    let (mut r, mut b, mut e) = (1i64, modt(a), 65535u32);
    while e > 0 {
        if e & 1 == 1 {
            r = r * b % 65537;
        }
        b = b * b % 65537;
        e >>= 1;
    }
    r
}

/// The same ciphertext with `c0 = 0`.
fn without_c0(ct: &Ciphertext) -> Ciphertext {
    let mut ct = ct.clone();
    let (n, l) = (ct.params.degree(), ct.level());
    ct.polys[0] = crate::bfv::poly::RnsPoly::zero(n, l);
    ct
}

/// The user's public key itself, as a ciphertext (it decrypts to about 0).
fn the_public_key(pk: &PublicKey) -> Ciphertext {
    Ciphertext::new(pk.params(), vec![pk.p0.clone(), pk.p1.clone()])
}

/// A probe a third of the way to the template: cosine 0.25 with it.
fn impostor_of(rng: &mut Prng, genuine: &[f32]) -> Vec<f32> {
    let unit = |v: &[f32]| {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / n).collect::<Vec<f32>>()
    };
    let g = unit(genuine);
    let r = unit(&embedding(rng, g.len()));
    let along: f32 = r.iter().zip(&g).map(|(a, b)| a * b).sum();
    let ortho = unit(
        &r.iter()
            .zip(&g)
            .map(|(a, b)| a - along * b)
            .collect::<Vec<_>>(),
    );
    let c = 0.25f32;
    g.iter()
        .zip(&ortho)
        .map(|(a, b)| c * a + (1.0 - c * c).sqrt() * b)
        .collect()
}

fn dot(a: &[i32], b: &[i64]) -> i64 {
    a.iter().zip(b).map(|(&x, &y)| x as i64 * y).sum()
}

#[test]
fn scaled_impostor_probes_are_refused() {
    let d = 128;
    let mut s = setup(d, 3);
    let genuine = embedding(&mut s.rng, d);
    let b = s.q.quantize(&genuine).unwrap();
    let a = s.q.quantize(&impostor_of(&mut s.rng, &genuine)).unwrap();
    let (lo, hi) = s.q.range();
    for k in [2i64, 3] {
        let scaled: Vec<i64> = a.iter().map(|&x| k * x as i64).collect();
        // Unchecked, the scaled probe's score is k times the impostor's:
        // cosine about 0.25·k, past a threshold of 0.5 at k = 3.
        let cos = s.q.cosine(dot(&b, &scaled));
        assert!(
            (cos - 0.25 * k as f64).abs() < 0.05,
            "k = {k}: cosine {cos}"
        );
        // Packed scaled, one-hot of the impostor: they disagree.
        let (p, h) = s.probe(&scaled, &a);
        assert!(matches!(
            s.judge(&p, Packed::Probe, &h),
            Err(Malformed::Sums { .. })
        ));
        // Scaled and clipped into range on both sides: consistent, too long.
        let clipped: Vec<i32> = scaled
            .iter()
            .map(|&x| x.clamp(lo as i64, hi as i64) as i32)
            .collect();
        let values: Vec<i64> = clipped.iter().map(|&x| x as i64).collect();
        let (p, h) = s.probe(&values, &clipped);
        assert!(
            matches!(
                s.judge(&p, Packed::Probe, &h),
                Err(Malformed::Norm { sample: 0, .. })
            ),
            "k = {k}"
        );
    }
}

/// Probes whose packed coefficients are uniform mod t, with an honest
/// one-hot encoding (the bits and norm replies depend on the one-hot
/// ciphertexts only, so the sums decide): every one refused. 10 000 in a
/// release build (`scripts/test.sh`, step `attacks`), fewer in debug builds
/// and under emulation, or `BLINDMATCH_ATTACK_PROBES`.
#[test]
fn uniform_probes_are_refused() {
    let d = 128;
    let mut s = setup(d, 4);
    let count: usize = std::env::var("BLINDMATCH_ATTACK_PROBES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if cfg!(debug_assertions) { 8 } else { 10_000 });
    let a = s.q.quantize(&embedding(&mut s.rng, d)).unwrap();
    let h = s.checker.layout().encrypt(&s.pk, &a, &mut s.rng).unwrap();
    // The one-hot part alone is honest.
    let honest: Vec<i64> = a.iter().map(|&x| x as i64).collect();
    let (p, _) = s.probe(&honest, &a);
    assert!(s.judge(&p, Packed::Probe, &h).is_ok());
    let mut refused = 0;
    for _ in 0..count {
        let values: Vec<i64> = (0..d)
            .map(|_| uniform_mod(&mut s.rng, 65537) as i64)
            .collect();
        let (p, _) = s.probe(&values, &a);
        let replies = s
            .checker
            .check_with(&p, Packed::Probe, &h, &s.pk, &s.rk, &mut s.rng)
            .unwrap();
        // Sums only: what the packed ciphertext enters.
        let refused_here = replies
            .sums
            .iter()
            .any(|y| read(y, &s.sk, &s.q).unwrap() != 0);
        refused += refused_here as usize;
    }
    eprintln!("uniform packed probes: {refused} of {count} refused");
    assert_eq!(refused, count);
}

/// A one-hot "encoding" with field elements for levels, solving every linear
/// equation (one level in total, the packed value, and a squared norm equal
/// to the honest vector's), for a packed probe three times the impostor's:
/// the norm read mod t is right and the sums hold, but over the integers
/// the norm is nine times that. Only the bits check sees it.
#[test]
fn a_norm_right_mod_t_but_wrong_over_the_integers_is_refused() {
    let d = 128;
    let mut s = setup(d, 5);
    let a = s.q.quantize(&embedding(&mut s.rng, d)).unwrap();
    let packed: Vec<i64> = a.iter().map(|&x| 3 * x as i64).collect();
    let layout = s.checker.layout().clone();
    let levels = layout.levels;
    // Levels 0, 1, 2 (values v0, v0 + 1, v0 + 2): solve the Vandermonde
    // system [1 1 1; v v' v''; v² v'² v''²]·h = [1, 3a, a²] mod t.
    let v: Vec<i64> = (0..3).map(|j| layout.value(j)).collect();
    let mut slots = vec![0i64; s.params.degree()];
    for i in 0..d {
        let (x, y) = (packed[i], a[i] as i64 * a[i] as i64);
        // Lagrange: h_j = (y − (v_k + v_l)·x + v_k·v_l) / ((v_j − v_k)(v_j − v_l)).
        for j in 0..3 {
            let (k, l) = ((j + 1) % 3, (j + 2) % 3);
            let num = modt(y - (v[k] + v[l]) * x + v[k] * v[l]);
            let den = modt((v[j] - v[k]) * (v[j] - v[l]));
            slots[i * levels + j] = num * inv(den) % 65537;
        }
    }
    let pt = layout.encoder.encode(&slots).unwrap();
    let h = vec![s.pk.encrypt_with(&pt, &mut s.rng).unwrap()];
    let (p, _) = s.probe(&packed, &a);
    let replies = s
        .checker
        .check_with(&p, Packed::Probe, &h, &s.pk, &s.rk, &mut s.rng)
        .unwrap();
    // The linear reads pass: sums zero, norm the honest one.
    for y in &replies.sums {
        assert_eq!(read(y, &s.sk, &s.q).unwrap(), 0);
    }
    assert_eq!(read(&replies.norms[0], &s.sk, &s.q).unwrap(), norm2(&a));
    assert_eq!(
        replies.judge(&s.sk, &s.q).unwrap(),
        Err(Malformed::Bits { sample: 0 })
    );
}

#[test]
fn crafted_ciphertexts_are_refused() {
    let d = 128;
    let mut s = setup(d, 6);
    let a = s.q.quantize(&embedding(&mut s.rng, d)).unwrap();
    let values: Vec<i64> = a.iter().map(|&x| x as i64).collect();
    let (p, h) = s.probe(&values, &a);
    let pk_ct = the_public_key(&s.pk);
    assert_eq!(pk_ct.level(), s.params.limbs());
    let cases: Vec<(&str, Ciphertext, Vec<Ciphertext>)> = vec![
        ("packed c0 = 0", without_c0(&p), h.clone()),
        ("one-hot c0 = 0", p.clone(), vec![without_c0(&h[0])]),
        ("packed is the public key", pk_ct.clone(), h.clone()),
        (
            "both are the public key",
            pk_ct.clone(),
            vec![pk_ct.clone()],
        ),
        ("one-hot is the public key", p.clone(), vec![pk_ct.clone()]),
        (
            "packed is the public key plus the probe",
            Evaluator::new(&s.params).add(&p, &pk_ct).unwrap(),
            // (decrypts to the probe, with more noise: passes if small enough)
            h.clone(),
        ),
    ];
    for (name, packed, one_hot) in cases {
        let got = s.judge(&packed, Packed::Probe, &one_hot);
        if name.ends_with("plus the probe") {
            // A valid encryption of the probe is a valid probe.
            assert_eq!(got, Ok(vec![norm2(&a)]), "{name}");
        } else {
            assert!(got.is_err(), "{name}: {got:?}");
            eprintln!("{name}: {}", got.unwrap_err());
        }
    }
}

#[test]
fn one_hot_encodings_of_something_else_are_refused() {
    let d = 128;
    let mut s = setup(d, 7);
    let a = s.q.quantize(&embedding(&mut s.rng, d)).unwrap();
    let b = s.q.quantize(&embedding(&mut s.rng, d)).unwrap();
    let values: Vec<i64> = a.iter().map(|&x| x as i64).collect();
    // Another vector's bits.
    let (p, h) = s.probe(&values, &b);
    assert!(matches!(
        s.judge(&p, Packed::Probe, &h),
        Err(Malformed::Sums { .. })
    ));
    // The right level and one more set for component 5: still bits, sums wrong.
    let layout = s.checker.layout().clone();
    let mut slots = vec![0i64; s.params.degree()];
    for (i, &x) in a.iter().enumerate() {
        slots[i * layout.levels + (x - layout.lowest) as usize] = 1;
    }
    let j = (a[5] - layout.lowest) as usize;
    slots[5 * layout.levels + (j + 1) % layout.levels] = 1;
    let h = vec![s
        .pk
        .encrypt_with(&layout.encoder.encode(&slots).unwrap(), &mut s.rng)
        .unwrap()];
    assert!(matches!(
        s.judge(&p, Packed::Probe, &h),
        Err(Malformed::Sums { .. })
    ));
    // A coefficient outside the probe's block set: sums.
    let mut coeffs = vec![0i64; s.params.degree()];
    for (j, &v) in a.iter().enumerate() {
        coeffs[d - 1 - j] = modt(v as i64);
    }
    coeffs[d + 7] = 1;
    let pt = crate::bfv::CoefficientEncoder::new(&s.params)
        .encode(&coeffs)
        .unwrap();
    let p = s.pk.encrypt_with(&pt, &mut s.rng).unwrap();
    let h = layout.encrypt(&s.pk, &a, &mut s.rng).unwrap();
    assert!(matches!(
        s.judge(&p, Packed::Probe, &h),
        Err(Malformed::Sums { .. })
    ));
}

#[test]
fn crafted_templates_are_refused() {
    let d = 128;
    let mut s = setup(d, 8);
    let t: Vec<Vec<i32>> = (0..2)
        .map(|_| s.q.quantize(&embedding(&mut s.rng, d)).unwrap())
        .collect();
    let kind = Packed::Template { samples: 2 };
    let layout = s.checker.layout().clone();
    let (lo, hi) = s.q.range();
    let template = |s: &mut Setup, samples: &[Vec<i64>]| {
        let mut coeffs = vec![0i64; s.params.degree()];
        for (k, sample) in samples.iter().enumerate() {
            for (i, &v) in sample.iter().enumerate() {
                coeffs[k * d + i] = modt(v);
            }
        }
        let pt = crate::bfv::CoefficientEncoder::new(&s.params)
            .encode(&coeffs)
            .unwrap();
        s.pk.encrypt_with(&pt, &mut s.rng).unwrap()
    };
    let wide = |v: &[i32]| v.iter().map(|&x| x as i64).collect::<Vec<i64>>();
    let one_hot = |s: &mut Setup, samples: &[&[i32]]| {
        samples
            .iter()
            .flat_map(|x| layout.encrypt(&s.pk, x, &mut s.rng).unwrap())
            .collect::<Vec<_>>()
    };
    // Honest.
    let c = template(&mut s, &[wide(&t[0]), wide(&t[1])]);
    let h = one_hot(&mut s, &[&t[0], &t[1]]);
    assert!(s.judge(&c, kind, &h).is_ok());
    // Sample 1 scaled by 3 and clipped, consistently: too long.
    let scaled: Vec<i32> = t[1].iter().map(|&x| (3 * x).clamp(lo, hi)).collect();
    let c3 = template(&mut s, &[wide(&t[0]), wide(&scaled)]);
    let h3 = one_hot(&mut s, &[&t[0], &scaled]);
    assert!(matches!(
        s.judge(&c3, kind, &h3),
        Err(Malformed::Norm { sample: 1, .. })
    ));
    // Sample 1 scaled by 3 in the packed template only.
    let c3 = template(
        &mut s,
        &[wide(&t[0]), t[1].iter().map(|&x| 3 * x as i64).collect()],
    );
    assert!(matches!(
        s.judge(&c3, kind, &h),
        Err(Malformed::Sums { .. })
    ));
    // Uniform mod t.
    let uniform: Vec<Vec<i64>> = (0..2)
        .map(|_| {
            (0..d)
                .map(|_| uniform_mod(&mut s.rng, 65537) as i64)
                .collect()
        })
        .collect();
    let cu = template(&mut s, &uniform);
    assert!(matches!(
        s.judge(&cu, kind, &h),
        Err(Malformed::Sums { .. })
    ));
    // c0 = 0, the public key.
    assert!(s.judge(&without_c0(&c), kind, &h).is_err());
    let pk_ct = the_public_key(&s.pk);
    assert!(s.judge(&pk_ct, kind, &h).is_err());
    assert!(s.judge(&c, kind, &[pk_ct.clone(), pk_ct]).is_err());
    // A third sample in the packed template the one-hot part leaves out.
    let c_extra = template(&mut s, &[wide(&t[0]), wide(&t[1]), wide(&t[0])]);
    assert!(matches!(
        s.judge(&c_extra, kind, &h),
        Err(Malformed::Sums { .. })
    ));
    // The wrong number of one-hot ciphertexts is an error, not a verdict.
    assert!(matches!(
        s.checker
            .check_with(&c, kind, &h[..1], &s.pk, &s.rk, &mut s.rng),
        Err(MatchError::OneHotCount {
            expected: 2,
            found: 1
        })
    ));
}

#[test]
fn bundles_and_check_replies_survive_their_wire_forms() {
    let d = 128;
    let mut s = setup(d, 9);
    let a = s.q.quantize(&embedding(&mut s.rng, d)).unwrap();
    let values: Vec<i64> = a.iter().map(|&x| x as i64).collect();
    let (p, h) = s.probe(&values, &a);
    let bundle = Bundle {
        packed: p.clone(),
        one_hot: h.clone(),
    };
    let bytes = bundle.to_bytes();
    assert_eq!(
        Bundle::from_bytes_untrusted(&s.params, &bytes).unwrap(),
        bundle
    );
    // Truncated, trailing, or without a one-hot ciphertext: refused.
    assert!(Bundle::from_bytes_untrusted(&s.params, &bytes[..bytes.len() - 1]).is_err());
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(Bundle::from_bytes_untrusted(&s.params, &longer).is_err());
    let alone = wire::frame([p.to_bytes().as_slice()]);
    assert!(Bundle::from_bytes_untrusted(&s.params, &alone).is_err());
    assert!(Bundle::from_bytes_untrusted(&s.params, &[0xff; 4]).is_err());
    let replies = s
        .checker
        .check_with(&p, Packed::Probe, &h, &s.pk, &s.rk, &mut s.rng)
        .unwrap();
    let items = replies.items();
    let refs: Vec<&[u8]> = items.iter().map(|i| i.as_slice()).collect();
    let back = CheckReplies::from_items(&s.params, &refs, 1, 1).unwrap();
    assert_eq!(back, replies);
    assert!(CheckReplies::from_items(&s.params, &refs[1..], 1, 1).is_err());
    assert_eq!(back.judge(&s.sk, &s.q).unwrap(), Ok(vec![norm2(&a)]));
    // Under another key, every read fails.
    let other = setup(d, 10);
    assert!(back.judge(&other.sk, &other.q).unwrap().is_err());
}

/// A filled run of draws is the same, value for value, as drawing one at a
/// time from the same stream, for t = 65537 (a refusal every 2^32 words) and
/// for a modulus that refuses about half the words.
#[test]
fn filled_draws_are_single_draws() {
    for t in [65537, (1 << 31) + 1, 3] {
        let mut one = Prng::from_seed([4; 32]);
        let mut run = Prng::from_seed([4; 32]);
        // Past a buffer refill, and starting mid-buffer.
        let _ = (one.next_u32(), run.next_u32());
        let want: Vec<u32> = (0..5000).map(|_| uniform_mod(&mut one, t)).collect();
        let mut got = vec![0; 5000];
        fill_uniform_mod(&mut run, t, &mut got);
        assert_eq!(got, want, "t = {t}");
        assert!(got.iter().all(|&v| v < t));
        assert_eq!(one.next_u32(), run.next_u32(), "t = {t}: the streams part");
    }
}
