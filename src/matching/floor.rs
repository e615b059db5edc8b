//! The memory floors the 1:N passes are measured against: a gallery's
//! bytes read, or copied, once, with no arithmetic (the matching bench,
//! `blindmatch-server bench`).
//!
//! Each comes two ways: a plain loop, and the same asking for every line
//! [`AHEAD`] words before it reads it ([`crate::backend::prefetch_l2`]).
//! The floor is the faster of the two. Where the hardware's own
//! prefetching stops at page boundaries (on the Intel Xeon of
//! bench/HISTORY.md) the plain loop is slower than the key holder's pass,
//! which prefetches, and so is no floor.

use crate::backend::prefetch_l2;

/// Words a cache line holds (64 bytes).
const LINE: usize = 16;

/// How far ahead of its reads the prefetching way asks for lines, in
/// words: 8 KiB (on the Intel Xeon, 2, 8 and 32 KiB read 100,000
/// templates in 17.0, 16.0 and 16.0 ms, and asking for the next buffer at
/// the same offset in 16.6 ms, against 19.6 ms for the plain loop).
pub const AHEAD: usize = 2048;

/// For each line of `buffers[i]`, the address [`AHEAD`] words past it,
/// `buffers` taken as one stream (past the end of the last buffer, or of a
/// short next one, the address is only asked for, never read).
fn lines_ahead<'a>(buffers: &'a [&'a [u32]], i: usize) -> impl Iterator<Item = *const u32> + 'a {
    let here = buffers[i];
    let next = buffers.get(i + 1).copied().unwrap_or(here);
    (0..here.len().div_ceil(LINE)).map(move |j| {
        let at = j * LINE + AHEAD;
        match at.checked_sub(here.len()) {
            None => here.as_ptr().wrapping_add(at),
            Some(past) => next.as_ptr().wrapping_add(past),
        }
    })
}

/// The wrapping sum of the words of `buffers[i]`: one step of a read of
/// every buffer in turn, prefetching or not.
pub fn read(buffers: &[&[u32]], i: usize, prefetch: bool) -> u32 {
    let sum = |total: u32, words: &[u32]| words.iter().fold(total, |a, &x| a.wrapping_add(x));
    if !prefetch {
        return sum(0, buffers[i]);
    }
    // Whole lines as arrays, so that each line's sum is a fixed run of
    // vector adds (as slices, the prefetching read was 10 % slower).
    let (lines, tail) = buffers[i].as_chunks::<LINE>();
    let mut total = 0;
    for (line, p) in lines.iter().zip(lines_ahead(buffers, i)) {
        prefetch_l2(p);
        total = sum(total, line);
    }
    sum(total, tail)
}

/// `from[i]` copied into `to` (as long): one step of a copy of every
/// buffer in turn. Prefetching, a page at a time, its lines [`AHEAD`]
/// words on asked for first.
pub fn copy(from: &[&[u32]], i: usize, to: &mut [u32], prefetch: bool) {
    if !prefetch {
        return to.copy_from_slice(from[i]);
    }
    const PAGE: usize = 1024;
    let mut ahead = lines_ahead(from, i);
    for (s, d) in from[i].chunks(PAGE).zip(to.chunks_mut(PAGE)) {
        for p in ahead.by_ref().take(PAGE / LINE) {
            prefetch_l2(p);
        }
        d.copy_from_slice(s);
    }
}

#[cfg(test)]
mod tests {
    /// Both ways give the plain sum and copy, on buffers of whole lines,
    /// ragged ones and ones shorter than the distance ahead.
    #[test]
    fn both_ways_read_and_copy_every_word() {
        let lens = [super::AHEAD * 3, 17, 5000, 0, 16, super::AHEAD + 1];
        let buffers: Vec<Vec<u32>> = lens
            .iter()
            .enumerate()
            .map(|(b, &n)| {
                (0..n as u32)
                    .map(|w| w.wrapping_mul(2654435761) ^ b as u32)
                    .collect()
            })
            .collect();
        let refs: Vec<&[u32]> = buffers.iter().map(Vec::as_slice).collect();
        for (i, b) in buffers.iter().enumerate() {
            let want = b.iter().fold(0u32, |a, &x| a.wrapping_add(x));
            for prefetch in [false, true] {
                assert_eq!(super::read(&refs, i, prefetch), want, "buffer {i}");
                let mut to = vec![0u32; b.len()];
                super::copy(&refs, i, &mut to, prefetch);
                assert_eq!(&to, b, "buffer {i}");
            }
        }
    }
}
