//! Audit rows belong to a user id, not to a name: a user deleted and
//! registered again under the same name starts with no audit rows, even when
//! a verification of the old user was still computing meanwhile.

use crate::harness::*;

fn verifications(u: &str, user: &str) -> serde_json::Value {
    call("GET", &format!("{u}/v1/users/{user}"), None).json()["verifications"].clone()
}

fn audit_lines(db: &Path, user: &str) -> usize {
    run_ok(
        server_cmd()
            .arg("audit")
            .arg("--db")
            .arg(db)
            .args(["--user", user]),
    )
    .lines()
    .count()
}

#[test]
fn a_re_registered_namesake_inherits_no_audit_rows() {
    let _machine = shared();
    let dir = temp_dir("namesake");
    let db = dir.join("blindmatch.db");
    let srv = Server::start(&dir, &[]);
    let u = srv.url.clone();
    let mut id = Identity::new(61);
    let mut rng = Prng::from_seed([61; 32]);
    let face = embedding(&mut rng);
    // With a relinearization key the verification computes longer: the
    // deletion and the new registration land while it runs.
    let keys_rk = id.keys_body(true);
    let keys = id.keys_body(false);
    let template = id.template(std::slice::from_ref(&face));
    let mut inherited = 0;
    for round in 0..6 {
        assert_eq!(
            call("PUT", &format!("{u}/v1/users/alice/keys"), Some(&keys_rk)).status,
            201
        );
        let r = call(
            "PUT",
            &format!("{u}/v1/users/alice/template"),
            Some(&template),
        );
        assert_eq!(r.status, 204);
        for _ in 0..3 {
            verify_ok(&u, "alice", &mut id, &face);
        }
        assert_eq!(verifications(&u, "alice"), 3);
        // One more verification in flight (the user cached: its keys are
        // in memory), then the deletion and a new registration.
        let probe = id.probe(&face);
        let flying = {
            let u = u.clone();
            std::thread::spawn(move || {
                try_call("POST", &format!("{u}/v1/users/alice/verify"), Some(&probe))
                    .map(|r| r.status)
            })
        };
        std::thread::sleep(Duration::from_millis(1 + round));
        assert_eq!(
            call("DELETE", &format!("{u}/v1/users/alice"), None).status,
            204
        );
        assert_eq!(
            call("PUT", &format!("{u}/v1/users/alice/keys"), Some(&keys)).status,
            201
        );
        let _ = flying.join().unwrap();
        // Wait past a flush of the journal, then count.
        std::thread::sleep(Duration::from_millis(250));
        let n = verifications(&u, "alice");
        let listed = audit_lines(&db, "alice");
        if n != 0 || listed != 0 {
            inherited += 1;
            println!("round {round}: the new alice has {n} verifications, audit lists {listed}");
        }
        assert_eq!(
            call("DELETE", &format!("{u}/v1/users/alice"), None).status,
            204
        );
    }
    assert_eq!(
        inherited, 0,
        "{inherited} of 6 new users inherited audit rows"
    );
}
