//! The shared suite, run natively (x86_64, and aarch64 under qemu).
#![cfg(not(target_arch = "wasm32"))]

mod suite;
