//! The matching server over real HTTP: each test starts the built
//! `blindmatch-server` binary on 127.0.0.1 (port 0) with a temporary SQLite
//! file and talks to it over loopback. Nothing leaves 127.0.0.1.
#![cfg(all(feature = "server", not(target_arch = "wasm32")))]

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

use blindmatch::bfv::{
    Ciphertext, CoefficientEncoder, Evaluator, Params, Prng, PublicKey, RelinKey, SecretKey,
};
use blindmatch::matching::{client, Quantizer};
use blindmatch::server::{frame_keys, CSP};

const BIN: &str = env!("CARGO_BIN_EXE_blindmatch-server");
const DIM: usize = 128;

// ---------------------------------------------------------------- harness

/// The server binary as a command. `BLINDMATCH_TEST_RUNNER` (for example
/// `qemu-aarch64 -L /usr/aarch64-linux-gnu`) runs it under an emulator, as
/// Cargo's target runner does for the test binary itself.
fn server_cmd() -> Command {
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

static NEXT_DIR: AtomicUsize = AtomicUsize::new(0);

/// The tests run in parallel. The overhead measurement takes this lock
/// exclusively, so that it has the machine to itself; every other test holds
/// it shared for its whole run.
static MACHINE: RwLock<()> = RwLock::new(());

fn alone() -> RwLockWriteGuard<'static, ()> {
    MACHINE.write().unwrap_or_else(|e| e.into_inner())
}

fn shared() -> RwLockReadGuard<'static, ()> {
    MACHINE.read().unwrap_or_else(|e| e.into_inner())
}

/// A directory removed when the test passes (kept, with the server log,
/// when it fails).
struct TempDir(PathBuf);

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
fn temp_dir(tag: &str) -> TempDir {
    let n = NEXT_DIR.fetch_add(1, Ordering::Relaxed);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("server-{tag}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    TempDir(dir)
}

/// A running server process; killed (SIGKILL) on drop.
struct Server {
    child: Arc<Mutex<Child>>,
    url: String,
}

impl Server {
    fn start(dir: &Path, extra: &[&str]) -> Server {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("server.log"))
            .unwrap();
        let db = dir.join("blindmatch.db");
        let mut child = server_cmd()
            .arg("serve")
            .args(["--bind", "127.0.0.1:0", "--threads", "2"])
            .arg("--db")
            .arg(&db)
            .arg("--www")
            .arg(dir.join("www"))
            .arg("--pkg")
            .arg(dir.join("pkg"))
            .args(extra)
            .env("BLINDMATCH_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log))
            .spawn()
            .expect("start blindmatch-server");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line
            .trim()
            .strip_prefix("blindmatch-server listening on ")
            .unwrap_or_else(|| {
                let log = std::fs::read_to_string(dir.join("server.log")).unwrap_or_default();
                panic!("server did not start: {line:?}\n{log}")
            })
            .trim_end_matches('/')
            .to_string();
        assert!(url.starts_with("http://127.0.0.1:"), "{url}");
        Server {
            child: Arc::new(Mutex::new(child)),
            url,
        }
    }

    fn kill(&self) {
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

/// method, url, body, expected status, expected error code.
type Case<'a> = (&'a str, String, Option<Vec<u8>>, u16, &'a str);

#[derive(Debug)]
struct Resp {
    status: u16,
    content_type: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Resp {
    fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "not JSON ({e}): status {} body {:?}",
                self.status,
                String::from_utf8_lossy(&self.body[..self.body.len().min(200)])
            )
        })
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Asserts a JSON error with this status and code.
    fn expect_error(&self, status: u16, code: &str) {
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
fn try_call(method: &str, url: &str, body: Option<&[u8]>) -> Result<Resp, String> {
    try_call_as(method, url, body, "application/octet-stream")
}

fn try_call_as(method: &str, url: &str, body: Option<&[u8]>, ct: &str) -> Result<Resp, String> {
    let req = ureq::request(method, url).timeout(Duration::from_secs(120));
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

fn call(method: &str, url: &str, body: Option<&[u8]>) -> Resp {
    try_call(method, url, body).unwrap_or_else(|e| panic!("{method} {url}: {e}"))
}

fn call_json(url: &str, body: &[u8]) -> Resp {
    try_call_as("POST", url, Some(body), "application/json")
        .unwrap_or_else(|e| panic!("POST {url}: {e}"))
}

/// Every row of every table, for "nothing was written" checks.
fn snapshot(db: &Path) -> Vec<String> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut out = Vec::new();
    for (table, order) in [
        ("schema_version", "version"),
        ("users", "user"),
        ("templates", "user"),
        ("audit", "id"),
        ("gallery_templates", "gallery, seq"),
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

fn count_rows(db: &Path, sql: &str) -> i64 {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.query_row(sql, [], |r| r.get(0)).unwrap()
}

// ---------------------------------------------------------------- client side

struct Identity {
    sk: SecretKey,
    pk: PublicKey,
    q: Quantizer,
    rng: Prng,
}

impl Identity {
    fn new(seed: u8) -> Identity {
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

    fn keys_body(&mut self, with_rk: bool) -> Vec<u8> {
        let rk = with_rk.then(|| RelinKey::new_with(&self.sk, &mut self.rng).to_bytes());
        frame_keys(&self.pk.to_bytes(), rk.as_deref())
    }

    fn template(&mut self, samples: &[Vec<f32>]) -> Vec<u8> {
        let refs: Vec<&[f32]> = samples.iter().map(|e| e.as_slice()).collect();
        client::encrypt_templates(&self.sk, &self.q, &refs, &mut self.rng)
            .unwrap()
            .to_bytes()
    }

    fn probe(&mut self, e: &[f32]) -> Vec<u8> {
        client::encrypt_probe(&self.sk, &self.q, e, &mut self.rng)
            .unwrap()
            .to_bytes()
    }

    /// Decrypts a reply and checks every score against the i64 reference.
    fn check_scores(&self, reply: &[u8], samples: &[Vec<f32>], probe: &[f32]) -> Vec<f64> {
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

fn embedding(rng: &mut Prng) -> Vec<f32> {
    (0..DIM)
        .map(|_| rng.next_u32() as f32 / u32::MAX as f32 - 0.5)
        .collect()
}

/// `base` plus a little noise: the same face, another photo.
fn near(base: &[f32], rng: &mut Prng) -> Vec<f32> {
    base.iter()
        .map(|&v| v + 0.05 * (rng.next_u32() as f32 / u32::MAX as f32 - 0.5))
        .collect()
}

// ---------------------------------------------------------------- tests

#[test]
fn one_to_one_flow_with_exact_scores() {
    let _machine = shared();
    let dir = temp_dir("flow");
    let db = dir.join("blindmatch.db");
    let srv = Server::start(&dir, &[]);
    let u = &srv.url;

    let health = call("GET", &format!("{u}/healthz"), None);
    assert_eq!(health.status, 200);
    assert_eq!(health.json()["status"], "ok");
    let p = call("GET", &format!("{u}/v1/params"), None);
    assert_eq!(p.status, 200);
    let pj = p.json();
    assert_eq!(pj["id"], Params::auth4096().id_hex());
    assert_eq!(pj["degree"], 4096);
    assert_eq!(pj["dimension"], 128);
    assert_eq!(pj["templates_per_ciphertext"], 32);

    let mut rng = Prng::from_seed([7; 32]);
    for (user, with_rk, seed) in [("alice", true, 1u8), ("bob.b-2_", false, 2u8)] {
        let mut id = Identity::new(seed);
        let r = call(
            "PUT",
            &format!("{u}/v1/users/{user}/keys"),
            Some(&id.keys_body(with_rk)),
        );
        assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));

        let face = embedding(&mut rng);
        let samples: Vec<Vec<f32>> = (0..5).map(|_| near(&face, &mut rng)).collect();
        let r = call(
            "PUT",
            &format!("{u}/v1/users/{user}/template?count=5"),
            Some(&id.template(&samples)),
        );
        assert_eq!(r.status, 204, "{}", String::from_utf8_lossy(&r.body));

        // Genuine: another photo of the same face.
        let genuine = near(&face, &mut rng);
        let r = call(
            "POST",
            &format!("{u}/v1/users/{user}/verify"),
            Some(&id.probe(&genuine)),
        );
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        assert_eq!(r.content_type, "application/octet-stream");
        assert_eq!(r.header("x-template-count"), Some("5"));
        let cos = id.check_scores(&r.body, &samples, &genuine);
        assert!(cos.iter().all(|&c| c > 0.9), "genuine {cos:?}");

        // Impostor: an unrelated face.
        let impostor = embedding(&mut rng);
        let r = call(
            "POST",
            &format!("{u}/v1/users/{user}/verify"),
            Some(&id.probe(&impostor)),
        );
        assert_eq!(r.status, 200);
        let cos = id.check_scores(&r.body, &samples, &impostor);
        assert!(cos.iter().all(|&c| c < 0.5), "impostor {cos:?}");

        // Re-enrollment replaces the template (and whatever the server had
        // cached of it).
        let samples: Vec<Vec<f32>> = (0..3).map(|_| near(&face, &mut rng)).collect();
        let r = call(
            "PUT",
            &format!("{u}/v1/users/{user}/template?count=3"),
            Some(&id.template(&samples)),
        );
        assert_eq!(r.status, 204);
        let r = call(
            "POST",
            &format!("{u}/v1/users/{user}/verify"),
            Some(&id.probe(&genuine)),
        );
        assert_eq!(r.status, 200);
        assert_eq!(r.header("x-template-count"), Some("3"));
        assert!(r
            .header("server-timing")
            .is_some_and(|t| t.contains("match;dur=")));
        let cos = id.check_scores(&r.body, &samples, &genuine);
        assert!(cos.iter().all(|&c| c > 0.9), "genuine {cos:?}");

        let info = call("GET", &format!("{u}/v1/users/{user}"), None);
        assert_eq!(info.status, 200);
        let info = info.json();
        assert_eq!(info["template_count"], 3);
        assert_eq!(info["verifications"], 3);
        assert_eq!(info["relin_key_bytes"].is_null(), !with_rk);
    }
    assert_eq!(
        count_rows(&db, "SELECT count(*) FROM audit WHERE outcome = 'ok'"),
        6
    );

    // DELETE removes everything of that user, and only that user.
    let r = call("DELETE", &format!("{u}/v1/users/alice"), None);
    assert_eq!(r.status, 204);
    for table in ["users", "templates", "audit"] {
        assert_eq!(
            count_rows(
                &db,
                &format!("SELECT count(*) FROM {table} WHERE user = 'alice'")
            ),
            0,
            "{table}"
        );
        assert_eq!(
            count_rows(
                &db,
                &format!("SELECT count(*) FROM {table} WHERE user = 'bob.b-2_'")
            ),
            if table == "audit" { 3 } else { 1 },
            "{table}"
        );
    }
    call("GET", &format!("{u}/v1/users/alice"), None).expect_error(404, "unknown_user");
    call("DELETE", &format!("{u}/v1/users/alice"), None).expect_error(404, "unknown_user");
    // The name is free again.
    let mut id = Identity::new(3);
    let r = call(
        "PUT",
        &format!("{u}/v1/users/alice/keys"),
        Some(&id.keys_body(false)),
    );
    assert_eq!(r.status, 201);

    // /metrics: the requests above, by route template and status class,
    // and the verifications' phases; no user name anywhere.
    let m = call("GET", &format!("{u}/metrics"), None);
    assert_eq!(m.status, 200);
    assert!(
        m.content_type.starts_with("text/plain; version=0.0.4"),
        "{}",
        m.content_type
    );
    let text = String::from_utf8(m.body).unwrap();
    let value = |name: &str| -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("{name} missing:\n{text}"))
    };
    let verify = "route=\"/v1/users/{user}/verify\"";
    assert_eq!(
        value(&format!(
            "blindmatch_http_requests_total{{{verify},status=\"2xx\"}}"
        )),
        6.0
    );
    assert_eq!(
        value(&format!(
            "blindmatch_http_request_duration_seconds_count{{{verify}}}"
        )),
        6.0
    );
    assert_eq!(
        value(&format!(
            "blindmatch_http_request_duration_seconds_bucket{{{verify},le=\"+Inf\"}}"
        )),
        6.0
    );
    assert_eq!(
        value("blindmatch_http_requests_total{route=\"/v1/users/{user}/keys\",status=\"2xx\"}"),
        3.0
    );
    assert_eq!(
        value("blindmatch_http_requests_total{route=\"/v1/users/{user}\",status=\"4xx\"}"),
        2.0
    );
    // Server-side durations: positive, and the matching took most of them.
    let total = value(&format!(
        "blindmatch_http_request_duration_seconds_sum{{{verify}}}"
    ));
    let matching = value("blindmatch_verify_phase_seconds_total{phase=\"match\"}");
    assert!(
        matching > 0.0 && matching < total,
        "match {matching} s of {total} s"
    );
    assert_eq!(value("blindmatch_matching_threads"), 2.0);
    // The audit journal: every flush so far succeeded; at most the rows of
    // the six verifications are waiting for the next one.
    assert_eq!(value("blindmatch_audit_flush_failures_total"), 0.0);
    assert!((0.0..=6.0).contains(&value("blindmatch_audit_rows_journaled")));
    assert!(
        !text.contains("alice") && !text.contains("bob.b-2_"),
        "{text}"
    );
}

#[test]
fn backup_while_serving_restores_to_a_working_server() {
    let _machine = shared();
    let dir = temp_dir("backup");
    let srv = Server::start(&dir, &[]);
    let u = srv.url.clone();
    let mut id = Identity::new(9);
    let mut rng = Prng::from_seed([9; 32]);
    let r = call(
        "PUT",
        &format!("{u}/v1/users/alice/keys"),
        Some(&id.keys_body(true)),
    );
    assert_eq!(r.status, 201);
    let face = embedding(&mut rng);
    let samples: Vec<Vec<f32>> = (0..4).map(|_| near(&face, &mut rng)).collect();
    let r = call(
        "PUT",
        &format!("{u}/v1/users/alice/template?count=4"),
        Some(&id.template(&samples)),
    );
    assert_eq!(r.status, 204);
    let verify = |url: &str, id: &mut Identity, rng: &mut Prng| {
        let genuine = near(&face, rng);
        let r = call(
            "POST",
            &format!("{url}/v1/users/alice/verify"),
            Some(&id.probe(&genuine)),
        );
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        let cos = id.check_scores(&r.body, &samples, &genuine);
        assert!(cos.iter().all(|&c| c > 0.9), "{cos:?}");
    };
    verify(&u, &mut id, &mut rng);

    // The audit log, read while the server runs: the verification once,
    // whether its row is still journaled or already flushed.
    let audit = |args: &[&str]| {
        let o = server_cmd()
            .arg("audit")
            .arg("--db")
            .arg(dir.join("blindmatch.db"))
            .args(args)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .collect::<Vec<_>>()
    };
    let rows = audit(&["--user", "alice"]);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(
        (&rows[0]["user"], &rows[0]["outcome"]),
        (&"alice".into(), &"ok".into())
    );
    assert!(rows[0]["duration_us"].as_u64().unwrap() > 0);
    assert!(audit(&["--user", "nobody"]).is_empty());
    let o = server_cmd()
        .args(["audit", "--db"])
        .arg(dir.join("missing.db"))
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("does not exist"));

    // Copied while the server runs.
    let restored = temp_dir("backup-restored");
    let out = restored.join("blindmatch.db");
    let backup = |db: &Path, out: &Path| {
        server_cmd()
            .arg("backup")
            .arg("--db")
            .arg(db)
            .arg("--out")
            .arg(out)
            .output()
            .unwrap()
    };
    let o = backup(&dir.join("blindmatch.db"), &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let said = String::from_utf8_lossy(&o.stdout);
    assert!(
        said.contains("schema 5, 1 users, 0 gallery ciphertexts"),
        "{said}"
    );
    // Refused, with the copy left as it was: an existing output file, a
    // missing database (not created), a file that is not a blindmatch
    // database.
    let copy = std::fs::read(&out).unwrap();
    let o = backup(&dir.join("blindmatch.db"), &out);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("already exists"));
    assert_eq!(std::fs::read(&out).unwrap(), copy);
    let o = backup(&dir.join("missing.db"), &dir.join("x.db"));
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("does not exist"));
    assert!(!dir.join("missing.db").exists() && !dir.join("x.db").exists());
    let other = dir.join("other.db");
    rusqlite::Connection::open(&other)
        .unwrap()
        .execute_batch("CREATE TABLE t (x);")
        .unwrap();
    let o = backup(&other, &dir.join("y.db"));
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a blindmatch database"));
    assert!(!dir.join("y.db").exists());
    for d in [&*dir, &*restored] {
        for f in std::fs::read_dir(d).unwrap() {
            let name = f.unwrap().file_name().into_string().unwrap();
            assert!(
                !name.contains(".partial"),
                "a partial file was left: {name}"
            );
        }
    }

    // The live database moves on; the copy keeps the moment it was taken.
    assert_eq!(
        call("DELETE", &format!("{u}/v1/users/alice"), None).status,
        204
    );
    drop(srv);
    let srv = Server::start(&restored, &[]);
    let info = call("GET", &format!("{}/v1/users/alice", srv.url), None);
    assert_eq!(info.status, 200);
    assert_eq!(
        (
            info.json()["template_count"].as_u64(),
            info.json()["verifications"].as_u64()
        ),
        (Some(4), Some(1))
    );
    verify(&srv.url, &mut id, &mut rng);
}

/// A verification of `user` with a probe of `face` that the server answers
/// with 200.
fn verify_ok(u: &str, user: &str, id: &mut Identity, face: &[f32]) {
    let r = call(
        "POST",
        &format!("{u}/v1/users/{user}/verify"),
        Some(&id.probe(face)),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
}

/// Registers `user` (keys without a relinearization key) and enrolls `face`
/// as their one template, over HTTP.
fn enroll(u: &str, user: &str, id: &mut Identity, face: &[f32]) {
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

#[test]
fn sigterm_flushes_the_audit_journal() {
    let _machine = shared();
    let dir = temp_dir("sigterm");
    let db = dir.join("blindmatch.db");
    let mut id = Identity::new(17);
    let mut rng = Prng::from_seed([17; 32]);
    let face = embedding(&mut rng);
    let srv = Server::start(&dir, &[]);
    let u = &srv.url;
    enroll(u, "ann", &mut id, &face);
    for _ in 0..3 {
        verify_ok(u, "ann", &mut id, &face);
    }
    // A graceful stop commits what is journaled before the process ends: the
    // rows are in the database without a restart.
    let pid = srv.child.lock().unwrap().id();
    let status = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let start = Instant::now();
    loop {
        if let Some(exit) = srv.child.lock().unwrap().try_wait().unwrap() {
            assert!(exit.success(), "{exit}");
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no exit after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        count_rows(&db, "SELECT count(*) FROM audit WHERE user = 'ann'"),
        3
    );
}

#[test]
fn audit_retention_removes_old_rows_only() {
    let _machine = shared();
    let dir = temp_dir("retention");
    let db = dir.join("blindmatch.db");
    let mut id = Identity::new(13);
    let mut rng = Prng::from_seed([13; 32]);
    let face = embedding(&mut rng);
    {
        let srv = Server::start(&dir, &[]);
        let u = &srv.url;
        enroll(u, "ann", &mut id, &face);
        verify_ok(u, "ann", &mut id, &face);
    }
    // Rows of 40 and of 20 days ago, as if the server had run that long.
    let day_ms = 86_400_000i64;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    {
        let c = rusqlite::Connection::open(&db).unwrap();
        for (age, n) in [(40, 3), (20, 2)] {
            for _ in 0..n {
                c.execute(
                    "INSERT INTO audit (user, ts, outcome, duration_us) VALUES ('ann', ?1, 'ok', 1)",
                    [now - age * day_ms],
                )
                .unwrap();
            }
        }
    }
    // The verification's row is still in the journal (the server was
    // killed); the next start commits it.
    assert_eq!(count_rows(&db, "SELECT count(*) FROM audit"), 5);
    let srv = Server::start(&dir, &["--audit-retention-days", "30"]);
    let start = Instant::now();
    loop {
        let info = call("GET", &format!("{}/v1/users/ann", srv.url), None).json();
        if info["verifications"] == 3 {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "old rows never removed: {info}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // The recent verification and the rows of 20 days ago are kept.
    assert_eq!(
        count_rows(
            &db,
            &format!(
                "SELECT count(*) FROM audit WHERE ts >= {}",
                now - 25 * day_ms
            )
        ),
        3
    );
}

#[test]
fn every_error_is_json_and_writes_nothing() {
    let _machine = shared();
    let dir = temp_dir("errors");
    let db = dir.join("blindmatch.db");
    let srv = Server::start(&dir, &[]);
    let u = srv.url.clone();
    let params = Params::auth4096();

    let mut id = Identity::new(11);
    let mut rng = Prng::from_seed([9; 32]);
    let face = embedding(&mut rng);
    let keys = id.keys_body(false);
    assert_eq!(
        call("PUT", &format!("{u}/v1/users/carol/keys"), Some(&keys)).status,
        201
    );
    let template = id.template(std::slice::from_ref(&face));
    assert_eq!(
        call(
            "PUT",
            &format!("{u}/v1/users/carol/template?count=1"),
            Some(&template)
        )
        .status,
        204
    );
    assert_eq!(
        call("PUT", &format!("{u}/v1/users/dave/keys"), Some(&keys)).status,
        201
    );
    let before = snapshot(&db);

    let probe = id.probe(&face);
    let limits = call("GET", &format!("{u}/v1/params"), None).json()["limits"].clone();
    let ct_limit = limits["ciphertext"].as_u64().unwrap() as usize;
    let keys_limit = limits["keys"].as_u64().unwrap() as usize;

    // A transparent ciphertext: c1 = 0.
    let transparent = {
        let ct = Ciphertext::from_bytes(&params, &probe).unwrap();
        let ev = Evaluator::new(&params);
        let mut z = ev.sub(&ct, &ct).unwrap();
        let pt = CoefficientEncoder::new(&params).encode(&[5]).unwrap();
        ev.add_plain_assign(&mut z, &pt).unwrap();
        assert!(z.is_transparent());
        z.to_bytes()
    };
    // A size-3 ciphertext (a product) where a fresh one is expected.
    let size3 = {
        let ct = Ciphertext::from_bytes(&params, &probe).unwrap();
        Evaluator::new(&params)
            .multiply(&ct, &ct)
            .unwrap()
            .to_bytes()
    };
    let mut wrong_params = probe.clone();
    wrong_params[8] ^= 0x5a;
    let mut bad_magic = probe.clone();
    bad_magic[0] = b'X';
    let mut trailing = probe.clone();
    trailing.push(0);
    let truncated = &probe[..probe.len() - 7];
    let pk_bytes = id.pk.to_bytes();

    let verify = |user: &str| format!("{u}/v1/users/{user}/verify");
    let template_url = |user: &str, q: &str| format!("{u}/v1/users/{user}/template{q}");
    let keys_url = |user: &str| format!("{u}/v1/users/{user}/keys");
    let long_name = "x".repeat(65);
    let cases: Vec<Case> = vec![
        (
            "POST",
            verify("nobody"),
            Some(probe.clone()),
            404,
            "unknown_user",
        ),
        (
            "PUT",
            template_url("nobody", ""),
            Some(template.clone()),
            404,
            "unknown_user",
        ),
        (
            "DELETE",
            format!("{u}/v1/users/nobody"),
            None,
            404,
            "unknown_user",
        ),
        (
            "GET",
            format!("{u}/v1/users/nobody"),
            None,
            404,
            "unknown_user",
        ),
        (
            "POST",
            verify("dave"),
            Some(probe.clone()),
            404,
            "no_template",
        ),
        (
            "POST",
            verify(&long_name),
            Some(probe.clone()),
            400,
            "bad_name",
        ),
        (
            "POST",
            verify("a%20b"),
            Some(probe.clone()),
            400,
            "bad_name",
        ),
        (
            "POST",
            verify(".hidden"),
            Some(probe.clone()),
            400,
            "bad_name",
        ),
        (
            "POST",
            verify("carol"),
            Some(wrong_params.clone()),
            422,
            "wrong_params",
        ),
        (
            "POST",
            verify("carol"),
            Some(truncated.to_vec()),
            400,
            "truncated",
        ),
        ("POST", verify("carol"), Some(Vec::new()), 400, "truncated"),
        (
            "POST",
            verify("carol"),
            Some(bad_magic.clone()),
            400,
            "malformed",
        ),
        (
            "POST",
            verify("carol"),
            Some(trailing.clone()),
            400,
            "malformed",
        ),
        (
            "POST",
            verify("carol"),
            Some(transparent.clone()),
            422,
            "transparent",
        ),
        (
            "POST",
            verify("carol"),
            Some(size3.clone()),
            422,
            "bad_ciphertext",
        ),
        (
            "POST",
            verify("carol"),
            Some(pk_bytes.clone()),
            400,
            "wrong_kind",
        ),
        (
            "POST",
            verify("carol"),
            Some(vec![0; ct_limit + 1]),
            413,
            "body_too_large",
        ),
        (
            "PUT",
            template_url("carol", ""),
            Some(transparent.clone()),
            422,
            "transparent",
        ),
        (
            "PUT",
            template_url("carol", ""),
            Some(wrong_params.clone()),
            422,
            "wrong_params",
        ),
        (
            "PUT",
            template_url("carol", ""),
            Some(truncated.to_vec()),
            400,
            "truncated",
        ),
        (
            "PUT",
            template_url("carol", ""),
            Some(size3.clone()),
            422,
            "bad_ciphertext",
        ),
        (
            "PUT",
            template_url("carol", "?count=0"),
            Some(template.clone()),
            400,
            "bad_count",
        ),
        (
            "PUT",
            template_url("carol", "?count=33"),
            Some(template.clone()),
            400,
            "bad_count",
        ),
        (
            "PUT",
            template_url("carol", "?count=x"),
            Some(template.clone()),
            400,
            "bad_query",
        ),
        (
            "PUT",
            template_url("carol", ""),
            Some(vec![0; ct_limit + 1]),
            413,
            "body_too_large",
        ),
        (
            "PUT",
            keys_url("carol"),
            Some(keys.clone()),
            409,
            "user_exists",
        ),
        (
            "PUT",
            keys_url("erin"),
            Some(keys[..keys.len() - 3].to_vec()),
            400,
            "truncated",
        ),
        ("PUT", keys_url("erin"), Some(vec![1, 0]), 400, "truncated"),
        (
            "PUT",
            keys_url("erin"),
            Some(frame_keys(&probe, None)),
            400,
            "wrong_kind",
        ),
        (
            "PUT",
            keys_url("erin"),
            Some(frame_keys(&pk_bytes[..100], None)),
            400,
            "truncated",
        ),
        (
            "PUT",
            keys_url("erin"),
            Some(frame_keys(&pk_bytes, Some(&pk_bytes))),
            400,
            "wrong_kind",
        ),
        (
            "PUT",
            keys_url("erin"),
            Some([keys.clone(), vec![0]].concat()),
            400,
            "malformed",
        ),
        (
            "PUT",
            keys_url("erin"),
            Some(frame_keys(&[], None)),
            400,
            "malformed",
        ),
        (
            "PUT",
            keys_url("erin"),
            Some(vec![0; keys_limit + 1]),
            413,
            "body_too_large",
        ),
        (
            "POST",
            format!("{u}/v1/galleries/g/identify"),
            Some(b"{}".to_vec()),
            404,
            "identify_disabled",
        ),
        (
            "POST",
            format!("{u}/v1/galleries/g/templates"),
            Some(template.clone()),
            404,
            "identify_disabled",
        ),
        (
            "GET",
            format!("{u}/v1/galleries/g"),
            None,
            404,
            "identify_disabled",
        ),
        (
            "DELETE",
            format!("{u}/v1/galleries/g"),
            None,
            404,
            "identify_disabled",
        ),
        (
            "DELETE",
            format!("{u}/v1/galleries/g/templates/0"),
            None,
            404,
            "identify_disabled",
        ),
        ("GET", format!("{u}/v1/nothing"), None, 404, "not_found"),
        (
            "PATCH",
            verify("carol"),
            Some(probe.clone()),
            405,
            "method_not_allowed",
        ),
    ];
    for (method, url, body, status, code) in &cases {
        let r = call(method, url, body.as_deref());
        r.expect_error(*status, code);
        assert_eq!(r.header("content-security-policy"), Some(CSP));
    }
    // The bad-input corpus of the format tests, sent as probes, templates
    // and key bodies: every file is a 4xx JSON error.
    let mut corpus = 0;
    for entry in std::fs::read_dir("tests/data/bad").unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        for (method, url, body) in [
            ("POST", verify("carol"), bytes.clone()),
            ("PUT", template_url("carol", ""), bytes.clone()),
            ("PUT", keys_url("erin"), frame_keys(&bytes, None)),
        ] {
            let r = call(method, &url, Some(&body));
            assert!((400..500).contains(&r.status), "{} {url}", r.status);
            assert!(r.json()["code"].is_string());
            corpus += 1;
        }
    }
    assert!(corpus >= 100, "{corpus}");
    assert_eq!(
        snapshot(&db),
        before,
        "a refused request changed the database"
    );
    assert_eq!(call("GET", &format!("{u}/healthz"), None).status, 200);
}

#[test]
fn static_files_have_csp_and_wasm_type() {
    let _machine = shared();
    let dir = temp_dir("static");
    std::fs::create_dir_all(dir.join("www/js")).unwrap();
    std::fs::create_dir_all(dir.join("pkg")).unwrap();
    std::fs::write(dir.join("www/index.html"), "<!doctype html><p>hi</p>").unwrap();
    std::fs::write(dir.join("www/js/app.js"), "console.log(1)").unwrap();
    std::fs::write(dir.join("www/.secret"), "no").unwrap();
    std::fs::write(dir.join("pkg/blindmatch_bg.wasm"), b"\0asm\x01\0\0\0").unwrap();
    let srv = Server::start(&dir, &[]);
    let u = &srv.url;
    let r = call("GET", &format!("{u}/"), None);
    assert_eq!(r.status, 200);
    assert_eq!(r.content_type, "text/html; charset=utf-8");
    assert_eq!(r.body, b"<!doctype html><p>hi</p>");
    assert_eq!(r.header("content-security-policy"), Some(CSP));
    assert!(CSP.contains("script-src 'self' 'wasm-unsafe-eval';"));
    assert!(!CSP.contains("unsafe-inline") && !CSP.contains('*'));
    assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
    assert!(r.header("x-request-id").is_some());
    let r = call("GET", &format!("{u}/js/app.js"), None);
    assert!(r.content_type.starts_with("text/javascript"));
    let r = call("GET", &format!("{u}/pkg/blindmatch_bg.wasm"), None);
    assert_eq!(r.status, 200);
    assert_eq!(r.content_type, "application/wasm");
    assert_eq!(r.header("content-security-policy"), Some(CSP));
    for bad in [
        "/.secret",
        "/%2e%2e/server.log",
        "/js/..%2f..%2fserver.log",
        "/missing.js",
    ] {
        call("GET", &format!("{u}{bad}"), None).expect_error(404, "not_found");
    }
    call("POST", &format!("{u}/index.html"), Some(b"x")).expect_error(405, "method_not_allowed");
}

#[test]
fn acknowledged_enrollments_survive_kill_9() {
    let _machine = shared();
    let dir = temp_dir("durable");
    let db = dir.join("blindmatch.db");
    let mut id = Identity::new(21);
    let keys = id.keys_body(false);
    let mut rng = Prng::from_os().unwrap();
    // A few distinct templates, sent in rotation; the stored bytes must be
    // exactly one of them.
    let faces: Vec<Vec<f32>> = (0..3).map(|_| embedding(&mut rng)).collect();
    let templates: Vec<Vec<u8>> = (0..3)
        .map(|k| id.template(&[faces[k].clone(), faces[(k + 1) % 3].clone()]))
        .collect();
    let probes: Vec<Vec<u8>> = faces.iter().map(|f| id.probe(f)).collect();
    // (user, template index) of every enrollment acknowledged with 2xx, and
    // the in-flight one when the server died (it may or may not be stored).
    let mut acked: Vec<(String, usize)> = Vec::new();
    let mut attempted: Vec<(String, usize)> = Vec::new();
    // Verifications per user answered with 200 (each must have left its
    // audit row), and sent (an upper bound: the one in flight may have).
    let mut verified: std::collections::HashMap<String, (i64, i64)> = Default::default();
    let mut next = 0usize;
    let rounds = 4;
    for round in 0..rounds {
        let srv = Server::start(&dir, &[]);
        let child = srv.child.clone();
        let delay = 150 + (rng.next_u32() % 600) as u64;
        let killer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(delay));
            let mut c = child.lock().unwrap();
            let _ = c.kill(); // SIGKILL
            let _ = c.wait();
        });
        let start = Instant::now();
        let mut ok_this_round = 0;
        loop {
            let user = format!("user{next}");
            let k = next % templates.len();
            next += 1;
            attempted.push((user.clone(), k));
            let r = try_call(
                "PUT",
                &format!("{}/v1/users/{user}/keys", srv.url),
                Some(&keys),
            );
            match r {
                Ok(r) if r.status == 201 => {}
                Ok(r) => panic!("keys: {} {}", r.status, String::from_utf8_lossy(&r.body)),
                Err(_) => break,
            }
            let r = try_call(
                "PUT",
                &format!("{}/v1/users/{user}/template?count=2", srv.url),
                Some(&templates[k]),
            );
            match r {
                Ok(r) if r.status == 204 => {
                    acked.push((user.clone(), k));
                    ok_this_round += 1;
                }
                Ok(r) => panic!(
                    "template: {} {}",
                    r.status,
                    String::from_utf8_lossy(&r.body)
                ),
                Err(_) => break,
            }
            // Two verifications: their audit rows are journaled before the
            // reply and must survive the kill.
            for _ in 0..2 {
                let count = verified.entry(user.clone()).or_default();
                count.1 += 1;
                match try_call(
                    "POST",
                    &format!("{}/v1/users/{user}/verify", srv.url),
                    Some(&probes[k]),
                ) {
                    Ok(r) if r.status == 200 => count.0 += 1,
                    Ok(r) => panic!("verify: {} {}", r.status, String::from_utf8_lossy(&r.body)),
                    Err(_) => break,
                }
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "the kill never came"
            );
        }
        killer.join().unwrap();
        eprintln!(
            "round {round}: killed after {delay} ms, {ok_this_round} enrollments acknowledged"
        );
    }
    assert!(
        acked.len() >= rounds,
        "too few enrollments to test: {}",
        acked.len()
    );

    // Restart on the same file: every acknowledged enrollment is there, byte
    // for byte; anything else present is a complete copy of what was sent.
    let srv = Server::start(&dir, &[]);
    let conn = rusqlite::Connection::open(&db).unwrap();
    let ok: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ok, "ok");
    let stored = |user: &str| -> Option<(Vec<u8>, u32)> {
        conn.query_row(
            "SELECT ciphertext, count FROM templates WHERE user = ?1",
            [user],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .ok()
    };
    for (user, k) in &acked {
        let (bytes, count) = stored(user).unwrap_or_else(|| panic!("{user} lost"));
        assert_eq!(count, 2);
        assert!(bytes == templates[*k], "{user}: template bytes changed");
    }
    for (user, k) in &attempted {
        if let Some((bytes, count)) = stored(user) {
            assert_eq!(count, 2);
            assert!(bytes == templates[*k], "{user}: half-written template");
        }
    }
    // Every acknowledged verification left its audit row, recovered from
    // the journal where the kill came before a flush; none is doubled.
    let mut rows_acked = 0;
    for (user, (ok, sent)) in &verified {
        let rows: i64 = conn
            .query_row("SELECT count(*) FROM audit WHERE user = ?1", [user], |r| {
                r.get(0)
            })
            .unwrap();
        if stored(user).is_some() {
            assert!(
                (*ok..=*sent).contains(&rows),
                "{user}: {rows} audit rows for {ok} acknowledged of {sent} sent verifications"
            );
        }
        rows_acked += ok;
    }
    let n_templates: i64 = conn
        .query_row("SELECT count(*) FROM templates", [], |r| r.get(0))
        .unwrap();
    assert!(n_templates as usize >= acked.len());
    // And they still verify: one of each template over HTTP.
    for k in 0..templates.len() {
        let Some((user, _)) = acked.iter().find(|(_, kk)| *kk == k) else {
            continue;
        };
        let probe = faces[k].clone();
        let r = call(
            "POST",
            &format!("{}/v1/users/{user}/verify", srv.url),
            Some(&id.probe(&probe)),
        );
        assert_eq!(r.status, 200);
        id.check_scores(
            &r.body,
            &[faces[k].clone(), faces[(k + 1) % 3].clone()],
            &probe,
        );
    }
    eprintln!(
        "durability: {} acknowledged enrollments and {rows_acked} acknowledged verifications over {rounds} kill -9 rounds, all intact",
        acked.len()
    );
}

#[test]
fn concurrent_load_loses_nothing() {
    // 2,000 verifications with optimizations; fewer in an unoptimized build
    // (a verification there is ~10x slower). BLINDMATCH_LOAD_N overrides.
    let total: usize = std::env::var("BLINDMATCH_LOAD_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if cfg!(debug_assertions) { 120 } else { 2000 });
    let clients = 4;
    let dir = temp_dir("load");
    let db = dir.join("blindmatch.db");
    let srv = Server::start(&dir, &[]);
    let u = srv.url.clone();
    let mut id = Identity::new(31);
    let mut rng = Prng::from_seed([3; 32]);
    let samples: Vec<Vec<f32>> = (0..32).map(|_| embedding(&mut rng)).collect();
    assert_eq!(
        call(
            "PUT",
            &format!("{u}/v1/users/load/keys"),
            // With a relinearization key, as the demo page registers.
            Some(&id.keys_body(true))
        )
        .status,
        201
    );
    assert_eq!(
        call(
            "PUT",
            &format!("{u}/v1/users/load/template"),
            Some(&id.template(&samples))
        )
        .status,
        204
    );
    let probes: Vec<(Vec<f32>, Vec<u8>)> = (0..clients)
        .map(|_| {
            let e = embedding(&mut rng);
            let p = id.probe(&e);
            (e, p)
        })
        .collect();
    // Sequential first, with no other test of this file running: the
    // server's added cost per request against the compute time it reports
    // in Server-Timing.
    let seq = {
        let _alone = alone();
        sequential_overhead(&u, &probes, &dir.0.join("server.log"))
    };
    // The lean client read the reply right.
    id.check_scores(&seq.last_reply.1, &samples, &probes[seq.last_reply.0].0);
    let keys = id.keys_body(false);
    let template = id.template(&samples[..1]);
    let start = Instant::now();
    let reenroll: Vec<Vec<u8>> = (0..3).map(|_| id.template(&samples)).collect();
    let results: Vec<(Vec<Duration>, Vec<Vec<u8>>, usize)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..clients)
            .map(|c| {
                let (u, probes, keys, template, reenroll) =
                    (&u, &probes, &keys, &template, &reenroll);
                s.spawn(move || {
                    let mut lat = Vec::new();
                    let mut kept = Vec::new();
                    let mut enrolled = 0;
                    for i in (c..total).step_by(clients) {
                        let t = Instant::now();
                        let r = call(
                            "POST",
                            &format!("{u}/v1/users/load/verify"),
                            Some(&probes[c].1),
                        );
                        lat.push(t.elapsed());
                        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
                        if (i / clients) % 10 == 0 {
                            kept.push(r.body);
                        }
                        // The verified user re-enrolls now and then (same
                        // samples, fresh encryption): cached state must
                        // never mix two templates.
                        if c == 0 && i % 100 == 0 {
                            let t = &reenroll[(i / 100) % reenroll.len()];
                            let r = call("PUT", &format!("{u}/v1/users/load/template"), Some(t));
                            assert_eq!(r.status, 204);
                        }
                        // Writes interleaved with the reads: one enrollment
                        // per 20 verifications.
                        if i % 20 == 0 {
                            let user = format!("w{i}");
                            let r = call("PUT", &format!("{u}/v1/users/{user}/keys"), Some(keys));
                            assert_eq!(r.status, 201);
                            let r = call(
                                "PUT",
                                &format!("{u}/v1/users/{user}/template?count=1"),
                                Some(template),
                            );
                            assert_eq!(r.status, 204);
                            enrolled += 1;
                        }
                    }
                    (lat, kept, enrolled)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let secs = start.elapsed().as_secs_f64();
    let mut lat: Vec<Duration> = results.iter().flat_map(|r| r.0.clone()).collect();
    lat.sort();
    assert_eq!(lat.len(), total);
    let mut checked = 0;
    for (c, r) in results.iter().enumerate() {
        for reply in &r.1 {
            id.check_scores(reply, &samples, &probes[c].0);
            checked += 1;
        }
    }
    assert!(checked >= total / clients / 10);
    let enrolled: usize = results.iter().map(|r| r.2).sum();
    // No lost writes: one audit row per verification, every enrollment.
    // (Reading the user through the API first moves every journaled row
    // into the database.)
    let info = call("GET", &format!("{u}/v1/users/load"), None).json();
    assert_eq!(info["verifications"], (total + seq.requests) as u64);
    assert_eq!(
        count_rows(&db, "SELECT count(*) FROM audit WHERE user = 'load'") as usize,
        total + seq.requests
    );
    assert_eq!(
        count_rows(&db, "SELECT count(*) FROM templates WHERE user LIKE 'w%'") as usize,
        enrolled
    );
    let pct = |p: f64| lat[((lat.len() as f64 * p) as usize).min(lat.len() - 1)];
    eprintln!(
        "load: {total} verifications from {clients} clients in {secs:.1} s: {:.1}/s, p50 {:.1} ms, p99 {:.1} ms ({} build)",
        total as f64 / secs,
        pct(0.50).as_secs_f64() * 1e3,
        pct(0.99).as_secs_f64() * 1e3,
        if cfg!(debug_assertions) { "debug" } else { "release" }
    );
    seq.report();
}

/// One keep-alive HTTP/1.1 connection that does as little as a client can:
/// the request in one write, the reply read into a buffer kept between
/// requests, its length from Content-Length. ureq, used everywhere else,
/// spends some 50 µs of its own on a 44 KB/89 KB exchange (8 KB writes,
/// growing reads); the overhead measurement would charge that to the server.
struct LeanClient {
    stream: std::net::TcpStream,
    host: String,
    buf: Vec<u8>,
}

impl LeanClient {
    fn connect(url: &str) -> LeanClient {
        let host = url.strip_prefix("http://").expect("http URL").to_string();
        let stream = std::net::TcpStream::connect(&host).unwrap();
        stream.set_nodelay(true).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(120)))
            .unwrap();
        LeanClient {
            stream,
            host,
            buf: vec![0; 1 << 18],
        }
    }

    /// POSTs `body`; returns the status, the headers (names lower-cased) and
    /// the reply body.
    fn post(&mut self, path: &str, body: &[u8]) -> (u16, Vec<(String, String)>, &[u8]) {
        use std::io::Write;
        let mut req = format!(
            "POST {path} HTTP/1.1\r\nhost: {}\r\ncontent-type: application/octet-stream\r\ncontent-length: {}\r\n\r\n",
            self.host,
            body.len()
        )
        .into_bytes();
        req.extend_from_slice(body);
        self.stream.write_all(&req).unwrap();
        let mut have = 0;
        let head_end = loop {
            let n = self.stream.read(&mut self.buf[have..]).unwrap();
            assert!(n > 0, "connection closed before the reply's headers");
            let from = have.saturating_sub(3);
            have += n;
            if let Some(p) = self.buf[from..have]
                .windows(4)
                .position(|w| w == b"\r\n\r\n")
            {
                break from + p + 4;
            }
            assert!(have < 1 << 14, "no end of headers in {have} bytes");
        };
        let head = std::str::from_utf8(&self.buf[..head_end]).expect("ASCII headers");
        let mut lines = head.split("\r\n");
        let status: u16 = lines
            .next()
            .and_then(|l| l.strip_prefix("HTTP/1.1 "))
            .and_then(|l| l.get(..3))
            .and_then(|c| c.parse().ok())
            .unwrap_or_else(|| panic!("status line: {head:?}"));
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        let len: usize = headers
            .iter()
            .find(|h| h.0 == "content-length")
            .and_then(|h| h.1.parse().ok())
            .expect("content-length");
        let end = head_end + len;
        if self.buf.len() < end {
            self.buf.resize(end, 0);
        }
        assert!(have <= end, "{} bytes after the reply", have - end);
        self.stream.read_exact(&mut self.buf[have..end]).unwrap();
        (status, headers, &self.buf[head_end..end])
    }
}

/// Sequential verifications on one keep-alive connection: the client's round
/// trip against the server's own Server-Timing figures.
struct Sequential {
    /// Requests sent (warm-up included): each must leave one audit row.
    requests: usize,
    /// Measured samples (after the warm-up).
    samples: usize,
    /// Medians, in ms: round trip, and each Server-Timing field.
    total: f64,
    fields: Vec<(String, f64)>,
    /// Medians of the per-request ratios.
    overhead_of_compute: f64,
    overhead_of_match: f64,
    /// The same with ureq as the client (medians, ms and ratio).
    ureq_total: f64,
    ureq_overhead_of_compute: f64,
    /// The last reply read by the lean client, and its probe's index.
    last_reply: (usize, Vec<u8>),
    /// From the server's own log lines for the lean client's requests:
    /// medians of the request's span on the server (from the middleware to
    /// the reply handed to the connection) minus parse + match, in ms and
    /// over parse + match.
    server_overhead_ms: f64,
    server_overhead_of_compute: f64,
    /// The same from the connection's `sent` lines: from the request's
    /// first byte read off the socket to its reply's last byte written.
    wire_overhead_ms: f64,
    wire_overhead_of_compute: f64,
}

/// `wire_us` of request `id`'s "sent" line in the server's log.
fn logged_wire(log: &str, id: u64) -> Option<f64> {
    let key = format!(" sent id={id} wire_us=");
    let line = log.lines().find(|l| l.contains(&key))?;
    let at = line.find(&key)? + key.len();
    line[at..].split(' ').next()?.trim().parse().ok()
}

/// A verify request's `(us, parse_us, match_us)` from the server's "done"
/// log line for request `id`.
fn logged_verify(log: &str, id: u64) -> Option<(f64, f64, f64)> {
    let key = format!("req{{id={id} ");
    let line = log
        .lines()
        .find(|l| l.contains(&key) && l.contains(": done ") && l.contains("sent=true"))?;
    let field = |name: &str| -> Option<f64> {
        let at = line.find(&format!(" {name}="))? + name.len() + 2;
        line[at..].split(' ').next()?.parse().ok()
    };
    Some((field("us")?, field("parse_us")?, field("match_us")?))
}

/// A Server-Timing header as (name, milliseconds) pairs, in order.
fn server_timing(h: &str) -> Vec<(String, f64)> {
    h.split(',')
        .map(|p| {
            let (name, dur) = p.trim().split_once(";dur=").expect("name;dur=ms");
            (name.to_string(), dur.parse().expect("a duration"))
        })
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// (parse + match, match) of a verify reply's Server-Timing, in ms.
fn compute_and_match(timing: &[(String, f64)]) -> (f64, f64) {
    let dur = |name: &str| -> f64 {
        timing
            .iter()
            .find(|f| f.0 == name)
            .unwrap_or_else(|| panic!("no {name} in Server-Timing: {timing:?}"))
            .1
    };
    let (parse, matching) = (dur("parse"), dur("match"));
    assert!(matching > 0.0 && parse >= 0.0, "{timing:?}");
    // Compute: what the matching thread does for the request (parsing and
    // expanding the probe, Verifier::verify, serializing the reply).
    (parse + matching, matching)
}

fn sequential_overhead(u: &str, probes: &[(Vec<f32>, Vec<u8>)], log: &Path) -> Sequential {
    // 200 samples after 20 warm-up requests with optimizations; an
    // unoptimized build matches ~100x slower, 20 samples there.
    // BLINDMATCH_OVERHEAD_N overrides the sample count.
    let samples: usize = std::env::var("BLINDMATCH_OVERHEAD_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if cfg!(debug_assertions) { 20 } else { 200 })
        .max(1);
    let warmup = 20;
    let path = "/v1/users/load/verify";
    let mut lean = LeanClient::connect(u);
    let agent = ureq::AgentBuilder::new().build(); // keep-alive too
    let url = format!("{u}{path}");
    let mut total = Vec::new();
    let mut fields: Vec<(String, Vec<f64>)> = Vec::new();
    let mut of_compute = Vec::new();
    let mut of_match = Vec::new();
    let mut ureq_total = Vec::new();
    let mut ureq_of_compute = Vec::new();
    let mut last_reply = (0, Vec::new());
    let mut ids = Vec::new();
    for (i, (_, probe)) in probes.iter().cycle().take(warmup + samples).enumerate() {
        let t = Instant::now();
        let (status, headers, reply) = lean.post(path, probe);
        let rtt = t.elapsed().as_secs_f64() * 1e3;
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(reply));
        assert!(reply.len() > 1000, "reply of {} bytes", reply.len());
        last_reply = (i % probes.len(), reply.to_vec());
        let timing = headers
            .iter()
            .find(|h| h.0 == "server-timing")
            .map(|h| server_timing(&h.1))
            .expect("server-timing");
        // The same request from ureq, right after, on its own connection.
        let t = Instant::now();
        let r = agent.post(&url).send_bytes(probe).unwrap();
        let ureq_timing = server_timing(r.header("server-timing").expect("server-timing"));
        let mut ureq_reply = Vec::new();
        r.into_reader().read_to_end(&mut ureq_reply).unwrap();
        let ureq_rtt = t.elapsed().as_secs_f64() * 1e3;
        assert_eq!(ureq_reply.len(), reply.len());
        if i < warmup {
            continue;
        }
        let id = headers
            .iter()
            .find(|h| h.0 == "x-request-id")
            .and_then(|h| h.1.parse::<u64>().ok())
            .expect("x-request-id");
        ids.push(id);
        let (compute, matching) = compute_and_match(&timing);
        assert!(rtt > compute, "round trip {rtt} ms < compute {compute} ms");
        of_compute.push((rtt - compute) / compute);
        of_match.push((rtt - matching) / matching);
        total.push(rtt);
        for (name, ms) in timing {
            match fields.iter_mut().find(|f| f.0 == name) {
                Some(f) => f.1.push(ms),
                None => fields.push((name, vec![ms])),
            }
        }
        let (compute, _) = compute_and_match(&ureq_timing);
        ureq_of_compute.push((ureq_rtt - compute) / compute);
        ureq_total.push(ureq_rtt);
    }
    // The server writes a request's `done` line once its reply is handed
    // over and its `sent` line when the exchange ends (the connection's next
    // request, or its close): close the connection, then give the last
    // lines a moment to reach the file.
    drop(lean);
    std::thread::sleep(Duration::from_millis(200));
    let text = std::fs::read_to_string(log).expect("server log");
    let mut server_ms = Vec::new();
    let mut server_of_compute = Vec::new();
    let mut wire_ms = Vec::new();
    let mut wire_of_compute = Vec::new();
    for &id in &ids {
        let (us, parse, matching) =
            logged_verify(&text, id).unwrap_or_else(|| panic!("no log line for request {id}"));
        let compute = parse + matching;
        assert!(
            us >= compute,
            "request {id}: span {us} µs < compute {compute} µs"
        );
        server_ms.push((us - compute) / 1e3);
        server_of_compute.push((us - compute) / compute);
        let wire =
            logged_wire(&text, id).unwrap_or_else(|| panic!("no sent line for request {id}"));
        assert!(
            wire >= us,
            "request {id}: on the wire {wire} µs < its middleware span {us} µs"
        );
        wire_ms.push((wire - compute) / 1e3);
        wire_of_compute.push((wire - compute) / compute);
    }
    Sequential {
        requests: 2 * (warmup + samples),
        samples,
        total: median(total),
        fields: fields.into_iter().map(|(n, v)| (n, median(v))).collect(),
        overhead_of_compute: median(of_compute),
        overhead_of_match: median(of_match),
        ureq_total: median(ureq_total),
        ureq_overhead_of_compute: median(ureq_of_compute),
        last_reply,
        server_overhead_ms: median(server_ms),
        server_overhead_of_compute: median(server_of_compute),
        wire_overhead_ms: median(wire_ms),
        wire_overhead_of_compute: median(wire_of_compute),
    }
}

impl Sequential {
    fn field(&self, name: &str) -> f64 {
        self.fields.iter().find(|f| f.0 == name).unwrap().1
    }

    /// Prints the figures; with BLINDMATCH_MAX_OVERHEAD_PCT set (a
    /// measurement run on an otherwise idle machine, release build), fails
    /// if the overhead is above it.
    fn report(&self) {
        let parts: Vec<String> = self
            .fields
            .iter()
            .map(|(n, v)| format!("{n} {v:.3}"))
            .collect();
        eprintln!(
            "load: sequential verify on one keep-alive connection, medians of {} after 20 warm-up: round trip {:.3} ms; Server-Timing (ms) {}",
            self.samples,
            self.total,
            parts.join(", ")
        );
        eprintln!(
            "load: overhead = round trip - compute, where compute = parse + match (the matching thread's work: parsing the probe, Verifier::verify, serializing the reply) and the overhead is everything else (HTTP both ways, storage, thread hand-offs): {:.1}% of the compute time ({:.3} ms); counting parse as overhead: {:.1}% of match; ureq as the client: round trip {:.3} ms, {:.1}% of compute",
            self.overhead_of_compute * 100.0,
            self.field("parse") + self.field("match"),
            self.overhead_of_match * 100.0,
            self.ureq_total,
            self.ureq_overhead_of_compute * 100.0
        );
        eprintln!(
            "load: server-side overhead, from the server's log: on the wire (first request byte read to last reply byte written) - compute: {:.1}% of the compute time ({:.3} ms); of which inside the handler stack (middleware to reply handed over: reading the body, storage, hand-offs): {:.1}% ({:.3} ms); the rest of the client's round trip is loopback transfer and the client",
            self.wire_overhead_of_compute * 100.0,
            self.wire_overhead_ms,
            self.server_overhead_of_compute * 100.0,
            self.server_overhead_ms
        );
        if let Some(max) = std::env::var("BLINDMATCH_MAX_OVERHEAD_PCT")
            .ok()
            .and_then(|v| v.parse::<f64>().ok())
        {
            assert!(
                self.wire_overhead_of_compute * 100.0 <= max,
                "server-side overhead on the wire {:.1}% of the compute time is above BLINDMATCH_MAX_OVERHEAD_PCT={max}",
                self.wire_overhead_of_compute * 100.0
            );
        }
    }
}

#[test]
fn one_to_n_identify_with_service_key() {
    let _machine = shared();
    let dir = temp_dir("identify");
    let keydir = dir.join("keys");
    let out = server_cmd()
        .arg("keygen")
        .arg("--out")
        .arg(&keydir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(keydir.join("service.sk"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "service.sk is readable by others");
    }
    let sk_path = keydir.join("service.sk");
    let srv = Server::start(&dir, &["--service-key", sk_path.to_str().unwrap()]);
    let u = srv.url.clone();
    let params = Params::auth4096();
    let pk_bytes = call("GET", &format!("{u}/v1/service/public-key"), None);
    assert_eq!(pk_bytes.status, 200);
    let pk = PublicKey::from_bytes(&params, &pk_bytes.body).unwrap();
    let q = Quantizer::new(&params, DIM).unwrap();
    let mut rng = Prng::from_seed([44; 32]);
    let people: Vec<Vec<f32>> = (0..40).map(|_| embedding(&mut rng)).collect();
    for (chunk, first) in [(&people[..32], 0), (&people[32..], 32)] {
        let refs: Vec<&[f32]> = chunk.iter().map(|e| e.as_slice()).collect();
        let ct = client::encrypt_templates_public(&pk, &q, &refs, &mut rng).unwrap();
        let r = call(
            "POST",
            &format!("{u}/v1/galleries/staff/templates?count={}", chunk.len()),
            Some(&ct.to_bytes()),
        );
        assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
        assert_eq!(r.json()["first_index"], first);
    }
    let identify = |url: &str, who: usize, rng: &mut Prng| {
        let probe = near(&people[who], rng);
        let body =
            serde_json::to_vec(&serde_json::json!({"embedding": probe, "top_k": 3})).unwrap();
        let r = call_json(&format!("{url}/v1/galleries/staff/identify"), &body);
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        let v = r.json();
        assert_eq!(v["matches"].as_array().unwrap().len(), 3);
        assert_eq!(v["matches"][0]["index"], who, "{v}");
        assert!(v["matches"][0]["cosine"].as_f64().unwrap() > 0.9);
    };
    identify(&u, 35, &mut rng);
    identify(&u, 3, &mut rng);
    call_json(
        &format!("{u}/v1/galleries/nobody/identify"),
        br#"{"embedding": []}"#,
    )
    .expect_error(404, "unknown_gallery");
    call_json(&format!("{u}/v1/galleries/staff/identify"), b"{not json")
        .expect_error(400, "bad_json");
    call_json(
        &format!("{u}/v1/galleries/staff/identify"),
        br#"{"embedding": [1.0, 2.0]}"#,
    )
    .expect_error(400, "bad_input");
    // Erasing one template: the others keep their indices and exact scores.
    let info = |url: &str| {
        let r = call("GET", &format!("{url}/v1/galleries/staff"), None);
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        let v = r.json();
        (
            v["templates"].as_u64().unwrap(),
            v["erased"].as_u64().unwrap(),
            v["ciphertexts"].as_u64().unwrap(),
        )
    };
    assert_eq!(info(&u), (40, 0, 2));
    let db = dir.join("blindmatch.db");
    let stored_ct = |seq: i64| -> Vec<u8> {
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.query_row(
            "SELECT ciphertext FROM gallery_templates WHERE gallery = 'staff' AND seq = ?1",
            [seq],
            |r| r.get(0),
        )
        .unwrap()
    };
    let before = stored_ct(1);
    let r = call(
        "DELETE",
        &format!("{u}/v1/galleries/staff/templates/35"),
        None,
    );
    assert_eq!(r.status, 204, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(info(&u), (39, 1, 2));
    let everyone = |url: &str, rng: &mut Prng| {
        let probe = near(&people[35], rng);
        let body =
            serde_json::to_vec(&serde_json::json!({"embedding": probe, "top_k": 40})).unwrap();
        let r = call_json(&format!("{url}/v1/galleries/staff/identify"), &body);
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        let pq = q.quantize(&probe).unwrap();
        let v = r.json();
        let matches = v["matches"].as_array().unwrap();
        assert_eq!(matches.len(), 39, "{v}");
        for m in matches {
            let i = m["index"].as_u64().unwrap() as usize;
            assert_ne!(i, 35, "an erased template was matched: {v}");
            let tq = q.quantize(&people[i]).unwrap();
            let want: i64 = tq.iter().zip(&pq).map(|(&a, &b)| a as i64 * b as i64).sum();
            assert_eq!(m["score"].as_i64().unwrap(), want, "template {i}");
        }
    };
    everyone(&u, &mut rng);
    identify(&u, 3, &mut rng);
    // The erased template's old ciphertext is gone from the database file
    // and its WAL, not only from the table.
    let after = stored_ct(1);
    assert_ne!(after, before);
    let needle = &before[before.len() / 2..before.len() / 2 + 64];
    for f in ["blindmatch.db", "blindmatch.db-wal"] {
        let bytes = std::fs::read(dir.join(f)).unwrap_or_default();
        assert!(
            !bytes.windows(needle.len()).any(|w| w == needle),
            "{f} still holds the erased ciphertext"
        );
    }
    for (path, status, code) in [
        ("staff/templates/35", 404, "unknown_template"),
        ("staff/templates/40", 404, "unknown_template"),
        ("staff/templates/99999999999", 404, "unknown_template"),
        ("staff/templates/-1", 400, "bad_index"),
        ("staff/templates/x", 400, "bad_index"),
        ("nobody/templates/0", 404, "unknown_gallery"),
        ("b%20d/templates/0", 400, "bad_name"),
        ("nobody", 404, "unknown_gallery"),
    ] {
        call("DELETE", &format!("{u}/v1/galleries/{path}"), None).expect_error(status, code);
    }
    call("GET", &format!("{u}/v1/galleries/nobody"), None).expect_error(404, "unknown_gallery");
    assert_eq!(info(&u), (39, 1, 2));
    // The gallery, with its erasure, is rebuilt from the store after a
    // restart.
    drop(srv);
    let srv = Server::start(&dir, &["--service-key", sk_path.to_str().unwrap()]);
    identify(&srv.url, 34, &mut rng);
    everyone(&srv.url, &mut rng);
    assert_eq!(info(&srv.url), (39, 1, 2));
    // Deleting the gallery: gone, and still gone after a restart.
    let r = call("DELETE", &format!("{}/v1/galleries/staff", srv.url), None);
    assert_eq!(r.status, 204, "{}", String::from_utf8_lossy(&r.body));
    call("GET", &format!("{}/v1/galleries/staff", srv.url), None)
        .expect_error(404, "unknown_gallery");
    assert_eq!(count_rows(&db, "SELECT count(*) FROM gallery_templates"), 0);
    drop(srv);
    let srv = Server::start(&dir, &["--service-key", sk_path.to_str().unwrap()]);
    call_json(
        &format!("{}/v1/galleries/staff/identify", srv.url),
        br#"{"embedding": []}"#,
    )
    .expect_error(404, "unknown_gallery");
}

/// Sets `bits` bits starting at bit `offset` (LSB first) to one.
fn set_bits(bytes: &mut [u8], offset: usize, bits: usize) {
    for b in offset..offset + bits {
        bytes[b / 8] |= 1 << (b % 8);
    }
}

/// A corruption of a valid object that can never be valid: a truncation, an
/// extension, a changed header byte, a residue forced to 2^bits - 1 (above
/// its prime), a changed size or limb byte, or another kind of object.
fn mutate(obj: &[u8], others: &[&[u8]], rng: &mut Prng) -> Vec<u8> {
    let mut m = obj.to_vec();
    match rng.next_u32() % 6 {
        0 => m.truncate(rng.next_u32() as usize % obj.len()),
        1 => {
            let k = 1 + rng.next_u32() as usize % 64;
            m.extend((0..k).map(|_| rng.next_u32() as u8));
        }
        2 => {
            let i = rng.next_u32() as usize % 16;
            m[i] ^= 1 + (rng.next_u32() % 255) as u8;
        }
        3 => {
            // Objects whose body starts at byte 16 (keys) or 18 (ciphertexts);
            // every prime is a 29-bit prime, so all-ones is out of range.
            let start = if obj[6] == 6 { 18 } else { 16 };
            let j = rng.next_u32() as usize % 4096;
            set_bits(&mut m, start * 8 + 29 * j, 29);
        }
        4 if obj[6] == 6 => {
            let i = 16 + rng.next_u32() as usize % 2;
            let old = m[i];
            while m[i] == old {
                m[i] = rng.next_u32() as u8;
            }
        }
        _ => m = others[rng.next_u32() as usize % others.len()].to_vec(),
    }
    m
}

#[test]
fn corrupted_bodies_are_refused_and_change_nothing() {
    let _machine = shared();
    // BLINDMATCH_MUTATIONS overrides the count (about 15 s unoptimized on 2 busy cores).
    let total: usize = std::env::var("BLINDMATCH_MUTATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let dir = temp_dir("mutate");
    let db = dir.join("blindmatch.db");
    let srv = Server::start(&dir, &[]);
    let u = srv.url.clone();
    let mut id = Identity::new(51);
    let mut rng = Prng::from_seed([51; 32]);
    let face = embedding(&mut rng);
    let pk = id.pk.to_bytes();
    let rk = RelinKey::new_with(&id.sk, &mut rng).to_bytes();
    assert_eq!(
        call(
            "PUT",
            &format!("{u}/v1/users/carol/keys"),
            Some(&frame_keys(&pk, None))
        )
        .status,
        201
    );
    let template = id.template(std::slice::from_ref(&face));
    assert_eq!(
        call(
            "PUT",
            &format!("{u}/v1/users/carol/template"),
            Some(&template)
        )
        .status,
        204
    );
    let probe = id.probe(&face);
    let expanded = Ciphertext::from_bytes(&Params::auth4096(), &probe)
        .unwrap()
        .to_bytes_expanded();
    let before = snapshot(&db);
    let others: Vec<&[u8]> = vec![&pk, &rk, &template];
    let agent = ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(60))
        .build();
    let start = Instant::now();
    let mut statuses = std::collections::BTreeMap::new();
    for i in 0..total {
        let (url, body) = match i % 4 {
            0 => (
                format!("{u}/v1/users/carol/verify"),
                mutate(
                    if i % 8 == 0 { &probe } else { &expanded },
                    &[&pk, &rk],
                    &mut rng,
                ),
            ),
            1 => (
                format!("{u}/v1/users/carol/template"),
                mutate(&template, &[&pk, &rk], &mut rng),
            ),
            2 => (
                format!("{u}/v1/users/erin/keys"),
                frame_keys(&mutate(&pk, &[&template, &rk], &mut rng), None),
            ),
            _ => {
                let mut m = frame_keys(&pk, Some(&mutate(&rk, &others[..1], &mut rng)));
                if rng.next_u32().is_multiple_of(4) {
                    // Or a broken frame around valid keys.
                    m = frame_keys(&pk, Some(&rk));
                    let at = rng.next_u32() as usize % 4;
                    m[at] ^= 1 + (rng.next_u32() % 255) as u8;
                }
                (format!("{u}/v1/users/erin/keys"), m)
            }
        };
        let method = if url.ends_with("verify") {
            "POST"
        } else {
            "PUT"
        };
        let resp = agent.request(method, &url).send_bytes(&body);
        let (status, body) = match resp {
            Ok(r) => (r.status(), r.into_string().unwrap_or_default()),
            Err(ureq::Error::Status(s, r)) => (s, r.into_string().unwrap_or_default()),
            Err(e) => panic!("mutation {i}: transport error {e}"),
        };
        assert!(
            (400..500).contains(&status),
            "mutation {i} to {url}: {status} {body}"
        );
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        let code = v["code"].as_str().unwrap().to_string();
        *statuses.entry((status, code)).or_insert(0usize) += 1;
    }
    let secs = start.elapsed().as_secs_f64();
    assert_eq!(snapshot(&db), before, "a refused body changed the database");
    assert_eq!(call("GET", &format!("{u}/healthz"), None).status, 200);
    eprintln!("mutations: {total} corrupted bodies in {secs:.1} s, all refused: {statuses:?}");
}

#[test]
fn serve_reads_env_and_refuses_a_newer_schema() {
    let _machine = shared();
    let dir = temp_dir("env");
    let db = dir.join("env.db");
    // Flags from the environment only.
    let mut child = server_cmd()
        .arg("serve")
        .env("BLINDMATCH_BIND", "127.0.0.1:0")
        .env("BLINDMATCH_DB", &db)
        .env("BLINDMATCH_THREADS", "1")
        .env("BLINDMATCH_WWW", dir.join("www"))
        .env("BLINDMATCH_LOG", "warn")
        .env("BLINDMATCH_BACKEND", "scalar")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("blindmatch-server listening on ")
        .unwrap()
        .trim_end_matches('/')
        .to_string();
    let h = call("GET", &format!("{url}/healthz"), None).json();
    assert_eq!(h["threads"], 1);
    assert_eq!(
        h["backend"], "scalar",
        "BLINDMATCH_BACKEND chooses the kernels"
    );
    assert_eq!(h["schema_version"], blindmatch::server::SCHEMA_VERSION);
    // A second server on the same database is refused while the first runs
    // (it would replay the first one's live audit journal).
    let out = server_cmd()
        .args(["serve", "--bind", "127.0.0.1:0", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("in use by another blindmatch-server"), "{err}");
    assert_eq!(call("GET", &format!("{url}/healthz"), None).status, 200);
    let _ = child.kill();
    let _ = child.wait();
    assert!(db.exists());
    // A database from a newer build is refused, not modified.
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute("UPDATE schema_version SET version = 99", [])
        .unwrap();
    let out = server_cmd()
        .args(["serve", "--bind", "127.0.0.1:0", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("newer"), "{err}");
    assert_eq!(count_rows(&db, "SELECT version FROM schema_version"), 99);
    // A backend this machine cannot run is refused before anything starts.
    let out = server_cmd()
        .args(["serve", "--bind", "127.0.0.1:0", "--db"])
        .arg(dir.join("never.db"))
        .env("BLINDMATCH_BACKEND", "avx9000")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("BLINDMATCH_BACKEND=\"avx9000\"") && err.contains("scalar"),
        "{err}"
    );
    assert!(!dir.join("never.db").exists());
}

/// `blindmatch-server bench` runs on a small gallery and prints every row,
/// each with a positive rate, for one thread and for the all-cores count.
#[test]
fn bench_prints_each_row_with_a_rate() {
    let _machine = shared();
    let out = server_cmd()
        .args([
            "bench",
            "--verifications",
            "4",
            "--gallery",
            "256",
            "--threads",
            "2",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("backend "), "{text}");
    for row in [
        "verify_1to1",
        "identify_1toN",
        "identify_1toN_decrypted",
        "memory_1toN",
    ] {
        for threads in ["threads=1", "threads=2"] {
            let line = lines
                .iter()
                .find(|l| l.starts_with(&format!("{row}\t{threads}\t")))
                .unwrap_or_else(|| panic!("no {row} {threads} row in:\n{text}"));
            let rate = line
                .split('\t')
                .find_map(|f| {
                    f.split_once("/s")
                        .and_then(|(n, _)| n.split(' ').next()?.parse::<f64>().ok())
                })
                .unwrap_or_else(|| panic!("no rate in {line}"));
            assert!(rate.is_finite() && rate > 0.0, "{line}");
            if row != "verify_1to1" {
                assert!(line.contains("\t256 templates\t"), "{line}");
            }
        }
    }
}
