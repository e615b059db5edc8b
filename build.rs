//! Short names for the kernel families a target compiles, so that
//! `src/backend*` states each condition once:
//!
//! | cfg          | when                                      |
//! |--------------|-------------------------------------------|
//! | `bm_avx`     | x86_64 (AVX2 and AVX-512, detected later) |
//! | `bm_neon`    | aarch64 with the `neon` feature           |
//! | `bm_simd128` | wasm32 with `target-feature=+simd128`     |

use std::env;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    for name in ["bm_avx", "bm_neon", "bm_simd128"] {
        println!("cargo::rustc-check-cfg=cfg({name})");
    }
    let arch = env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let features = env::var("CARGO_CFG_TARGET_FEATURE").unwrap_or_default();
    let neon = env::var_os("CARGO_FEATURE_NEON").is_some();
    if arch == "x86_64" {
        println!("cargo::rustc-cfg=bm_avx");
    }
    if arch == "aarch64" && neon {
        println!("cargo::rustc-cfg=bm_neon");
    }
    if arch == "wasm32" && features.split(',').any(|f| f == "simd128") {
        println!("cargo::rustc-cfg=bm_simd128");
    }
}
