//! What survives: a backup taken while serving, the audit journal at
//! SIGTERM, audit retention, and acknowledged writes after kill -9.

use crate::harness::*;

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
        said.contains(&format!(
            "schema {}, 1 users, 0 gallery ciphertexts",
            blindmatch::server::SCHEMA_VERSION
        )),
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
    // The verification's row is committed by now or still in the journal
    // (the server was killed within the flusher's 0.1 s); the next start
    // commits it in that case, so it is counted once either way below.
    let committed = count_rows(&db, "SELECT count(*) FROM audit");
    assert!(committed <= 1, "one verification, {committed} rows");
    // Rows of 40 and of 20 days ago, as if the server had run that long.
    let day_ms = 86_400_000i64;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    for (age, n) in [(40, 3), (20, 2)] {
        crate::growth::insert_audit_rows(&db, "ann", &vec![now - age * day_ms; n]);
    }
    assert_eq!(count_rows(&db, "SELECT count(*) FROM audit"), committed + 5);
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
fn acknowledged_enrollments_survive_kill_9() {
    survive_kill_9("sqlite");
}

#[test]
fn acknowledged_enrollments_survive_kill_9_on_postgres() {
    survive_kill_9("postgres");
}

/// What a store holds of a user: the template (bytes and count) and the
/// number of audit rows; and the number of templates in all.
type TemplateOf = Box<dyn Fn(&str) -> Option<(Vec<u8>, u32)>>;

struct Reader {
    template: TemplateOf,
    audit_rows: Box<dyn Fn(&str) -> i64>,
    templates: Box<dyn Fn() -> i64>,
}

fn sqlite_reader(db: &Path) -> Reader {
    let conn = std::rc::Rc::new(rusqlite::Connection::open(db).unwrap());
    let ok: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ok, "ok");
    let (c1, c2, c3) = (conn.clone(), conn.clone(), conn);
    Reader {
        template: Box::new(move |user| {
            c1.query_row(
                "SELECT ciphertext, count FROM templates WHERE user = ?1",
                [user],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .ok()
        }),
        audit_rows: Box::new(move |user| {
            c2.query_row("SELECT count(*) FROM audit WHERE user = ?1", [user], |r| {
                r.get(0)
            })
            .unwrap()
        }),
        templates: Box::new(move || {
            c3.query_row("SELECT count(*) FROM templates", [], |r| r.get(0))
                .unwrap()
        }),
    }
}

fn postgres_reader(db: &str) -> Reader {
    let name = db.rsplit('/').next().unwrap().to_string();
    let psql = move |sql: String| crate::postgres::shared().psql(&name, &sql);
    let (p1, p2, p3) = (psql.clone(), psql.clone(), psql);
    Reader {
        template: Box::new(move |user| {
            let out = p1(format!(
                "SELECT encode(t.ciphertext, 'hex') || ' ' || t.count FROM templates t
                 JOIN users u ON u.id = t.user_id WHERE u.name = '{user}'"
            ));
            let (hex, count) = out.split_once(' ')?;
            let bytes = (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                .collect();
            Some((bytes, count.parse().unwrap()))
        }),
        audit_rows: Box::new(move |user| {
            p2(format!(
                "SELECT count(*) FROM audit WHERE user_name = '{user}'"
            ))
            .parse()
            .unwrap()
        }),
        templates: Box::new(move || p3("SELECT count(*) FROM templates".into()).parse().unwrap()),
    }
}

/// Rounds of enrollments and verifications, each ended by `kill -9` of the
/// server at a random moment; then every acknowledged write must be there,
/// byte for byte, on the store `kind`.
fn survive_kill_9(kind: &str) {
    let _machine = shared();
    let dir = temp_dir(&format!("durable-{kind}"));
    let db = match kind {
        "sqlite" => dir.join("blindmatch.db").display().to_string(),
        _ => crate::postgres::shared().database("kill9"),
    };
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
        let srv = Server::start_on(&dir, &db, "server.log", &[]);
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
    let srv = Server::start_on(&dir, &db, "server.log", &[]);
    let reader = match kind {
        "sqlite" => sqlite_reader(Path::new(&db)),
        _ => postgres_reader(&db),
    };
    let stored = |user: &str| (reader.template)(user);
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
        let rows = (reader.audit_rows)(user);
        if stored(user).is_some() {
            assert!(
                (*ok..=*sent).contains(&rows),
                "{user}: {rows} audit rows for {ok} acknowledged of {sent} sent verifications"
            );
        }
        rows_acked += ok;
    }
    let n_templates = (reader.templates)();
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
        "durability ({kind}): {} acknowledged enrollments and {rows_acked} acknowledged verifications over {rounds} kill -9 rounds, all intact",
        acked.len()
    );
}
