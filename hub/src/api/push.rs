//! The person's Web Push routes: the hub's VAPID public key, subscribing and
//! unsubscribing a browser, and a test push (docs/api.md "Web Push").
//! Person routes only: an agent key is refused by the router's guard.

use axum::Json;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};

use super::AppState;
use super::error::{ApiError, Body};
use holdline_core::hub::HubError;
use holdline_notify::push::Subscription;
use holdline_notify::push::subscriptions::ChangeError;

use super::dto::PushTestAnswer;
use super::error::JsonResult;

impl From<ChangeError> for ApiError {
    fn from(e: ChangeError) -> Self {
        match e {
            ChangeError::Refused(r) => ApiError::bad_request(r.to_string()),
            ChangeError::Store(s) => HubError::Store(s).into(),
        }
    }
}

#[derive(Debug, Deserialize)]
pub struct KeyQuery {
    /// A browser's endpoint: the answer says whether it is subscribed.
    endpoint: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyAnswer {
    /// The VAPID public key, base64url (the browser's `applicationServerKey`).
    public_key: String,
    /// Whether `[notify.webpush]` is on: without it nothing is pushed.
    enabled: bool,
    subscriptions: usize,
    /// Whether `?endpoint=` is subscribed (absent without it).
    #[serde(skip_serializing_if = "Option::is_none")]
    subscribed: Option<bool>,
}

/// `GET /api/push/key[?endpoint=]`.
pub async fn key(State(app): State<AppState>, Query(q): Query<KeyQuery>) -> JsonResult<KeyAnswer> {
    let subs = &app.push.subscriptions;
    Ok(Json(KeyAnswer {
        public_key: app.push.key.public_key(),
        enabled: app.hub.config().notify.webpush.is_some(),
        subscriptions: subs.len(),
        subscribed: q.endpoint.map(|e| subs.has(&e)),
    }))
}

#[derive(Debug, Serialize)]
pub struct Subscribed {
    subscribed: bool,
}

/// `POST /api/push/subscriptions`: a browser's `PushSubscription` JSON is
/// kept (the same endpoint again replaces it); 201, on disk.
pub async fn subscribe(
    State(app): State<AppState>,
    Body(sub): Body<Subscription>,
) -> Result<(StatusCode, Json<Subscribed>), ApiError> {
    app.push.subscriptions.add(sub).await?;
    tracing::info!(
        subscriptions = app.push.subscriptions.len(),
        "a browser subscribed to Web Push"
    );
    Ok((StatusCode::CREATED, Json(Subscribed { subscribed: true })))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Unsubscribe {
    endpoint: String,
}

#[derive(Debug, Serialize)]
pub struct Removed {
    removed: bool,
}

/// `DELETE /api/push/subscriptions` `{endpoint}`: that browser is told no more.
pub async fn unsubscribe(
    State(app): State<AppState>,
    Body(b): Body<Unsubscribe>,
) -> JsonResult<Removed> {
    let removed = app
        .push
        .subscriptions
        .remove(&b.endpoint)
        .await
        .map_err(HubError::Store)?;
    Ok(Json(Removed { removed }))
}

/// `POST /api/push/test`: a test push to every subscribed browser, one
/// attempt (also what `holdline-hub notify test` asks a running hub for).
pub async fn test(State(app): State<AppState>) -> JsonResult<PushTestAnswer> {
    let subject = app.hub.config().notify.push_subject();
    let r = holdline_notify::test_push(&app.push, subject).await;
    Ok(Json(PushTestAnswer {
        sent: r.is_ok(),
        error: r.err().map(|e| e.to_string()),
    }))
}
