//! Failed logins, counted per user and per client address (NIST SP
//! 800-63B §5.2.2): after [`Throttle::FREE`] failures in a row the next
//! attempt waits, the wait doubling with each further failure up to a
//! minute; a user reaches lockout after `lockout` failures in a row (at
//! most 100), which only enrolling again (with a ticket) lifts. A success
//! clears the count. The counts live in the matcher's memory; the users'
//! are also kept in the store (`store::logins`) and restored at start.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Largest lockout threshold (NIST SP 800-63B: at most 100).
pub const MAX_LOCKOUT: u32 = 100;
/// Addresses tracked at once; past it, the quietest are forgotten.
const MAX_ADDRESSES: usize = 65_536;
/// Longest wait between attempts.
const MAX_WAIT: Duration = Duration::from_secs(60);

/// Why an attempt may not go ahead.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Retry after this many seconds (at least 1).
    Wait(u64),
    /// The user is locked out.
    LockedOut,
}

#[derive(Clone, Copy, Debug)]
struct Failures {
    count: u32,
    last: Instant,
}

/// The failure counts.
#[derive(Debug)]
pub struct Throttle {
    /// The first wait (doubling after each further failure); zero turns
    /// waiting off.
    base: Duration,
    lockout: u32,
    users: Mutex<HashMap<String, Failures>>,
    addresses: Mutex<HashMap<IpAddr, Failures>>,
}

impl Throttle {
    /// Failures in a row allowed without a wait.
    pub const FREE: u32 = 5;

    /// `base`: the first wait; `lockout`: failures in a row that lock a
    /// user out (1 to [`MAX_LOCKOUT`]).
    pub fn new(base: Duration, lockout: u32) -> Self {
        Self {
            base,
            lockout: lockout.clamp(1, MAX_LOCKOUT),
            users: Mutex::default(),
            addresses: Mutex::default(),
        }
    }

    fn wait(&self, f: &Failures, now: Instant) -> Option<u64> {
        if f.count < Self::FREE || self.base.is_zero() {
            return None;
        }
        let doublings = (f.count - Self::FREE).min(16);
        let wait = self.base.saturating_mul(1 << doublings).min(MAX_WAIT);
        let ready = f.last + wait;
        (ready > now).then(|| (ready - now).as_secs_f64().ceil().max(1.0) as u64)
    }

    /// Whether `user`, from `addr`, may attempt a login at `now`.
    pub fn check(&self, user: &str, addr: IpAddr, now: Instant) -> Result<(), Refusal> {
        if let Some(f) = lock(&self.users).get(user) {
            if f.count >= self.lockout {
                return Err(Refusal::LockedOut);
            }
            if let Some(s) = self.wait(f, now) {
                return Err(Refusal::Wait(s));
            }
        }
        if let Some(f) = lock(&self.addresses).get(&addr) {
            if let Some(s) = self.wait(f, now) {
                return Err(Refusal::Wait(s));
            }
        }
        Ok(())
    }

    /// Counts a failed attempt; the user's failures in a row now (what the
    /// store keeps across restarts).
    pub fn failed(&self, user: &str, addr: IpAddr, now: Instant) -> u32 {
        let count = {
            let mut users = lock(&self.users);
            let f = users.entry(user.to_string()).or_insert(fresh(now));
            bump(f, now);
            f.count
        };
        let mut addrs = lock(&self.addresses);
        if addrs.len() >= MAX_ADDRESSES && !addrs.contains_key(&addr) {
            // Forget the addresses with the fewest failures.
            let mut counts: Vec<u32> = addrs.values().map(|f| f.count).collect();
            counts.sort_unstable();
            let cut = counts[counts.len() / 2];
            addrs.retain(|_, f| f.count > cut);
        }
        bump(addrs.entry(addr).or_insert(fresh(now)), now);
        count
    }

    /// A user's failures as the store kept them: `count` in a row, the last
    /// at `last` (a server that starts again keeps waits and lockouts).
    pub fn restore(&self, user: &str, count: u32, last: Instant) {
        lock(&self.users).insert(user.to_string(), Failures { count, last });
    }

    /// A user's failures as the store holds them now (`None`: none),
    /// read at `now_ms` / `now`: what other replicas counted replaces this
    /// process's count.
    pub fn sync(
        &self,
        user: &str,
        stored: Option<&crate::server::store::Failures>,
        now_ms: i64,
        now: Instant,
    ) {
        match stored {
            Some(f) => {
                let age = Duration::from_millis(now_ms.saturating_sub(f.last_ms).max(0) as u64);
                self.restore(user, f.count, now.checked_sub(age).unwrap_or(now));
            }
            None => self.forget(user),
        }
    }

    /// Clears the counts after a successful attempt.
    pub fn succeeded(&self, user: &str, addr: IpAddr) {
        lock(&self.users).remove(user);
        lock(&self.addresses).remove(&addr);
    }

    /// Clears a user's count (enrolled again, or deleted).
    pub fn forget(&self, user: &str) {
        lock(&self.users).remove(user);
    }

    /// The user's failures in a row.
    pub fn failures(&self, user: &str) -> u32 {
        lock(&self.users).get(user).map_or(0, |f| f.count)
    }
}

fn fresh(now: Instant) -> Failures {
    Failures {
        count: 0,
        last: now,
    }
}

fn bump(f: &mut Failures, now: Instant) {
    f.count = f.count.saturating_add(1);
    f.last = now;
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 1));
    const B: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 2));

    #[test]
    fn waits_double_after_the_free_failures_and_a_success_clears_them() {
        let t = Throttle::new(Duration::from_secs(1), 100);
        let t0 = Instant::now();
        for _ in 0..Throttle::FREE {
            assert_eq!(t.check("alice", A, t0), Ok(()));
            t.failed("alice", A, t0);
        }
        assert_eq!(t.check("alice", A, t0), Err(Refusal::Wait(1)));
        assert_eq!(t.check("alice", A, t0 + Duration::from_secs(1)), Ok(()));
        t.failed("alice", A, t0);
        assert_eq!(t.check("alice", B, t0), Err(Refusal::Wait(2)), "per user");
        assert_eq!(t.check("bob", A, t0), Err(Refusal::Wait(2)), "per address");
        assert_eq!(t.check("bob", B, t0), Ok(()));
        for _ in 0..20 {
            t.failed("alice", A, t0);
        }
        assert_eq!(t.check("alice", A, t0), Err(Refusal::Wait(60)), "capped");
        t.succeeded("alice", A);
        assert_eq!(t.check("alice", A, t0), Ok(()));
    }

    #[test]
    fn lockout_after_the_threshold_until_forgotten() {
        let t = Throttle::new(Duration::ZERO, 3);
        let now = Instant::now();
        for _ in 0..3 {
            assert_eq!(t.check("alice", A, now), Ok(()));
            t.failed("alice", A, now);
        }
        assert_eq!(t.check("alice", B, now), Err(Refusal::LockedOut));
        assert_eq!(
            t.check("bob", A, now),
            Ok(()),
            "an address is never locked out"
        );
        t.forget("alice");
        assert_eq!(t.check("alice", A, now), Ok(()));
        assert_eq!(Throttle::new(Duration::ZERO, 1000).lockout, MAX_LOCKOUT);
    }
}
