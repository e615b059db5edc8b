//! The wire form of a [`ScoreReply`] (docs/FORMAT.md, kind 7), from the BFV
//! layer's header and reader.

use crate::bfv::serialize::{no_seed, start, Reader, WireObject};
use crate::bfv::{ObjectKind, Params, HEADER_LEN};
use crate::error::FormatError;

use super::reply::ScoreReply;
use super::DIMENSIONS;

/// Total bytes of a compact reply with `count` scores at degree `n`.
fn reply_len(n: usize, count: usize) -> u64 {
    HEADER_LEN as u64 + 4 + 4 * count as u64 + 4 * n as u64
}

impl ScoreReply {
    /// The wire form (docs/FORMAT.md, kind 7): the header, the dimension and
    /// score count (u16 each), then `c0` at the score positions and all of
    /// `c1`, as little-endian u32.
    pub fn to_bytes(&self) -> Vec<u8> {
        WireObject::to_bytes(self)
    }

    /// Reads [`Self::to_bytes`]. The dimension must be one the matching layer
    /// supports and the score count exactly n / dim; the length is checked
    /// before anything is allocated. Every u32 is a valid residue mod 2^32.
    pub fn from_bytes(params: &Params, bytes: &[u8]) -> Result<Self, FormatError> {
        <Self as WireObject>::from_bytes(params, bytes)
    }
}

/// The length in bytes of the largest valid object of `kind` for `params`
/// (unseeded, at its largest size or count; a score reply at the smallest
/// dimension): a receiver may refuse a longer input before reading it. Here
/// rather than on [`ObjectKind`] because the score reply is this layer's.
pub fn max_len(kind: ObjectKind, params: &Params) -> u64 {
    use crate::bfv::{Ciphertext, GaloisKeys, Plaintext, PublicKey, RelinKey, SecretKey};
    match kind {
        ObjectKind::SecretKey => SecretKey::max_len(params),
        ObjectKind::PublicKey => PublicKey::max_len(params),
        ObjectKind::RelinKey => RelinKey::max_len(params),
        ObjectKind::GaloisKeys => GaloisKeys::max_len(params),
        ObjectKind::Plaintext => Plaintext::max_len(params),
        ObjectKind::Ciphertext => Ciphertext::max_len(params),
        ObjectKind::ScoreReply => ScoreReply::max_len(params),
    }
}

impl WireObject for ScoreReply {
    const KIND: ObjectKind = ObjectKind::ScoreReply;

    fn max_len(params: &Params) -> u64 {
        // The most scores: the smallest dimension.
        let n = params.degree();
        reply_len(n, n / DIMENSIONS.iter().min().copied().unwrap_or(1))
    }

    fn to_bytes(&self) -> Vec<u8> {
        let n = self.params.degree();
        let total = reply_len(n, self.c0.len());
        let mut out = start(Self::KIND, false, &self.params, total);
        out.extend_from_slice(&(self.dim as u16).to_le_bytes());
        out.extend_from_slice(&(self.c0.len() as u16).to_le_bytes());
        for &x in self.c0.iter().chain(&self.c1) {
            out.extend_from_slice(&x.to_le_bytes());
        }
        debug_assert_eq!(out.len() as u64, total);
        out
    }

    fn from_bytes(params: &Params, bytes: &[u8]) -> Result<Self, FormatError> {
        let mut r = Reader::new(bytes);
        no_seed(r.header(Self::KIND, params)?, "score reply")?;
        let dim = r.u16()?;
        let count = r.u16()?;
        let n = params.degree();
        let fits = DIMENSIONS.contains(&(dim as usize))
            && n.is_multiple_of(dim as usize)
            && count as usize == n / dim as usize;
        if !fits {
            return Err(FormatError::ReplyShape { dim, count });
        }
        r.expect_total(reply_len(n, count as usize))?;
        let mut words = |k: usize| -> Result<Vec<u32>, FormatError> {
            let b = r.take(4 * k)?;
            Ok(b.chunks_exact(4)
                .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
                .collect())
        };
        let c0 = words(count as usize)?;
        let c1 = words(n)?;
        Ok(ScoreReply {
            params: params.clone(),
            dim: dim as usize,
            c0,
            c1,
        })
    }
}
