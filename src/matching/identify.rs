//! 1:N identification against a gallery encrypted under a service key.
//!
//! Gallery templates are public-key encryptions, `n/d` per ciphertext, kept in
//! the NTT domain and switched down to all but one ciphertext prime. A
//! plaintext probe is lifted and transformed once; each gallery ciphertext
//! then costs one pointwise product per polynomial and prime
//! ([`Identifier::score_ciphertexts_into`], for a key holder elsewhere). The
//! key holder decrypts the score ciphertexts and keeps the best; when it
//! scores the gallery itself ([`Identifier::identify`]), the decrypted scores
//! are read straight from the gallery, with as many products and no score
//! ciphertext or inverse transform (`super::fused`).
//!
//! A probe the matcher must not see is encrypted under the service key too
//! ([`super::client::encrypt_probe_public`]); each gallery ciphertext then
//! costs a ciphertext product with relinearization
//! ([`Identifier::score_encrypted_probe_into`]), against a gallery kept at the
//! top level ([`Gallery::for_encrypted_probes`]), and the key holder ranks
//! the score ciphertexts with [`Identifier::rank`].

use crate::bfv::{
    Ciphertext, Evaluator, Params, Plaintext, PlaintextNtt, PublicKey, RelinKey, SecretKey,
};
use crate::error::MatchError;

use super::best::{best_scores, Best};
use super::fused::{FusedScorer, Residues};
use super::pack::{pack_probe, score_position, templates_per_ciphertext};
use super::quantize::Quantizer;

/// Encrypted templates, `n/d` per ciphertext.
#[derive(Clone, Debug)]
pub struct Gallery {
    params: Params,
    ev: Evaluator,
    dim: usize,
    stored_level: usize,
    cts: Vec<Ciphertext>,
    counts: Vec<usize>,
    /// Per ciphertext, bit `k` set: template `k` of it was erased.
    erased: Vec<u64>,
}

/// A template's erasure, computed by [`Gallery::erase`] and not yet applied:
/// a caller that keeps the gallery on disk stores [`Erasure::ciphertext`]
/// first, then applies it with [`Gallery::apply`].
#[derive(Clone, Debug)]
pub struct Erasure {
    index: usize,
    position: usize,
    erased: u64,
    ct: Ciphertext,
}

impl Erasure {
    /// The erased template's index.
    pub fn index(&self) -> usize {
        self.index
    }

    /// Which of the gallery's ciphertexts changes (0, 1, ...).
    pub fn position(&self) -> usize {
        self.position
    }

    /// That ciphertext's erased templates after this erasure (bit `k`:
    /// template `k` of it).
    pub fn erased_mask(&self) -> u64 {
        self.erased
    }

    /// The replacement ciphertext, a fresh public-key encryption at the top
    /// level, in which the erased template's block is zero.
    pub fn ciphertext(&self) -> &Ciphertext {
        &self.ct
    }
}

/// One match: the template's index in the gallery and its score.
#[derive(Clone, Debug, PartialEq)]
pub struct Match {
    /// The template's index: its ciphertext's number times `n/d`, plus its
    /// block within that ciphertext (as returned by [`Gallery::push`]).
    pub index: usize,
    /// Exact integer inner product.
    pub score: i64,
    /// `score / s²`.
    pub cosine: f64,
}

/// A decrypted plaintext, overwritten with zeros when this is dropped
/// (whichever way the function holding it returns, or unwinds).
struct Wiped<'a>(&'a mut Plaintext);

impl Wiped<'_> {
    fn get(&mut self) -> &mut Plaintext {
        self.0
    }
}

impl Drop for Wiped<'_> {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(self.0.coeffs_mut());
    }
}

impl Gallery {
    /// An empty gallery for templates of dimension `dim`.
    pub fn new(params: &Params, dim: usize) -> Result<Self, MatchError> {
        Quantizer::new(params, dim)?;
        Ok(Self {
            params: params.clone(),
            ev: Evaluator::new(params),
            dim,
            stored_level: stored_level(params),
            cts: Vec::new(),
            counts: Vec::new(),
            erased: Vec::new(),
        })
    }

    /// An empty gallery that keeps its ciphertexts at the top level, as an
    /// encrypted probe's product needs
    /// ([`Identifier::score_encrypted_probe_into`]): half again the memory
    /// and work per plaintext probe of [`Gallery::new`]'s, which serves
    /// plaintext probes only.
    pub fn for_encrypted_probes(params: &Params, dim: usize) -> Result<Self, MatchError> {
        let mut g = Self::new(params, dim)?;
        g.stored_level = params.limbs();
        Ok(g)
    }

    /// Adds a ciphertext holding `count` templates; returns the index of its
    /// first template.
    pub fn push(&mut self, ct: Ciphertext, count: usize) -> Result<usize, MatchError> {
        self.restore(ct, count, 0)
    }

    /// [`Gallery::push`] for a stored ciphertext some of whose templates were
    /// erased: bit `k` of `erased` marks template `k` of it (bits at or past
    /// `count` are ignored).
    pub fn restore(
        &mut self,
        ct: Ciphertext,
        count: usize,
        erased: u64,
    ) -> Result<usize, MatchError> {
        let ct = self.to_stored(&ct, count)?;
        let max = templates_per_ciphertext(&self.params, self.dim);
        let first = self.cts.len() * max;
        self.cts.push(ct);
        self.counts.push(count);
        self.erased.push(erased & low_bits(count));
        Ok(first)
    }

    /// Puts a stored ciphertext of `count` templates, `erased` of them
    /// erased, in place of ciphertext `position` (an erasure made
    /// elsewhere, read back from the store).
    pub fn replace(
        &mut self,
        position: usize,
        ct: Ciphertext,
        count: usize,
        erased: u64,
    ) -> Result<(), MatchError> {
        let max = templates_per_ciphertext(&self.params, self.dim);
        if position >= self.cts.len() {
            return Err(MatchError::UnknownTemplate {
                index: position * max,
            });
        }
        self.cts[position] = self.to_stored(&ct, count)?;
        self.counts[position] = count;
        self.erased[position] = erased & low_bits(count);
        Ok(())
    }

    /// `ct`, checked as a gallery ciphertext of `count` templates, in the
    /// form this gallery keeps.
    fn to_stored(&self, ct: &Ciphertext, count: usize) -> Result<Ciphertext, MatchError> {
        self.params.check(ct.params())?;
        let max = templates_per_ciphertext(&self.params, self.dim);
        if count == 0 || count > max {
            return Err(MatchError::TooManyTemplates { max, actual: count });
        }
        if ct.is_transparent() {
            return Err(MatchError::TransparentCiphertext);
        }
        if ct.size() != 2 || ct.level() != self.params.limbs() {
            return Err(MatchError::Bfv(crate::error::BfvError::CiphertextSize {
                op: "gallery",
                size: ct.size(),
                expected: "2, at the top level",
            }));
        }
        // Stored switched down to all but one prime (unless kept for
        // encrypted probes): a third less memory and work per probe, and a
        // fresh ciphertext keeps ample budget for one plaintext product
        // there (tests/suite/matching.rs checks exact scores on extreme
        // inputs).
        Ok(stored(self.ev.mod_switch_to(ct, self.stored_level)?))
    }

    /// Number of templates (erased ones not counted).
    pub fn len(&self) -> usize {
        self.counts
            .iter()
            .zip(&self.erased)
            .map(|(&c, &e)| c - e.count_ones() as usize)
            .sum()
    }

    /// Number of templates erased.
    pub fn erased(&self) -> usize {
        self.erased.iter().map(|e| e.count_ones() as usize).sum()
    }

    /// Template `index`'s ciphertext and its block in it.
    fn locate(&self, index: usize) -> (usize, usize) {
        let per = templates_per_ciphertext(&self.params, self.dim);
        (index / per, index % per)
    }

    /// Whether the gallery holds a template at `index` (added, not erased).
    pub fn contains(&self, index: usize) -> bool {
        let (ci, k) = self.locate(index);
        ci < self.cts.len() && k < self.counts[ci] && self.erased[ci] >> k & 1 == 0
    }

    /// Erases template `index`, for the key holder: its ciphertext is
    /// decrypted, the template's block is zeroed and the rest is encrypted
    /// again under `pk` with fresh randomness (the other templates keep their
    /// indices and scores; the erased one is no longer in the ciphertext, so
    /// no later use of the key can read it back). The gallery is unchanged
    /// until the result is passed to [`Gallery::apply`].
    pub fn erase(
        &self,
        index: usize,
        sk: &SecretKey,
        pk: &PublicKey,
    ) -> Result<Erasure, MatchError> {
        self.params.check(sk.params())?;
        self.params.check(pk.params())?;
        if !self.contains(index) {
            return Err(MatchError::UnknownTemplate { index });
        }
        let (position, k) = self.locate(index);
        // The other templates in the clear: zeroed on every way out (the
        // decryption zeroes its own intermediate, the phase).
        let mut clear = sk.decrypt(&self.cts[position])?;
        let mut pt = Wiped(&mut clear);
        pt.get().coeffs_mut()[k * self.dim..(k + 1) * self.dim].fill(0);
        let ct = pk.encrypt(pt.get())?;
        Ok(Erasure {
            index,
            position,
            erased: self.erased[position] | 1 << k,
            ct,
        })
    }

    /// The stored ciphertext holding template `index`, and the template's
    /// block in it (what a key holder elsewhere erases the block from:
    /// [`Gallery::erasure_with`]).
    pub fn holding(&self, index: usize) -> Result<(&Ciphertext, usize), MatchError> {
        if !self.contains(index) {
            return Err(MatchError::UnknownTemplate { index });
        }
        let (position, k) = self.locate(index);
        Ok((&self.cts[position], k))
    }

    /// The erasure of template `index` whose replacement ciphertext `ct`
    /// (a fresh encryption at the top level of [`Gallery::holding`]'s
    /// ciphertext without the template's block) was computed elsewhere.
    pub fn erasure_with(&self, index: usize, ct: Ciphertext) -> Result<Erasure, MatchError> {
        self.params.check(ct.params())?;
        if !self.contains(index) {
            return Err(MatchError::UnknownTemplate { index });
        }
        if ct.size() != 2 || ct.level() != self.params.limbs() || ct.is_transparent() {
            return Err(MatchError::Bfv(crate::error::BfvError::CiphertextSize {
                op: "erasure",
                size: ct.size(),
                expected: "2, at the top level",
            }));
        }
        let (position, k) = self.locate(index);
        Ok(Erasure {
            index,
            position,
            erased: self.erased[position] | 1 << k,
            ct,
        })
    }

    /// The templates of ciphertext `position` that can match: bit `k` for
    /// template `k` (added, not erased).
    pub fn candidates(&self, position: usize) -> u64 {
        low_bits(self.counts[position]) & !self.erased[position]
    }

    /// Applies an [`Erasure`] computed by [`Gallery::erase`] on this gallery.
    pub fn apply(&mut self, e: Erasure) -> Result<(), MatchError> {
        if !self.contains(e.index) {
            return Err(MatchError::UnknownTemplate { index: e.index });
        }
        // Computed from this very ciphertext: no erasure in between (whose
        // template the replacement would bring back).
        let (_, k) = self.locate(e.index);
        if self.erased[e.position] != e.erased & !(1 << k) {
            return Err(MatchError::StaleErasure { index: e.index });
        }
        self.cts[e.position] = stored(self.ev.mod_switch_to(&e.ct, self.stored_level)?);
        self.erased[e.position] = e.erased;
        Ok(())
    }

    /// Whether the gallery is empty.
    pub fn is_empty(&self) -> bool {
        self.cts.is_empty()
    }

    /// Number of ciphertexts.
    pub fn ciphertexts(&self) -> usize {
        self.cts.len()
    }

    /// Ciphertext primes each stored ciphertext keeps.
    pub fn stored_level(&self) -> usize {
        self.stored_level
    }

    /// Bytes of residues held in memory (two polynomials per ciphertext).
    pub fn memory_bytes(&self) -> usize {
        self.cts.len() * 2 * self.stored_level * self.params.degree() * 4
    }

    /// The stored ciphertexts, in order, each at [`Self::stored_level`]
    /// primes.
    pub fn stored(&self) -> &[Ciphertext] {
        &self.cts
    }

    /// Every stored polynomial's residues, ciphertext after ciphertext, as
    /// the gallery holds them in memory (what a pass over the gallery reads;
    /// `benches/matching.rs` and `blindmatch-server bench` time reading
    /// them, see [`super::floor`]).
    pub fn stored_residues(&self) -> impl Iterator<Item = &[u32]> {
        self.cts
            .iter()
            .flat_map(|ct| ct.polys())
            .map(|p| p.as_slice())
    }
}

/// A switched-down ciphertext as the gallery keeps it: its polynomials
/// hold no room for the primes switching dropped (half again the memory).
fn stored(mut ct: Ciphertext) -> Ciphertext {
    for p in &mut ct.polys {
        p.shrink_to_fit();
    }
    ct
}

/// Primes a gallery ciphertext keeps: all but one.
fn stored_level(params: &Params) -> usize {
    params.limbs().saturating_sub(1).max(1)
}

/// Bits `0..count` set.
fn low_bits(count: usize) -> u64 {
    if count >= 64 {
        u64::MAX
    } else {
        (1 << count) - 1
    }
}

/// Scores a plaintext probe against a gallery.
#[derive(Clone, Debug)]
pub struct Identifier {
    params: Params,
    ev: Evaluator,
    quantizer: Quantizer,
    /// The key holder's scores read without forming products, at the level
    /// galleries are stored at (see [`super::fused`]).
    fused: Option<FusedScorer>,
}

impl Identifier {
    /// An identifier for probes of dimension `dim`.
    pub fn new(params: &Params, dim: usize) -> Result<Self, MatchError> {
        let quantizer = Quantizer::new(params, dim)?;
        Ok(Self {
            params: params.clone(),
            ev: Evaluator::new(params),
            quantizer,
            fused: FusedScorer::new(params, dim, stored_level(params)),
        })
    }

    /// Quantizes, packs, lifts and transforms a probe once for a whole gallery.
    pub fn prepare_probe(&self, embedding: &[f32]) -> Result<PlaintextNtt, MatchError> {
        let pt = pack_probe(&self.params, &self.quantizer.quantize(embedding)?)?;
        Ok(self.ev.prepare_plain(&pt)?)
    }

    /// Encrypted scores, one ciphertext per gallery ciphertext (no key needed).
    pub fn score_ciphertexts(
        &self,
        gallery: &Gallery,
        probe: &PlaintextNtt,
    ) -> Result<Vec<Ciphertext>, MatchError> {
        let mut out = Vec::new();
        self.score_ciphertexts_into(gallery, probe, &mut out)?;
        Ok(out)
    }

    /// [`Self::score_ciphertexts`] into `out`, one ciphertext per gallery
    /// ciphertext, reusing the buffers `out` already holds: a server scoring
    /// probe after probe keeps `out` between them and allocates nothing.
    pub fn score_ciphertexts_into(
        &self,
        gallery: &Gallery,
        probe: &PlaintextNtt,
        out: &mut Vec<Ciphertext>,
    ) -> Result<(), MatchError> {
        out.truncate(gallery.cts.len());
        while out.len() < gallery.cts.len() {
            out.push(Ciphertext::new(&self.params, Vec::new()));
        }
        crate::parallel::par_zip_mut(&gallery.cts, out, |ct, o| {
            self.ev.multiply_plain_streaming_into(ct, probe, o)?;
            Ok(())
        })
    }

    /// Encrypted scores for a probe encrypted under the service key
    /// ([`super::client::encrypt_probe_public`]), one ciphertext per gallery
    /// ciphertext, into `out`: each is the product with the probe,
    /// relinearized with the service key's `rk` and switched down to all but
    /// one prime. The probe is extended to the multiplication base once for
    /// the whole gallery. The gallery must keep its ciphertexts at the top
    /// level ([`Gallery::for_encrypted_probes`]). The matcher learns nothing
    /// of the probe; the key holder ranks the result with [`Self::rank`].
    pub fn score_encrypted_probe_into(
        &self,
        gallery: &Gallery,
        probe: &Ciphertext,
        rk: &RelinKey,
        out: &mut Vec<Ciphertext>,
    ) -> Result<(), MatchError> {
        self.check_gallery(gallery)?;
        self.params.check(rk.params())?;
        if gallery.stored_level != self.params.limbs() {
            return Err(MatchError::GalleryLevel);
        }
        if probe.is_transparent() {
            return Err(MatchError::TransparentCiphertext);
        }
        let prepared = self.ev.prepare_multiplicand(probe)?;
        let limbs = stored_level(&self.params);
        *out = crate::parallel::par_map_init(
            &gallery.cts,
            || (),
            |_, ct| {
                Ok::<_, MatchError>(
                    self.ev
                        .multiply_prepared_to(&prepared, ct, Some(rk), limbs)?,
                )
            },
        )?;
        Ok(())
    }

    /// The key holder's step for score ciphertexts made by a matcher
    /// ([`Self::score_ciphertexts`] or [`Self::score_encrypted_probe_into`]),
    /// one per gallery ciphertext in order: decrypts their scores and
    /// returns the `top_k` best matches, best first (erased templates left
    /// out).
    pub fn rank(
        &self,
        gallery: &Gallery,
        sk: &SecretKey,
        scores: &[Ciphertext],
        top_k: usize,
    ) -> Result<Vec<Match>, MatchError> {
        self.check_gallery(gallery)?;
        self.params.check(sk.params())?;
        if scores.len() != gallery.cts.len() {
            return Err(MatchError::ScoreCiphertexts {
                expected: gallery.cts.len(),
                found: scores.len(),
            });
        }
        if top_k == 0 {
            return Ok(Vec::new());
        }
        let positions = self.score_positions();
        let mut decrypted = vec![0i64; positions.len() * scores.len()];
        crate::parallel::par_chunks_init(
            scores,
            &mut decrypted,
            positions.len(),
            || (),
            |_, ct, out| {
                let raw = sk.decrypt_coefficients(ct, &positions)?;
                self.centre_into(&raw, out);
                Ok::<_, MatchError>(())
            },
        )?;
        Ok(self.best(gallery, &decrypted, top_k))
    }

    /// Where a ciphertext's scores sit among its coefficients.
    fn score_positions(&self) -> Vec<usize> {
        let dim = self.quantizer.dim();
        (0..templates_per_ciphertext(&self.params, dim))
            .map(|k| score_position(dim, k))
            .collect()
    }

    /// Scores mod t as signed integers, into `out`.
    fn centre_into(&self, raw: &[u32], out: &mut [i64]) {
        let t = self.params.plaintext_modulus();
        for (o, &v) in out.iter_mut().zip(raw) {
            *o = crate::bfv::centred(v, t);
        }
    }

    fn check_gallery(&self, gallery: &Gallery) -> Result<(), MatchError> {
        self.params.check(&gallery.params)?;
        let dim = self.quantizer.dim();
        if gallery.dim != dim {
            return Err(MatchError::GalleryDimension {
                expected: dim,
                found: gallery.dim,
            });
        }
        Ok(())
    }

    /// The `top_k` best matches of every template's score (see
    /// [`best_scores`]), with their cosines.
    fn best(&self, gallery: &Gallery, scores: &[i64], top_k: usize) -> Vec<Match> {
        let per = templates_per_ciphertext(&self.params, self.quantizer.dim());
        let candidates: Vec<u64> = (0..gallery.cts.len())
            .map(|ci| gallery.candidates(ci))
            .collect();
        self.matches(best_scores(scores, per, &candidates, top_k))
    }

    /// `(score, index)` pairs as matches, with their cosines.
    fn matches(&self, best: Vec<(i64, usize)>) -> Vec<Match> {
        best.into_iter()
            .map(|(score, index)| Match {
                index,
                score,
                cosine: self.quantizer.cosine(score),
            })
            .collect()
    }

    /// The key holder's step: decrypts every score ciphertext and returns the
    /// `top_k` best matches, best first.
    pub fn identify(
        &self,
        gallery: &Gallery,
        sk: &SecretKey,
        embedding: &[f32],
        top_k: usize,
    ) -> Result<Vec<Match>, MatchError> {
        self.params.check(sk.params())?;
        self.check_gallery(gallery)?;
        let probe = self.prepare_probe(embedding)?;
        let dim = self.quantizer.dim();
        if top_k == 0 {
            return Ok(Vec::new());
        }
        let per = templates_per_ciphertext(&self.params, dim);
        let Some(f) = self
            .fused
            .as_ref()
            .filter(|f| f.limbs() == gallery.stored_level)
        else {
            // Per-thread scratch: the product is written into the same
            // buffers for every gallery ciphertext, and only the score
            // coefficients are rounded.
            let positions = self.score_positions();
            let mut scores = vec![0i64; per * gallery.cts.len()];
            crate::parallel::par_chunks_init(
                &gallery.cts,
                &mut scores,
                per,
                || Ciphertext::new(&self.params, Vec::new()),
                |scratch, ct, out| {
                    self.ev.multiply_plain_into(ct, &probe, scratch)?;
                    let raw = sk.decrypt_coefficients(scratch, &positions)?;
                    self.centre_into(&raw, out);
                    Ok::<_, MatchError>(())
                },
            )?;
            return Ok(self.best(gallery, &scores, top_k));
        };
        // The scores straight from the gallery (see `super::fused`), with
        // per-thread scratch for the residues, in runs of ciphertexts
        // scored and rounded together, each with the run after it (which
        // the pass prefetches as it reads this one). Each run keeps its own
        // `top_k` best while its scores are in cache; no list of every
        // score is made.
        let fp = f.prepare(&self.params, &probe, sk);
        let run = score_run(gallery.cts.len());
        let limbs = f.limbs();
        let residues = super::fused::residues(&gallery.cts, limbs);
        let runs: Vec<&[Residues]> = residues.chunks(run * limbs).collect();
        let after = runs.iter().skip(1).copied().chain([&[][..]]);
        let items: Vec<_> = runs.iter().copied().zip(after).enumerate().collect();
        let words = limbs * per * run;
        let t = self.params.plaintext_modulus();
        let kept = crate::parallel::par_map_init(
            &items,
            || (Vec::new(), vec![0u32; words], vec![0u32; per * run]),
            |(scratch, rows, raw), &(r, (these, next))| {
                let c = these.len() / limbs;
                let (rows, raw) = (&mut rows[..limbs * per * c], &mut raw[..per * c]);
                f.score_rows(&self.params, these, next, &fp, scratch, rows);
                // `raw[m·c + k]`: template `m` of the run's ciphertext `k`.
                crate::bfv::round_residue_rows_to_t(&self.params, rows, raw);
                let first = r * run;
                let candidates: Vec<u64> = (first..first + c)
                    .map(|ci| gallery.candidates(ci))
                    .collect();
                let mut best = Best::new(top_k);
                for (m, raw) in raw.chunks_exact(c).enumerate() {
                    for (k, (&v, &can)) in raw.iter().zip(&candidates).enumerate() {
                        if can >> m & 1 == 1 {
                            best.offer(crate::bfv::centred(v, t), (first + k) * per + m);
                        }
                    }
                }
                Ok::<_, MatchError>(best)
            },
        )?;
        let mut best = Best::new(top_k);
        for b in kept {
            best.merge(b);
        }
        Ok(self.matches(best.into_sorted()))
    }
}

/// How many gallery ciphertexts the key holder's pass scores and rounds
/// together: up to 128 (their combination and rounding run in vectors across
/// them, where one ciphertext alone is scalar work), and smaller for small
/// galleries so that every core still gets runs; always even, so the
/// ciphertexts go two at a time.
fn score_run(ciphertexts: usize) -> usize {
    ciphertexts.div_ceil(8).next_multiple_of(2).clamp(2, 128)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `Gallery::erase` decrypts is zeroed whichever way it leaves:
    /// a normal return, an error return, a panic.
    #[test]
    fn decrypted_plaintexts_are_zeroed_on_every_way_out() {
        let params = Params::auth4096();
        let zero = |pt: &Plaintext| pt.coeffs().iter().all(|&c| c == 0);
        let mut pt = Plaintext::from_coeffs(&params, &[1, 2, 3]).unwrap();
        let early = |pt: &mut Plaintext| -> Result<(), MatchError> {
            let mut w = Wiped(pt);
            let index = w.get().coeffs()[2] as usize;
            Err(MatchError::UnknownTemplate { index })
        };
        assert_eq!(
            early(&mut pt).unwrap_err(),
            MatchError::UnknownTemplate { index: 3 }
        );
        assert!(zero(&pt));
        let mut pt = Plaintext::from_coeffs(&params, &[4, 5]).unwrap();
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _w = Wiped(&mut pt);
            panic!("unwinding through a decrypted plaintext");
        }));
        assert!(unwound.is_err());
        assert!(zero(&pt));
        let mut pt = Plaintext::from_coeffs(&params, &[6]).unwrap();
        drop(Wiped(&mut pt));
        assert!(zero(&pt));
    }
}
