//! What the store holds and hands out, the same for every store: users'
//! records, gallery rows, failed logins, audit rows.

use std::borrow::Cow;
use std::time::Duration;

/// A user's keys and template, as stored.
#[derive(Clone)]
pub struct UserRecord {
    /// The user's id: assigned at registration, never reused (audit rows
    /// belong to it).
    pub id: i64,
    /// The user's revision (see `Store::user_rev`).
    pub rev: i64,
    /// Parameter id (hex) the keys were made for.
    pub params_id: String,
    /// Serialized public key.
    pub public_key: Vec<u8>,
    /// Serialized relinearization key, if one was registered.
    pub relin_key: Option<Vec<u8>>,
    /// Serialized template ciphertext and its sample count.
    pub template: Option<(Vec<u8>, u32)>,
    /// Whether the template passed the decider's well-formedness check at
    /// enrollment (login mode).
    pub template_checked: bool,
    /// Login mode: the decider's key epoch the keys are of (`None`: keys
    /// the user holds).
    pub key_epoch: Option<u32>,
    /// Login mode: the decider's signed key statement (a JWS binding the
    /// user, the epoch and the public key's digest).
    pub key_statement: Option<String>,
}

/// Keys the decider derived: their epoch and its signed statement of them.
#[derive(Clone, Copy, Debug)]
pub struct DeciderKey<'a> {
    pub epoch: u32,
    pub statement: &'a str,
}

impl std::fmt::Debug for UserRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Sizes only: no key or ciphertext bytes in logs.
        f.debug_struct("UserRecord")
            .field("id", &self.id)
            .field("params_id", &self.params_id)
            .field("public_key_len", &self.public_key.len())
            .field("relin_key_len", &self.relin_key.as_ref().map(Vec::len))
            .field("template_len", &self.template.as_ref().map(|t| t.0.len()))
            .field("key_epoch", &self.key_epoch)
            .finish()
    }
}

/// What `GET /v1/users/{user}` reports (no key or ciphertext bytes).
#[derive(Clone, Debug, serde::Serialize)]
pub struct UserInfo {
    pub user: String,
    pub params_id: String,
    pub created: i64,
    pub public_key_bytes: usize,
    pub relin_key_bytes: Option<usize>,
    pub template_count: Option<u32>,
    pub template_bytes: Option<usize>,
    pub template_updated: Option<i64>,
    pub verifications: i64,
    /// Login mode: the decider's key epoch (absent: keys the user holds).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_epoch: Option<u32>,
}

/// A login-mode gallery's key, as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GalleryKeyRow {
    pub gallery: String,
    /// Its key epoch at the decider.
    pub epoch: u32,
    /// The keys framing of its public and relinearization keys.
    pub keys: Vec<u8>,
    /// The decider's signed statement of its public key.
    pub statement: String,
}

/// A gallery ciphertext as stored.
#[derive(Clone, Debug)]
pub struct GalleryRow {
    pub gallery: String,
    pub seq: i64,
    pub ciphertext: Vec<u8>,
    pub count: u32,
    /// Erased templates of the ciphertext (bit k: template k).
    pub erased: u64,
}

/// A gallery ciphertext as read from the store, borrowed from the row
/// being read.
#[derive(Clone, Copy, Debug)]
pub struct GalleryRowRef<'a> {
    pub gallery: &'a str,
    pub seq: i64,
    pub ciphertext: &'a [u8],
    pub count: u32,
    pub erased: u64,
}

/// A user's failed logins in a row, as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failures {
    pub user: String,
    pub count: u32,
    /// The last failure, milliseconds since the Unix epoch.
    pub last_ms: i64,
}

/// One audit row (a verification).
#[derive(Clone, Debug)]
pub struct AuditRow {
    pub user: String,
    /// Milliseconds since the Unix epoch.
    pub ts: i64,
    pub outcome: Cow<'static, str>,
    pub duration_us: u64,
}

/// How often the audit flusher moves journaled rows into the database.
pub const AUDIT_FLUSH_INTERVAL: Duration = Duration::from_millis(100);

/// How often the audit flusher removes rows past their retention (and once
/// when it starts).
pub const AUDIT_PRUNE_INTERVAL: Duration = Duration::from_secs(3600);

/// A one-time token to store (an enrollment ticket or a login challenge):
/// only its SHA-256 is kept.
#[derive(Clone, Copy, Debug)]
pub struct NewToken<'a> {
    /// `ticket` or `challenge`.
    pub kind: &'a str,
    pub digest: &'a [u8; 32],
    pub user: &'a str,
    /// What the token carries (a challenge's audience; empty for a ticket).
    pub value: &'a str,
    /// Milliseconds since the Unix epoch.
    pub expires_ms: i64,
    pub now_ms: i64,
    /// Live tokens of the kind at most: past it, none is issued.
    pub capacity: usize,
    /// Live tokens of one user at most: issuing one more drops the oldest.
    pub per_user: usize,
}
