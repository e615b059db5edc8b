//! The wire form of every BFV object ([`WireObject`] and the public methods
//! that call it). The byte layouts are specified in docs/FORMAT.md.

use std::collections::BTreeMap;

use zeroize::Zeroize;

use super::{
    bit_len, ksw_bytes, no_seed, pack, poly_bytes, start, unpack, write_poly, ObjectKind, Reader,
    WireObject, HEADER_LEN, SEED_LEN,
};
use crate::bfv::ciphertext::Ciphertext;
use crate::bfv::encrypt::expand_uniform;
use crate::bfv::galois::{GaloisKeys, RelinKey, MAX_GALOIS_KEYS};
use crate::bfv::keys::{PublicKey, SecretKey};
use crate::bfv::keyswitch::KswKey;
use crate::bfv::params::Params;
use crate::bfv::plaintext::Plaintext;
use crate::error::FormatError;

const HEADER: u64 = HEADER_LEN as u64;

impl SecretKey {
    /// Serializes the key for its owner's own storage: the ternary
    /// coefficients at 2 bits each (`0b00` = 0, `0b01` = 1, `0b11` = -1).
    ///
    /// The result is secret: zeroize it when done, and never send it to the
    /// server. The buffer is allocated at its final size, so no partial copy is
    /// left behind by a reallocation.
    pub fn to_bytes(&self) -> Vec<u8> {
        WireObject::to_bytes(self)
    }

    /// Loads a key written by [`SecretKey::to_bytes`] and re-derives its NTT
    /// form. Temporary buffers holding secret coefficients are zeroized.
    pub fn from_bytes(params: &Params, bytes: &[u8]) -> Result<Self, FormatError> {
        <Self as WireObject>::from_bytes(params, bytes)
    }
}

impl WireObject for SecretKey {
    const KIND: ObjectKind = ObjectKind::SecretKey;

    fn max_len(params: &Params) -> u64 {
        HEADER + params.degree() as u64 / 4
    }

    fn to_bytes(&self) -> Vec<u8> {
        let n = self.params.degree();
        let total = HEADER + n as u64 / 4;
        let mut out = start(Self::KIND, false, &self.params, total);
        for chunk in self.coeffs.chunks(4) {
            let mut b = 0u8;
            for (k, &c) in chunk.iter().enumerate() {
                b |= ((c as u8) & 3) << (2 * k);
            }
            out.push(b);
        }
        debug_assert_eq!(out.len() as u64, total);
        out
    }

    fn from_bytes(params: &Params, bytes: &[u8]) -> Result<Self, FormatError> {
        let mut r = Reader::new(bytes);
        no_seed(r.header(Self::KIND, params)?, "secret key")?;
        let n = params.degree();
        r.expect_total(HEADER + n as u64 / 4)?;
        let packed = r.take(n / 4)?;
        let mut coeffs = vec![0i8; n];
        // Branch-free decode: sign-extend the 2-bit code; 0b10 decodes to -2
        // and is flagged without branching on the secret.
        let mut bad = 0u8;
        for (out, &b) in coeffs.chunks_exact_mut(4).zip(packed) {
            for (k, c) in out.iter_mut().enumerate() {
                let code = (b >> (2 * k)) & 3;
                *c = ((code << 6) as i8) >> 6;
                bad |= (code == 2) as u8;
            }
        }
        if bad != 0 {
            let index = coeffs.iter().position(|&c| c == -2).unwrap_or(0);
            coeffs.zeroize();
            return Err(FormatError::InvalidSecretCoefficient { index });
        }
        Ok(SecretKey::from_coeffs(params, coeffs))
    }
}

impl PublicKey {
    /// Serializes the key: `p0`, then the 32-byte seed of `p1` (or `p1` in
    /// full for a key that has no seed).
    pub fn to_bytes(&self) -> Vec<u8> {
        WireObject::to_bytes(self)
    }

    /// Serializes the key with `p1` in full even when it has a seed.
    pub fn to_bytes_expanded(&self) -> Vec<u8> {
        self.encode(false)
    }

    fn encode(&self, seeded: bool) -> Vec<u8> {
        let plans = self.params.plans_q();
        let poly = poly_bytes(plans);
        let total = HEADER + poly + if seeded { SEED_LEN as u64 } else { poly };
        let mut out = start(Self::KIND, seeded, &self.params, total);
        write_poly(&mut out, &self.p0, plans);
        match self.seed {
            Some(seed) if seeded => out.extend_from_slice(&seed),
            _ => write_poly(&mut out, &self.p1, plans),
        }
        debug_assert_eq!(out.len() as u64, total);
        out
    }

    /// Loads a key written by [`PublicKey::to_bytes`] or
    /// [`PublicKey::to_bytes_expanded`]; a seeded `p1` is expanded.
    pub fn from_bytes(params: &Params, bytes: &[u8]) -> Result<Self, FormatError> {
        <Self as WireObject>::from_bytes(params, bytes)
    }
}

impl WireObject for PublicKey {
    const KIND: ObjectKind = ObjectKind::PublicKey;

    fn max_len(params: &Params) -> u64 {
        HEADER + 2 * poly_bytes(params.plans_q())
    }

    fn to_bytes(&self) -> Vec<u8> {
        self.encode(self.seed.is_some())
    }

    fn from_bytes(params: &Params, bytes: &[u8]) -> Result<Self, FormatError> {
        let mut r = Reader::new(bytes);
        let seeded = r.header(Self::KIND, params)?;
        let plans = params.plans_q();
        let poly = poly_bytes(plans);
        r.expect_total(HEADER + poly + if seeded { SEED_LEN as u64 } else { poly })?;
        let p0 = r.poly(plans)?;
        let (p1, seed) = if seeded {
            let seed = r.seed()?;
            (expand_uniform(seed, plans, params.degree()), Some(seed))
        } else {
            (r.poly(plans)?, None)
        };
        Ok(PublicKey {
            params: params.clone(),
            p0,
            p1,
            seed,
        })
    }
}

impl KswKey {
    /// Whether every `k1` part has its seed.
    fn seeded(&self) -> bool {
        !self.seeds.is_empty() && self.seeds.len() == self.k1.len()
    }

    fn write(&self, out: &mut Vec<u8>, params: &Params, seeded: bool) {
        let plans = params.plans_qp();
        for i in 0..self.k0.len() {
            write_poly(out, &self.k0[i], plans);
            if seeded {
                out.extend_from_slice(&self.seeds[i]);
            } else {
                write_poly(out, &self.k1[i], plans);
            }
        }
    }

    /// Reads one key; the caller has checked the total length.
    fn read(r: &mut Reader<'_>, params: &Params, seeded: bool) -> Result<Self, FormatError> {
        let plans = params.plans_qp();
        let l = params.limbs();
        let mut k0 = Vec::with_capacity(l);
        let mut k1 = Vec::with_capacity(l);
        let mut seeds = Vec::with_capacity(if seeded { l } else { 0 });
        for _ in 0..l {
            k0.push(r.poly(plans)?);
            if seeded {
                let seed = r.seed()?;
                k1.push(expand_uniform(seed, plans, params.degree()));
                seeds.push(seed);
            } else {
                k1.push(r.poly(plans)?);
            }
        }
        Ok(KswKey { k0, k1, seeds })
    }
}

impl RelinKey {
    /// Serializes the key: for each ciphertext prime, `k0` over Q·P and the
    /// seed of `k1`.
    pub fn to_bytes(&self) -> Vec<u8> {
        WireObject::to_bytes(self)
    }

    /// Serializes the key with every `k1` part in full.
    pub fn to_bytes_expanded(&self) -> Vec<u8> {
        self.encode(false)
    }

    fn encode(&self, seeded: bool) -> Vec<u8> {
        let total = HEADER + ksw_bytes(&self.params, seeded);
        let mut out = start(Self::KIND, seeded, &self.params, total);
        self.ksw.write(&mut out, &self.params, seeded);
        debug_assert_eq!(out.len() as u64, total);
        out
    }

    /// Loads a key written by [`RelinKey::to_bytes`] or
    /// [`RelinKey::to_bytes_expanded`]; seeded parts are expanded.
    pub fn from_bytes(params: &Params, bytes: &[u8]) -> Result<Self, FormatError> {
        <Self as WireObject>::from_bytes(params, bytes)
    }
}

impl WireObject for RelinKey {
    const KIND: ObjectKind = ObjectKind::RelinKey;

    fn max_len(params: &Params) -> u64 {
        HEADER + ksw_bytes(params, false)
    }

    fn to_bytes(&self) -> Vec<u8> {
        self.encode(self.ksw.seeded())
    }

    fn from_bytes(params: &Params, bytes: &[u8]) -> Result<Self, FormatError> {
        let mut r = Reader::new(bytes);
        let seeded = r.header(Self::KIND, params)?;
        r.expect_total(HEADER + ksw_bytes(params, seeded))?;
        Ok(RelinKey {
            params: params.clone(),
            ksw: KswKey::read(&mut r, params, seeded)?,
        })
    }
}

impl GaloisKeys {
    /// Serializes the keys: their count (u32), then for each Galois element
    /// in increasing order the element (u32) and its key switching key.
    pub fn to_bytes(&self) -> Vec<u8> {
        WireObject::to_bytes(self)
    }

    /// Serializes the keys with every `k1` part in full.
    pub fn to_bytes_expanded(&self) -> Vec<u8> {
        self.encode(false)
    }

    fn encode(&self, seeded: bool) -> Vec<u8> {
        let per_key = 4 + ksw_bytes(&self.params, seeded);
        let total = HEADER + 4 + self.keys.len() as u64 * per_key;
        let mut out = start(Self::KIND, seeded, &self.params, total);
        out.extend_from_slice(&(self.keys.len() as u32).to_le_bytes());
        for (&g, key) in &self.keys {
            out.extend_from_slice(&g.to_le_bytes());
            key.write(&mut out, &self.params, seeded);
        }
        debug_assert_eq!(out.len() as u64, total);
        out
    }

    /// Loads keys written by [`GaloisKeys::to_bytes`] or
    /// [`GaloisKeys::to_bytes_expanded`]. Elements must be odd, below 2n,
    /// not 1, and strictly increasing; the count must not exceed
    /// [`MAX_GALOIS_KEYS`] (nor n - 1, the number of such elements), checked
    /// before anything is allocated, and must match the input length. An empty set
    /// must not carry the seeded flag.
    pub fn from_bytes(params: &Params, bytes: &[u8]) -> Result<Self, FormatError> {
        <Self as WireObject>::from_bytes(params, bytes)
    }
}

/// The most keys a Galois key set may hold for `params`: n - 1 (every
/// element) or [`MAX_GALOIS_KEYS`], whichever is smaller.
fn max_galois_keys(params: &Params) -> u64 {
    (params.degree() as u64 - 1).min(MAX_GALOIS_KEYS as u64)
}

impl WireObject for GaloisKeys {
    const KIND: ObjectKind = ObjectKind::GaloisKeys;

    fn max_len(params: &Params) -> u64 {
        HEADER + 4 + max_galois_keys(params) * (4 + ksw_bytes(params, false))
    }

    fn to_bytes(&self) -> Vec<u8> {
        self.encode(!self.keys.is_empty() && self.keys.values().all(KswKey::seeded))
    }

    fn from_bytes(params: &Params, bytes: &[u8]) -> Result<Self, FormatError> {
        let mut r = Reader::new(bytes);
        let seeded = r.header(Self::KIND, params)?;
        let n = params.degree();
        let count = r.u32()? as u64;
        let max = max_galois_keys(params);
        if count > max {
            return Err(FormatError::CountOutOfRange {
                what: "Galois keys",
                count,
                max,
            });
        }
        if seeded && count == 0 {
            // An empty set is written unseeded: one encoding per object.
            return Err(FormatError::SeededNotAllowed {
                what: "empty Galois key set",
            });
        }
        // count <= MAX_GALOIS_KEYS and a key is below 2^40 bytes: no overflow.
        r.expect_total(HEADER + 4 + count * (4 + ksw_bytes(params, seeded)))?;
        let mut keys = BTreeMap::new();
        let mut prev = 1u32;
        for index in 0..count as usize {
            let element = r.u32()?;
            let reason = if element % 2 == 0 {
                Some("must be odd")
            } else if element as u64 >= 2 * n as u64 {
                Some("must be below 2n")
            } else if element == 1 {
                Some("the identity has no key")
            } else if element <= prev {
                Some("elements must be strictly increasing")
            } else {
                None
            };
            if let Some(reason) = reason {
                return Err(FormatError::GaloisElement {
                    index,
                    element,
                    reason,
                });
            }
            prev = element;
            keys.insert(element, KswKey::read(&mut r, params, seeded)?);
        }
        Ok(GaloisKeys {
            params: params.clone(),
            keys,
        })
    }
}

impl Plaintext {
    /// Serializes the plaintext: n coefficients at `bitlen(t)` bits each.
    pub fn to_bytes(&self) -> Vec<u8> {
        WireObject::to_bytes(self)
    }

    /// Loads a plaintext written by [`Plaintext::to_bytes`]; every
    /// coefficient must be below t.
    pub fn from_bytes(params: &Params, bytes: &[u8]) -> Result<Self, FormatError> {
        <Self as WireObject>::from_bytes(params, bytes)
    }
}

impl WireObject for Plaintext {
    const KIND: ObjectKind = ObjectKind::Plaintext;

    fn max_len(params: &Params) -> u64 {
        HEADER + params.degree() as u64 * bit_len(params.plaintext_modulus()) as u64 / 8
    }

    fn to_bytes(&self) -> Vec<u8> {
        let params = self.params();
        let bits = bit_len(params.plaintext_modulus());
        let total = HEADER + params.degree() as u64 * bits as u64 / 8;
        let mut out = start(Self::KIND, false, params, total);
        pack(&mut out, self.coeffs(), bits);
        debug_assert_eq!(out.len() as u64, total);
        out
    }

    fn from_bytes(params: &Params, bytes: &[u8]) -> Result<Self, FormatError> {
        let mut r = Reader::new(bytes);
        no_seed(r.header(Self::KIND, params)?, "plaintext")?;
        let n = params.degree();
        let t = params.plaintext_modulus();
        let bits = bit_len(t);
        let body = n as u64 * bits as u64 / 8;
        r.expect_total(HEADER + body)?;
        let src = r.take(body as usize)?;
        let mut coeffs = vec![0u32; n];
        if let Some(index) = unpack(src, &mut coeffs, bits, t) {
            return Err(FormatError::CoefficientOutOfRange {
                index,
                value: coeffs[index],
                t,
            });
        }
        Ok(Plaintext::from_reduced(params, coeffs))
    }
}

impl Ciphertext {
    /// Serializes the ciphertext: size (u8), limb count (u8), `c0`, then the
    /// 32-byte seed of `c1` for a fresh secret-key encryption
    /// ([`Ciphertext::is_seeded`]), or `c1` (and `c2`) in full.
    pub fn to_bytes(&self) -> Vec<u8> {
        WireObject::to_bytes(self)
    }

    /// Serializes the ciphertext with every polynomial in full.
    pub fn to_bytes_expanded(&self) -> Vec<u8> {
        self.encode(false)
    }

    fn encode(&self, seeded: bool) -> Vec<u8> {
        let plans = &self.params.plans_q()[..self.level()];
        let total = ct_total(plans, self.size(), seeded);
        let mut out = start(Self::KIND, seeded, &self.params, total);
        out.push(self.size() as u8);
        out.push(self.level() as u8);
        write_poly(&mut out, &self.polys[0], plans);
        match self.seed {
            Some(seed) if seeded => out.extend_from_slice(&seed),
            _ => {
                for p in &self.polys[1..] {
                    write_poly(&mut out, p, plans);
                }
            }
        }
        debug_assert_eq!(out.len() as u64, total);
        out
    }

    /// Loads a ciphertext written by [`Ciphertext::to_bytes`] or
    /// [`Ciphertext::to_bytes_expanded`]. A seeded `c1` is expanded and the
    /// result equals the ciphertext that was written (seed included).
    ///
    /// Accepts transparent ciphertexts; a server reading client input uses
    /// [`Ciphertext::from_bytes_untrusted`].
    pub fn from_bytes(params: &Params, bytes: &[u8]) -> Result<Self, FormatError> {
        <Self as WireObject>::from_bytes(params, bytes)
    }

    /// As [`Ciphertext::from_bytes`], and also refuses a transparent
    /// ciphertext (every polynomial past `c0` zero), which anyone can decrypt
    /// and which would expose the plaintext it is combined with. Use this for
    /// every ciphertext received from a client.
    pub fn from_bytes_untrusted(params: &Params, bytes: &[u8]) -> Result<Self, FormatError> {
        <Self as WireObject>::from_bytes_untrusted(params, bytes)
    }
}

impl WireObject for Ciphertext {
    const KIND: ObjectKind = ObjectKind::Ciphertext;

    fn max_len(params: &Params) -> u64 {
        ct_total(params.plans_q(), 3, false)
    }

    fn to_bytes(&self) -> Vec<u8> {
        self.encode(self.seed.is_some())
    }

    fn from_bytes(params: &Params, bytes: &[u8]) -> Result<Self, FormatError> {
        let mut r = Reader::new(bytes);
        let seeded = r.header(Self::KIND, params)?;
        let size = r.u8()?;
        if !(2..=3).contains(&size) {
            return Err(FormatError::CiphertextSize { found: size });
        }
        let limbs = r.u8()?;
        if limbs == 0 || limbs as usize > params.limbs() {
            return Err(FormatError::LimbCount {
                found: limbs,
                max: params.limbs(),
            });
        }
        if seeded && size != 2 {
            return Err(FormatError::SeededNotAllowed {
                what: "size-3 ciphertext",
            });
        }
        let plans = &params.plans_q()[..limbs as usize];
        r.expect_total(ct_total(plans, size as usize, seeded))?;
        let mut polys = Vec::with_capacity(size as usize);
        polys.push(r.poly(plans)?);
        if seeded {
            let seed = r.seed()?;
            let c1 = expand_uniform(seed, plans, params.degree());
            return Ok(Ciphertext::new_seeded(params, polys.remove(0), c1, seed));
        }
        for _ in 1..size {
            polys.push(r.poly(plans)?);
        }
        Ok(Ciphertext::new(params, polys))
    }

    fn from_bytes_untrusted(params: &Params, bytes: &[u8]) -> Result<Self, FormatError> {
        let ct = <Self as WireObject>::from_bytes(params, bytes)?;
        if ct.is_transparent() {
            return Err(FormatError::TransparentCiphertext);
        }
        Ok(ct)
    }
}

/// Total bytes of a ciphertext of `size` polynomials over `plans`.
fn ct_total(plans: &[crate::ntt::NttPlan], size: usize, seeded: bool) -> u64 {
    let poly = poly_bytes(plans);
    let rest = if seeded {
        SEED_LEN as u64
    } else {
        (size as u64 - 1) * poly
    };
    HEADER + 2 + poly + rest
}
