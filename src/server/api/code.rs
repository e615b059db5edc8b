//! [`ErrorCode`]: the `code` of every JSON error, with its HTTP status
//! (docs/API.md lists them; a test holds the two together).

use axum::http::StatusCode;
use serde::Serialize;

/// The `code` field of an error response, serialized as its snake_case
/// name (`ErrorCode::BadName` is `"bad_name"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// A user or gallery name outside the allowed characters or length.
    BadName,
    /// An object (or the keys framing) ends early.
    Truncated,
    /// Bad magic, version, flags, a residue past its prime, trailing bytes.
    Malformed,
    /// An object of another kind.
    WrongKind,
    /// `count` outside `1..=n/d`.
    BadCount,
    /// An unparsable query string.
    BadQuery,
    /// An unparsable JSON body.
    BadJson,
    /// An embedding of the wrong length, NaN, or zero.
    BadInput,
    /// `top_k` outside `1..=100`.
    BadTopK,
    /// A gallery template index that is not a non-negative integer.
    BadIndex,
    /// The request body could not be read.
    BadBody,
    /// No keys registered under that name.
    UnknownUser,
    /// Verify before a template was enrolled.
    NoTemplate,
    /// No such gallery.
    UnknownGallery,
    /// 1:N routes on a server started without `--service-key`.
    IdentifyDisabled,
    /// No gallery template at that index.
    UnknownTemplate,
    /// No such route or static file.
    NotFound,
    /// The route exists, not with this method.
    MethodNotAllowed,
    /// Keys are already registered for the user.
    UserExists,
    /// The request would take the server past one of its quotas.
    QuotaReached,
    /// A body over its route's limit.
    BodyTooLarge,
    /// An object made for other parameters.
    WrongParams,
    /// A ciphertext anyone could read.
    Transparent,
    /// A ciphertext that is not fresh.
    BadCiphertext,
    /// The decider: no bearer token, or not the matcher's.
    Unauthorized,
    /// The decider: a reply not made under the user's key.
    NotUnderKey,
    /// Login mode: a template (or its one-hot ciphertexts) that is not a
    /// well-formed quantized embedding; nothing is stored.
    MalformedTemplate,
    /// Login mode: an identification's probe (or its one-hot ciphertexts)
    /// that is not a well-formed quantized embedding; nothing is read.
    MalformedProbe,
    /// A server-side failure.
    Internal,
    /// A database failure.
    Store,
    /// The database cannot be reached (PostgreSQL down or out of
    /// connections): nothing was written; retry after `Retry-After`.
    StoreUnavailable,
    /// A stored object that no longer parses.
    CorruptStore,
    /// A body not sent whole within the body deadline.
    BodyTimeout,
    /// A body whose `Content-Type` is not the route's.
    UnsupportedMediaType,
    /// A `Host` header outside the allowed hosts.
    MisdirectedHost,
    /// A queue for matching work is full.
    Overloaded,
    /// An enrollment ticket that is unknown, expired, used, or another user's.
    InvalidTicket,
    /// A login challenge that is unknown, expired, used, or another user's.
    InvalidChallenge,
    /// A `Verdict` credential that is not a fresh, valid accept verdict for
    /// the user named in the path.
    InvalidVerdict,
    /// A route of the user-held-key mode on a matcher in login mode.
    LoginMode,
    /// A login-mode route on a matcher started without `--decider`.
    LoginDisabled,
    /// Too many failed logins of this user or from this address: retry
    /// after `Retry-After` seconds.
    Throttled,
    /// 100 consecutive failed logins: the user must enroll again (with a
    /// ticket).
    LockedOut,
    /// The matcher could not reach the decider, or it answered with an
    /// error.
    DeciderUnavailable,
    /// Sharded galleries: a shard with no live holder (a replica died and
    /// its lease has not lapsed yet, or its shards are being loaded), or a
    /// holder that could not be reached; retry after `Retry-After`.
    ShardUnavailable,
    /// Sharded galleries: a shard's holder answered with a result that does
    /// not check (signature, shard, nonce, or a revision older than the
    /// gallery's).
    BadShardResult,
}

impl ErrorCode {
    /// Every code.
    pub const ALL: [ErrorCode; 46] = [
        Self::BadName,
        Self::Truncated,
        Self::Malformed,
        Self::WrongKind,
        Self::BadCount,
        Self::BadQuery,
        Self::BadJson,
        Self::BadInput,
        Self::BadTopK,
        Self::BadIndex,
        Self::BadBody,
        Self::UnknownUser,
        Self::NoTemplate,
        Self::UnknownGallery,
        Self::IdentifyDisabled,
        Self::UnknownTemplate,
        Self::NotFound,
        Self::MethodNotAllowed,
        Self::UserExists,
        Self::QuotaReached,
        Self::BodyTooLarge,
        Self::WrongParams,
        Self::Transparent,
        Self::BadCiphertext,
        Self::Unauthorized,
        Self::NotUnderKey,
        Self::MalformedTemplate,
        Self::MalformedProbe,
        Self::Internal,
        Self::Store,
        Self::StoreUnavailable,
        Self::CorruptStore,
        Self::BodyTimeout,
        Self::UnsupportedMediaType,
        Self::MisdirectedHost,
        Self::Overloaded,
        Self::InvalidTicket,
        Self::InvalidChallenge,
        Self::InvalidVerdict,
        Self::LoginMode,
        Self::LoginDisabled,
        Self::Throttled,
        Self::LockedOut,
        Self::DeciderUnavailable,
        Self::ShardUnavailable,
        Self::BadShardResult,
    ];

    /// The code as it goes on the wire (and into the request log).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::BadName => "bad_name",
            Self::Truncated => "truncated",
            Self::Malformed => "malformed",
            Self::WrongKind => "wrong_kind",
            Self::BadCount => "bad_count",
            Self::BadQuery => "bad_query",
            Self::BadJson => "bad_json",
            Self::BadInput => "bad_input",
            Self::BadTopK => "bad_top_k",
            Self::BadIndex => "bad_index",
            Self::BadBody => "bad_body",
            Self::UnknownUser => "unknown_user",
            Self::NoTemplate => "no_template",
            Self::UnknownGallery => "unknown_gallery",
            Self::IdentifyDisabled => "identify_disabled",
            Self::UnknownTemplate => "unknown_template",
            Self::NotFound => "not_found",
            Self::MethodNotAllowed => "method_not_allowed",
            Self::UserExists => "user_exists",
            Self::QuotaReached => "quota_reached",
            Self::BodyTooLarge => "body_too_large",
            Self::WrongParams => "wrong_params",
            Self::Transparent => "transparent",
            Self::BadCiphertext => "bad_ciphertext",
            Self::Unauthorized => "unauthorized",
            Self::NotUnderKey => "not_under_key",
            Self::MalformedTemplate => "malformed_template",
            Self::MalformedProbe => "malformed_probe",
            Self::Internal => "internal",
            Self::Store => "store",
            Self::StoreUnavailable => "store_unavailable",
            Self::CorruptStore => "corrupt_store",
            Self::BodyTimeout => "body_timeout",
            Self::UnsupportedMediaType => "unsupported_media_type",
            Self::MisdirectedHost => "misdirected_host",
            Self::Overloaded => "overloaded",
            Self::InvalidTicket => "invalid_ticket",
            Self::InvalidChallenge => "invalid_challenge",
            Self::InvalidVerdict => "invalid_verdict",
            Self::LoginMode => "login_mode",
            Self::LoginDisabled => "login_disabled",
            Self::Throttled => "throttled",
            Self::LockedOut => "locked_out",
            Self::DeciderUnavailable => "decider_unavailable",
            Self::ShardUnavailable => "shard_unavailable",
            Self::BadShardResult => "bad_shard_result",
        }
    }

    /// The HTTP status every response with this code has.
    pub const fn status(self) -> StatusCode {
        match self {
            Self::BadName
            | Self::Truncated
            | Self::Malformed
            | Self::WrongKind
            | Self::BadCount
            | Self::BadQuery
            | Self::BadJson
            | Self::BadInput
            | Self::BadTopK
            | Self::BadIndex
            | Self::BadBody => StatusCode::BAD_REQUEST,
            Self::UnknownUser
            | Self::NoTemplate
            | Self::UnknownGallery
            | Self::IdentifyDisabled
            | Self::UnknownTemplate
            | Self::LoginDisabled
            | Self::NotFound => StatusCode::NOT_FOUND,
            Self::Unauthorized => StatusCode::UNAUTHORIZED,
            Self::InvalidTicket
            | Self::InvalidChallenge
            | Self::InvalidVerdict
            | Self::LoginMode => StatusCode::FORBIDDEN,
            Self::Throttled | Self::LockedOut => StatusCode::TOO_MANY_REQUESTS,
            Self::DeciderUnavailable | Self::BadShardResult => StatusCode::BAD_GATEWAY,
            Self::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Self::BodyTimeout => StatusCode::REQUEST_TIMEOUT,
            Self::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::MisdirectedHost => StatusCode::MISDIRECTED_REQUEST,
            Self::Overloaded | Self::StoreUnavailable | Self::ShardUnavailable => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            Self::UserExists | Self::QuotaReached => StatusCode::CONFLICT,
            Self::BodyTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::WrongParams
            | Self::Transparent
            | Self::BadCiphertext
            | Self::NotUnderKey
            | Self::MalformedTemplate
            | Self::MalformedProbe => StatusCode::UNPROCESSABLE_ENTITY,
            Self::Internal | Self::Store | Self::CorruptStore => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::ErrorCode;

    #[test]
    fn serialized_codes_are_their_wire_names() {
        for code in ErrorCode::ALL {
            let json = serde_json::to_string(&code).unwrap();
            assert_eq!(json, format!("\"{}\"", code.as_str()));
        }
        let mut names: Vec<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ErrorCode::ALL.len(), "a code is listed twice");
    }

    /// The `(status, code)` pairs of the error table in docs/API.md.
    fn documented() -> Vec<(u16, String)> {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/API.md");
        let doc = std::fs::read_to_string(path).expect("docs/API.md");
        let mut lines = doc
            .lines()
            .skip_while(|l| l.trim() != "| status | code | when |")
            .skip(2);
        let mut out = Vec::new();
        for line in lines.by_ref().take_while(|l| l.starts_with('|')) {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let status: u16 = cells[1].parse().expect("a status in the first column");
            for code in cells[2].split(',') {
                let code = code.trim().trim_matches('`');
                out.push((status, code.to_string()));
            }
        }
        assert!(!out.is_empty(), "no error table in docs/API.md");
        out
    }

    #[test]
    fn the_error_table_in_api_md_lists_every_code_and_no_other() {
        let doc = documented();
        for (status, name) in &doc {
            let code = ErrorCode::ALL
                .iter()
                .find(|c| c.as_str() == name)
                .unwrap_or_else(|| panic!("docs/API.md lists `{name}`, which is no ErrorCode"));
            assert_eq!(code.status().as_u16(), *status, "the status of `{name}`");
        }
        for code in ErrorCode::ALL {
            assert!(
                doc.iter().any(|(_, n)| n == code.as_str()),
                "`{code}` is missing from the error table of docs/API.md"
            );
        }
    }
}
