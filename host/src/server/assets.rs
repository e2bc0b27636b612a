//! The dashboard and playground files, served under the strict CSP.

use super::state::{ApiError, Shared};
use axum::extract::{Path as UrlPath, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// The dashboard's (and the playground's and piece editor's) files, with a strict CSP and no
/// referrer (the token is in the dashboard's URL). Only the pages that run the wasm core (the
/// playground and the piece editor) may compile WebAssembly, and only from this origin.
pub(super) fn static_file(
    st: &Shared,
    sub: Option<&str>,
    name: &str,
) -> Result<Response, ApiError> {
    let content_type = match name.rsplit('.').next() {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("wasm") if sub.is_some() => "application/wasm",
        _ => return Err(ApiError::NotFound),
    };
    let csp = if sub.is_some() {
        "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    } else {
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    };
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-' || b == b'_')
        || name.starts_with('.')
    {
        return Err(ApiError::NotFound);
    }
    let www = st.www.as_ref().ok_or(ApiError::NotFound)?;
    let dir = sub.map_or_else(|| www.clone(), |s| www.join(s));
    let bytes = std::fs::read(dir.join(name)).map_err(|_| ApiError::NotFound)?;
    Ok((
        [
            (header::CONTENT_TYPE, content_type),
            (header::CONTENT_SECURITY_POLICY, csp),
            (header::REFERRER_POLICY, "no-referrer"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        bytes,
    )
        .into_response())
}

pub(super) async fn dashboard_index(State(st): State<Arc<Shared>>) -> Result<Response, ApiError> {
    static_file(&st, None, "index.html")
}

pub(super) async fn playground_index(State(st): State<Arc<Shared>>) -> Result<Response, ApiError> {
    static_file(&st, Some("playground"), "index.html")
}

pub(super) async fn playground_file(
    State(st): State<Arc<Shared>>,
    UrlPath(file): UrlPath<String>,
) -> Result<Response, ApiError> {
    static_file(&st, Some("playground"), &file)
}

pub(super) async fn pieces_index(State(st): State<Arc<Shared>>) -> Result<Response, ApiError> {
    static_file(&st, Some("pieces"), "index.html")
}

pub(super) async fn pieces_file(
    State(st): State<Arc<Shared>>,
    UrlPath(file): UrlPath<String>,
) -> Result<Response, ApiError> {
    static_file(&st, Some("pieces"), &file)
}

pub(super) async fn dashboard_asset(
    State(st): State<Arc<Shared>>,
    UrlPath(file): UrlPath<String>,
) -> Result<Response, ApiError> {
    static_file(&st, None, &file)
}

pub(super) async fn not_found() -> ApiError {
    ApiError::NotFound
}
