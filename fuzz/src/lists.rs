//! Structured inputs for the login-mode containers (docs/FORMAT.md, "Lists,
//! bundles and check replies" and "Score reply list").
//!
//! Their items are whole objects of tens of kilobytes, which a fuzzer does
//! not find from raw bytes. So the fuzz input is read as a recipe: how many
//! items, each one of the valid objects of [`pool`] (as is, with a few bytes
//! changed, cut or lengthened, or raw bytes from the input), its length field
//! true or off by a little, and bytes after the last item. The containers'
//! framing, counts and item kinds are then what the fuzzer varies.

use std::sync::OnceLock;

use blindmatch::bfv::{Prng, PublicKey, RelinKey, SecretKey};
use blindmatch::matching::client::encrypt_probe_bundle;
use blindmatch::matching::wellformed::{Checker, Packed};
use blindmatch::matching::Quantizer;

use crate::params;

/// The embedding dimension of the pool's objects.
pub const DIM: usize = 128;

/// Valid encodings: a probe's packed ciphertext, its one-hot ciphertext, a
/// bits reply (a ciphertext), and a sum and a norm reply (score replies),
/// all under one key.
pub fn pool() -> &'static [Vec<u8>] {
    static POOL: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    POOL.get_or_init(|| {
        let params = params();
        let mut rng = Prng::from_seed([7; 32]);
        let sk = SecretKey::generate_with(params, &mut rng);
        let pk = PublicKey::new_with(&sk, &mut rng);
        let rk = RelinKey::new_with(&sk, &mut rng);
        let q = Quantizer::new(params, DIM).expect("auth4096 takes d = 128");
        let embedding: Vec<f32> = (0..DIM).map(|i| (i as f32 * 0.37).sin()).collect();
        let bundle = encrypt_probe_bundle(&pk, &q, &embedding, &mut rng).expect("a probe");
        let checks = Checker::new(params, DIM)
            .expect("a checker")
            .check_with(
                &bundle.packed,
                Packed::Probe,
                &bundle.one_hot,
                &pk,
                &rk,
                &mut rng,
            )
            .expect("check replies");
        let mut pool = vec![bundle.packed.to_bytes(), bundle.one_hot[0].to_bytes()];
        pool.extend(checks.items().into_iter().take(3));
        pool
    })
}

/// Reads the recipe's bytes in order; past the end, zeros.
pub struct Recipe<'a> {
    data: &'a [u8],
}

impl<'a> Recipe<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Self { data }
    }

    pub fn byte(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }

    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.byte(), self.byte()])
    }

    pub fn u64(&mut self) -> u64 {
        (0..8).fold(0, |v, i| v | (self.byte() as u64) << (8 * i))
    }

    /// The next `n` bytes (fewer at the end).
    pub fn take(&mut self, n: usize) -> &'a [u8] {
        let (head, rest) = self.data.split_at(n.min(self.data.len()));
        self.data = rest;
        head
    }

    /// Whatever is left.
    pub fn rest(&mut self) -> &'a [u8] {
        self.take(self.data.len())
    }
}

/// One item: its bytes, and how far its length field is from the truth.
pub struct Item {
    pub bytes: Vec<u8>,
    pub lie: i32,
}

/// A container's items from the recipe: a count (usually 0 to 15, sometimes
/// any `u32`), then per item a selector, then the trailing bytes. Returns
/// the count to write and the items (at most 40 of them).
pub fn items(r: &mut Recipe<'_>) -> (u32, Vec<Item>) {
    let c = r.byte();
    let count = if c & 0x80 != 0 {
        u32::from_le_bytes([r.byte(), r.byte(), r.byte(), r.byte()])
    } else {
        (c & 0x0f) as u32
    };
    let pool = pool();
    let mut out = Vec::new();
    for _ in 0..count.min(40) {
        let sel = r.byte();
        let mut bytes = pool[r.byte() as usize % pool.len()].clone();
        match sel & 0x03 {
            0 => {}
            1 => {
                // Up to four bytes changed.
                for _ in 0..=(sel >> 2 & 0x03) {
                    let at = r.u16() as usize * bytes.len() / 0x1_0000;
                    bytes[at] ^= r.byte().max(1);
                }
            }
            2 => {
                // Cut or lengthened by up to 255 bytes.
                let by = r.byte() as usize;
                if sel & 0x04 != 0 {
                    bytes.truncate(bytes.len().saturating_sub(by));
                } else {
                    bytes.resize(bytes.len() + by, 0);
                }
            }
            _ => {
                let n = r.byte() as usize;
                bytes = r.take(n).to_vec();
            }
        }
        let lie = if sel & 0x30 == 0x30 {
            r.byte() as i8 as i32
        } else {
            0
        };
        out.push(Item { bytes, lie });
    }
    (count, out)
}

/// `count`, then each item behind its prefix and its length field, then
/// `trailing`.
fn write<'a>(
    count: u32,
    items: impl IntoIterator<Item = (&'a [u8], &'a Item)>,
    trailing: &[u8],
) -> Vec<u8> {
    let mut out = count.to_le_bytes().to_vec();
    for (prefix, item) in items {
        let len = (item.bytes.len() as i64 + item.lie as i64).clamp(0, u32::MAX as i64);
        out.extend_from_slice(prefix);
        out.extend_from_slice(&(len as u32).to_le_bytes());
        out.extend_from_slice(&item.bytes);
    }
    out.extend_from_slice(trailing);
    out
}

/// A list (docs/FORMAT.md, "Lists"): the count, each item behind its
/// length, then `trailing`.
pub fn list(count: u32, items: &[Item], trailing: &[u8]) -> Vec<u8> {
    write(count, items.iter().map(|i| (&[][..], i)), trailing)
}

/// A score reply list (docs/FORMAT.md, "Score reply list"): the count,
/// each item behind its candidates (u64 LE) and length, then `trailing`.
pub fn reply_list(count: u32, items: &[([u8; 8], Item)], trailing: &[u8]) -> Vec<u8> {
    write(count, items.iter().map(|(c, i)| (&c[..], i)), trailing)
}

/// The list the recipe in `data` describes, and the raw `data` itself: the
/// two inputs each list target tries.
pub fn list_inputs(data: &[u8]) -> [Vec<u8>; 2] {
    let mut r = Recipe::new(data);
    let (count, items) = items(&mut r);
    let trailing = if r.byte() & 1 == 1 { r.rest() } else { &[] };
    [list(count, &items, trailing), data.to_vec()]
}
