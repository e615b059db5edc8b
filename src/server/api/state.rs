//! The handlers' shared state: [`AppState`], the 1:N [`Service`], the
//! per-route [`Limits`], and where work runs (the rayon pool, a matching
//! slot on the current thread, tokio's blocking pool for the store).

use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;

use crate::bfv::{Params, PublicKey, SecretKey};
use crate::matching::{Identifier, Verifier};
use crate::server::cache::UserCache;
use crate::server::gallery::Galleries;
use crate::server::metrics::Metrics;
use crate::server::store::{AuditLog, Store, StoreError};

use crate::server::login::{GalleryKeys, Login, Tokens};

use super::auth::ApiKeys;
use super::{ApiError, Gate};

/// Per-route body limits, derived from the parameters: the largest valid
/// object of each kind (anything longer is refused with 413 and never
/// buffered past the limit). Fields in name order, as `/v1/params` lists
/// them.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Limits {
    /// A ciphertext of size 3 over every prime of Q, unseeded.
    pub ciphertext: usize,
    /// The keys framing: two length prefixes, an unseeded public key and an
    /// unseeded relinearization key.
    pub keys: usize,
    /// A login probe: a ciphertext, or in login mode a bundle of one sample.
    pub probe: usize,
    /// An identification request (what a decider reads): a list of the
    /// score reply list and the probe's check replies.
    pub replies: usize,
    /// A compact score reply at the smallest dimension (what a decider
    /// reads).
    pub reply: usize,
    /// A template upload: a ciphertext, or in login mode a bundle of the
    /// most samples with their one-hot ciphertexts.
    pub template: usize,
    /// What a decider reads to check a template: the check replies of the
    /// most samples.
    pub template_checks: usize,
    /// What a decider reads for a verdict: the score reply and the probe's
    /// check replies, in the list framing.
    pub verdict: usize,
}

impl Limits {
    /// The limits for `params`.
    pub fn new(params: &Params) -> Self {
        use crate::bfv::ObjectKind;
        let max = |kind| crate::matching::max_len(kind, params) as usize;
        let ciphertext = max(ObjectKind::Ciphertext);
        let reply = max(ObjectKind::ScoreReply);
        let items = crate::matching::wellformed::max_items(params);
        // A u32 count, then a u32 length before each item.
        let list = |n: usize, each: usize| 4 + n * (4 + each);
        Self {
            ciphertext,
            // Two u32 length prefixes.
            keys: 8 + max(ObjectKind::PublicKey) + max(ObjectKind::RelinKey),
            reply,
            // The reply list (one more item), then the probe's check replies.
            replies: list(items.probe_bits + items.probe_replies, ciphertext)
                + 4
                + crate::server::decider::replies::max_len(params),
            template: ciphertext,
            probe: ciphertext,
            verdict: list(1 + items.probe_bits + items.probe_replies, ciphertext),
            template_checks: list(items.template_bits + items.template_replies, ciphertext),
        }
    }

    /// The limits of a matcher in login mode: uploads are bundles.
    pub fn for_login_mode(self, params: &Params) -> Self {
        let items = crate::matching::wellformed::max_items(params);
        let list = |n: usize| 4 + n * (4 + self.ciphertext);
        Self {
            template: list(1 + items.template_bits),
            probe: list(1 + items.probe_bits),
            ..self
        }
    }
}

/// How much the server stores at most (`serve --max-*`): a request that
/// would go past one is refused with 409 `quota_reached`, naming the flag.
/// What a database already holds past a quota lowered since is kept and
/// served.
#[derive(Clone, Copy, Debug)]
pub struct Quotas {
    /// Registered users (`--max-users`).
    pub users: usize,
    /// Galleries (`--max-galleries`).
    pub galleries: usize,
    /// Templates in one gallery, erased ones included (`--max-gallery-templates`).
    pub gallery_templates: usize,
    /// Memory of all galleries' ciphertexts, in bytes (`--max-gallery-bytes`).
    pub gallery_bytes: usize,
}

impl Quotas {
    /// The defaults, for a 2-core machine with a few GB of memory: 10,000
    /// users (about 2.6 GB of database with relinearization keys), 64
    /// galleries, 524,288 templates in one gallery and 1 GiB of gallery
    /// memory (as many templates, 16,384 ciphertexts of 64 KiB).
    pub const DEFAULT: Self = Self {
        users: 10_000,
        galleries: 64,
        gallery_templates: 524_288,
        gallery_bytes: 1 << 30,
    };
}

/// Shared state of the handlers.
#[derive(Debug)]
pub struct AppState {
    pub params: Params,
    pub dim: usize,
    pub verifier: Verifier,
    pub store: Arc<Store>,
    /// The audit log (see [`AuditLog::record`]).
    pub audit: AuditLog,
    /// Parsed keys and templates of recent users.
    pub cache: UserCache,
    pub pool: rayon::ThreadPool,
    /// Jobs queued on or running on `pool`, and the bounded queue of those
    /// waiting for one of them (`--work-queue`).
    pub permits: Gate,
    /// Verifications computing at once ([`AppState::compute_here`]), one
    /// per matching thread, and the bounded queue of those waiting
    /// (`--verify-queue`).
    pub slots: Gate,
    pub limits: Limits,
    pub quotas: Quotas,
    pub www: PathBuf,
    pub pkg: PathBuf,
    /// `--face`: the face model served at `/face/`, if any.
    pub face: Option<PathBuf>,
    /// 1:N mode: the service key and the galleries (`serve --service-key`).
    pub service: Option<Arc<Service>>,
    /// Request counters for `GET /metrics`.
    pub metrics: Metrics,
    /// A request's body must arrive in full within this time of its head
    /// (`--body-timeout-ms`, the `deadline` layer).
    pub body_timeout: std::time::Duration,
    /// The relying parties' API keys (`--api-key-file`; none: open).
    pub api_keys: ApiKeys,
    /// `/metrics` without the API key (`--metrics-public`).
    pub metrics_public: bool,
    /// Outstanding enrollment tickets.
    pub tickets: Tokens<()>,
    /// Login mode (`--decider`): the decider, challenges, failed logins.
    pub login: Option<Arc<Login>>,
    /// Peers whose `X-Forwarded-For` names the client (`--trusted-proxy`).
    pub trusted_proxies: Vec<std::net::IpAddr>,
}

/// 1:N state: the galleries in memory and the keys they are under.
pub struct Service {
    pub identifier: Identifier,
    pub galleries: Galleries,
    pub keys: ServiceKeys,
    /// Sharded galleries (`--shards`): `galleries` is then empty, and each
    /// held shard has galleries of its own.
    pub shards: Option<Arc<crate::server::shards::Sharding>>,
    /// On PostgreSQL without shards: `galleries` holds every gallery, kept
    /// up with what every replica writes (caught up before each answer).
    pub mirror: Option<crate::server::mirror::Mirror>,
}

/// Whose keys the galleries are under.
pub enum ServiceKeys {
    /// `--decider local --service-key`: the operator's service key, held
    /// here; this process is matcher and decider in one trust domain, and
    /// answers identifications with scores.
    Local { sk: SecretKey, pk: PublicKey },
    /// Login mode: each gallery under its own key, derived by the decider;
    /// this process holds no secret key, and identifications are the
    /// decider's signed answers.
    Decider(GalleryKeys),
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Service { .. }")
    }
}

impl std::fmt::Debug for ServiceKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Local { .. } => "ServiceKeys::Local { .. }",
            Self::Decider(_) => "ServiceKeys::Decider(..)",
        })
    }
}

impl AppState {
    /// Runs `f` on the rayon pool (bounded by `permits`; 503 `overloaded`
    /// when its queue is full), so slow homomorphic work never blocks an
    /// I/O thread.
    pub async fn compute<T, F>(&self, f: F) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let _permit = self.permits.enter().await?;
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.pool.spawn(move || {
            // A panic must not reach rayon (whose default is to abort the
            // process): it becomes a 500 for this request only.
            let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
            if out.is_err() {
                tracing::error!("a matching task panicked");
            }
            let _ = tx.send(out.ok());
        });
        rx.await
            .ok()
            .flatten()
            .ok_or_else(|| ApiError::internal("worker task failed"))
    }

    /// Runs `f` on the current thread once one of the `--threads` matching
    /// slots is free (503 `overloaded` when the queue for them is full), after handing this thread's I/O duties (tokio's worker
    /// core) to another thread with `block_in_place`: no other request waits
    /// behind `f`, and neither the job nor its result crosses to another
    /// thread. This is the verify path: handing a verification to the pool
    /// and its result back cost 40–80 µs per request on a 2-core machine,
    /// a sixth of the matching. Outside a multi-threaded runtime it is
    /// [`AppState::compute`].
    pub async fn compute_here<T, F>(&self, f: F) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let multi_thread = tokio::runtime::Handle::try_current()
            .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
        if !multi_thread {
            return self.compute(f).await;
        }
        let _slot = self.slots.enter().await?;
        tokio::task::block_in_place(|| {
            // As on the pool: a panic is a 500 for this request only.
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|_| {
                tracing::error!("a matching task panicked");
                ApiError::internal("worker task failed")
            })
        })
    }
}

/// Runs a mutation (store write, then memory and cache) as a task of its
/// own and waits for it. A client that goes away drops the handler's future
/// but not this task, so the mutation is never cut between its store write
/// and the memory or cache update that must follow it.
pub(crate) async fn to_completion<T, F>(f: F) -> Result<T, ApiError>
where
    T: Send + 'static,
    F: std::future::Future<Output = Result<T, ApiError>> + Send + 'static,
{
    tokio::spawn(f)
        .await
        .map_err(|_| ApiError::internal("write task failed"))?
}

/// Runs a store call on tokio's blocking pool.
pub(super) async fn db<T, F>(store: &Arc<Store>, f: F) -> Result<T, ApiError>
where
    T: Send + 'static,
    F: FnOnce(&Store) -> Result<T, StoreError> + Send + 'static,
{
    let store = store.clone();
    tokio::task::spawn_blocking(move || f(&store))
        .await
        .map_err(|_| ApiError::internal("store task failed"))?
        .map_err(ApiError::from)
}

impl axum::extract::FromRef<Arc<AppState>> for Limits {
    fn from_ref(st: &Arc<AppState>) -> Self {
        st.limits
    }
}
