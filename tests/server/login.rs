//! Login mode over real HTTP, with the decider and the matcher as two
//! processes: ticketed enrollment under the decider's key for the user,
//! challenges, signed verdicts that `jose` verifies, and every refusal
//! (401/403/429 with a code, nothing written). The attacks of an open
//! management API are run first against a matcher without API keys, where
//! they succeed, then against login mode, where they are refused.

use crate::harness::*;
use blindmatch::server::verdict::{KeyStatement, PublicKeys};

/// The relying party's API key (its file: `api.keys` in the test dir).
pub(crate) const KEY: &str = "rp-key-0123456789abcdefghijklmn";
pub(crate) const BEARER: &str = "Bearer rp-key-0123456789abcdefghijklmn";

/// A decider and a matcher in login mode, on loopback.
pub(crate) struct LoginMode {
    pub(crate) decider: Decider,
    pub(crate) matcher: Server,
    /// More matchers on the same database (a shared store), for
    /// [`LoginMode::via`].
    pub(crate) replicas: Vec<Server>,
    /// The matcher the calls below go to: 0 is `matcher`, i the replica
    /// `i - 1`.
    active: std::cell::Cell<usize>,
    pub(crate) dir: TempDir,
    pub(crate) jwks: PathBuf,
    /// The matcher's arguments, for a restart.
    args: Vec<String>,
    /// The `--db` value.
    db: String,
}

impl LoginMode {
    pub(crate) fn start(tag: &str, extra: &[&str]) -> LoginMode {
        LoginMode::start_in(temp_dir(tag), extra)
    }

    /// Login mode on the database in `dir` (a matcher may have served it
    /// before in the user-held-key mode).
    pub(crate) fn start_in(dir: TempDir, extra: &[&str]) -> LoginMode {
        let db = dir.join("blindmatch.db").display().to_string();
        LoginMode::start_with(dir, db, 0, extra)
    }

    /// Login mode with `replicas` more matchers, all on `db` (a
    /// PostgreSQL URL when there are replicas).
    pub(crate) fn start_with(
        dir: TempDir,
        db: String,
        replicas: usize,
        extra: &[&str],
    ) -> LoginMode {
        let decider = Decider::start(&dir);
        let keys = dir.join("api.keys");
        std::fs::write(&keys, format!("# the relying party\n{KEY}\n")).unwrap();
        let (keys, token) = (
            keys.display().to_string(),
            decider.token_file.display().to_string(),
        );
        let mut args = vec![
            "--api-key-file",
            &keys,
            "--decider",
            &decider.url,
            "--decider-token-file",
            &token,
            "--audience",
            APP,
        ];
        args.extend_from_slice(extra);
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        let flags: Vec<&str> = args.iter().map(String::as_str).collect();
        let matcher = Server::start_on(&dir, &db, "server.log", &flags);
        let replicas = (1..=replicas)
            .map(|i| Server::start_on(&dir, &db, &format!("replica-{i}.log"), &flags))
            .collect();
        let jwks = dir.join("jwks.json");
        let r = call(
            "GET",
            &format!("{}/.well-known/jwks.json", matcher.url),
            None,
        );
        assert_eq!(r.status, 200);
        std::fs::write(&jwks, &r.body).unwrap();
        LoginMode {
            args,
            decider,
            matcher,
            replicas,
            active: std::cell::Cell::new(0),
            dir,
            jwks,
            db,
        }
    }

    /// Sends the calls that follow to matcher `i` (0: the first).
    pub(crate) fn via(&self, i: usize) -> &Self {
        assert!(i <= self.replicas.len());
        self.active.set(i);
        self
    }

    fn active_url(&self) -> &str {
        match self.active.get() {
            0 => &self.matcher.url,
            i => &self.replicas[i - 1].url,
        }
    }

    /// Stops the matcher (SIGKILL) and starts it again on the same
    /// database, decider and flags.
    pub(crate) fn restart(&mut self) {
        self.matcher.kill();
        let args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        self.matcher = Server::start_on(&self.dir, &self.db, "server.log", &args);
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.active_url())
    }

    pub(crate) fn db(&self) -> PathBuf {
        self.dir.join("blindmatch.db")
    }

    /// Every row once the audit journal is flushed (within 0.1 s of a
    /// login's reply): what "nothing written" compares.
    pub(crate) fn rows(&self) -> Vec<String> {
        let start = Instant::now();
        loop {
            let text = String::from_utf8(self.api("GET", "/metrics").body).unwrap();
            if text
                .lines()
                .any(|l| l == "blindmatch_audit_rows_journaled 0")
            {
                return snapshot(&self.db());
            }
            assert!(start.elapsed() < Duration::from_secs(10), "never flushed");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The audit rows' outcomes for `user`, oldest first.
    pub(crate) fn outcomes(&self, user: &str) -> Vec<String> {
        self.rows();
        let conn = rusqlite::Connection::open(self.db()).unwrap();
        let mut st = conn
            .prepare("SELECT outcome FROM audit WHERE user = ?1 ORDER BY id")
            .unwrap();
        let rows = st.query_map([user], |r| r.get(0)).unwrap();
        rows.map(Result::unwrap).collect()
    }

    /// A call with the API key.
    pub(crate) fn api(&self, method: &str, path: &str) -> Resp {
        call_with(method, &self.url(path), &[("authorization", BEARER)], None)
    }

    /// An enrollment ticket for `user` (registering them on first use).
    pub(crate) fn ticket(&self, user: &str) -> String {
        let r = self.api("POST", &format!("/v1/users/{user}/tickets"));
        assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
        let v = r.json();
        assert_eq!(v["user"], user);
        v["ticket"].as_str().unwrap().to_string()
    }

    /// A login challenge for `user`, for the test relying party.
    pub(crate) fn challenge(&self, user: &str) -> String {
        let r = self.api("POST", &format!("/v1/users/{user}/challenges?aud={APP}"));
        assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
        assert_eq!(r.json()["aud"], APP);
        r.json()["challenge"].as_str().unwrap().to_string()
    }

    /// `PUT .../template` with a credential (`Ticket t`, `Verdict v`...).
    pub(crate) fn put_template(&self, user: &str, auth: &str, body: &[u8]) -> Resp {
        call_with(
            "PUT",
            &self.url(&format!("/v1/users/{user}/template")),
            &[("authorization", auth)],
            Some(body),
        )
    }

    /// `POST .../login`, from `addr` when given (the matcher trusts
    /// 127.0.0.1's `X-Forwarded-For` when started with `--trusted-proxy`).
    pub(crate) fn login_from(
        &self,
        user: &str,
        challenge: &str,
        probe: &[u8],
        addr: Option<&str>,
    ) -> Resp {
        let headers: Vec<(&str, &str)> = addr.iter().map(|a| ("x-forwarded-for", *a)).collect();
        call_with(
            "POST",
            &self.url(&format!("/v1/users/{user}/login?challenge={challenge}")),
            &headers,
            Some(probe),
        )
    }

    /// A login that gets a verdict: the token and its outcome.
    pub(crate) fn login(&self, user: &str, probe: &[u8]) -> (String, String, String) {
        let c = self.challenge(user);
        let r = self.login_from(user, &c, probe, None);
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        let v = r.json();
        let jws = v["verdict"].as_str().unwrap().to_string();
        (c, jws, v["outcome"].as_str().unwrap().to_string())
    }
}

/// The page's side: encrypts under the user's public key from the matcher;
/// it holds no secret key and decrypts nothing.
pub(crate) struct Browser {
    pk: PublicKey,
    q: Quantizer,
    rng: Prng,
}

impl Browser {
    /// The page's side for `user`, once the decider's statement of the key
    /// the matcher served checks (what `checkKeyStatement` does in the
    /// package).
    pub(crate) fn of(m: &LoginMode, user: &str, seed: u8) -> Browser {
        let r = call("GET", &m.url(&format!("/v1/users/{user}/public-key")), None);
        assert_eq!(r.status, 200);
        let keys = PublicKeys::from_jwks(&std::fs::read(&m.jwks).unwrap()).unwrap();
        let statement = keys
            .verify_key_statement(r.header("x-key-statement").expect("a key statement"))
            .expect("signed by the decider");
        assert_eq!(statement.iss, ISSUER);
        assert_eq!(statement.sub, user);
        let epoch: u32 = r.header("x-key-epoch").unwrap().parse().unwrap();
        assert_eq!(statement.epoch, epoch);
        assert_eq!(statement.pk_sha256, KeyStatement::digest(&r.body));
        let params = Params::auth4096();
        Browser {
            pk: PublicKey::from_bytes(&params, &r.body).unwrap(),
            q: Quantizer::new(&params, DIM).unwrap(),
            rng: Prng::from_seed([seed; 32]),
        }
    }

    pub(crate) fn template(&mut self, samples: &[Vec<f32>]) -> Vec<u8> {
        let refs: Vec<&[f32]> = samples.iter().map(|e| e.as_slice()).collect();
        client::encrypt_template_bundle(&self.pk, &self.q, &refs, &mut self.rng)
            .unwrap()
            .to_bytes()
    }

    pub(crate) fn probe(&mut self, face: &[f32]) -> Vec<u8> {
        client::encrypt_probe_bundle(&self.pk, &self.q, face, &mut self.rng)
            .unwrap()
            .to_bytes()
    }
}

/// Enrolls `face` (two photos) for `user` with a fresh ticket.
pub(crate) fn enroll_with_ticket(
    m: &LoginMode,
    user: &str,
    b: &mut Browser,
    face: &[f32],
    rng: &mut Prng,
) {
    let t = m.ticket(user);
    let body = b.template(&[near(face, rng), near(face, rng)]);
    let r = m.put_template(user, &format!("Ticket {t}"), &body);
    assert_eq!(r.status, 204, "{}", String::from_utf8_lossy(&r.body));
}

#[test]
fn a_login_the_relying_party_verifies() {
    let _machine = shared();
    let mut m = LoginMode::start("login", &[]);
    let mut rng = Prng::from_seed([61; 32]);
    let face = embedding(&mut rng);

    // Enrollment: a ticket from the relying party's backend registers alice
    // under the decider's key for her (epoch 0); the page enrolls with it.
    let t = m.ticket("alice");
    let mut b = Browser::of(&m, "alice", 62);
    let template = b.template(&[near(&face, &mut rng), near(&face, &mut rng)]);
    let before = m.rows();
    // A ticket is for its user and is used once.
    m.put_template("mallory", &format!("Ticket {t}"), &template)
        .expect_error(403, "invalid_ticket");
    let t = m.ticket("alice");
    let r = m.put_template("alice", &format!("Ticket {t}"), &template);
    assert_eq!(r.status, 204, "{}", String::from_utf8_lossy(&r.body));
    let after_enroll = m.rows();
    assert_ne!(before, after_enroll);
    m.put_template("alice", &format!("Ticket {t}"), &template)
        .expect_error(403, "invalid_ticket");
    assert_eq!(m.rows(), after_enroll);
    let info = m.api("GET", "/v1/users/alice");
    assert_eq!(info.status, 200);
    let epoch = info.json()["key_epoch"].as_u64().unwrap();

    // The genuine face: an accept that jose verifies for this challenge
    // and this audience only.
    let (c, accept, outcome) = m.login("alice", &b.probe(&near(&face, &mut rng)));
    assert_eq!(outcome, "accept");
    assert_eq!(jose(&m.jwks, &accept, APP, &c), (0, "accept".into()));
    assert_eq!(
        jose(&m.jwks, &accept, APP, "another-challenge"),
        (1, "ERR_NONCE_MISMATCH".into())
    );
    assert_eq!(
        jose(&m.jwks, &accept, "https://other.example", &c),
        (1, "ERR_JWT_CLAIM_VALIDATION_FAILED".into())
    );

    // An impostor: a signed reject.
    let (c, reject, outcome) = m.login("alice", &b.probe(&embedding(&mut rng)));
    assert_eq!(outcome, "reject");
    assert_eq!(jose(&m.jwks, &reject, APP, &c), (2, "reject".into()));
    assert_eq!(m.outcomes("alice"), ["accept", "reject"]);

    // Challenges: single use, for their user, for a listed audience; and
    // only the relying party's backend asks for them.
    let mut bob = Browser::of_new(&m, "bob", 63);
    enroll_with_ticket(&m, "bob", &mut bob, &embedding(&mut rng), &mut rng);
    let probe = b.probe(&near(&face, &mut rng));
    let c = m.challenge("alice");
    let r = m.login_from("alice", &c, &probe, None);
    assert_eq!(r.status, 200);
    let settled = m.rows();
    m.login_from("alice", &c, &probe, None)
        .expect_error(403, "invalid_challenge");
    let foreign = m.challenge("bob");
    m.login_from("alice", &foreign, &probe, None)
        .expect_error(403, "invalid_challenge");
    m.login_from("alice", "never-issued", &probe, None)
        .expect_error(403, "invalid_challenge");
    let challenges = m.url("/v1/users/alice/challenges?aud=https://app.example");
    call("POST", &challenges, None).expect_error(401, "unauthorized");
    call_with(
        "POST",
        &challenges,
        &[("authorization", "Bearer rp-key-not-this-one-0123456789")],
        None,
    )
    .expect_error(401, "unauthorized");
    m.api(
        "POST",
        "/v1/users/alice/challenges?aud=https://other.example",
    )
    .expect_error(400, "bad_query");
    assert_eq!(m.rows(), settled);

    // Metadata, tickets and deletion need the API key; the 1:1 verify of
    // the user-held-key mode is not a login.
    for (method, path) in [
        ("GET", "/v1/users/alice"),
        ("POST", "/v1/users/alice/tickets"),
        ("DELETE", "/v1/users/alice"),
        ("GET", "/metrics"),
        ("GET", "/v1/galleries"),
    ] {
        call(method, &m.url(path), None).expect_error(401, "unauthorized");
    }
    // A 1:1 client's verification (a bare probe ciphertext): no scores here.
    let bare = client::encrypt_probe_public(&b.pk, &b.q, &face, &mut b.rng)
        .unwrap()
        .to_bytes();
    call("POST", &m.url("/v1/users/alice/verify"), Some(&bare)).expect_error(403, "login_mode");
    assert_eq!(m.rows(), settled);

    // Verdicts as the user's own credential: a fresh accept re-enrolls or
    // deletes alice, once; a reject, another user's accept, or a used one
    // does not.
    let (_, fresh, _) = m.login("alice", &b.probe(&near(&face, &mut rng)));
    let settled = m.rows();
    let new_template = b.template(&[near(&face, &mut rng)]);
    m.put_template("alice", &format!("Verdict {reject}"), &new_template)
        .expect_error(403, "invalid_verdict");
    m.put_template("bob", &format!("Verdict {fresh}"), &new_template)
        .expect_error(403, "invalid_verdict");
    m.put_template("alice", "Verdict not.a.jws", &new_template)
        .expect_error(403, "invalid_verdict");
    assert_eq!(m.rows(), settled);
    let r = m.put_template("alice", &format!("Verdict {fresh}"), &new_template);
    assert_eq!(r.status, 204, "{}", String::from_utf8_lossy(&r.body));
    let reenrolled = m.rows();
    m.put_template("alice", &format!("Verdict {fresh}"), &new_template)
        .expect_error(403, "invalid_verdict");
    // Used is used, across a restart too.
    m.restart();
    m.put_template("alice", &format!("Verdict {fresh}"), &new_template)
        .expect_error(403, "invalid_verdict");
    let delete = m.url("/v1/users/alice");
    call_with(
        "DELETE",
        &delete,
        &[("authorization", &format!("Verdict {fresh}"))],
        None,
    )
    .expect_error(403, "invalid_verdict");
    assert_eq!(m.rows(), reenrolled);
    let (_, last, _) = m.login("alice", &b.probe(&near(&face, &mut rng)));
    let r = call_with(
        "DELETE",
        &delete,
        &[("authorization", &format!("Verdict {last}"))],
        None,
    );
    assert_eq!(r.status, 204, "{}", String::from_utf8_lossy(&r.body));
    m.api("GET", "/v1/users/alice")
        .expect_error(404, "unknown_user");

    // The name registered again: another epoch, an unrelated key pair.
    m.ticket("alice");
    let again = m.api("GET", "/v1/users/alice").json()["key_epoch"]
        .as_u64()
        .unwrap();
    assert_ne!(again, epoch);
    let reborn = Browser::of(&m, "alice", 64);
    assert_ne!(reborn.pk.to_bytes(), b.pk.to_bytes());
}

/// The first paragraph of the trust model (docs/PROTOCOL.md): with the
/// management API open, anyone deletes alice and enrolls their own keys and
/// face as her; in login mode each step is refused and nothing is written.
#[test]
fn an_open_api_lets_anyone_become_alice_and_login_mode_refuses_it() {
    let _machine = shared();
    let mut rng = Prng::from_seed([71; 32]);
    let alice_face = embedding(&mut rng);
    let mallory_face = embedding(&mut rng);

    // Open mode (no API keys, no decider): the attack works.
    let dir = temp_dir("open-attack");
    let s = Server::start(&dir, &[]);
    let mut alice = Identity::new(72);
    enroll(&s.url, "alice", &mut alice, &alice_face);
    let r = call("DELETE", &format!("{}/v1/users/alice", s.url), None);
    assert_eq!(r.status, 204, "anyone deletes alice");
    let mut mallory = Identity::new(73);
    enroll(&s.url, "alice", &mut mallory, &mallory_face);
    let photo = near(&mallory_face, &mut rng);
    let r = call(
        "POST",
        &format!("{}/v1/users/alice/verify", s.url),
        Some(&mallory.probe(&photo)),
    );
    assert_eq!(r.status, 200);
    let cosines = mallory.check_scores(&r.body, std::slice::from_ref(&mallory_face), &photo);
    assert!(cosines[0] > 0.9, "mallory passes as alice: {cosines:?}");
    drop(s);

    // Login mode: alice enrolled with a ticket; mallory gets nowhere.
    let m = LoginMode::start("login-attack", &[]);
    let mut b = Browser::of_new(&m, "alice", 74);
    enroll_with_ticket(&m, "alice", &mut b, &alice_face, &mut rng);
    let mallorys_ticket = m.ticket("mallory");
    let before = m.rows();
    let alice_url = m.url("/v1/users/alice");
    call("DELETE", &alice_url, None).expect_error(401, "unauthorized");
    call_with(
        "DELETE",
        &alice_url,
        &[("authorization", "Bearer guessed-key-0123456789abcdef")],
        None,
    )
    .expect_error(401, "unauthorized");
    let keys_url = m.url("/v1/users/alice/keys");
    call("PUT", &keys_url, Some(&mallory.keys_body(true))).expect_error(401, "unauthorized");
    // Not even the relying party registers keys of its choosing.
    call_with(
        "PUT",
        &keys_url,
        &[("authorization", BEARER)],
        Some(&mallory.keys_body(true)),
    )
    .expect_error(403, "login_mode");
    let mallory_template = mallory.template(std::slice::from_ref(&mallory_face));
    call(
        "PUT",
        &m.url("/v1/users/alice/template"),
        Some(&mallory_template),
    )
    .expect_error(401, "unauthorized");
    // A ticket mallory got for her own account does not enroll alice.
    m.put_template(
        "alice",
        &format!("Ticket {mallorys_ticket}"),
        &mallory_template,
    )
    .expect_error(403, "invalid_ticket");
    // Nor does a made-up verdict.
    m.put_template(
        "alice",
        "Verdict eyJhbGciOiJFZERTQSJ9.e30.AAAA",
        &mallory_template,
    )
    .expect_error(403, "invalid_verdict");
    assert_eq!(m.rows(), before);
    // Mallory's face under alice's key: a signed reject.
    let (_, _, outcome) = m.login("alice", &b.probe(&mallory_face));
    assert_eq!(outcome, "reject");
    assert_eq!(m.outcomes("alice"), ["reject"]);
}

impl Browser {
    /// The browser of a user the relying party registers now (their first
    /// ticket registers them).
    fn of_new(m: &LoginMode, user: &str, seed: u8) -> Browser {
        m.ticket(user);
        Browser::of(m, user, seed)
    }
}

#[test]
fn failed_logins_wait_then_lock_out() {
    let _machine = shared();
    let mut rng = Prng::from_seed([81; 32]);
    let face = embedding(&mut rng);

    // Waits: after five failures in a row, per user and per address.
    let m = LoginMode::start(
        "throttle",
        &[
            "--failure-delay-ms",
            "60000",
            "--trusted-proxy",
            "127.0.0.1",
        ],
    );
    for user in ["alice", "bob"] {
        let mut b = Browser::of_new(&m, user, 82);
        enroll_with_ticket(&m, user, &mut b, &face, &mut rng);
    }
    let mut b = Browser::of(&m, "alice", 83);
    let impostor = b.probe(&embedding(&mut rng));
    let from = Some("203.0.113.7");
    for _ in 0..5 {
        let c = m.challenge("alice");
        let r = m.login_from("alice", &c, &impostor, from);
        assert_eq!(r.status, 200);
        assert_eq!(r.json()["outcome"], "reject");
    }
    let before = m.rows();
    let c = m.challenge("alice");
    let r = m.login_from("alice", &c, &impostor, Some("198.51.100.1"));
    r.expect_error(429, "throttled");
    let wait: u64 = r.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=60).contains(&wait), "{wait}");
    // The same address is held back for another user too; bob from
    // elsewhere is not.
    let mut bob = Browser::of(&m, "bob", 84);
    let genuine_bob = bob.probe(&near(&face, &mut rng));
    let c = m.challenge("bob");
    m.login_from("bob", &c, &genuine_bob, from)
        .expect_error(429, "throttled");
    assert_eq!(m.rows(), before);
    let c = m.challenge("bob");
    let r = m.login_from("bob", &c, &genuine_bob, Some("198.51.100.2"));
    assert_eq!(r.json()["outcome"], "accept");
    drop(m);

    // Lockout: three failures in a row, lifted only by enrolling again.
    let mut m = LoginMode::start(
        "lockout",
        &["--failure-delay-ms", "0", "--lockout-failures", "3"],
    );
    let mut b = Browser::of_new(&m, "alice", 85);
    enroll_with_ticket(&m, "alice", &mut b, &face, &mut rng);
    for _ in 0..3 {
        let (_, _, outcome) = m.login("alice", &b.probe(&embedding(&mut rng)));
        assert_eq!(outcome, "reject");
    }
    let genuine = b.probe(&near(&face, &mut rng));
    let c = m.challenge("alice");
    let before = m.rows();
    m.login_from("alice", &c, &genuine, None)
        .expect_error(429, "locked_out");
    assert_eq!(m.rows(), before);
    assert_eq!(m.outcomes("alice"), ["reject", "reject", "reject"]);
    // A restart (even SIGKILL) lifts no lockout.
    m.restart();
    let c = m.challenge("alice");
    m.login_from("alice", &c, &genuine, None)
        .expect_error(429, "locked_out");
    enroll_with_ticket(&m, "alice", &mut b, &face, &mut rng);
    let (_, _, outcome) = m.login("alice", &b.probe(&near(&face, &mut rng)));
    assert_eq!(outcome, "accept");
}

/// Key rotation by re-enrollment: a ticket issued with `?rotate=true` moves
/// the user to the next epoch, an unrelated key pair; the old template goes
/// with the old key, probes under the old key get no verdict, and the user
/// logs in again once enrolled under the new one. A user who registered
/// keys of their own before login mode moves to the decider's the same way.
#[test]
fn rotation_moves_a_user_to_a_new_key_epoch() {
    let _machine = shared();
    let mut rng = Prng::from_seed([95; 32]);
    let face = embedding(&mut rng);

    // Registered in the user-held-key mode first (same database).
    let dir = temp_dir("rotate-own-keys");
    let s = Server::start(&dir, &[]);
    let mut own = Identity::new(96);
    enroll(&s.url, "bob", &mut own, &face);
    drop(s);

    let m = LoginMode::start_in(dir, &[]);
    let mut b = Browser::of_new(&m, "alice", 97);
    enroll_with_ticket(&m, "alice", &mut b, &face, &mut rng);
    let epoch = m.api("GET", "/v1/users/alice").json()["key_epoch"]
        .as_u64()
        .unwrap();
    let old_probe = b.probe(&near(&face, &mut rng));

    let r = m.api("POST", "/v1/users/alice/tickets?rotate=true");
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    let ticket = r.json()["ticket"].as_str().unwrap().to_string();
    assert_eq!(r.json()["epoch"].as_u64().unwrap(), (epoch + 1) % (1 << 32));
    let info = m.api("GET", "/v1/users/alice").json();
    assert_eq!(info["key_epoch"].as_u64().unwrap(), (epoch + 1) % (1 << 32));
    assert_eq!(info["template_count"], serde_json::Value::Null, "{info}");
    m.api("POST", &format!("/v1/users/alice/challenges?aud={APP}"))
        .expect_error(404, "no_template");
    let mut rotated = Browser::of(&m, "alice", 98);
    assert_ne!(rotated.pk.to_bytes(), b.pk.to_bytes());
    let body = rotated.template(&[near(&face, &mut rng), near(&face, &mut rng)]);
    let r = m.put_template("alice", &format!("Ticket {ticket}"), &body);
    assert_eq!(r.status, 204, "{}", String::from_utf8_lossy(&r.body));
    // A probe under the old key: no verdict (and a failed attempt).
    let c = m.challenge("alice");
    m.login_from("alice", &c, &old_probe, None)
        .expect_error(422, "not_under_key");
    let (_, _, outcome) = m.login("alice", &rotated.probe(&near(&face, &mut rng)));
    assert_eq!(outcome, "accept");

    // Bob's own keys: a plain ticket is refused, a rotating one moves him.
    m.api("POST", "/v1/users/bob/tickets")
        .expect_error(403, "login_mode");
    let r = m.api("POST", "/v1/users/bob/tickets?rotate=true");
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    let ticket = r.json()["ticket"].as_str().unwrap().to_string();
    let mut bob = Browser::of(&m, "bob", 99);
    assert_ne!(bob.pk.to_bytes(), own.pk.to_bytes());
    let body = bob.template(&[near(&face, &mut rng)]);
    assert_eq!(
        m.put_template("bob", &format!("Ticket {ticket}"), &body)
            .status,
        204
    );
    let (_, _, outcome) = m.login("bob", &bob.probe(&near(&face, &mut rng)));
    assert_eq!(outcome, "accept");
}

#[test]
fn expired_tickets_and_challenges_are_refused() {
    let _machine = shared();
    let mut rng = Prng::from_seed([91; 32]);
    let face = embedding(&mut rng);
    let m = LoginMode::start(
        "expiry",
        &["--ticket-lifetime", "1", "--challenge-lifetime", "1"],
    );
    let t = m.ticket("alice");
    let mut b = Browser::of(&m, "alice", 92);
    let template = b.template(&[near(&face, &mut rng)]);
    let t2 = m.ticket("alice");
    std::thread::sleep(Duration::from_millis(2100));
    let before = m.rows();
    m.put_template("alice", &format!("Ticket {t}"), &template)
        .expect_error(403, "invalid_ticket");
    m.put_template("alice", &format!("Ticket {t2}"), &template)
        .expect_error(403, "invalid_ticket");
    assert_eq!(m.rows(), before);
    let t = m.ticket("alice");
    let r = m.put_template("alice", &format!("Ticket {t}"), &template);
    assert_eq!(r.status, 204);
    let probe = b.probe(&near(&face, &mut rng));
    let c = m.challenge("alice");
    std::thread::sleep(Duration::from_millis(2100));
    let before = m.rows();
    m.login_from("alice", &c, &probe, None)
        .expect_error(403, "invalid_challenge");
    assert_eq!(m.rows(), before);
}

/// A matcher that does not hold the decider's token gets neither keys nor
/// verdicts: every login call fails with 502 and writes nothing.
#[test]
fn a_matcher_without_the_deciders_token_gets_nothing() {
    let _machine = shared();
    let m = LoginMode::start("wrong-token", &[]);
    let forged = m.dir.join("forged.token");
    std::fs::write(&forged, "not-the-matchers-token-0123456789abcdef\n").unwrap();
    let dir = temp_dir("wrong-token-matcher");
    let keys = m.dir.join("api.keys").display().to_string();
    let forged = forged.display().to_string();
    let s = Server::start(
        &dir,
        &[
            "--api-key-file",
            &keys,
            "--decider",
            &m.decider.url,
            "--decider-token-file",
            &forged,
        ],
    );
    let before = snapshot(&dir.join("blindmatch.db"));
    call_with(
        "POST",
        &format!("{}/v1/users/alice/tickets", s.url),
        &[("authorization", BEARER)],
        None,
    )
    .expect_error(502, "decider_unavailable");
    assert_eq!(snapshot(&dir.join("blindmatch.db")), before);
    // The decider itself answers the forged token with 401.
    let r = call_with(
        "GET",
        &format!("{}/v1/user-keys/alice?epoch=0", m.decider.url),
        &[(
            "authorization",
            "Bearer not-the-matchers-token-0123456789abcdef",
        )],
        None,
    );
    r.expect_error(401, "unauthorized");
    // And so do its 1:N routes, with the forged token or none.
    for (method, path) in [
        ("GET", "/v1/gallery-keys/staff?epoch=0"),
        (
            "POST",
            "/v1/identifications?gallery=staff&epoch=0&top_k=1&aud=a&nonce=n",
        ),
        ("POST", "/v1/erasures?gallery=staff&epoch=0&block=0"),
    ] {
        let url = format!("{}{path}", m.decider.url);
        let forged = [(
            "authorization",
            "Bearer not-the-matchers-token-0123456789abcdef",
        )];
        for headers in [&forged[..], &[]] {
            call_with(method, &url, headers, Some(b"\0\0\0\0")).expect_error(401, "unauthorized");
        }
    }
    call_with(
        "POST",
        &format!("{}/v1/galleries/staff/identify?aud={APP}&nonce=n", s.url),
        &[("authorization", BEARER)],
        Some(b"x"),
    )
    .expect_error(404, "unknown_gallery");
    call_with(
        "PUT",
        &format!("{}/v1/galleries/staff", s.url),
        &[("authorization", BEARER)],
        None,
    )
    .expect_error(502, "decider_unavailable");
    assert_eq!(snapshot(&dir.join("blindmatch.db")), before);
    // The real matcher is unaffected.
    m.ticket("alice");
    let _ = &m.matcher;
}

#[test]
fn verdict_keys_rotate_without_breaking_verdicts() {
    let _machine = shared();
    let mut m = LoginMode::start("verdict-rotation", &[]);
    let mut rng = Prng::from_seed([66; 32]);
    let face = embedding(&mut rng);
    m.ticket("alice");
    let mut b = Browser::of(&m, "alice", 67);
    enroll_with_ticket(&m, "alice", &mut b, &face, &mut rng);
    let (c1, old, outcome) = m.login("alice", &b.probe(&near(&face, &mut rng)));
    assert_eq!(outcome, "accept");
    let old_kid = PublicKeys::kid_of(&old).unwrap();

    // The decider starts again with a new key, on the same address; the
    // matcher, still running, has the old JWK set cached.
    let dir = m.dir.to_path_buf();
    m.decider.restart(&dir, &["--new-verdict-key"]);
    let (c2, new, outcome) = m.login("alice", &b.probe(&near(&face, &mut rng)));
    assert_eq!(outcome, "accept");
    let new_kid = PublicKeys::kid_of(&new).unwrap();
    assert_ne!(new_kid, old_kid, "the new key signs");
    // The new verdict is a credential at once: its unknown kid makes the
    // matcher fetch the JWK set again.
    let template = b.template(&[near(&face, &mut rng), near(&face, &mut rng)]);
    let r = m.put_template("alice", &format!("Verdict {new}"), &template);
    assert_eq!(r.status, 204, "{}", String::from_utf8_lossy(&r.body));
    // Both keys are published: the verdict signed before the rotation
    // still checks with jose, and so does the new one.
    let r = call("GET", &m.url("/.well-known/jwks.json"), None);
    assert_eq!(r.status, 200);
    let kids: Vec<String> = r.json()["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["kid"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        kids,
        [new_kid.clone(), old_kid.clone()],
        "signing key first"
    );
    std::fs::write(&m.jwks, &r.body).unwrap();
    assert_eq!(jose(&m.jwks, &old, APP, &c1), (0, "accept".into()));
    assert_eq!(jose(&m.jwks, &new, APP, &c2), (0, "accept".into()));

    // Once the old key's file is removed, its verdicts no longer check.
    let keys_dir = dir.join("decider").join("verdict-keys");
    let mut files: Vec<_> = std::fs::read_dir(&keys_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert_eq!(files.len(), 2);
    std::fs::remove_file(&files[0]).unwrap();
    m.decider.restart(&dir, &[]);
    let r = call(
        "GET",
        &format!("{}/.well-known/jwks.json", m.decider.url),
        None,
    );
    std::fs::write(&m.jwks, &r.body).unwrap();
    assert_eq!(jose(&m.jwks, &old, APP, &c1).0, 1);
    assert_eq!(jose(&m.jwks, &new, APP, &c2), (0, "accept".into()));
}

/// A modified page, over HTTP: a probe bundle whose packed probe is an
/// impostor's tripled (cosine 0.25 becomes 0.75), with a one-hot encoding
/// that matches it or not, and a template bundle with a tripled sample.
/// The probes get signed rejects `malformed_probe` that count towards the
/// lockout; the template is refused (422 `malformed_template`) before its
/// ticket is taken or anything is stored.
#[test]
fn modified_pages_are_refused_with_their_reason() {
    use blindmatch::matching::pack;
    use blindmatch::matching::wellformed::{Bundle, OneHot};
    let _machine = shared();
    let m = LoginMode::start(
        "modified",
        &["--failure-delay-ms", "0", "--lockout-failures", "3"],
    );
    let mut rng = Prng::from_seed([97; 32]);
    let face = embedding(&mut rng);
    let mut b = Browser::of_new(&m, "alice", 98);
    let params = Params::auth4096();
    let layout = OneHot::new(&params, &b.q).unwrap();
    let (lo, hi) = b.q.range();
    let tripled = |q: &Quantizer, e: &[f32]| -> Vec<i32> {
        q.quantize(e).unwrap().iter().map(|&x| 3 * x).collect()
    };
    let clip = |v: &[i32]| -> Vec<i32> { v.iter().map(|&x| x.clamp(lo, hi)).collect() };

    // Enrollment with a tripled second sample: refused, nothing written,
    // the ticket still good.
    let t = m.ticket("alice");
    let first = b.q.quantize(&near(&face, &mut rng)).unwrap();
    let second = clip(&tripled(&b.q, &near(&face, &mut rng)));
    let packed = pack::pack_templates(&params, DIM, &[first.clone(), second.clone()]).unwrap();
    let mut one_hot = layout.encrypt(&b.pk, &first, &mut b.rng).unwrap();
    one_hot.extend(layout.encrypt(&b.pk, &second, &mut b.rng).unwrap());
    let crafted = Bundle {
        packed: b.pk.encrypt_with(&packed, &mut b.rng).unwrap(),
        one_hot,
    };
    let before = m.rows();
    m.put_template("alice", &format!("Ticket {t}"), &crafted.to_bytes())
        .expect_error(422, "malformed_template");
    // A bare ciphertext is no bundle.
    m.put_template("alice", &format!("Ticket {t}"), &crafted.packed.to_bytes())
        .expect_error(400, "wrong_kind");
    assert_eq!(m.rows(), before);
    let body = b.template(&[near(&face, &mut rng), near(&face, &mut rng)]);
    let r = m.put_template("alice", &format!("Ticket {t}"), &body);
    assert_eq!(
        r.status,
        204,
        "the ticket was not taken: {}",
        String::from_utf8_lossy(&r.body)
    );

    // Logins from the modified page: signed rejects with their reason.
    let impostor = embedding(&mut rng);
    let a = b.q.quantize(&impostor).unwrap();
    let probe = |packed: &[i32], one_hot: &[i32], b: &mut Browser| {
        Bundle {
            packed: b
                .pk
                .encrypt_with(&pack::pack_probe(&params, packed).unwrap(), &mut b.rng)
                .unwrap(),
            one_hot: layout.encrypt(&b.pk, one_hot, &mut b.rng).unwrap(),
        }
        .to_bytes()
    };
    let three = tripled(&b.q, &impostor);
    for body in [
        probe(&three, &a, &mut b),
        probe(&clip(&three), &clip(&three), &mut b),
    ] {
        let (c, jws, outcome) = m.login("alice", &body);
        assert_eq!(outcome, "reject");
        assert_eq!(jose(&m.jwks, &jws, APP, &c), (2, "reject".into()));
        let payload = jws.split('.').nth(1).unwrap();
        let claims: serde_json::Value = serde_json::from_slice(
            &base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, payload)
                .unwrap(),
        )
        .unwrap();
        assert_eq!(claims["reason"], "malformed_probe");
    }
    // A bare probe ciphertext is no bundle: refused before the decider.
    let c = m.challenge("alice");
    let bare = client::encrypt_probe_public(&b.pk, &b.q, &near(&face, &mut rng), &mut b.rng)
        .unwrap()
        .to_bytes();
    m.login_from("alice", &c, &bare, None)
        .expect_error(400, "wrong_kind");
    // Two malformed probes and one impostor: locked out.
    let (_, _, outcome) = m.login("alice", &b.probe(&embedding(&mut rng)));
    assert_eq!(outcome, "reject");
    let c = m.challenge("alice");
    m.login_from("alice", &c, &b.probe(&near(&face, &mut rng)), None)
        .expect_error(429, "locked_out");
}
