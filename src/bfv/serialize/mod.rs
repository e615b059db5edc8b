//! The wire format: one versioned binary layout for every object that crosses
//! the wire (keys, plaintexts, ciphertexts, and the matching layer's score
//! reply). `docs/FORMAT.md` is the specification; this module implements it.
//!
//! Every object starts with the same 16-byte header (magic, version, kind,
//! flags, parameter id). The rest of the layout is fixed by the parameters and
//! by a few small fields (ciphertext size and limb count, Galois key count), so
//! a decoder reads those, computes the exact total length, and compares it with
//! the input before it allocates anything: an oversized count or a truncated
//! input is refused without allocating. Residues are bit-packed at exactly
//! `bitlen(q_i)` bits and each is checked to be below its prime.
//!
//! Every kind implements [`WireObject`]: the BFV kinds in [`objects`], the
//! score reply beside its type in the matching layer, from the crate-private
//! parts here ([`start`], [`Reader`]). Each type's public `to_bytes` /
//! `from_bytes` methods call its implementation.

mod objects;

use super::params::Params;
use super::poly::{Ntt, RnsPoly};
use crate::error::FormatError;
use crate::ntt::NttPlan;

/// The first four bytes of every serialized object.
pub const FORMAT_MAGIC: [u8; 4] = *b"BMAT";
/// The format version written by this build (and the only one it reads).
pub const FORMAT_VERSION: u16 = 1;
/// Length of the common header.
pub const HEADER_LEN: usize = 16;
/// Length of a seed that replaces a uniform polynomial.
const SEED_LEN: usize = 32;
/// Flag bit 0: uniform parts are given by seeds.
const FLAG_SEEDED: u8 = 1;

/// The kind byte of the header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum ObjectKind {
    /// [`SecretKey`](super::SecretKey).
    SecretKey = 1,
    /// [`PublicKey`](super::PublicKey).
    PublicKey = 2,
    /// [`RelinKey`](super::RelinKey).
    RelinKey = 3,
    /// [`GaloisKeys`](super::GaloisKeys).
    GaloisKeys = 4,
    /// [`Plaintext`](super::Plaintext).
    Plaintext = 5,
    /// [`Ciphertext`](super::Ciphertext).
    Ciphertext = 6,
    /// The compact 1:1 score reply of the matching layer (`ScoreReply`).
    ScoreReply = 7,
}

impl ObjectKind {
    /// The kind for a header byte.
    pub fn from_byte(b: u8) -> Option<Self> {
        Some(match b {
            1 => Self::SecretKey,
            2 => Self::PublicKey,
            3 => Self::RelinKey,
            4 => Self::GaloisKeys,
            5 => Self::Plaintext,
            6 => Self::Ciphertext,
            7 => Self::ScoreReply,
            _ => return None,
        })
    }

    /// Reads the magic, version and kind of a serialized object, so that a
    /// receiver can dispatch on it. Checks nothing else; an unknown kind byte
    /// is `WrongKind { expected: 0, .. }`.
    pub fn of(bytes: &[u8]) -> Result<Self, FormatError> {
        let mut r = Reader::new(bytes);
        let kind = r.magic_version()?;
        Self::from_byte(kind).ok_or(FormatError::WrongKind {
            expected: 0,
            found: kind,
        })
    }
}

/// An object with a wire form (docs/FORMAT.md): what code that handles
/// every kind alike (the wasm facade's `toBytes` / `fromBytes`) needs.
/// Each implementing type's public methods of the same names call these.
pub(crate) trait WireObject: Sized {
    /// The header's kind byte.
    const KIND: ObjectKind;

    /// The wire form (the seeded one where the object keeps its seeds).
    fn to_bytes(&self) -> Vec<u8>;

    /// The length of the largest valid object of this kind for `params`
    /// (unseeded, at its largest size and count): a longer input is invalid
    /// before it is read.
    fn max_len(params: &Params) -> u64;

    /// Reads a wire form, checking every field before use; bad bytes are a
    /// typed error.
    fn from_bytes(params: &Params, bytes: &[u8]) -> Result<Self, FormatError>;

    /// Reads bytes received from another party. As [`Self::from_bytes`],
    /// which already checks everything a kind can get wrong, except for
    /// ciphertexts, which here also refuse the transparent ones.
    fn from_bytes_untrusted(params: &Params, bytes: &[u8]) -> Result<Self, FormatError> {
        Self::from_bytes(params, bytes)
    }
}

/// Refuses the seeded flag on a kind that has no seeded form.
pub(crate) fn no_seed(seeded: bool, what: &'static str) -> Result<(), FormatError> {
    if seeded {
        Err(FormatError::SeededNotAllowed { what })
    } else {
        Ok(())
    }
}

/// Bits per residue of a prime (or of t): its bit length.
pub(crate) fn bit_len(q: u32) -> u32 {
    32 - q.leading_zeros()
}

/// Bytes of one packed limb of `n` residues mod `q`. `n` is a power of two of
/// at least 1024, so `n · bits` is a multiple of 8: no padding ever occurs.
fn limb_bytes(n: usize, q: u32) -> u64 {
    debug_assert_eq!(n * bit_len(q) as usize % 8, 0);
    n as u64 * bit_len(q) as u64 / 8
}

/// Bytes of one packed polynomial over `plans`.
pub(crate) fn poly_bytes(plans: &[NttPlan]) -> u64 {
    plans
        .iter()
        .map(|p| limb_bytes(p.degree(), p.modulus().value()))
        .sum()
}

/// Bytes of a key switching key (one digit per ciphertext prime, each part
/// over Q·P; `k1` parts as seeds when `seeded`).
pub(crate) fn ksw_bytes(params: &Params, seeded: bool) -> u64 {
    let poly = poly_bytes(params.plans_qp());
    let k1 = if seeded { SEED_LEN as u64 } else { poly };
    params.limbs() as u64 * (poly + k1)
}

/// The header, written into a buffer of exactly `total` bytes' capacity (so
/// that the buffer never reallocates and leaves no stray copies).
pub(crate) fn start(kind: ObjectKind, seeded: bool, params: &Params, total: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(total as usize);
    out.extend_from_slice(&FORMAT_MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.push(kind as u8);
    out.push(if seeded { FLAG_SEEDED } else { 0 });
    out.extend_from_slice(&params.id());
    out
}

/// Packs each limb of `poly` at `bitlen(q_i)` bits per residue, LSB first.
pub(crate) fn write_poly(out: &mut Vec<u8>, poly: &RnsPoly<Ntt>, plans: &[NttPlan]) {
    debug_assert_eq!(poly.limbs(), plans.len());
    for (i, plan) in plans.iter().enumerate() {
        pack(out, poly.limb(i), bit_len(plan.modulus().value()));
    }
}

/// Appends `vals` at `bits` bits each (`bits <= 30`), least significant bit
/// first, into whole bytes. Four bytes are written at a time.
pub(crate) fn pack(out: &mut Vec<u8>, vals: &[u32], bits: u32) {
    debug_assert!(bits <= 30);
    out.reserve((vals.len() as u64 * bits as u64).div_ceil(8) as usize);
    let mut acc: u64 = 0;
    let mut have = 0u32;
    for &v in vals {
        // have < 32 and bits <= 30: the accumulator never overflows.
        acc |= (v as u64) << have;
        have += bits;
        if have >= 32 {
            out.extend_from_slice(&(acc as u32).to_le_bytes());
            acc >>= 32;
            have -= 32;
        }
    }
    while have > 0 {
        out.push(acc as u8);
        acc >>= 8;
        have = have.saturating_sub(8);
    }
}

/// Unpacks `out.len()` values of `bits` bits from `src` (exactly
/// `out.len() · bits / 8` bytes). Returns the index of the first value that
/// is not below `bound`, if any, leaving the output complete either way.
/// Four bytes are read at a time while four remain.
pub(crate) fn unpack(src: &[u8], out: &mut [u32], bits: u32, bound: u32) -> Option<usize> {
    debug_assert_eq!(src.len() as u64 * 8, out.len() as u64 * bits as u64);
    debug_assert!(bits <= 30);
    let mask = (1u64 << bits) - 1;
    let mut acc: u64 = 0;
    let mut have = 0u32;
    let mut pos = 0;
    let mut bad = None;
    for (i, o) in out.iter_mut().enumerate() {
        if have < bits {
            // have < 30: four more bytes fit the accumulator.
            if let Some(word) = src.get(pos..pos + 4) {
                let word = u32::from_le_bytes(word.try_into().expect("four bytes"));
                acc |= (word as u64) << have;
                have += 32;
                pos += 4;
            } else {
                while have < bits {
                    // The length was checked by the caller; a short source
                    // reads zeros.
                    acc |= (*src.get(pos).unwrap_or(&0) as u64) << have;
                    have += 8;
                    pos += 1;
                }
            }
        }
        let v = (acc & mask) as u32;
        acc >>= bits;
        have -= bits;
        *o = v;
        if v >= bound && bad.is_none() {
            bad = Some(i);
        }
    }
    bad
}

/// A cursor over untrusted bytes; every read is bounds-checked.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, pos: 0 }
    }

    /// The next `k` bytes.
    pub(crate) fn take(&mut self, k: usize) -> Result<&'a [u8], FormatError> {
        let end = self.pos.checked_add(k).filter(|&e| e <= self.bytes.len());
        match end {
            Some(end) => {
                let s = &self.bytes[self.pos..end];
                self.pos = end;
                Ok(s)
            }
            None => Err(FormatError::Truncated {
                expected: self.pos as u64 + k as u64,
                actual: self.bytes.len() as u64,
            }),
        }
    }

    pub(crate) fn u8(&mut self) -> Result<u8, FormatError> {
        Ok(self.take(1)?[0])
    }

    pub(crate) fn u16(&mut self) -> Result<u16, FormatError> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    pub(crate) fn u32(&mut self) -> Result<u32, FormatError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub(crate) fn array<const K: usize>(&mut self) -> Result<[u8; K], FormatError> {
        let mut a = [0u8; K];
        a.copy_from_slice(self.take(K)?);
        Ok(a)
    }

    /// Checks magic and version; returns the kind byte.
    fn magic_version(&mut self) -> Result<u8, FormatError> {
        let magic = self.array::<4>()?;
        if magic != FORMAT_MAGIC {
            return Err(FormatError::BadMagic { found: magic });
        }
        let version = self.u16()?;
        if version != FORMAT_VERSION {
            return Err(FormatError::UnsupportedVersion {
                found: version,
                supported: FORMAT_VERSION,
            });
        }
        self.u8()
    }

    /// Reads and checks the header for `kind` and `params`; returns whether
    /// the seeded flag is set.
    pub(crate) fn header(
        &mut self,
        kind: ObjectKind,
        params: &Params,
    ) -> Result<bool, FormatError> {
        let found = self.magic_version()?;
        if found != kind as u8 {
            return Err(FormatError::WrongKind {
                expected: kind as u8,
                found,
            });
        }
        let flags = self.u8()?;
        if flags & !FLAG_SEEDED != 0 {
            return Err(FormatError::UnknownFlags { flags });
        }
        let id = self.array::<8>()?;
        if id != params.id() {
            return Err(FormatError::ParamsMismatch {
                expected: params.id_hex(),
                found: id.iter().map(|b| format!("{b:02x}")).collect(),
            });
        }
        Ok(flags & FLAG_SEEDED != 0)
    }

    /// Checks that the input is exactly `total` bytes long. Called before any
    /// allocation that depends on the input.
    pub(crate) fn expect_total(&self, total: u64) -> Result<(), FormatError> {
        let actual = self.bytes.len() as u64;
        match actual.cmp(&total) {
            std::cmp::Ordering::Less => Err(FormatError::Truncated {
                expected: total,
                actual,
            }),
            std::cmp::Ordering::Greater => Err(FormatError::TrailingBytes {
                expected: total,
                actual,
            }),
            std::cmp::Ordering::Equal => Ok(()),
        }
    }

    /// A 32-byte seed.
    pub(crate) fn seed(&mut self) -> Result<[u8; 32], FormatError> {
        self.array::<SEED_LEN>()
    }

    /// A packed polynomial over `plans`, every residue checked below its
    /// prime. The caller has checked the total length.
    pub(crate) fn poly(&mut self, plans: &[NttPlan]) -> Result<RnsPoly<Ntt>, FormatError> {
        let n = plans[0].degree();
        let mut data = vec![0u32; n * plans.len()];
        for (limb, (plan, out)) in plans.iter().zip(data.chunks_exact_mut(n)).enumerate() {
            let q = plan.modulus().value();
            let src = self.take(limb_bytes(n, q) as usize)?;
            if let Some(index) = unpack(src, out, bit_len(q), q) {
                return Err(FormatError::ResidueOutOfRange {
                    limb,
                    index,
                    value: out[index],
                    modulus: q,
                });
            }
        }
        Ok(RnsPoly::from_raw(data, n))
    }
}

#[cfg(test)]
mod packing_tests {
    use super::*;

    /// Appends `vals` at `bits` bits each (`bits <= 30`), least significant bit
    /// first, into whole bytes.
    fn pack_reference(out: &mut Vec<u8>, vals: &[u32], bits: u32) {
        let mut acc: u64 = 0;
        let mut have = 0u32;
        for &v in vals {
            acc |= (v as u64) << have;
            have += bits;
            while have >= 8 {
                out.push(acc as u8);
                acc >>= 8;
                have -= 8;
            }
        }
        if have > 0 {
            out.push(acc as u8);
        }
    }

    /// Unpacks `out.len()` values of `bits` bits from `src` (exactly
    /// `out.len() · bits / 8` bytes). Returns the index of the first value that
    /// is not below `bound`, if any, leaving the output complete either way.
    fn unpack_reference(src: &[u8], out: &mut [u32], bits: u32, bound: u32) -> Option<usize> {
        debug_assert_eq!(src.len() as u64 * 8, out.len() as u64 * bits as u64);
        let mask = (1u64 << bits) - 1;
        let mut acc: u64 = 0;
        let mut have = 0u32;
        let mut bytes = src.iter();
        let mut bad = None;
        for (i, o) in out.iter_mut().enumerate() {
            while have < bits {
                // The length was checked by the caller; a short source reads zeros.
                acc |= (*bytes.next().unwrap_or(&0) as u64) << have;
                have += 8;
            }
            let v = (acc & mask) as u32;
            acc >>= bits;
            have -= bits;
            *o = v;
            if v >= bound && bad.is_none() {
                bad = Some(i);
            }
        }
        bad
    }

    /// The word-at-a-time packing writes and reads exactly the bytes and
    /// values of the byte-at-a-time reference, for every width and for
    /// lengths that end mid-byte and mid-word.
    #[test]
    fn packing_matches_byte_at_a_time_reference() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for bits in 1..=30u32 {
            for len in (0..70).chain([4096]) {
                let vals: Vec<u32> = (0..len)
                    .map(|_| {
                        state ^= state << 13;
                        state ^= state >> 7;
                        state ^= state << 17;
                        (state as u32) & ((1u32 << bits) - 1)
                    })
                    .collect();
                let (mut got, mut want) = (vec![0xAB], vec![0xAB]);
                pack(&mut got, &vals, bits);
                pack_reference(&mut want, &vals, bits);
                assert_eq!(got, want, "pack bits {bits} len {len}");
                // Whole bytes only, as the format stores them.
                if (len as u64 * bits as u64).is_multiple_of(8) {
                    let bound = 1u32 << (bits - 1);
                    let (mut a, mut b) = (vec![0; len], vec![0; len]);
                    let ra = unpack(&got[1..], &mut a, bits, bound);
                    let rb = unpack_reference(&got[1..], &mut b, bits, bound);
                    assert_eq!(
                        (a.as_slice(), ra),
                        (vals.as_slice(), rb),
                        "unpack bits {bits} len {len}"
                    );
                }
            }
        }
    }
}
