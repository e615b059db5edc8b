//! The `top_k` best templates of a 1:N pass, kept as scores arrive.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The `top_k` best `(score, index)` seen so far: best first by score, ties
/// by the lower index. A heap whose top is the worst kept entry, so `N`
/// offers cost `N` comparisons and no list of every template; selections
/// made apart (per run of a pass, per thread) merge into the selection of
/// everything they saw ([`Best::merge`]).
#[derive(Clone, Debug)]
pub(crate) struct Best {
    top_k: usize,
    /// Ordered worst last: a lower score, then a higher index.
    kept: BinaryHeap<(Reverse<i64>, usize)>,
    /// Once `top_k` are kept, the worst kept score: a lower one is turned
    /// away with one comparison (most are, in a large gallery).
    floor: i64,
}

impl Best {
    /// An empty selection of up to `top_k` entries.
    pub(crate) fn new(top_k: usize) -> Self {
        Self {
            top_k,
            kept: BinaryHeap::with_capacity(top_k.min(1 << 16)),
            floor: i64::MIN,
        }
    }

    /// Keeps template `index` if its `score` is among the best so far.
    #[inline]
    pub(crate) fn offer(&mut self, score: i64, index: usize) {
        if score < self.floor {
            return;
        }
        let entry = (Reverse(score), index);
        if self.kept.len() < self.top_k {
            self.kept.push(entry);
        } else if let Some(mut worst) = self.kept.peek_mut() {
            if entry < *worst {
                *worst = entry;
            }
        } else {
            return;
        }
        if self.kept.len() == self.top_k {
            self.floor = self.kept.peek().map_or(i64::MAX, |&(Reverse(s), _)| s);
        }
    }

    /// Adds everything `other` kept.
    pub(crate) fn merge(&mut self, other: Best) {
        for (Reverse(score), index) in other.kept {
            self.offer(score, index);
        }
    }

    /// The kept entries, best first.
    pub(crate) fn into_sorted(self) -> Vec<(i64, usize)> {
        self.kept
            .into_sorted_vec()
            .into_iter()
            .map(|(Reverse(score), index)| (score, index))
            .collect()
    }
}

/// The `top_k` best `(score, index)` of every template's score (`scores`:
/// ciphertext after ciphertext, `per` each), best first, ties by index;
/// only the templates set in their ciphertext's `candidates` mask (as
/// `Gallery::candidates` gives it: added, not erased) are kept.
pub(crate) fn best_scores(
    scores: &[i64],
    per: usize,
    candidates: &[u64],
    top_k: usize,
) -> Vec<(i64, usize)> {
    let mut best = Best::new(top_k);
    for (ci, (s, &can)) in scores.chunks_exact(per).zip(candidates).enumerate() {
        for (k, &score) in s.iter().enumerate() {
            if can >> k & 1 == 1 {
                best.offer(score, ci * per + k);
            }
        }
    }
    best.into_sorted()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The heap's selection equals sorting every kept template, on scores
    /// with many ties, erasures and part-filled ciphertexts, for every
    /// `top_k` from 0 past the count; and selections made over parts of
    /// the scores, merged, equal the selection over all of them.
    #[test]
    fn best_scores_equal_a_full_sort() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |below: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % below
        };
        for per in [1, 4, 32] {
            let cts = 9;
            let scores: Vec<i64> = (0..per * cts).map(|_| next(7) as i64 - 3).collect();
            let counts: Vec<usize> = (0..cts).map(|_| next(per as u64 + 1) as usize).collect();
            let erased: Vec<u64> = (0..cts).map(|_| next(1 << per.min(32))).collect();
            let candidates: Vec<u64> = (0..cts)
                .map(|ci| ((1u64 << counts[ci]) - 1) & !erased[ci])
                .collect();
            let kept =
                |i: usize| i % per < counts[i / per] && erased[i / per] >> (i % per) & 1 == 0;
            let mut all: Vec<(i64, usize)> = (0..per * cts)
                .filter(|&i| kept(i))
                .map(|i| (scores[i], i))
                .collect();
            all.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
            for top_k in 0..=all.len() + 2 {
                let want = &all[..top_k.min(all.len())];
                assert_eq!(
                    best_scores(&scores, per, &candidates, top_k),
                    want,
                    "per {per} top_k {top_k}"
                );
                // In parts of 1 to 4 ciphertexts, offered in reverse order.
                let mut merged = Best::new(top_k);
                for part in (0..cts).collect::<Vec<_>>().chunks(1 + top_k % 4).rev() {
                    let mut best = Best::new(top_k);
                    for i in (part[0] * per..(part[part.len() - 1] + 1) * per).rev() {
                        if kept(i) {
                            best.offer(scores[i], i);
                        }
                    }
                    merged.merge(best);
                }
                assert_eq!(merged.into_sorted(), want, "per {per} top_k {top_k} merged");
            }
        }
    }
}
