//! The key holder's side: encrypting templates and probes, reading scores.
//!
//! In 1:1 mode the key holder is the user's browser: templates and probes are
//! secret-key encryptions (seeded, so each is a seed plus one polynomial on
//! the wire). In 1:N mode the operator's service key encrypts gallery
//! templates with its public key.

use crate::bfv::{Ciphertext, ObjectKind, Prng, PublicKey, SecretKey};
use crate::error::MatchError;

use super::pack::{pack_probe, pack_templates, read_scores};
use super::quantize::Quantizer;
use super::wellformed::{Bundle, OneHot};
use super::ScoreReply;

/// Scores read from a decrypted reply.
#[derive(Clone, Debug, PartialEq)]
pub struct Scores {
    /// Exact integer inner products of the quantized vectors.
    pub scores: Vec<i64>,
    /// The same as cosine similarities (`score / s²`).
    pub cosines: Vec<f64>,
}

fn quantize_all(q: &Quantizer, embeddings: &[&[f32]]) -> Result<Vec<Vec<i32>>, MatchError> {
    embeddings.iter().map(|e| q.quantize(e)).collect()
}

/// Encrypts up to `n/d` embeddings of one user into one template ciphertext
/// (secret key, seeded).
pub fn encrypt_templates(
    sk: &SecretKey,
    q: &Quantizer,
    embeddings: &[&[f32]],
    rng: &mut Prng,
) -> Result<Ciphertext, MatchError> {
    let pt = pack_templates(sk.params(), q.dim(), &quantize_all(q, embeddings)?)?;
    Ok(sk.encrypt_with(&pt, rng)?)
}

/// Encrypts gallery templates (up to `n/d`) under a service public key.
pub fn encrypt_templates_public(
    pk: &PublicKey,
    q: &Quantizer,
    embeddings: &[&[f32]],
    rng: &mut Prng,
) -> Result<Ciphertext, MatchError> {
    let pt = pack_templates(pk.params(), q.dim(), &quantize_all(q, embeddings)?)?;
    Ok(pk.encrypt_with(&pt, rng)?)
}

/// Encrypts a login probe (secret key, seeded).
pub fn encrypt_probe(
    sk: &SecretKey,
    q: &Quantizer,
    embedding: &[f32],
    rng: &mut Prng,
) -> Result<Ciphertext, MatchError> {
    let pt = pack_probe(sk.params(), &q.quantize(embedding)?)?;
    Ok(sk.encrypt_with(&pt, rng)?)
}

/// Encrypts a 1:N probe under a service public key, for a matcher that must
/// not see it ([`super::Identifier::score_encrypted_probe_into`]).
pub fn encrypt_probe_public(
    pk: &PublicKey,
    q: &Quantizer,
    embedding: &[f32],
    rng: &mut Prng,
) -> Result<Ciphertext, MatchError> {
    let pt = pack_probe(pk.params(), &q.quantize(embedding)?)?;
    Ok(pk.encrypt_with(&pt, rng)?)
}

/// Encrypts a login probe under a user's public key with its one-hot
/// ciphertexts (login mode: the decider accepts only a well-formed probe).
pub fn encrypt_probe_bundle(
    pk: &PublicKey,
    q: &Quantizer,
    embedding: &[f32],
    rng: &mut Prng,
) -> Result<Bundle, MatchError> {
    let a = q.quantize(embedding)?;
    let packed = pk.encrypt_with(&pack_probe(pk.params(), &a)?, rng)?;
    let one_hot = OneHot::new(pk.params(), q)?.encrypt(pk, &a, rng)?;
    Ok(Bundle { packed, one_hot })
}

/// Encrypts up to `n/d` embeddings into one template under a user's public
/// key, with each sample's one-hot ciphertexts (login mode enrollment).
pub fn encrypt_template_bundle(
    pk: &PublicKey,
    q: &Quantizer,
    embeddings: &[&[f32]],
    rng: &mut Prng,
) -> Result<Bundle, MatchError> {
    let quantized = quantize_all(q, embeddings)?;
    let packed = pk.encrypt_with(&pack_templates(pk.params(), q.dim(), &quantized)?, rng)?;
    let layout = OneHot::new(pk.params(), q)?;
    let mut one_hot = Vec::new();
    for a in &quantized {
        one_hot.extend(layout.encrypt(pk, a, rng)?);
    }
    Ok(Bundle { packed, one_hot })
}

/// Decrypts a compact reply (what a server sends for a relinearized
/// verification) and reads the first `count` scores.
pub fn decrypt_score_reply(
    sk: &SecretKey,
    q: &Quantizer,
    reply: &ScoreReply,
    count: usize,
) -> Result<Scores, MatchError> {
    if reply.dim() != q.dim() {
        return Err(MatchError::ReplyDimension {
            expected: q.dim(),
            found: reply.dim(),
        });
    }
    let t = sk.params().plaintext_modulus();
    let scores: Vec<i64> = reply
        .decrypt(sk)?
        .into_iter()
        .take(count)
        .map(|v| crate::bfv::centred(v, t))
        .collect();
    let cosines = scores.iter().map(|&s| q.cosine(s)).collect();
    Ok(Scores { scores, cosines })
}

/// Decrypts a reply as it came over the wire, compact ([`ScoreReply`]) or a
/// ciphertext (a size-3 reply, from a user without a relinearization key),
/// and reads the first `count` scores.
pub fn decrypt_reply_bytes(
    sk: &SecretKey,
    q: &Quantizer,
    bytes: &[u8],
    count: usize,
) -> Result<Scores, MatchError> {
    let params = sk.params();
    if ObjectKind::of(bytes) == Ok(ObjectKind::ScoreReply) {
        let reply = ScoreReply::from_bytes(params, bytes)?;
        decrypt_score_reply(sk, q, &reply, count)
    } else {
        let ct = Ciphertext::from_bytes(params, bytes)?;
        decrypt_scores(sk, q, &ct, count)
    }
}

/// Decrypts a reply ciphertext and reads the first `count` scores.
pub fn decrypt_scores(
    sk: &SecretKey,
    q: &Quantizer,
    reply: &Ciphertext,
    count: usize,
) -> Result<Scores, MatchError> {
    let pt = sk.decrypt(reply)?;
    let scores = read_scores(sk.params(), q.dim(), &pt, count)?;
    let cosines = scores.iter().map(|&s| q.cosine(s)).collect();
    Ok(Scores { scores, cosines })
}
