//! 1:N identification with a service key.

use crate::harness::*;

#[test]
fn one_to_n_identify_with_service_key() {
    let _machine = shared();
    let dir = temp_dir("identify");
    let (sk_path, _) = service_key(&dir);
    let keydir = dir.join("keys");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(keydir.join("service.sk"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "service.sk is readable by others");
    }
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

/// A gallery whose stored rows skip a number is not served: its later
/// templates would answer at the wrong index.
#[test]
fn a_gallery_with_a_missing_row_is_refused_at_start() {
    let _machine = shared();
    let dir = temp_dir("missing-row");
    let (sk, pk) = service_key(&dir);
    let args = ["--service-key", sk.to_str().unwrap()];
    let db = dir.join("blindmatch.db");
    {
        let srv = Server::start(&dir, &args);
        let u = srv.url.clone();
        let q = Quantizer::new(&Params::auth4096(), DIM).unwrap();
        let mut rng = Prng::from_seed([81; 32]);
        for _ in 0..3 {
            let face = embedding(&mut rng);
            let ct = client::encrypt_templates_public(&pk, &q, &[&face[..]], &mut rng).unwrap();
            let r = call(
                "POST",
                &format!("{u}/v1/galleries/g/templates?count=1"),
                Some(&ct.to_bytes()),
            );
            assert_eq!(r.status, 201);
        }
    }
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute(
            "DELETE FROM gallery_templates WHERE gallery = 'g' AND seq = 1",
            [],
        )
        .unwrap();
    let log = dir.join("refused.log");
    let mut child = server_cmd()
        .arg("serve")
        .args(["--bind", "127.0.0.1:0", "--db"])
        .arg(&db)
        .args(args)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    // A refusal comes within a second; a server that starts is stopped.
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.is_some_and(|s| !s.success()), "served: {status:?}");
    let err = std::fs::read_to_string(&log).unwrap();
    assert!(
        err.contains("gallery g: stored row #2 where #1 belongs"),
        "{err}"
    );
}
