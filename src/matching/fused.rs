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
//! built). With `P0_k = p_k·w_k`, `P1_k = p_k·s_k·w_k` and
//! `w_k = n⁻¹·v_k^(−r)` made once per probe, a gallery ciphertext costs one
//! dot product per block (`S_b = Σ_{k∈b} g0_k·P0_k + g1_k·P1_k`, two
//! products per residue, as many as `multiply_plain`) and an `n/d × n/d`
//! combination `a_{d·m+r} = Σ_b u_b^(−m)·S_b`. The residues are those the inverse
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
//! it does not hold. The pass combines many ciphertexts at once: with the
//! block sums of `C` ciphertexts laid out as `B` rows of `C` (one row per
//! block), each butterfly is a backend linear combination of two rows, in
//! the backend's widest vectors, where one ciphertext alone would take
//! scalar products.

use crate::arith::{bit_reverse, Modulus, ShoupConstant};
use crate::bfv::{Ciphertext, Params, PlaintextNtt, SecretKey};
use crate::Backend;

/// Per prime: the weights and the final combination.
#[derive(Clone, Debug)]
struct LimbTables {
    /// `w_k = n⁻¹·v_k^(−r)`: the transform's `n⁻¹` is taken here, once per
    /// probe, not per ciphertext.
    w: Vec<u32>,
    /// How the block sums become the score residues.
    combine: Combine,
}

/// `a_{d·m+r} = Σ_b u_b^(−m)·S_b` for every row `m` (`n⁻¹` is in the
/// probe's weights).
#[derive(Clone, Debug)]
enum Combine {
    /// A negacyclic inverse transform of degree `B` without its `n⁻¹` (see
    /// the module's notes): Gentleman–Sande butterflies `(x, y) → (x + y,
    /// (x − y)·w)` with `w = ω^(−brv(k))` at index `k` (the stage with `h`
    /// groups reads `h..2h`), each kept as the weights `(w, q − w)` of
    /// `x·w + y·(q − w)`.
    Transform { twiddles: Vec<[ShoupConstant; 2]> },
    /// `u_b^(−m)`, row `m`, column `b` (`B × B`), with the products summed
    /// in 64 bits before one reduction: `(q−1)²·terms < 2^64`.
    Matrix { rows: Vec<u32>, terms: usize },
}

impl Combine {
    /// The combination for the classes `u` (block order) over `m`: the
    /// transform where `u_b = u_0^(2·brv(b)+1)`, the matrix elsewhere.
    fn new(m: &Modulus, u: &[u32]) -> Self {
        let blocks = u.len();
        let bits = blocks.trailing_zeros();
        let omega = u[0];
        let in_order = blocks.is_power_of_two()
            && (0..blocks).all(|b| u[b] == m.pow(omega, 2 * bit_reverse(b, bits) as u64 + 1));
        if in_order {
            let omega_inv = m.inv(omega);
            let twiddles = (0..blocks)
                .map(|k| {
                    let w = m.pow(omega_inv, bit_reverse(k, bits) as u64);
                    [m.shoup(w), m.shoup(m.neg(w))]
                })
                .collect();
            return Combine::Transform { twiddles };
        }
        Self::matrix(m, u)
    }

    /// The `B × B` matrix, for any classes.
    fn matrix(m: &Modulus, u: &[u32]) -> Self {
        let blocks = u.len();
        let mut rows = vec![0u32; blocks * blocks];
        for (b, &ub) in u.iter().enumerate() {
            let u_inv = m.inv(ub);
            let mut x = 1;
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

    /// The score residues of one prime for `lanes` ciphertexts at once:
    /// `rows` holds `B` rows of `lanes` words, row `b` the block sums `S_b`
    /// of every ciphertext, and receives row `m` of every ciphertext's
    /// residues in their place. `spare` (as long as `rows`) is scratch.
    fn apply_rows(
        &self,
        m: &Modulus,
        backend: Backend,
        lanes: usize,
        rows: &mut [u32],
        spare: &mut [u32],
    ) {
        match self {
            // Each stage reads one buffer and writes the other.
            Combine::Transform { twiddles } => {
                let blocks = rows.len() / lanes;
                let (mut t, mut h, mut flipped) = (1, blocks / 2, false);
                while h >= 1 {
                    let (from, to) = match flipped {
                        false => (&*rows, &mut *spare),
                        true => (&*spare, &mut *rows),
                    };
                    let pairs = from
                        .chunks_exact(2 * t * lanes)
                        .zip(to.chunks_exact_mut(2 * t * lanes));
                    for ((from, to), w) in pairs.zip(&twiddles[h..2 * h]) {
                        let (x, y) = from.split_at(t * lanes);
                        let (sum, diff) = to.split_at_mut(t * lanes);
                        for (o, (&a, &b)) in sum.iter_mut().zip(x.iter().zip(y)) {
                            *o = m.add(a, b);
                        }
                        let each = x.chunks_exact(lanes).zip(y.chunks_exact(lanes));
                        for ((x, y), o) in each.zip(diff.chunks_exact_mut(lanes)) {
                            backend.lincomb(m, &[x, y], w, o);
                        }
                    }
                    (t, h, flipped) = (2 * t, h / 2, !flipped);
                }
                if flipped {
                    rows.copy_from_slice(spare);
                }
            }
            // A column at a time (tables that need the matrix are not the
            // presets').
            Combine::Matrix { .. } => {
                let blocks = rows.len() / lanes;
                let (mut column, mut out) = (vec![0u32; blocks], vec![0u32; blocks]);
                for c in 0..lanes {
                    for (x, row) in column.iter_mut().zip(rows.chunks_exact(lanes)) {
                        *x = row[c];
                    }
                    self.apply(m, &column, &mut out);
                    for (row, &x) in rows.chunks_exact_mut(lanes).zip(&out) {
                        row[c] = x;
                    }
                }
            }
        }
    }

    /// The score residues of one ciphertext and prime from its block sums:
    /// the transform as a run of one (portable kernels), the matrix one
    /// product at a time (the reference the transform is tested against).
    fn apply(&self, m: &Modulus, sums: &[u32], out: &mut [u32]) {
        match self {
            Combine::Transform { .. } => {
                out.copy_from_slice(sums);
                let mut spare = vec![0u32; sums.len()];
                self.apply_rows(m, Backend::scalar(), 1, out, &mut spare);
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
        let mut out = Vec::with_capacity(limbs);
        for plan in &params.plans_q()[..limbs] {
            let m = plan.modulus();
            let q = m.value();
            let n_inv = m.inv(m.reduce_u32(n as u32));
            // v_k: the transform of the monomial X.
            let mut v = vec![0u32; n];
            v[1] = 1;
            plan.forward(&mut v);
            let mut class = Vec::with_capacity(blocks);
            let mut w = Vec::with_capacity(n);
            for (b, block) in v.chunks_exact(dim).enumerate() {
                let u_b = m.pow(block[0] % q, dim as u64);
                // On this block's roots v^(−r) = v^(−d)·v = u_b⁻¹·v (r = d − 1):
                // one inverse a block, not one and a power per root.
                let scale = m.mul(n_inv, m.inv(u_b));
                for &vk in block {
                    let vk = vk % q;
                    if m.pow(vk, dim as u64) != u_b {
                        return None;
                    }
                    w.push(m.mul(scale, vk));
                }
                if class[..b].contains(&u_b) {
                    return None;
                }
                class.push(u_b);
            }
            out.push(LimbTables {
                w,
                combine: Combine::new(m, &class),
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

    /// The dimension the tables score.
    pub(crate) fn dim(&self) -> usize {
        self.dim
    }

    /// Coefficients `d·m + d − 1` (every block `m`) of polynomial `k` of
    /// `ct`, a ciphertext at this scorer's level, prime by prime
    /// (`out[i][m]`): exactly what its inverse transform gives there, from
    /// a product by the weights, a sum per block and the combination (the
    /// module's notes, for one polynomial): about half an inverse
    /// transform's work per prime, where only those coefficients are
    /// needed (the compact reply's `c0`).
    pub(crate) fn coefficients(&self, params: &Params, ct: &Ciphertext, k: usize) -> Vec<Vec<u32>> {
        let mut products = vec![0u32; self.dim * self.blocks];
        let mut sums = vec![0u32; self.blocks];
        let tables = self.limbs.iter().zip(params.plans_q()).enumerate();
        tables
            .map(|(i, (t, plan))| {
                let m = plan.modulus();
                // Residues and weights below q < 2^30: a block's sum of 2^24
                // products reduced below q fits 64 bits.
                plan.backend()
                    .mul(m, ct.residues(k, i), &t.w, &mut products);
                for (s, block) in sums.iter_mut().zip(products.chunks_exact(self.dim)) {
                    *s = m.reduce_u64(block.iter().map(|&x| x as u64).sum());
                }
                let mut out = vec![0u32; self.blocks];
                t.combine.apply(m, &sums, &mut out);
                out
            })
            .collect()
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
            // The probe and the key are held as p·2^32 and s·2^32: one
            // Montgomery product with each gives p·w and p·s·w.
            let (pk, s) = (probe.limb(i), sk.ntt_mont_limb(i));
            for k in 0..n {
                p0[k] = m.mont_mul(pk[k], t.w[k]);
                p1[k] = m.mont_mul(m.mont_mul(pk[k], s[k]), t.w[k]);
            }
        }
        FusedProbe { p }
    }

    /// The residues of the score coefficients of each `cts[c]·probe`,
    /// decrypted (every ciphertext at this scorer's level):
    /// `rows[(i·B + m)·C + c]` is coefficient `d·m + d − 1` mod prime `i` of
    /// `cts[c]`, for `C = cts.len()`, `B = n/d` blocks and `L` primes; a
    /// prime's row `m` holds that score of every ciphertext, as the rounding
    /// takes them. The ciphertexts are read two at a time against one read
    /// of the probe (in cache the probe's reads, as many as the gallery's,
    /// bound the kernel: bench/HISTORY.md), each pair prefetching the next,
    /// the last the first of `next` (read after these). The ciphertexts
    /// come as their [`residues`], `C·L` entries, and `next` as the same
    /// (empty at the end of a pass).
    pub(crate) fn score_rows(
        &self,
        params: &Params,
        residues: &[Residues],
        next: &[Residues],
        probe: &FusedProbe,
        scratch: &mut Vec<u32>,
        rows: &mut [u32],
    ) {
        let (blocks, limbs) = (self.blocks, self.limbs.len());
        let c = residues.len() / limbs;
        assert!(
            residues.len() == limbs * c && rows.len() == limbs * blocks * c,
            "FusedScorer::score_rows"
        );
        let n = self.dim * blocks;
        // Block sums, prime-major then ciphertext by ciphertext, then the
        // same transposed into `rows` for the combination's rows.
        scratch.resize(2 * rows.len(), 0);
        let (sums, spare) = scratch.split_at_mut(rows.len());
        let known = c + (next.len() / limbs).min(2);
        let of = |ct: usize, i: usize| {
            (ct < known).then(|| match ct.checked_sub(c) {
                None => residues[ct * limbs + i],
                Some(ct) => next[ct * limbs + i],
            })
        };
        for first in (0..c).step_by(2) {
            // The ciphertexts read after these, which they prefetch.
            let after = (first + 2).min(c);
            for (i, plan) in params.plans_q()[..limbs].iter().enumerate() {
                let (p0, p1) = probe.p[2 * n * i..2 * n * (i + 1)].split_at(n);
                let (m, backend) = (plan.modulus(), plan.backend());
                let at = (i * c + first) * blocks;
                let here = |ct| residues[ct * limbs + i];
                if first + 1 < c {
                    let (sa, sb) = sums[at..at + 2 * blocks].split_at_mut(blocks);
                    let next = [of(after, i), of(after + 1, i)];
                    let pair = [here(first), here(first + 1)];
                    backend.dot2_blocks_many(m, pair, p0, p1, [sa, sb], next);
                } else {
                    let sa = &mut sums[at..at + blocks];
                    let next = [of(after, i)];
                    backend.dot2_blocks_many(m, [here(first)], p0, p1, [sa], next);
                }
            }
        }
        for (i, (t, plan)) in self.limbs.iter().zip(params.plans_q()).enumerate() {
            let (from, to) = (
                &sums[i * blocks * c..],
                &mut rows[i * blocks * c..][..blocks * c],
            );
            let from = &from[..blocks * c];
            for (b, row) in to.chunks_exact_mut(c).enumerate() {
                for (o, ct_sums) in row.iter_mut().zip(from.chunks_exact(blocks)) {
                    *o = ct_sums[b];
                }
            }
            let spare = &mut spare[..blocks * c];
            t.combine
                .apply_rows(plan.modulus(), plan.backend(), c, to, spare);
        }
    }
}

/// Prime `i`'s residues of a ciphertext's two polynomials.
pub(crate) type Residues<'a> = (&'a [u32], &'a [u32]);

/// Every ciphertext's [`Residues`], prime by prime (`ct·L + i` for `L =
/// limbs`), looked up once for a whole pass: they sit behind a pointer per
/// ciphertext, and a loop of lookups alone lets those cache misses overlap,
/// where a lookup in each call of the pass stalled it, and lookups made
/// during the pass find the ciphertexts' headers evicted by the gallery's
/// own reads (bench/HISTORY.md).
pub(crate) fn residues(cts: &[Ciphertext], limbs: usize) -> Vec<Residues<'_>> {
    let mut out = Vec::with_capacity(cts.len() * limbs);
    for ct in cts {
        for i in 0..limbs {
            out.push((ct.residues(0, i), ct.residues(1, i)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// At every dimension and prime of the preset, the tables take the
    /// transform, and it gives what the matrix gives, on random sums and
    /// on the extremes: one ciphertext at a time, and in rows of 1, 3, 8
    /// and 33 ciphertexts on every backend (the matrix's rows too).
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
                let matrix = Combine::matrix(m, &u);
                // 0, q − 1, or a random residue, as `kind` is 0, 1 or more.
                let mut residue = |kind: usize| match kind {
                    0 => 0,
                    1 => q - 1,
                    _ => {
                        state ^= state << 13;
                        state ^= state >> 7;
                        state ^= state << 17;
                        (state % q as u64) as u32
                    }
                };
                for round in 0..8 {
                    let sums: Vec<u32> = (0..f.blocks).map(|_| residue(round)).collect();
                    let (mut fast, mut slow) = (vec![0; f.blocks], vec![0; f.blocks]);
                    t.combine.apply(m, &sums, &mut fast);
                    matrix.apply(m, &sums, &mut slow);
                    assert_eq!(fast, slow, "d={dim} q={q} round {round}");
                }
                for lanes in [1, 3, 8, 33] {
                    let sums: Vec<u32> = (0..f.blocks * lanes).map(|x| residue(x % 5)).collect();
                    // Column `c` of the rows, combined alone by the matrix.
                    let mut want = vec![0u32; sums.len()];
                    for c in 0..lanes {
                        let column: Vec<u32> = (0..f.blocks).map(|b| sums[b * lanes + c]).collect();
                        let mut out = vec![0; f.blocks];
                        matrix.apply(m, &column, &mut out);
                        for (b, x) in out.into_iter().enumerate() {
                            want[b * lanes + c] = x;
                        }
                    }
                    for combine in [&t.combine, &matrix] {
                        for backend in Backend::available() {
                            let mut rows = sums.clone();
                            let mut spare = vec![0u32; sums.len()];
                            combine.apply_rows(m, backend, lanes, &mut rows, &mut spare);
                            assert_eq!(rows, want, "d={dim} q={q} lanes {lanes} {backend:?}");
                        }
                    }
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
                let mut scratch = Vec::new();
                let one = residues(std::slice::from_ref(&ct), level);
                f.score_rows(&params, &one, &[], &fp, &mut scratch, &mut rows);
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
                // Rows of one to five ciphertexts in one call, with and
                // without ciphertexts after them: each ciphertext's column
                // is the rows it gets alone.
                let cts: Vec<Ciphertext> = (0..5)
                    .map(|_| {
                        let ct = pk.encrypt_with(&msg, &mut rng).unwrap();
                        ev.mod_switch_to(&ct, level).unwrap()
                    })
                    .collect();
                let alone: Vec<Vec<u32>> = cts
                    .iter()
                    .map(|ct| {
                        let mut rows = vec![0u32; level * blocks];
                        let one = residues(std::slice::from_ref(ct), level);
                        f.score_rows(&params, &one, &[], &fp, &mut scratch, &mut rows);
                        rows
                    })
                    .collect();
                for c in 1..=cts.len() {
                    for next in [&cts[c..], &cts[..0]] {
                        let mut rows = vec![0u32; level * blocks * c];
                        let (these, next) = (residues(&cts[..c], level), residues(next, level));
                        f.score_rows(&params, &these, &next, &fp, &mut scratch, &mut rows);
                        for (k, alone) in alone.iter().enumerate().take(c) {
                            let column: Vec<u32> =
                                (0..level * blocks).map(|r| rows[r * c + k]).collect();
                            assert_eq!(&column, alone, "d={dim} {c} ciphertexts, column {k}");
                        }
                    }
                }
            }
        }
    }
}
