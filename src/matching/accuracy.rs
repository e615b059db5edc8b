//! Accuracy of quantized scores against float cosines on a synthetic
//! population: the figures docs/ACCURACY.md reports, computed by
//! `cargo run --release --example accuracy` and checked by a test.
//!
//! Each identity is a random unit centre in `d` dimensions; each sample is the
//! centre plus noise of norm `noise` times a random unit vector, normalized.
//! With `noise` = 1.45 at d = 128 a genuine pair has cosine ~0.32 and an
//! impostor pair ~0 ± 0.09, which puts the equal-error rate in the few-percent
//! range of real face systems on hard sets.

use super::quantize::Quantizer;
use crate::error::MatchError;

/// The figures of one run.
#[derive(Clone, Debug, PartialEq)]
pub struct AccuracyReport {
    /// Genuine pairs compared.
    pub genuine_pairs: usize,
    /// Impostor pairs compared.
    pub impostor_pairs: usize,
    /// Largest |quantized cosine − float cosine| over all pairs.
    pub max_cosine_error: f64,
    /// Equal-error rate with float cosines.
    pub eer_float: f64,
    /// Equal-error rate with quantized scores.
    pub eer_quantized: f64,
}

/// SplitMix64 with a Box–Muller normal: deterministic on every target.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn uniform(&mut self) -> f64 {
        ((self.next() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
    fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
    fn unit(&mut self, d: usize) -> Vec<f64> {
        let v: Vec<f64> = (0..d).map(|_| self.normal()).collect();
        let n = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        v.into_iter().map(|x| x / n).collect()
    }
}

/// Equal-error rate: the threshold where false accepts equal false rejects.
pub fn equal_error_rate(genuine: &[f64], impostor: &[f64]) -> f64 {
    let mut g = genuine.to_vec();
    let mut i = impostor.to_vec();
    g.sort_by(|a, b| a.total_cmp(b));
    i.sort_by(|a, b| a.total_cmp(b));
    // Sweep thresholds at every score; FRR = share of genuine below, FAR =
    // share of impostors at or above.
    let mut best = (f64::INFINITY, 0.0);
    let (mut gi, mut ii) = (0usize, 0usize);
    let mut thresholds: Vec<f64> = g.iter().chain(i.iter()).copied().collect();
    thresholds.sort_by(|a, b| a.total_cmp(b));
    thresholds.dedup();
    for th in thresholds {
        while gi < g.len() && g[gi] < th {
            gi += 1;
        }
        while ii < i.len() && i[ii] < th {
            ii += 1;
        }
        let frr = gi as f64 / g.len() as f64;
        let far = (i.len() - ii) as f64 / i.len() as f64;
        let gap = (frr - far).abs();
        if gap < best.0 {
            best = (gap, (frr + far) / 2.0);
        }
    }
    best.1
}

/// Runs the synthetic population through float and quantized scoring.
pub fn synthetic_accuracy(
    q: &Quantizer,
    identities: usize,
    samples: usize,
    noise: f64,
    seed: u64,
) -> Result<AccuracyReport, MatchError> {
    let d = q.dim();
    let mut gen = Gen(seed);
    let mut floats: Vec<Vec<Vec<f64>>> = Vec::with_capacity(identities);
    let mut quant: Vec<Vec<Vec<i32>>> = Vec::with_capacity(identities);
    for _ in 0..identities {
        let c = gen.unit(d);
        let mut fs = Vec::with_capacity(samples);
        let mut qs = Vec::with_capacity(samples);
        for _ in 0..samples {
            let u = gen.unit(d);
            let x: Vec<f64> = c.iter().zip(&u).map(|(a, b)| a + noise * b).collect();
            let n = x.iter().map(|v| v * v).sum::<f64>().sqrt();
            let x: Vec<f64> = x.into_iter().map(|v| v / n).collect();
            let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
            qs.push(q.quantize(&x32)?);
            fs.push(x);
        }
        floats.push(fs);
        quant.push(qs);
    }
    let fdot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>();
    let qdot = |a: &[i32], b: &[i32]| {
        a.iter()
            .zip(b)
            .map(|(&x, &y)| x as i64 * y as i64)
            .sum::<i64>()
    };
    let (mut gf, mut gq, mut if_, mut iq) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut max_err = 0f64;
    let mut pair = |fa: &[f64], fb: &[f64], qa: &[i32], qb: &[i32], genuine: bool| {
        let f = fdot(fa, fb);
        let c = q.cosine(qdot(qa, qb));
        max_err = max_err.max((f - c).abs());
        if genuine {
            gf.push(f);
            gq.push(c);
        } else {
            if_.push(f);
            iq.push(c);
        }
    };
    for id in 0..identities {
        for a in 0..samples {
            for b in a + 1..samples {
                pair(
                    &floats[id][a],
                    &floats[id][b],
                    &quant[id][a],
                    &quant[id][b],
                    true,
                );
            }
        }
        for other in id + 1..identities {
            pair(
                &floats[id][0],
                &floats[other][1 % samples],
                &quant[id][0],
                &quant[other][1 % samples],
                false,
            );
        }
    }
    Ok(AccuracyReport {
        genuine_pairs: gf.len(),
        impostor_pairs: if_.len(),
        max_cosine_error: max_err,
        eer_float: equal_error_rate(&gf, &if_),
        eer_quantized: equal_error_rate(&gq, &iq),
    })
}
