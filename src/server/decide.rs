//! `blindmatch-server decide`: the decider's secrets from its directory, its
//! state, the listener, and a graceful stop on SIGINT/SIGTERM.

use std::io::Write as _;
use std::path::Path;
use std::sync::Arc;

use super::api::Limits;
use super::cli::DecideArgs;
use super::decider::http::{self, DeciderState};
use super::decider::{Decider, MasterSecret, Policy, Rule};
use super::verdict::VerdictKeys;
use super::{listen, params, serve};

/// The files of a decider's directory.
const MASTER: &str = "master.key";
const TOKEN: &str = "matcher.token";
const VERDICT_KEYS: &str = "verdict-keys";

pub(super) fn decide_main(args: DecideArgs) -> Result<(), String> {
    serve::runtime()?.block_on(decide(args))
}

async fn decide(args: DecideArgs) -> Result<(), String> {
    if args.init {
        init(&args.dir)?;
    }
    if args.new_verdict_key {
        let path = VerdictKeys::rotate(
            &args.dir.join(VERDICT_KEYS),
            super::store::now_secs() as u64,
        )
        .map_err(|e| e.to_string())?;
        tracing::info!(path = %path.display(), "verdict key added: it signs from now on");
    }
    let master = MasterSecret::load(&args.dir.join(MASTER)).map_err(|e| e.to_string())?;
    let token = zeroize::Zeroizing::new(
        std::fs::read_to_string(args.dir.join(TOKEN))
            .map_err(|e| format!("{}: {e}", args.dir.join(TOKEN).display()))?,
    );
    let token = token.trim();
    if token.len() < 32 {
        return Err(format!(
            "{TOKEN}: a token of at least 32 characters is required"
        ));
    }
    let keys = VerdictKeys::load_dir(&args.dir.join(VERDICT_KEYS)).map_err(|e| e.to_string())?;
    let listener = listen::bind(args.bind).map_err(|e| format!("bind {}: {e}", args.bind))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let issuer = args
        .issuer
        .clone()
        .unwrap_or_else(|| format!("http://{addr}"));
    let policy = Policy {
        threshold: args.threshold,
        rule: if args.rule == "mean" {
            Rule::Mean
        } else {
            Rule::Max
        },
    };
    let params = params();
    let decider = Decider::new(
        master,
        &params,
        args.dim,
        policy,
        keys,
        issuer.clone(),
        args.verdict_lifetime,
    )
    .map_err(|e| format!("--dim: {e}"))?;
    let kid = decider.verdict_keys().signing().kid().to_string();
    let state = Arc::new(DeciderState::new(
        decider,
        token.as_bytes(),
        Limits::new(&params),
    ));
    tracing::info!(%addr, %issuer, kid, threshold = args.threshold, rule = %args.rule, "deciding");
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "blindmatch-server decider listening on http://{addr}/");
        let _ = out.flush();
    }
    // The matcher's accept loop, with its header deadline and idle
    // timeout; an unauthenticated request is refused before its body is
    // read (the token is checked first).
    let limits = listen::ConnLimits {
        max_connections: listen::raise_open_files(1024),
        header_timeout: std::time::Duration::from_secs(10),
        idle_timeout: std::time::Duration::from_secs(5),
    };
    listen::run(
        listener,
        http::router(state),
        limits,
        serve::shutdown_signal(),
    )
    .await;
    Ok(())
}

/// Creates whichever secret of `dir` is missing: the master secret, the
/// matcher's token (64 hex characters) and a first verdict key.
fn init(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let master = dir.join(MASTER);
    if !master.exists() {
        MasterSecret::generate()
            .and_then(|m| m.save_new(&master))
            .map_err(|e| e.to_string())?;
        tracing::info!(path = %master.display(), "master secret created");
    }
    let token = dir.join(TOKEN);
    if !token.exists() {
        let mut raw = zeroize::Zeroizing::new([0u8; 32]);
        getrandom::fill(&mut raw[..]).map_err(|e| format!("system RNG: {e}"))?;
        let hex: zeroize::Zeroizing<String> =
            zeroize::Zeroizing::new(raw.iter().map(|b| format!("{b:02x}")).collect());
        super::secret_file::create_secret(&token, hex.as_bytes())
            .map_err(|e| format!("{}: {e}", token.display()))?;
        tracing::info!(path = %token.display(), "matcher token created");
    }
    let keys = dir.join(VERDICT_KEYS);
    let empty = std::fs::read_dir(&keys)
        .map(|mut d| d.next().is_none())
        .unwrap_or(true);
    if empty {
        let path = VerdictKeys::rotate(&keys, super::store::now_secs() as u64)
            .map_err(|e| e.to_string())?;
        tracing::info!(path = %path.display(), "verdict key created");
    }
    Ok(())
}
