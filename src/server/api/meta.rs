//! `GET /healthz`, `GET /v1/params`, `GET /metrics`.

use std::sync::Arc;

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Json;

use crate::bfv::Params;
use crate::matching::{pack, Quantizer};
use crate::server::metrics::Gauges;

use super::state::db;
use super::{ApiResult, AppState};

/// `GET /metrics`: Prometheus text format.
pub(super) async fn metrics(State(st): State<Arc<AppState>>) -> Response {
    let gauges = Gauges {
        backend: crate::Backend::detect().name(),
        params_id: st.params.id_hex(),
        threads: st.pool.current_num_threads(),
        slots_free: st.slots.available_permits(),
        cached_users: st.cache.len(),
        audit_journaled: st.store.audit_journaled(),
        audit_flush_failures: st.store.audit_flush_failures(),
        galleries: st.service.as_ref().map(|s| s.galleries.stats()),
    };
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        st.metrics.render(&gauges),
    )
        .into_response()
}

pub(super) async fn healthz(State(st): State<Arc<AppState>>) -> ApiResult<Json<serde_json::Value>> {
    let version = db(&st.store, |s| s.schema_version()).await?;
    Ok(Json(serde_json::json!({
        "status": "ok",
        "schema_version": version,
        "backend": crate::Backend::detect().name(),
        "threads": st.pool.current_num_threads(),
        "identify": st.service.is_some(),
    })))
}

/// The parameters' id and a readable description.
pub fn params_description(params: &Params, dim: usize, reply_limbs: usize) -> serde_json::Value {
    let scale = Quantizer::new(params, dim).map(|q| q.scale()).unwrap_or(0);
    serde_json::json!({
        "id": params.id_hex(),
        "name": "auth4096",
        "degree": params.degree(),
        "plaintext_modulus": params.plaintext_modulus(),
        "ciphertext_primes": params.ciphertext_primes(),
        "special_prime": params.special_prime(),
        "log2_qp": params.modulus_bits(),
        "security": "128-bit classical (HomomorphicEncryption.org table, ternary secret)",
        "dimension": dim,
        "templates_per_ciphertext": pack::templates_per_ciphertext(params, dim),
        "quantizer_scale": scale,
        "reply_limbs": reply_limbs,
        "format_version": crate::bfv::FORMAT_VERSION,
    })
}

pub(super) async fn params_info(State(st): State<Arc<AppState>>) -> Json<serde_json::Value> {
    let mut v = params_description(&st.params, st.dim, st.verifier.reply_limbs());
    v["limits"] = serde_json::to_value(st.limits).unwrap_or_default();
    Json(v)
}
