//! The `blindmatch-server` command line: its flags (clap) and the dispatch
//! to each subcommand.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use super::api::Quotas;
use super::{admin, bench, decide, serve};

/// `blindmatch-server`: encrypted face matching over HTTP.
#[derive(Debug, Parser)]
#[command(name = "blindmatch-server", version, about)]
pub struct Cli {
    /// Log level: error, warn, info, debug or trace.
    #[arg(long, global = true, env = "BLINDMATCH_LOG", default_value = "info")]
    pub log: String,
    /// MiB of free memory each heap keeps between requests instead of
    /// returning it to the kernel (glibc only; 0: malloc's defaults).
    #[arg(long, global = true, env = "BLINDMATCH_HEAP_PAD_MIB", default_value_t = super::heap::DEFAULT_PAD_MIB)]
    pub heap_pad_mib: usize,
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the HTTP API, the demo page and the package.
    Serve(Box<ServeArgs>),
    /// Write a service key pair for 1:N identification.
    Keygen(KeygenArgs),
    /// Measure matching throughput on this machine.
    Bench(BenchArgs),
    /// Copy the database to a new file, consistently, while a server may be
    /// serving it (restore: serve with `--db` pointing at the copy).
    Backup(BackupArgs),
    /// Print the audit log of verifications (JSON lines, oldest first), read
    /// while a server may be serving the database.
    Audit(AuditArgs),
    /// Run the decider: the key holder of login mode, which turns the
    /// matcher's replies into signed verdicts (docs/API.md, "The decider").
    Decide(DecideArgs),
}

/// `serve` flags (each also read from an environment variable).
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on (port 0 picks a free port; the chosen address is
    /// printed on stdout).
    #[arg(long, env = "BLINDMATCH_BIND", default_value = "127.0.0.1:8080")]
    pub bind: SocketAddr,
    /// The store: a SQLite file (created, with its directory, if missing;
    /// one server per file), or a PostgreSQL URL
    /// (`postgres://user[:password]@host[:port]/database`) that any number
    /// of servers share.
    #[arg(long, env = "BLINDMATCH_DB", default_value = "./data/blindmatch.db")]
    pub db: crate::server::store::DbTarget,
    /// PostgreSQL: how long to keep trying to reach the database at start
    /// (with backoff, each attempt logged) before exiting with the reason.
    #[arg(long, env = "BLINDMATCH_DB_WAIT_SECS", default_value_t = 30)]
    pub db_wait_secs: u64,
    /// Shard every 1:N gallery over the replicas sharing the PostgreSQL
    /// `--db` into this many shards (the same on every replica; with
    /// `--decider local --service-key` and `--advertise`). Each replica
    /// holds some shards in memory; identifications fan out to them.
    #[arg(long, env = "BLINDMATCH_SHARDS")]
    pub shards: Option<u32>,
    /// With `--shards`: the URL (`http://host:port`) other replicas reach
    /// this one at; also its name in the shard map.
    #[arg(long, env = "BLINDMATCH_ADVERTISE")]
    pub advertise: Option<String>,
    /// With `--shards`: how long a replica's lease on its shards lasts
    /// unrenewed (renewed every fifth of it); after a replica dies, its
    /// shards move once this has passed.
    #[arg(long, env = "BLINDMATCH_LEASE_MS", default_value_t = 5000)]
    pub lease_ms: u64,
    /// Matching threads (default: one per core).
    #[arg(long, env = "BLINDMATCH_THREADS")]
    pub threads: Option<usize>,
    /// Directory served at `/` (the demo page).
    #[arg(long, env = "BLINDMATCH_WWW", default_value = "www")]
    pub www: PathBuf,
    /// Directory served at `/pkg/` (the npm package).
    #[arg(long, env = "BLINDMATCH_PKG", default_value = "pkg")]
    pub pkg: PathBuf,
    /// Directory served at `/face/`: the demo's face model (face-api's
    /// bundle, weights and the tfjs wasm files, as scripts/setup.sh lays
    /// them out in `target/face`). Unset: `/face/` answers 404 and the demo
    /// page offers its simulated identities only.
    #[arg(long, env = "BLINDMATCH_FACE")]
    pub face: Option<PathBuf>,
    /// Embedding dimension (64, 128, 256 or 512).
    #[arg(long, env = "BLINDMATCH_DIM", default_value_t = 128)]
    pub dim: usize,
    /// Users whose parsed keys and prepared template are kept in memory
    /// (0: none); about 0.7 MiB each with a relinearization key.
    #[arg(long, env = "BLINDMATCH_CACHE_USERS", default_value_t = 256)]
    pub cache_users: usize,
    /// Service secret key file (from `keygen`): turns on 1:N identification.
    #[arg(long, env = "BLINDMATCH_SERVICE_KEY")]
    pub service_key: Option<PathBuf>,
    /// Remove audit rows older than this many days (at start, then hourly;
    /// 0 keeps them all).
    #[arg(long, env = "BLINDMATCH_AUDIT_RETENTION_DAYS", default_value_t = 90)]
    pub audit_retention_days: u32,
    /// Registered users at most (a new one past it: 409 `quota_reached`).
    #[arg(long, env = "BLINDMATCH_MAX_USERS", default_value_t = Quotas::DEFAULT.users)]
    pub max_users: usize,
    /// 1:N galleries at most.
    #[arg(long, env = "BLINDMATCH_MAX_GALLERIES", default_value_t = Quotas::DEFAULT.galleries)]
    pub max_galleries: usize,
    /// Templates in one gallery at most (erased ones included).
    #[arg(
        long,
        env = "BLINDMATCH_MAX_GALLERY_TEMPLATES",
        default_value_t = Quotas::DEFAULT.gallery_templates
    )]
    pub max_gallery_templates: usize,
    /// Memory of all galleries at most, in bytes (64 KiB per ciphertext of
    /// up to 32 templates).
    #[arg(
        long,
        env = "BLINDMATCH_MAX_GALLERY_BYTES",
        default_value_t = Quotas::DEFAULT.gallery_bytes
    )]
    pub max_gallery_bytes: usize,
    /// Connections served at once; further ones wait in the kernel's accept
    /// backlog (at most the open-file limit less a reserve).
    #[arg(long, env = "BLINDMATCH_MAX_CONNECTIONS", default_value_t = 4096)]
    pub max_connections: usize,
    /// A request's head must arrive in full within this many milliseconds
    /// of its connection becoming ready for it (accepted, or its previous
    /// reply sent); otherwise the connection is closed.
    #[arg(long, env = "BLINDMATCH_HEADER_TIMEOUT_MS", default_value_t = 10_000)]
    pub header_timeout_ms: u64,
    /// A request's body must arrive in full within this many milliseconds
    /// of its head (408 `body_timeout` otherwise).
    #[arg(long, env = "BLINDMATCH_BODY_TIMEOUT_MS", default_value_t = 15_000)]
    pub body_timeout_ms: u64,
    /// A keep-alive connection on which no request starts within this many
    /// milliseconds is closed.
    #[arg(long, env = "BLINDMATCH_IDLE_TIMEOUT_MS", default_value_t = 5_000)]
    pub idle_timeout_ms: u64,
    /// Verifications that may wait for a matching thread; past that, 503
    /// `overloaded` with `Retry-After`.
    #[arg(long, env = "BLINDMATCH_VERIFY_QUEUE", default_value_t = 64)]
    pub verify_queue: usize,
    /// Other homomorphic jobs (key and template checks, gallery appends,
    /// 1:N identification) that may wait for the pool; past that, 503
    /// `overloaded` with `Retry-After`.
    #[arg(long, env = "BLINDMATCH_WORK_QUEUE", default_value_t = 32)]
    pub work_queue: usize,
    /// `Host` header values answered (repeat or separate with commas; a
    /// name without a port matches any port). Default: the bind address,
    /// and `localhost`, `127.0.0.1` and `[::1]` with its port.
    #[arg(
        long = "allowed-host",
        env = "BLINDMATCH_ALLOWED_HOSTS",
        value_delimiter = ','
    )]
    pub allowed_hosts: Vec<String>,
    /// Origins allowed to call the API from a browser page on another
    /// origin (CORS; repeat or separate with commas). Default: none.
    #[arg(
        long = "cors-origin",
        env = "BLINDMATCH_CORS_ORIGINS",
        value_delimiter = ','
    )]
    pub cors_origins: Vec<String>,
    /// The relying parties' API keys, one per line (`#` comments and blank
    /// lines ignored): the management API (registering users, tickets,
    /// challenges, deleting users, galleries, metadata, `/metrics`) then
    /// needs `Authorization: Bearer <key>`. Required in login mode; without
    /// it, and without `--decider`, the management API is open.
    #[arg(long, env = "BLINDMATCH_API_KEY_FILE")]
    pub api_key_file: Option<PathBuf>,
    /// Serve `/metrics` without the API key.
    #[arg(long, env = "BLINDMATCH_METRICS_PUBLIC")]
    pub metrics_public: bool,
    /// Login mode: the decider's URL (`http://host:port`). The matcher then
    /// holds no secret key: users' keys come from the decider, and a login
    /// answers with the decider's signed verdict.
    #[arg(long, env = "BLINDMATCH_DECIDER")]
    pub decider: Option<String>,
    /// The file holding the token the matcher presents to the decider (the
    /// decider's `matcher.token`).
    #[arg(long, env = "BLINDMATCH_DECIDER_TOKEN_FILE")]
    pub decider_token_file: Option<PathBuf>,
    /// Relying parties a login challenge may name as its audience (repeat
    /// or separate with commas). Default: any.
    #[arg(long = "audience", env = "BLINDMATCH_AUDIENCES", value_delimiter = ',')]
    pub audiences: Vec<String>,
    /// Seconds an enrollment ticket stays valid.
    #[arg(long, env = "BLINDMATCH_TICKET_LIFETIME", default_value_t = 600)]
    pub ticket_lifetime: u64,
    /// Seconds a login challenge stays valid.
    #[arg(long, env = "BLINDMATCH_CHALLENGE_LIFETIME", default_value_t = 120)]
    pub challenge_lifetime: u64,
    /// Identifications per minute allowed to each API key (login mode); a
    /// key may burst to a minute's allowance.
    #[arg(long, env = "BLINDMATCH_IDENTIFY_RATE", default_value_t = 600)]
    pub identify_rate: u32,
    /// Failed logins in a row that lock a user out (1 to 100).
    #[arg(long, env = "BLINDMATCH_LOCKOUT_FAILURES", default_value_t = 100,
          value_parser = clap::value_parser!(u32).range(1..=100))]
    pub lockout_failures: u32,
    /// After 5 failed logins in a row (per user, per address) the next
    /// waits this many milliseconds, doubling with each further failure up
    /// to a minute (0: no waiting; lockout still applies).
    #[arg(long, env = "BLINDMATCH_FAILURE_DELAY_MS", default_value_t = 1000)]
    pub failure_delay_ms: u64,
    /// Proxies whose `X-Forwarded-For` names the client address (repeat or
    /// separate with commas); other peers are their own address.
    #[arg(
        long = "trusted-proxy",
        env = "BLINDMATCH_TRUSTED_PROXIES",
        value_delimiter = ','
    )]
    pub trusted_proxies: Vec<std::net::IpAddr>,
}

impl ServeArgs {
    /// The quotas the flags set.
    pub fn quotas(&self) -> Quotas {
        Quotas {
            users: self.max_users,
            galleries: self.max_galleries,
            gallery_templates: self.max_gallery_templates,
            gallery_bytes: self.max_gallery_bytes,
        }
    }
}

/// `keygen` flags.
#[derive(Debug, clap::Args)]
pub struct KeygenArgs {
    /// Directory for `service.sk` (secret, mode 0600) and `service.pk`.
    #[arg(long, env = "BLINDMATCH_KEY_DIR", default_value = "./data")]
    pub out: PathBuf,
    /// Overwrite existing key files.
    #[arg(long)]
    pub force: bool,
}

/// `backup` flags.
#[derive(Debug, clap::Args)]
pub struct BackupArgs {
    /// The database to copy.
    #[arg(long, env = "BLINDMATCH_DB", default_value = "./data/blindmatch.db")]
    pub db: PathBuf,
    /// The new file (must not exist).
    #[arg(long)]
    pub out: PathBuf,
}

/// `audit` flags.
#[derive(Debug, clap::Args)]
pub struct AuditArgs {
    /// The database to read.
    #[arg(long, env = "BLINDMATCH_DB", default_value = "./data/blindmatch.db")]
    pub db: PathBuf,
    /// Only this user's verifications.
    #[arg(long)]
    pub user: Option<String>,
    /// Only rows from this time on (milliseconds since the Unix epoch).
    #[arg(long, default_value_t = 0)]
    pub since: i64,
    /// At most this many rows, the most recent.
    #[arg(long, default_value_t = 100)]
    pub limit: usize,
}

/// `decide` flags (each also read from an environment variable).
#[derive(Debug, clap::Args)]
pub struct DecideArgs {
    /// Address to listen on (port 0 picks a free port; the chosen address is
    /// printed on stdout).
    #[arg(
        long,
        env = "BLINDMATCH_DECIDER_BIND",
        default_value = "127.0.0.1:8081"
    )]
    pub bind: SocketAddr,
    /// The decider's secrets: `master.key` (32 bytes), `matcher.token` (the
    /// matcher's bearer token) and `verdict-keys/*.pem` (Ed25519; the last
    /// in name order signs), each mode 0600.
    #[arg(long, env = "BLINDMATCH_DECIDER_DIR", default_value = "./data/decider")]
    pub dir: PathBuf,
    /// Create whichever of the secrets is missing before serving.
    #[arg(long)]
    pub init: bool,
    /// Rotate the verdict keys: add a new one that signs from now on (the
    /// previous ones stay published, so their verdicts keep checking until
    /// their files are removed).
    #[arg(long)]
    pub new_verdict_key: bool,
    /// The verdicts' `iss` (default: `http://` and the bound address).
    #[arg(long, env = "BLINDMATCH_DECIDER_ISSUER")]
    pub issuer: Option<String>,
    /// Accept when the rule's cosine is at least this.
    #[arg(long, env = "BLINDMATCH_THRESHOLD", default_value_t = 0.5)]
    pub threshold: f64,
    /// `max`: the best enrolled sample; `mean`: their mean.
    #[arg(long, env = "BLINDMATCH_RULE", default_value = "max", value_parser = ["max", "mean"])]
    pub rule: String,
    /// Seconds a verdict stays valid (`exp - iat`).
    #[arg(long, env = "BLINDMATCH_VERDICT_LIFETIME", default_value_t = 300)]
    pub verdict_lifetime: u64,
    /// Embedding dimension.
    #[arg(long, env = "BLINDMATCH_DIM", default_value_t = 128)]
    pub dim: usize,
}

/// `bench` flags.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// Verifications per measurement.
    #[arg(long, default_value_t = 40)]
    pub verifications: usize,
    /// Gallery templates for the 1:N measurement (a multiple of 32 is exact).
    #[arg(long, default_value_t = 32 * 256)]
    pub gallery: usize,
    /// Threads for the all-cores measurement (default: one per core).
    #[arg(long, env = "BLINDMATCH_THREADS")]
    pub threads: Option<usize>,
}

/// Entry point of the `blindmatch-server` binary.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(&cli.log);
    super::heap::keep_pad(cli.heap_pad_mib);
    // BLINDMATCH_BACKEND is read by the library, which cannot refuse it;
    // a name this machine cannot run stops the server here.
    let result = crate::Backend::from_env().and_then(|_| match cli.command {
        Command::Serve(args) => serve::serve_main(*args),
        Command::Keygen(args) => admin::keygen(&args),
        Command::Bench(args) => bench::bench(&args),
        Command::Backup(args) => admin::backup(&args),
        Command::Audit(args) => admin::audit(&args),
        Command::Decide(args) => decide::decide_main(args),
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("blindmatch-server: {e}");
            ExitCode::FAILURE
        }
    }
}

fn init_logging(level: &str) {
    let level = level
        .parse::<tracing::Level>()
        .unwrap_or(tracing::Level::INFO);
    let _ = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .try_init();
}
