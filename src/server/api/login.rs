//! Login: enrollment tickets, users' public keys, challenges, the login
//! itself (a verdict from the decider) and the decider's JWK set. The
//! credentials each route needs are checked before these run (`auth`).

use std::sync::Arc;
use std::time::Instant;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde::{Deserialize, Serialize};

use crate::bfv::{PublicKey, RelinKey};
use crate::matching::wellformed::frame;
use crate::server::decider::http::KEY_STATEMENT_HEADER;
use crate::server::login::{Challenge, Login, Refusal, VerdictQuery};
use crate::server::store::{now_millis, now_secs, AuditRow, DeciderKey};
use crate::server::verdict::Outcome;

use super::auth::{client_addr, PeerAddr};
use super::extract::{BinaryBody, ProbeLimit, UserName};
use super::state::{db, to_completion};
use super::verify::{load_enrolled, verify_user, Audit, ProbeBody};
use super::wire::split_keys;
use super::{ApiError, ApiResult, AppState, ErrorCode};

fn login(st: &AppState) -> ApiResult<&Arc<Login>> {
    st.login.as_ref().ok_or_else(ApiError::login_disabled)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct TicketQuery {
    #[serde(default)]
    rotate: bool,
}

#[derive(Serialize)]
pub(super) struct TicketReply {
    user: String,
    ticket: String,
    /// Seconds since the Unix epoch.
    expires_at: i64,
    /// Login mode: the key epoch the template must be encrypted under.
    #[serde(skip_serializing_if = "Option::is_none")]
    epoch: Option<u32>,
}

/// `POST /v1/users/{user}/tickets[?rotate=true]`: an enrollment ticket. In
/// login mode it registers the user on first use, with keys from the
/// decider; `rotate` moves a registered user to the next key epoch (their
/// template goes: they enroll again with this ticket).
pub(super) async fn issue_ticket(
    State(st): State<Arc<AppState>>,
    user: ApiResult<UserName>,
    query: Result<Query<TicketQuery>, QueryRejection>,
) -> ApiResult<(StatusCode, Json<TicketReply>)> {
    let UserName(user) = user?;
    let Query(q) = query?;
    let epoch = match &st.login {
        Some(login) => Some(register(&st, login, &user, q.rotate).await?),
        None => None,
    };
    let ticket = st
        .tickets
        .issue(&user, ())
        .await
        .map_err(|e| e.refusal(ErrorCode::InvalidTicket))?;
    let expires_at = now_secs() + st.tickets.lifetime().as_secs() as i64;
    Ok((
        StatusCode::CREATED,
        Json(TicketReply {
            user,
            ticket,
            expires_at,
            epoch,
        }),
    ))
}

/// Makes sure `user` has the decider's keys (of the next epoch when
/// `rotate`), and returns their epoch.
async fn register(
    st: &Arc<AppState>,
    login: &Arc<Login>,
    user: &str,
    rotate: bool,
) -> ApiResult<u32> {
    let u = user.to_string();
    let current = db(&st.store, move |s| s.load_user(&u))
        .await?
        .map(|r| r.key_epoch);
    let epoch = match current {
        Some(Some(e)) if !rotate => return Ok(e),
        Some(Some(e)) => e.wrapping_add(1),
        // Keys the user held (registered before login mode): the next
        // ticket with `rotate` moves them to the decider's.
        Some(None) if !rotate => {
            return Err(ApiError::login_mode(
                "this user holds their own keys: issue the ticket with ?rotate=true",
            ))
        }
        // A first registration draws its epoch at random, so that a name
        // deleted and registered again gets an unrelated key pair (but for
        // a 2^-32 chance) although the matcher keeps nothing of the old one.
        Some(None) | None => {
            let mut raw = [0u8; 4];
            getrandom::fill(&mut raw)
                .map_err(|_| ApiError::internal("no randomness for the key epoch"))?;
            u32::from_le_bytes(raw)
        }
    };
    let (keys, statement) = login.decider.user_keys(user, epoch).await?;
    // What the decider sent must parse before it is stored.
    let params = st.params.clone();
    let checked = keys.clone();
    st.compute(move || -> ApiResult<()> {
        let (pk, rk) = split_keys(&checked)?;
        PublicKey::from_bytes(&params, pk)
            .map_err(|e| ApiError::corrupt("decider public key", e))?;
        let rk = rk.ok_or_else(|| ApiError::internal("the decider sent no relinearization key"))?;
        RelinKey::from_bytes(&params, rk)
            .map_err(|e| ApiError::corrupt("decider relinearization key", e))?;
        Ok(())
    })
    .await??;
    let (state, owned, params_id, max_users) = (
        st.clone(),
        user.to_string(),
        st.params.id_hex(),
        st.quotas.users,
    );
    let exists = current.is_some();
    to_completion(async move {
        let u = owned.clone();
        let stored = db(&state.store, move |s| {
            let (pk, rk) = split_keys(&keys).expect("checked above");
            let key = DeciderKey {
                epoch,
                statement: &statement,
            };
            if exists {
                s.rotate_keys(&u, pk, rk, key)
            } else {
                s.put_keys(&u, &params_id, pk, rk, Some(key), max_users)
            }
        })
        .await;
        state.cache.invalidate(&owned);
        match stored {
            // Registered meanwhile by another ticket request: same keys.
            Err(e) if e.code == ErrorCode::UserExists => Ok(()),
            other => other,
        }
    })
    .await?;
    if rotate {
        forget_failures(st, user).await;
    }
    Ok(epoch)
}

/// Forgets `user`'s failed logins in memory and in the store (enrolled
/// again, rotated or deleted). A store error is logged: what it leaves is a
/// count that comes back at the next start.
pub(super) async fn forget_failures(st: &AppState, user: &str) {
    let Some(login) = &st.login else { return };
    login.throttle.forget(user);
    let u = user.to_string();
    if let Err(e) = db(&st.store, move |s| s.clear_failures(&u)).await {
        tracing::error!(error = %e.message, "clearing a user's failed logins");
    }
}

/// `GET /v1/users/{user}/public-key`: what the browser encrypts the
/// user's template and probes under.
pub(super) async fn public_key(
    State(st): State<Arc<AppState>>,
    user: ApiResult<UserName>,
) -> ApiResult<Response> {
    let UserName(user) = user?;
    let rec = db(&st.store, move |s| s.load_user(&user))
        .await?
        .ok_or_else(ApiError::unknown_user)?;
    let mut resp = (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/octet-stream"),
        )],
        rec.public_key,
    )
        .into_response();
    if let Some(e) = rec.key_epoch {
        resp.headers_mut().insert(
            header::HeaderName::from_static("x-key-epoch"),
            HeaderValue::from(e),
        );
    }
    // The decider's signature over (user, epoch, the key's digest): the
    // page checks it against the JWK set of its own origin.
    if let Some(v) = rec
        .key_statement
        .and_then(|s| HeaderValue::from_str(&s).ok())
    {
        resp.headers_mut()
            .insert(header::HeaderName::from_static(KEY_STATEMENT_HEADER), v);
    }
    Ok(resp)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ChallengeQuery {
    aud: String,
}

#[derive(Serialize)]
pub(super) struct ChallengeReply {
    user: String,
    challenge: String,
    aud: String,
    expires_at: i64,
}

/// `POST /v1/users/{user}/challenges?aud=A`: a login challenge for `user`,
/// whose verdict will name `aud`.
pub(super) async fn issue_challenge(
    State(st): State<Arc<AppState>>,
    user: ApiResult<UserName>,
    query: Result<Query<ChallengeQuery>, QueryRejection>,
) -> ApiResult<(StatusCode, Json<ChallengeReply>)> {
    let login = login(&st)?.clone();
    let UserName(user) = user?;
    let Query(q) = query?;
    let aud = q.aud;
    login.check_audience(&aud)?;
    load_enrolled(&st, &user).await?;
    let challenge = login
        .challenges
        .issue(
            &user,
            Challenge {
                audience: aud.clone(),
            },
        )
        .await
        .map_err(|e| e.refusal(ErrorCode::InvalidChallenge))?;
    let expires_at = now_secs() + login.challenges.lifetime().as_secs() as i64;
    Ok((
        StatusCode::CREATED,
        Json(ChallengeReply {
            user,
            challenge,
            aud,
            expires_at,
        }),
    ))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct LoginQuery {
    challenge: String,
}

#[derive(Serialize)]
pub(super) struct LoginReply {
    verdict: String,
    outcome: Outcome,
}

/// `POST /v1/users/{user}/login?challenge=C`: the probe against the user's
/// template, masked for the decider, whose signed verdict is the answer.
pub(super) async fn login_user(
    State(st): State<Arc<AppState>>,
    user: ApiResult<UserName>,
    query: Result<Query<LoginQuery>, QueryRejection>,
    peer: Option<Extension<PeerAddr>>,
    headers: HeaderMap,
    BinaryBody(probe, _): BinaryBody<ProbeLimit>,
) -> ApiResult<Json<LoginReply>> {
    let login = login(&st)?.clone();
    let UserName(user) = user?;
    let Query(q) = query?;
    let addr = client_addr(&st, &headers, peer.map(|p| p.0));
    if st.store.is_shared() {
        // Other replicas count this user's failures too: the store's count
        // is the one that holds.
        let u = user.clone();
        let stored = db(&st.store, move |s| s.failures_of(&u)).await?;
        login
            .throttle
            .sync(&user, stored.as_ref(), now_millis(), Instant::now());
    }
    match login.throttle.check(&user, addr, Instant::now()) {
        Ok(()) => {}
        Err(Refusal::LockedOut) => {
            return Err(ApiError::new(
                ErrorCode::LockedOut,
                "too many failed logins: enroll again with a ticket",
            ))
        }
        Err(Refusal::Wait(s)) => return Err(ApiError::throttled(s)),
    }
    let challenge = login
        .challenges
        .take(&q.challenge, &user)
        .await
        .map_err(|e| e.refusal(ErrorCode::InvalidChallenge))?;
    let start = Instant::now();
    let body = ProbeBody::Bundle(probe, login.clone());
    let verified = verify_user(&st, user.clone(), body, Audit::Later).await?;
    verified.times.record(&st);
    let Some(epoch) = verified.key_epoch else {
        return Err(ApiError::login_mode(
            "this user holds their own keys: enroll again with a ticket issued with ?rotate=true",
        ));
    };
    let query = VerdictQuery {
        user: &user,
        epoch,
        samples: verified.times.count,
        aud: &challenge.audience,
        nonce: &q.challenge,
        template_checked: verified.template_checked,
    };
    // The score reply, then the probe's check replies.
    let request = frame(
        std::iter::once(verified.reply.as_slice())
            .chain(verified.checks.iter().map(|c| c.as_slice())),
    );
    let (verdict, outcome) = match login.decider.verdict(&query, request).await {
        Ok(jws) => {
            let outcome = outcome_of(&jws)?;
            (Ok(jws), outcome)
        }
        // A probe under another key: no verdict, and a failed attempt.
        Err(e) if e.code() == Some("not_under_key") => (Err(ApiError::from(e)), Outcome::Reject),
        Err(e) => return Err(e.into()),
    };
    // The user's count is kept in the store too, so that a restart lifts
    // no wait or lockout.
    match outcome {
        Outcome::Accept => {
            let had = login.throttle.failures(&user) > 0;
            login.throttle.succeeded(&user, addr);
            if had {
                let u = user.clone();
                db(&st.store, move |s| s.clear_failures(&u)).await?;
            }
        }
        Outcome::Reject => {
            let now = Instant::now();
            login.throttle.failed(&user, addr, now);
            // Counted in the store in one statement (replicas counting at
            // once both count); its count is the user's.
            let (u, ms) = (user.clone(), now_millis());
            let count = db(&st.store, move |s| s.add_failure(&u, ms)).await?;
            login.throttle.restore(&user, count, now);
        }
    }
    let row = AuditRow {
        user,
        ts: now_millis(),
        outcome: match outcome {
            Outcome::Accept => "accept",
            Outcome::Reject => "reject",
        }
        .into(),
        duration_us: start.elapsed().as_micros() as u64,
    };
    // Journaled before the reply, as a verification's row (`AuditLog`).
    let audit = st.clone();
    tokio::task::spawn_blocking(move || audit.audit.record(row, verified.user_id))
        .await
        .map_err(|_| ApiError::internal("audit task failed"))?
        .map_err(ApiError::audit)?;
    Ok(Json(LoginReply {
        verdict: verdict?,
        outcome,
    }))
}

/// The outcome a verdict states (read, not checked: it comes from the
/// decider over the matcher's authenticated channel).
fn outcome_of(jws: &str) -> ApiResult<Outcome> {
    #[derive(Deserialize)]
    struct Claims {
        outcome: Outcome,
    }
    let payload = jws.split('.').nth(1).unwrap_or_default();
    URL_SAFE_NO_PAD
        .decode(payload)
        .ok()
        .and_then(|p| serde_json::from_slice::<Claims>(&p).ok())
        .map(|c| c.outcome)
        .ok_or_else(|| {
            ApiError::new(
                ErrorCode::DeciderUnavailable,
                "the decider's verdict does not parse",
            )
        })
}

/// `GET /.well-known/jwks.json`: the decider's verdict keys, for relying
/// parties on the page's origin.
pub(super) async fn jwks(State(st): State<Arc<AppState>>) -> ApiResult<Response> {
    let (raw, _) = login(&st)?.jwks().await?;
    Ok((
        [
            (header::CACHE_CONTROL, "public, max-age=300"),
            (header::CONTENT_TYPE, "application/jwk-set+json"),
        ],
        raw,
    )
        .into_response())
}
