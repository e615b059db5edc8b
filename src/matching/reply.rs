//! The compact form of a 1:1 reply: exactly what the key holder needs to
//! read the scores.
//!
//! A relinearized reply `(c0, c1)` decrypts at a score position `j` as
//! `round(t/Q · (c0 + c1·s)_j)`. Only `c0` at the score positions and all of
//! `c1` take part, and both can be scaled from `Q` down to `2^32` (a modulus
//! switch to a power of two): `c' = round(2^32/Q · c) mod 2^32`. Then
//! `c0' + c1'·s = 2^32/Q · (c0 + c1·s) + E (mod 2^32)`, where the scaling
//! errors add up to `|E| <= 1.25 · (1 + ‖s‖₁) <= 1.25 · (n + 1)`, which for
//! n = 4096 is below 2^13, and the key holder reads
//! `round(t · (c0' + c1'·s) / 2^32) mod t`. The scaling moves that quotient
//! by at most `t·|E| / 2^32 < 0.08` for t = 65537, so a reply that decrypts
//! with more than about 1.3 bits of noise budget decrypts the same from its
//! compact form; docs/PARAMETERS.md has the figures. For `auth4096` at d =
//! 128 the reply is 16,532 bytes instead of 59,408.
//!
//! Nothing else of the ciphertext is sent: the non-score coefficients of `c0`
//! (already masked) are simply left out, so the key holder has no way to
//! decrypt anything but the scores.

use crate::bfv::poly::{Coeff, RnsPoly};
use crate::bfv::{Ciphertext, Params, SecretKey, ToPowerOfTwo};
use crate::error::MatchError;
use zeroize::Zeroize;

use super::fused::FusedScorer;
use super::pack::{score_position, templates_per_ciphertext};

/// A 1:1 reply in compact form: `c0` at the score positions and `c1`, both
/// scaled to residues mod 2^32. See the module documentation.
#[derive(Clone, PartialEq, Eq)]
pub struct ScoreReply {
    pub(crate) params: Params,
    pub(crate) dim: usize,
    /// `c0` at `score_position(dim, k)` for every k, mod 2^32.
    pub(crate) c0: Vec<u32>,
    /// All n coefficients of `c1`, mod 2^32.
    pub(crate) c1: Vec<u32>,
}

impl std::fmt::Debug for ScoreReply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ScoreReply {{ params: {}, dim: {}, scores: {} }}",
            self.params.id_hex(),
            self.dim,
            self.c0.len()
        )
    }
}

/// `Σ (z_i & nz_i) ^ ng_i` mod 2^32, eight lanes at a time (the compiler
/// turns the lanes into vector registers).
fn masked_sum(nz: &[u32], ng: &[u32], z: &[u32]) -> u32 {
    const L: usize = 8;
    let mut acc = [0u32; L];
    let lanes = nz
        .chunks_exact(L)
        .zip(ng.chunks_exact(L))
        .zip(z.chunks_exact(L));
    for ((a, b), c) in lanes {
        for l in 0..L {
            acc[l] = acc[l].wrapping_add((c[l] & a[l]) ^ b[l]);
        }
    }
    let whole = nz.len() / L * L;
    let tail = nz[whole..].iter().zip(&ng[whole..]).zip(&z[whole..]);
    let sum = tail.fold(0u32, |s, ((&a, &b), &c)| s.wrapping_add((c & a) ^ b));
    acc.iter().fold(sum, |s, &x| s.wrapping_add(x))
}

impl ScoreReply {
    /// The compact form of a verification reply for embeddings of dimension
    /// `dim`. The reply must be relinearized (size 2); a size-3 product
    /// stays a ciphertext, as `c2·s²` would need far more than 32 bits.
    pub fn from_ciphertext(ct: &Ciphertext, dim: usize) -> Result<Self, MatchError> {
        Self::from_ciphertext_plus(ct, None, dim, None)
    }

    /// The compact form of `ct` with the coefficient-domain polynomial
    /// `plus` (over `ct`'s primes) added to its `c0`: the same reply as that
    /// of the sum, without transforming `plus` there and back. With
    /// `scores`, tables for `ct`'s level and `dim`, the score positions of
    /// `c0` are read from its evaluations ([`FusedScorer::coefficients`])
    /// instead of inverse-transforming all of it; the same residues.
    pub(crate) fn from_ciphertext_plus(
        ct: &Ciphertext,
        plus: Option<&RnsPoly<Coeff>>,
        dim: usize,
        scores: Option<&FusedScorer>,
    ) -> Result<Self, MatchError> {
        let params = ct.params();
        super::quantize::Quantizer::new(params, dim)?;
        if ct.size() != 2 {
            return Err(MatchError::ReplyNotRelinearized { size: ct.size() });
        }
        let plans = &params.plans_q()[..ct.level()];
        let scale = ToPowerOfTwo::new(plans.iter().map(|p| *p.modulus()).collect());
        // c0 only at the score positions: those residues, limb by limb.
        let per = templates_per_ciphertext(params, dim);
        let mut rows0: Vec<Vec<u32>> =
            match scores.filter(|f| f.limbs() == ct.level() && f.dim() == dim) {
                Some(f) => f.coefficients(params, ct, 0),
                None => {
                    let c0 = ct.coeff_poly(0);
                    (0..c0.limbs())
                        .map(|i| {
                            (0..per)
                                .map(|k| c0.limb(i)[score_position(dim, k)])
                                .collect()
                        })
                        .collect()
                }
            };
        if let Some(x) = plus {
            for (i, (row, plan)) in rows0.iter_mut().zip(plans).enumerate() {
                let m = plan.modulus();
                for (k, r) in row.iter_mut().enumerate() {
                    *r = m.add(*r, x.limb(i)[score_position(dim, k)]);
                }
            }
        }
        let c1 = ct.coeff_poly(1);
        let refs0: Vec<&[u32]> = rows0.iter().map(|r| r.as_slice()).collect();
        let refs1: Vec<&[u32]> = (0..c1.limbs()).map(|i| c1.limb(i)).collect();
        let backend = plans[0].backend();
        Ok(Self {
            params: params.clone(),
            dim,
            c0: scale.scale(&refs0, backend),
            c1: scale.scale(&refs1, backend),
        })
    }

    /// The parameters of the reply.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// The embedding dimension the reply was made for.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The number of scores (n / dim).
    pub fn len(&self) -> usize {
        self.c0.len()
    }

    /// Whether the reply has no scores (never, for a reply that parsed).
    pub fn is_empty(&self) -> bool {
        self.c0.is_empty()
    }

    /// The key holder's step: every score in `[0, t)`, in template order.
    pub fn decrypt(&self, sk: &SecretKey) -> Result<Vec<u32>, MatchError> {
        Ok(self.decrypt_with_phase(sk)?.0)
    }

    /// [`Self::decrypt`], and the largest distance of a score position's
    /// phase `t·(c0 + c1·s)/2^32` from the integer it rounds to, in `[0,
    /// 0.5]`. Under the key the reply was made for, it is the reply's
    /// relative noise plus the compact form's scaling (below 0.08); under any
    /// other key each position's phase is uniform, so a bound on the largest
    /// one tells a reply made for this key from one that is not.
    pub fn decrypt_with_phase(&self, sk: &SecretKey) -> Result<(Vec<u32>, f64), MatchError> {
        self.params.check(sk.params())?;
        let n = self.params.degree();
        let t = self.params.plaintext_modulus() as u64;
        // (c1·s)_j = Σ_i s_i · c(j - i), with c(k) = -c1[k + n] for k < 0
        // (negacyclic): over z[k] = c(k - (n - 1)) and s reversed, it is a
        // dot product of s with the window z[j .. j + n].
        let mut z = Vec::with_capacity(2 * n - 1);
        z.extend(self.c1[1..].iter().map(|&c| c.wrapping_neg()));
        z.extend_from_slice(&self.c1);
        // s reversed, as masks: all ones where s_i != 0 (`nz`) and where
        // s_i = -1 (`ng`). Then s_i · z = ((z & nz) ^ ng) + (1 if s_i = -1):
        // two bit operations per term, which vectorize without a multiply.
        let mut nz: Vec<u32> = sk
            .ternary_coeffs()
            .iter()
            .rev()
            .map(|&c| 0u32.wrapping_sub((c != 0) as u32))
            .collect();
        let mut ng: Vec<u32> = sk
            .ternary_coeffs()
            .iter()
            .rev()
            .map(|&c| 0u32.wrapping_sub((c < 0) as u32))
            .collect();
        let negatives = ng.iter().fold(0u32, |a, &m| a.wrapping_add(m & 1));
        let mut worst = 0u64;
        let out = self
            .c0
            .iter()
            .enumerate()
            .map(|(k, &c0)| {
                let j = score_position(self.dim, k);
                let dot = masked_sum(&nz, &ng, &z[j..j + n]).wrapping_add(negatives);
                let v = c0.wrapping_add(dot) as u64;
                let rounded = v * t + (1 << 31);
                // The phase's distance to its integer, in units of 2^-32.
                let off = (rounded & 0xffff_ffff).abs_diff(1 << 31);
                worst = worst.max(off);
                ((rounded >> 32) % t) as u32
            })
            .collect();
        nz.zeroize();
        ng.zeroize();
        Ok((out, worst as f64 / 4_294_967_296.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bfv::{Prng, PublicKey, RelinKey};
    use crate::matching::worst_case::WorstCase;
    use crate::matching::{client, Verifier};

    /// The largest possible ‖s‖₁ (every coefficient ±1) with maximum-norm
    /// templates and probes: the compact reply still decrypts exactly.
    #[test]
    fn worst_case_secret_decrypts_exactly() {
        let params = Params::auth4096();
        let w = WorstCase::new(&params, 128);
        let (sk, q) = (&w.sk, &w.q);
        let mut rng = Prng::from_seed([6; 32]);
        let pk = PublicKey::new_with(sk, &mut rng);
        let rk = RelinKey::new_with(sk, &mut rng);
        let v = Verifier::new(&params, 128).unwrap();
        let template = client::encrypt_templates(sk, q, &w.templates(), &mut rng).unwrap();
        let probe = client::encrypt_probe(sk, q, &w.flat, &mut rng).unwrap();
        let reply = v
            .verify_with(&template, &probe, &pk, Some(&rk), &mut rng)
            .unwrap();
        let got = client::decrypt_score_reply(sk, q, &v.compact(&reply).unwrap(), 32).unwrap();
        let want = w.scores();
        assert_eq!(got.scores, want);
        // And the same as the full ciphertext decrypts to.
        assert_eq!(
            client::decrypt_scores(sk, q, &reply, 32).unwrap().scores,
            want
        );
    }

    /// Read from the evaluations or from the inverse transform, `c0`'s score
    /// positions give the same reply: every dimension, every level, with and
    /// without a polynomial added to `c0`; tables of another level or
    /// dimension are not used.
    #[test]
    fn score_positions_from_the_evaluations_equal_the_transform() {
        let params = Params::auth4096();
        let t = params.plaintext_modulus();
        let mut rng = Prng::from_seed([8; 32]);
        let sk = SecretKey::generate_with(&params, &mut rng);
        let pk = PublicKey::new_with(&sk, &mut rng);
        let ev = crate::bfv::Evaluator::new(&params);
        let random = |rng: &mut Prng| {
            let coeffs: Vec<u32> = (0..params.degree()).map(|_| rng.next_u32() % t).collect();
            crate::bfv::Plaintext::from_coeffs(&params, &coeffs).unwrap()
        };
        for dim in crate::matching::DIMENSIONS {
            for level in 1..=params.limbs() {
                let f = FusedScorer::new(&params, dim, level).expect("tables");
                let ct = pk.encrypt_with(&random(&mut rng), &mut rng).unwrap();
                let ct = ev.mod_switch_to(&ct, level).unwrap();
                let plus = crate::bfv::scaled_message(&params, &random(&mut rng), level);
                for plus in [None, Some(&plus)] {
                    let want = ScoreReply::from_ciphertext_plus(&ct, plus, dim, None).unwrap();
                    let got = ScoreReply::from_ciphertext_plus(&ct, plus, dim, Some(&f)).unwrap();
                    assert_eq!(got, want, "d={dim} level {level}");
                }
                let other = FusedScorer::new(&params, dim, level % params.limbs() + 1).unwrap();
                let got = ScoreReply::from_ciphertext_plus(&ct, None, dim, Some(&other)).unwrap();
                assert_eq!(got, ScoreReply::from_ciphertext(&ct, dim).unwrap());
            }
        }
    }
}
