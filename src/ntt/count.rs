//! The per-thread count of transforms that `crate::transforms` reads:
//! `NttPlan`'s transforms note themselves here. Counting is compiled only
//! into tests and builds with the `count-transforms` feature; elsewhere the
//! hooks are empty.

/// Forward and inverse transforms (each over one prime) made by one
/// operation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Transforms {
    /// Forward transforms (coefficients to evaluations).
    pub forward: usize,
    /// Inverse transforms.
    pub inverse: usize,
}

#[cfg(any(test, feature = "count-transforms"))]
mod counter {
    use std::cell::Cell;

    use super::Transforms;

    thread_local! {
        static COUNT: Cell<Transforms> = const { Cell::new(Transforms { forward: 0, inverse: 0 }) };
    }

    pub(crate) fn add(forward: usize, inverse: usize) {
        COUNT.with(|c| {
            let t = c.get();
            c.set(Transforms {
                forward: t.forward + forward,
                inverse: t.inverse + inverse,
            })
        });
    }

    /// Runs `f` and returns the transforms it made on this thread.
    pub fn count<R>(f: impl FnOnce() -> R) -> (R, Transforms) {
        let before = COUNT.with(Cell::get);
        let r = f();
        let after = COUNT.with(Cell::get);
        (
            r,
            Transforms {
                forward: after.forward - before.forward,
                inverse: after.inverse - before.inverse,
            },
        )
    }
}

#[cfg(any(test, feature = "count-transforms"))]
pub use counter::count;

/// Notes one forward transform (a no-op unless counting is compiled in).
#[inline(always)]
pub(crate) fn record_forward() {
    #[cfg(any(test, feature = "count-transforms"))]
    counter::add(1, 0);
}

/// Notes one inverse transform (a no-op unless counting is compiled in).
#[inline(always)]
pub(crate) fn record_inverse() {
    #[cfg(any(test, feature = "count-transforms"))]
    counter::add(0, 1);
}
