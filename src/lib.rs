//! # blindmatch
//!
//! Encrypted face matching. A login page turns a face into an embedding,
//! encrypts it with BFV homomorphic encryption in the browser, and the server
//! compares encrypted templates with encrypted probes without ever seeing a
//! plaintext.
//!
//! This crate is built three ways from the same source: an npm package
//! (wasm32 with simd128), a native server matcher (x86_64 with AVX-512 or AVX2
//! detected at run time, aarch64 with NEON), and a Rust library.
//!
//! ## Layers
//!
//! * [`arith`]: 32-bit modular arithmetic (Montgomery, Shoup), NTT-friendly
//!   primes and roots of unity.
//! * [`ntt`]: the negacyclic NTT plan and pointwise multiply kernels.
//! * [`backend`]: the only place that knows about CPU features.
//! * [`transforms`]: how many transforms each BFV operation makes (the
//!   floor of its time).
//!
//! ```
//! use blindmatch::ntt::NttPlan;
//!
//! let q = blindmatch::arith::ntt_primes(30, 4096, 1)?[0];
//! let plan = NttPlan::new(4096, q as u64)?;
//! // (1 + X) * X^4095 = X^4095 + X^4096 = -1 + X^4095 in Z_q[X]/(X^4096 + 1).
//! let mut a = vec![0u32; 4096];
//! a[0] = 1;
//! a[1] = 1;
//! let mut b = vec![0u32; 4096];
//! b[4095] = 1;
//! plan.forward(&mut a);
//! plan.forward(&mut b);
//! let mut c = vec![0u32; 4096];
//! plan.multiply_pointwise(&a, &b, &mut c);
//! plan.inverse(&mut c);
//! assert_eq!(c[0], q - 1);
//! assert_eq!(c[4095], 1);
//! # Ok::<(), blindmatch::ArithError>(())
//! ```

#![forbid(unsafe_op_in_unsafe_fn)]
#![warn(missing_debug_implementations)]

pub mod arith;
pub mod backend;
pub mod bfv;
pub mod error;
pub mod matching;
pub mod ntt;
pub(crate) mod parallel;
pub mod transforms;

pub use backend::{Backend, Family};
pub use error::{ArithError, BfvError, FormatError, MatchError, ParamsError};
pub use ntt::NttPlan;

#[cfg(target_arch = "wasm32")]
pub mod wasm;

#[cfg(all(feature = "server", not(target_arch = "wasm32")))]
pub mod server;

/// The README's Rust examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
