//! The shared suite, run on wasm32 in headless Chromium by wasm-bindgen-test
//! (`wasm-pack test --headless --chrome`). This binary is browser-only: the
//! Node runner skips it (and `tests/node.rs` is skipped in the browser), so
//! the two runs never overlap.
#![cfg(target_arch = "wasm32")]

wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

mod suite;
