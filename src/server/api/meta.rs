//! `GET /healthz`, `GET /v1/params`, `GET /metrics`.

use std::sync::Arc;

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;

use crate::bfv::Params;
use crate::matching::{pack, Quantizer};
use crate::server::metrics::Gauges;

use super::state::db;
use super::{ApiResult, AppState, Limits};

/// `GET /metrics`: Prometheus text format.
pub(super) async fn metrics(State(st): State<Arc<AppState>>) -> Response {
    let gauges = Gauges {
        backend: crate::Backend::detect(),
        params_id: st.params.id_hex(),
        threads: st.pool.current_num_threads(),
        slots_free: st.slots.available_permits(),
        cached_users: st.cache.len(),
        audit_journaled: st.store.audit_journaled(),
        audit_flush_failures: st.store.audit_flush_failures(),
        galleries: st.service.as_ref().map(|s| s.galleries.stats()),
        overloaded: [
            (st.slots.name, st.slots.refused()),
            (st.permits.name, st.permits.refused()),
        ],
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

/// `GET /healthz`. Fields in name order: the order the JSON object had
/// when it was built as a serde_json map (whose keys are sorted).
#[derive(Debug, Serialize)]
pub struct Health {
    /// The kernels' backend, `mixed` when the families differ.
    pub backend: &'static str,
    /// 1:N is on (`--service-key`).
    pub identify: bool,
    /// The backend each kernel family runs on, by family.
    pub kernels: std::collections::BTreeMap<&'static str, &'static str>,
    pub schema_version: i64,
    /// Sharded galleries (`--shards`): the shards this replica holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shards: Option<Vec<u32>>,
    pub status: &'static str,
    /// The store: `sqlite` or `postgres`.
    pub store: &'static str,
    pub threads: usize,
}

pub(super) async fn healthz(State(st): State<Arc<AppState>>) -> ApiResult<Json<Health>> {
    let version = db(&st.store, |s| s.schema_version()).await?;
    Ok(Json(Health {
        backend: crate::Backend::detect().name(),
        identify: st.service.is_some(),
        kernels: crate::Backend::detect()
            .kernels()
            .map(|(family, backend)| (family.name(), backend))
            .collect(),
        schema_version: version,
        shards: st
            .service
            .as_ref()
            .and_then(|s| s.shards.as_ref())
            .map(|sh| sh.held_shards()),
        status: "ok",
        store: st.store.kind(),
        threads: st.pool.current_num_threads(),
    }))
}

/// `GET /v1/params`: the parameters' id and a readable description.
#[derive(Debug, Serialize)]
pub struct ParamsInfo {
    pub ciphertext_primes: Vec<u32>,
    pub degree: usize,
    pub dimension: usize,
    pub format_version: u16,
    pub id: String,
    /// The server's body limits (absent from [`params_description`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limits: Option<Limits>,
    pub log2_qp: u32,
    pub name: &'static str,
    pub plaintext_modulus: u32,
    pub quantizer_scale: u32,
    pub reply_level: usize,
    pub security: &'static str,
    pub special_prime: u32,
    pub templates_per_ciphertext: usize,
}

/// The parameters' id and a readable description.
pub fn params_description(params: &Params, dim: usize, reply_level: usize) -> ParamsInfo {
    let scale = Quantizer::new(params, dim).map(|q| q.scale()).unwrap_or(0);
    ParamsInfo {
        ciphertext_primes: params.ciphertext_primes().to_vec(),
        degree: params.degree(),
        dimension: dim,
        format_version: crate::bfv::FORMAT_VERSION,
        id: params.id_hex(),
        limits: None,
        log2_qp: params.modulus_bits(),
        name: "auth4096",
        plaintext_modulus: params.plaintext_modulus(),
        quantizer_scale: scale,
        reply_level,
        security: "128-bit classical (HomomorphicEncryption.org table, ternary secret)",
        special_prime: params.special_prime(),
        templates_per_ciphertext: pack::templates_per_ciphertext(params, dim),
    }
}

pub(super) async fn params_info(State(st): State<Arc<AppState>>) -> Json<ParamsInfo> {
    Json(ParamsInfo {
        limits: Some(st.limits),
        ..params_description(&st.params, st.dim, st.verifier.reply_level())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The typed reply is byte for byte the JSON object it replaced.
    #[test]
    fn params_info_serializes_as_the_json_object_it_replaced() {
        let params = crate::server::params();
        let limits = Limits::new(&params);
        let typed = ParamsInfo {
            limits: Some(limits),
            ..params_description(&params, 128, 1)
        };
        let scale = Quantizer::new(&params, 128).unwrap().scale();
        let mut old = serde_json::json!({
            "id": params.id_hex(),
            "name": "auth4096",
            "degree": params.degree(),
            "plaintext_modulus": params.plaintext_modulus(),
            "ciphertext_primes": params.ciphertext_primes(),
            "special_prime": params.special_prime(),
            "log2_qp": params.modulus_bits(),
            "security": "128-bit classical (HomomorphicEncryption.org table, ternary secret)",
            "dimension": 128,
            "templates_per_ciphertext": pack::templates_per_ciphertext(&params, 128),
            "quantizer_scale": scale,
            "reply_level": 1,
            "format_version": crate::bfv::FORMAT_VERSION,
        });
        assert_eq!(
            serde_json::to_string(&params_description(&params, 128, 1)).unwrap(),
            old.to_string()
        );
        old["limits"] = serde_json::to_value(limits).unwrap();
        assert_eq!(serde_json::to_string(&typed).unwrap(), old.to_string());
        let health = Health {
            backend: "scalar",
            identify: false,
            kernels: [("dot", "scalar"), ("transforms", "scalar")].into(),
            schema_version: 5,
            shards: None,
            status: "ok",
            store: "sqlite",
            threads: 2,
        };
        let old = serde_json::json!({
            "status": "ok",
            "schema_version": 5,
            "backend": "scalar",
            "threads": 2,
            "identify": false,
            "kernels": {"transforms": "scalar", "dot": "scalar"},
            "store": "sqlite",
        });
        assert_eq!(serde_json::to_string(&health).unwrap(), old.to_string());
    }
}
