//! What shards answer and what the merge signs: a shard's top-k (signed by
//! its holder with the key of its lease) and the merged identification
//! (signed by the replica that merged them), both compact EdDSA JWS.
//!
//! Merging is exact: every shard ranks its templates in the one total order
//! of the single-process ranking (score, best first, then index), so the
//! global top-k is the top-k of the shards' top-k lists.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::server::verdict::check::{CheckError, PublicKeys};

/// The `typ` of a shard's result.
pub const SHARD_RESULT_TYP: &str = "blindmatch-shard-result+jwt";

/// The `typ` of a merged identification.
pub const SHARDED_IDENTIFICATION_TYP: &str = "blindmatch-sharded-identify+jwt";

/// One match: a template's index in the whole gallery and its score.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Scored {
    pub index: u64,
    pub score: i64,
}

/// A shard holder's answer to one identification.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardResult {
    /// The holder (its id: the URL it is reached at).
    pub iss: String,
    /// The gallery.
    pub sub: String,
    pub shard: u32,
    /// How many shards the gallery has.
    pub shards: u32,
    /// The merging replica's nonce for this identification.
    pub nonce: String,
    /// The gallery revision the holder had caught up to: every row written
    /// at or below it is in this result.
    pub rev: i64,
    pub iat: u64,
    /// The shard's best, best first (score, then index).
    pub matches: Vec<Scored>,
}

/// The merged answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardedIdentification {
    /// The replica that merged.
    pub iss: String,
    /// The gallery.
    pub sub: String,
    pub iat: u64,
    pub shards: u32,
    /// The gallery revision every shard's result covered.
    pub rev: i64,
    /// The best over every shard, best first.
    pub matches: Vec<Scored>,
    /// The SHA-256 (base64url) of each shard's signed result, by shard.
    pub results: Vec<String>,
}

/// Best first: score, then index (the single-process ranking's order).
pub fn rank(matches: &mut Vec<Scored>, top_k: usize) {
    matches.sort_by(|a, b| b.score.cmp(&a.score).then(a.index.cmp(&b.index)));
    matches.truncate(top_k);
}

/// The digest a merged identification names for a shard's signed result.
pub fn digest(jws: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(jws.as_bytes()))
}

/// Why a shard's result was refused.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ResultError {
    #[error("not signed by the shard holder's leased key: {0}")]
    Signature(CheckError),
    #[error("a result for another identification ({0})")]
    Mismatch(&'static str),
    #[error("caught up to revision {found}, the gallery is at {wanted}")]
    Stale { found: i64, wanted: i64 },
    #[error("a match outside the shard, or more than asked for")]
    Matches,
}

/// What the merging replica expects of shard `shard`'s result.
#[derive(Clone, Copy, Debug)]
pub struct Expected<'a> {
    pub holder: &'a str,
    pub holder_key: &'a [u8],
    pub gallery: &'a str,
    pub shard: u32,
    pub shards: u32,
    pub nonce: &'a str,
    pub rev: i64,
    pub top_k: usize,
    /// Templates per ciphertext (to check a match's shard).
    pub per: u64,
}

/// `jws` as shard `e.shard`'s result for this identification, or why not.
pub fn check(jws: &str, e: &Expected<'_>) -> Result<ShardResult, ResultError> {
    let keys = PublicKeys::from_raw([e.holder_key]);
    let r: ShardResult = keys
        .verify_typed(jws, SHARD_RESULT_TYP)
        .map_err(ResultError::Signature)?;
    let field = [
        (r.iss == e.holder, "holder"),
        (r.sub == e.gallery, "gallery"),
        (r.shard == e.shard, "shard"),
        (r.shards == e.shards, "shard count"),
        (r.nonce == e.nonce, "nonce"),
    ]
    .into_iter()
    .find(|(ok, _)| !ok);
    if let Some((_, what)) = field {
        return Err(ResultError::Mismatch(what));
    }
    if r.rev < e.rev {
        return Err(ResultError::Stale {
            found: r.rev,
            wanted: e.rev,
        });
    }
    let outside = r
        .matches
        .iter()
        .any(|m| (m.index / e.per) % e.shards as u64 != e.shard as u64);
    if outside || r.matches.len() > e.top_k {
        return Err(ResultError::Matches);
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::verdict::VerdictKey;

    fn result(key: &VerdictKey) -> (String, ShardResult) {
        let r = ShardResult {
            iss: "http://a".into(),
            sub: "staff".into(),
            shard: 1,
            shards: 4,
            nonce: "n".into(),
            rev: 9,
            iat: 1,
            matches: vec![
                Scored {
                    index: 32,
                    score: 9,
                },
                Scored {
                    index: 160,
                    score: 7,
                },
            ],
        };
        (key.sign_typed(SHARD_RESULT_TYP, &r), r)
    }

    fn expected(key: &[u8]) -> Expected<'_> {
        Expected {
            holder: "http://a",
            holder_key: key,
            gallery: "staff",
            shard: 1,
            shards: 4,
            nonce: "n",
            rev: 9,
            top_k: 5,
            per: 32,
        }
    }

    #[test]
    fn a_holders_result_checks_and_every_other_is_refused() {
        let key = VerdictKey::from_seed(&[7; 32]);
        let pk = key.public_key();
        let (jws, r) = result(&key);
        assert_eq!(check(&jws, &expected(&pk)), Ok(r.clone()));
        // Another key: a replica without the lease, or a forger.
        let other = VerdictKey::from_seed(&[8; 32]).public_key();
        assert!(matches!(
            check(&jws, &expected(&other)),
            Err(ResultError::Signature(_))
        ));
        // Another identification's nonce, shard or gallery.
        let mut e = expected(&pk);
        e.nonce = "m";
        assert_eq!(check(&jws, &e), Err(ResultError::Mismatch("nonce")));
        let mut e = expected(&pk);
        e.shard = 2;
        assert_eq!(check(&jws, &e), Err(ResultError::Mismatch("shard")));
        let mut e = expected(&pk);
        e.gallery = "other";
        assert_eq!(check(&jws, &e), Err(ResultError::Mismatch("gallery")));
        // A holder behind the gallery's latest write.
        let mut e = expected(&pk);
        e.rev = 10;
        assert_eq!(
            check(&jws, &e),
            Err(ResultError::Stale {
                found: 9,
                wanted: 10
            })
        );
        // More than asked for.
        let mut e = expected(&pk);
        e.top_k = 1;
        assert_eq!(check(&jws, &e), Err(ResultError::Matches));
        // A match of another shard's ciphertext (index 64: ciphertext 2).
        let mut bad = r.clone();
        bad.matches.push(Scored {
            index: 64,
            score: 1,
        });
        let jws = key.sign_typed(SHARD_RESULT_TYP, &bad);
        assert_eq!(check(&jws, &expected(&pk)), Err(ResultError::Matches));
        // A merged identification does not pass for a shard's result.
        let jws = key.sign_typed(SHARDED_IDENTIFICATION_TYP, &r);
        assert!(matches!(
            check(&jws, &expected(&pk)),
            Err(ResultError::Signature(CheckError::Type))
        ));
    }

    #[test]
    fn ranking_is_by_score_then_index() {
        let mut m = vec![
            Scored { index: 5, score: 1 },
            Scored { index: 3, score: 2 },
            Scored { index: 1, score: 2 },
            Scored {
                index: 0,
                score: -4,
            },
        ];
        rank(&mut m, 3);
        let order: Vec<u64> = m.iter().map(|s| s.index).collect();
        assert_eq!(order, [1, 3, 5]);
    }
}
