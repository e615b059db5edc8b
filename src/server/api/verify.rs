//! `POST /v1/users/{user}/verify`: a probe against the user's template, on
//! the current thread once a matching slot is free
//! ([`AppState::compute_here`]), its audit row journaled before the reply.

use std::sync::Arc;
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::bfv::{Ciphertext, Params, PublicKey, RelinKey};
use crate::matching::wellformed::{Bundle, Packed};
use crate::matching::Verifier;
use crate::server::cache::Loaded;
use crate::server::store::{now_millis, AuditRow, UserRecord};

use super::extract::{BinaryBody, CiphertextBody, UserName};
use super::state::db;
use super::wire::parse_fresh_ciphertext;
use super::{ApiError, ApiResult, AppState, ErrorCode};

/// Where a verification's time went (reported in `Server-Timing` and in
/// the request's log line).
#[derive(Clone, Copy, Debug)]
pub(super) struct VerifyTimes {
    /// Waiting for a matching thread.
    pub queue_us: u64,
    /// Parsing the probe and the stored keys and template.
    pub parse_us: u64,
    /// `Verifier::verify` and serializing the reply.
    pub match_us: u64,
    /// Journaling the audit row.
    pub audit_us: u64,
    /// Store reads and journaling the audit row: storage time on the
    /// request's path.
    pub db_us: u64,
    /// Scores in the reply.
    pub count: u32,
}

impl VerifyTimes {
    /// The `Server-Timing` header's value.
    fn server_timing(&self) -> String {
        let ms = |us: u64| us as f64 / 1000.0;
        format!(
            "db;dur={:.3}, audit;dur={:.3}, queue;dur={:.3}, parse;dur={:.3}, match;dur={:.3}",
            ms(self.db_us),
            ms(self.audit_us),
            ms(self.queue_us),
            ms(self.parse_us),
            ms(self.match_us)
        )
    }
}

/// A verification's reply bytes, where its time went, and whose it was.
pub(super) struct Verified {
    pub reply: Vec<u8>,
    pub times: VerifyTimes,
    /// The user's id (for an audit row written later).
    pub user_id: i64,
    /// The user's key epoch (login mode).
    pub key_epoch: Option<u32>,
    /// Login mode: the probe's check replies, as list items for the decider.
    pub checks: Vec<Vec<u8>>,
    /// Login mode: whether the template passed its check at enrollment.
    pub template_checked: bool,
}

/// What a verification's body holds.
pub(super) enum ProbeBody {
    /// A ciphertext (1:1 mode).
    Ciphertext(Bytes),
    /// A bundle (login mode): the probe and its one-hot ciphertexts, whose
    /// checks are computed with the reply.
    Bundle(Bytes, Arc<crate::server::login::Login>),
}

/// When a verification's audit row is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Audit {
    /// Before the reply, with the outcome `ok` (the server does not know
    /// the scores).
    Now,
    /// By the caller, once it knows the outcome (a login's verdict).
    Later,
}

pub(super) async fn verify(
    State(st): State<Arc<AppState>>,
    user: ApiResult<UserName>,
    BinaryBody(body, _): CiphertextBody,
) -> ApiResult<Response> {
    let UserName(user) = user?;
    if st.login.is_some() {
        return Err(ApiError::login_mode(
            "scores are not returned in login mode: POST .../login with a challenge",
        ));
    }
    let Verified {
        reply, times: t, ..
    } = verify_user(&st, user, ProbeBody::Ciphertext(body), Audit::Now).await?;
    t.record(&st);
    let timing = t.server_timing();
    let mut resp = (
        StatusCode::OK,
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/octet-stream"),
            ),
            (
                header::HeaderName::from_static("x-template-count"),
                HeaderValue::from(t.count),
            ),
            (
                header::HeaderName::from_static("server-timing"),
                HeaderValue::from_str(&timing).unwrap_or(HeaderValue::from_static("")),
            ),
        ],
        reply,
    )
        .into_response();
    // Logged with the request's one line (see `log::request_log`).
    resp.extensions_mut().insert(t);
    Ok(resp)
}

impl VerifyTimes {
    /// Counts the verification in `/metrics`.
    pub(super) fn record(&self, st: &AppState) {
        st.metrics.verify_phases([
            self.queue_us,
            self.parse_us,
            self.match_us,
            self.audit_us,
            self.db_us,
        ]);
    }
}

/// What a verification computes: the reply's bytes, the check replies (login
/// mode), the user's parsed objects and the times.
type Computed = (Vec<u8>, Vec<Vec<u8>>, Arc<Loaded>, VerifyTimes);

/// Verifies `probe` against `user`'s template: the user's parsed objects
/// come from the cache, or are read and parsed (and then cached).
pub(super) async fn verify_user(
    st: &Arc<AppState>,
    user: String,
    probe: ProbeBody,
    when: Audit,
) -> ApiResult<Verified> {
    let mut db_us = 0;
    let mut cached = st.cache.get(&user);
    if let (Some(c), true) = (&cached, st.store.is_shared()) {
        // Another replica may have written the user since it was cached:
        // its revision says (one indexed read).
        let t_db = Instant::now();
        let u = user.clone();
        let now = db(&st.store, move |s| s.user_rev(&u)).await?;
        db_us += t_db.elapsed().as_micros() as u64;
        if now != Some((c.user_id, c.rev)) {
            st.cache.invalidate(&user);
            cached = None;
        }
    }
    let (stamp, record) = match &cached {
        Some(_) => (None, None),
        None => {
            let t_db = Instant::now();
            let stamp = st.cache.stamp();
            let rec = load_enrolled(st, &user).await?;
            db_us += t_db.elapsed().as_micros() as u64;
            (Some(stamp), Some(rec))
        }
    };
    let state = Arc::clone(st);
    let audit_user = user.clone();
    let queued = Instant::now();
    let (reply, checks, loaded, mut t) = st
        .compute_here(move || -> ApiResult<Computed> {
            let start = Instant::now();
            let queue_us = queued.elapsed().as_micros() as u64;
            let (params, verifier) = (&state.params, &state.verifier);
            let (probe, one_hot) = match &probe {
                ProbeBody::Ciphertext(b) => (parse_fresh_ciphertext(params, "probe", b)?, None),
                ProbeBody::Bundle(b, login) => {
                    // Sizes and levels are the checker's to refuse.
                    let bundle = Bundle::from_bytes_untrusted(params, b)
                        .map_err(|e| ApiError::format("probe bundle", e))?;
                    (bundle.packed, Some((bundle.one_hot, login.clone())))
                }
            };
            let loaded = match (cached, record) {
                (Some(l), _) => l,
                (None, Some(rec)) => Arc::new(parse_record(params, verifier, rec)?),
                (None, None) => return Err(ApiError::internal("no user record")),
            };
            let parse_us = start.elapsed().as_micros() as u64;
            let reply = verifier.verify_prepared(
                &loaded.template,
                &probe,
                &loaded.pk,
                loaded.rk.as_ref(),
            )?;
            // Relinearized, the reply goes out in its compact form.
            let bytes = match loaded.rk {
                Some(_) => verifier.compact(&reply)?.to_bytes(),
                None => reply.to_bytes(),
            };
            // In login mode, the checks that the probe is well-formed.
            let checks = match (one_hot, &loaded.rk) {
                (Some((one_hot, login)), Some(rk)) => login
                    .checker
                    .check(&probe, Packed::Probe, &one_hot, &loaded.pk, rk)?
                    .items(),
                (Some(_), None) => {
                    return Err(ApiError::internal(
                        "login mode without a relinearization key",
                    ))
                }
                (None, _) => Vec::new(),
            };
            let total = start.elapsed().as_micros() as u64;
            // The audit row, journaled before the reply is sent (see
            // `AuditLog`). Its time is storage time, not part of `match`.
            let audit_us = match when {
                Audit::Now => state
                    .audit
                    .record(
                        AuditRow {
                            user: audit_user,
                            ts: now_millis(),
                            outcome: "ok".into(),
                            duration_us: total,
                        },
                        loaded.user_id,
                    )
                    .map_err(ApiError::audit)?
                    .as_micros() as u64,
                Audit::Later => 0,
            };
            Ok((
                bytes,
                checks,
                loaded,
                VerifyTimes {
                    queue_us,
                    parse_us,
                    match_us: total - parse_us,
                    audit_us,
                    db_us: audit_us,
                    count: 0,
                },
            ))
        })
        .await??;
    t.count = loaded.count;
    let (user_id, key_epoch, template_checked) =
        (loaded.user_id, loaded.key_epoch, loaded.template_checked);
    if let Some(stamp) = stamp {
        st.cache.insert(&user, stamp, loaded);
    }
    t.db_us += db_us;
    Ok(Verified {
        reply,
        times: t,
        user_id,
        key_epoch,
        checks,
        template_checked,
    })
}

/// Parses a stored user record (keys and template) and prepares the
/// template for repeated verifications.
/// The stored record of `user`, who must have an enrolled template (404
/// `unknown_user` or `no_template` otherwise).
pub(super) async fn load_enrolled(st: &AppState, user: &str) -> ApiResult<UserRecord> {
    let u = user.to_string();
    let rec = db(&st.store, move |s| s.load_user(&u))
        .await?
        .ok_or_else(ApiError::unknown_user)?;
    if rec.template.is_none() {
        return Err(ApiError::new(
            ErrorCode::NoTemplate,
            "this user has no enrolled template",
        ));
    }
    Ok(rec)
}

fn parse_record(params: &Params, verifier: &Verifier, rec: UserRecord) -> ApiResult<Loaded> {
    let (template, count) = rec
        .template
        .ok_or_else(|| ApiError::internal("no template"))?;
    let pk = PublicKey::from_bytes(params, &rec.public_key)
        .map_err(|e| ApiError::corrupt("public key", e))?;
    let rk = match &rec.relin_key {
        Some(b) => Some(
            RelinKey::from_bytes(params, b)
                .map_err(|e| ApiError::corrupt("relinearization key", e))?,
        ),
        None => None,
    };
    let template =
        Ciphertext::from_bytes(params, &template).map_err(|e| ApiError::corrupt("template", e))?;
    let template = verifier.prepare_template(&template)?;
    Ok(Loaded {
        user_id: rec.id,
        rev: rec.rev,
        pk,
        rk,
        template,
        count,
        key_epoch: rec.key_epoch,
        template_checked: rec.template_checked,
    })
}
