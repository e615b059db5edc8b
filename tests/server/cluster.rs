//! Two matcher replicas on one PostgreSQL database behind HAProxy (with
//! deploy/haproxy.cfg, the configuration scripts/cluster.sh runs): one
//! replica killed with SIGKILL under load loses nothing acknowledged, the
//! clients see errors only for requests in flight at the kill, the other
//! replica serves on, and the killed one rejoins when started again.

use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::harness::*;
use crate::postgres;

/// HAProxy on `front`, before the two replicas; killed on drop.
struct Haproxy(Child);

impl Haproxy {
    fn start(front: &str, a: &str, b: &str) -> Haproxy {
        let cfg = concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/haproxy.cfg");
        let child = Command::new("haproxy")
            .args(["-db", "-f", cfg])
            .env("BM_FRONT", front)
            .env("BM_MATCHER_A", a)
            .env("BM_MATCHER_B", b)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("haproxy (scripts/setup.sh installs it)");
        Haproxy(child)
    }
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_addr() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().to_string()
}

/// Requests the replica logging to `log` has answered: its log's `done`
/// lines.
fn answered(log: &std::path::Path) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("path=/v1/users/") && l.contains(" done status="))
        .count()
}

/// Sets `stop` when dropped: the clients end even when the test panics.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

#[test]
fn kill_9_of_a_replica_behind_haproxy_loses_nothing_acknowledged() {
    let _machine = shared();
    if emulated(
        "cluster",
        "HAProxy and timing: nothing architecture-specific",
    ) {
        return;
    }
    let db = postgres::shared().database("cluster");
    let dir = temp_dir("cluster");
    let (addr_a, addr_b, front) = (free_addr(), free_addr(), free_addr());
    // The replicas answer for the name clients use: the proxy's.
    let behind = ["--allowed-host", front.as_str()];
    let mut a = Server::start_at(&dir, &db, "a.log", &addr_a, &behind);
    let _b = Server::start_at(&dir, &db, "b.log", &addr_b, &behind);
    let _proxy = Haproxy::start(&front, &addr_a, &addr_b);
    let url = format!("http://{front}");
    let start = Instant::now();
    while try_call("GET", &format!("{url}/healthz"), None).map_or(true, |r| r.status != 200) {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "HAProxy never came up"
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    let mut id = Identity::new(61);
    let keys = id.keys_body(false);
    let mut rng = Prng::from_seed([61; 32]);
    let faces: Vec<Vec<f32>> = (0..2).map(|_| embedding(&mut rng)).collect();
    let templates: Vec<Vec<u8>> = faces
        .iter()
        .map(|f| id.template(std::slice::from_ref(f)))
        .collect();
    let probes: Vec<Vec<u8>> = faces.iter().map(|f| id.probe(f)).collect();
    const CLIENTS: usize = 3;
    let stop = AtomicBool::new(false);
    let done = AtomicUsize::new(0);
    // Per client: (user, template) acknowledged, verifications acknowledged
    // per user, and the requests that failed.
    type Tally = (Vec<(String, usize)>, Vec<(String, u64)>, Vec<String>);
    let tallies: Vec<Tally> = std::thread::scope(|scope| {
        let clients: Vec<_> = (0..CLIENTS)
            .map(|c| {
                let (url, keys, templates, probes, stop, done) =
                    (&url, &keys, &templates, &probes, &stop, &done);
                scope.spawn(move || {
                    let mut t: Tally = Default::default();
                    let mut n = 0;
                    'users: while !stop.load(Ordering::Relaxed) {
                        let user = format!("c{c}n{n}");
                        let k = n % 2;
                        n += 1;
                        let steps: [(&str, String, &[u8], u16); 4] = [
                            ("PUT", format!("{url}/v1/users/{user}/keys"), keys, 201),
                            (
                                "PUT",
                                format!("{url}/v1/users/{user}/template?count=1"),
                                &templates[k],
                                204,
                            ),
                            (
                                "POST",
                                format!("{url}/v1/users/{user}/verify"),
                                &probes[k],
                                200,
                            ),
                            (
                                "POST",
                                format!("{url}/v1/users/{user}/verify"),
                                &probes[k],
                                200,
                            ),
                        ];
                        let mut verified = 0;
                        for (i, (method, u, body, want)) in steps.iter().enumerate() {
                            match try_call(method, u, Some(body)) {
                                Ok(r) if r.status == *want => {}
                                Ok(r) => {
                                    t.2.push(format!(
                                        "{method} {u}: {} {}",
                                        r.status,
                                        String::from_utf8_lossy(&r.body)
                                    ));
                                    continue 'users;
                                }
                                Err(e) => {
                                    t.2.push(format!("{method} {u}: {e}"));
                                    continue 'users;
                                }
                            }
                            match i {
                                1 => t.0.push((user.clone(), k)),
                                2 | 3 => verified += 1,
                                _ => {}
                            }
                            done.fetch_add(1, Ordering::Relaxed);
                        }
                        t.1.push((user, verified));
                    }
                    t
                })
            })
            .collect();
        let _stop = StopOnDrop(&stop);
        std::thread::sleep(Duration::from_millis(800));
        let before_kill = done.load(Ordering::Relaxed);
        a.kill(); // SIGKILL
                  // The other replica serves on.
        std::thread::sleep(Duration::from_millis(2000));
        let after_kill = done.load(Ordering::Relaxed);
        assert!(
            after_kill > before_kill + 10,
            "B did not serve on: {before_kill} -> {after_kill} requests"
        );
        // A starts again on its address; HAProxy sends it requests again.
        let before = answered(&dir.join("a.log"));
        a = Server::start_at(&dir, &db, "a.log", &addr_a, &behind);
        let back = Instant::now();
        while answered(&dir.join("a.log")) < before + 5 {
            assert!(back.elapsed() < Duration::from_secs(15), "A never rejoined");
            std::thread::sleep(Duration::from_millis(100));
        }
        eprintln!("cluster: A rejoined {:?} after its restart", back.elapsed());
        stop.store(true, Ordering::Relaxed);
        clients.into_iter().map(|c| c.join().unwrap()).collect()
    });
    let failed: Vec<&String> = tallies.iter().flat_map(|t| &t.2).collect();
    let acked: Vec<&(String, usize)> = tallies.iter().flat_map(|t| &t.0).collect();
    // At most one request per client was in flight at the kill.
    assert!(
        failed.len() <= CLIENTS,
        "{} failed: {failed:#?}",
        failed.len()
    );
    for (user, _) in &acked {
        let info = call("GET", &format!("{url}/v1/users/{user}"), None);
        assert_eq!(info.status, 200, "{user} lost");
        assert_eq!(info.json()["template_count"], 1, "{user}");
    }
    // Every acknowledged verification left its audit row (a user whose
    // enrollment failed at the kill has none to count).
    for (user, verified) in tallies.iter().flat_map(|t| &t.1) {
        let info = call("GET", &format!("{url}/v1/users/{user}"), None);
        if info.status == 200 {
            let rows = info.json()["verifications"].as_u64().unwrap();
            assert!(
                rows >= *verified,
                "{user}: {rows} rows for {verified} acknowledged"
            );
        }
    }
    // The acknowledged templates are the bytes sent.
    let name = db.rsplit('/').next().unwrap();
    for (user, k) in acked.iter().take(20) {
        let hex = postgres::shared().psql(
            name,
            &format!(
                "SELECT encode(t.ciphertext, 'hex') FROM templates t JOIN users u ON u.id = t.user_id WHERE u.name = '{user}'"
            ),
        );
        let want: String = templates[*k].iter().map(|b| format!("{b:02x}")).collect();
        assert!(hex == want, "{user}: template changed");
    }
    eprintln!(
        "cluster: {} enrollments acknowledged through HAProxy, {} requests failed at the kill",
        acked.len(),
        failed.len()
    );
}

/// scripts/cluster.sh as a user runs it (the build and setup skipped: the
/// test's binary is used): it prints the page's URL, the page and the
/// replicas answer through HAProxy on one PostgreSQL, and a stop signal
/// to its process group stops every process it started, PostgreSQL too.
/// (The script traps SIGINT, Ctrl-C, and SIGTERM alike; the test sends
/// SIGTERM, since a shell that starts with SIGINT ignored, as background
/// jobs of the test runner's scripts do, cannot trap it.)
#[test]
fn cluster_sh_starts_the_cluster_and_a_stop_signal_stops_it() {
    use std::io::{BufRead, BufReader};
    use std::os::unix::process::CommandExt;
    let _machine = shared();
    if emulated(
        "cluster.sh",
        "scripts and ports: nothing architecture-specific",
    ) {
        return;
    }
    let dir = temp_dir("cluster-sh");
    let ports: Vec<u16> = (0..6)
        .map(|_| free_addr().rsplit(':').next().unwrap().parse().unwrap())
        .collect();
    let mut child = Command::new("bash")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/cluster.sh"))
        .envs([
            ("SKIP_SETUP", "1".to_string()),
            ("SKIP_WASM", "1".to_string()),
            ("SKIP_BUILD", "1".to_string()),
            ("BLINDMATCH_BIN", BIN.to_string()),
            ("BLINDMATCH_BIND", format!("127.0.0.1:{}", ports[0])),
            ("DECIDER_PORT", ports[1].to_string()),
            ("MATCHER_PORTS", format!("{} {}", ports[2], ports[3])),
            ("HAPROXY_PORT", ports[4].to_string()),
            ("PG_PORT", ports[5].to_string()),
            ("CLUSTER_DIR", dir.display().to_string()),
        ])
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(
            std::fs::File::create(dir.join("cluster.err")).unwrap(),
        ))
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let page = format!("http://127.0.0.1:{}", ports[0]);
    assert_eq!(
        line.trim(),
        format!("blindmatch cluster at {page}/"),
        "{}",
        std::fs::read_to_string(dir.join("cluster.err")).unwrap_or_default()
    );
    assert_eq!(call("GET", &format!("{page}/"), None).status, 200);
    assert_eq!(
        call("GET", &format!("{page}/rp/config"), None).json()["mode"],
        "login"
    );
    let front = format!("http://127.0.0.1:{}", ports[4]);
    let health = call("GET", &format!("{front}/healthz"), None).json();
    assert_eq!(health["store"], "postgres");

    let status = Command::new("kill")
        .args(["-s", "TERM", "--", &format!("-{}", child.id())])
        .status()
        .unwrap();
    assert!(status.success());
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "cluster.sh did not stop"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    for port in &ports {
        assert!(
            std::net::TcpStream::connect(("127.0.0.1", *port)).is_err(),
            "port {port} still answers after the stop"
        );
    }
}
