//! Known-answer vectors from `scripts/gen_kat.py`, an independent Python
//! generator working from the definitions (trial-division prime search,
//! minimum over all primitive roots, NTT by direct evaluation, schoolbook
//! negacyclic product). Regenerate with `python3 scripts/gen_kat.py`; check
//! the committed files with `python3 scripts/gen_kat.py --check`.
//!
//! The data is embedded with `include_str!`, so these tests need no
//! filesystem and run the same natively, under qemu and in wasm32.

use super::oracle::backends;
use blindmatch::arith::{ntt_primes, primitive_root};
use blindmatch::NttPlan;

const PRIMES: &str = include_str!("../data/kat_primes.txt");
const ROOTS: &str = include_str!("../data/kat_roots.txt");
const VECTORS: &[(&str, &str)] = &[
    (
        "kat_ntt_n1024_q1073707009.txt",
        include_str!("../data/kat_ntt_n1024_q1073707009.txt"),
    ),
    (
        "kat_ntt_n2048_q536813569.txt",
        include_str!("../data/kat_ntt_n2048_q536813569.txt"),
    ),
    (
        "kat_ntt_n4096_q134176769.txt",
        include_str!("../data/kat_ntt_n4096_q134176769.txt"),
    ),
    (
        "kat_ntt_n1024_q65537.txt",
        include_str!("../data/kat_ntt_n1024_q65537.txt"),
    ),
];

/// Non-comment, non-blank lines as `(tag, numbers)`.
fn records(text: &str) -> impl Iterator<Item = (&str, Vec<u64>)> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let mut words = l.split_whitespace();
            let tag = words.next().unwrap();
            let nums = words
                .map(|w| {
                    w.parse::<u64>()
                        .unwrap_or_else(|e| panic!("bad number {w:?} in {l:?}: {e}"))
                })
                .collect();
            (tag, nums)
        })
}

struct Vector {
    name: &'static str,
    n: usize,
    q: u32,
    psi: u32,
    a: Vec<u32>,
    b: Vec<u32>,
    fwd: Vec<u32>,
    c: Vec<u32>,
}

fn parse_vector(name: &'static str, text: &'static str) -> Vector {
    let mut recs = records(text);
    let (tag, head) = recs.next().expect("empty vector file");
    assert!(tag == "ntt" && head.len() == 3, "{name}: bad header");
    let (n, q, psi) = (head[0] as usize, head[1] as u32, head[2] as u32);
    let (mut a, mut b, mut fwd, mut c) = (vec![], vec![], vec![], vec![]);
    for (tag, nums) in recs {
        let dst = match tag {
            "a" => &mut a,
            "b" => &mut b,
            "fwd" => &mut fwd,
            "c" => &mut c,
            _ => panic!("{name}: unknown tag {tag:?}"),
        };
        dst.extend(nums.into_iter().map(|v| {
            assert!(v < q as u64, "{name}: value {v} not below q");
            v as u32
        }));
    }
    for (what, v) in [("a", &a), ("b", &b), ("fwd", &fwd), ("c", &c)] {
        assert_eq!(v.len(), n, "{name}: {what} has the wrong length");
    }
    Vector {
        name,
        n,
        q,
        psi,
        a,
        b,
        fwd,
        c,
    }
}

fn vectors() -> Vec<Vector> {
    VECTORS
        .iter()
        .map(|&(name, text)| parse_vector(name, text))
        .collect()
}

suite_test! {
    fn kat_prime_search() {
        let mut cases = 0;
        for (tag, v) in records(PRIMES) {
            assert_eq!(tag, "primes");
            let (bits, n, want) = (v[0] as u32, v[1] as usize, &v[2..]);
            let got = ntt_primes(bits, n, want.len()).unwrap();
            let got: Vec<u64> = got.into_iter().map(u64::from).collect();
            assert_eq!(got, want, "ntt_primes({bits}, {n}, {})", want.len());
            cases += 1;
        }
        assert!(cases >= 20, "only {cases} prime cases in kat_primes.txt");
    }

    fn kat_primitive_roots() {
        let mut cases = 0;
        for (tag, v) in records(ROOTS) {
            assert_eq!(tag, "root");
            let (n, q, want) = (v[0] as usize, v[1], v[2] as u32);
            assert_eq!(primitive_root(n, q).unwrap(), want, "primitive_root({n}, {q})");
            cases += 1;
        }
        assert!(cases >= 100, "only {cases} root cases in kat_roots.txt");
    }

    fn kat_forward_ntt() {
        for v in vectors() {
            let name = v.name;
            let plan = NttPlan::new(v.n, v.q as u64).unwrap();
            assert_eq!(plan.psi(), v.psi, "{name}: NttPlan::new psi");
            let mut x = v.a.clone();
            plan.forward(&mut x);
            assert_eq!(x, v.fwd, "{name}: NttPlan::new forward ({:?})", plan.backend());
            for bk in backends() {
                let plan = NttPlan::with_backend(v.n, v.q as u64, bk).unwrap();
                assert_eq!(plan.psi(), v.psi, "{name}: psi ({bk:?})");
                let mut x = v.a.clone();
                plan.forward(&mut x);
                assert_eq!(x, v.fwd, "{name}: forward ({bk:?})");
                plan.inverse(&mut x);
                assert_eq!(x, v.a, "{name}: inverse of the known forward ({bk:?})");
            }
        }
    }

    fn kat_ntt_product() {
        for v in vectors() {
            let name = v.name;
            for bk in backends() {
                let plan = NttPlan::with_backend(v.n, v.q as u64, bk).unwrap();
                let (mut fa, mut fb) = (v.a.clone(), v.b.clone());
                plan.forward(&mut fa);
                plan.forward(&mut fb);
                let mut c = vec![0; v.n];
                plan.multiply_pointwise(&fa, &fb, &mut c);
                plan.inverse(&mut c);
                assert_eq!(c, v.c, "{name}: a*b mod (X^n + 1) ({bk:?})");
            }
        }
    }
}
