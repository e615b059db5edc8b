//! The key holder's 1:N scores without forming the score ciphertexts.
//!
//! A score is coefficient `j = d·m + r` (`r = d − 1`) of the decrypted
//! product `g·p`. In the NTT domain the phase of that product is
//! `â_k = g0_k·p_k + g1_k·p_k·s_k`, where `â_k = a(v_k)` is the polynomial
//! evaluated at the k-th root `v_k` of `X^n + 1`; so
//!
//! ```text
//! a_j = n⁻¹ Σ_k â_k v_k^(−j) = n⁻¹ Σ_k â_k · v_k^(−r) · (v_k^d)^(−m).
//! ```
//!
//! `u_k = v_k^d` takes `n/d` values, each on `d` roots; in the transform's
//! order those roots form contiguous blocks (checked when the tables are
//! built). With `P0_k = p_k·w_k`, `P1_k = p_k·s_k·w_k` and `w_k = v_k^(−r)`
//! made once per probe, a gallery ciphertext costs one dot product per block
//! (`S_b = Σ_{k∈b} g0_k·P0_k + g1_k·P1_k`, two products per residue, as
//! many as `multiply_plain`) and an `n/d × n/d` combination
//! `a_{d·m+r} = Σ_b n⁻¹·u_b^(−m)·S_b`. The residues are those the inverse
//! transform would give, exactly, so the rounded scores are the same as
//! decrypting the product; no product and no inverse transform of degree
//! `n` is made, and nothing is written per gallery ciphertext.
//!
//! The combination is itself a negacyclic inverse transform of degree
//! `B = n/d`: in the transform's order block `b` holds the roots with
//! `u_b = ω^(2·brv(b)+1)` for `ω = ψ^d`, a primitive `2B`-th root, which is
//! the order [`crate::ntt::NttPlan`] gives its evaluations in. So it costs
//! `B/2·log2(B)` butterflies (80 for `B = 32`) instead of `B²` products
//! (1 024); the tables check that order and keep the `B × B` matrix where
//! it does not hold.

use crate::arith::{bit_reverse, Modulus, ShoupConstant};
use crate::bfv::{Ciphertext, Params, PlaintextNtt, SecretKey};

/// Per prime: the weights and the final combination.
#[derive(Clone, Debug)]
struct LimbTables {
    /// `w_k = v_k^(−r)`.
    w: Vec<u32>,
    /// How the block sums become the score residues.
    combine: Combine,
}

/// `a_{d·m+r} = Σ_b n⁻¹·u_b^(−m)·S_b` for every row `m`.
#[derive(Clone, Debug)]
enum Combine {
    /// A negacyclic inverse transform of degree `B` (see the module's
    /// notes): Gentleman–Sande butterflies with `ω^(−brv(k))` at index `k`
    /// (the stage with `h` groups reads `h..2h`), then the product by `n⁻¹`.
    Transform {
        twiddles: Vec<ShoupConstant>,
        n_inv: ShoupConstant,
    },
    /// `n⁻¹·u_b^(−m)`, row `m`, column `b` (`B × B`), with the products
    /// summed in 64 bits before one reduction: `(q−1)²·terms < 2^64`.
    Matrix { rows: Vec<u32>, terms: usize },
}

impl Combine {
    /// The combination for the classes `u` (block order) over `m`: the
    /// transform where `u_b = u_0^(2·brv(b)+1)`, the matrix elsewhere.
    fn new(m: &Modulus, u: &[u32], n: usize) -> Self {
        let blocks = u.len();
        let bits = blocks.trailing_zeros();
        let omega = u[0];
        let n_inv = m.inv(m.reduce_u32(n as u32));
        let in_order = blocks.is_power_of_two()
            && (0..blocks).all(|b| u[b] == m.pow(omega, 2 * bit_reverse(b, bits) as u64 + 1));
        if in_order {
            let omega_inv = m.inv(omega);
            let twiddles = (0..blocks)
                .map(|k| m.shoup(m.pow(omega_inv, bit_reverse(k, bits) as u64)))
                .collect();
            return Combine::Transform {
                twiddles,
                n_inv: m.shoup(n_inv),
            };
        }
        Self::matrix(m, u, n)
    }

    /// The `B × B` matrix, for any classes.
    fn matrix(m: &Modulus, u: &[u32], n: usize) -> Self {
        let blocks = u.len();
        let n_inv = m.inv(m.reduce_u32(n as u32));
        let mut rows = vec![0u32; blocks * blocks];
        for (b, &ub) in u.iter().enumerate() {
            let u_inv = m.inv(ub);
            let mut x = n_inv;
            for row in 0..blocks {
                rows[row * blocks + b] = x;
                x = m.mul(x, u_inv);
            }
        }
        let max = (m.value() as u64 - 1) * (m.value() as u64 - 1);
        Combine::Matrix {
            rows,
            terms: (u64::MAX / max) as usize,
        }
    }

    /// The score residues of one prime from its block sums (`sums` is
    /// overwritten).
    fn apply(&self, m: &Modulus, sums: &mut [u32], out: &mut [u32]) {
        match self {
            Combine::Transform { twiddles, n_inv } => {
                let blocks = sums.len();
                let (mut t, mut h) = (1, blocks / 2);
                while h >= 1 {
                    for (g, pair) in sums.chunks_exact_mut(2 * t).enumerate() {
                        let w = twiddles[h + g];
                        let (lo, hi) = pair.split_at_mut(t);
                        for (x, y) in lo.iter_mut().zip(hi) {
                            let (u, v) = (*x, *y);
                            *x = m.add(u, v);
                            *y = m.mul_shoup(m.sub(u, v), w);
                        }
                    }
                    t *= 2;
                    h /= 2;
                }
                for (o, &x) in out.iter_mut().zip(sums.iter()) {
                    *o = m.mul_shoup(x, *n_inv);
                }
            }
            Combine::Matrix { rows, terms } => {
                let blocks = sums.len();
                let chunk = (*terms).max(1);
                for (mrow, o) in out.iter_mut().enumerate() {
                    let coef = &rows[mrow * blocks..(mrow + 1) * blocks];
                    let mut total = 0u32;
                    for (c, s) in coef.chunks(chunk).zip(sums.chunks(chunk)) {
                        let acc: u64 = c.iter().zip(s).map(|(&x, &y)| x as u64 * y as u64).sum();
                        total = m.add(total, m.reduce_u64(acc));
                    }
                    *o = total;
                }
            }
        }
    }
}

/// Tables for scoring at dimension `d`, over the first `limbs` primes.
#[derive(Clone, Debug)]
pub(crate) struct FusedScorer {
    dim: usize,
    blocks: usize,
    limbs: Vec<LimbTables>,
}

/// A probe prepared for one key: `P0` and `P1` per limb. `P1` carries the
/// secret key (`s = P1 / (p·w)` wherever `p` is nonzero), so it is zeroized
/// when dropped and never printed.
pub(crate) struct FusedProbe {
    /// Limb-major, `2·n` per limb: `P0` then `P1`.
    p: Vec<u32>,
}

impl Drop for FusedProbe {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.p);
    }
}

impl std::fmt::Debug for FusedProbe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FusedProbe { .. }")
    }
}

impl FusedScorer {
    /// The tables, or `None` if the transform's order does not put each
    /// class of roots in one block (then the caller decrypts products).
    pub(crate) fn new(params: &Params, dim: usize, limbs: usize) -> Option<Self> {
        let n = params.degree();
        if dim == 0 || !n.is_multiple_of(dim) || limbs == 0 || limbs > params.limbs() {
            return None;
        }
        let blocks = n / dim;
        let r = (dim - 1) as u64;
        let mut out = Vec::with_capacity(limbs);
        for plan in &params.plans_q()[..limbs] {
            let m = plan.modulus();
            let q = m.value();
            // v_k: the transform of the monomial X.
            let mut v = vec![0u32; n];
            v[1] = 1;
            plan.forward(&mut v);
            let mut class = Vec::with_capacity(blocks);
            let mut w = Vec::with_capacity(n);
            for (b, block) in v.chunks_exact(dim).enumerate() {
                let u_b = m.pow(block[0] % q, dim as u64);
                for &vk in block {
                    let vk = vk % q;
                    if m.pow(vk, dim as u64) != u_b {
                        return None;
                    }
                    w.push(m.pow(m.inv(vk), r));
                }
                if class[..b].contains(&u_b) {
                    return None;
                }
                class.push(u_b);
            }
            out.push(LimbTables {
                w,
                combine: Combine::new(m, &class, n),
            });
        }
        Some(Self {
            dim,
            blocks,
            limbs: out,
        })
    }

    /// Primes the tables cover (the gallery's level).
    pub(crate) fn limbs(&self) -> usize {
        self.limbs.len()
    }

    /// `P0 = p·w` and `P1 = p·s·w` for a probe and the key holder's key.
    pub(crate) fn prepare(
        &self,
        params: &Params,
        probe: &PlaintextNtt,
        sk: &SecretKey,
    ) -> FusedProbe {
        let n = params.degree();
        let mut p = vec![0u32; 2 * n * self.limbs.len()];
        for (i, (t, plan)) in self.limbs.iter().zip(params.plans_q()).enumerate() {
            let m = plan.modulus();
            let (p0, p1) = p[2 * n * i..2 * n * (i + 1)].split_at_mut(n);
            let pk = probe.limb(i);
            // The key is held as s·2^32: one Montgomery product gives p·s.
            let s = sk.ntt_mont_limb(i);
            for k in 0..n {
                let x = m.reduce_u32(pk[k]);
                p0[k] = m.mul(x, t.w[k]);
                p1[k] = m.mul(m.mont_mul(x, s[k]), t.w[k]);
            }
        }
        FusedProbe { p }
    }

    /// The residues of the score coefficients of `cts[k]·probe`, decrypted,
    /// for each of the `K` ciphertexts (at this scorer's level) scored in one
    /// read of the probe: `rows[(k·L + i)·blocks + m]` is coefficient
    /// `d·m + d − 1` mod prime `i` of `cts[k]`, for `L` primes. `sums`
    /// (`K·n/d` words) is scratch. `next[k]`, a ciphertext scored after
    /// these (same level), is prefetched a prime at a time as `cts[k]` is
    /// read.
    pub(crate) fn score_residues<const K: usize>(
        &self,
        cts: [&Ciphertext; K],
        next: [Option<&Ciphertext>; K],
        probe: &FusedProbe,
        rows: &mut [u32],
        sums: &mut [u32],
    ) {
        let (n, blocks, limbs) = (self.dim * self.blocks, self.blocks, self.limbs.len());
        let Some(params) = cts.first().map(|ct| ct.params()) else {
            return;
        };
        for (i, (t, plan)) in self.limbs.iter().zip(params.plans_q()).enumerate() {
            let (p0, p1) = probe.p[2 * n * i..2 * n * (i + 1)].split_at(n);
            let (m, backend) = (plan.modulus(), plan.backend());
            let gallery = cts.map(|ct| (ct.residues(0, i), ct.residues(1, i)));
            let ahead = next.map(|ct| ct.map(|ct| (ct.residues(0, i), ct.residues(1, i))));
            let mut each = sums[..K * blocks].chunks_exact_mut(blocks);
            let each: [&mut [u32]; K] =
                std::array::from_fn(|_| each.next().expect("K blocks of sums"));
            backend.dot2_blocks_many(m, gallery, p0, p1, each, ahead);
            for (k, sums) in sums.chunks_exact_mut(blocks).take(K).enumerate() {
                let out = &mut rows[(k * limbs + i) * blocks..(k * limbs + i + 1) * blocks];
                t.combine.apply(m, sums, out);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// At every dimension and prime of the preset, the tables take the
    /// transform, and it gives what the matrix gives, on random sums and
    /// on the extremes.
    #[test]
    fn the_combination_transform_equals_the_matrix() {
        let params = Params::auth4096();
        let n = params.degree();
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for dim in crate::matching::DIMENSIONS {
            let f = FusedScorer::new(&params, dim, params.limbs()).expect("tables");
            for (t, plan) in f.limbs.iter().zip(params.plans_q()) {
                let m = plan.modulus();
                let q = m.value();
                assert!(
                    matches!(t.combine, Combine::Transform { .. }),
                    "d={dim} q={q}"
                );
                // The classes again, as `new` finds them.
                let mut v = vec![0u32; n];
                v[1] = 1;
                plan.forward(&mut v);
                let u: Vec<u32> = v
                    .chunks_exact(dim)
                    .map(|b| m.pow(b[0], dim as u64))
                    .collect();
                let matrix = Combine::matrix(m, &u, n);
                for round in 0..8 {
                    let sums: Vec<u32> = (0..f.blocks)
                        .map(|_| match round {
                            0 => 0,
                            1 => q - 1,
                            _ => {
                                state ^= state << 13;
                                state ^= state >> 7;
                                state ^= state << 17;
                                (state % q as u64) as u32
                            }
                        })
                        .collect();
                    let (mut fast, mut slow) = (vec![0; f.blocks], vec![0; f.blocks]);
                    t.combine.apply(m, &mut sums.clone(), &mut fast);
                    matrix.apply(m, &mut sums.clone(), &mut slow);
                    assert_eq!(fast, slow, "d={dim} q={q} round {round}");
                }
            }
        }
    }
    use crate::bfv::{Evaluator, Plaintext, Prng, PublicKey};
    use crate::matching::DIMENSIONS;

    /// The residues equal those of the decrypted product's score
    /// coefficients (the product formed, its phase inverse-transformed), at
    /// every dimension, for the preset (29-bit primes) and for 30-bit primes
    /// (fewer products per 64-bit sum); and the rounded scores equal
    /// `decrypt_coefficients`.
    #[test]
    fn residues_equal_the_decrypted_products() {
        let primes = crate::arith::ntt_primes(30, 4096, 3).unwrap();
        let wide = Params::builder()
            .degree(4096)
            .plaintext_modulus(65537)
            .ciphertext_primes(&primes[..2].iter().map(|&q| q as u64).collect::<Vec<_>>())
            .special_prime(primes[2] as u64)
            .build()
            .unwrap();
        let mut rng = Prng::from_seed([5; 32]);
        for params in [Params::auth4096(), wide] {
            let n = params.degree();
            let t = params.plaintext_modulus();
            let sk = SecretKey::generate_with(&params, &mut rng);
            let pk = PublicKey::new_with(&sk, &mut rng);
            let ev = Evaluator::new(&params);
            let level = params.limbs() - 1;
            for dim in DIMENSIONS {
                let f = FusedScorer::new(&params, dim, level)
                    .expect("each class of roots is one block");
                let blocks = n / dim;
                // Messages and probes over the whole of Z_t, not only
                // quantized values: the identity holds for any.
                let coeffs =
                    |rng: &mut Prng| -> Vec<u32> { (0..n).map(|_| rng.next_u32() % t).collect() };
                let msg = Plaintext::from_coeffs(&params, &coeffs(&mut rng)).unwrap();
                let ct = ev
                    .mod_switch_to(&pk.encrypt_with(&msg, &mut rng).unwrap(), level)
                    .unwrap();
                let probe = ev
                    .prepare_plain(&Plaintext::from_coeffs(&params, &coeffs(&mut rng)).unwrap())
                    .unwrap();
                // What `dot2` asks of its inputs: canonical residues, as
                // switched-down gallery ciphertexts hold them.
                for (i, plan) in params.plans_q()[..level].iter().enumerate() {
                    let q = plan.modulus().value();
                    assert!((0..ct.size()).all(|k| ct.residues(k, i).iter().all(|&x| x < q)));
                }
                let fp = f.prepare(&params, &probe, &sk);
                assert_eq!(format!("{fp:?}"), "FusedProbe { .. }");
                let mut rows = vec![0u32; level * blocks];
                f.score_residues([&ct], [None], &fp, &mut rows, &mut vec![0; blocks]);
                let mut prod = crate::bfv::Ciphertext::new(&params, Vec::new());
                ev.multiply_plain_into(&ct, &probe, &mut prod).unwrap();
                let phase = sk.phase(&prod).unwrap();
                for i in 0..level {
                    for m in 0..blocks {
                        assert_eq!(
                            rows[i * blocks + m],
                            phase.limb(i)[dim * m + dim - 1],
                            "d={dim} prime {i} block {m}"
                        );
                    }
                }
                let positions: Vec<usize> = (0..blocks).map(|m| dim * m + dim - 1).collect();
                let mut raw = vec![0u32; blocks];
                crate::bfv::round_residue_rows_to_t(&params, &rows, &mut raw);
                assert_eq!(
                    raw,
                    sk.decrypt_coefficients(&prod, &positions).unwrap(),
                    "d={dim}"
                );
                // Two ciphertexts in one call, either order, prefetching
                // either: each gets the rows it gets alone.
                let other = ev
                    .mod_switch_to(&pk.encrypt_with(&msg, &mut rng).unwrap(), level)
                    .unwrap();
                let mut alone = vec![0u32; level * blocks];
                f.score_residues([&other], [Some(&ct)], &fp, &mut alone, &mut vec![0; blocks]);
                let mut both = vec![0u32; 2 * level * blocks];
                let mut sums = vec![0; 2 * blocks];
                f.score_residues(
                    [&ct, &other],
                    [Some(&other), None],
                    &fp,
                    &mut both,
                    &mut sums,
                );
                assert_eq!(both, [&rows[..], &alone[..]].concat(), "d={dim}");
                f.score_residues([&other, &ct], [None, None], &fp, &mut both, &mut sums);
                assert_eq!(both, [&alone[..], &rows[..]].concat(), "d={dim}");
            }
        }
    }
}
