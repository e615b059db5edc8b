//! What the decider sees of a login (native, proptest): the compact reply it
//! receives carries `c0` at the score positions only, so those are all it can
//! decrypt; and every other coefficient of the reply the matcher computed is
//! masked, decrypting to values uniform mod t whatever the template and the
//! probe (random faces or the extreme quantized vectors). A chi-square test
//! checks the uniformity, and a control shows it catches an unmasked product.
#![cfg(not(target_arch = "wasm32"))]

use blindmatch::bfv::{
    CoefficientEncoder, Evaluator, Params, Prng, PublicKey, RelinKey, SecretKey,
};
use blindmatch::matching::{client, pack, Quantizer, ScoreReply, Verifier};
use proptest::prelude::*;

const DIM: usize = 128;
/// Bins of the chi-square test.
const BINS: usize = 16;
/// The chi-square statistic with 15 degrees of freedom exceeds this with
/// probability about 10^-6 for uniform values.
const CHI2_LIMIT: f64 = 55.0;

/// The chi-square statistic of `values` (centred, in (-t/2, t/2]) against
/// the uniform distribution mod t, over [`BINS`] equal bins.
fn chi_square_uniform(values: &[i64], t: i64) -> f64 {
    let mut counts = [0usize; BINS];
    for &v in values {
        let r = v.rem_euclid(t);
        counts[(r as usize * BINS) / t as usize] += 1;
    }
    let n = values.len() as f64;
    counts
        .iter()
        .enumerate()
        .map(|(b, &c)| {
            // Bin b holds the residues r with floor(r·BINS/t) = b.
            let (b, t, bins) = (b as u64, t as u64, BINS as u64);
            let (lo, hi) = ((b * t).div_ceil(bins), ((b + 1) * t).div_ceil(bins));
            let expected = n * (hi - lo) as f64 / t as f64;
            (c as f64 - expected).powi(2) / expected
        })
        .sum()
}

/// A face-like embedding from `rng`, or one of the extreme vectors.
fn embedding(rng: &mut Prng, kind: usize) -> Vec<f32> {
    let s = Quantizer::new(&Params::auth4096(), DIM).unwrap().scale() as f32;
    let halfway = (0.5 + 1e-3) / s * (DIM as f32).sqrt();
    match kind {
        0 => (0..DIM).map(|i| if i == 3 { 1.0 } else { 0.0 }).collect(),
        1 => (0..DIM)
            .map(|i| if i % 2 == 0 { 1.0 } else { -1.0 })
            .collect(),
        2 => vec![1.0; DIM],
        3 => (0..DIM)
            .map(|i| if i == 0 { 1.0 } else { halfway })
            .collect(),
        _ => (0..DIM)
            .map(|_| rng.next_u32() as f32 / u32::MAX as f32 - 0.5)
            .collect(),
    }
}

struct Login {
    params: Params,
    sk: SecretKey,
    pk: PublicKey,
    rk: RelinKey,
    q: Quantizer,
}

impl Login {
    fn new(rng: &mut Prng) -> Login {
        let params = Params::auth4096();
        let sk = SecretKey::generate_with(&params, rng);
        Login {
            pk: PublicKey::new_with(&sk, rng),
            rk: RelinKey::new_with(&sk, rng),
            q: Quantizer::new(&params, DIM).unwrap(),
            params,
            sk,
        }
    }

    /// The decrypted coefficients at the positions that are not scores.
    fn non_scores(&self, reply: &blindmatch::bfv::Ciphertext) -> Vec<i64> {
        let all = CoefficientEncoder::new(&self.params)
            .decode(&self.sk.decrypt(reply).unwrap())
            .unwrap();
        (0..self.params.degree())
            .filter(|&i| !pack::is_score_position(DIM, i))
            .map(|i| all[i])
            .collect()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(8))]

    #[test]
    fn the_decider_sees_scores_only_and_the_rest_is_uniform(
        seed in any::<[u8; 32]>(),
        template_kind in 0usize..6,
        probe_kind in 0usize..6,
        samples in 1usize..=32,
    ) {
        let mut rng = Prng::from_seed(seed);
        let l = Login::new(&mut rng);
        let faces: Vec<Vec<f32>> = (0..samples).map(|_| embedding(&mut rng, template_kind)).collect();
        let refs: Vec<&[f32]> = faces.iter().map(|f| f.as_slice()).collect();
        let template = client::encrypt_templates_public(&l.pk, &l.q, &refs, &mut rng).unwrap();
        let probe_face = embedding(&mut rng, probe_kind);
        let probe = client::encrypt_probe_public(&l.pk, &l.q, &probe_face, &mut rng).unwrap();
        let verifier = Verifier::for_decider(&l.params, DIM).unwrap();
        let reply = verifier.verify_with(&template, &probe, &l.pk, Some(&l.rk), &mut rng).unwrap();

        // What the decider receives: c0 at the n/d score positions and
        // nothing else of it; it decrypts to the exact scores.
        let n = l.params.degree();
        let compact = verifier.compact(&reply).unwrap();
        let bytes = compact.to_bytes();
        prop_assert_eq!(bytes.len(), 16 + 4 + 4 * (n / DIM) + 4 * n);
        let back = ScoreReply::from_bytes(&l.params, &bytes).unwrap();
        let got = client::decrypt_score_reply(&l.sk, &l.q, &back, samples).unwrap();
        let pq = l.q.quantize(&probe_face).unwrap();
        let want: Vec<i64> = faces
            .iter()
            .map(|f| l.q.quantize(f).unwrap().iter().zip(&pq).map(|(&a, &b)| a as i64 * b as i64).sum())
            .collect();
        prop_assert_eq!(got.scores, want);

        // Everything else the product holds is masked: uniform mod t.
        let others = l.non_scores(&reply);
        prop_assert_eq!(others.len(), n - n / DIM);
        let chi2 = chi_square_uniform(&others, l.params.plaintext_modulus() as i64);
        prop_assert!(chi2 < CHI2_LIMIT, "chi-square {chi2:.1} over {BINS} bins: not uniform");
    }
}

/// The control: the same test on the product without the mask (what the
/// matcher would send if it skipped it) fails by far.
#[test]
fn the_uniformity_test_catches_an_unmasked_product() {
    let mut rng = Prng::from_seed([5; 32]);
    let l = Login::new(&mut rng);
    let faces: Vec<Vec<f32>> = (0..32).map(|_| embedding(&mut rng, 9)).collect();
    let refs: Vec<&[f32]> = faces.iter().map(|f| f.as_slice()).collect();
    let template = client::encrypt_templates_public(&l.pk, &l.q, &refs, &mut rng).unwrap();
    let probe =
        client::encrypt_probe_public(&l.pk, &l.q, &embedding(&mut rng, 9), &mut rng).unwrap();
    let ev = Evaluator::new(&l.params);
    let product = ev
        .relinearize(&ev.multiply(&template, &probe).unwrap(), &l.rk)
        .unwrap();
    let chi2 = chi_square_uniform(&l.non_scores(&product), l.params.plaintext_modulus() as i64);
    assert!(
        chi2 > 100.0 * CHI2_LIMIT,
        "chi-square {chi2:.1}: the unmasked product looked uniform"
    );
}

/// The test's own calibration: uniform values pass it.
#[test]
fn uniform_values_pass_the_uniformity_test() {
    let mut rng = Prng::from_seed([6; 32]);
    let t = 65537i64;
    let values: Vec<i64> = (0..4064)
        .map(|_| (rng.next_u32() as i64 % t) - t / 2)
        .collect();
    let chi2 = chi_square_uniform(&values, t);
    assert!(chi2 < CHI2_LIMIT, "{chi2}");
}
