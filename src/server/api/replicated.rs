//! 1:N writes where replicas share a PostgreSQL database (mirrored
//! galleries, `crate::server::mirror`, and sharded ones, `super::sharded`):
//! straight to the database from whichever replica takes them, each under
//! the gallery's lock with the next gallery revision; memory follows when a
//! replica catches up.
//!
//! * An append takes the gallery's next sequence number in the database,
//!   with the quotas counted there.
//! * An erasure reads the ciphertext's row, makes its replacement and
//!   writes it back only if the row is still at the revision it read (two
//!   erasures of one ciphertext through two replicas never undo each
//!   other: the second is refused and retried).

use std::future::Future;
use std::sync::Arc;

use axum::body::Bytes;

use crate::bfv::Ciphertext;
use crate::matching::{Erasure, Gallery};
use crate::server::store::postgres::shards::Appended;
use crate::server::store::postgres::PgStore;
use crate::server::store::{Store, StoreError};

use super::galleries::GalleryState;
use super::state::{db, to_completion, Quotas};
use super::wire::parse_fresh_ciphertext;
use super::{ApiError, ApiResult, ErrorCode, ServiceKeys};

/// Runs a PostgreSQL call on tokio's blocking pool (`state::db` on a
/// store that is PostgreSQL: mirrors and shards exist only there).
pub(super) async fn pg<T, F>(store: &Arc<Store>, f: F) -> ApiResult<T>
where
    T: Send + 'static,
    F: FnOnce(&PgStore) -> Result<T, StoreError> + Send + 'static,
{
    db(store, move |s| match s {
        Store::Postgres(pg) => f(pg),
        Store::Sqlite(_) => Err(StoreError::Postgres(
            "replicated galleries need PostgreSQL".into(),
        )),
    })
    .await
}

fn unknown_template(index: usize) -> ApiError {
    ApiError::new(
        ErrorCode::UnknownTemplate,
        format!("no template {index} in this gallery"),
    )
}

/// Appends a gallery ciphertext as the gallery's next row, within
/// `quotas` (templates per gallery, galleries). Returns the index of its
/// first template (`per` templates a ciphertext) and the gallery's
/// template count.
pub(super) async fn append(
    st: &GalleryState,
    gallery: &str,
    body: Bytes,
    count: u32,
    quotas: Quotas,
    per: usize,
) -> ApiResult<(usize, usize)> {
    let params = st.app.params.clone();
    let body2 = body.clone();
    st.app
        .compute(move || parse_fresh_ciphertext(&params, "gallery template", &body2))
        .await??;
    let (g, store) = (gallery.to_string(), st.app.store.clone());
    to_completion(async move {
        match pg(&store, move |s| {
            s.append_gallery_row(&g, &body, count, quotas.gallery_templates, quotas.galleries)
        })
        .await?
        {
            Appended::Row { seq, templates } => Ok((seq as usize * per, templates)),
            Appended::TooManyGalleries(galleries) => Err(ApiError::quota(format!(
                "{galleries} galleries: the maximum (--max-galleries)"
            ))),
            Appended::TooManyTemplates(templates) => Err(ApiError::quota(format!(
                "the gallery would hold {templates} templates, past the maximum of {} (--max-gallery-templates)",
                quotas.gallery_templates
            ))),
        }
    })
    .await
}

/// Erases template `index` of `gallery` (`per` templates a ciphertext):
/// `erase(one, local)` makes the erasure of template `local` of `one`, the
/// gallery of the stored ciphertext holding it (kept at the top level
/// when `top_level`), and the replacement is written if the row did not
/// change meanwhile.
pub(super) async fn erase_row<F, Fut>(
    st: &GalleryState,
    gallery: &str,
    index: usize,
    per: usize,
    top_level: bool,
    erase: F,
) -> ApiResult<()>
where
    F: FnOnce(Gallery, usize) -> Fut + Send + 'static,
    Fut: Future<Output = ApiResult<Erasure>> + Send + 'static,
{
    let seq = (index / per) as i64;
    let (g, store, app) = (gallery.to_string(), st.app.store.clone(), st.app.clone());
    to_completion(async move {
        let g2 = g.clone();
        let row = pg(&store, move |s| s.gallery_row(&g2, seq))
            .await?
            .ok_or_else(|| unknown_template(index))?;
        let (params, dim, rev) = (app.params.clone(), app.dim, row.rev);
        let one = app
            .compute(move || -> ApiResult<Gallery> {
                let ct = Ciphertext::from_bytes(&params, &row.ciphertext)
                    .map_err(|e| ApiError::new(ErrorCode::CorruptStore, e.to_string()))?;
                let mut one = if top_level {
                    Gallery::for_encrypted_probes(&params, dim)?
                } else {
                    Gallery::new(&params, dim)?
                };
                one.restore(ct, row.count as usize, row.erased)?;
                Ok(one)
            })
            .await??;
        let local = index % per;
        if !one.contains(local) {
            return Err(unknown_template(index));
        }
        let e = erase(one, local).await?;
        let (bytes, mask) = (e.ciphertext().to_bytes(), e.erased_mask());
        let replaced = pg(&store, move |s| {
            s.replace_gallery_row(&g, seq, rev, &bytes, mask)
        })
        .await?;
        if !replaced {
            return Err(ApiError::new(
                ErrorCode::Overloaded,
                "the ciphertext changed while it was being erased: try again",
            ));
        }
        Ok(())
    })
    .await
}

/// [`erase_row`] for the key holder: the ciphertext decrypted under the
/// service key, the template's block zeroed, encrypted again.
pub(super) async fn erase_under_service_key(
    st: &GalleryState,
    gallery: &str,
    index: usize,
    per: usize,
) -> ApiResult<()> {
    let (svc, app) = (st.service.clone(), st.app.clone());
    erase_row(
        st,
        gallery,
        index,
        per,
        false,
        move |one, local| async move {
            app.compute(move || -> ApiResult<_> {
                let ServiceKeys::Local { sk, pk } = &svc.keys else {
                    return Err(ApiError::internal("no service key"));
                };
                Ok(one.erase(local, sk, pk)?)
            })
            .await?
        },
    )
    .await
}
