//! Prints the accuracy figures of docs/ACCURACY.md:
//! `cargo run --release --example accuracy [identities] [samples]`.

use blindmatch::bfv::Params;
use blindmatch::matching::{accuracy::synthetic_accuracy, Quantizer, DIMENSIONS};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let identities: usize = args.next().map(|s| s.parse()).transpose()?.unwrap_or(1000);
    let samples: usize = args.next().map(|s| s.parse()).transpose()?.unwrap_or(4);
    let params = Params::auth4096();
    println!("| d | s | identities | samples | genuine pairs | impostor pairs | max abs(cos_q - cos_f) | EER float | EER quantized |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for d in DIMENSIONS {
        let q = Quantizer::new(&params, d)?;
        // Noise scaled with sqrt(d/128) keeps the genuine/impostor separation
        // comparable across dimensions.
        let noise = 1.45 * (d as f64 / 128.0).sqrt().sqrt();
        let r = synthetic_accuracy(&q, identities, samples, noise, 2026)?;
        println!(
            "| {d} | {} | {identities} | {samples} | {} | {} | {:.5} | {:.3}% | {:.3}% |",
            q.scale(),
            r.genuine_pairs,
            r.impostor_pairs,
            r.max_cosine_error,
            100.0 * r.eer_float,
            100.0 * r.eer_quantized
        );
    }
    Ok(())
}
