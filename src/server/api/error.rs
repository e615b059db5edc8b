//! [`ApiError`]: every refusal as `{"error": "...", "code": "..."}` with its
//! status, and the conversions from the errors of the layers below.

use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::error::{FormatError, MatchError};
use crate::server::store::StoreError;

/// A JSON error: `{"error": "...", "code": "..."}` with its status.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
}

/// The error code of a response, for the request log.
#[derive(Clone, Copy, Debug)]
pub(super) struct LoggedCode(pub &'static str);

#[derive(Serialize)]
struct ErrorBody<'a> {
    error: &'a str,
    code: &'a str,
}

/// Results of the handlers and of the plain functions they call.
pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
        }
    }

    pub(crate) fn internal(message: &str) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
    }

    pub(super) fn unknown_user() -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "unknown_user",
            "no keys are registered for this user",
        )
    }

    /// A wire-format error of the object `what`.
    pub(super) fn format(what: &str, e: FormatError) -> Self {
        let (status, code) = match e {
            FormatError::Truncated { .. } => (StatusCode::BAD_REQUEST, "truncated"),
            FormatError::ParamsMismatch { .. } => {
                (StatusCode::UNPROCESSABLE_ENTITY, "wrong_params")
            }
            FormatError::TransparentCiphertext => (StatusCode::UNPROCESSABLE_ENTITY, "transparent"),
            FormatError::WrongKind { .. } => (StatusCode::BAD_REQUEST, "wrong_kind"),
            _ => (StatusCode::BAD_REQUEST, "malformed"),
        };
        Self::new(status, code, format!("{what}: {e}"))
    }

    /// A stored object that no longer parses (should not happen).
    pub(super) fn corrupt(what: &str, e: FormatError) -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "corrupt_store",
            format!("stored {what} does not parse: {e}"),
        )
    }

    pub(super) fn method_not_allowed() -> Self {
        Self::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
            "method not allowed on this route",
        )
    }

    pub(super) fn not_found(what: &str) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", what)
    }

    pub(super) fn too_large(limit: usize) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            format!("request body exceeds this route's limit of {limit} bytes"),
        )
    }

    /// A failed write of an audit row (details in the log only).
    pub(super) fn audit(e: StoreError) -> Self {
        tracing::error!(error = %e, "audit");
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "store", "database error")
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::UnknownUser => Self::unknown_user(),
            StoreError::UserExists => Self::new(
                StatusCode::CONFLICT,
                "user_exists",
                "keys are already registered for this user; DELETE the user first",
            ),
            e => {
                tracing::error!(error = %e, "store error");
                Self::new(StatusCode::INTERNAL_SERVER_ERROR, "store", "database error")
            }
        }
    }
}

impl From<MatchError> for ApiError {
    fn from(e: MatchError) -> Self {
        match e {
            MatchError::TransparentCiphertext => Self::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "transparent",
                e.to_string(),
            ),
            MatchError::UnknownTemplate { .. } => {
                Self::new(StatusCode::NOT_FOUND, "unknown_template", e.to_string())
            }
            MatchError::Bfv(crate::error::BfvError::ParamsMismatch { .. }) => Self::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "wrong_params",
                e.to_string(),
            ),
            MatchError::Bfv(crate::error::BfvError::Rng { .. }) => {
                Self::internal("system random number generator failed")
            }
            MatchError::Bfv(_) => Self::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "bad_ciphertext",
                e.to_string(),
            ),
            _ => Self::new(StatusCode::BAD_REQUEST, "bad_input", e.to_string()),
        }
    }
}

impl From<PathRejection> for ApiError {
    fn from(r: PathRejection) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad_name", r.body_text())
    }
}

impl From<QueryRejection> for ApiError {
    fn from(r: QueryRejection) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad_query", r.body_text())
    }
}

impl From<JsonRejection> for ApiError {
    fn from(r: JsonRejection) -> Self {
        if r.status() == StatusCode::PAYLOAD_TOO_LARGE {
            Self::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "body_too_large",
                "request body exceeds this route's limit",
            )
        } else {
            Self::new(StatusCode::BAD_REQUEST, "bad_json", r.body_text())
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
            self.status,
            [(header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response();
        resp.extensions_mut().insert(LoggedCode(self.code));
        resp
    }
}
