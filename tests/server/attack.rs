//! What the attack tests share: corrupted objects, requests cut off by a
//! disconnect, sockets that stall, and the 1:N checks that follow them.

use std::io::Write;
use std::net::TcpStream;

use crate::harness::*;

// ---------------------------------------------------------------- corrupted objects

/// Sets `bits` bits starting at bit `offset` (LSB first) to one.
pub(crate) fn set_bits(bytes: &mut [u8], offset: usize, bits: usize) {
    for b in offset..offset + bits {
        bytes[b / 8] |= 1 << (b % 8);
    }
}

/// A corruption of a valid object that can never be valid: a truncation, an
/// extension, a changed header byte, a residue forced to 2^bits - 1 (above
/// its prime), a changed size or limb byte, or another kind of object.
pub(crate) fn mutate(obj: &[u8], others: &[&[u8]], rng: &mut Prng) -> Vec<u8> {
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

/// The valid objects of an enrolled user: the sources of corrupted requests.
pub(crate) struct Originals {
    pub(crate) pk: Vec<u8>,
    pub(crate) rk: Vec<u8>,
    pub(crate) template: Vec<u8>,
    pub(crate) probe: Vec<u8>,
    pub(crate) expanded: Vec<u8>,
}

impl Originals {
    /// Registers `user` (keys without a relinearization key), enrolls
    /// `face`, and keeps every object made on the way.
    pub(crate) fn enroll(u: &str, user: &str, id: &mut Identity, face: &[f32]) -> Originals {
        let pk = id.pk.to_bytes();
        let rk = RelinKey::new_with(&id.sk, &mut id.rng).to_bytes();
        let keys = call(
            "PUT",
            &format!("{u}/v1/users/{user}/keys"),
            Some(&frame_keys(&pk, None)),
        );
        assert_eq!(keys.status, 201);
        let template = id.template(&[face.to_vec()]);
        let put = call(
            "PUT",
            &format!("{u}/v1/users/{user}/template"),
            Some(&template),
        );
        assert_eq!(put.status, 204);
        let probe = id.probe(face);
        let expanded = Ciphertext::from_bytes(&Params::auth4096(), &probe)
            .unwrap()
            .to_bytes_expanded();
        Originals {
            pk,
            rk,
            template,
            probe,
            expanded,
        }
    }

    /// The `i`-th corrupted request, as method, path and body: a probe or a
    /// template for the enrolled `user`, or keys for the unregistered
    /// `fresh`; never one the server may accept.
    pub(crate) fn corrupted(
        &self,
        user: &str,
        fresh: &str,
        i: usize,
        rng: &mut Prng,
    ) -> (&'static str, String, Vec<u8>) {
        let (pk, rk, template) = (&self.pk[..], &self.rk[..], &self.template[..]);
        match i % 4 {
            0 => {
                let probe = if i.is_multiple_of(8) {
                    &self.probe
                } else {
                    &self.expanded
                };
                let body = mutate(probe, &[pk, rk], rng);
                ("POST", format!("/v1/users/{user}/verify"), body)
            }
            1 => {
                let body = mutate(template, &[pk, rk], rng);
                ("PUT", format!("/v1/users/{user}/template"), body)
            }
            2 => {
                let body = frame_keys(&mutate(pk, &[template, rk], rng), None);
                ("PUT", format!("/v1/users/{fresh}/keys"), body)
            }
            _ => {
                let mut m = frame_keys(pk, Some(&mutate(rk, &[pk], rng)));
                if rng.next_u32().is_multiple_of(4) {
                    // Or a broken frame around valid keys.
                    m = frame_keys(pk, Some(rk));
                    let at = rng.next_u32() as usize % 4;
                    m[at] ^= 1 + (rng.next_u32() % 255) as u8;
                }
                ("PUT", format!("/v1/users/{fresh}/keys"), m)
            }
        }
    }
}

// ---------------------------------------------------------------- disconnects and stalls

/// Sends one complete request on a fresh socket and closes it `delay` later,
/// without reading the answer.
pub(crate) fn send_and_close(url: &str, method: &str, path: &str, body: &[u8], delay: Duration) {
    let addr = url.strip_prefix("http://").unwrap();
    let mut s = TcpStream::connect(addr).unwrap();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\n\
         Content-Type: application/octet-stream\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let mut req = head.into_bytes();
    req.extend_from_slice(body);
    // A reset (the server answering early) is as good as a close here.
    let _ = s.write_all(&req);
    std::thread::sleep(delay);
    drop(s);
}

/// 0.1–5 ms, varied with `i`.
pub(crate) fn delay(i: usize) -> Duration {
    Duration::from_micros(100 + (i as u64 * 733) % 4900)
}

/// A socket that sends a request's headers with a `Content-Length` and then
/// nothing more (the body never comes).
pub(crate) fn stall(url: &str, path: &str) -> std::io::Result<TcpStream> {
    let addr = url.strip_prefix("http://").unwrap();
    let mut s = TcpStream::connect(addr)?;
    let head = format!(
        "PUT {path} HTTP/1.1\r\nHost: {addr}\r\n\
         Content-Type: application/octet-stream\r\nContent-Length: 100000\r\n\r\n"
    );
    s.write_all(head.as_bytes())?;
    Ok(s)
}

/// Whether the server has closed `s` (a read sees the end, a reset, or an
/// answer); `false` while it still holds the connection open and silent.
pub(crate) fn closed_by_server(s: &TcpStream) -> bool {
    s.set_nonblocking(true).unwrap();
    let mut b = [0u8; 1];
    let r = s.peek(&mut b);
    s.set_nonblocking(false).unwrap();
    !matches!(r, Err(ref e) if e.kind() == std::io::ErrorKind::WouldBlock)
}

// ---------------------------------------------------------------- 1:N checks

/// The best match of `face` in `gallery` with a cosine above 0.9, if any.
pub(crate) fn top(url: &str, gallery: &str, face: &[f32], rng: &mut Prng) -> Option<u64> {
    let body =
        serde_json::to_vec(&serde_json::json!({"embedding": near(face, rng), "top_k": 1})).unwrap();
    let r = call_json(&format!("{url}/v1/galleries/{gallery}/identify"), &body);
    if r.status == 404 {
        return None;
    }
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let v = r.json();
    let m = v["matches"].as_array().unwrap().first()?.clone();
    (m["cosine"].as_f64().unwrap() > 0.9).then(|| m["index"].as_u64().unwrap())
}

pub(crate) fn rows(db: &Path, gallery: &str) -> i64 {
    count_rows(
        db,
        &format!("SELECT count(*) FROM gallery_templates WHERE gallery = '{gallery}'"),
    )
}

/// Ciphertexts the server holds in memory for `gallery` (0 when unknown).
pub(crate) fn held(url: &str, gallery: &str) -> i64 {
    let r = call("GET", &format!("{url}/v1/galleries/{gallery}"), None);
    if r.status == 404 {
        return 0;
    }
    r.json()["ciphertexts"].as_i64().unwrap()
}
