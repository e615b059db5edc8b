//! Requests a page on another site can make a browser send: a foreign
//! `Host` (DNS rebinding), bodies of a type a form or a simple `fetch` can
//! send without a preflight, and CORS. Each is refused and writes nothing.

use crate::harness::*;
use crate::stall::{addr_of, raw_call, RawResp};

/// One request on a fresh connection (see [`raw_call`]).
fn req(addr: &str, head: &str, body: &[u8]) -> RawResp {
    raw_call(addr, head, body).unwrap_or_else(|e| panic!("{head}: {e}"))
}

/// A request with extra header lines (after the request line) on a fresh
/// connection, with `Host: host` instead of the server's address.
fn with_host(addr: &str, host: &str, head: &str, body: &[u8]) -> RawResp {
    use std::io::Write;
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut req = format!(
        "{head}\r\nHost: {host}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    req.extend_from_slice(body);
    s.write_all(&req).unwrap();
    crate::stall::read_reply(&mut s).unwrap()
}

fn no_cors_headers(r: &RawResp) {
    let cors: Vec<_> = r
        .headers
        .iter()
        .filter(|(k, _)| k.starts_with("access-control-"))
        .collect();
    assert!(cors.is_empty(), "{cors:?}");
}

/// A 1:N server (a fresh service key) in `dir`, with `extra` flags.
fn start_1ton(dir: &Path, extra: &[&str]) -> Server {
    let (sk, _) = service_key(dir);
    let mut args = vec!["--service-key", sk.to_str().unwrap()];
    args.extend_from_slice(extra);
    Server::start(dir, &args)
}

#[test]
fn a_foreign_host_is_refused_and_writes_nothing() {
    let _machine = shared();
    let dir = temp_dir("host");
    let srv = Server::start(&dir, &[]);
    let addr = addr_of(&srv);
    let port = addr.rsplit_once(':').unwrap().1;
    let db = dir.join("blindmatch.db");
    let before = snapshot(&db);
    let keys = Identity::new(91).keys_body(false);
    let put = "PUT /v1/users/mallory/keys HTTP/1.1\r\nContent-Type: application/octet-stream";
    for host in [
        "evil.example",
        &format!("evil.example:{port}"),
        "127.0.0.1:1",
    ] {
        let r = with_host(&addr, host, put, &keys);
        assert_eq!(
            (r.status, r.code().as_str()),
            (421, "misdirected_host"),
            "{host}"
        );
        let r = with_host(&addr, host, "GET /healthz HTTP/1.1", b"");
        assert_eq!(
            (r.status, r.code().as_str()),
            (421, "misdirected_host"),
            "{host}"
        );
        let r = with_host(&addr, host, "GET / HTTP/1.1", b"");
        assert_eq!(r.status, 421, "{host}");
    }
    assert_eq!(snapshot(&db), before, "a refused request wrote");
    for host in [
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
        addr.clone(),
    ] {
        let r = with_host(&addr, &host, "GET /healthz HTTP/1.1", b"");
        assert_eq!(r.status, 200, "{host}");
    }
    let r = with_host(&addr, &format!("LocalHost:{port}"), put, &keys);
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    // Listed names replace the defaults.
    let dir2 = temp_dir("host-listed");
    let srv2 = Server::start(&dir2, &["--allowed-host", "match.example,10.1.2.3:8443"]);
    let addr2 = addr_of(&srv2);
    for (host, status) in [
        ("match.example", 200),
        ("match.example:443", 200),
        ("10.1.2.3:8443", 200),
        ("10.1.2.3:8444", 421),
        (addr2.as_str(), 421),
    ] {
        let r = with_host(&addr2, host, "GET /healthz HTTP/1.1", b"");
        assert_eq!(r.status, status, "{host}");
    }
}

#[test]
fn bodies_of_another_type_are_refused_and_write_nothing() {
    let _machine = shared();
    let dir = temp_dir("media");
    let srv = start_1ton(&dir, &[]);
    let addr = addr_of(&srv);
    let db = dir.join("blindmatch.db");
    let mut id = Identity::new(92);
    let keys = id.keys_body(false);
    let before = snapshot(&db);
    let forms = [
        "Content-Type: text/plain",
        "Content-Type: text/plain; charset=utf-8",
        "Content-Type: application/x-www-form-urlencoded",
        "Content-Type: multipart/form-data; boundary=x",
        "X-No-Content-Type: 1",
    ];
    let pk = call("GET", &format!("{}/v1/service/public-key", srv.url), None);
    let pk = PublicKey::from_bytes(&Params::auth4096(), &pk.body).unwrap();
    let q = Quantizer::new(&Params::auth4096(), DIM).unwrap();
    let mut rng = Prng::from_seed([92; 32]);
    let face = embedding(&mut rng);
    let gallery = client::encrypt_templates_public(&pk, &q, &[face.as_slice()], &mut rng)
        .unwrap()
        .to_bytes();
    let identify = serde_json::to_vec(&serde_json::json!({"embedding": face, "top_k": 1})).unwrap();
    for ct in forms {
        for (line, body) in [
            ("PUT /v1/users/mallory/keys HTTP/1.1", &keys),
            ("POST /v1/galleries/g/templates?count=1 HTTP/1.1", &gallery),
            ("POST /v1/galleries/g/identify HTTP/1.1", &identify),
        ] {
            let r = req(&addr, &format!("{line}\r\n{ct}"), body);
            assert_eq!(
                (r.status, r.code().as_str()),
                (415, "unsupported_media_type"),
                "{line} {ct}: {}",
                String::from_utf8_lossy(&r.body)
            );
        }
    }
    assert_eq!(snapshot(&db), before, "a refused body was written");
    let list = call("GET", &format!("{}/v1/galleries", srv.url), None);
    assert_eq!(list.json()["galleries"], serde_json::json!([]));
    // The declared types are taken.
    let octets = "Content-Type: application/octet-stream";
    let r = req(
        &addr,
        &format!("PUT /v1/users/mallory/keys HTTP/1.1\r\n{octets}"),
        &keys,
    );
    assert_eq!(r.status, 201);
    let line = "POST /v1/galleries/g/templates?count=1 HTTP/1.1";
    let r = req(
        &addr,
        &format!("{line}\r\nContent-Type: Application/Octet-Stream"),
        &gallery,
    );
    assert_eq!(r.status, 201);
    let line = "POST /v1/galleries/g/identify HTTP/1.1\r\nContent-Type: application/json";
    assert_eq!(req(&addr, line, &identify).status, 200);
}

#[test]
fn no_cors_by_default() {
    let _machine = shared();
    let dir = temp_dir("cors-none");
    let srv = Server::start(&dir, &[]);
    let addr = addr_of(&srv);
    let u = srv.url.clone();
    let mut id = Identity::new(93);
    let mut rng = Prng::from_seed([93; 32]);
    let face = embedding(&mut rng);
    enroll(&u, "alice", &mut id, &face);
    let db = dir.join("blindmatch.db");
    let before = snapshot(&db);
    let evil = "Origin: https://evil.example";
    // The preflight of a PUT or a binary POST is refused without CORS
    // headers: the browser sends nothing more.
    for (path, method) in [
        ("/v1/users/alice/keys", "PUT"),
        ("/v1/users/alice/verify", "POST"),
    ] {
        let r = req(
            &addr,
            &format!(
                "OPTIONS {path} HTTP/1.1\r\n{evil}\r\nAccess-Control-Request-Method: {method}\r\n\
                 Access-Control-Request-Headers: content-type"
            ),
            b"",
        );
        assert!(
            !(200..300).contains(&r.status),
            "preflight answered {}",
            r.status
        );
        no_cors_headers(&r);
    }
    // A simple request (no preflight) of a form's type is refused, and no
    // reply can be read across origins.
    let probe = id.probe(&face);
    let r = req(
        &addr,
        &format!("POST /v1/users/alice/verify HTTP/1.1\r\n{evil}\r\nContent-Type: text/plain"),
        &probe,
    );
    assert_eq!(
        (r.status, r.code().as_str()),
        (415, "unsupported_media_type")
    );
    no_cors_headers(&r);
    let r = req(&addr, &format!("GET /healthz HTTP/1.1\r\n{evil}"), b"");
    assert_eq!(r.status, 200);
    no_cors_headers(&r);
    assert_eq!(snapshot(&db), before, "a refused request wrote");
    let r = req(
        &addr,
        &format!("DELETE /v1/users/alice HTTP/1.1\r\n{evil}"),
        b"",
    );
    no_cors_headers(&r);
    // (A DELETE is not a simple request: a browser preflights it first,
    // which is refused above; sent directly, as a non-browser client can,
    // it is served.)
    assert_eq!(r.status, 204);
}

#[test]
fn listed_cors_origins_are_answered_and_others_not() {
    let _machine = shared();
    let dir = temp_dir("cors-listed");
    let srv = Server::start(&dir, &["--cors-origin", "https://app.example"]);
    let addr = addr_of(&srv);
    let preflight = |origin: &str| {
        req(
            &addr,
            &format!(
                "OPTIONS /v1/users/alice/keys HTTP/1.1\r\nOrigin: {origin}\r\n\
                 Access-Control-Request-Method: PUT\r\nAccess-Control-Request-Headers: content-type"
            ),
            b"",
        )
    };
    let r = preflight("https://app.example");
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("access-control-allow-origin"),
        Some("https://app.example")
    );
    assert!(r
        .header("access-control-allow-methods")
        .unwrap()
        .contains("PUT"));
    let r = preflight("https://evil.example");
    assert_eq!(r.header("access-control-allow-origin"), None);
    let r = req(
        &addr,
        "GET /healthz HTTP/1.1\r\nOrigin: https://app.example",
        b"",
    );
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("access-control-allow-origin"),
        Some("https://app.example")
    );
    let r = req(
        &addr,
        "GET /healthz HTTP/1.1\r\nOrigin: https://evil.example",
        b"",
    );
    assert_eq!(r.header("access-control-allow-origin"), None);
}
