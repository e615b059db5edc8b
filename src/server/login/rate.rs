//! Identifications per API key: a token bucket per key that holds up to a
//! minute's allowance (`--identify-rate` per minute) and refills steadily,
//! so a relying party may burst to its allowance and then goes at the rate.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

/// The buckets, by API key (its index in the key file).
#[derive(Debug)]
pub struct RateLimit {
    per_minute: u32,
    buckets: Mutex<HashMap<usize, (f64, Instant)>>,
}

impl RateLimit {
    /// `per_minute` calls per key per minute (at least 1).
    pub fn new(per_minute: u32) -> Self {
        Self {
            per_minute: per_minute.max(1),
            buckets: Mutex::default(),
        }
    }

    /// Takes one call for `key` at `now`, or says how many seconds until
    /// the next one is allowed (at least 1).
    pub fn take(&self, key: usize, now: Instant) -> Result<(), u64> {
        let cap = f64::from(self.per_minute);
        let per_sec = cap / 60.0;
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        let (tokens, last) = buckets.entry(key).or_insert((cap, now));
        let elapsed = now.saturating_duration_since(*last).as_secs_f64();
        *tokens = (*tokens + elapsed * per_sec).min(cap);
        *last = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            Ok(())
        } else {
            Err(((1.0 - *tokens) / per_sec).ceil().max(1.0) as u64)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_key_bursts_to_its_allowance_then_goes_at_the_rate() {
        let r = RateLimit::new(3);
        let t0 = Instant::now();
        for _ in 0..3 {
            assert_eq!(r.take(0, t0), Ok(()));
        }
        assert_eq!(r.take(0, t0), Err(20), "one call per 20 s");
        assert_eq!(r.take(1, t0), Ok(()), "another key has its own bucket");
        assert_eq!(r.take(0, t0 + Duration::from_secs(20)), Ok(()));
        assert!(r.take(0, t0 + Duration::from_secs(21)).is_err());
    }
}
