//! [`ApiError`]: every refusal as `{"error": "...", "code": "..."}` with its
//! status, and the conversions from the errors of the layers below.

use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::error::{FormatError, MatchError};
use crate::server::store::StoreError;

use super::ErrorCode;

/// A JSON error: `{"error": "...", "code": "..."}` with the code's status.
#[derive(Debug)]
pub struct ApiError {
    pub code: ErrorCode,
    pub message: String,
    /// Seconds for the `Retry-After` header (`throttled`; `overloaded` is
    /// always 1).
    pub retry_after: Option<u64>,
}

/// The error code of a response, for the request log.
#[derive(Clone, Copy, Debug)]
pub(super) struct LoggedCode(pub ErrorCode);

#[derive(Serialize)]
struct ErrorBody<'a> {
    error: &'a str,
    code: ErrorCode,
}

/// Results of the handlers and of the plain functions they call.
pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            retry_after: None,
        }
    }

    /// 429 `throttled`, to retry after `seconds`.
    pub fn throttled(seconds: u64) -> Self {
        Self {
            retry_after: Some(seconds),
            ..Self::new(
                ErrorCode::Throttled,
                format!("too many failed logins: retry in {seconds} s"),
            )
        }
    }

    /// The response's status: the code's.
    pub fn status(&self) -> StatusCode {
        self.code.status()
    }

    pub(crate) fn internal(message: &str) -> Self {
        Self::new(ErrorCode::Internal, message)
    }

    /// 403 `login_mode`: a route of the user-held-key mode.
    pub(super) fn login_mode(why: &str) -> Self {
        Self::new(ErrorCode::LoginMode, why)
    }

    /// 404 `login_disabled`: a login-mode route on a matcher without a
    /// decider.
    pub(super) fn login_disabled() -> Self {
        Self::new(
            ErrorCode::LoginDisabled,
            "login mode is off: the matcher was started without --decider",
        )
    }

    pub(super) fn unknown_user() -> Self {
        Self::new(
            ErrorCode::UnknownUser,
            "no keys are registered for this user",
        )
    }

    /// A wire-format error of the object `what`.
    pub(crate) fn format(what: &str, e: FormatError) -> Self {
        let code = match e {
            FormatError::Truncated { .. } => ErrorCode::Truncated,
            FormatError::ParamsMismatch { .. } => ErrorCode::WrongParams,
            FormatError::TransparentCiphertext => ErrorCode::Transparent,
            FormatError::WrongKind { .. } | FormatError::NotAList => ErrorCode::WrongKind,
            _ => ErrorCode::Malformed,
        };
        Self::new(code, format!("{what}: {e}"))
    }

    /// A stored object that no longer parses (should not happen).
    pub(super) fn corrupt(what: &str, e: FormatError) -> Self {
        Self::new(
            ErrorCode::CorruptStore,
            format!("stored {what} does not parse: {e}"),
        )
    }

    pub(crate) fn method_not_allowed() -> Self {
        Self::new(
            ErrorCode::MethodNotAllowed,
            "method not allowed on this route",
        )
    }

    pub(crate) fn not_found(what: &str) -> Self {
        Self::new(ErrorCode::NotFound, what)
    }

    pub(super) fn too_large(limit: usize) -> Self {
        Self::new(
            ErrorCode::BodyTooLarge,
            format!("request body exceeds this route's limit of {limit} bytes"),
        )
    }

    /// A request over one of the server's quotas; `message` names its flag.
    pub(crate) fn quota(message: String) -> Self {
        Self::new(ErrorCode::QuotaReached, message)
    }

    /// A body whose `Content-Type` is not `want`.
    pub(super) fn media_type(want: &str) -> Self {
        Self::new(
            ErrorCode::UnsupportedMediaType,
            format!("this route takes a body of Content-Type {want}"),
        )
    }

    /// A body that did not arrive within the body deadline.
    pub(super) fn body_timeout() -> Self {
        Self::new(
            ErrorCode::BodyTimeout,
            "the request body did not arrive within the body deadline",
        )
    }

    /// A failed write of an audit row (details in the log only).
    pub(super) fn audit(e: StoreError) -> Self {
        if let StoreError::Unavailable(_) = e {
            return Self::from(e);
        }
        tracing::error!(error = %e, "audit");
        Self::new(ErrorCode::Store, "database error")
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::UnknownUser => Self::unknown_user(),
            StoreError::UserExists => Self::new(
                ErrorCode::UserExists,
                "keys are already registered for this user; DELETE the user first",
            ),
            StoreError::TooManyUsers { max } => Self::quota(format!(
                "the server holds its maximum of {max} users (--max-users)"
            )),
            StoreError::Unavailable(why) => {
                tracing::warn!(reason = %why, "store unavailable");
                Self {
                    retry_after: Some(1),
                    ..Self::new(
                        ErrorCode::StoreUnavailable,
                        "the database is unavailable; nothing was written: retry shortly",
                    )
                }
            }
            e => {
                tracing::error!(error = %e, "store error");
                Self::new(ErrorCode::Store, "database error")
            }
        }
    }
}

impl From<MatchError> for ApiError {
    fn from(e: MatchError) -> Self {
        match e {
            MatchError::TransparentCiphertext => Self::new(ErrorCode::Transparent, e.to_string()),
            MatchError::UnknownTemplate { .. } => {
                Self::new(ErrorCode::UnknownTemplate, e.to_string())
            }
            MatchError::Bfv(crate::error::BfvError::ParamsMismatch { .. }) => {
                Self::new(ErrorCode::WrongParams, e.to_string())
            }
            MatchError::Bfv(crate::error::BfvError::Rng { .. }) => {
                Self::internal("system random number generator failed")
            }
            MatchError::Bfv(_) => Self::new(ErrorCode::BadCiphertext, e.to_string()),
            _ => Self::new(ErrorCode::BadInput, e.to_string()),
        }
    }
}

impl From<PathRejection> for ApiError {
    fn from(r: PathRejection) -> Self {
        Self::new(ErrorCode::BadName, r.body_text())
    }
}

impl From<QueryRejection> for ApiError {
    fn from(r: QueryRejection) -> Self {
        Self::new(ErrorCode::BadQuery, r.body_text())
    }
}

impl From<JsonRejection> for ApiError {
    fn from(r: JsonRejection) -> Self {
        if let JsonRejection::MissingJsonContentType(_) = r {
            Self::media_type("application/json")
        } else if super::deadline::is_timeout(&r) {
            Self::body_timeout()
        } else if r.status() == StatusCode::PAYLOAD_TOO_LARGE {
            Self::new(
                ErrorCode::BodyTooLarge,
                "request body exceeds this route's limit",
            )
        } else {
            Self::new(ErrorCode::BadJson, r.body_text())
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::to_vec(&ErrorBody {
            error: &self.message,
            code: self.code,
        })
        .unwrap_or_default();
        let mut resp = (
            self.status(),
            [(header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response();
        let retry = match self.code {
            ErrorCode::Overloaded | ErrorCode::ShardUnavailable => Some(1),
            _ => self.retry_after,
        };
        if let Some(s) = retry {
            resp.headers_mut()
                .insert(header::RETRY_AFTER, header::HeaderValue::from(s));
        }
        resp.extensions_mut().insert(LoggedCode(self.code));
        resp
    }
}
