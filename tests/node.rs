//! The shared suite, run on wasm32 in Node by wasm-bindgen-test
//! (`wasm-pack test --node`). The browser run is `tests/web.rs`; the native
//! runs are `tests/native.rs`.
#![cfg(target_arch = "wasm32")]

mod suite;
