//! The seeded known-answer bytes at auth4096: lengths and FNV-1a 64 hashes
//! of the objects that the draws of `Prng::from_seed([42; 32])` give (secret
//! key, public key, relinearization key, then a plaintext of coefficients
//! `(i² + 3) mod t` encrypted under the secret key and under the public
//! key). One table for the native, aarch64 and wasm32 runs of
//! `serialize.rs` and for the JavaScript facade's test
//! (`tests/wasm_api_node.rs`), which loads this file by path.

/// FNV-1a 64: a small hash that is identical on every target.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// `(object, length in bytes, FNV-1a 64 of the bytes)`, in draw order.
pub const SEEDED_OBJECTS: [(&str, usize, u64); 6] = [
    ("secret key", 1040, 0x0d4e1c4a7bf9fba5),
    ("public key", 44592, 0x29b24a3a4dea70df),
    ("relin key", 167536, 0x08b2ce6a836c229c),
    ("plaintext", 8720, 0x07a2b8684d7ef329),
    ("secret-key ciphertext", 44594, 0xc691f9723ef0e873),
    ("public-key ciphertext", 89106, 0x45287f8e36da8fd0),
];
