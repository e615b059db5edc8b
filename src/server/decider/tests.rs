//! A whole login at the library level, each role with only what it holds:
//! the browser the user's public key, the matcher the public and
//! relinearization keys, the decider the master secret.

use super::*;
use crate::bfv::{Ciphertext, Prng, RelinKey};
use crate::matching::wellformed::{Bundle, Checker, Packed};
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
    checker: Checker,
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
            checker: Checker::new(&params, DIM).unwrap(),
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
        let bundle = client::encrypt_probe_bundle(&self.pk, &self.q, face, rng).unwrap();
        self.decide_on(d, req, &bundle, rng)
    }

    /// The matcher's reply and checks for a bundle, and the decider's verdict.
    fn decide_on(
        &self,
        d: &Decider,
        req: &Request<'_>,
        bundle: &Bundle,
        rng: &mut Prng,
    ) -> Result<String, DecideError> {
        let reply = self
            .verifier
            .verify_with(
                &self.template,
                &bundle.packed,
                &self.pk,
                Some(&self.rk),
                rng,
            )
            .unwrap();
        let compact = self.verifier.compact(&reply).unwrap();
        let wire = ScoreReply::from_bytes(&Params::auth4096(), &compact.to_bytes()).unwrap();
        let checks = self
            .checker
            .check_with(
                &bundle.packed,
                Packed::Probe,
                &bundle.one_hot,
                &self.pk,
                &self.rk,
                rng,
            )
            .unwrap();
        d.decide(req, &wire, &checks, 1_800_000_000)
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
        template_checked: true,
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
            template_checked: true,
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
        template_checked: true,
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
        let no_checks = CheckReplies {
            bits: vec![],
            sums: vec![],
            norms: vec![],
        };
        let r = d.decide(
            &req,
            &login.verifier.compact(&reply).unwrap(),
            &no_checks,
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

/// A modified client: the impostor's probe scaled by 3 (cosine 0.25
/// becomes 0.75, past the threshold), encrypted with a one-hot encoding
/// that matches it, or not. Without the checks the decider accepts it;
/// with them it signs a reject `malformed_probe`. A template that was
/// never checked gets a reject `malformed_template` even for the genuine
/// face.
#[test]
fn modified_clients_get_signed_rejects_with_their_reason() {
    let d = decider([9; 32]);
    let mut rng = Prng::from_seed([4; 32]);
    let face = unit(&mut rng);
    let label = KeyLabel::user("alice", 0);
    let samples = vec![face.clone()];
    let login = Login::enroll(&d, &label, &samples, &mut rng);
    let req = Request {
        label,
        audience: "https://app.example",
        nonce: "c-9",
        samples: 1,
        template_checked: true,
    };
    // An impostor at cosine 0.25 with the face.
    let other = unit(&mut rng);
    let along: f32 = other.iter().zip(&face).map(|(a, b)| a * b).sum();
    let ortho: Vec<f32> = other
        .iter()
        .zip(&face)
        .map(|(a, b)| a - along * b)
        .collect();
    let on = ortho.iter().map(|x| x * x).sum::<f32>().sqrt();
    let impostor: Vec<f32> = face
        .iter()
        .zip(&ortho)
        .map(|(a, b)| 0.25 * a + 0.968 * b / on)
        .collect();
    let a = login.q.quantize(&impostor).unwrap();
    let (lo, hi) = login.q.range();
    let tripled: Vec<i32> = a.iter().map(|&x| 3 * x).collect();
    let clipped: Vec<i32> = tripled.iter().map(|&x| x.clamp(lo, hi)).collect();
    let layout = login.checker.layout().clone();
    let params = Params::auth4096();
    let crafted = |packed: &[i32], one_hot: &[i32], rng: &mut Prng| Bundle {
        packed: login
            .pk
            .encrypt_with(
                &crate::matching::pack::pack_probe(&params, packed).unwrap(),
                rng,
            )
            .unwrap(),
        one_hot: layout.encrypt(&login.pk, one_hot, rng).unwrap(),
    };
    let no_checks = CheckReplies {
        bits: vec![],
        sums: vec![],
        norms: vec![],
    };
    for (name, bundle) in [
        (
            "tripled, one-hot of the impostor",
            crafted(&tripled, &a, &mut rng),
        ),
        (
            "tripled and clipped, both",
            crafted(&clipped, &clipped, &mut rng),
        ),
    ] {
        // What the decider would have done without the checks: accept.
        let reply = login
            .verifier
            .verify_with(
                &login.template,
                &bundle.packed,
                &login.pk,
                Some(&login.rk),
                &mut rng,
            )
            .unwrap();
        let unchecked = d
            .decide(
                &Request {
                    template_checked: false,
                    ..req.clone()
                },
                &login.verifier.compact(&reply).unwrap(),
                &no_checks,
                1_800_000_000,
            )
            .unwrap();
        assert_eq!(claims(&d, &unchecked)["outcome"], "reject");
        let scores = client::decrypt_scores(
            &MasterSecret::from_bytes([9; 32]).secret_key(&params, &req.label),
            &login.q,
            &reply,
            1,
        )
        .unwrap();
        assert!(
            scores.cosines[0] > 0.5,
            "{name}: the attack works unchecked ({:?})",
            scores.cosines
        );
        let jws = login.decide_on(&d, &req, &bundle, &mut rng).unwrap();
        let c = claims(&d, &jws);
        assert_eq!(c["outcome"], "reject", "{name}");
        assert_eq!(c["reason"], "malformed_probe", "{name}");
    }
    // The genuine face: accepted, no reason.
    let c = claims(
        &d,
        &login.attempt(&d, &req, &near(&face, &mut rng), &mut rng),
    );
    assert_eq!(c["outcome"], "accept");
    assert!(c.get("reason").is_none());
    // The same genuine face against a template the decider never checked.
    let unchecked = Request {
        template_checked: false,
        ..req.clone()
    };
    let c = claims(
        &d,
        &login.attempt(&d, &unchecked, &near(&face, &mut rng), &mut rng),
    );
    assert_eq!(c["outcome"], "reject");
    assert_eq!(c["reason"], "malformed_template");
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
