//! The bounded load test and the measured per-request overhead.

use crate::harness::*;

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
    // (A user read counts the journaled rows too; the database has them
    // once the flusher thread has run, every 0.1 s.)
    let info = call("GET", &format!("{u}/v1/users/load"), None).json();
    assert_eq!(info["verifications"], (total + seq.requests) as u64);
    let rows = || count_rows(&db, "SELECT count(*) FROM audit WHERE user = 'load'") as usize;
    let start = Instant::now();
    while rows() < total + seq.requests && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(rows(), total + seq.requests);
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
        let r = agent
            .post(&url)
            .set("content-type", "application/octet-stream")
            .send_bytes(probe)
            .unwrap();
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
