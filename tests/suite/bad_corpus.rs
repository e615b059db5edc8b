//! The bad-input corpus of `tests/data/bad/` (docs/FORMAT.md), replayed with
//! `include_bytes!` on every target: each file gives its typed error, and
//! every file fed to every loader gives an error, never a panic.
//!
//! The corpus is crafted from the documented layout by [`bad_corpus`] (with
//! its own bit packer, independent of the crate's). Regenerate it after a
//! format change with
//! `cargo test --test native -- --ignored write_bad_corpus`.
//!
//! Longer than the project's usual 600 lines on purpose: [`bad_corpus`] is
//! one case per documented refusal, written out in order so that it reads
//! against docs/FORMAT.md, and `COMMITTED` names every file of the corpus.

use blindmatch::bfv::{
    Ciphertext, GaloisKeys, Params, Plaintext, PublicKey, RelinKey, SecretKey, FORMAT_MAGIC,
    HEADER_LEN, MAX_GALOIS_KEYS,
};
use blindmatch::error::FormatError;
use blindmatch::matching::wellformed::Bundle;

use super::serialize::bit_len;

/// Which loader a corpus file is fed to.
#[derive(Clone, Copy, Debug)]
enum Loader {
    SecretKey,
    PublicKey,
    RelinKey,
    GaloisKeys,
    Plaintext,
    Ciphertext,
    CiphertextUntrusted,
    /// A page's bundle (docs/FORMAT.md, "Lists, bundles and check replies").
    Bundle,
}

fn load(params: &Params, loader: Loader, bytes: &[u8]) -> Result<(), FormatError> {
    match loader {
        Loader::SecretKey => SecretKey::from_bytes(params, bytes).map(drop),
        Loader::PublicKey => PublicKey::from_bytes(params, bytes).map(drop),
        Loader::RelinKey => RelinKey::from_bytes(params, bytes).map(drop),
        Loader::GaloisKeys => GaloisKeys::from_bytes(params, bytes).map(drop),
        Loader::Plaintext => Plaintext::from_bytes(params, bytes).map(drop),
        Loader::Ciphertext => Ciphertext::from_bytes(params, bytes).map(drop),
        Loader::CiphertextUntrusted => Ciphertext::from_bytes_untrusted(params, bytes).map(drop),
        Loader::Bundle => Bundle::from_bytes_untrusted(params, bytes).map(drop),
    }
}

struct BadCase {
    name: &'static str,
    loader: Loader,
    bytes: Vec<u8>,
    expected: FormatError,
}

/// LSB-first bit packing, written from docs/FORMAT.md (not the crate's).
fn pack_bits(vals: &[u32], bits: u32) -> Vec<u8> {
    let mut out = vec![0u8; (vals.len() * bits as usize).div_ceil(8)];
    for (i, &v) in vals.iter().enumerate() {
        for b in 0..bits as usize {
            let bit = i * bits as usize + b;
            out[bit / 8] |= (((v >> b) & 1) as u8) << (bit % 8);
        }
    }
    out
}

/// The bad-input corpus, crafted byte by byte from docs/FORMAT.md.
fn bad_corpus(params: &Params) -> Vec<BadCase> {
    const SK: u8 = 1;
    const PK: u8 = 2;
    const RK: u8 = 3;
    const GK: u8 = 4;
    const PT: u8 = 5;
    const CT: u8 = 6;
    let id = params.id();
    let n = params.degree();
    let q = params.ciphertext_primes();
    let p = params.special_prime();
    let header = |kind: u8, flags: u8| {
        let mut h = FORMAT_MAGIC.to_vec();
        h.extend_from_slice(&1u16.to_le_bytes());
        h.push(kind);
        h.push(flags);
        h.extend_from_slice(&id);
        h
    };
    let with = |mut h: Vec<u8>, tail: &[u8]| {
        h.extend_from_slice(tail);
        h
    };
    let poly_q: u64 = q
        .iter()
        .map(|&x| (n * bit_len(x) as usize / 8) as u64)
        .sum();
    let poly_qp = poly_q + (n * bit_len(p) as usize / 8) as u64;
    let hl = HEADER_LEN as u64;
    let other_n = Params::builder()
        .degree(2048)
        .plaintext_modulus(65537)
        .ciphertext_primes(&[blindmatch::arith::ntt_primes(25, 2048, 1).unwrap()[0] as u64])
        .special_prime(blindmatch::arith::ntt_primes(25, 2048, 2).unwrap()[1] as u64)
        .build()
        .unwrap();

    // A one-limb seeded ciphertext whose c0[5] = q_0.
    let mut c0 = vec![0u32; n];
    c0[5] = q[0];
    c0[6] = q[0] - 1;
    let ct_residue = with(with(header(CT, 1), &[2, 1]), &pack_bits(&c0, bit_len(q[0])));
    let ct_residue = with(ct_residue, &[0xA5; 32]);
    // A transparent one-limb ciphertext: c0 arbitrary, c1 = 0.
    let mut c0 = vec![0u32; n];
    c0[1] = 12345;
    c0[n - 1] = q[0] - 1;
    let mut transparent = with(with(header(CT, 0), &[2, 1]), &pack_bits(&c0, bit_len(q[0])));
    transparent.extend_from_slice(&pack_bits(&vec![0; n], bit_len(q[0])));
    // A plaintext with a coefficient equal to t.
    let t = params.plaintext_modulus();
    let mut m: Vec<u32> = (0..n as u32).map(|i| i % t).collect();
    m[3] = t;
    let pt_coeff = with(header(PT, 0), &pack_bits(&m, bit_len(t)));
    // A secret key with code 0b10 at index 9 (byte 2, bits 2..4).
    let mut sk_body = vec![0u8; n / 4];
    sk_body[0] = 0b1101_0100; // 0, 1, 1, -1: valid codes
    sk_body[2] = 0b10 << 2;
    let sk_code = with(header(SK, 0), &sk_body);
    let sk_trailing = with(header(SK, 0), &[vec![0u8; n / 4], vec![0]].concat());
    // A list: the item count, then each item behind its length (u32 LE).
    let list = |items: &[&[u8]]| {
        let mut out = (items.len() as u32).to_le_bytes().to_vec();
        for item in items {
            out.extend_from_slice(&(item.len() as u32).to_le_bytes());
            out.extend_from_slice(item);
        }
        out
    };
    // Most items a list holds: a template of 32 samples at d = 512 (3
    // one-hot ciphertexts each), its packed ciphertext, 3 sum replies and
    // 32 norm replies.
    let max_items = 1 + 32 * 3 + 3 + 32;
    let mut item_truncated = list(&[&[7; 10]]);
    item_truncated[4..8].copy_from_slice(&100u32.to_le_bytes());

    let case = |name, loader, bytes, expected| BadCase {
        name,
        loader,
        bytes,
        expected,
    };
    use FormatError as E;
    use Loader as L;
    let ct_seeded_total = hl + 2 + poly_q + 32;
    vec![
        case(
            "empty.bin",
            L::Ciphertext,
            vec![],
            E::Truncated {
                expected: 4,
                actual: 0,
            },
        ),
        case(
            "magic_short.bin",
            L::Ciphertext,
            b"BMA".to_vec(),
            E::Truncated {
                expected: 4,
                actual: 3,
            },
        ),
        case(
            "magic_wrong.bin",
            L::Ciphertext,
            with(b"BMAX".to_vec(), &header(CT, 0)[4..]),
            E::BadMagic { found: *b"BMAX" },
        ),
        case(
            "magic_other_format.bin",
            L::PublicKey,
            b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec(),
            E::BadMagic { found: *b"\x89PNG" },
        ),
        case(
            "version_2.bin",
            L::Ciphertext,
            {
                let mut h = header(CT, 0);
                h[4] = 2;
                h
            },
            E::UnsupportedVersion {
                found: 2,
                supported: 1,
            },
        ),
        case(
            "version_ffff.bin",
            L::SecretKey,
            {
                let mut h = header(SK, 0);
                h[4] = 0xff;
                h[5] = 0xff;
                h
            },
            E::UnsupportedVersion {
                found: 0xffff,
                supported: 1,
            },
        ),
        case(
            "kind_unknown.bin",
            L::Ciphertext,
            header(0x7f, 0),
            E::WrongKind {
                expected: CT,
                found: 0x7f,
            },
        ),
        case(
            "kind_plaintext_as_ciphertext.bin",
            L::Ciphertext,
            header(PT, 0),
            E::WrongKind {
                expected: CT,
                found: PT,
            },
        ),
        case(
            "kind_secret_key_as_public_key.bin",
            L::PublicKey,
            header(SK, 0),
            E::WrongKind {
                expected: PK,
                found: SK,
            },
        ),
        case(
            "flags_unknown.bin",
            L::Ciphertext,
            header(CT, 0x80),
            E::UnknownFlags { flags: 0x80 },
        ),
        case(
            "flags_unknown_and_seeded.bin",
            L::RelinKey,
            header(RK, 0x03),
            E::UnknownFlags { flags: 0x03 },
        ),
        case(
            "params_other_n.bin",
            L::Ciphertext,
            {
                let mut h = header(CT, 1);
                h[8..16].copy_from_slice(&other_n.id());
                h
            },
            E::ParamsMismatch {
                expected: params.id_hex(),
                found: other_n.id_hex(),
            },
        ),
        case(
            "params_zero_id.bin",
            L::GaloisKeys,
            {
                let mut h = header(GK, 1);
                h[8..16].fill(0);
                h
            },
            E::ParamsMismatch {
                expected: params.id_hex(),
                found: "0000000000000000".into(),
            },
        ),
        case(
            "header_truncated.bin",
            L::Ciphertext,
            header(CT, 0)[..15].to_vec(),
            E::Truncated {
                expected: 16,
                actual: 15,
            },
        ),
        case(
            "ct_fields_truncated.bin",
            L::Ciphertext,
            with(header(CT, 0), &[2]),
            E::Truncated {
                expected: 18,
                actual: 17,
            },
        ),
        case(
            "ct_body_truncated.bin",
            L::Ciphertext,
            with(header(CT, 1), &[[2, 3].as_slice(), &[0x5a; 100]].concat()),
            E::Truncated {
                expected: ct_seeded_total,
                actual: 118,
            },
        ),
        case(
            "sk_truncated.bin",
            L::SecretKey,
            with(header(SK, 0), &[0; 10]),
            E::Truncated {
                expected: hl + n as u64 / 4,
                actual: 26,
            },
        ),
        case(
            "pk_truncated.bin",
            L::PublicKey,
            with(header(PK, 1), &[0; 7]),
            E::Truncated {
                expected: hl + poly_q + 32,
                actual: 23,
            },
        ),
        case(
            "rk_truncated.bin",
            L::RelinKey,
            with(header(RK, 1), &[0; 7]),
            E::Truncated {
                expected: hl + 3 * (poly_qp + 32),
                actual: 23,
            },
        ),
        case(
            "rk_unseeded_truncated.bin",
            L::RelinKey,
            header(RK, 0),
            E::Truncated {
                expected: hl + 6 * poly_qp,
                actual: 16,
            },
        ),
        case(
            "pt_truncated.bin",
            L::Plaintext,
            with(header(PT, 0), &[1, 2, 3]),
            E::Truncated {
                expected: hl + n as u64 * 17 / 8,
                actual: 19,
            },
        ),
        case(
            "gk_count_truncated.bin",
            L::GaloisKeys,
            with(header(GK, 1), &[1, 0]),
            E::Truncated {
                expected: 20,
                actual: 18,
            },
        ),
        case(
            "gk_count_huge.bin",
            L::GaloisKeys,
            with(header(GK, 1), &u32::MAX.to_le_bytes()),
            E::CountOutOfRange {
                what: "Galois keys",
                count: u32::MAX as u64,
                max: MAX_GALOIS_KEYS as u64,
            },
        ),
        case(
            "gk_count_max_no_body.bin",
            L::GaloisKeys,
            with(header(GK, 1), &(MAX_GALOIS_KEYS as u32).to_le_bytes()),
            E::Truncated {
                expected: hl + 4 + MAX_GALOIS_KEYS as u64 * (4 + 3 * (poly_qp + 32)),
                actual: 20,
            },
        ),
        case(
            "ct_size_0.bin",
            L::Ciphertext,
            with(header(CT, 0), &[0, 3]),
            E::CiphertextSize { found: 0 },
        ),
        case(
            "ct_size_1.bin",
            L::Ciphertext,
            with(header(CT, 0), &[1, 3]),
            E::CiphertextSize { found: 1 },
        ),
        case(
            "ct_size_4.bin",
            L::Ciphertext,
            with(header(CT, 0), &[4, 3]),
            E::CiphertextSize { found: 4 },
        ),
        case(
            "ct_size_255.bin",
            L::Ciphertext,
            with(header(CT, 0), &[255, 3]),
            E::CiphertextSize { found: 255 },
        ),
        case(
            "ct_limbs_0.bin",
            L::Ciphertext,
            with(header(CT, 0), &[2, 0]),
            E::LimbCount { found: 0, max: 3 },
        ),
        case(
            "ct_limbs_4.bin",
            L::Ciphertext,
            with(header(CT, 0), &[2, 4]),
            E::LimbCount { found: 4, max: 3 },
        ),
        case(
            "ct_limbs_255.bin",
            L::CiphertextUntrusted,
            with(header(CT, 1), &[3, 255]),
            E::LimbCount { found: 255, max: 3 },
        ),
        case(
            "seeded_secret_key.bin",
            L::SecretKey,
            with(header(SK, 1), &[0; 4]),
            E::SeededNotAllowed { what: "secret key" },
        ),
        case(
            "seeded_plaintext.bin",
            L::Plaintext,
            header(PT, 1),
            E::SeededNotAllowed { what: "plaintext" },
        ),
        case(
            "seeded_ct_size_3.bin",
            L::Ciphertext,
            with(header(CT, 1), &[3, 3]),
            E::SeededNotAllowed {
                what: "size-3 ciphertext",
            },
        ),
        case(
            "seeded_gk_empty.bin",
            L::GaloisKeys,
            with(header(GK, 1), &0u32.to_le_bytes()),
            E::SeededNotAllowed {
                what: "empty Galois key set",
            },
        ),
        case(
            "ct_residue_eq_prime.bin",
            L::Ciphertext,
            ct_residue,
            E::ResidueOutOfRange {
                limb: 0,
                index: 5,
                value: q[0],
                modulus: q[0],
            },
        ),
        case(
            "pt_coeff_eq_t.bin",
            L::Plaintext,
            pt_coeff,
            E::CoefficientOutOfRange {
                index: 3,
                value: t,
                t,
            },
        ),
        case(
            "sk_invalid_code.bin",
            L::SecretKey,
            sk_code,
            E::InvalidSecretCoefficient { index: 9 },
        ),
        case(
            "sk_trailing_byte.bin",
            L::SecretKey,
            sk_trailing,
            E::TrailingBytes {
                expected: hl + n as u64 / 4,
                actual: hl + n as u64 / 4 + 1,
            },
        ),
        case(
            "ct_transparent.bin",
            L::CiphertextUntrusted,
            transparent.clone(),
            E::TransparentCiphertext,
        ),
        case("list_is_object.bin", L::Bundle, header(CT, 0), E::NotAList),
        case(
            "list_count_huge.bin",
            L::Bundle,
            vec![0xff; 4],
            E::CountOutOfRange {
                what: "list items",
                count: u32::MAX as u64,
                max: max_items,
            },
        ),
        case(
            "list_item_truncated.bin",
            L::Bundle,
            item_truncated,
            E::Truncated {
                expected: 4 + 4 + 100,
                actual: 4 + 4 + 10,
            },
        ),
        case(
            "list_trailing_byte.bin",
            L::Bundle,
            with(list(&[]), &[0]),
            E::TrailingBytes {
                expected: 4,
                actual: 5,
            },
        ),
        case(
            "bundle_one_item.bin",
            L::Bundle,
            list(&[&header(CT, 0)]),
            E::CountOutOfRange {
                what: "bundle items (a packed ciphertext and at least one one-hot)",
                count: 1,
                max: max_items,
            },
        ),
        case(
            "bundle_plaintext_items.bin",
            L::Bundle,
            list(&[&header(PT, 0), &header(PT, 0)]),
            E::WrongKind {
                expected: CT,
                found: PT,
            },
        ),
        case(
            "bundle_transparent.bin",
            L::Bundle,
            list(&[&transparent, &transparent]),
            E::TransparentCiphertext,
        ),
    ]
}

/// The committed corpus. Generated by `write_bad_corpus` (see the module docs).
const COMMITTED: &[(&str, &[u8])] = &[
    ("empty.bin", include_bytes!("../data/bad/empty.bin")),
    (
        "magic_short.bin",
        include_bytes!("../data/bad/magic_short.bin"),
    ),
    (
        "magic_wrong.bin",
        include_bytes!("../data/bad/magic_wrong.bin"),
    ),
    (
        "magic_other_format.bin",
        include_bytes!("../data/bad/magic_other_format.bin"),
    ),
    ("version_2.bin", include_bytes!("../data/bad/version_2.bin")),
    (
        "version_ffff.bin",
        include_bytes!("../data/bad/version_ffff.bin"),
    ),
    (
        "kind_unknown.bin",
        include_bytes!("../data/bad/kind_unknown.bin"),
    ),
    (
        "kind_plaintext_as_ciphertext.bin",
        include_bytes!("../data/bad/kind_plaintext_as_ciphertext.bin"),
    ),
    (
        "kind_secret_key_as_public_key.bin",
        include_bytes!("../data/bad/kind_secret_key_as_public_key.bin"),
    ),
    (
        "flags_unknown.bin",
        include_bytes!("../data/bad/flags_unknown.bin"),
    ),
    (
        "flags_unknown_and_seeded.bin",
        include_bytes!("../data/bad/flags_unknown_and_seeded.bin"),
    ),
    (
        "params_other_n.bin",
        include_bytes!("../data/bad/params_other_n.bin"),
    ),
    (
        "params_zero_id.bin",
        include_bytes!("../data/bad/params_zero_id.bin"),
    ),
    (
        "header_truncated.bin",
        include_bytes!("../data/bad/header_truncated.bin"),
    ),
    (
        "ct_fields_truncated.bin",
        include_bytes!("../data/bad/ct_fields_truncated.bin"),
    ),
    (
        "ct_body_truncated.bin",
        include_bytes!("../data/bad/ct_body_truncated.bin"),
    ),
    (
        "sk_truncated.bin",
        include_bytes!("../data/bad/sk_truncated.bin"),
    ),
    (
        "pk_truncated.bin",
        include_bytes!("../data/bad/pk_truncated.bin"),
    ),
    (
        "rk_truncated.bin",
        include_bytes!("../data/bad/rk_truncated.bin"),
    ),
    (
        "rk_unseeded_truncated.bin",
        include_bytes!("../data/bad/rk_unseeded_truncated.bin"),
    ),
    (
        "pt_truncated.bin",
        include_bytes!("../data/bad/pt_truncated.bin"),
    ),
    (
        "gk_count_truncated.bin",
        include_bytes!("../data/bad/gk_count_truncated.bin"),
    ),
    (
        "gk_count_huge.bin",
        include_bytes!("../data/bad/gk_count_huge.bin"),
    ),
    (
        "gk_count_max_no_body.bin",
        include_bytes!("../data/bad/gk_count_max_no_body.bin"),
    ),
    ("ct_size_0.bin", include_bytes!("../data/bad/ct_size_0.bin")),
    ("ct_size_1.bin", include_bytes!("../data/bad/ct_size_1.bin")),
    ("ct_size_4.bin", include_bytes!("../data/bad/ct_size_4.bin")),
    (
        "ct_size_255.bin",
        include_bytes!("../data/bad/ct_size_255.bin"),
    ),
    (
        "ct_limbs_0.bin",
        include_bytes!("../data/bad/ct_limbs_0.bin"),
    ),
    (
        "ct_limbs_4.bin",
        include_bytes!("../data/bad/ct_limbs_4.bin"),
    ),
    (
        "ct_limbs_255.bin",
        include_bytes!("../data/bad/ct_limbs_255.bin"),
    ),
    (
        "seeded_secret_key.bin",
        include_bytes!("../data/bad/seeded_secret_key.bin"),
    ),
    (
        "seeded_plaintext.bin",
        include_bytes!("../data/bad/seeded_plaintext.bin"),
    ),
    (
        "seeded_ct_size_3.bin",
        include_bytes!("../data/bad/seeded_ct_size_3.bin"),
    ),
    (
        "seeded_gk_empty.bin",
        include_bytes!("../data/bad/seeded_gk_empty.bin"),
    ),
    (
        "ct_residue_eq_prime.bin",
        include_bytes!("../data/bad/ct_residue_eq_prime.bin"),
    ),
    (
        "pt_coeff_eq_t.bin",
        include_bytes!("../data/bad/pt_coeff_eq_t.bin"),
    ),
    (
        "sk_invalid_code.bin",
        include_bytes!("../data/bad/sk_invalid_code.bin"),
    ),
    (
        "sk_trailing_byte.bin",
        include_bytes!("../data/bad/sk_trailing_byte.bin"),
    ),
    (
        "ct_transparent.bin",
        include_bytes!("../data/bad/ct_transparent.bin"),
    ),
    (
        "list_is_object.bin",
        include_bytes!("../data/bad/list_is_object.bin"),
    ),
    (
        "list_count_huge.bin",
        include_bytes!("../data/bad/list_count_huge.bin"),
    ),
    (
        "list_item_truncated.bin",
        include_bytes!("../data/bad/list_item_truncated.bin"),
    ),
    (
        "list_trailing_byte.bin",
        include_bytes!("../data/bad/list_trailing_byte.bin"),
    ),
    (
        "bundle_one_item.bin",
        include_bytes!("../data/bad/bundle_one_item.bin"),
    ),
    (
        "bundle_plaintext_items.bin",
        include_bytes!("../data/bad/bundle_plaintext_items.bin"),
    ),
    (
        "bundle_transparent.bin",
        include_bytes!("../data/bad/bundle_transparent.bin"),
    ),
];

suite_test! {
    fn bad_corpus_gives_typed_errors() {
        let params = Params::auth4096();
        let cases = bad_corpus(&params);
        assert_eq!(cases.len(), COMMITTED.len());
        for case in &cases {
            let (_, bytes) = COMMITTED.iter().find(|(name, _)| *name == case.name)
                .unwrap_or_else(|| panic!("{} is not committed", case.name));
            assert!(*bytes == case.bytes.as_slice(),
                    "tests/data/bad/{} is stale: run `cargo test --test native -- --ignored write_bad_corpus`",
                    case.name);
            assert_eq!(load(&params, case.loader, bytes), Err(case.expected.clone()), "{}", case.name);
        }
        // The transparent ciphertext is well formed: only the untrusted path refuses it.
        let (_, transparent) = COMMITTED.iter().find(|(name, _)| *name == "ct_transparent.bin").unwrap();
        let ct = Ciphertext::from_bytes(&params, transparent).unwrap();
        assert!(ct.is_transparent());
        // Every corpus file fed to every loader: a typed error, never a panic.
        let loaders = [Loader::SecretKey, Loader::PublicKey, Loader::RelinKey, Loader::GaloisKeys,
                       Loader::Plaintext, Loader::Ciphertext, Loader::CiphertextUntrusted,
                       Loader::Bundle];
        for (name, bytes) in COMMITTED {
            for loader in loaders {
                let r = load(&params, loader, bytes);
                assert!(r.is_err() || (*name == "ct_transparent.bin" && matches!(loader, Loader::Ciphertext)),
                        "{name} via {loader:?}");
            }
        }
    }
}

/// Writes `tests/data/bad/` from [`bad_corpus`]. Run after a format change:
/// `cargo test --test native -- --ignored write_bad_corpus`.
#[cfg(not(target_arch = "wasm32"))]
#[test]
#[ignore = "writes tests/data/bad/; run by hand after a format change"]
fn write_bad_corpus() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/bad");
    std::fs::create_dir_all(&dir).unwrap();
    for case in bad_corpus(&Params::auth4096()) {
        std::fs::write(dir.join(case.name), &case.bytes).unwrap();
    }
}
