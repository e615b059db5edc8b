//! Mutations whose client closes the connection right after sending the
//! request: each one must take effect entirely (database, memory and cache)
//! or not at all, and what was acknowledged must survive a restart.

use crate::attack::*;
use crate::harness::*;

#[test]
fn mutations_cut_off_by_a_disconnect_are_all_or_nothing() {
    let _machine = shared();
    let dir = temp_dir("disconnect");
    let (sk, pk) = service_key(&dir);
    let args = ["--service-key", sk.to_str().unwrap()];
    let db = dir.join("blindmatch.db");
    let srv = Server::start(&dir, &args);
    let u = srv.url.clone();
    let q = Quantizer::new(&Params::auth4096(), DIM).unwrap();
    let mut rng = Prng::from_seed([61; 32]);
    let one = |face: &[f32], rng: &mut Prng| {
        client::encrypt_templates_public(&pk, &q, &[face], rng)
            .unwrap()
            .to_bytes()
    };
    let started = Instant::now();
    let mut ops = 0;
    let mut mismatches: Vec<String> = Vec::new();

    // Gallery "main": appends acknowledged (their index is known), appends
    // and erasures cut off, and a few acknowledged erasures.
    let mut acked: Vec<(Vec<f32>, u64)> = Vec::new();
    let mut cut: Vec<Vec<f32>> = Vec::new();
    let mut erase_sent: Vec<u64> = Vec::new();
    let mut erase_acked: Vec<u64> = Vec::new();
    let append = "/v1/galleries/main/templates?count=1";
    for i in 0..90 {
        let face = embedding(&mut rng);
        let ct = one(&face, &mut rng);
        match i % 3 {
            0 => {
                let r = call("POST", &format!("{u}{append}"), Some(&ct));
                assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
                acked.push((face, r.json()["first_index"].as_u64().unwrap()));
            }
            1 => {
                send_and_close(&u, "POST", append, &ct, delay(i));
                cut.push(face);
            }
            _ => {
                send_and_close(&u, "POST", append, &ct, delay(i));
                cut.push(face);
                // Erase an acknowledged template not erased yet.
                if let Some((_, idx)) = acked
                    .iter()
                    .rev()
                    .find(|(_, x)| !erase_sent.contains(x) && !erase_acked.contains(x))
                {
                    let path = format!("/v1/galleries/main/templates/{idx}");
                    if i % 9 == 2 {
                        let r = call("DELETE", &format!("{u}{path}"), None);
                        assert_eq!(r.status, 204, "{}", String::from_utf8_lossy(&r.body));
                        erase_acked.push(*idx);
                    } else {
                        send_and_close(&u, "DELETE", &path, &[], delay(i * 7));
                        erase_sent.push(*idx);
                    }
                }
            }
        }
        ops += 1;
    }

    // Galleries deleted by a request cut off.
    let mut doomed: Vec<(String, Vec<f32>)> = Vec::new();
    for k in 0..20 {
        let name = format!("doomed{k}");
        let face = embedding(&mut rng);
        let ct = one(&face, &mut rng);
        let r = call(
            "POST",
            &format!("{u}/v1/galleries/{name}/templates?count=1"),
            Some(&ct),
        );
        assert_eq!(r.status, 201);
        send_and_close(
            &u,
            "DELETE",
            &format!("/v1/galleries/{name}"),
            &[],
            delay(k * 5),
        );
        doomed.push((name, face));
        ops += 2;
    }

    // Users verified once (so they sit in the cache), then deleted or
    // re-enrolled by a request cut off.
    struct Person {
        name: String,
        id: Identity,
        old: Vec<f32>,
        new: Vec<f32>,
        new_bytes: Vec<u8>,
    }
    let mut people = Vec::new();
    for k in 0..30usize {
        let name = format!("user{k}");
        let mut id = Identity::new(100 + k as u8);
        let old = embedding(&mut rng);
        enroll(&u, &name, &mut id, &old);
        verify_ok(&u, &name, &mut id, &old);
        let new = embedding(&mut rng);
        let new_bytes = id.template(std::slice::from_ref(&new));
        if k % 2 == 0 {
            send_and_close(
                &u,
                "DELETE",
                &format!("/v1/users/{name}"),
                &[],
                delay(k * 3),
            );
        } else {
            let path = format!("/v1/users/{name}/template");
            send_and_close(&u, "PUT", &path, &new_bytes, delay(k * 3));
        }
        people.push(Person {
            name,
            id,
            old,
            new,
            new_bytes,
        });
        ops += 4;
    }
    // Let the cut-off requests finish (or not) before looking: the
    // database stops changing.
    let mut last = snapshot(&db);
    for _ in 0..50 {
        std::thread::sleep(Duration::from_millis(200));
        let now = snapshot(&db);
        if now == last {
            break;
        }
        last = now;
    }

    // Before the restart: memory and cache agree with the database.
    let (m, d) = (held(&u, "main"), rows(&db, "main"));
    if m != d {
        mismatches.push(format!("main: {m} ciphertexts in memory, {d} stored"));
    }
    for (name, face) in &doomed {
        let (m, d) = (held(&u, name), rows(&db, name));
        let matched = top(&u, name, face, &mut rng).is_some();
        if m != d || matched != (d > 0) {
            mismatches.push(format!("{name}: memory {m}, stored {d}, matched {matched}"));
        }
    }
    for p in &mut people {
        let user = p.name.as_str();
        let stored = count_rows(
            &db,
            &format!("SELECT count(*) FROM users WHERE user = '{user}'"),
        ) > 0;
        let template: Option<Vec<u8>> = rusqlite::Connection::open(&db)
            .unwrap()
            .query_row(
                "SELECT ciphertext FROM templates WHERE user = ?1",
                [user],
                |r| r.get(0),
            )
            .ok();
        let face = if template.as_deref() == Some(&p.new_bytes[..]) {
            p.new.clone()
        } else {
            p.old.clone()
        };
        let r = call(
            "POST",
            &format!("{u}/v1/users/{user}/verify"),
            Some(&p.id.probe(&face)),
        );
        let ok = match r.status {
            200 => {
                let got = client::decrypt_reply_bytes(&p.id.sk, &p.id.q, &r.body, 1).unwrap();
                stored && got.cosines[0] > 0.9
            }
            404 => !stored,
            s => panic!("verify {user}: {s}"),
        };
        if !ok {
            mismatches.push(format!(
                "{user}: stored {stored}, verify {} with the stored face",
                r.status
            ));
        }
    }

    // After a restart on the same database: every acknowledged template at
    // its acknowledged index unless its erasure was sent; none erased with
    // an acknowledgement matches; memory holds what is stored.
    drop(srv);
    let srv = Server::start(&dir, &args);
    let u = srv.url.clone();
    if held(&u, "main") != rows(&db, "main") {
        mismatches.push("main: memory and store differ after the restart".into());
    }
    for (face, idx) in &acked {
        let got = top(&u, "main", face, &mut rng);
        let ok = match got {
            Some(x) => x == *idx && !erase_acked.contains(idx),
            None => erase_sent.contains(idx) || erase_acked.contains(idx),
        };
        if !ok {
            mismatches.push(format!("acknowledged #{idx}: matched at {got:?}"));
        }
    }
    // A committed cut-off append matches at one place only: its own.
    let mut seen = std::collections::HashSet::new();
    for face in &cut {
        if let Some(x) = top(&u, "main", face, &mut rng) {
            if !seen.insert(x) || acked.iter().any(|(_, i)| *i == x) {
                mismatches.push(format!("cut-off append matched at taken index {x}"));
            }
        }
    }
    for (name, face) in &doomed {
        if rows(&db, name) == 0 && top(&u, name, face, &mut rng).is_some() {
            mismatches.push(format!("{name}: deleted, still matches"));
        }
    }
    eprintln!(
        "disconnects: {ops} operations in {:.1?}, {} acknowledged appends, {} cut off, \
         {} erasures cut off, {} acknowledged, {} mismatches",
        started.elapsed(),
        acked.len(),
        cut.len(),
        erase_sent.len(),
        erase_acked.len(),
        mismatches.len()
    );
    assert!(
        mismatches.is_empty(),
        "{} mismatches:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}
