//! Login mode: a template upload's well-formedness checks, for a user's
//! template at enrollment and for a gallery ciphertext's templates alike.
//! The matcher computes the check replies under the owner's keys; the
//! decider judges them (`POST /v1/template-checks`) and nothing is stored
//! unless it finds every sample well-formed (docs/PROTOCOL.md,
//! "Well-formed embeddings").

use std::sync::Arc;

use axum::body::Bytes;

use crate::bfv::{Params, PublicKey, RelinKey};
use crate::matching::pack;
use crate::matching::wellformed::{frame, Bundle, Packed};
use crate::server::decider::KeyLabel;
use crate::server::login::Login;

use super::{ApiError, ApiResult, AppState, ErrorCode};

/// A template bundle of `count` samples under `owner`'s keys, checked;
/// `count` 0 means as many as the bundle's one-hot ciphertexts say.
/// `keys` gives the keys (on the compute pool, where a stored record is
/// parsed) and `pk_rk` reads them. Returns the packed template's bytes, to
/// store, and the sample count.
pub(super) async fn check_template_bundle<K: Send + 'static>(
    st: &AppState,
    login: &Arc<Login>,
    owner: KeyLabel<'_>,
    body: Bytes,
    count: u32,
    keys: impl FnOnce(&Params) -> ApiResult<K> + Send + 'static,
    pk_rk: fn(&K) -> (&PublicKey, &RelinKey),
) -> ApiResult<(Bytes, u32)> {
    let (params, checker) = (st.params.clone(), login.clone());
    let max = pack::templates_per_ciphertext(&st.params, st.dim);
    let (template, items, count) = st
        .compute(move || -> ApiResult<(Vec<u8>, Vec<Vec<u8>>, u32)> {
            let bundle = Bundle::from_bytes_untrusted(&params, &body)
                .map_err(|e| ApiError::format("template bundle", e))?;
            let per = checker.checker.layout().ciphertexts_per_sample();
            let count = match count {
                0 => {
                    let n = bundle.one_hot.len() / per;
                    if n == 0 || n > max || n * per != bundle.one_hot.len() {
                        return Err(ApiError::new(
                            ErrorCode::BadCount,
                            format!(
                                "a template bundle holds 1 to {max} samples of {per} one-hot \
                                 ciphertexts each; this one has {}",
                                bundle.one_hot.len()
                            ),
                        ));
                    }
                    n as u32
                }
                c => c,
            };
            let keys = keys(&params)?;
            let (pk, rk) = pk_rk(&keys);
            let kind = Packed::Template {
                samples: count as usize,
            };
            let replies = checker
                .checker
                .check(&bundle.packed, kind, &bundle.one_hot, pk, rk)?;
            Ok((bundle.packed.to_bytes(), replies.items(), count))
        })
        .await??;
    let request = frame(items.iter().map(|i| i.as_slice()));
    login.decider.check_template(&owner, count, request).await?;
    Ok((Bytes::from(template), count))
}
