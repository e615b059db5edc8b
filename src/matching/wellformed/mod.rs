//! Checking, on ciphertexts, that a client encrypted a valid quantized
//! embedding: every component one of the quantizer's levels and the squared
//! norm within its bound, read so that nothing can wrap mod t.
//! docs/PROTOCOL.md ("Well-formed embeddings") has the argument.
//!
//! With each coefficient-packed probe or template the client sends, per
//! sample, the **one-hot** encoding of its components in slots: component
//! `i` with level `v` sets slot `i·L + (v + L/2)` to 1 and the other `L - 1`
//! slots of `i` to 0 (`L` levels, [`Quantizer::levels`]; 128 components of
//! 32 levels fill the 4096 slots of one ciphertext). Then:
//!
//! * **Bits.** `H⊙H − H` is zero in every slot exactly when every slot is 0
//!   or 1 (t is prime). The matcher computes it (one product) and the
//!   decider decrypts it whole: an honest client's is all zeros, so it says
//!   nothing but its noise, which a flood hides.
//! * **Sums.** Everything else is linear, and the sum of a slot-encoded
//!   plaintext's slots is `n` times its constant coefficient; a product with
//!   a coefficient plaintext `ρ` puts any chosen linear combination of the
//!   packed coefficients at the constant coefficient too. So with weights
//!   drawn by the matcher after the client's ciphertexts are fixed, one
//!   constant coefficient is zero for an honest client and uniform for any
//!   other (probability 1/t of zero): each component has exactly one level
//!   set, the packed coefficient holds that level's value, and every
//!   coefficient outside the samples is zero. [`SUM_CHECKS`] of them.
//! * **Norms.** Per sample, `Σ_i Σ_v v²·h_iv` is the squared norm, at most
//!   `d·(L/2)² < t` once the bits and sums hold: read exactly at a constant
//!   coefficient, and compared with the quantizer's bound.
//!
//! The decider reads only these: all-zero plaintexts, constant coefficients
//! that are zero, and one squared norm per sample (what it learns about an
//! honest client). A bits reply is re-randomized by a fresh encryption and
//! flooded at every coefficient; a sum or norm reply, a product with
//! plaintexts only, is masked and flooded at the score positions its compact
//! form carries.

use crate::bfv::poly::{Coeff, RnsPoly};
use crate::bfv::{flood, scaled_message, PkEncryptionParts};
use crate::bfv::{
    BatchEncoder, Ciphertext, Evaluator, Params, Plaintext, PlaintextNtt, Prng, PublicKey,
    RelinKey, SecretKey,
};
use crate::error::MatchError;

use super::fused::FusedScorer;
use super::pack::{score_position, templates_per_ciphertext};
use super::quantize::Quantizer;
use super::ScoreReply;

mod wire;

pub use wire::{frame, split, Bundle};

/// Independent sum checks: a client that is not well-formed passes all of
/// them with probability `t^-3` (2^-48 at t = 65537).
pub const SUM_CHECKS: usize = 3;

/// The flood on the score positions of a sum or norm reply, `2^-k` of a
/// plaintext step. Those replies are products with plaintexts only and keep
/// about 35 bits of budget before it (statistical distance about `2^-31` per
/// score position); the flood leaves 5.
pub const SUM_FLOOD_BITS: u32 = 6;

/// The flood on every coefficient of a bits reply (`H⊙H − H`), `2^-k` of a
/// step: with at least 26 bits of its own budget (28.5 measured, the test
/// `honest_clients_pass_and_keep_their_budget`) its noise is at most `2^-27`
/// of a step, within statistical distance `2^-26` of the flood per
/// coefficient and `2^-14` per reply of 4096; the flood leaves 1 bit.
pub const BITS_FLOOD_BITS: u32 = 2;

/// The most list items, over every supported dimension: one-hot
/// ciphertexts (bits replies) and compact replies, for a probe and for a
/// full template.
#[derive(Clone, Copy, Debug)]
pub struct MaxItems {
    pub probe_bits: usize,
    pub probe_replies: usize,
    pub template_bits: usize,
    pub template_replies: usize,
}

/// [`MaxItems`] for `params`.
pub fn max_items(params: &Params) -> MaxItems {
    let mut m = MaxItems {
        probe_bits: 0,
        probe_replies: 0,
        template_bits: 0,
        template_replies: 0,
    };
    for d in super::DIMENSIONS {
        let Ok(q) = Quantizer::new(params, d) else {
            continue;
        };
        let Ok(layout) = OneHot::new(params, &q) else {
            continue;
        };
        let per = layout.ciphertexts_per_sample();
        let samples = params.degree() / d;
        m.probe_bits = m.probe_bits.max(per);
        m.probe_replies = m.probe_replies.max(SUM_CHECKS + 1);
        m.template_bits = m.template_bits.max(samples * per);
        m.template_replies = m.template_replies.max(SUM_CHECKS + samples);
    }
    m
}

/// What a packed ciphertext holds, and where each component sits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Packed {
    /// A probe: component `i` at coefficient `d − 1 − i`.
    Probe,
    /// A template of `samples` samples: sample `k`'s component `i` at `k·d + i`.
    Template { samples: usize },
}

impl Packed {
    fn samples(self) -> usize {
        match self {
            Packed::Probe => 1,
            Packed::Template { samples } => samples,
        }
    }

    fn position(self, dim: usize, sample: usize, i: usize) -> usize {
        match self {
            Packed::Probe => dim - 1 - i,
            Packed::Template { .. } => sample * dim + i,
        }
    }
}

/// Why a client's ciphertexts are not a well-formed embedding.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Malformed {
    /// A one-hot slot is neither 0 nor 1.
    #[error("a one-hot slot of sample {sample} is neither 0 nor 1")]
    Bits { sample: usize },
    /// A sum check failed: a component with no level or several, a packed
    /// coefficient that is not its level, or a coefficient outside the
    /// samples that is not zero.
    #[error("the packed ciphertext and its one-hot encoding disagree (sum check {check})")]
    Sums { check: usize },
    /// A sample's squared norm is above the quantizer's bound.
    #[error("sample {sample} has squared norm {norm2}, above {max}")]
    Norm { sample: usize, norm2: u32, max: i64 },
}

/// One-hot ciphertexts per sample of `dim` components of `levels` levels.
fn per_sample(params: &Params, dim: usize, levels: usize) -> usize {
    dim.div_ceil(params.degree() / levels)
}

/// One-hot ciphertexts per sample for `q`'s embeddings.
pub fn ciphertexts_per_sample(params: &Params, q: &Quantizer) -> usize {
    per_sample(params, q.dim(), q.levels())
}

/// The one-hot layout for one dimension: `L` levels per component,
/// `n / L` components per ciphertext.
#[derive(Clone, Debug)]
pub struct OneHot {
    params: Params,
    dim: usize,
    levels: usize,
    lowest: i32,
    encoder: BatchEncoder,
}

impl OneHot {
    pub fn new(params: &Params, q: &Quantizer) -> Result<Self, MatchError> {
        Ok(Self {
            params: params.clone(),
            dim: q.dim(),
            levels: q.levels(),
            lowest: q.range().0,
            encoder: BatchEncoder::new(params)?,
        })
    }

    /// Components per ciphertext.
    fn per_ciphertext(&self) -> usize {
        self.params.degree() / self.levels
    }

    /// One-hot ciphertexts per sample (1 at d = 128 for `auth4096`).
    pub fn ciphertexts_per_sample(&self) -> usize {
        per_sample(&self.params, self.dim, self.levels)
    }

    /// The value of level `j`.
    fn value(&self, j: usize) -> i64 {
        self.lowest as i64 + j as i64
    }

    /// The components `c·n/L ..` of ciphertext `c` of a sample.
    fn components(&self, c: usize) -> std::ops::Range<usize> {
        let per = self.per_ciphertext();
        c * per..((c + 1) * per).min(self.dim)
    }

    /// The one-hot plaintexts of one quantized sample.
    pub fn encode(&self, sample: &[i32]) -> Result<Vec<Plaintext>, MatchError> {
        if sample.len() != self.dim {
            return Err(MatchError::WrongLength {
                expected: self.dim,
                actual: sample.len(),
            });
        }
        (0..self.ciphertexts_per_sample())
            .map(|c| {
                let mut slots = vec![0i64; self.params.degree()];
                for (local, i) in self.components(c).enumerate() {
                    let j = sample[i] as i64 - self.lowest as i64;
                    if !(0..self.levels as i64).contains(&j) {
                        return Err(MatchError::OutOfRange {
                            index: i,
                            value: sample[i],
                        });
                    }
                    slots[local * self.levels + j as usize] = 1;
                }
                Ok(self.encoder.encode(&slots)?)
            })
            .collect()
    }

    /// Encrypts the one-hot plaintexts of one quantized sample.
    pub fn encrypt(
        &self,
        pk: &PublicKey,
        sample: &[i32],
        rng: &mut Prng,
    ) -> Result<Vec<Ciphertext>, MatchError> {
        self.encode(sample)?
            .iter()
            .map(|pt| Ok(pk.encrypt_with(pt, rng)?))
            .collect()
    }
}

/// What the matcher sends the decider for one packed ciphertext.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckReplies {
    /// `H⊙H − H` per one-hot ciphertext, flooded everywhere.
    pub bits: Vec<Ciphertext>,
    /// [`SUM_CHECKS`] compact replies whose first score position is zero.
    pub sums: Vec<ScoreReply>,
    /// Per sample, a compact reply with the squared norm at its first score
    /// position.
    pub norms: Vec<ScoreReply>,
}

/// A draw uniform in `[0, t)`: Lemire's multiply-and-reject, the high half
/// of `x·t` once draws whose low half falls below `(2^32 − t) mod t` are
/// discarded (for t = 65537 that bound is 1: one draw in 2^32); one draw
/// and one multiply, no division, and rejection depends only on discarded
/// draws.
pub(crate) fn uniform_mod(rng: &mut Prng, t: u32) -> u32 {
    let threshold = t.wrapping_neg() % t;
    loop {
        let m = rng.next_u32() as u64 * t as u64;
        if m as u32 >= threshold {
            return (m >> 32) as u32;
        }
    }
}

/// `out.len()` draws of [`uniform_mod`], in order: the same values from the
/// same words, read from the generator's buffer a run at a time. A run in
/// which no word is refused (all but one in about 2^32 / run length for
/// t = 65537) is taken whole, in a loop the compiler vectorizes; one with a
/// refusal gives its first value through [`uniform_mod`], and the next run
/// starts after it.
pub(crate) fn fill_uniform_mod(rng: &mut Prng, t: u32, out: &mut [u32]) {
    let threshold = t.wrapping_neg() % t;
    let low = |w: u32| (w as u64 * t as u64) as u32;
    let mut i = 0;
    while i < out.len() {
        let words = rng.unread_words();
        let k = words.len().min(out.len() - i);
        let run = &words[..k];
        if run
            .iter()
            .fold(false, |refused, &w| refused | (low(w) < threshold))
        {
            out[i] = uniform_mod(rng, t);
            i += 1;
            continue;
        }
        for (o, &w) in out[i..i + k].iter_mut().zip(run) {
            *o = ((w as u64 * t as u64) >> 32) as u32;
        }
        rng.consume(k);
        i += k;
    }
}

/// The matcher's side: the check replies for a packed ciphertext and its
/// one-hot ciphertexts.
#[derive(Clone, Debug)]
pub struct Checker {
    params: Params,
    ev: Evaluator,
    layout: OneHot,
    /// Per one-hot ciphertext index, `n·v²` at each level's slot (the norm),
    /// times `x^(d−1)` ([`moved`]).
    squares: Vec<PlaintextNtt>,
    /// The floods, bits replies then sums and norms (`None`: none, for
    /// measuring the replies' own noise in tests).
    floods: Option<(u32, u32)>,
    /// Tables that read a sum or norm reply's score positions of `c0`
    /// without its inverse transforms.
    scores: Option<FusedScorer>,
}

impl Checker {
    pub fn new(params: &Params, dim: usize) -> Result<Self, MatchError> {
        let q = Quantizer::new(params, dim)?;
        let layout = OneHot::new(params, &q)?;
        let ev = Evaluator::new(params);
        let t = params.plaintext_modulus() as i64;
        let n = params.degree() as i64;
        let squares = (0..layout.ciphertexts_per_sample())
            .map(|c| {
                let mut w = vec![0i64; params.degree()];
                for local in 0..layout.components(c).len() {
                    for j in 0..layout.levels {
                        let v = layout.value(j);
                        w[local * layout.levels + j] = (n * v * v) % t;
                    }
                }
                Ok(ev.prepare_plain(&moved(params, &layout.encoder.encode(&w)?, dim))?)
            })
            .collect::<Result<_, MatchError>>()?;
        Ok(Self {
            params: params.clone(),
            ev,
            layout,
            squares,
            floods: Some((BITS_FLOOD_BITS, SUM_FLOOD_BITS)),
            scores: FusedScorer::new(params, dim, params.limbs()),
        })
    }

    /// The one-hot layout.
    pub fn layout(&self) -> &OneHot {
        &self.layout
    }

    /// The check replies, with the system RNG for the weights and floods.
    pub fn check(
        &self,
        packed: &Ciphertext,
        kind: Packed,
        one_hot: &[Ciphertext],
        pk: &PublicKey,
        rk: &RelinKey,
    ) -> Result<CheckReplies, MatchError> {
        self.check_with(packed, kind, one_hot, pk, rk, &mut Prng::from_os()?)
    }

    /// [`Self::check`] with the given generator. The sum checks' weights are
    /// drawn here, after the ciphertexts are fixed.
    pub fn check_with(
        &self,
        packed: &Ciphertext,
        kind: Packed,
        one_hot: &[Ciphertext],
        pk: &PublicKey,
        rk: &RelinKey,
        rng: &mut Prng,
    ) -> Result<CheckReplies, MatchError> {
        let per = self.layout.ciphertexts_per_sample();
        let samples = kind.samples();
        let max = self.params.degree() / self.layout.dim;
        if samples == 0 || samples > max {
            return Err(MatchError::TooManyTemplates {
                max,
                actual: samples,
            });
        }
        if one_hot.len() != samples * per {
            return Err(MatchError::OneHotCount {
                expected: samples * per,
                found: one_hot.len(),
            });
        }
        for ct in std::iter::once(packed).chain(one_hot) {
            self.params.check(ct.params())?;
            if ct.is_transparent() {
                return Err(MatchError::TransparentCiphertext);
            }
            if ct.size() != 2 || ct.level() != self.params.limbs() {
                return Err(MatchError::Bfv(crate::error::BfvError::CiphertextSize {
                    op: "a well-formedness check (size 2, every prime)",
                    size: ct.size(),
                    expected: "2",
                }));
            }
        }
        let bits = one_hot
            .iter()
            .map(|h| self.bits(h, pk, rk, rng))
            .collect::<Result<Vec<_>, MatchError>>()?;
        let sums = (0..SUM_CHECKS)
            .map(|_| {
                let (y, constant) = self.sum_check(packed, kind, one_hot, rng)?;
                self.finish(y, constant, rng)
            })
            .collect::<Result<Vec<_>, MatchError>>()?;
        let norms = (0..samples)
            .map(|k| self.finish(self.norm(one_hot, k)?, 0, rng))
            .collect::<Result<Vec<_>, MatchError>>()?;
        Ok(CheckReplies { bits, sums, norms })
    }

    /// A bits reply: `H⊙H − H` (a square: its one factor is extended to
    /// the multiplication base once), relinearized, plus a fresh encryption
    /// of zero flooded at every coefficient. The encryption's
    /// coefficient-form terms join the relinearization before its last
    /// transforms, so they take none of their own.
    fn bits(
        &self,
        h: &Ciphertext,
        pk: &PublicKey,
        rk: &RelinKey,
        rng: &mut Prng,
    ) -> Result<Ciphertext, MatchError> {
        self.params.check(pk.params())?;
        let zero = Plaintext::from_coeffs(&self.params, &[])?;
        let (positions, k) = match self.floods {
            Some((k, _)) => (0..self.params.degree(), k),
            None => (0..0, 0),
        };
        let mut fresh = PkEncryptionParts::sample(pk, rng, &zero, self.params.limbs());
        fresh.flood(&self.params, positions, k, rng);
        let mut x = self
            .ev
            .multiply_relin_plus(h, h, rk, fresh.take_coeff_terms())?;
        fresh.add_key_terms(pk, &mut x);
        self.ev.sub_assign(&mut x, h)?;
        Ok(x)
    }

    /// Sample `k`'s squared norm at the first score position.
    fn norm(&self, one_hot: &[Ciphertext], k: usize) -> Result<Ciphertext, MatchError> {
        let per = self.layout.ciphertexts_per_sample();
        let mut acc: Option<Ciphertext> = None;
        for (c, h) in one_hot[k * per..(k + 1) * per].iter().enumerate() {
            let mut y = h.clone();
            self.ev.multiply_plain_assign(&mut y, &self.squares[c])?;
            match &mut acc {
                Some(a) => self.ev.add_assign(a, &y)?,
                None => acc = Some(y),
            }
        }
        Ok(acc.expect("at least one one-hot ciphertext per sample"))
    }

    /// One sum check: random weights `w` on every packed coefficient, `a`
    /// on each component's "exactly one level" and `b` on unused slots; the
    /// constant coefficient of the products is
    /// `Σ w_p·P_p + Σ (a_i − w_pos(i)·v)·h_iv + Σ b·h_unused − Σ a_i`, zero for
    /// an honest client. The plaintexts are taken times `x^(d−1)`
    /// ([`moved`]), so that it lands at the first score position.
    fn sum_check(
        &self,
        packed: &Ciphertext,
        kind: Packed,
        one_hot: &[Ciphertext],
        rng: &mut Prng,
    ) -> Result<(Ciphertext, u32), MatchError> {
        let n = self.params.degree();
        let t = self.params.plaintext_modulus();
        let tt = t as u64;
        let (d, levels, per) = (
            self.layout.dim,
            self.layout.levels,
            self.layout.ciphertexts_per_sample(),
        );
        // coeff_0(P·ρ) = ρ_0·P_0 − Σ_{p≥1} ρ_{n−p}·P_p: weight w_p on P_p.
        let mut w = vec![0u32; n];
        fill_uniform_mod(rng, t, &mut w);
        let mut rho = vec![0u32; n];
        rho[0] = w[0];
        let mt = t_modulus(&self.params);
        for p in 1..n {
            rho[n - p] = mt.neg(w[p]);
        }
        let mut y = packed.clone();
        self.ev.multiply_plain_assign(
            &mut y,
            &self.ev.prepare_plain(&moved(
                &self.params,
                &Plaintext::from_coeffs(&self.params, &rho)?,
                d,
            ))?,
        )?;
        // Slot j of a component holds n·(a − w·v_j) with v_j = v_0 + j:
        // n·(a − w·v_0) stepped down by n·w per level, no division.
        let nn = n as u64 % tt;
        let v0 = self.layout.value(0).rem_euclid(t as i64) as u64;
        let mut total_a = 0u64;
        for k in 0..kind.samples() {
            for c in 0..per {
                let mut slots = vec![0i64; n];
                let comps = self.layout.components(c);
                for (local, i) in comps.clone().enumerate() {
                    let a = uniform_mod(rng, t) as u64;
                    total_a += a;
                    let step = w[kind.position(d, k, i)] as u64 * nn % tt;
                    let mut weight = (a * nn % tt + tt - step * v0 % tt) % tt;
                    for slot in &mut slots[local * levels..(local + 1) * levels] {
                        *slot = weight as i64;
                        weight = if weight >= step {
                            weight - step
                        } else {
                            weight + tt - step
                        };
                    }
                }
                for slot in slots.iter_mut().skip(comps.len() * levels) {
                    *slot = ((uniform_mod(rng, t) as u64 * n as u64) % tt) as i64;
                }
                let mut z = one_hot[k * per + c].clone();
                self.ev.multiply_plain_assign(
                    &mut z,
                    &self.ev.prepare_plain(&moved(
                        &self.params,
                        &self.layout.encoder.encode(&slots)?,
                        d,
                    ))?,
                )?;
                self.ev.add_assign(&mut y, &z)?;
            }
        }
        Ok((y, ((tt - total_a % tt) % tt) as u32))
    }

    /// A sum or norm reply: `y` (its value already at the first score
    /// position) plus `constant` there, the other score positions masked
    /// with uniform values, all
    /// of them flooded, in compact form. No fresh encryption is needed: the
    /// product of client ciphertexts with plaintexts has for `c1` a
    /// combination of the clients' `c1` alone, which says nothing of any
    /// message, and the compact form carries `c0` at the score positions
    /// only (docs/PROTOCOL.md, "Well-formed embeddings").
    fn finish(
        &self,
        y: Ciphertext,
        constant: u32,
        rng: &mut Prng,
    ) -> Result<ScoreReply, MatchError> {
        let (y, plus) = self.finish_parts(y, constant, rng)?;
        ScoreReply::from_ciphertext_plus(&y, Some(&plus), self.layout.dim, self.scores.as_ref())
    }

    /// [`Self::finish`] before the compact form: `y`, and what its `c0` gets
    /// in coefficient form after its inverse transforms (the mask and the
    /// flood).
    fn finish_parts(
        &self,
        y: Ciphertext,
        constant: u32,
        rng: &mut Prng,
    ) -> Result<(Ciphertext, RnsPoly<Coeff>), MatchError> {
        let d = self.layout.dim;
        let t = self.params.plaintext_modulus();
        let positions =
            (0..templates_per_ciphertext(&self.params, d)).map(|k| score_position(d, k));
        let mut mask = vec![0u32; self.params.degree()];
        for at in positions.clone() {
            mask[at] = uniform_mod(rng, t);
        }
        mask[score_position(d, 0)] = constant;
        let mask = Plaintext::from_coeffs(&self.params, &mask)?;
        let mut plus = scaled_message(&self.params, &mask, y.level());
        if let Some((_, k)) = self.floods {
            flood(&mut plus, &self.params, positions, k, rng);
        }
        Ok((y, plus))
    }
}

/// `pt·x^(d−1)`: moves a constant coefficient to the first score position
/// (`d − 1`), so that a sum or norm reply travels in compact form. A
/// coefficient pushed past `x^(n−1)` wraps around negated (`x^n = −1`).
fn moved(params: &Params, pt: &Plaintext, d: usize) -> Plaintext {
    let (n, mt) = (params.degree(), t_modulus(params));
    let s = score_position(d, 0);
    let c = pt.coeffs();
    let mut out = vec![0u32; n];
    out[s..].copy_from_slice(&c[..n - s]);
    for (o, &v) in out[..s].iter_mut().zip(&c[n - s..]) {
        *o = mt.neg(v);
    }
    Plaintext::from_reduced(params, out)
}

/// The plaintext modulus's arithmetic: the one-hot layout batches, so the
/// parameters have it.
fn t_modulus(params: &Params) -> &crate::arith::Modulus {
    params
        .plan_t()
        .expect("the one-hot layout's parameters batch")
        .modulus()
}

/// The first score position of a sum or norm reply, in `[0, t)`; a reply
/// whose phase is not that of one made under `sk` reads as `t` (no check
/// passes on it).
fn read(reply: &ScoreReply, sk: &SecretKey, q: &Quantizer) -> Result<u32, MatchError> {
    if reply.dim() != q.dim() {
        return Err(MatchError::ReplyDimension {
            expected: q.dim(),
            found: reply.dim(),
        });
    }
    let (values, phase) = reply.decrypt_with_phase(sk)?;
    Ok(if phase > MAX_PHASE {
        sk.params().plaintext_modulus()
    } else {
        values[0]
    })
}

/// The largest phase distance of a sum or norm reply read (as the decider's
/// bound on a score reply's: its flood is 2^-6 of a step, the compact form's
/// scaling at most 0.08).
pub const MAX_PHASE: f64 = 0.125;

impl CheckReplies {
    /// The decider's side: every bits reply all zeros, every sum check's
    /// constant coefficient zero, every sample's squared norm within
    /// `q`'s bound. Returns the squared norms.
    pub fn judge(
        &self,
        sk: &SecretKey,
        q: &Quantizer,
    ) -> Result<Result<Vec<u32>, Malformed>, MatchError> {
        let per = ciphertexts_per_sample(sk.params(), q);
        if self.sums.len() != SUM_CHECKS || self.bits.len() != self.norms.len() * per {
            return Err(MatchError::OneHotCount {
                expected: self.norms.len() * per,
                found: self.bits.len(),
            });
        }
        for (c, x) in self.bits.iter().enumerate() {
            if sk.decrypt(x)?.coeffs().iter().any(|&v| v != 0) {
                return Ok(Err(Malformed::Bits { sample: c / per }));
            }
        }
        for (check, y) in self.sums.iter().enumerate() {
            if read(y, sk, q)? != 0 {
                return Ok(Err(Malformed::Sums { check }));
            }
        }
        let mut norms = Vec::with_capacity(self.norms.len());
        for (sample, y) in self.norms.iter().enumerate() {
            let norm2 = read(y, sk, q)?;
            if norm2 as i64 > q.max_norm2() {
                return Ok(Err(Malformed::Norm {
                    sample,
                    norm2,
                    max: q.max_norm2(),
                }));
            }
            norms.push(norm2);
        }
        Ok(Ok(norms))
    }
}

#[cfg(test)]
mod tests;
