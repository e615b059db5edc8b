//! One-time tokens bound to a user: enrollment tickets and login
//! challenges. A token is 32 random bytes (base64url); only its SHA-256 is
//! kept, so the map holds nothing a memory dump could replay. A token is
//! taken once: the first use for its user before it expires succeeds and
//! removes it; every later use, another user's, or an expired one fails.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use sha2::{Digest, Sha256};

/// Why a token was not taken.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// Unknown (never issued, already used, or expired and dropped),
    /// expired, or issued for another user.
    #[error("unknown, expired, used, or another user's")]
    Invalid,
    /// The map is full of live tokens.
    #[error("too many outstanding tokens")]
    Full,
    /// The store that keeps the tokens cannot be reached.
    #[error("the database is unavailable; nothing was written: retry shortly")]
    Unavailable,
    /// The store that keeps the tokens failed.
    #[error("database error")]
    Store,
}

struct Entry<V> {
    user: String,
    value: V,
    expires: Instant,
}

/// Outstanding tokens of one kind, at most `capacity` at once and
/// `per_user` for one user (issuing one more drops that user's oldest).
pub struct OneTime<V> {
    lifetime: Duration,
    capacity: usize,
    per_user: usize,
    tokens: Mutex<HashMap<[u8; 32], Entry<V>>>,
}

impl<V> std::fmt::Debug for OneTime<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OneTime")
            .field("lifetime", &self.lifetime)
            .field("capacity", &self.capacity)
            .finish_non_exhaustive()
    }
}

/// The SHA-256 of `token`: all that is kept of it.
pub(super) fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// A new token: 32 random bytes, base64url.
pub(super) fn new_token() -> Result<String, TokenError> {
    let mut raw = [0u8; 32];
    getrandom::fill(&mut raw).map_err(|_| TokenError::Full)?;
    Ok(URL_SAFE_NO_PAD.encode(raw))
}

impl<V> OneTime<V> {
    pub fn new(lifetime: Duration, capacity: usize, per_user: usize) -> Self {
        Self {
            lifetime,
            capacity,
            per_user: per_user.max(1),
            tokens: Mutex::new(HashMap::new()),
        }
    }

    /// How long a token lives.
    pub fn lifetime(&self) -> Duration {
        self.lifetime
    }

    /// A new token for `user`, carrying `value`.
    pub fn issue(&self, user: &str, value: V) -> Result<String, TokenError> {
        let token = new_token()?;
        let now = Instant::now();
        let mut map = self.tokens.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= self.capacity {
            map.retain(|_, e| e.expires > now);
        }
        // The user's oldest go first past `per_user`.
        let mut mine: Vec<([u8; 32], Instant)> = map
            .iter()
            .filter(|(_, e)| e.user == user)
            .map(|(k, e)| (*k, e.expires))
            .collect();
        if mine.len() >= self.per_user {
            mine.sort_by_key(|(_, exp)| *exp);
            for (k, _) in &mine[..=mine.len() - self.per_user] {
                map.remove(k);
            }
        }
        if map.len() >= self.capacity {
            return Err(TokenError::Full);
        }
        map.insert(
            digest(&token),
            Entry {
                user: user.to_string(),
                value,
                expires: now + self.lifetime,
            },
        );
        Ok(token)
    }

    /// Takes `token` for `user`: its value if it was issued for `user` and
    /// has not expired. The token is gone afterwards whatever the answer.
    pub fn take(&self, token: &str, user: &str) -> Result<V, TokenError> {
        let mut map = self.tokens.lock().unwrap_or_else(|e| e.into_inner());
        let entry = map.remove(&digest(token)).ok_or(TokenError::Invalid)?;
        if entry.user != user || entry.expires <= Instant::now() {
            return Err(TokenError::Invalid);
        }
        Ok(entry.value)
    }

    /// Whether `token` would be taken for `user` now (the token stays).
    pub fn peek(&self, token: &str, user: &str) -> bool {
        let map = self.tokens.lock().unwrap_or_else(|e| e.into_inner());
        map.get(&digest(token))
            .is_some_and(|e| e.user == user && e.expires > Instant::now())
    }

    /// Tokens outstanding (expired ones not yet dropped included).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.tokens.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_taken_once_by_its_user_only() {
        let t = OneTime::new(Duration::from_secs(60), 100, 4);
        let a = t.issue("alice", 7u32).unwrap();
        assert_eq!(a.len(), 43);
        assert!(t.peek(&a, "alice"));
        assert!(!t.peek(&a, "bob"));
        assert_eq!(t.take(&a, "alice"), Ok(7));
        assert_eq!(t.take(&a, "alice"), Err(TokenError::Invalid));
        // Another user's token is burnt by the attempt.
        let b = t.issue("bob", 1).unwrap();
        assert_eq!(t.take(&b, "alice"), Err(TokenError::Invalid));
        assert_eq!(t.take(&b, "bob"), Err(TokenError::Invalid));
        assert_eq!(t.take("made-up", "bob"), Err(TokenError::Invalid));
    }

    #[test]
    fn tokens_expire() {
        let t = OneTime::new(Duration::from_millis(20), 100, 4);
        let a = t.issue("alice", ()).unwrap();
        std::thread::sleep(Duration::from_millis(40));
        assert_eq!(t.take(&a, "alice"), Err(TokenError::Invalid));
    }

    #[test]
    fn a_user_holds_at_most_per_user_and_the_map_at_most_capacity() {
        let t = OneTime::new(Duration::from_secs(60), 3, 2);
        let first = t.issue("alice", 1).unwrap();
        let second = t.issue("alice", 2).unwrap();
        let third = t.issue("alice", 3).unwrap();
        // The oldest went.
        assert_eq!(t.take(&first, "alice"), Err(TokenError::Invalid));
        assert!(t.peek(&second, "alice") && t.peek(&third, "alice"));
        t.issue("bob", 4).unwrap();
        assert_eq!(t.issue("carol", 5), Err(TokenError::Full));
        assert_eq!(t.len(), 3);
    }
}
