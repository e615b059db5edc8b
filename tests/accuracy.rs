//! Quantization costs no accuracy that matters: on a synthetic population the
//! equal-error rate with quantized scores stays within 0.5 percentage points
//! of the float one, for every supported dimension. (The full-size figures
//! are in docs/ACCURACY.md, from `cargo run --release --example accuracy`.)
#![cfg(not(target_arch = "wasm32"))]

use blindmatch::bfv::Params;
use blindmatch::matching::{
    accuracy::{equal_error_rate, synthetic_accuracy},
    Quantizer, DIMENSIONS,
};

#[test]
fn equal_error_rate_is_exact_on_known_distributions() {
    // Disjoint scores: no error. Fully overlapping: 50%.
    assert_eq!(equal_error_rate(&[0.9, 0.8, 0.7], &[0.1, 0.2, 0.3]), 0.0);
    let eer = equal_error_rate(&[0.5; 10], &[0.5; 10]);
    assert!((eer - 0.5).abs() < 1e-12, "{eer}");
    // One impostor above one genuine out of four each: 25%.
    let eer = equal_error_rate(&[0.9, 0.8, 0.7, 0.2], &[0.1, 0.15, 0.3, 0.75]);
    assert!((eer - 0.25).abs() < 1e-12, "{eer}");
}

#[test]
fn quantized_eer_within_half_a_point_of_float() {
    let params = Params::auth4096();
    for d in DIMENSIONS {
        let q = Quantizer::new(&params, d).unwrap();
        let noise = 1.45 * (d as f64 / 128.0).sqrt().sqrt();
        let r = synthetic_accuracy(&q, 250, 4, noise, 7).unwrap();
        eprintln!("d={d}: {r:?}");
        assert!(
            r.eer_float > 0.005 && r.eer_float < 0.2,
            "unrealistic population: {r:?}"
        );
        assert!(
            (r.eer_quantized - r.eer_float).abs() <= 0.005,
            "d={d}: {r:?}"
        );
        // Rounding moves a unit vector by at most sqrt(d)/(2s) (0.12 at
        // d = 128, s = 47, the few levels the well-formedness checks need);
        // measured at most 0.043 on 1000 identities (docs/ACCURACY.md).
        assert!(r.max_cosine_error < 0.06, "d={d}: {r:?}");
    }
}
