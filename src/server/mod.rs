//! The matching server (feature `server`, native only): an HTTP API over
//! axum and tokio, an embedded SQLite store, and homomorphic matching on a
//! rayon pool sized to the cores. docs/API.md documents the endpoints.
//!
//! * [`api`]: routes, handlers, JSON errors, static files with a strict CSP.
//! * [`store`]: SQLite in WAL mode with `synchronous=FULL`; every write is
//!   one transaction, committed before the reply.
//! * [`gallery`]: 1:N galleries in memory (`serve --service-key`);
//!   [`mirror`]: galleries kept up with PostgreSQL's rows where replicas
//!   share it; [`shards`]: galleries sharded over replicas (`serve
//!   --shards`).
//! * [`routes`]: the route table the router and the metrics share;
//!   [`http1`]: the outgoing calls (to the decider, to other replicas).
//! * [`decider`]: the login decision (per-user keys, policy, verdict).
//! * [`login`]: the matcher's side of login mode (the decider's client,
//!   tickets and challenges, failed-login throttling).
//! * [`verdict`]: signed verdicts (Ed25519 JWS) and their JWK set.
//! * [`cli`]: the command line; `serve`, `bench` and `admin` (keygen,
//!   backup, audit) run its subcommands; [`heap`]: the free memory malloc
//!   keeps between requests.
//!
//! The `blindmatch-server` binary calls [`main`].

mod admin;
pub mod api;
mod bench;
pub mod cache;
pub mod cli;
pub mod conn;
mod decide;
pub mod decider;
pub mod gallery;
pub mod heap;
pub mod http1;
mod listen;
pub mod login;
pub mod metrics;
pub mod mirror;
pub mod routes;
mod secret_file;
mod serve;
pub mod shards;
pub mod store;
#[cfg(test)]
mod test_dir;
pub mod verdict;

pub use api::{frame_keys, split_keys, ApiError, AppState, Limits, CSP};
pub use cli::{
    main, AuditArgs, BackupArgs, BenchArgs, Cli, Command, DecideArgs, KeygenArgs, ServeArgs,
};
pub use store::{journal, Store, StoreError, SCHEMA_VERSION};

use crate::bfv::Params;

/// Matching threads by default: one per core.
fn cores() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// The parameters every build uses.
pub fn params() -> Params {
    Params::auth4096()
}
