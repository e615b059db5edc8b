//! A private PostgreSQL for the tests: a data directory of its own,
//! started on a free loopback port (as the `postgres` user when the tests
//! run as root, which PostgreSQL refuses to run as), trust authentication
//! for the role `bm`. [`shared`] is one per test process, each test in a
//! database of its own; [`Postgres::start`] gives a test a cluster it may
//! stop and restart.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

pub(crate) struct Postgres {
    dir: PathBuf,
    bin: PathBuf,
    pub(crate) port: u16,
}

/// The directory of PostgreSQL's server binaries (Debian's layout), or a
/// panic saying how to get them.
fn bin_dir() -> PathBuf {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|p| p.join("initdb").is_file())
        .collect();
    found.sort();
    found.pop().unwrap_or_else(|| {
        panic!("PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): run scripts/setup.sh")
    })
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"))
}

/// A loopback port nothing listens on now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Postgres {
    /// Creates and starts a cluster under a new temporary directory.
    pub(crate) fn start(tag: &str) -> Postgres {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "blindmatch-pg-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let pg = Postgres {
            dir,
            bin: bin_dir(),
            port: free_port(),
        };
        if is_root() {
            let ok = Command::new("chown")
                .args(["postgres:postgres"])
                .arg(&pg.dir)
                .status()
                .unwrap()
                .success();
            assert!(ok, "chown postgres {}", pg.dir.display());
        }
        let out = pg
            .tool("initdb")
            .arg("-D")
            .arg(pg.data())
            .args(["-A", "trust", "-U", "bm", "--no-sync"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "initdb: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        pg.start_again();
        pg
    }

    /// A PostgreSQL tool, run as `postgres` when the tests are root.
    fn tool(&self, name: &str) -> Command {
        let path = self.bin.join(name);
        let mut cmd = if is_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(path);
            c
        } else {
            Command::new(path)
        };
        cmd.stdin(Stdio::null());
        cmd
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// Starts the server (again, after [`Postgres::stop`] or
    /// [`Postgres::kill`]) on the same port.
    pub(crate) fn start_again(&self) {
        let opts = format!(
            "-k {} -p {} -c listen_addresses=127.0.0.1 -c fsync=on -c max_connections=200",
            self.dir.display(),
            self.port
        );
        let out = self
            .tool("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .args(["-o", &opts, "-l"])
            .arg(self.dir.join("log"))
            .args(["-w", "-t", "30", "start"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "pg_ctl start: {}{}",
            String::from_utf8_lossy(&out.stdout),
            std::fs::read_to_string(self.dir.join("log")).unwrap_or_default()
        );
    }

    /// Stops the server: `fast` (clients disconnected, a clean shutdown)
    /// or `immediate` (the postmaster and its children quit at once,
    /// recovery at the next start: a crash).
    pub(crate) fn stop(&self, mode: &str) {
        let _ = self
            .tool("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .args(["-m", mode, "-w", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }

    /// The URL of database `db` as role `bm`.
    pub(crate) fn url(&self, db: &str) -> String {
        format!("postgres://bm@127.0.0.1:{}/{db}", self.port)
    }

    /// Runs `sql` with psql in database `db`; returns its unaligned output.
    pub(crate) fn psql(&self, db: &str, sql: &str) -> String {
        let out = Command::new("psql")
            .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1"])
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-U",
                "bm",
                "-d",
                db,
            ])
            .args(["-c", sql])
            .output()
            .expect("psql");
        assert!(
            out.status.success(),
            "psql {sql}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }

    /// A new, empty database; returns its URL.
    pub(crate) fn database(&self, tag: &str) -> String {
        static N: AtomicUsize = AtomicUsize::new(0);
        let name = format!("t_{tag}_{}", N.fetch_add(1, Ordering::Relaxed));
        self.psql("postgres", &format!("CREATE DATABASE {name}"));
        self.url(&name)
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        self.stop("immediate");
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One cluster for the whole test process, stopped and removed when the
/// process ends (by a watcher process, since statics are never dropped).
pub(crate) fn shared() -> &'static Postgres {
    static PG: OnceLock<Postgres> = OnceLock::new();
    PG.get_or_init(|| {
        let pg = Postgres::start("shared");
        let ctl = format!(
            "{} '{}' -D '{}' -m immediate stop >/dev/null 2>&1",
            if is_root() {
                "runuser -u postgres --"
            } else {
                ""
            },
            pg.bin.join("pg_ctl").display(),
            pg.data().display()
        );
        let stop = format!(
            "while kill -0 {pid} 2>/dev/null; do sleep 0.5; done; {ctl}; rm -rf '{dir}'",
            pid = std::process::id(),
            dir = pg.dir.display()
        );
        // Not waited for: it outlives this process on purpose.
        #[allow(clippy::zombie_processes)]
        Command::new("setsid")
            .args(["sh", "-c", &stop])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the shared PostgreSQL's watcher");
        pg
    })
}
