//! The matching server over real HTTP: each test starts the built
//! `blindmatch-server` binary on 127.0.0.1 (port 0) with a temporary SQLite
//! file and talks to it over loopback. Nothing leaves 127.0.0.1.
//!
//! One test binary (`--test server`): [`harness`] holds what the tests
//! share, the other modules the tests by subject.
#![cfg(all(feature = "server", not(target_arch = "wasm32")))]

mod attack;
mod harness;

mod cli;
mod cluster;
mod corruption;
mod decider;
mod disconnect;
mod durability;
mod errors;
mod flows;
mod gallery;
mod growth;
mod hostile;
mod identify;
mod load;
mod login;
mod namesake;
mod origin;
mod outage;
mod postgres;
mod quotas;
mod replicas;
mod scale;
mod shards;
mod stall;
mod store;
