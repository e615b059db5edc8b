//! BFV parameters: ring degree, plaintext modulus, RNS ciphertext primes and
//! the key-switching special prime, checked against the 128-bit security table.

use std::fmt;
use std::sync::{Arc, OnceLock};

use super::mul::MulConsts;
use super::mul_direct::DirectMul;
use super::scaling::LevelConsts;
use crate::arith::primes::{check_degree, check_ntt_prime, is_prime};
use crate::error::{BfvError, ParamsError};
use crate::ntt::NttPlan;

/// Largest `log2(Q·P)` for 128-bit classical security with a ternary secret
/// (HomomorphicEncryption.org standard), by ring degree.
pub const SECURITY_128: [(usize, u32); 5] = [
    (1024, 27),
    (2048, 54),
    (4096, 109),
    (8192, 218),
    (16384, 438),
];

/// Most ciphertext primes a parameter set may have: RNS sums of `L` products
/// of 30-bit residues are accumulated in `u64` without intermediate
/// reduction, which needs `L < 16`.
pub const MAX_PRIMES: usize = 15;

/// The 128-bit bound on `log2(Q·P)` for degree `n`.
pub fn max_modulus_bits(n: usize) -> Option<u32> {
    SECURITY_128.iter().find(|(d, _)| *d == n).map(|&(_, b)| b)
}

/// The modulus size that the security gate counts: the sum of the bit lengths
/// of all primes (as Microsoft SEAL counts it). This is at least `log2(Q·P)`,
/// so the gate errs on the safe side.
pub fn modulus_bits(primes: &[u32]) -> u32 {
    primes.iter().map(|&p| 32 - p.leading_zeros()).sum()
}

/// Validated BFV parameters. Cheap to clone (shared).
#[derive(Clone)]
pub struct Params(Arc<Inner>);

struct Inner {
    n: usize,
    t: u32,
    q: Vec<u32>,
    p: u32,
    batching: bool,
    id: [u8; 8],
    /// NTT plans of q_0..q_{L-1} followed by P.
    plans: Vec<NttPlan>,
    /// Scaling constants for ciphertexts over the first 1..=L primes.
    levels: Vec<LevelConsts>,
    /// NTT plan over t, when slot batching is on.
    plan_t: Option<NttPlan>,
    /// The direct product's constants, when `Q ≡ 1 (mod t)`.
    direct: Option<DirectMul>,
    /// Multiplication constants, built on first use (clients rarely multiply).
    mul: OnceLock<MulConsts>,
}

impl fmt::Debug for Params {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Params")
            .field("n", &self.0.n)
            .field("t", &self.0.t)
            .field("q", &self.0.q)
            .field("p", &self.0.p)
            .field("id", &self.id_hex())
            .finish()
    }
}

impl PartialEq for Params {
    fn eq(&self, other: &Self) -> bool {
        self.0.id == other.0.id
    }
}
impl Eq for Params {}

/// Builds [`Params`]; [`ParamsBuilder::build`] checks everything.
#[derive(Clone, Debug, Default)]
pub struct ParamsBuilder {
    n: Option<usize>,
    t: Option<u64>,
    q: Vec<u64>,
    p: Option<u64>,
    batching: bool,
}

impl ParamsBuilder {
    /// Ring degree `n` (a power of two in 1024..=16384).
    pub fn degree(mut self, n: usize) -> Self {
        self.n = Some(n);
        self
    }
    /// Plaintext modulus `t`.
    pub fn plaintext_modulus(mut self, t: u64) -> Self {
        self.t = Some(t);
        self
    }
    /// Ciphertext primes `q_i < 2^30`, each `≡ 1 (mod 2n)`, distinct.
    pub fn ciphertext_primes(mut self, q: &[u64]) -> Self {
        self.q = q.to_vec();
        self
    }
    /// Key-switching special prime `P < 2^30`, `≡ 1 (mod 2n)`.
    pub fn special_prime(mut self, p: u64) -> Self {
        self.p = Some(p);
        self
    }
    /// Requires `t` to allow slot batching (`t` prime, `t ≡ 1 mod 2n`).
    pub fn batching(mut self, on: bool) -> Self {
        self.batching = on;
        self
    }

    /// Checks every parameter and precomputes the NTT plans.
    pub fn build(self) -> Result<Params, ParamsError> {
        let n = self.n.ok_or(ParamsError::Missing { what: "degree" })?;
        check_degree(n)?;
        let t = self.t.ok_or(ParamsError::Missing {
            what: "plaintext modulus",
        })?;
        if !(2..1 << 30).contains(&t) {
            return Err(ParamsError::PlaintextModulus {
                t,
                reason: "must be in 2..2^30",
            });
        }
        if self.batching {
            if !is_prime(t) {
                return Err(ParamsError::PlaintextModulus {
                    t,
                    reason: "slot batching needs a prime t",
                });
            }
            if t % (2 * n as u64) != 1 {
                return Err(ParamsError::PlaintextModulus {
                    t,
                    reason: "slot batching needs t = 1 mod 2n",
                });
            }
        }
        if self.q.is_empty() {
            return Err(ParamsError::Missing {
                what: "ciphertext primes",
            });
        }
        let p = self.p.ok_or(ParamsError::Missing {
            what: "special prime",
        })?;
        let mut all = self.q.clone();
        all.push(p);
        for &q in &all {
            check_ntt_prime(n, q)?;
        }
        for (i, a) in all.iter().enumerate() {
            if all[..i].contains(a) {
                return Err(ParamsError::DuplicatePrime { prime: *a as u32 });
            }
            if *a == t {
                return Err(ParamsError::DuplicatePrime { prime: *a as u32 });
            }
        }
        let all32: Vec<u32> = all.iter().map(|&x| x as u32).collect();
        let bits = modulus_bits(&all32);
        let max = max_modulus_bits(n).expect("degree checked above");
        if bits > max {
            return Err(ParamsError::Insecure {
                n,
                bits,
                max_bits: max,
            });
        }
        let q: Vec<u32> = self.q.iter().map(|&x| x as u32).collect();
        let t = t as u32;
        if modulus_bits(&q) <= 32 - t.leading_zeros() + 1 {
            return Err(ParamsError::PlaintextModulus {
                t: t as u64,
                reason: "ciphertext modulus Q must be much larger than t",
            });
        }
        let plans = all
            .iter()
            .map(|&qi| NttPlan::new(n, qi))
            .collect::<Result<Vec<_>, _>>()?;
        let levels = (1..=q.len())
            .map(|l| LevelConsts::new(&q[..l], t))
            .collect();
        let plan_t = if self.batching {
            Some(NttPlan::new(n, t as u64)?)
        } else {
            None
        };
        let id = param_id(n, t, &q, p as u32, self.batching);
        let direct = DirectMul::new(&q, t);
        Ok(Params(Arc::new(Inner {
            n,
            t,
            q,
            p: p as u32,
            batching: self.batching,
            id,
            plans,
            levels,
            plan_t,
            direct,
            mul: OnceLock::new(),
        })))
    }
}

/// FNV-1a 64 over a fixed little-endian encoding of every parameter. Stable
/// across targets and releases: serialized objects carry it.
fn param_id(n: usize, t: u32, q: &[u32], p: u32, batching: bool) -> [u8; 8] {
    let mut bytes = Vec::new();
    bytes.extend_from_slice(b"blindmatch-bfv-params-v1");
    bytes.extend_from_slice(&(n as u32).to_le_bytes());
    bytes.extend_from_slice(&t.to_le_bytes());
    bytes.extend_from_slice(&(q.len() as u32).to_le_bytes());
    for qi in q {
        bytes.extend_from_slice(&qi.to_le_bytes());
    }
    bytes.extend_from_slice(&p.to_le_bytes());
    bytes.push(batching as u8);
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h.to_le_bytes()
}

/// The ciphertext primes of [`Params::auth4096`], 29-bit NTT primes for
/// n = 4096 (`1 mod 8192`): `q_0` the largest, which is `2 mod 65537`, so
/// that a ciphertext switched down to it alone still decrypts; then, of
/// the pairs below it whose product with `q_0` is `1 mod 65537`, the pair
/// with the largest product, so that ciphertexts multiply without an
/// auxiliary base (`Q ≡ 1 mod t`, see `mul_direct`).
pub const AUTH4096_Q: [u64; 3] = [536_813_569, 528_916_481, 501_882_881];

impl Params {
    /// A builder; see [`ParamsBuilder`].
    pub fn builder() -> ParamsBuilder {
        ParamsBuilder::default()
    }

    /// The default preset for face authentication: n = 4096, t = 65537
    /// (slot batching on), Q = three 29-bit primes ([`AUTH4096_Q`], with
    /// `Q ≡ 1 mod t`), P = one 22-bit prime: log2(Q·P) <= 109, the 128-bit
    /// bound. See docs/PARAMETERS.md.
    pub fn auth4096() -> Params {
        let p = crate::arith::ntt_primes(22, 4096, 1).expect("22-bit primes exist")[0];
        Params::builder()
            .degree(4096)
            .plaintext_modulus(65537)
            .batching(true)
            .ciphertext_primes(&AUTH4096_Q)
            .special_prime(p as u64)
            .build()
            .expect("the auth4096 preset is valid")
    }

    /// Ring degree.
    pub fn degree(&self) -> usize {
        self.0.n
    }
    /// Plaintext modulus.
    pub fn plaintext_modulus(&self) -> u32 {
        self.0.t
    }
    /// Ciphertext primes.
    pub fn ciphertext_primes(&self) -> &[u32] {
        &self.0.q
    }
    /// Key-switching special prime.
    pub fn special_prime(&self) -> u32 {
        self.0.p
    }
    /// Whether slot batching is available.
    pub fn batching(&self) -> bool {
        self.0.batching
    }
    /// Stable parameter id carried by every serialized object.
    pub fn id(&self) -> [u8; 8] {
        self.0.id
    }
    /// The id as 16 hex digits.
    pub fn id_hex(&self) -> String {
        self.0.id.iter().map(|b| format!("{b:02x}")).collect()
    }
    /// `log2(Q·P)` as the security gate counts it.
    pub fn modulus_bits(&self) -> u32 {
        let mut all = self.0.q.clone();
        all.push(self.0.p);
        modulus_bits(&all)
    }
    /// Number of ciphertext primes L.
    pub fn limbs(&self) -> usize {
        self.0.q.len()
    }
    /// NTT plans of the ciphertext primes q_0..q_{L-1}.
    pub fn plans_q(&self) -> &[NttPlan] {
        &self.0.plans[..self.0.q.len()]
    }
    /// NTT plans of q_0..q_{L-1} and then P (the key-switching basis).
    pub fn plans_qp(&self) -> &[NttPlan] {
        &self.0.plans
    }

    /// Scaling constants for a ciphertext over the first `l` primes.
    pub(crate) fn level(&self, l: usize) -> &LevelConsts {
        &self.0.levels[l - 1]
    }

    /// The constants of multiplication without an auxiliary base, for
    /// parameters with `Q ≡ 1 (mod t)` (see [`super::mul_direct`]).
    pub(crate) fn direct_mul(&self) -> Option<&DirectMul> {
        self.0.direct.as_ref()
    }

    /// Constants for ciphertext multiplication through the auxiliary base.
    pub(crate) fn mul_consts(&self) -> &MulConsts {
        self.0.mul.get_or_init(|| {
            let mut used = self.0.q.clone();
            used.push(self.0.p);
            MulConsts::new(self.0.n, self.0.t, &self.0.q, &used)
        })
    }

    /// The NTT plan over t (slot batching).
    pub(crate) fn plan_t(&self) -> Option<&NttPlan> {
        self.0.plan_t.as_ref()
    }

    /// `Ok` when `other` are the same parameters.
    pub fn check(&self, other: &Params) -> Result<(), BfvError> {
        if self.0.id == other.0.id {
            Ok(())
        } else {
            Err(BfvError::ParamsMismatch {
                expected: self.id_hex(),
                found: other.id_hex(),
            })
        }
    }
}
