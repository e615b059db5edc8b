//! 1:N: the galleries under `/v1/galleries`, as a router of their own,
//! merged only when the server has galleries ([`disabled_router`] answers
//! otherwise). With the key holder's service key (`--decider local
//! --service-key`) identifications are answered here, with scores; in
//! login mode each gallery has its own key from the decider, and an
//! identification is the decider's signed answer (`super::login_galleries`).

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{DefaultBodyLimit, FromRef, Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post, put};
use axum::{Json, Router};
use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};

use crate::matching::{pack, Match};
use crate::server::decider::KeyLabel;
use crate::server::gallery::Counts;
use crate::server::routes;
use crate::server::store::Store;

use super::checks::check_template_bundle;
use super::extract::{BinaryBody, CiphertextBody, GalleryName, TemplateLimit};
use super::router::JSON_LIMIT;
use super::state::to_completion;
use super::users::{check_count, CountQuery};
use super::wire::parse_fresh_ciphertext;
use super::{
    login_galleries, replicated, sharded, ApiError, ApiResult, AppState, ErrorCode, Limits,
    Service, ServiceKeys,
};

/// The 1:N routes' state: the server's, and the service key with the
/// galleries (present: these routes are routed only with them).
#[derive(Debug)]
pub struct GalleryState {
    pub app: Arc<AppState>,
    pub service: Arc<Service>,
}

impl FromRef<Arc<GalleryState>> for Limits {
    fn from_ref(st: &Arc<GalleryState>) -> Self {
        st.app.limits
    }
}

impl GalleryState {
    /// Templates per gallery ciphertext.
    fn per(&self) -> usize {
        pack::templates_per_ciphertext(&self.app.params, self.app.dim)
    }

    /// Catches this replica's copy of `gallery` up with the database when
    /// replicas share it (a mirror, on PostgreSQL: what the others wrote
    /// since the last look); in login mode the gallery's key with it, read
    /// again when the gallery was deleted or is not known here yet.
    pub(super) async fn fresh(&self, gallery: &str) -> ApiResult<()> {
        let (Some(mirror), Store::Postgres(pg)) = (&self.service.mirror, &*self.app.store) else {
            return Ok(());
        };
        let svc = &self.service;
        let c = mirror
            .catch_up(pg, &self.app.params, &svc.galleries, gallery)
            .await?;
        if let ServiceKeys::Decider(keys) = &svc.keys {
            if c.deleted {
                keys.remove(gallery);
            }
            if keys.get(gallery).is_none() {
                login_galleries::load_key(self, pg, keys, gallery)?;
            }
        }
        Ok(())
    }

    /// Parses a gallery ciphertext of `count` templates and appends it
    /// (store, then memory). Returns the index of its first template, the
    /// gallery's template count and `count`. In login mode the gallery must
    /// have been created (with its key) first, the body is a template
    /// bundle, and only its packed ciphertext is stored, once the decider
    /// finds every template of it well-formed; there `count` 0 means as
    /// many as the bundle holds.
    async fn add(&self, gallery: &str, body: Bytes, count: u32) -> ApiResult<(usize, usize, u32)> {
        if let Some(sh) = &self.service.shards {
            let added = sharded::add(self, sh, gallery, body, count).await?;
            return Ok((added.0, added.1, count));
        }
        self.fresh(gallery).await?;
        let (body, count) = match &self.service.keys {
            ServiceKeys::Decider(keys) => {
                let login = self
                    .app
                    .login
                    .as_ref()
                    .ok_or_else(ApiError::login_disabled)?;
                let key = keys.get(gallery).ok_or_else(|| {
                    ApiError::new(
                        ErrorCode::UnknownGallery,
                        "no such gallery: create it with PUT /v1/galleries/{gallery} first",
                    )
                })?;
                let owner = KeyLabel::gallery(gallery, key.epoch);
                let keys = move |_: &crate::bfv::Params| Ok(key);
                check_template_bundle(&self.app, login, owner, body, count, keys, |k| {
                    (&k.pk, &k.rk)
                })
                .await?
            }
            ServiceKeys::Local { .. } => (body, count),
        };
        let (first, templates) = self.append(gallery, body, count).await?;
        Ok((first, templates, count))
    }

    /// [`Self::add`]'s append of a parsed, and in login mode checked,
    /// gallery ciphertext.
    async fn append(&self, gallery: &str, body: Bytes, count: u32) -> ApiResult<(usize, usize)> {
        if self.service.mirror.is_some() {
            let quotas = self.service.galleries.quotas();
            let added = replicated::append(self, gallery, body, count, quotas, self.per()).await?;
            self.fresh(gallery).await?;
            return Ok(added);
        }
        let params = self.app.params.clone();
        let body2 = body.clone();
        let ct = self
            .app
            .compute(move || parse_fresh_ciphertext(&params, "gallery template", &body2))
            .await??;
        // Appends are serialized, so memory and disk agree on the order.
        let g = gallery.to_string();
        let store = self.app.store.clone();
        let svc = self.service.clone();
        to_completion(async move {
            let name = g.clone();
            svc.galleries
                .append(&name, ct, count, move |seq| {
                    store.insert_gallery_template(&g, seq, &body, count)
                })
                .await
        })
        .await
    }

    /// A gallery's counts and memory (read beside the gallery: never
    /// waiting on a scan).
    async fn info(&self, gallery: &str) -> ApiResult<GalleryInfo> {
        let per = self.per();
        self.fresh(gallery).await?;
        let c = match &self.service.shards {
            Some(sh) => sharded::counts(sh, Some(gallery))
                .await?
                .pop()
                .map(|(_, c)| c)
                .ok_or_else(|| ApiError::new(ErrorCode::UnknownGallery, "no such gallery"))?,
            None => self.service.galleries.counts(gallery)?,
        };
        Ok(GalleryInfo {
            ciphertexts: c.ciphertexts,
            erased: c.erased,
            gallery: gallery.to_string(),
            memory_bytes: c.memory_bytes,
            templates: c.templates,
            templates_per_ciphertext: per,
        })
    }

    /// Erases template `index` (store, then memory). Returns the gallery's
    /// remaining template count.
    async fn erase(&self, gallery: &str, index: usize) -> ApiResult<usize> {
        if let Some(sh) = &self.service.shards {
            return sharded::erase(self, sh, gallery, index).await;
        }
        if self.service.mirror.is_some() {
            self.fresh(gallery).await?;
            self.service.galleries.counts(gallery)?;
            match &self.service.keys {
                ServiceKeys::Local { .. } => {
                    replicated::erase_under_service_key(self, gallery, index, self.per()).await?
                }
                ServiceKeys::Decider(_) => {
                    login_galleries::erase_stored(self, gallery, index).await?
                }
            }
            self.fresh(gallery).await?;
            return Ok(self.service.galleries.counts(gallery)?.templates);
        }
        if let ServiceKeys::Decider(_) = &self.service.keys {
            return login_galleries::erase(self, gallery, index).await;
        }
        let svc = self.service.clone();
        let store = self.app.store.clone();
        let g = gallery.to_string();
        to_completion(async move {
            let name = g.clone();
            let ServiceKeys::Local { sk, pk } = &svc.keys else {
                return Err(ApiError::internal("no service key"));
            };
            svc.galleries
                .erase(&name, index, (sk, pk), move |seq, ct, mask| {
                    store.erase_gallery_template(&g, seq, &ct, mask)
                })
                .await
        })
        .await
    }

    /// Removes a gallery (store, then memory).
    async fn delete(&self, gallery: &str) -> ApiResult<()> {
        if let Some(sh) = &self.service.shards {
            return sharded::delete(sh, gallery).await;
        }
        self.fresh(gallery).await?;
        let store = self.app.store.clone();
        let g = gallery.to_string();
        let svc = self.service.clone();
        to_completion(async move {
            let name = g.clone();
            svc.galleries
                .remove(&name, move || store.delete_gallery(&g))
                .await?;
            if let ServiceKeys::Decider(keys) = &svc.keys {
                keys.remove(&name);
            }
            Ok(())
        })
        .await
    }

    /// The best `req.top_k` matches of `req.embedding` in `gallery`, on the
    /// rayon pool.
    async fn identify(&self, gallery: &str, req: IdentifyRequest) -> ApiResult<Vec<Match>> {
        self.fresh(gallery).await?;
        let svc = self.service.clone();
        let g = gallery.to_string();
        self.app
            .compute(move || -> ApiResult<_> {
                let ServiceKeys::Local { sk, .. } = &svc.keys else {
                    return Err(ApiError::internal("no service key"));
                };
                svc.galleries.with(&g, |gal| {
                    Ok(svc
                        .identifier
                        .identify(gal, sk, &req.embedding, req.top_k)?)
                })
            })
            .await?
    }
}

/// The 1:N routes over `service`.
pub(super) fn router(app: Arc<AppState>, service: Arc<Service>) -> Router<Arc<AppState>> {
    let decided = matches!(service.keys, ServiceKeys::Decider(_));
    let (create, identify) = if decided {
        (
            put(login_galleries::create),
            post(login_galleries::identify),
        )
    } else {
        (
            put(login_disabled),
            post(gallery_identify).layer(DefaultBodyLimit::max(JSON_LIMIT)),
        )
    };
    Router::new()
        .route(routes::SERVICE_PUBLIC_KEY, get(service_public_key))
        .route(routes::GALLERIES, get(gallery_list))
        .route(
            routes::GALLERY,
            get(gallery_info).put(create).delete(gallery_delete),
        )
        .route(routes::GALLERY_PUBLIC_KEY, get(gallery_public_key))
        .route(routes::GALLERY_TEMPLATES, post(gallery_add))
        .route(routes::GALLERY_TEMPLATE, delete(gallery_erase))
        .route(routes::GALLERY_IDENTIFY, identify)
        .route(
            routes::GALLERY_SHARD_IDENTIFY,
            post(sharded::shard_identify).layer(DefaultBodyLimit::max(JSON_LIMIT)),
        )
        .route(routes::CLUSTER_KEYS, get(sharded::cluster_keys))
        .with_state(Arc::new(GalleryState { app, service }))
}

/// The same routes without galleries: 404 `identify_disabled`, after
/// reading the body as the route with galleries would (so a body over the
/// limit is still 413).
pub(super) fn disabled_router() -> Router<Arc<AppState>> {
    Router::new()
        .route(routes::SERVICE_PUBLIC_KEY, get(disabled))
        .route(routes::GALLERIES, get(disabled))
        .route(
            routes::GALLERY,
            get(disabled).put(disabled).delete(disabled),
        )
        .route(routes::GALLERY_PUBLIC_KEY, get(disabled))
        .route(routes::GALLERY_TEMPLATES, post(disabled_upload))
        .route(routes::GALLERY_TEMPLATE, delete(disabled))
        .route(
            routes::GALLERY_IDENTIFY,
            post(disabled_json).layer(DefaultBodyLimit::max(JSON_LIMIT)),
        )
        .route(
            routes::GALLERY_SHARD_IDENTIFY,
            post(disabled_json).layer(DefaultBodyLimit::max(JSON_LIMIT)),
        )
        .route(routes::CLUSTER_KEYS, get(disabled))
}

/// `PUT /v1/galleries/{gallery}` with a service key: galleries are created
/// by their first template there; creating one with its own key is login
/// mode's.
async fn login_disabled() -> ApiError {
    ApiError::login_disabled()
}

fn identify_disabled() -> ApiError {
    ApiError::new(
        ErrorCode::IdentifyDisabled,
        "1:N identification is off: start the server with --decider (login mode) or --decider local --service-key",
    )
}

async fn disabled() -> ApiError {
    identify_disabled()
}

async fn disabled_upload(_: CiphertextBody) -> ApiError {
    identify_disabled()
}

async fn disabled_json(_: Result<Json<IgnoredAny>, JsonRejection>) -> ApiError {
    identify_disabled()
}

/// The service public key (`--service-key`), for encrypting gallery
/// templates. In login mode each gallery has its own.
async fn service_public_key(State(st): State<Arc<GalleryState>>) -> ApiResult<Response> {
    match &st.service.keys {
        ServiceKeys::Local { pk, .. } => Ok(octets(pk.to_bytes())),
        ServiceKeys::Decider(_) => Err(ApiError::login_mode(
            "in login mode each gallery has its own key: GET /v1/galleries/{gallery}/public-key",
        )),
    }
}

/// `GET /v1/galleries/{gallery}/public-key`: the key its templates and
/// probes are encrypted under (the service key, or in login mode the
/// gallery's own, with `x-key-epoch` and the decider's `x-key-statement`).
async fn gallery_public_key(
    State(st): State<Arc<GalleryState>>,
    gallery: ApiResult<GalleryName>,
) -> ApiResult<Response> {
    let GalleryName(gallery) = gallery?;
    st.fresh(&gallery).await?;
    match &st.service.keys {
        ServiceKeys::Local { pk, .. } => {
            st.service.galleries.counts(&gallery)?;
            Ok(octets(pk.to_bytes()))
        }
        ServiceKeys::Decider(keys) => login_galleries::public_key(keys, &gallery),
    }
}

pub(super) fn octets(body: Vec<u8>) -> Response {
    ([(header::CONTENT_TYPE, "application/octet-stream")], body).into_response()
}

#[derive(Debug, Serialize)]
pub(super) struct GalleryAdded {
    gallery: String,
    /// Index of the first template of this ciphertext in the gallery.
    first_index: usize,
    count: u32,
    templates: usize,
}

async fn gallery_add(
    State(st): State<Arc<GalleryState>>,
    gallery: ApiResult<GalleryName>,
    query: Result<Query<CountQuery>, QueryRejection>,
    BinaryBody(body, _): BinaryBody<TemplateLimit>,
) -> ApiResult<(StatusCode, Json<GalleryAdded>)> {
    let GalleryName(gallery) = gallery?;
    let bundled = matches!(st.service.keys, ServiceKeys::Decider(_));
    let count = check_count(&st.app, query, bundled)?;
    let (first_index, templates, count) = st.add(&gallery, body, count).await?;
    Ok((
        StatusCode::CREATED,
        Json(GalleryAdded {
            gallery,
            first_index,
            count,
            templates,
        }),
    ))
}

/// A gallery's counts, as `GET /v1/galleries` lists them (fields in name
/// order, as serde_json's maps had them).
#[derive(Debug, Serialize)]
struct GalleryCounts {
    ciphertexts: usize,
    erased: usize,
    gallery: String,
    templates: usize,
}

impl GalleryCounts {
    fn of(name: String, c: Counts) -> Self {
        Self {
            ciphertexts: c.ciphertexts,
            erased: c.erased,
            gallery: name,
            templates: c.templates,
        }
    }
}

#[derive(Debug, Serialize)]
struct GalleryList {
    galleries: Vec<GalleryCounts>,
}

/// `GET /v1/galleries`: every gallery with its counts, by name.
async fn gallery_list(State(st): State<Arc<GalleryState>>) -> ApiResult<Json<GalleryList>> {
    let all = match &st.service.shards {
        Some(sh) => sharded::counts(sh, None).await?,
        None => {
            if st.service.mirror.is_some() {
                // Galleries made through other replicas too.
                for name in replicated::pg(&st.app.store, |s| s.gallery_names()).await? {
                    st.fresh(&name).await?;
                }
            }
            st.service.galleries.list()?
        }
    };
    let galleries = all
        .into_iter()
        .map(|(name, c)| GalleryCounts::of(name, c))
        .collect();
    Ok(Json(GalleryList { galleries }))
}

/// `GET /v1/galleries/{gallery}`.
#[derive(Debug, Serialize)]
struct GalleryInfo {
    ciphertexts: usize,
    erased: usize,
    gallery: String,
    memory_bytes: usize,
    templates: usize,
    templates_per_ciphertext: usize,
}

/// `GET /v1/galleries/{gallery}`: counts, no ciphertext bytes.
async fn gallery_info(
    State(st): State<Arc<GalleryState>>,
    gallery: ApiResult<GalleryName>,
) -> ApiResult<Json<GalleryInfo>> {
    let GalleryName(gallery) = gallery?;
    let info = st.info(&gallery).await?;
    Ok(Json(info))
}

/// `DELETE /v1/galleries/{gallery}/templates/{index}`: erases one template
/// (its ciphertext is replaced by one without it); the others keep their
/// indices.
async fn gallery_erase(
    State(st): State<Arc<GalleryState>>,
    gallery: ApiResult<GalleryName>,
    path: Result<Path<(String, String)>, axum::extract::rejection::PathRejection>,
) -> ApiResult<StatusCode> {
    let GalleryName(gallery) = gallery?;
    let Path((_, index)) = path?;
    let index: usize = index.parse().map_err(|_| {
        ApiError::new(
            ErrorCode::BadIndex,
            "a template index is a non-negative integer",
        )
    })?;
    let left = st.erase(&gallery, index).await?;
    tracing::info!(gallery = %gallery, index, templates = left, "template erased");
    Ok(StatusCode::NO_CONTENT)
}

/// `DELETE /v1/galleries/{gallery}`: removes the gallery and its templates.
async fn gallery_delete(
    State(st): State<Arc<GalleryState>>,
    gallery: ApiResult<GalleryName>,
) -> ApiResult<StatusCode> {
    let GalleryName(gallery) = gallery?;
    st.delete(&gallery).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Deserialize)]
pub(super) struct IdentifyRequest {
    embedding: Vec<f32>,
    #[serde(default = "default_top_k")]
    top_k: usize,
}

fn default_top_k() -> usize {
    5
}

/// The reply of `POST /v1/galleries/{gallery}/identify`.
#[derive(Debug, Serialize)]
struct Identified {
    gallery: String,
    /// Best first.
    matches: Vec<Ranked>,
    /// Sharded galleries: the merging replica's signed identification.
    #[serde(skip_serializing_if = "Option::is_none")]
    identification: Option<String>,
}

/// One match of an identification.
#[derive(Debug, Serialize)]
struct Ranked {
    cosine: f64,
    index: usize,
    score: i64,
}

async fn gallery_identify(
    State(st): State<Arc<GalleryState>>,
    gallery: ApiResult<GalleryName>,
    headers: HeaderMap,
    body: Result<Json<IdentifyRequest>, JsonRejection>,
) -> ApiResult<Json<Identified>> {
    let GalleryName(gallery) = gallery?;
    let Json(req) = body?;
    sharded::check_top_k(req.top_k)?;
    let (matches, identification) = match &st.service.shards {
        Some(sh) => {
            let (m, jws) =
                sharded::identify(&st, sh, &gallery, req.embedding, req.top_k, &headers).await?;
            (m, Some(jws))
        }
        None => (st.identify(&gallery, req).await?, None),
    };
    let matches = matches
        .iter()
        .map(|m| Ranked {
            cosine: m.cosine,
            index: m.index,
            score: m.score,
        })
        .collect();
    Ok(Json(Identified {
        gallery,
        matches,
        identification,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The typed replies are byte for byte the JSON objects they replaced.
    #[test]
    fn replies_serialize_as_the_json_objects_they_replaced() {
        let counts = GalleryCounts {
            ciphertexts: 2,
            erased: 1,
            gallery: "staff".into(),
            templates: 63,
        };
        let old = serde_json::json!({
            "gallery": "staff", "templates": 63, "erased": 1, "ciphertexts": 2,
        });
        assert_eq!(serde_json::to_string(&counts).unwrap(), old.to_string());
        let list = GalleryList {
            galleries: vec![counts],
        };
        let old = serde_json::json!({ "galleries": [old] });
        assert_eq!(serde_json::to_string(&list).unwrap(), old.to_string());
        let info = GalleryInfo {
            ciphertexts: 2,
            erased: 1,
            gallery: "staff".into(),
            memory_bytes: 1 << 20,
            templates: 63,
            templates_per_ciphertext: 32,
        };
        let old = serde_json::json!({
            "gallery": "staff", "templates": 63, "erased": 1, "ciphertexts": 2,
            "templates_per_ciphertext": 32, "memory_bytes": 1 << 20,
        });
        assert_eq!(serde_json::to_string(&info).unwrap(), old.to_string());
        let identified = Identified {
            gallery: "staff".into(),
            matches: vec![Ranked {
                cosine: 0.1,
                index: 7,
                score: -3,
            }],
            identification: None,
        };
        let old = serde_json::json!({
            "gallery": "staff",
            "matches": [{ "index": 7, "score": -3, "cosine": 0.1 }],
        });
        assert_eq!(serde_json::to_string(&identified).unwrap(), old.to_string());
    }
}
