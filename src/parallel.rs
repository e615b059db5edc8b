//! Data-parallel loops over independent items: on every core through rayon
//! natively, in order on wasm32 (which has no threads here).

/// Maps `f` over `items`, on every core where threads exist (rayon natively;
/// in order on wasm32), with per-thread scratch made by `init` and handed to
/// `f`. The first error wins.
pub(crate) fn par_map_init<T, S, R, E, I, F>(items: &[T], init: I, f: F) -> Result<Vec<R>, E>
where
    T: Sync,
    R: Send,
    E: Send,
    I: Fn() -> S + Sync + Send,
    F: Fn(&mut S, &T) -> Result<R, E> + Sync + Send,
{
    cfg_if::cfg_if! {
        if #[cfg(target_arch = "wasm32")] {
            let mut scratch = init();
            items.iter().map(|x| f(&mut scratch, x)).collect()
        } else {
            use rayon::prelude::*;
            items.par_iter().map_init(init, |s, x| f(s, x)).collect()
        }
    }
}

/// `f(&items[i], &mut outs[i])` for every `i` (the slices have equal
/// lengths), on every core where threads exist. The first error wins.
pub(crate) fn par_zip_mut<T, O, E, F>(items: &[T], outs: &mut [O], f: F) -> Result<(), E>
where
    T: Sync,
    O: Send,
    E: Send,
    F: Fn(&T, &mut O) -> Result<(), E> + Sync + Send,
{
    assert_eq!(items.len(), outs.len(), "par_zip_mut: length mismatch");
    cfg_if::cfg_if! {
        if #[cfg(target_arch = "wasm32")] {
            items.iter().zip(outs.iter_mut()).try_for_each(|(x, o)| f(x, o))
        } else {
            use rayon::prelude::*;
            items.par_iter().zip(outs.par_iter_mut()).try_for_each(|(x, o)| f(x, o))
        }
    }
}

/// `f(scratch, &items[i], chunk i of outs)` for every `i`, with chunks of
/// `chunk` elements (`outs.len() == items.len() · chunk`), on every core
/// where threads exist, with per-thread scratch made by `init`. The first
/// error wins.
pub(crate) fn par_chunks_init<T, O, S, E, I, F>(
    items: &[T],
    outs: &mut [O],
    chunk: usize,
    init: I,
    f: F,
) -> Result<(), E>
where
    T: Sync,
    O: Send,
    E: Send,
    I: Fn() -> S + Sync + Send,
    F: Fn(&mut S, &T, &mut [O]) -> Result<(), E> + Sync + Send,
{
    assert!(
        chunk > 0 && outs.len() == items.len() * chunk,
        "par_chunks_init: length mismatch"
    );
    cfg_if::cfg_if! {
        if #[cfg(target_arch = "wasm32")] {
            let mut scratch = init();
            items
                .iter()
                .zip(outs.chunks_mut(chunk))
                .try_for_each(|(x, o)| f(&mut scratch, x, o))
        } else {
            use rayon::prelude::*;
            items
                .par_iter()
                .zip(outs.par_chunks_mut(chunk))
                .try_for_each_init(init, |s, (x, o)| f(s, x, o))
        }
    }
}
