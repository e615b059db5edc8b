//! The body of an identification request (matcher to decider): one compact
//! score reply per gallery ciphertext, each with the templates of it that
//! take part (docs/FORMAT.md, "Score reply list").
//!
//! ```text
//! u32 LE  R                 replies, 0 ..= MAX_REPLIES (0: an empty gallery)
//! R times:
//!   u64 LE  candidates      bit k: template k of this ciphertext takes part
//!   u32 LE  L               length of the reply
//!   L bytes                 a score reply (kind 7)
//! ```
//!
//! Template `k` of reply `r` is the gallery's template `r · n/d + k`.

use crate::bfv::Params;
use crate::error::FormatError;
use crate::matching::ScoreReply;

/// Most replies in one identification: 4,096 gallery ciphertexts, 131,072
/// templates at d = 128 (about 68 MB of body).
pub const MAX_REPLIES: usize = 4096;

/// One gallery ciphertext's reply and which of its templates take part.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// Bit `k`: template `k` of the ciphertext is one (added, not erased).
    pub candidates: u64,
    pub reply: ScoreReply,
}

/// Why a reply list did not parse.
#[derive(Debug, thiserror::Error)]
pub enum RepliesError {
    #[error("a reply list holds at most {MAX_REPLIES} replies, this one {0}")]
    Count(u64),
    #[error("the reply list ends inside reply {0}")]
    Truncated(usize),
    #[error("{0} bytes after the last reply")]
    Trailing(usize),
    #[error("reply {index}: {source}")]
    Reply { index: usize, source: FormatError },
    #[error("reply {index} is for dimension {found}, not {expected}")]
    Dimension {
        index: usize,
        expected: usize,
        found: usize,
    },
}

/// The list's bytes.
pub fn to_bytes(replies: &[Candidate]) -> Vec<u8> {
    let encoded: Vec<Vec<u8>> = replies.iter().map(|c| c.reply.to_bytes()).collect();
    let total = 4 + encoded.iter().map(|b| 12 + b.len()).sum::<usize>();
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(&(replies.len() as u32).to_le_bytes());
    for (c, b) in replies.iter().zip(&encoded) {
        out.extend_from_slice(&c.candidates.to_le_bytes());
        out.extend_from_slice(&(b.len() as u32).to_le_bytes());
        out.extend_from_slice(b);
    }
    out
}

/// Reads [`to_bytes`]: every reply for `params` and dimension `dim`.
pub fn from_bytes(
    params: &Params,
    dim: usize,
    bytes: &[u8],
) -> Result<Vec<Candidate>, RepliesError> {
    let mut rest = bytes;
    let mut take =
        |n: usize, index: usize| split(&mut rest, n).ok_or(RepliesError::Truncated(index));
    let count = u32::from_le_bytes(take(4, 0)?.try_into().unwrap_or_default()) as usize;
    if count > MAX_REPLIES {
        return Err(RepliesError::Count(count as u64));
    }
    let mut out = Vec::with_capacity(count);
    for index in 0..count {
        let candidates = u64::from_le_bytes(take(8, index)?.try_into().unwrap_or_default());
        let len = u32::from_le_bytes(take(4, index)?.try_into().unwrap_or_default()) as usize;
        let reply = ScoreReply::from_bytes(params, take(len, index)?)
            .map_err(|source| RepliesError::Reply { index, source })?;
        if reply.dim() != dim {
            return Err(RepliesError::Dimension {
                index,
                expected: dim,
                found: reply.dim(),
            });
        }
        out.push(Candidate { candidates, reply });
    }
    if !rest.is_empty() {
        return Err(RepliesError::Trailing(rest.len()));
    }
    Ok(out)
}

/// The first `n` bytes of `rest`, which keeps what follows.
fn split<'a>(rest: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    if rest.len() < n {
        return None;
    }
    let (head, tail) = rest.split_at(n);
    *rest = tail;
    Some(head)
}

/// The largest list [`from_bytes`] reads for `params` (the decider's body
/// limit for identifications).
pub fn max_len(params: &Params) -> usize {
    let reply = crate::matching::max_len(crate::bfv::ObjectKind::ScoreReply, params) as usize;
    4 + MAX_REPLIES * (12 + reply)
}
