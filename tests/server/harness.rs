//! What every server test shares: the binary started on loopback, its
//! temporary directory, HTTP calls, the client-side keys and objects.

pub(crate) use std::io::{BufRead, BufReader, Read};
pub(crate) use std::path::{Path, PathBuf};
pub(crate) use std::process::{Child, Command, Stdio};
pub(crate) use std::sync::atomic::{AtomicUsize, Ordering};
pub(crate) use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
pub(crate) use std::time::{Duration, Instant};

pub(crate) use blindmatch::bfv::{
    Ciphertext, CoefficientEncoder, Evaluator, Params, Prng, PublicKey, RelinKey, SecretKey,
};
pub(crate) use blindmatch::matching::{client, Quantizer};
pub(crate) use blindmatch::server::{frame_keys, CSP};

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_blindmatch-server");
pub(crate) const DIM: usize = 128;

// ---------------------------------------------------------------- harness

/// The server binary as a command. `BLINDMATCH_TEST_RUNNER` (for example
/// `qemu-aarch64 -L /usr/aarch64-linux-gnu`) runs it under an emulator, as
/// Cargo's target runner does for the test binary itself.
pub(crate) fn server_cmd() -> Command {
    match std::env::var("BLINDMATCH_TEST_RUNNER") {
        Ok(runner) if !runner.trim().is_empty() => {
            let mut parts = runner.split_whitespace();
            let mut cmd = Command::new(parts.next().unwrap());
            cmd.args(parts).arg(BIN);
            cmd
        }
        _ => Command::new(BIN),
    }
}

/// Whether the server runs under an emulator (`BLINDMATCH_TEST_RUNNER`), in
/// which case `test`, which checks nothing architecture-specific, says so
/// and why, and skips itself.
pub(crate) fn emulated(test: &str, why: &str) -> bool {
    let runner = std::env::var("BLINDMATCH_TEST_RUNNER").unwrap_or_default();
    if runner.trim().is_empty() {
        return false;
    }
    println!("{test}: skipped under BLINDMATCH_TEST_RUNNER ({why})");
    true
}

pub(crate) static NEXT_DIR: AtomicUsize = AtomicUsize::new(0);

/// The tests run in parallel. The overhead measurement takes this lock
/// exclusively, so that it has the machine to itself; every other test holds
/// it shared for its whole run.
pub(crate) static MACHINE: RwLock<()> = RwLock::new(());

pub(crate) fn alone() -> RwLockWriteGuard<'static, ()> {
    MACHINE.write().unwrap_or_else(|e| e.into_inner())
}

pub(crate) fn shared() -> RwLockReadGuard<'static, ()> {
    MACHINE.read().unwrap_or_else(|e| e.into_inner())
}

/// A directory removed when the test passes (kept, with the server log,
/// when it fails).
pub(crate) struct TempDir(pub(crate) PathBuf);

impl std::ops::Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// A fresh directory under the target's temporary directory.
pub(crate) fn temp_dir(tag: &str) -> TempDir {
    let n = NEXT_DIR.fetch_add(1, Ordering::Relaxed);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("server-{tag}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    TempDir(dir)
}

/// Starts `cmd` (logging to `log`, appended) and reads the first stdout
/// line, `banner` and then the URL it listens on (loopback).
pub(crate) fn spawn_listening(mut cmd: Command, log: &Path, banner: &str) -> (Child, String) {
    let log_file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .unwrap();
    let mut child = cmd
        .env("BLINDMATCH_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(log_file))
        .spawn()
        .expect("start blindmatch-server");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix(banner)
        .unwrap_or_else(|| {
            let log = std::fs::read_to_string(log).unwrap_or_default();
            panic!("did not start: {line:?}\n{log}")
        })
        .trim_end_matches('/')
        .to_string();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    (child, url)
}

/// A running server process; killed (SIGKILL) on drop.
pub(crate) struct Server {
    pub(crate) child: Arc<Mutex<Child>>,
    pub(crate) url: String,
}

impl Server {
    pub(crate) fn start(dir: &Path, extra: &[&str]) -> Server {
        let db = dir.join("blindmatch.db").display().to_string();
        Server::start_on(dir, &db, "server.log", extra)
    }

    /// A server on `db` (a file or a `postgres://` URL), logging to
    /// `dir/log`.
    pub(crate) fn start_on(dir: &Path, db: &str, log: &str, extra: &[&str]) -> Server {
        Server::start_at(dir, db, log, "127.0.0.1:0", extra)
    }

    /// [`Server::start_on`] bound to `bind` (a replica started again on
    /// its address).
    pub(crate) fn start_at(dir: &Path, db: &str, log: &str, bind: &str, extra: &[&str]) -> Server {
        let mut cmd = server_cmd();
        cmd.arg("serve").args(["--bind", bind]);
        if !extra.contains(&"--threads") {
            cmd.args(["--threads", "2"]);
        }
        cmd.args(["--db", db])
            .arg("--www")
            .arg(dir.join("www"))
            .arg("--pkg")
            .arg(dir.join("pkg"))
            .args(extra);
        let (child, url) = spawn_listening(cmd, &dir.join(log), "blindmatch-server listening on ");
        Server {
            child: Arc::new(Mutex::new(child)),
            url,
        }
    }

    pub(crate) fn kill(&self) {
        let mut c = self.child.lock().unwrap();
        let _ = c.kill();
        let _ = c.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A running decider (`decide --init`, issuer `https://login.example`);
/// killed on drop.
pub(crate) struct Decider {
    child: Child,
    pub(crate) url: String,
    /// The token the matcher presents (its file: `token_file`).
    pub(crate) token: String,
    pub(crate) token_file: PathBuf,
}

impl Decider {
    pub(crate) fn start(dir: &Path) -> Decider {
        Decider::start_at(dir, "127.0.0.1:0", &[])
    }

    /// Stops the decider and starts it again on the same address and
    /// secrets, with `extra` flags (`--new-verdict-key`...).
    pub(crate) fn restart(&mut self, dir: &Path, extra: &[&str]) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let addr = self
            .url
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_string();
        *self = Decider::start_at(dir, &addr, extra);
    }

    fn start_at(dir: &Path, bind: &str, extra: &[&str]) -> Decider {
        let secrets = dir.join("decider");
        let mut cmd = server_cmd();
        cmd.args(["decide", "--init", "--bind", bind, "--dir"])
            .arg(&secrets)
            .args(["--issuer", ISSUER])
            .args(extra);
        let (child, url) = spawn_listening(
            cmd,
            &dir.join("decider.log"),
            "blindmatch-server decider listening on ",
        );
        let token_file = secrets.join("matcher.token");
        let token = std::fs::read_to_string(&token_file)
            .unwrap()
            .trim()
            .to_string();
        Decider {
            child,
            url,
            token,
            token_file,
        }
    }
}

impl Drop for Decider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The issuer the test deciders sign as.
pub(crate) const ISSUER: &str = "https://login.example";
/// The relying party the test verdicts are for.
pub(crate) const APP: &str = "https://app.example";

/// A request with extra headers (`authorization`, `x-forwarded-for`...).
pub(crate) fn call_with(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
) -> Resp {
    try_request(method, url, headers, body, "application/octet-stream")
        .unwrap_or_else(|e| panic!("{method} {url}: {e}"))
}

/// What `jose` (examples/relying-party/verify.mjs, the way a Node backend
/// checks a verdict) says of `token` for audience `aud` and challenge
/// `nonce`: its exit code and the outcome (or jose's error code).
pub(crate) fn jose(jwks: &Path, token: &str, aud: &str, nonce: &str) -> (i32, String) {
    let (code, v) = verify_mjs(&[], jwks, token, aud, nonce);
    let said = v["outcome"].as_str().or(v["code"].as_str()).unwrap_or("");
    (code, said.to_string())
}

/// What `jose` says of an identification `token` (examples/relying-party/
/// verify.mjs --kind identification): its exit code and the matched
/// template indices (or jose's error code).
pub(crate) fn jose_identification(
    jwks: &Path,
    token: &str,
    aud: &str,
    nonce: &str,
) -> (i32, Result<Vec<u64>, String>) {
    let (code, v) = verify_mjs(&["--kind", "identification"], jwks, token, aud, nonce);
    let said = match v["matches"].as_array() {
        Some(m) => Ok(m.iter().map(|i| i.as_u64().unwrap()).collect()),
        None => Err(v["code"].as_str().unwrap_or("").to_string()),
    };
    (code, said)
}

/// Runs examples/relying-party/verify.mjs on `token`: its exit code and the
/// JSON it prints.
fn verify_mjs(
    extra: &[&str],
    jwks: &Path,
    token: &str,
    aud: &str,
    nonce: &str,
) -> (i32, serde_json::Value) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/relying-party/verify.mjs");
    let out = Command::new("node")
        .arg(script)
        .args(extra)
        .arg("--jwks")
        .arg(jwks)
        .args(["--iss", ISSUER, "--aud", aud, "--nonce", nonce, token])
        .output()
        .expect("node");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
    });
    (out.status.code().unwrap_or(-1), v)
}

/// method, url, body, expected status, expected error code.
pub(crate) type Case<'a> = (&'a str, String, Option<Vec<u8>>, u16, &'a str);

#[derive(Debug)]
pub(crate) struct Resp {
    pub(crate) status: u16,
    pub(crate) content_type: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
}

impl Resp {
    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "not JSON ({e}): status {} body {:?}",
                self.status,
                String::from_utf8_lossy(&self.body[..self.body.len().min(200)])
            )
        })
    }

    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Asserts a JSON error with this status and code.
    pub(crate) fn expect_error(&self, status: u16, code: &str) {
        assert_eq!(
            self.status,
            status,
            "want {status} {code}, got {} {}",
            self.status,
            String::from_utf8_lossy(&self.body)
        );
        assert!(
            self.content_type.starts_with("application/json"),
            "{}",
            self.content_type
        );
        let v = self.json();
        assert_eq!(v["code"], code, "{v}");
        assert!(v["error"].as_str().is_some_and(|s| !s.is_empty()), "{v}");
    }
}

/// One HTTP request; `Err` only for transport errors (refused, reset).
pub(crate) fn try_call(method: &str, url: &str, body: Option<&[u8]>) -> Result<Resp, String> {
    try_call_as(method, url, body, "application/octet-stream")
}

pub(crate) fn try_call_as(
    method: &str,
    url: &str,
    body: Option<&[u8]>,
    ct: &str,
) -> Result<Resp, String> {
    try_request(method, url, &[], body, ct)
}

/// One HTTP request with extra headers; `Err` only for transport errors.
pub(crate) fn try_request(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
    ct: &str,
) -> Result<Resp, String> {
    let mut req = ureq::request(method, url).timeout(Duration::from_secs(120));
    for (k, v) in headers {
        req = req.set(k, v);
    }
    let r = match body {
        Some(b) => req.set("content-type", ct).send_bytes(b),
        None => req.call(),
    };
    let resp = match r {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => return Err(e.to_string()),
    };
    let status = resp.status();
    let content_type = resp.header("content-type").unwrap_or("").to_string();
    let headers = resp
        .headers_names()
        .into_iter()
        .map(|k| {
            let v = resp.header(&k).unwrap_or("").to_string();
            (k, v)
        })
        .collect();
    let mut body = Vec::new();
    resp.into_reader()
        .read_to_end(&mut body)
        .map_err(|e| e.to_string())?;
    Ok(Resp {
        status,
        content_type,
        headers,
        body,
    })
}

pub(crate) fn call(method: &str, url: &str, body: Option<&[u8]>) -> Resp {
    try_call(method, url, body).unwrap_or_else(|e| panic!("{method} {url}: {e}"))
}

pub(crate) fn call_json(url: &str, body: &[u8]) -> Resp {
    try_call_as("POST", url, Some(body), "application/json")
        .unwrap_or_else(|e| panic!("POST {url}: {e}"))
}

/// Every row of every table, for "nothing was written" checks.
pub(crate) fn snapshot(db: &Path) -> Vec<String> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut out = Vec::new();
    for (table, order) in [
        ("schema_version", "version"),
        ("users", "user"),
        ("templates", "user"),
        ("audit", "id"),
        ("gallery_templates", "gallery, seq"),
        ("login_failures", "user"),
        ("used_verdicts", "nonce"),
        ("gallery_keys", "gallery"),
    ] {
        let mut st = conn
            .prepare(&format!("SELECT * FROM {table} ORDER BY {order}"))
            .unwrap();
        let cols = st.column_count();
        let rows = st
            .query_map([], |r| {
                let mut s = format!("{table}:");
                for i in 0..cols {
                    s.push_str(&format!(" {:?}", r.get_ref(i)?));
                }
                Ok(s)
            })
            .unwrap();
        out.extend(rows.map(Result::unwrap));
    }
    out
}

pub(crate) fn count_rows(db: &Path, sql: &str) -> i64 {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.query_row(sql, [], |r| r.get(0)).unwrap()
}

/// Runs a command that must succeed (its stderr shown if not); its stdout.
pub(crate) fn run_ok(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Runs `keygen` into `dir/keys`; returns the secret key's path and the
/// public key.
pub(crate) fn service_key(dir: &Path) -> (PathBuf, PublicKey) {
    let keydir = dir.join("keys");
    run_ok(server_cmd().arg("keygen").arg("--out").arg(&keydir));
    let pk = std::fs::read(keydir.join("service.pk")).unwrap();
    let pk = PublicKey::from_bytes(&Params::auth4096(), &pk).unwrap();
    (keydir.join("service.sk"), pk)
}

// ---------------------------------------------------------------- client side

pub(crate) struct Identity {
    pub(crate) sk: SecretKey,
    pub(crate) pk: PublicKey,
    pub(crate) q: Quantizer,
    pub(crate) rng: Prng,
}

impl Identity {
    pub(crate) fn new(seed: u8) -> Identity {
        let params = Params::auth4096();
        let mut rng = Prng::from_seed([seed; 32]);
        let sk = SecretKey::generate_with(&params, &mut rng);
        let pk = PublicKey::new_with(&sk, &mut rng);
        Identity {
            q: Quantizer::new(&params, DIM).unwrap(),
            sk,
            pk,
            rng,
        }
    }

    pub(crate) fn keys_body(&mut self, with_rk: bool) -> Vec<u8> {
        let rk = with_rk.then(|| RelinKey::new_with(&self.sk, &mut self.rng).to_bytes());
        frame_keys(&self.pk.to_bytes(), rk.as_deref())
    }

    pub(crate) fn template(&mut self, samples: &[Vec<f32>]) -> Vec<u8> {
        let refs: Vec<&[f32]> = samples.iter().map(|e| e.as_slice()).collect();
        client::encrypt_templates(&self.sk, &self.q, &refs, &mut self.rng)
            .unwrap()
            .to_bytes()
    }

    pub(crate) fn probe(&mut self, e: &[f32]) -> Vec<u8> {
        client::encrypt_probe(&self.sk, &self.q, e, &mut self.rng)
            .unwrap()
            .to_bytes()
    }

    /// Decrypts a reply and checks every score against the i64 reference.
    pub(crate) fn check_scores(
        &self,
        reply: &[u8],
        samples: &[Vec<f32>],
        probe: &[f32],
    ) -> Vec<f64> {
        let got = client::decrypt_reply_bytes(&self.sk, &self.q, reply, samples.len()).unwrap();
        let pq = self.q.quantize(probe).unwrap();
        let want: Vec<i64> = samples
            .iter()
            .map(|s| {
                let t = self.q.quantize(s).unwrap();
                t.iter().zip(&pq).map(|(&a, &b)| a as i64 * b as i64).sum()
            })
            .collect();
        assert_eq!(got.scores, want);
        got.cosines
    }
}

pub(crate) fn embedding(rng: &mut Prng) -> Vec<f32> {
    (0..DIM)
        .map(|_| rng.next_u32() as f32 / u32::MAX as f32 - 0.5)
        .collect()
}

/// `base` plus a little noise: the same face, another photo.
pub(crate) fn near(base: &[f32], rng: &mut Prng) -> Vec<f32> {
    base.iter()
        .map(|&v| v + 0.05 * (rng.next_u32() as f32 / u32::MAX as f32 - 0.5))
        .collect()
}

/// A verification of `user` with a probe of `face` that the server answers
/// with 200.
pub(crate) fn verify_ok(u: &str, user: &str, id: &mut Identity, face: &[f32]) {
    let r = call(
        "POST",
        &format!("{u}/v1/users/{user}/verify"),
        Some(&id.probe(face)),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
}

/// Registers `user` (keys without a relinearization key) and enrolls `face`
/// as their one template, over HTTP.
pub(crate) fn enroll(u: &str, user: &str, id: &mut Identity, face: &[f32]) {
    let r = call(
        "PUT",
        &format!("{u}/v1/users/{user}/keys"),
        Some(&id.keys_body(false)),
    );
    assert_eq!(r.status, 201);
    let r = call(
        "PUT",
        &format!("{u}/v1/users/{user}/template"),
        Some(&id.template(&[face.to_vec()])),
    );
    assert_eq!(r.status, 204);
}
