//! Shared driver of the fuzz targets: one target per loader, all with the
//! auth4096 parameters.
//!
//! Raw fuzz input rarely gets past the magic, and a valid body is tens of
//! kilobytes, far over libFuzzer's default input size. So each input is tried
//! three ways: as given; behind a valid header (kind and parameter id right,
//! flags from the first input byte); and, when that is refused only for its
//! length, once more cut or cycled to exactly the length the decoder asked
//! for, which reaches the residue checks and the seed expansion.
//!
//! Every object target is [`round_trip`] over one [`Wire`] type; the
//! targets of the login-mode containers (`bundle`, `check_replies`,
//! `reply_list`) build their input from valid objects ([`lists`]).

use std::sync::OnceLock;

pub mod lists;

use blindmatch::bfv::{
    Ciphertext, GaloisKeys, ObjectKind, Params, Plaintext, PublicKey, RelinKey, SecretKey,
    FORMAT_MAGIC, FORMAT_VERSION,
};
use blindmatch::error::FormatError;
use blindmatch::matching::ScoreReply;

/// A type with a loader to fuzz: its kind byte and its public `from_bytes`
/// / `to_bytes`.
pub trait Wire: Sized {
    /// The header's kind byte.
    const KIND: ObjectKind;
    /// The type's `from_bytes`.
    fn load(params: &Params, bytes: &[u8]) -> Result<Self, FormatError>;
    /// The type's `to_bytes`.
    fn store(&self) -> Vec<u8>;
}

macro_rules! wire {
    ($($ty:ident),* $(,)?) => {
        $(impl Wire for $ty {
            const KIND: ObjectKind = ObjectKind::$ty;
            fn load(params: &Params, bytes: &[u8]) -> Result<Self, FormatError> {
                $ty::from_bytes(params, bytes)
            }
            fn store(&self) -> Vec<u8> {
                self.to_bytes()
            }
        })*
    };
}

wire!(SecretKey, PublicKey, RelinKey, GaloisKeys, Plaintext, Ciphertext, ScoreReply);

/// Fuzzes `T`'s loader through [`drive`]: whatever loads re-encodes to the
/// same bytes, and `check` sees each input that loaded with its object, for
/// what a target checks beyond that.
pub fn round_trip<T: Wire>(data: &[u8], check: impl Fn(&[u8], &T)) {
    drive(T::KIND, data, |bytes| {
        let x = T::load(params(), bytes)?;
        assert_eq!(x.store(), bytes);
        check(bytes, &x);
        Ok(())
    });
}

/// The auth4096 parameters, built once.
pub fn params() -> &'static Params {
    static P: OnceLock<Params> = OnceLock::new();
    P.get_or_init(Params::auth4096)
}

/// Largest exact-length input the driver builds (a relinearization key is
/// about 164 KiB, a size-3 ciphertext about 131 KiB).
const MAX_EXACT: u64 = 1 << 20;

/// Runs `load` on `data` and on the header-fixed variants described above.
/// `load` returns the decoder's error, and checks whatever must hold on
/// success (re-encoding gives the same bytes).
pub fn drive(kind: ObjectKind, data: &[u8], load: impl Fn(&[u8]) -> Result<(), FormatError>) {
    let _ = load(data);
    let Some((&flags, body)) = data.split_first() else {
        return;
    };
    let mut bytes = FORMAT_MAGIC.to_vec();
    bytes.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    bytes.push(kind as u8);
    // Mostly the seeded bit alone; sometimes unknown bits too.
    bytes.push(if flags & 0x80 != 0 { flags } else { flags & 1 });
    bytes.extend_from_slice(&params().id());
    let header_len = bytes.len();
    bytes.extend_from_slice(body);
    let expected = match load(&bytes) {
        Err(FormatError::Truncated { expected, .. })
        | Err(FormatError::TrailingBytes { expected, .. }) => expected,
        _ => return,
    };
    if expected > MAX_EXACT || (expected as usize) < header_len {
        return;
    }
    let expected = expected as usize;
    if bytes.len() > expected {
        bytes.truncate(expected);
    } else {
        // Cycle the body (after the fields the decoder already read).
        let fill = if body.is_empty() { &[0u8][..] } else { body };
        let mut i = 0;
        while bytes.len() < expected {
            bytes.push(fill[i % fill.len()]);
            i += 1;
        }
    }
    let _ = load(&bytes);
}
