//! Clients that hold connections without finishing their requests, and
//! bursts past the matching queue: the deadlines close the first, the
//! queue answers the second with 503, and fresh clients are served all
//! along.

use std::io::Write;
use std::net::TcpStream;

use crate::harness::*;

/// A reply read off a raw socket.
pub(crate) struct RawResp {
    pub(crate) status: u16,
    /// The head's lines after the status line, as `name: value`, names
    /// lowercase.
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
}

impl RawResp {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The JSON error code, if the body is a JSON error.
    pub(crate) fn code(&self) -> String {
        serde_json::from_slice::<serde_json::Value>(&self.body)
            .ok()
            .and_then(|v| v["code"].as_str().map(str::to_string))
            .unwrap_or_default()
    }
}

/// Reads one reply (a head and a `Content-Length` body).
pub(crate) fn read_reply(s: &mut TcpStream) -> std::io::Result<RawResp> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if s.read(&mut byte)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).to_string();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let len = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    s.read_exact(&mut body)?;
    Ok(RawResp {
        status,
        headers,
        body,
    })
}

/// One request on a fresh connection: `head` (the request line and
/// headers, without `Host` and the blank line) and `body`.
pub(crate) fn raw_call(addr: &str, head: &str, body: &[u8]) -> std::io::Result<RawResp> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(60)))?;
    let mut req = format!(
        "{head}\r\nHost: {addr}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    req.extend_from_slice(body);
    s.write_all(&req)?;
    read_reply(&mut s)
}

/// The address of a server's URL.
pub(crate) fn addr_of(srv: &Server) -> String {
    srv.url.strip_prefix("http://").unwrap().to_string()
}

/// Whether a socket has been closed by the server, waiting at most `wait`
/// (a reply before the close is read and discarded).
fn closed_within(s: &mut TcpStream, wait: Duration) -> bool {
    let end = Instant::now() + wait;
    let mut buf = [0u8; 4096];
    loop {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        s.set_read_timeout(Some(left.max(Duration::from_millis(1))))
            .unwrap();
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return false
            }
            Err(_) => return true,
        }
    }
}

/// The median time of `GET /healthz` on `n` fresh connections (a call
/// that fails or takes over 2 s counts as 2 s).
fn healthz_median(addr: &str, n: usize) -> Duration {
    let cap = Duration::from_secs(2);
    let mut times: Vec<Duration> = (0..n)
        .map(|_| {
            let t = Instant::now();
            let ok = (|| -> std::io::Result<bool> {
                let mut s = TcpStream::connect_timeout(&addr.parse().unwrap(), cap)?;
                s.set_read_timeout(Some(cap))?;
                s.write_all(
                    format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n")
                        .as_bytes(),
                )?;
                Ok(read_reply(&mut s)?.status == 200)
            })()
            .unwrap_or(false);
            if ok {
                t.elapsed().min(cap)
            } else {
                cap
            }
        })
        .collect();
    times.sort();
    times[n / 2]
}

/// Starts a server with the open-file soft limit most systems give a
/// process (1,024), as a server started from a shell or a unit without
/// `LimitNOFILE` has; the test process keeps its own higher limit.
fn start_with_default_nofile(dir: &Path, extra: &[&str]) -> Server {
    let (soft, hard) = rlimit::getrlimit(rlimit::Resource::NOFILE).unwrap();
    rlimit::setrlimit(rlimit::Resource::NOFILE, 1024.min(hard), hard).unwrap();
    let srv = Server::start(dir, extra);
    rlimit::setrlimit(rlimit::Resource::NOFILE, soft, hard).unwrap();
    srv
}

const STALLED: usize = 1200;

#[test]
fn stalled_bodies_neither_starve_fresh_clients_nor_outlive_the_deadline() {
    if emulated(
        "stalled_bodies",
        "1,200 sockets test the network code, not the target",
    ) {
        return;
    }
    let _machine = alone();
    let limit = rlimit::increase_nofile_limit(u64::MAX).unwrap();
    if limit < STALLED as u64 + 200 {
        println!("skipped: the hard open-file limit ({limit}) is below {STALLED} sockets");
        return;
    }
    let dir = temp_dir("stall");
    let srv = start_with_default_nofile(&dir, &["--body-timeout-ms", "2000"]);
    let addr = addr_of(&srv);
    let started = Instant::now();
    // Each sends a complete head announcing a ciphertext, the first 1,000
    // bytes of it, and then nothing.
    let head = format!(
        "POST /v1/users/stall/verify HTTP/1.1\r\nHost: {addr}\r\n\
         Content-Type: application/octet-stream\r\nContent-Length: 44594\r\n\r\n"
    );
    let mut req = head.into_bytes();
    req.extend_from_slice(&[0u8; 1000]);
    let mut stalled = Vec::with_capacity(STALLED);
    let mut unconnected = 0;
    for _ in 0..STALLED {
        match TcpStream::connect_timeout(&addr.parse().unwrap(), Duration::from_secs(3)) {
            Ok(mut s) => {
                let _ = s.write_all(&req);
                stalled.push(s);
            }
            Err(_) => unconnected += 1,
        }
    }
    let connected = started.elapsed();
    std::thread::sleep(Duration::from_millis(200));
    let median = healthz_median(&addr, 21);
    // Past the deadline (2 s from each head), with 1.5 s to spare, every
    // stalled socket must have been closed.
    std::thread::sleep((connected + Duration::from_millis(3500)).saturating_sub(started.elapsed()));
    let mut open = 0;
    for s in &mut stalled {
        if !closed_within(s, Duration::from_millis(5)) {
            open += 1;
        }
    }
    println!(
        "{STALLED} stalled sockets ({unconnected} not connected, all sent in {:.2} s): \
         GET /healthz p50 {:.1} ms while they are held; {open} still open 3.5 s after the \
         last (body deadline 2 s)",
        connected.as_secs_f64(),
        median.as_secs_f64() * 1e3,
    );
    assert_eq!(unconnected, 0);
    assert!(
        median < Duration::from_millis(100),
        "healthz p50 {median:?} with stalled sockets held"
    );
    assert_eq!(open, 0, "stalled sockets outlived the body deadline");
    assert_eq!(
        call("GET", &format!("{}/healthz", srv.url), None).status,
        200
    );
}

#[test]
fn a_head_sent_a_byte_at_a_time_is_cut_by_the_header_deadline() {
    let _machine = shared();
    let dir = temp_dir("slowloris");
    let srv = Server::start(&dir, &["--header-timeout-ms", "500"]);
    let addr = addr_of(&srv);
    let mut s = TcpStream::connect(&addr).unwrap();
    let head = format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\nX-Slow: ");
    let start = Instant::now();
    let mut closed_at = None;
    for b in head.bytes().chain(std::iter::repeat(b'a')) {
        if s.write_all(&[b]).is_err() || closed_within(&mut s, Duration::from_millis(50)) {
            closed_at = Some(start.elapsed());
            break;
        }
        if start.elapsed() > Duration::from_secs(4) {
            break;
        }
    }
    println!("a head trickled a byte per 50 ms: closed after {closed_at:?} (deadline 0.5 s)");
    let t = closed_at.expect("a trickled head was never cut off");
    assert!(
        t >= Duration::from_millis(400) && t < Duration::from_secs(2),
        "{t:?}"
    );
}

#[test]
fn a_refused_request_cannot_stall_its_body_past_the_deadline() {
    let _machine = shared();
    let dir = temp_dir("stall-refused");
    let srv = Server::start(&dir, &["--body-timeout-ms", "500"]);
    let addr = addr_of(&srv);
    // Refusals that discard the body: a foreign Host, a form's type, a
    // method the route does not take.
    let heads = [
        "PUT /v1/users/x/keys HTTP/1.1\r\nHost: evil.example\r\n\
         Content-Type: application/octet-stream"
            .to_string(),
        format!("PUT /v1/users/x/keys HTTP/1.1\r\nHost: {addr}\r\nContent-Type: text/plain"),
        format!("PATCH /v1/users/x/keys HTTP/1.1\r\nHost: {addr}"),
    ];
    for head in heads {
        let mut s = TcpStream::connect(&addr).unwrap();
        s.write_all(format!("{head}\r\nContent-Length: 100000\r\n\r\n0123456789").as_bytes())
            .unwrap();
        let t = Instant::now();
        let closed = closed_within(&mut s, Duration::from_secs(3));
        println!(
            "{}: closed {closed} after {:?}",
            head.lines().next().unwrap(),
            t.elapsed()
        );
        assert!(closed, "{head}: a stalled body held the connection 3 s");
    }
}

#[test]
fn an_idle_keep_alive_connection_is_closed() {
    let _machine = shared();
    let dir = temp_dir("idle");
    let srv = Server::start(&dir, &["--idle-timeout-ms", "300"]);
    let addr = addr_of(&srv);
    let mut s = TcpStream::connect(&addr).unwrap();
    s.write_all(format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes())
        .unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    assert_eq!(read_reply(&mut s).unwrap().status, 200);
    let idle = Instant::now();
    let closed = closed_within(&mut s, Duration::from_secs(3));
    let t = idle.elapsed();
    println!("an idle keep-alive connection: closed {closed} after {t:?} (idle timeout 0.3 s)");
    assert!(closed, "an idle connection stayed open 3 s");
    assert!(
        t >= Duration::from_millis(250) && t < Duration::from_millis(1500),
        "{t:?}"
    );
}

/// Every reply announces the idle timeout in whole seconds, so that a
/// client closes an idle connection before the server does (and never
/// sends a request on one the server is closing).
#[test]
fn replies_announce_the_idle_timeout() {
    let _machine = shared();
    for (flags, want) in [
        (&[][..], "timeout=5"),
        (&["--idle-timeout-ms", "2999"][..], "timeout=2"),
    ] {
        let dir = temp_dir("keepalive");
        let srv = Server::start(&dir, flags);
        let addr = addr_of(&srv);
        let mut s = TcpStream::connect(&addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        for path in ["/healthz", "/no-such-path"] {
            s.write_all(format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes())
                .unwrap();
            let reply = read_reply(&mut s).unwrap();
            let hint = reply.headers.iter().find(|(k, _)| k == "keep-alive");
            assert_eq!(
                hint.map(|(_, v)| v.as_str()),
                Some(want),
                "{flags:?} {path}"
            );
        }
    }
}

#[test]
fn connections_past_the_cap_wait_for_a_free_one() {
    let _machine = shared();
    let dir = temp_dir("conncap");
    let srv = Server::start(&dir, &["--max-connections", "4"]);
    let addr = addr_of(&srv);
    let healthz = format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    let mut held: Vec<TcpStream> = (0..4)
        .map(|_| {
            let mut s = TcpStream::connect(&addr).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            s.write_all(healthz.as_bytes()).unwrap();
            assert_eq!(read_reply(&mut s).unwrap().status, 200);
            s
        })
        .collect();
    // The fifth connects (the kernel's backlog) but is not served...
    let mut fifth = TcpStream::connect(&addr).unwrap();
    fifth.write_all(healthz.as_bytes()).unwrap();
    fifth
        .set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let early = read_reply(&mut fifth);
    assert!(
        early.is_err(),
        "a fifth connection was served past a cap of 4"
    );
    // ... until one of the four closes.
    held.pop();
    fifth
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let t = Instant::now();
    assert_eq!(read_reply(&mut fifth).unwrap().status, 200);
    println!(
        "past the cap: served {:?} after a connection closed",
        t.elapsed()
    );
}

#[test]
fn a_burst_past_the_verify_queue_gets_503_and_the_server_recovers() {
    let _machine = shared();
    let dir = temp_dir("burst");
    let srv = Server::start(&dir, &["--verify-queue", "2"]);
    let u = srv.url.clone();
    let addr = addr_of(&srv);
    let mut id = Identity::new(81);
    let mut rng = Prng::from_seed([81; 32]);
    let face = embedding(&mut rng);
    enroll(&u, "burst", &mut id, &face);
    let probe = Arc::new(id.probe(&near(&face, &mut rng)));
    const BURST: usize = 48;
    let gate = Arc::new(std::sync::Barrier::new(BURST));
    let start = Instant::now();
    let replies: Vec<RawResp> = (0..BURST)
        .map(|_| {
            let (probe, gate, addr) = (probe.clone(), gate.clone(), addr.clone());
            std::thread::spawn(move || {
                gate.wait();
                raw_call(
                    &addr,
                    "POST /v1/users/burst/verify HTTP/1.1\r\nContent-Type: application/octet-stream",
                    &probe,
                )
                .unwrap()
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|t| t.join().unwrap())
        .collect();
    let took = start.elapsed();
    let ok = replies.iter().filter(|r| r.status == 200).count();
    let refused: Vec<&RawResp> = replies.iter().filter(|r| r.status == 503).collect();
    println!(
        "{BURST} verifications at once, 2 threads, queue 2: {ok} answered 200, {} 503, in {:.2} s",
        refused.len(),
        took.as_secs_f64()
    );
    assert_eq!(ok + refused.len(), BURST, "statuses other than 200 and 503");
    assert!(!refused.is_empty(), "no verification was refused");
    assert!(ok >= 1);
    for r in &refused {
        assert_eq!(r.code(), "overloaded");
        assert_eq!(r.header("retry-after"), Some("1"));
        assert!(r
            .header("content-type")
            .unwrap()
            .starts_with("application/json"));
    }
    verify_ok(&u, "burst", &mut id, &face);
    let metrics = call("GET", &format!("{u}/metrics"), None);
    let text = String::from_utf8_lossy(&metrics.body);
    let line = format!(
        "blindmatch_overloaded_total{{queue=\"verify\"}} {}",
        refused.len()
    );
    assert!(text.lines().any(|l| l == line), "{line} not in\n{text}");
}
