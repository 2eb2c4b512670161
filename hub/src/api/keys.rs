//! The person's routes over agent keys: list, create, revoke (the panel's
//! keys section and `holdline-hub key …` while the hub runs).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use holdline_contract::ErrorCode;

use super::AppState;
use super::dto::*;
use super::error::{ApiError, Body};
use holdline_core::hub::HubError;
use holdline_core::keys::KeyError;

use super::error::JsonResult;

impl From<KeyError> for ApiError {
    fn from(e: KeyError) -> Self {
        let message = e.to_string();
        match e {
            KeyError::BadName(_) | KeyError::Full => ApiError::bad_request(message),
            KeyError::Duplicate(_) => {
                ApiError::new(StatusCode::CONFLICT, ErrorCode::KeyExists, message)
            }
            KeyError::Unknown(_) => {
                ApiError::new(StatusCode::NOT_FOUND, ErrorCode::KeyNotFound, message)
            }
            KeyError::Store(e) => HubError::Store(e).into(),
        }
    }
}

/// `GET /api/keys`: every key, by name.
pub async fn list(State(app): State<AppState>) -> JsonResult<KeyList> {
    let keys = app
        .credentials
        .keys()
        .list()
        .into_iter()
        .map(Into::into)
        .collect();
    Ok(Json(KeyList { keys }))
}

/// `POST /api/keys`: a new key; its text is in this answer only.
pub async fn create(
    State(app): State<AppState>,
    Body(b): Body<KeyCreateBody>,
) -> JsonResult<KeyCreated> {
    let (name, key) = app.credentials.keys().create(&b.name).await?;
    tracing::info!(key = %name, "agent key created");
    Ok(Json(KeyCreated {
        name: name.to_string(),
        key,
    }))
}

/// `DELETE /api/keys/{name}`: the key is refused from its next request on, and
/// its open waits end (`gone`, `key_revoked`); both on disk before the answer. Its `/mcp`
/// sessions end too.
pub async fn revoke(
    State(app): State<AppState>,
    Path(name): Path<String>,
) -> JsonResult<KeyRevoked> {
    let name = app.credentials.keys().revoke(&name).await?;
    let closed_waits = app
        .hub
        .close_waits_of_keys(|k| *k == name)
        .flushed(&app.hub)
        .await?;
    let closed_mcp_sessions = app.key_holder.clone().end_key(name.clone()).await;
    tracing::info!(key = %name, closed_waits, closed_mcp_sessions, "agent key revoked");
    Ok(Json(KeyRevoked {
        ok: true,
        closed_waits,
    }))
}
