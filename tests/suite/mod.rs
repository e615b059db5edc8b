//! The correctness suite shared by every target: native (`tests/native.rs`),
//! aarch64 under qemu (the same file, cross-compiled), wasm32 in Node
//! (`tests/node.rs`) and wasm32 in headless Chromium (`tests/web.rs`).
//!
//! Every test here compares each backend available on this CPU with the
//! scalar oracle in the same run.

#![allow(dead_code)]

/// Declares tests that run under `cargo test` natively and under
/// wasm-bindgen-test on wasm32.
macro_rules! suite_test {
    ($(fn $name:ident() $body:block)*) => {$(
        #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
        #[cfg_attr(not(target_arch = "wasm32"), test)]
        fn $name() $body
    )*};
}

pub mod oracle;

mod arith;
mod backends;
mod bad_corpus;
mod bfv;
mod decrypt_sample;
mod format_kat;
mod kat;
mod known_answers;
mod matching;
mod ntt;
mod rng;
mod serialize;
