//! The hostile-traffic run: one bounded run against the real binary that
//! mixes every attack the other server tests make one at a time (corrupted
//! bodies, stalled sockets, requests cut off by a disconnect, bursts past
//! the verification queue) with valid traffic, ends with a SIGTERM while
//! requests are in flight, and then checks that nothing acknowledged was
//! lost or doubled. Its report line is the figure bench/REPORT.md quotes.

use std::collections::BTreeMap;
use std::net::TcpStream;
use std::sync::atomic::AtomicBool;

use crate::attack::*;
use crate::harness::*;

/// Short deadlines and a small queue, so that the attacks meet them within
/// the run (the defaults are documented in docs/API.md).
const NET_FLAGS: &[&str] = &[
    "--header-timeout-ms",
    "1000",
    "--body-timeout-ms",
    "1500",
    "--idle-timeout-ms",
    "1000",
    "--verify-queue",
    "4",
];

/// Sockets that stall at any one time.
const STALLED: usize = 300;
/// Concurrent verifications of a burst (past the queue of `NET_FLAGS`).
const BURST: usize = 24;

/// What the valid clients saw: latencies of their answered requests and
/// every status.
#[derive(Default)]
struct Tally {
    latencies: Vec<Duration>,
    statuses: BTreeMap<u16, usize>,
}

impl Tally {
    fn add(&mut self, status: u16, took: Option<Duration>) {
        *self.statuses.entry(status).or_default() += 1;
        self.latencies.extend(took);
    }

    fn merge(&mut self, other: Tally) {
        self.latencies.extend(other.latencies);
        for (s, n) in other.statuses {
            *self.statuses.entry(s).or_default() += n;
        }
    }

    fn p99(&mut self) -> Duration {
        self.latencies.sort();
        let n = self.latencies.len();
        assert!(n > 0, "no valid request was answered");
        self.latencies[(n * 99).div_ceil(100) - 1]
    }
}

/// An append acknowledged with its index.
struct Acked {
    face: Vec<f32>,
    index: u64,
}

fn append(u: &str, gallery: &str, ct: &[u8]) -> Resp {
    call(
        "POST",
        &format!("{u}/v1/galleries/{gallery}/templates?count=1"),
        Some(ct),
    )
}

#[test]
fn hostile_traffic_loses_nothing_acknowledged() {
    if emulated(
        "hostile",
        "it checks the server's I/O, not the target's arithmetic, which the other server \
         tests cover",
    ) {
        return;
    }
    let _machine = alone();
    let mutations: usize = std::env::var("BLINDMATCH_MUTATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let dir = temp_dir("hostile");
    let (sk, service_pk) = service_key(&dir);
    let mut args = vec!["--service-key", sk.to_str().unwrap()];
    args.extend_from_slice(NET_FLAGS);
    let db = dir.join("blindmatch.db");
    let srv = Server::start(&dir, &args);
    let u = srv.url.clone();
    let q = Quantizer::new(&Params::auth4096(), DIM).unwrap();
    let gallery_ct = |face: &[f32], rng: &mut Prng| {
        client::encrypt_templates_public(&service_pk, &q, &[face], rng)
            .unwrap()
            .to_bytes()
    };

    // The users: one whose requests are all corrupted, one for bursts, one
    // for the valid client.
    let mut rng = Prng::from_seed([71; 32]);
    let mut target = Identity::new(71);
    let originals = Originals::enroll(&u, "carol", &mut target, &embedding(&mut rng));
    let mut burst_id = Identity::new(72);
    let burst_face = embedding(&mut rng);
    enroll(&u, "dave", &mut burst_id, &burst_face);
    let burst_probes: Vec<Vec<u8>> = (0..BURST).map(|_| burst_id.probe(&burst_face)).collect();
    let mut valid_id = Identity::new(73);
    let valid_face = embedding(&mut rng);
    enroll(&u, "vera", &mut valid_id, &valid_face);
    // Probes and gallery ciphertexts made ahead, so that the clients spend
    // the run sending.
    let valid_probes: Vec<Vec<u8>> = (0..40).map(|_| valid_id.probe(&valid_face)).collect();
    let faces: Vec<Vec<f32>> = (0..120).map(|_| embedding(&mut rng)).collect();
    let cts: Vec<Vec<u8>> = faces.iter().map(|f| gallery_ct(f, &mut rng)).collect();

    let stop = AtomicBool::new(false);
    let started = Instant::now();
    let (mut_statuses, held_peak, stalled_open, valid, burst, acked, cut, erase_sent) =
        std::thread::scope(|s| {
            // Corrupted bodies, every one refused.
            let mutator = s.spawn(|| {
                let agent = ureq::AgentBuilder::new()
                    .timeout(Duration::from_secs(60))
                    .build();
                let mut rng = Prng::from_seed([74; 32]);
                let mut statuses: BTreeMap<(u16, String), usize> = BTreeMap::new();
                for i in 0..mutations {
                    let (method, path, body) = originals.corrupted("carol", "erin", i, &mut rng);
                    let resp = agent
                        .request(method, &format!("{u}{path}"))
                        .set("content-type", "application/octet-stream")
                        .send_bytes(&body);
                    let (status, text) = match resp {
                        Ok(r) => (r.status(), r.into_string().unwrap_or_default()),
                        Err(ureq::Error::Status(s, r)) => (s, r.into_string().unwrap_or_default()),
                        Err(e) => panic!("mutation {i}: transport error {e}"),
                    };
                    let v: serde_json::Value = serde_json::from_str(&text)
                        .unwrap_or_else(|_| panic!("mutation {i}: {status} {text}"));
                    let code = v["code"].as_str().unwrap().to_string();
                    assert!(
                        (400..500).contains(&status) || code == "overloaded",
                        "mutation {i} to {path}: {status} {text}"
                    );
                    *statuses.entry((status, code)).or_default() += 1;
                }
                stop.store(true, Ordering::SeqCst);
                statuses
            });

            // Sockets that send headers and stall, replaced as the server
            // closes them; the peak held at once.
            let staller = s.spawn(|| {
                let mut open: Vec<TcpStream> = Vec::new();
                let mut peak = 0;
                while !stop.load(Ordering::SeqCst) {
                    open.retain(|c| !closed_by_server(c));
                    while open.len() < STALLED {
                        match stall(&u, "/v1/users/carol/template") {
                            Ok(c) => open.push(c),
                            Err(_) => break,
                        }
                    }
                    peak = peak.max(open.len());
                    std::thread::sleep(Duration::from_millis(50));
                }
                (peak, open)
            });

            // Requests cut off by a disconnect: appends and erasures.
            let cutter = s.spawn(|| {
                let mut acked = Vec::new();
                let mut cut = Vec::new();
                let mut erase_sent = Vec::new();
                let mut i = 0;
                while !stop.load(Ordering::SeqCst) && i < faces.len() {
                    let path = "/v1/galleries/main/templates?count=1";
                    match i % 3 {
                        0 => {
                            let r = append(&u, "main", &cts[i]);
                            assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
                            acked.push(Acked {
                                face: faces[i].clone(),
                                index: r.json()["first_index"].as_u64().unwrap(),
                            });
                        }
                        1 => {
                            send_and_close(&u, "POST", path, &cts[i], delay(i));
                            cut.push(faces[i].clone());
                        }
                        _ => {
                            if let Some(a) = acked.iter().find(|a| !erase_sent.contains(&a.index)) {
                                let erase = format!("/v1/galleries/main/templates/{}", a.index);
                                send_and_close(&u, "DELETE", &erase, &[], delay(i * 7));
                                erase_sent.push(a.index);
                            }
                        }
                    }
                    i += 1;
                    std::thread::sleep(Duration::from_millis(20));
                }
                (acked, cut, erase_sent)
            });

            // Bursts of verifications past the queue.
            let burster = s.spawn(|| {
                let mut tally = Tally::default();
                while !stop.load(Ordering::SeqCst) {
                    let answers: Vec<u16> = std::thread::scope(|b| {
                        let calls: Vec<_> = burst_probes
                            .iter()
                            .map(|p| {
                                b.spawn(|| {
                                    call("POST", &format!("{u}/v1/users/dave/verify"), Some(p))
                                })
                            })
                            .collect();
                        calls
                            .into_iter()
                            .map(|c| {
                                let r = c.join().unwrap();
                                if r.status == 503 {
                                    assert!(r.header("retry-after").is_some());
                                    r.expect_error(503, "overloaded");
                                } else {
                                    assert_eq!(r.status, 200);
                                }
                                r.status
                            })
                            .collect()
                    });
                    for a in answers {
                        tally.add(a, None);
                    }
                    std::thread::sleep(Duration::from_millis(300));
                }
                tally
            });

            // The valid client: verifications and acknowledged appends to
            // its own gallery, timed.
            let client = s.spawn(|| {
                let mut tally = Tally::default();
                let mut acked = Vec::new();
                let mut rng = Prng::from_seed([75; 32]);
                let mut i = 0;
                while !stop.load(Ordering::SeqCst) {
                    let t = Instant::now();
                    let r = call(
                        "POST",
                        &format!("{u}/v1/users/vera/verify"),
                        Some(&valid_probes[i % valid_probes.len()]),
                    );
                    tally.add(r.status, (r.status == 200).then(|| t.elapsed()));
                    if r.status == 200 {
                        let got =
                            client::decrypt_reply_bytes(&valid_id.sk, &valid_id.q, &r.body, 1)
                                .unwrap();
                        assert!(got.cosines[0] > 0.9, "{:?}", got.cosines);
                    } else {
                        r.expect_error(503, "overloaded");
                    }
                    if i % 4 == 0 && acked.len() < 30 {
                        let face = embedding(&mut rng);
                        let ct = gallery_ct(&face, &mut rng);
                        let t = Instant::now();
                        let r = append(&u, "valid", &ct);
                        assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
                        tally.add(201, Some(t.elapsed()));
                        acked.push(Acked {
                            face,
                            index: r.json()["first_index"].as_u64().unwrap(),
                        });
                    }
                    i += 1;
                }
                (tally, acked)
            });

            let mut_statuses = mutator.join().unwrap();
            let (peak, stalled_open) = staller.join().unwrap();
            let (acked, cut, erase_sent) = cutter.join().unwrap();
            let burst = burster.join().unwrap();
            let (valid, valid_acked) = client.join().unwrap();
            let acked = [("main", acked), ("valid", valid_acked)];
            (
                mut_statuses,
                peak,
                stalled_open,
                valid,
                burst,
                acked,
                cut,
                erase_sent,
            )
        });
    let attack_secs = started.elapsed().as_secs_f64();

    // The stalled sockets still open are closed by the server's body
    // deadline (1.5 s here; a few seconds of slack for a loaded machine).
    let deadline = Instant::now() + Duration::from_secs(6);
    while stalled_open.iter().any(|c| !closed_by_server(c)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let never_closed = stalled_open.iter().filter(|c| !closed_by_server(c)).count();
    assert_eq!(never_closed, 0, "stalled sockets the server kept open");
    drop(stalled_open);

    // SIGTERM while cut-off appends are in flight: the server stops cleanly.
    let mut late = Vec::new();
    for (i, face) in faces.iter().enumerate().take(6) {
        send_and_close(
            &u,
            "POST",
            "/v1/galleries/late/templates?count=1",
            &cts[i],
            delay(i),
        );
        late.push(face.clone());
    }
    let pid = srv.child.lock().unwrap().id();
    let term = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let status = srv.child.lock().unwrap().wait().unwrap();
    assert!(status.success(), "SIGTERM stop: {status:?}");
    drop(srv);

    let integrity: String = rusqlite::Connection::open(&db)
        .unwrap()
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");

    // After a restart: every acknowledged append stored once and matched at
    // its index unless an erasure of it was sent; a committed cut-off
    // append matches at one index only, never a taken one.
    let srv = Server::start(&dir, &args[..2]);
    let u = srv.url.clone();
    let mut rng = Prng::from_seed([76; 32]);
    let mut problems: Vec<String> = Vec::new();
    let mut acked_total = 0;
    for (gallery, list) in &acked {
        if held(&u, gallery) != rows(&db, gallery) {
            problems.push(format!("{gallery}: memory and store differ"));
        }
        for a in list {
            acked_total += 1;
            let copies = count_rows(
                &db,
                &format!(
                    "SELECT count(*) FROM gallery_templates WHERE gallery = '{gallery}' \
                     AND seq = {}",
                    a.index / 32
                ),
            );
            let erased = erase_sent.contains(&a.index) && *gallery == "main";
            let got = top(&u, gallery, &a.face, &mut rng);
            let ok = copies == 1
                && match got {
                    Some(x) => x == a.index,
                    None => erased,
                };
            if !ok {
                problems.push(format!(
                    "{gallery} #{}: {copies} rows, matched at {got:?}",
                    a.index
                ));
            }
        }
    }
    let mut seen = std::collections::HashSet::new();
    for face in cut.iter() {
        if let Some(x) = top(&u, "main", face, &mut rng) {
            if !seen.insert(x) || acked[0].1.iter().any(|a| a.index == x) {
                problems.push(format!("cut-off append matched at taken index {x}"));
            }
        }
    }
    if held(&u, "late") != rows(&db, "late") {
        problems.push("late: memory and store differ after the SIGTERM".into());
    }
    verify_ok(&u, "vera", &mut valid_id, &valid_face);
    assert!(problems.is_empty(), "{}", problems.join("\n"));

    let mut all = valid;
    let p99 = all.p99();
    all.merge(burst);
    let refused: usize = mut_statuses.values().sum();
    let overloaded = all.statuses.get(&503).copied().unwrap_or(0);
    assert!(overloaded > 0, "no burst met the queue: {:?}", all.statuses);
    eprintln!(
        "hostile: {attack_secs:.1} s; {refused} corrupted bodies refused; stalled sockets held \
         at once {held_peak}; valid and burst answers by status {:?}; valid p99 {:.1} ms; \
         {acked_total} acknowledged appends intact, {} cut off, {} erasures cut off",
        all.statuses,
        p99.as_secs_f64() * 1e3,
        cut.len(),
        erase_sent.len(),
    );
}
