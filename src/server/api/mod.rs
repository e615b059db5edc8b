//! The HTTP API (docs/API.md): routes, handlers, JSON errors, static files.
//!
//! Handlers never run homomorphic work or SQLite on a thread that is doing
//! the runtime's I/O: a verification computes on its own thread after handing
//! the I/O duties to another ([`AppState::compute_here`]), other parsing and
//! 1:N matching go to the rayon pool ([`AppState::compute`]), store calls to
//! tokio's blocking pool; a verification's audit row is journaled by its own
//! thread (one `write`) and moved into the database by the audit flusher.
//!
//! * [`router`](mod@router): the routes and their layers; [`auth`]: the
//!   credential each route needs, and the API keys.
//! * [`state`]: [`AppState`], [`Service`], [`Limits`], [`Quotas`].
//! * [`error`]: [`ApiError`] and the conversions into it; [`code`]: the
//!   [`ErrorCode`] of each (docs/API.md's error table).
//! * [`extract`]: checked names and size-limited binary bodies;
//!   `deadline`: the body deadline; [`origin`]: the `Host` check, the
//!   bodies' media types, CORS; [`gate`]: the bounded queues for matching.
//! * `users`, `verify`, `login` (tickets, challenges, login mode),
//!   `galleries` (1:N: a router with its own state; `sharded`: its
//!   routes over sharded galleries),
//!   [`meta`], `static_files`: the handlers, by resource; `wire`: the keys
//!   framing and the fresh-ciphertext check; `log`: the request-logging
//!   middleware.

pub mod auth;
mod checks;
pub mod code;
mod deadline;
pub mod error;
pub mod extract;
mod galleries;
pub mod gate;
mod log;
mod login;
mod login_galleries;
pub mod meta;
pub mod origin;
mod replicated;
pub mod router;
mod sharded;
pub mod state;
mod static_files;
mod users;
mod verify;
mod wire;

pub use code::ErrorCode;
pub use error::{ApiError, ApiResult};
pub use extract::{check_claim, check_name, MAX_CLAIM_LEN, MAX_NAME_LEN};
pub use gate::Gate;
pub use meta::params_description;
pub use origin::BrowserPolicy;
pub use router::{guarded_router, router};
pub use state::{AppState, Limits, Quotas, Service, ServiceKeys};
pub use wire::{frame_keys, split_keys};

/// The Content-Security-Policy sent with every response: same-origin
/// everything, plus `'wasm-unsafe-eval'` so the page can compile the package's
/// WebAssembly. Nothing broader.
pub const CSP: &str = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; \
object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'";

#[cfg(test)]
mod tests;
