//! The JavaScript facade's tests (tests/wasm_api_node.rs), run in headless
//! Chromium: `wasm-pack test --headless --chrome -- --test wasm_api_web`.
//! This binary is browser-only; the Node runner skips it.
#![cfg(target_arch = "wasm32")]

wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

#[path = "wasm_api_node.rs"]
mod api;
