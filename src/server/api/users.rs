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
use crate::server::login::TokenError;
use crate::server::store::UserInfo;

use super::auth::Caller;
use super::extract::{BinaryBody, CiphertextBody, KeysBody, UserName};
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
        if !st.tickets.peek(t, &user) {
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

/// The checked `?count=` of a template upload.
pub(super) fn check_count(
    st: &AppState,
    query: Result<Query<CountQuery>, QueryRejection>,
) -> ApiResult<u32> {
    let max = pack::templates_per_ciphertext(&st.params, st.dim) as u32;
    let count = query?.0.count.unwrap_or(max);
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
    BinaryBody(body, _): CiphertextBody,
) -> ApiResult<StatusCode> {
    let UserName(user) = user?;
    let count = check_count(&st, query)?;
    enroll_template(st, caller, user, body, count).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Checks the template, takes the caller's ticket if it holds one (a
/// template that does not parse leaves the ticket unused), then stores it.
/// In login mode, enrolling again lifts a lockout.
async fn enroll_template(
    st: Arc<AppState>,
    caller: Caller,
    user: String,
    body: Bytes,
    count: u32,
) -> ApiResult<()> {
    let params = st.params.clone();
    let body2 = body.clone();
    st.compute(move || parse_fresh_ciphertext(&params, "template", &body2).map(drop))
        .await??;
    if let Caller::Ticket(t) = &caller {
        st.tickets
            .take(t, &user)
            .map_err(|e| e.refusal(ErrorCode::InvalidTicket))?;
    }
    to_completion(async move {
        let u = user.clone();
        db(&st.store, move |s| s.put_template(&u, &body, count)).await?;
        st.cache.invalidate(&user);
        forget_failures(&st, &user).await;
        Ok(())
    })
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
