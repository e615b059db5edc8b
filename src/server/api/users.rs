//! 1:1 users: `GET|DELETE /v1/users/{user}`, `PUT .../keys`,
//! `PUT .../template` (verification is in [`super::verify`]).

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde::Deserialize;

use crate::bfv::{PublicKey, RelinKey};
use crate::matching::pack;
use crate::server::login::{Login, TokenError};
use crate::server::store::UserInfo;

use super::auth::Caller;
use super::extract::{BinaryBody, KeysBody, TemplateLimit, UserName};
use super::login::forget_failures;
use super::state::{db, to_completion};
use super::wire::{parse_fresh_ciphertext, split_keys};
use super::{ApiError, ApiResult, AppState, ErrorCode};

pub(super) async fn user_info(
    State(st): State<Arc<AppState>>,
    UserName(user): UserName,
) -> ApiResult<Json<UserInfo>> {
    let info = db(&st.store, move |s| s.user_info(&user)).await?;
    info.map(Json).ok_or_else(ApiError::unknown_user)
}

pub(super) async fn put_keys(
    State(st): State<Arc<AppState>>,
    Extension(caller): Extension<Caller>,
    user: ApiResult<UserName>,
    BinaryBody(body, _): KeysBody,
) -> ApiResult<StatusCode> {
    let UserName(user) = user?;
    if st.login.is_some() {
        return Err(ApiError::login_mode(
            "keys come from the decider: POST .../tickets registers the user",
        ));
    }
    // The ticket is taken with the template; here it must be valid.
    if let Caller::Ticket(t) = &caller {
        let valid = st.tickets.peek(t, &user).await;
        if !valid.map_err(|e| e.refusal(ErrorCode::InvalidTicket))? {
            return Err(TokenError::Invalid.refusal(ErrorCode::InvalidTicket));
        }
    }
    register_keys(st, user, body).await?;
    Ok(StatusCode::CREATED)
}

/// Parses both keys (on the pool: expanding seeds and checking residues is
/// real work), then stores the bytes exactly as received.
async fn register_keys(st: Arc<AppState>, user: String, body: Bytes) -> ApiResult<()> {
    let params = st.params.clone();
    let body2 = body.clone();
    st.compute(move || -> ApiResult<()> {
        let (pk, rk) = split_keys(&body2)?;
        PublicKey::from_bytes(&params, pk).map_err(|e| ApiError::format("public key", e))?;
        if let Some(rk) = rk {
            RelinKey::from_bytes(&params, rk)
                .map_err(|e| ApiError::format("relinearization key", e))?;
        }
        Ok(())
    })
    .await??;
    let params_id = st.params.id_hex();
    let max_users = st.quotas.users;
    to_completion(async move {
        let u = user.clone();
        db(&st.store, move |s| {
            let (pk, rk) = split_keys(&body).expect("checked above");
            s.put_keys(&u, &params_id, pk, rk, None, max_users)
        })
        .await?;
        st.cache.invalidate(&user);
        Ok(())
    })
    .await
}

/// `?count=`: templates in a ciphertext (default: as many as fit).
#[derive(Debug, Deserialize)]
pub(super) struct CountQuery {
    count: Option<u32>,
}

/// The checked `?count=` of a template upload. Without it: as many as fit
/// in a ciphertext, or for a `bundled` upload 0 (a bundle says how many
/// samples it holds).
pub(super) fn check_count(
    st: &AppState,
    query: Result<Query<CountQuery>, QueryRejection>,
    bundled: bool,
) -> ApiResult<u32> {
    let max = pack::templates_per_ciphertext(&st.params, st.dim) as u32;
    let count = match query?.0.count {
        None if bundled => return Ok(0),
        c => c.unwrap_or(max),
    };
    if count == 0 || count > max {
        return Err(ApiError::new(
            ErrorCode::BadCount,
            format!("count must be in 1..={max}"),
        ));
    }
    Ok(count)
}

pub(super) async fn put_template(
    State(st): State<Arc<AppState>>,
    Extension(caller): Extension<Caller>,
    user: ApiResult<UserName>,
    query: Result<Query<CountQuery>, QueryRejection>,
    BinaryBody(body, _): BinaryBody<TemplateLimit>,
) -> ApiResult<StatusCode> {
    let UserName(user) = user?;
    let count = check_count(&st, query, st.login.is_some())?;
    enroll_template(st, caller, user, body, count).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Checks the template, takes the caller's ticket if it holds one (a
/// template that does not parse leaves the ticket unused), then stores it.
/// In login mode the body is a bundle, which the decider must find
/// well-formed before anything is taken or stored; enrolling again lifts a
/// lockout.
async fn enroll_template(
    st: Arc<AppState>,
    caller: Caller,
    user: String,
    body: Bytes,
    count: u32,
) -> ApiResult<()> {
    if let (Some(_), Caller::Ticket(t)) = (&st.login, &caller) {
        // Refused before the work of checking (and burnt, as a ticket
        // presented for another user is).
        let valid = st.tickets.peek(t, &user).await;
        if !valid.map_err(|e| e.refusal(ErrorCode::InvalidTicket))? {
            let _ = st.tickets.take(t, &user).await;
            return Err(TokenError::Invalid.refusal(ErrorCode::InvalidTicket));
        }
    }
    let (template, count, checked) = match &st.login {
        Some(login) => {
            let (template, count) = check_bundle(&st, login, &user, body, count).await?;
            (template, count, true)
        }
        None => {
            let params = st.params.clone();
            let body2 = body.clone();
            st.compute(move || parse_fresh_ciphertext(&params, "template", &body2).map(drop))
                .await??;
            (body, count, false)
        }
    };
    if let Caller::Ticket(t) = &caller {
        st.tickets
            .take(t, &user)
            .await
            .map_err(|e| e.refusal(ErrorCode::InvalidTicket))?;
    }
    to_completion(async move {
        let u = user.clone();
        db(&st.store, move |s| {
            s.put_template(&u, &template, count, checked)
        })
        .await?;
        st.cache.invalidate(&user);
        forget_failures(&st, &user).await;
        Ok(())
    })
    .await
}

/// Login mode: a template bundle of `count` samples under `user`'s key,
/// checked ([`super::checks::check_template_bundle`]); `count` 0 means as
/// many as the bundle's one-hot ciphertexts say. Returns the packed
/// template's bytes, to store, and the sample count.
async fn check_bundle(
    st: &Arc<AppState>,
    login: &Arc<Login>,
    user: &str,
    body: Bytes,
    count: u32,
) -> ApiResult<(Bytes, u32)> {
    let u = user.to_string();
    let rec = db(&st.store, move |s| s.load_user(&u))
        .await?
        .ok_or_else(ApiError::unknown_user)?;
    let Some(epoch) = rec.key_epoch else {
        return Err(ApiError::login_mode(
            "this user holds their own keys: issue the ticket with ?rotate=true",
        ));
    };
    let keys = move |params: &crate::bfv::Params| -> ApiResult<(PublicKey, RelinKey)> {
        let pk = PublicKey::from_bytes(params, &rec.public_key)
            .map_err(|e| ApiError::corrupt("public key", e))?;
        let rk = rec
            .relin_key
            .as_deref()
            .ok_or_else(|| ApiError::internal("login mode without a relinearization key"))?;
        let rk = RelinKey::from_bytes(params, rk)
            .map_err(|e| ApiError::corrupt("relinearization key", e))?;
        Ok((pk, rk))
    };
    let owner = crate::server::decider::KeyLabel::user(user, epoch);
    super::checks::check_template_bundle(st, login, owner, body, count, keys, |k| (&k.0, &k.1))
        .await
}

pub(super) async fn delete_user(
    State(st): State<Arc<AppState>>,
    UserName(user): UserName,
) -> ApiResult<StatusCode> {
    let existed = to_completion(async move {
        let u = user.clone();
        let existed = db(&st.store, move |s| s.delete_user(&u)).await?;
        st.cache.invalidate(&user);
        forget_failures(&st, &user).await;
        Ok(existed)
    })
    .await?;
    if existed {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::unknown_user())
    }
}
