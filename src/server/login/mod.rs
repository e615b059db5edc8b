//! Login mode on the matcher (`serve --decider URL`): the matcher holds no
//! secret key. Users' keys come from the decider; a login computes the
//! masked product of the probe and the template and asks the decider for a
//! signed verdict. This module holds what that takes besides the handlers
//! (`api::login`):
//!
//! * [`decider_client`]: the calls to the decider.
//! * [`one_time`]: enrollment tickets and login challenges.
//! * [`throttle`]: failed logins per user and per address, and lockout.
//! * [`Login::check_verdict`]: a `Verdict` credential (self-service).

pub mod decider_client;
pub mod gallery_keys;
pub mod one_time;
pub mod rate;
pub mod throttle;
pub mod tokens;

use std::sync::RwLock;
use std::time::{Duration, Instant};

use axum::body::Bytes;

use crate::server::api::{check_claim, ApiError, ApiResult, ErrorCode};
use crate::server::verdict::{Claims, Outcome, PublicKeys};

pub use decider_client::{DeciderClient, DeciderError, IdentificationQuery, VerdictQuery};
pub use gallery_keys::{GalleryKey, GalleryKeys};
pub use one_time::{OneTime, TokenError};
pub use rate::RateLimit;
pub use throttle::{Refusal, Throttle};
pub use tokens::{TokenValue, Tokens};

/// How long the decider's JWK set is served from memory.
const JWKS_TTL: Duration = Duration::from_secs(300);
/// A verdict presented as a credential must be at most this old.
pub const VERDICT_CREDENTIAL_AGE: u64 = 300;

/// What a login challenge is bound to besides its user.
#[derive(Clone, Debug)]
pub struct Challenge {
    /// The relying party the verdict will name (`aud`).
    pub audience: String,
}

/// The matcher's login-mode state.
#[derive(Debug)]
pub struct Login {
    pub decider: DeciderClient,
    pub challenges: Tokens<Challenge>,
    pub throttle: Throttle,
    /// Relying parties a challenge may name (`--audience`); empty: any.
    pub audiences: Vec<String>,
    /// Identifications per API key (`--identify-rate`).
    pub identify_rate: RateLimit,
    /// The well-formedness checks of uploaded templates and probes.
    pub checker: crate::matching::wellformed::Checker,
    jwks: RwLock<Option<(Bytes, PublicKeys, Instant)>>,
}

impl Login {
    pub fn new(
        decider: DeciderClient,
        challenges: Tokens<Challenge>,
        throttle: Throttle,
        audiences: Vec<String>,
        identify_rate: RateLimit,
        checker: crate::matching::wellformed::Checker,
    ) -> Self {
        Self {
            decider,
            challenges,
            throttle,
            audiences,
            identify_rate,
            checker,
            jwks: RwLock::new(None),
        }
    }

    /// Refuses an `aud` that is not a valid claim ([`check_claim`]), or
    /// one none of the `--audience` values when there are some.
    pub fn check_audience(&self, aud: &str) -> ApiResult<()> {
        check_claim("aud", aud)?;
        if !self.audiences.is_empty() && !self.audiences.iter().any(|a| a == aud) {
            return Err(ApiError::new(
                ErrorCode::BadQuery,
                "aud is none of the matcher's --audience values",
            ));
        }
        Ok(())
    }

    /// The decider's JWK set (from memory for [`JWKS_TTL`]), and its keys.
    pub async fn jwks(&self) -> ApiResult<(Bytes, PublicKeys)> {
        if let Some((raw, keys, at)) = &*self.jwks.read().unwrap_or_else(|e| e.into_inner()) {
            if at.elapsed() < JWKS_TTL {
                return Ok((raw.clone(), keys.clone()));
            }
        }
        self.refresh_jwks().await
    }

    async fn refresh_jwks(&self) -> ApiResult<(Bytes, PublicKeys)> {
        let raw = self.decider.jwks().await?;
        let keys = PublicKeys::from_jwks(&raw).map_err(|e| {
            tracing::error!(error = %e, "the decider's JWK set");
            ApiError::new(
                ErrorCode::DeciderUnavailable,
                "the decider's JWK set does not parse",
            )
        })?;
        *self.jwks.write().unwrap_or_else(|e| e.into_inner()) =
            Some((raw.clone(), keys.clone(), Instant::now()));
        Ok((raw, keys))
    }

    /// The claims of `jws` if it is a verdict of the decider accepting
    /// `user`, issued at most [`VERDICT_CREDENTIAL_AGE`] seconds before
    /// `now` and not expired. That it was not used as a credential before is
    /// the store's to say (`Store::use_verdict`, which the caller asks next).
    pub async fn check_verdict(&self, jws: &str, user: &str, now: u64) -> ApiResult<Claims> {
        let invalid = |why: &str| ApiError::new(ErrorCode::InvalidVerdict, why.to_string());
        let (_, mut keys) = self.jwks().await?;
        // A kid not seen yet: the decider may have rotated its keys.
        if PublicKeys::kid_of(jws).is_some_and(|kid| !keys.has(&kid)) {
            keys = self.refresh_jwks().await?.1;
        }
        let claims = keys
            .verify(jws)
            .map_err(|e| invalid(&format!("verdict: {e}")))?;
        if claims.sub != user {
            return Err(invalid("the verdict is about another user"));
        }
        if claims.outcome != Outcome::Accept {
            return Err(invalid("the verdict is a reject"));
        }
        if claims.exp <= now || claims.iat + VERDICT_CREDENTIAL_AGE < now || claims.iat > now + 60 {
            return Err(invalid("the verdict is not fresh"));
        }
        Ok(claims)
    }
}

impl TokenError {
    /// The refusal of a request that presented the token: `code` when it
    /// is not valid (`invalid_ticket`, `invalid_challenge`), 503 when the
    /// server holds too many.
    pub fn refusal(self, code: ErrorCode) -> ApiError {
        match self {
            TokenError::Invalid => ApiError::new(code, self.to_string()),
            TokenError::Full => ApiError::new(ErrorCode::Overloaded, self.to_string()),
            TokenError::Unavailable => ApiError {
                retry_after: Some(1),
                ..ApiError::new(ErrorCode::StoreUnavailable, self.to_string())
            },
            TokenError::Store => ApiError::new(ErrorCode::Store, self.to_string()),
        }
    }
}
