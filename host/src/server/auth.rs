//! The guard every request passes (host, token, origin, body type), pairing, and the request log.

use super::state::{json_body, ApiError, Shared, MAX_BODY_BYTES, REQUEST_TIMEOUT};
use crate::pairing::constant_time_eq;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderMap, Request};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use keyless_core::api::{self};
use std::sync::Arc;

pub(super) fn origin_ok(origin: Option<&str>, allowed: &[String]) -> bool {
    origin.is_none_or(|o| allowed.iter().any(|a| a == o))
}

pub(super) async fn guard(
    State(st): State<Arc<Shared>>,
    req: Request<Body>,
    next: Next,
) -> Response {
    let headers = req.headers();
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    let own = [
        format!("127.0.0.1:{}", st.port),
        format!("localhost:{}", st.port),
    ];
    if !own.iter().any(|a| a.eq_ignore_ascii_case(host)) {
        return ApiError::BadHost(st.port).into_response();
    }
    if matches!(
        *req.method(),
        axum::http::Method::POST | axum::http::Method::PUT
    ) {
        let json = headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
        if !json {
            return ApiError::NotJson.into_response();
        }
    }
    let path = req.uri().path();
    if req.method() == axum::http::Method::GET
        && (path == "/"
            || path.starts_with("/assets/")
            || path.starts_with("/playground/")
            || path.starts_with("/pieces/"))
    {
        // The dashboard's own files hold no secrets; its data needs the token.
        return next.run(req).await;
    }
    let origin = headers
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    if req.uri().path() == "/v1/pair" {
        // The pairing route checks the Origin against the extension id in the body.
        return next.run(req).await;
    }
    // EventSource cannot send headers: the event stream also takes ?token=.
    let query_token = (req.uri().path() == "/v1/events")
        .then(|| {
            req.uri()
                .query()
                .unwrap_or("")
                .split('&')
                .find_map(|kv| kv.strip_prefix("token="))
                .map(str::to_string)
        })
        .flatten();
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .map(str::to_string)
        .or(query_token)
        .unwrap_or_default();
    let token = token.as_str();
    let allowed: Vec<String> = if !token.is_empty() && constant_time_eq(token, &st.local_token) {
        own.iter().map(|h| format!("http://{h}")).collect()
    } else if let Some(ext) = (!token.is_empty())
        .then(|| st.pairings.verify(token))
        .flatten()
    {
        // A `keyless-host as run` process's token reaches the generations only.
        if ext.starts_with(crate::pairing::PROGRAM_CLIENT_PREFIX)
            && !path.starts_with("/v1/generations")
        {
            return ApiError::Unauthorized.into_response();
        }
        keyless_core::pairing::extension_origin(&ext)
            .into_iter()
            .collect()
    } else {
        return ApiError::Unauthorized.into_response();
    };
    if !origin_ok(origin.as_deref(), &allowed) {
        return ApiError::BadOrigin(origin.unwrap_or_default()).into_response();
    }
    next.run(req).await
}

pub(super) async fn pair(
    State(st): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let input: api::PairRequest = json_body(&body)?;
    let want = keyless_core::pairing::extension_origin(&input.extension_id).ok_or_else(|| {
        ApiError::BadRequest(
            "extension_id must be the extension's own: a Chrome extension id (32 letters a-p) or a Firefox extension's internal UUID".into(),
        )
    })?;
    let origin = headers
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if origin != want {
        return Err(ApiError::BadOrigin(origin.to_string()));
    }
    // A typo is not a try: what cannot be a code is refused before the code is compared.
    let typed = keyless_core::pairing::read_code(&input.code).map_err(ApiError::BadRequest)?;
    let now = std::time::Instant::now();
    let mut throttle = st
        .pair_throttle
        .lock()
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    if let Some(left) = throttle.locked(now) {
        tracing::warn!(seconds_left = left, "pairing attempt while locked; refused");
        return Err(ApiError::PairingLocked(left, throttle.failures(), false));
    }
    let ok = {
        let mut code = st
            .pairing_code
            .lock()
            .map_err(|e| ApiError::Internal(e.to_string()))?;
        let matches = code.as_deref().is_some_and(|c| constant_time_eq(c, &typed));
        if matches {
            // Single use.
            *code = None;
        }
        // Or a fresh code from `keyless-host pair` (used up when it matches).
        matches || st.pairings.take_code(&typed)
    };
    if !ok {
        let lock = throttle.failed(now);
        tracing::warn!(
            wrong_codes = throttle.failures(),
            locked_seconds = lock,
            "pairing: wrong code"
        );
        if lock > 0 {
            return Err(ApiError::PairingLocked(lock, throttle.failures(), true));
        }
        return Err(ApiError::WrongCode(
            crate::pairing::FREE_ATTEMPTS.saturating_sub(throttle.failures()),
        ));
    }
    throttle.succeeded();
    drop(throttle);
    let token = st
        .pairings
        .add(&input.extension_id)
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    Ok(Json(api::Paired {
        token,
        extension_id: input.extension_id,
    })
    .into_response())
}

/// Logs every request (method, path, status, duration) and holds short routes to
/// [`REQUEST_TIMEOUT`]. Replies and the event stream may take longer: a batch runs as long as its
/// commands, and it goes on (and is stored) even when its client gives up.
pub(super) async fn log_and_limit(req: Request<Body>, next: Next) -> Response {
    let (method, path) = (req.method().clone(), req.uri().path().to_string());
    let start = std::time::Instant::now();
    // Every body must arrive within BODY_TIMEOUT, however slowly a client sends it.
    let (parts, body) = req.into_parts();
    let body = match tokio::time::timeout(
        crate::conn::BODY_TIMEOUT,
        axum::body::to_bytes(body, MAX_BODY_BYTES),
    )
    .await
    {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(_)) => return ApiError::TooLarge.into_response(),
        Err(_) => {
            tracing::warn!(%method, %path, "request body too slow; closed");
            return ApiError::Timeout.into_response();
        }
    };
    let req = Request::from_parts(parts, Body::from(body));
    let long = path == "/v1/events" || path.ends_with("/replies");
    let res = if long {
        next.run(req).await
    } else {
        match tokio::time::timeout(REQUEST_TIMEOUT, next.run(req)).await {
            Ok(r) => r,
            Err(_) => ApiError::Timeout.into_response(),
        }
    };
    tracing::info!(%method, %path, status = res.status().as_u16(), ms = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX), "request");
    res
}
