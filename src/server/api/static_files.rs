//! The demo page (`--www`, at `/`), the npm package (`--pkg`, at `/pkg/`)
//! and the demo's face model (`--face`, at `/face/`): GET and HEAD of plain
//! file names only.

use std::path::{Path as FsPath, PathBuf};
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, Method, StatusCode};
use axum::response::{IntoResponse, Response};

use super::extract::drain;
use super::{ApiError, AppState};

/// GET/HEAD of a file under `--www` (at `/`), `--pkg` (at `/pkg/`) or
/// `--face` (at `/face/`).
pub(super) async fn static_files(
    State(st): State<Arc<AppState>>,
    method: Method,
    req: Request,
) -> Response {
    let (parts, body) = req.into_parts();
    drain(body).await;
    let path = parts.uri.path();
    if path == "/v1" || path.starts_with("/v1/") || path == "/healthz" {
        return ApiError::not_found("no such route").into_response();
    }
    if method != Method::GET && method != Method::HEAD {
        return ApiError::method_not_allowed().into_response();
    }
    // The face model's 14 MB change only with setup's pinned versions: a
    // day in the browser's cache; its VERSION (which the page asks to see
    // whether the model is served) and everything else revalidate.
    let mut cache = "no-cache";
    let (root, rel) = if let Some(rest) = path.strip_prefix("/pkg/") {
        (Some(&st.pkg), rest)
    } else if let Some(rest) = path.strip_prefix("/face/") {
        if rest != "VERSION" {
            cache = "public, max-age=86400";
        }
        (st.face.as_ref(), rest)
    } else {
        (Some(&st.www), path.trim_start_matches('/'))
    };
    let Some(file) = root.and_then(|root| resolve(root, rel)) else {
        return ApiError::not_found("no such file").into_response();
    };
    let Ok(data) = tokio::fs::read(&file).await else {
        return ApiError::not_found("no such file").into_response();
    };
    let body = if method == Method::HEAD {
        Body::empty()
    } else {
        Body::from(data)
    };
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, content_type(&file)),
            (header::CACHE_CONTROL, cache),
        ],
        body,
    )
        .into_response()
}

/// The file for a request path under `root`, refusing anything but plain
/// names (no `..`, no hidden files, no encoded characters); a directory
/// resolves to its `index.html`.
fn resolve(root: &FsPath, rel: &str) -> Option<PathBuf> {
    let mut p = root.to_path_buf();
    for seg in rel.split('/').filter(|s| !s.is_empty()) {
        let ok = !seg.starts_with('.')
            && seg
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
        if !ok {
            return None;
        }
        p.push(seg);
    }
    if p.is_dir() {
        p.push("index.html");
    }
    p.is_file().then_some(p)
}

fn content_type(p: &FsPath) -> &'static str {
    match p.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "wasm" => "application/wasm",
        "css" => "text/css; charset=utf-8",
        "json" | "map" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "ico" => "image/x-icon",
        "txt" | "md" | "ts" => "text/plain; charset=utf-8",
        "onnx" | "bin" => "application/octet-stream",
        _ => "application/octet-stream",
    }
}
