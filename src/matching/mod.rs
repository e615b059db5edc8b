//! Encrypted face matching: quantized embeddings packed so that one
//! polynomial product computes every template's inner product with a probe.
//!
//! * [`Quantizer`]: embeddings to integers whose inner products never wrap.
//! * [`pack`]: the coefficient layout (no rotations, no Galois keys).
//! * [`client`]: the key holder's side (encrypt templates and probes, read scores).
//! * [`Verifier`]: 1:1 on the server, with response hygiene; [`ScoreReply`]:
//!   its reply in compact form.
//! * [`Identifier`] and [`Gallery`]: 1:N against a service-key gallery;
//!   [`floor`]: the memory floors its passes are measured against.

pub mod accuracy;
mod best;
pub mod client;
pub mod floor;
mod fused;
mod identify;
pub mod pack;
mod quantize;
mod reply;
mod reply_wire;
mod verify;
pub mod wellformed;
#[cfg(test)]
mod worst_case;

pub use client::Scores;
pub use identify::{Erasure, Gallery, Identifier, Match};
pub use quantize::{levels, Quantizer, CLIP_SIGMAS, DIMENSIONS};
pub use reply::ScoreReply;
pub use reply_wire::max_len;
pub use verify::{Verifier, DECIDER_FLOOD_BITS};
