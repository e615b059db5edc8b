//! [`Gate`]: a semaphore with a bounded queue. Work that finds every permit
//! taken and the queue full is refused at once with 503 `overloaded` and
//! `Retry-After`, instead of waiting without bound.
//!
//! The permit is taken by the handler once the request's body has been
//! read, never around the whole request: a client that sends its body
//! slowly must not hold a matching thread (which is why this is not tower's
//! `ConcurrencyLimit` and `LoadShed` around a route).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use tokio::sync::{Semaphore, SemaphorePermit};

use super::{ApiError, ErrorCode};

/// A semaphore of `permits` with at most `queue` waiters.
#[derive(Debug)]
pub struct Gate {
    /// The queue's name in messages and in `/metrics`.
    pub name: &'static str,
    sem: Semaphore,
    queue: usize,
    waiting: AtomicUsize,
    refused: AtomicU64,
}

/// A queued waiter's place, given back however its wait ends.
struct Place<'a>(&'a AtomicUsize);

impl Drop for Place<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Gate {
    pub fn new(name: &'static str, permits: usize, queue: usize) -> Self {
        Self {
            name,
            sem: Semaphore::new(permits.max(1)),
            queue,
            waiting: AtomicUsize::new(0),
            refused: AtomicU64::new(0),
        }
    }

    /// A permit: at once if one is free, after waiting in the queue if it
    /// has room, else 503 `overloaded`.
    pub async fn enter(&self) -> Result<SemaphorePermit<'_>, ApiError> {
        if let Ok(p) = self.sem.try_acquire() {
            return Ok(p);
        }
        if self.waiting.fetch_add(1, Ordering::AcqRel) >= self.queue {
            self.waiting.fetch_sub(1, Ordering::AcqRel);
            self.refused.fetch_add(1, Ordering::Relaxed);
            return Err(ApiError::new(
                ErrorCode::Overloaded,
                format!(
                    "the {} queue is full ({} waiting); retry later",
                    self.name, self.queue
                ),
            ));
        }
        let _place = Place(&self.waiting);
        self.sem
            .acquire()
            .await
            .map_err(|_| ApiError::internal("worker pool closed"))
    }

    /// Permits free at this moment.
    pub fn available_permits(&self) -> usize {
        self.sem.available_permits()
    }

    /// Requests refused since the start.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::Gate;

    #[tokio::test]
    async fn a_full_queue_refuses_and_a_freed_place_is_reused() {
        let gate = std::sync::Arc::new(Gate::new("test", 1, 1));
        let held = gate.enter().await.unwrap();
        let g = gate.clone();
        let waiter = tokio::spawn(async move { g.enter().await.map(drop).is_ok() });
        while gate.waiting.load(std::sync::atomic::Ordering::Acquire) == 0 {
            tokio::task::yield_now().await;
        }
        let refused = gate.enter().await.unwrap_err();
        assert_eq!(refused.code, super::ErrorCode::Overloaded);
        assert_eq!(gate.refused(), 1);
        drop(held);
        assert!(waiter.await.unwrap());
        assert!(gate.enter().await.is_ok());
    }
}
