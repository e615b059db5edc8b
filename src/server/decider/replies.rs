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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bfv::{FORMAT_MAGIC, FORMAT_VERSION};
    use crate::error::FormatError;

    /// A score reply of dimension `d` with every value `fill`, written
    /// from docs/FORMAT.md (kind 7: any u32 is a valid value).
    fn reply(params: &Params, d: u16, fill: u8) -> Vec<u8> {
        let n = params.degree();
        let v = n / d as usize;
        let mut out = FORMAT_MAGIC.to_vec();
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        out.extend_from_slice(&[7, 0]);
        out.extend_from_slice(&params.id());
        out.extend_from_slice(&d.to_le_bytes());
        out.extend_from_slice(&(v as u16).to_le_bytes());
        out.resize(out.len() + 4 * (v + n), fill);
        out
    }

    /// A list of `items` (candidates, reply bytes), framed by hand.
    fn list(count: u32, items: &[(u64, &[u8])]) -> Vec<u8> {
        let mut out = count.to_le_bytes().to_vec();
        for (candidates, bytes) in items {
            out.extend_from_slice(&candidates.to_le_bytes());
            out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
            out.extend_from_slice(bytes);
        }
        out
    }

    #[test]
    fn a_reply_list_reads_back_and_refuses_every_misframing() {
        let params = Params::auth4096();
        let (a, b) = (reply(&params, 128, 1), reply(&params, 128, 0xfe));
        let bytes = list(2, &[(u64::MAX, &a), (0b101, &b)]);
        let read = from_bytes(&params, 128, &bytes).unwrap();
        assert_eq!(read.len(), 2);
        assert_eq!((read[0].candidates, read[1].candidates), (u64::MAX, 0b101));
        assert_eq!(to_bytes(&read), bytes);
        assert!(from_bytes(&params, 128, &list(0, &[])).unwrap().is_empty());

        let err = |bytes: &[u8]| from_bytes(&params, 128, bytes).unwrap_err();
        assert!(matches!(
            err(&list(MAX_REPLIES as u32 + 1, &[])),
            RepliesError::Count(4097)
        ));
        assert!(matches!(err(&[1, 0]), RepliesError::Truncated(0)));
        assert!(matches!(
            err(&bytes[..bytes.len() - 1]),
            RepliesError::Truncated(1)
        ));
        assert!(matches!(
            err(&list(3, &[(1, &a), (1, &b)])),
            RepliesError::Truncated(2)
        ));
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(matches!(err(&longer), RepliesError::Trailing(1)));
        assert!(matches!(
            err(&list(1, &[(1, &a), (1, &b)])),
            RepliesError::Trailing(_)
        ));
        assert!(matches!(
            err(&list(2, &[(1, &a), (1, &reply(&params, 64, 0))])),
            RepliesError::Dimension {
                index: 1,
                expected: 128,
                found: 64
            }
        ));
        let mut ciphertext = a.clone();
        ciphertext[6] = 6;
        assert!(matches!(
            err(&list(1, &[(1, &ciphertext)])),
            RepliesError::Reply {
                index: 0,
                source: FormatError::WrongKind {
                    expected: 7,
                    found: 6
                }
            }
        ));
    }
}
