//! `blindmatch-server serve`: the runtime, the state, the listener, and a
//! graceful stop on SIGINT/SIGTERM.

use std::io::Write as _;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::bfv::{Params, PublicKey, SecretKey};
use crate::matching::{Identifier, Verifier};

use super::api::{self, AppState, Gate, Limits};
use super::cli::ServeArgs;
use super::decider::replies::MAX_REPLIES;
use super::login::{DeciderClient, GalleryKey, GalleryKeys, Login, RateLimit, Throttle, Tokens};
use super::mirror::Mirror;
use super::shards::{ShardConfig, Sharding};
use super::store::{self, DbTarget, Store};
use super::{cache, cores, gallery, listen, metrics, params};

pub(super) fn serve_main(args: ServeArgs) -> Result<(), String> {
    let threads = args.threads.unwrap_or_else(cores).max(1);
    // One I/O worker: HTTP costs a few microseconds of CPU per request, and a
    // second worker only added cross-thread wake-ups (each readiness event
    // woke the idle one). Verifications hand this worker's duties to a
    // fresh thread while they compute (`AppState::compute_here`), so a
    // multi-threaded runtime is still required.
    runtime()?.block_on(serve(args, threads))
}

/// The runtime of a serving process (the matcher's, the decider's): one
/// I/O worker, on a multi-threaded runtime.
pub(super) fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))
}

/// Opens the store, builds the state and serves until SIGINT/SIGTERM.
async fn serve(args: ServeArgs, threads: usize) -> Result<(), String> {
    let params = params();
    let verifier = Verifier::new(&params, args.dim).map_err(|e| format!("--dim: {e}"))?;
    if let DbTarget::Sqlite(path) = &args.db {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
    }
    // The store's calls block (and PostgreSQL's run on a runtime of their
    // own): at start they run outside this runtime's scheduling.
    let wait = Duration::from_secs(args.db_wait_secs);
    let store = Arc::new(
        tokio::task::block_in_place(|| Store::connect(&args.db, wait))
            .map_err(|e| format!("{}: {e}", args.db.display()))?,
    );
    let api_keys = match &args.api_key_file {
        Some(path) => api::auth::ApiKeys::load(path)?,
        None => api::auth::ApiKeys::default(),
    };
    let login = login_mode(&args, &api_keys, &store)?;
    if let Some(login) = &login {
        tokio::task::block_in_place(|| restore_failures(login, &store))?;
    }
    // In login mode scores go to the decider only: replies masked and
    // flooded for it (`Verifier::for_decider`).
    let verifier = match &login {
        Some(_) => Verifier::for_decider(&params, args.dim).map_err(|e| format!("--dim: {e}"))?,
        None => verifier,
    };
    if args.shards.is_some() && (args.service_key.is_none() || login.is_some()) {
        return Err(
            "--shards needs --decider local --service-key: sharded galleries are the key holder's"
                .into(),
        );
    }
    let service = tokio::task::block_in_place(|| match (&args.service_key, &login) {
        (Some(path), _) => load_service(path, &params, &args, &store).map(|s| Some(Arc::new(s))),
        (None, Some(_)) => login_galleries(&params, &args, &store).map(|s| Some(Arc::new(s))),
        (None, None) => Ok(None),
    })?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("match-{i}"))
        .panic_handler(|_| tracing::error!("panic on a matching thread"))
        .build()
        .map_err(|e| format!("thread pool: {e}"))?;
    let retention = (args.audit_retention_days > 0)
        .then(|| Duration::from_secs(u64::from(args.audit_retention_days) * 86_400));
    let audit = store::AuditLog::start(store.clone(), retention)
        .map_err(|e| format!("audit thread: {e}"))?;
    let on_stop = store.clone();
    let tickets = Tokens::new(
        &store,
        "ticket",
        Duration::from_secs(args.ticket_lifetime.max(1)),
        TOKENS,
        4,
    );
    let conn_limits = listen::ConnLimits {
        max_connections: listen::raise_open_files(args.max_connections),
        header_timeout: Duration::from_millis(args.header_timeout_ms.max(1)),
        idle_timeout: Duration::from_millis(args.idle_timeout_ms.max(1)),
    };
    let state = Arc::new(AppState {
        audit,
        cache: cache::UserCache::new(args.cache_users),
        limits: match &login {
            Some(_) => Limits::new(&params).for_login_mode(&params),
            None => Limits::new(&params),
        },
        quotas: args.quotas(),
        params,
        dim: args.dim,
        verifier,
        store,
        pool,
        permits: Gate::new("work", threads * 4, args.work_queue),
        slots: Gate::new("verify", threads, args.verify_queue),
        www: args.www.clone(),
        pkg: args.pkg.clone(),
        face: args.face.clone(),
        service,
        metrics: metrics::Metrics::default(),
        body_timeout: Duration::from_millis(args.body_timeout_ms.max(1)),
        api_keys,
        metrics_public: args.metrics_public,
        tickets,
        login,
        trusted_proxies: args.trusted_proxies.clone(),
    });
    let listener = listen::bind(args.bind).map_err(|e| format!("bind {}: {e}", args.bind))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    // Other replicas call this one by its advertised address.
    let mut hosts = args.allowed_hosts.clone();
    hosts.extend(
        args.advertise
            .as_deref()
            .and_then(crate::server::shards::peer::authority)
            .map(str::to_string),
    );
    let browser = api::BrowserPolicy::new(addr, &hosts, &args.cors_origins)?;
    tracing::info!(
        %addr,
        db = %args.db.display(),
        store = state.store.kind(),
        threads,
        kernels = %crate::Backend::detect(),
        identify = state.service.is_some(),
        login = state.login.is_some(),
        management = if state.api_keys.is_open() { "open" } else { "api key" },
        hosts = %browser.hosts(),
        "serving"
    );
    browser.warn_if_unreachable(addr);
    if state.api_keys.is_open() {
        tracing::warn!(
            "no --api-key-file: anyone who reaches this address may register, enroll and delete users"
        );
    }
    // The first stdout line, for scripts and tests that bind port 0.
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "blindmatch-server listening on http://{addr}/");
        let _ = out.flush();
    }
    // Connections with TCP_NODELAY whose exchanges are timed on the wire
    // (each request's `sent` log line), up to the connection cap, with the
    // header deadline and the idle timeout (`listen`).
    let sharding = state.service.as_ref().and_then(|s| s.shards.clone());
    if let Some(sh) = &sharding {
        crate::server::shards::spawn_leases(sh.clone());
    }
    let app = api::guarded_router(state, &browser);
    listen::run(listener, app, conn_limits, shutdown_signal()).await;
    if let Some(sh) = sharding {
        tokio::task::block_in_place(|| sh.leave());
    }
    // The journaled audit rows go into the database before the process
    // ends (they would be recovered at the next start anyway).
    match tokio::task::block_in_place(|| on_stop.flush_audit()) {
        Ok(rows) => tracing::info!(audit_rows = rows, "stopped"),
        Err(e) => tracing::error!(error = %e, "audit flush at stop"),
    }
    Ok(())
}

/// Outstanding tickets (and, separately, challenges) at most.
const TOKENS: usize = 100_000;

/// The login-mode state of `--decider`, which needs the API keys and the
/// decider's token.
fn login_mode(
    args: &ServeArgs,
    api_keys: &api::auth::ApiKeys,
    store: &Arc<Store>,
) -> Result<Option<Arc<Login>>, String> {
    let Some(url) = &args.decider else {
        if args.decider_token_file.is_some() {
            return Err("--decider-token-file needs --decider".into());
        }
        if args.service_key.is_some() {
            tracing::warn!(
                "--service-key without --decider local: this process is matcher and decider in one trust domain; say so with --decider local"
            );
        }
        return Ok(None);
    };
    // The key holder's fast path, named as what it is: matcher and decider
    // in one process, one trust domain, scores answered directly.
    if url == "local" {
        if args.service_key.is_none() {
            return Err(
                "--decider local needs --service-key: the key this process decides with".into(),
            );
        }
        if args.decider_token_file.is_some() {
            return Err("--decider local takes no --decider-token-file".into());
        }
        return Ok(None);
    }
    if args.service_key.is_some() {
        return Err(
            "--decider and --service-key: a matcher in login mode holds no secret key".into(),
        );
    }
    if api_keys.is_open() {
        return Err(
            "--decider needs --api-key-file: login mode never runs with an open management API"
                .into(),
        );
    }
    let token_file = args
        .decider_token_file
        .as_ref()
        .ok_or("--decider needs --decider-token-file")?;
    let token = zeroize::Zeroizing::new(
        std::fs::read_to_string(token_file)
            .map_err(|e| format!("{}: {e}", token_file.display()))?,
    );
    let client = DeciderClient::new(url, &token)?;
    Ok(Some(Arc::new(Login::new(
        client,
        Tokens::new(
            store,
            "challenge",
            Duration::from_secs(args.challenge_lifetime.max(1)),
            TOKENS,
            16,
        ),
        Throttle::new(
            Duration::from_millis(args.failure_delay_ms),
            args.lockout_failures,
        ),
        args.audiences.clone(),
        RateLimit::new(args.identify_rate),
        crate::matching::wellformed::Checker::new(&params(), args.dim)
            .map_err(|e| format!("well-formedness checks: {e}"))?,
    ))))
}

/// Users' failed logins as the store kept them, back into the throttle: a
/// restart lifts no wait and no lockout.
fn restore_failures(login: &Login, store: &Store) -> Result<(), String> {
    let failures = store
        .load_failures()
        .map_err(|e| format!("reading failed logins: {e}"))?;
    let (now, now_ms) = (Instant::now(), crate::server::store::now_millis());
    for f in &failures {
        login.throttle.sync(&f.user, Some(f), now_ms, now);
    }
    if !failures.is_empty() {
        tracing::info!(users = failures.len(), "failed logins restored");
    }
    Ok(())
}

pub(super) async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
    tracing::info!("shutting down");
}

fn load_service(
    path: &Path,
    params: &Params,
    args: &ServeArgs,
    store: &Arc<Store>,
) -> Result<api::Service, String> {
    let mut bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let sk = SecretKey::from_bytes(params, &bytes);
    zeroize::Zeroize::zeroize(&mut bytes);
    let sk = sk.map_err(|e| format!("{}: {e}", path.display()))?;
    let pk = PublicKey::new(&sk).map_err(|e| e.to_string())?;
    let galleries = gallery::Galleries::new(params, args.dim, args.quotas());
    let (shards, mirror) = match sharding(args, params, store)? {
        // Shards are loaded by the lease task, not here.
        Some(sh) => (Some(Arc::new(sh)), None),
        None => (None, load_galleries(&galleries, store, |_| Ok(()))?),
    };
    Ok(api::Service {
        identifier: Identifier::new(params, args.dim).map_err(|e| e.to_string())?,
        galleries,
        keys: api::ServiceKeys::Local { sk, pk },
        shards,
        mirror,
    })
}

/// `--shards`: this replica's part in the sharded cluster.
fn sharding(
    args: &ServeArgs,
    params: &Params,
    store: &Arc<Store>,
) -> Result<Option<Sharding>, String> {
    let Some(shards) = args.shards else {
        if args.advertise.is_some() {
            return Err("--advertise needs --shards".into());
        }
        return Ok(None);
    };
    let id = args
        .advertise
        .clone()
        .ok_or("--shards needs --advertise: the URL other replicas reach this one at")?;
    let config = ShardConfig {
        id,
        shards,
        lease: Duration::from_millis(args.lease_ms.max(500)),
    };
    Sharding::join(config, params, args.dim, store.clone()).map(Some)
}

/// Login mode's galleries: each one's keys as the store kept them, then
/// its templates. A stored template of a gallery with no key (one made
/// under a service key) stops the start: it could never match here.
fn login_galleries(
    params: &Params,
    args: &ServeArgs,
    store: &Store,
) -> Result<api::Service, String> {
    // An identification's replies go to the decider in one request, of at
    // most `MAX_REPLIES` gallery ciphertexts.
    let mut quotas = args.quotas();
    let most = MAX_REPLIES * crate::matching::pack::templates_per_ciphertext(params, args.dim);
    if quotas.gallery_templates > most {
        tracing::info!(
            templates = most,
            "login mode: a gallery holds at most this many templates (one identification's replies to the decider)"
        );
        quotas.gallery_templates = most;
    }
    let galleries = gallery::Galleries::for_encrypted_probes(params, args.dim, quotas);
    let keys = GalleryKeys::default();
    let rows = store
        .gallery_keys()
        .map_err(|e| format!("reading the gallery keys: {e}"))?;
    for row in &rows {
        keys.insert(&row.gallery, GalleryKey::from_row(params, row)?);
        galleries
            .insert_empty(&row.gallery)
            .map_err(|e| e.message)?;
    }
    // One pass over the rows: a row of a gallery with no key stops it.
    let mirror = load_galleries(&galleries, store, |row| {
        match keys.get(row.gallery) {
        Some(_) => Ok(()),
        None => Err(format!(
            "gallery {} was made under a service key: run with --decider local --service-key, or delete it (blindmatch-server offline tools) before login mode",
            row.gallery
        )),
    }
    })?;
    Ok(api::Service {
        identifier: Identifier::new(params, args.dim).map_err(|e| e.to_string())?,
        galleries,
        keys: api::ServiceKeys::Decider(keys),
        shards: None,
        mirror,
    })
}

/// The stored gallery rows into `galleries`, row by row, a chunk parsed at
/// a time (see `gallery::Loader`): the stored gallery is never in memory
/// beside the parsed one. `check` may refuse a row, which stops the load.
/// On PostgreSQL, where other replicas write too, returns the mirror that
/// keeps `galleries` up with them.
fn load_galleries(
    galleries: &gallery::Galleries,
    store: &Store,
    check: impl Fn(&store::GalleryRowRef<'_>) -> Result<(), String>,
) -> Result<Option<Mirror>, String> {
    let mirror = match store {
        Store::Postgres(pg) => Some(Mirror::load(pg, galleries, 0, 1, check)?),
        Store::Sqlite(_) => {
            let mut loader = galleries.loader();
            store
                .for_each_gallery_row(|row| {
                    check(&row)?;
                    loader.add(row)
                })
                .map_err(|e| e.to_string())??;
            loader.finish()?;
            None
        }
    };
    let (g, t) = galleries.stats();
    tracing::info!(galleries = g, templates = t, "1:N galleries loaded");
    Ok(mirror)
}
