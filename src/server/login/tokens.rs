//! One-time tokens where every replica sees them: in this process's memory
//! ([`OneTime`]) when the store is one SQLite file (one server), in the
//! store when it is shared (PostgreSQL, many replicas), so that a ticket
//! issued through one replica is taken through another, and a login may
//! hop replicas between its challenge and its probe. Either way only a
//! token's SHA-256 is kept, and a token is taken once.

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use super::one_time::{digest, new_token, OneTime, TokenError};
use super::Challenge;
use crate::server::store::{now_millis, NewToken, Store, StoreError};

/// What a token carries, as the store keeps it.
pub trait TokenValue: Sized + Send + 'static {
    fn encode(&self) -> String;
    fn decode(stored: String) -> Self;
}

impl TokenValue for () {
    fn encode(&self) -> String {
        String::new()
    }
    fn decode(_: String) -> Self {}
}

impl TokenValue for Challenge {
    fn encode(&self) -> String {
        self.audience.clone()
    }
    fn decode(audience: String) -> Self {
        Challenge { audience }
    }
}

/// Outstanding tokens of one kind.
pub enum Tokens<V> {
    Local(OneTime<V>),
    Shared {
        /// `ticket` or `challenge`.
        kind: &'static str,
        store: Arc<Store>,
        lifetime: Duration,
        capacity: usize,
        per_user: usize,
        _value: PhantomData<fn() -> V>,
    },
}

impl<V> std::fmt::Debug for Tokens<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Local(t) => t.fmt(f),
            Self::Shared { kind, .. } => write!(f, "Tokens::Shared({kind})"),
        }
    }
}

impl<V: TokenValue> Tokens<V> {
    /// Tokens of `kind` living `lifetime`, at most `capacity` at once and
    /// `per_user` for one user: kept in `store` when it is shared, else in
    /// memory.
    pub fn new(
        store: &Arc<Store>,
        kind: &'static str,
        lifetime: Duration,
        capacity: usize,
        per_user: usize,
    ) -> Self {
        if store.is_shared() {
            Self::Shared {
                kind,
                store: store.clone(),
                lifetime,
                capacity,
                per_user: per_user.max(1),
                _value: PhantomData,
            }
        } else {
            Self::Local(OneTime::new(lifetime, capacity, per_user))
        }
    }

    /// How long a token lives.
    pub fn lifetime(&self) -> Duration {
        match self {
            Self::Local(t) => t.lifetime(),
            Self::Shared { lifetime, .. } => *lifetime,
        }
    }

    /// A new token for `user`, carrying `value`.
    pub async fn issue(&self, user: &str, value: V) -> Result<String, TokenError> {
        let (kind, store, lifetime, capacity, per_user) = match self {
            Self::Local(t) => return t.issue(user, value),
            Self::Shared {
                kind,
                store,
                lifetime,
                capacity,
                per_user,
                ..
            } => (*kind, store, *lifetime, *capacity, *per_user),
        };
        let token = new_token()?;
        let (d, user, value) = (digest(&token), user.to_string(), value.encode());
        let expires = lifetime.as_millis() as i64;
        let issued = blocking(store, move |s| {
            let now_ms = now_millis();
            s.issue_token(&NewToken {
                kind,
                digest: &d,
                user: &user,
                value: &value,
                expires_ms: now_ms + expires,
                now_ms,
                capacity,
                per_user,
            })
        })
        .await?;
        if issued {
            Ok(token)
        } else {
            Err(TokenError::Full)
        }
    }

    /// Takes `token` for `user`: its value if it was issued for `user` and
    /// has not expired. The token is gone afterwards whatever the answer.
    pub async fn take(&self, token: &str, user: &str) -> Result<V, TokenError> {
        match self {
            Self::Local(t) => t.take(token, user),
            Self::Shared { kind, store, .. } => {
                let (kind, d, user) = (*kind, digest(token), user.to_string());
                blocking(store, move |s| s.take_token(kind, &d, &user, now_millis()))
                    .await?
                    .map(V::decode)
                    .ok_or(TokenError::Invalid)
            }
        }
    }

    /// Whether `token` would be taken for `user` now (the token stays).
    pub async fn peek(&self, token: &str, user: &str) -> Result<bool, TokenError> {
        match self {
            Self::Local(t) => Ok(t.peek(token, user)),
            Self::Shared { kind, store, .. } => {
                let (kind, d, user) = (*kind, digest(token), user.to_string());
                blocking(store, move |s| s.peek_token(kind, &d, &user, now_millis())).await
            }
        }
    }
}

/// A store call on tokio's blocking pool, its failure as a token error.
async fn blocking<T: Send + 'static>(
    store: &Arc<Store>,
    f: impl FnOnce(&Store) -> Result<T, StoreError> + Send + 'static,
) -> Result<T, TokenError> {
    let store = store.clone();
    let out = tokio::task::spawn_blocking(move || f(&store))
        .await
        .map_err(|_| TokenError::Store)?;
    out.map_err(|e| match e {
        StoreError::Unavailable(why) => {
            tracing::warn!(reason = %why, "one-time tokens: store unavailable");
            TokenError::Unavailable
        }
        e => {
            tracing::error!(error = %e, "one-time tokens");
            TokenError::Store
        }
    })
}
