//! Corrupted bodies: thousands of mutations of valid objects, each refused
//! with nothing written.

use crate::harness::*;

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
        let resp = agent
            .request(method, &url)
            .set("content-type", "application/octet-stream")
            .send_bytes(&body);
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
