//! The wire forms of a bundle (what a client uploads: a packed ciphertext
//! and its one-hot ciphertexts) and of check replies (what the matcher sends
//! the decider), in the list framing of docs/FORMAT.md ("Lists"): a `u32`
//! LE count, then each item as a `u32` LE length and its bytes.

use crate::bfv::{Ciphertext, Params};
use crate::error::FormatError;

use super::{CheckReplies, ScoreReply};

/// Most items a list may hold: a template of 32 samples at d = 512 (3
/// one-hot ciphertexts each) and its packed ciphertext, or its check
/// replies.
pub const MAX_ITEMS: usize = 1 + 32 * 3 + 3 + 32;

/// Frames `items` as a list.
pub fn frame<'a>(items: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    let items: Vec<&[u8]> = items.into_iter().collect();
    let total = 4 + items.iter().map(|i| 4 + i.len()).sum::<usize>();
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(&(items.len() as u32).to_le_bytes());
    for item in items {
        out.extend_from_slice(&(item.len() as u32).to_le_bytes());
        out.extend_from_slice(item);
    }
    out
}

/// The items of a list: at most [`MAX_ITEMS`], every length within the
/// input, nothing after the last.
pub fn split(bytes: &[u8]) -> Result<Vec<&[u8]>, FormatError> {
    let truncated = |expected: usize| FormatError::Truncated {
        expected: expected as u64,
        actual: bytes.len() as u64,
    };
    let word = |at: usize| -> Result<usize, FormatError> {
        let b = bytes.get(at..at + 4).ok_or_else(|| truncated(at + 4))?;
        Ok(u32::from_le_bytes(b.try_into().expect("4 bytes")) as usize)
    };
    if bytes.starts_with(&crate::bfv::FORMAT_MAGIC) {
        return Err(FormatError::NotAList);
    }
    let count = word(0)?;
    if count > MAX_ITEMS {
        return Err(FormatError::CountOutOfRange {
            what: "list items",
            count: count as u64,
            max: MAX_ITEMS as u64,
        });
    }
    let mut items = Vec::with_capacity(count);
    let mut at = 4;
    for _ in 0..count {
        let len = word(at)?;
        let end = (at + 4)
            .checked_add(len)
            .ok_or_else(|| truncated(usize::MAX))?;
        items.push(bytes.get(at + 4..end).ok_or_else(|| truncated(end))?);
        at = end;
    }
    if at != bytes.len() {
        return Err(FormatError::TrailingBytes {
            expected: at as u64,
            actual: bytes.len() as u64,
        });
    }
    Ok(items)
}

/// A packed ciphertext (a probe or a template) with the one-hot ciphertexts
/// of its samples, as a client uploads them in login mode.
#[derive(Clone, Debug, PartialEq)]
pub struct Bundle {
    pub packed: Ciphertext,
    pub one_hot: Vec<Ciphertext>,
}

impl Bundle {
    /// The list of the packed ciphertext, then the one-hot ones in sample
    /// order.
    pub fn to_bytes(&self) -> Vec<u8> {
        let all: Vec<Vec<u8>> = std::iter::once(&self.packed)
            .chain(&self.one_hot)
            .map(|c| c.to_bytes())
            .collect();
        frame(all.iter().map(|b| b.as_slice()))
    }

    /// Reads a bundle from a client: every item a ciphertext parsed as
    /// untrusted input (transparent ones refused), at least one one-hot.
    pub fn from_bytes_untrusted(params: &Params, bytes: &[u8]) -> Result<Self, FormatError> {
        let items = split(bytes)?;
        if items.len() < 2 {
            return Err(FormatError::CountOutOfRange {
                what: "bundle items (a packed ciphertext and at least one one-hot)",
                count: items.len() as u64,
                max: MAX_ITEMS as u64,
            });
        }
        let mut cts = items
            .iter()
            .map(|b| Ciphertext::from_bytes_untrusted(params, b))
            .collect::<Result<Vec<_>, _>>()?;
        let packed = cts.remove(0);
        Ok(Self {
            packed,
            one_hot: cts,
        })
    }
}

impl CheckReplies {
    /// The items, bits replies then sums then norms (a list's items, to be
    /// framed alone or after other items).
    pub fn items(&self) -> Vec<Vec<u8>> {
        self.bits
            .iter()
            .map(|c| c.to_bytes())
            .chain(self.sums.iter().chain(&self.norms).map(|r| r.to_bytes()))
            .collect()
    }

    /// The replies of `samples` samples with `per` one-hot ciphertexts each,
    /// from list items.
    pub fn from_items(
        params: &Params,
        items: &[&[u8]],
        samples: usize,
        per: usize,
    ) -> Result<Self, FormatError> {
        let bits = samples * per;
        let expected = bits + super::SUM_CHECKS + samples;
        if items.len() != expected || samples == 0 {
            return Err(FormatError::CountOutOfRange {
                what: "check replies",
                count: items.len() as u64,
                max: expected as u64,
            });
        }
        let replies = |range: std::ops::Range<usize>| {
            items[range]
                .iter()
                .map(|b| ScoreReply::from_bytes(params, b))
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(Self {
            bits: items[..bits]
                .iter()
                .map(|b| Ciphertext::from_bytes(params, b))
                .collect::<Result<_, _>>()?,
            sums: replies(bits..bits + super::SUM_CHECKS)?,
            norms: replies(bits + super::SUM_CHECKS..expected)?,
        })
    }
}
