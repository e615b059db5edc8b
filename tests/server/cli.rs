//! The command line: flags from the environment, a newer schema refused,
//! the bench subcommand.

use crate::harness::*;

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
    let kernels = h["kernels"].as_object().unwrap();
    assert_eq!(kernels.len(), blindmatch::Family::ALL.len(), "{h}");
    assert!(kernels.values().all(|k| k == "scalar"), "{h}");
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
    let text = run_ok(server_cmd().args([
        "bench",
        "--verifications",
        "4",
        "--gallery",
        "256",
        "--threads",
        "2",
    ]));
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

/// `keygen --force` over an existing world-readable `service.sk` leaves it
/// mode 0600: the old file's mode is not kept for the new secret.
#[cfg(unix)]
#[test]
fn keygen_force_writes_the_secret_key_mode_0600() {
    use std::os::unix::fs::PermissionsExt;
    let _machine = shared();
    let dir = temp_dir("keygen-force");
    let sk = dir.join("service.sk");
    std::fs::write(&sk, b"old").unwrap();
    std::fs::set_permissions(&sk, std::fs::Permissions::from_mode(0o644)).unwrap();
    run_ok(server_cmd().args(["keygen", "--force", "--out"]).arg(&*dir));
    let meta = std::fs::metadata(&sk).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert!(meta.len() > 3, "service.sk was not rewritten");
}
