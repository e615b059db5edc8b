//! A whole login at the library level, each role with only what it holds:
//! the browser the user's public key, the matcher the public and
//! relinearization keys, the decider the master secret.

use super::*;
use crate::bfv::{Ciphertext, Prng, RelinKey};
use crate::matching::{client, Quantizer, Verifier};
use crate::server::verdict::{Outcome, VerdictKey};

const DIM: usize = 128;

fn unit(rng: &mut Prng) -> Vec<f32> {
    let v: Vec<f32> = (0..DIM)
        .map(|_| rng.next_u32() as f32 / u32::MAX as f32 - 0.5)
        .collect();
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter().map(|x| x / n).collect()
}

fn near(v: &[f32], rng: &mut Prng) -> Vec<f32> {
    v.iter()
        .map(|&x| x + 0.02 * (rng.next_u32() as f32 / u32::MAX as f32 - 0.5))
        .collect()
}

fn decider(master: [u8; 32]) -> Decider {
    let keys = VerdictKeys::new(vec![VerdictKey::from_seed(&[9; 32])]).unwrap();
    Decider::new(
        MasterSecret::from_bytes(master),
        &Params::auth4096(),
        DIM,
        Policy::default(),
        keys,
        "https://login.example".into(),
        300,
    )
    .unwrap()
}

/// The verdict's claims, after checking its signature.
fn claims(d: &Decider, jws: &str) -> serde_json::Value {
    let public = d.verdict_keys().signing().public_key();
    crate::server::verdict::open(&public, jws)
        .expect("a valid signature")
        .1
}

struct Login {
    verifier: Verifier,
    q: Quantizer,
    pk: PublicKey,
    rk: RelinKey,
    template: Ciphertext,
}

impl Login {
    /// Enrollment: the browser encrypts `samples` under the user's public
    /// key; the matcher stores the template and the relinearization key.
    fn enroll(d: &Decider, label: &KeyLabel<'_>, samples: &[Vec<f32>], rng: &mut Prng) -> Login {
        let params = Params::auth4096();
        let q = Quantizer::new(&params, DIM).unwrap();
        let (pk, rk) = d.matcher_keys(label).unwrap();
        let refs: Vec<&[f32]> = samples.iter().map(|s| s.as_slice()).collect();
        let template = client::encrypt_templates_public(&pk, &q, &refs, rng).unwrap();
        Login {
            verifier: Verifier::for_decider(&params, DIM).unwrap(),
            q,
            rk,
            pk,
            template,
        }
    }

    /// A login attempt: the browser's probe, the matcher's masked reply, the
    /// decider's verdict.
    fn attempt(&self, d: &Decider, req: &Request<'_>, face: &[f32], rng: &mut Prng) -> String {
        self.try_attempt(d, req, face, rng).unwrap()
    }

    fn try_attempt(
        &self,
        d: &Decider,
        req: &Request<'_>,
        face: &[f32],
        rng: &mut Prng,
    ) -> Result<String, DecideError> {
        let probe = client::encrypt_probe_public(&self.pk, &self.q, face, rng).unwrap();
        let reply = self
            .verifier
            .verify_with(&self.template, &probe, &self.pk, Some(&self.rk), rng)
            .unwrap();
        let compact = self.verifier.compact(&reply).unwrap();
        let wire = ScoreReply::from_bytes(&Params::auth4096(), &compact.to_bytes()).unwrap();
        d.decide(req, &wire, 1_800_000_000)
    }
}

#[test]
fn genuine_accepted_impostor_rejected_with_signed_verdicts() {
    let d = decider([7; 32]);
    let mut rng = Prng::from_seed([1; 32]);
    let face = unit(&mut rng);
    let label = KeyLabel::user("alice", 0);
    let samples = vec![near(&face, &mut rng), near(&face, &mut rng)];
    let login = Login::enroll(&d, &label, &samples, &mut rng);
    let req = Request {
        label,
        audience: "https://app.example",
        nonce: "c-1",
        samples: 2,
    };
    let genuine = claims(
        &d,
        &login.attempt(&d, &req, &near(&face, &mut rng), &mut rng),
    );
    assert_eq!(genuine["outcome"], "accept", "{genuine}");
    assert_eq!(genuine["sub"], "alice");
    assert_eq!(genuine["aud"], "https://app.example");
    assert_eq!(genuine["nonce"], "c-1");
    assert_eq!(genuine["exp"], 1_800_000_300);
    let impostor = claims(&d, &login.attempt(&d, &req, &unit(&mut rng), &mut rng));
    assert_eq!(impostor["outcome"], "reject", "{impostor}");
}

#[test]
fn keys_are_per_user_per_epoch_and_deterministic() {
    let d = decider([7; 32]);
    let pk = |name, epoch| d.public_key(&KeyLabel::user(name, epoch)).to_bytes();
    assert_eq!(
        pk("alice", 0),
        pk("alice", 0),
        "derivation is deterministic"
    );
    assert_ne!(pk("alice", 0), pk("alice", 1), "a new epoch is a new key");
    assert_ne!(pk("alice", 0), pk("bob", 0), "users have their own keys");
    // The name's length is part of the label: no two labels collide by
    // concatenation.
    assert_ne!(pk("a", 0x6200_0000), pk("ab", 0));
    let other = decider([8; 32]);
    assert_ne!(
        other.public_key(&KeyLabel::user("alice", 0)).to_bytes(),
        pk("alice", 0),
        "another master secret, other keys"
    );
}

#[test]
fn a_reply_under_another_users_key_gets_no_verdict() {
    // Alice's genuine reply presented as Bob's (or as Alice's previous
    // epoch), and a probe encrypted under a key of the client's own: the
    // decider's key reads uniform phases and gives no verdict (without the
    // check, one such reply in four was an accept at threshold 0.5).
    let d = decider([7; 32]);
    let mut rng = Prng::from_seed([2; 32]);
    let face = unit(&mut rng);
    let alice = KeyLabel::user("alice", 1);
    let login = Login::enroll(&d, &alice, &[near(&face, &mut rng)], &mut rng);
    for label in [KeyLabel::user("bob", 1), KeyLabel::user("alice", 0)] {
        let req = Request {
            label,
            audience: "https://app.example",
            nonce: "c-2",
            samples: 1,
        };
        for _ in 0..8 {
            let r = login.try_attempt(&d, &req, &near(&face, &mut rng), &mut rng);
            assert!(
                matches!(r, Err(DecideError::NotUnderKey { .. })),
                "{label:?}: {r:?}"
            );
        }
    }
    // A probe under the client's own key, against Alice's template.
    let params = Params::auth4096();
    let own = PublicKey::new_with(
        &crate::bfv::SecretKey::generate_with(&params, &mut rng),
        &mut rng,
    );
    let req = Request {
        label: alice,
        audience: "https://app.example",
        nonce: "c-3",
        samples: 1,
    };
    for _ in 0..8 {
        let probe =
            client::encrypt_probe_public(&own, &login.q, &near(&face, &mut rng), &mut rng).unwrap();
        let reply = login
            .verifier
            .verify_with(
                &login.template,
                &probe,
                &login.pk,
                Some(&login.rk),
                &mut rng,
            )
            .unwrap();
        let r = d.decide(
            &req,
            &login.verifier.compact(&reply).unwrap(),
            1_800_000_000,
        );
        assert!(matches!(r, Err(DecideError::NotUnderKey { .. })), "{r:?}");
    }
    // The genuine reply is read, inside the bound: its flood moves the phase
    // by at most 1/64.
    let wire = login.verifier.compact(
        &login
            .verifier
            .verify_with(
                &login.template,
                &client::encrypt_probe_public(&login.pk, &login.q, &face, &mut rng).unwrap(),
                &login.pk,
                Some(&login.rk),
                &mut rng,
            )
            .unwrap(),
    );
    let (sk, _) = MasterSecret::from_bytes([7; 32]).user_keys(&params, &alice);
    let (_, phase) = wire.unwrap().decrypt_with_phase(&sk).unwrap();
    assert!(phase < MAX_PHASE / 4.0, "genuine phase {phase}");
}

#[test]
fn policy_rules() {
    let p = Policy::default();
    assert_eq!(p.outcome(&[0.2, 0.51]), Outcome::Accept);
    assert_eq!(p.outcome(&[0.2, 0.49]), Outcome::Reject);
    assert_eq!(p.outcome(&[]), Outcome::Reject);
    assert_eq!(p.outcome(&[0.9, f64::NAN]), Outcome::Reject);
    let mean = Policy {
        threshold: 0.5,
        rule: Rule::Mean,
    };
    assert_eq!(mean.outcome(&[0.2, 0.9]), Outcome::Accept);
    assert_eq!(mean.outcome(&[0.2, 0.7]), Outcome::Reject);
}

#[test]
fn master_secret_files() {
    let dir = crate::server::test_dir::TestDir::new("decider-master");
    let path = dir.join("master.key");
    let m = MasterSecret::generate().unwrap();
    m.save_new(&path).unwrap();
    assert!(m.save_new(&path).is_err(), "never overwritten");
    let back = MasterSecret::load(&path).unwrap();
    let label = KeyLabel::user("alice", 0);
    let params = Params::auth4096();
    assert_eq!(
        back.user_keys(&params, &label).1.to_bytes(),
        m.user_keys(&params, &label).1.to_bytes()
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    std::fs::write(dir.join("short.key"), [0u8; 31]).unwrap();
    assert!(matches!(
        MasterSecret::load(&dir.join("short.key")),
        Err(user_keys::MasterError::Length { len: 31, .. })
    ));
}
