//! Observing the hub: the SSE stream of session changes, `/healthz` and
//! `/metrics`.

use std::convert::Infallible;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::{Stream, StreamExt};
use tokio_stream::wrappers::BroadcastStream;

use super::AppState;
use super::dto::{Health, SessionDto, StoreCondition, StoreHealth, Up};
use holdline_store::store::StoreState;

/// `GET /api/events`: a `session` event per change; ends at shutdown.
pub async fn stream(
    State(app): State<AppState>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let shutdown = app.hub.shutdown_token().clone().cancelled_owned();
    let hello = futures::stream::once(async { Ok(Event::default().event("hello").data("{}")) });
    let secret = app.credentials.clone();
    let changes = BroadcastStream::new(app.hub.subscribe()).filter_map(move |item| {
        let secret = secret.clone();
        async move {
            match item {
                Ok(info) => {
                    let dto = SessionDto::new(info, secret.keys());
                    Some(Ok(Event::default()
                        .event("session")
                        .json_data(dto)
                        .unwrap_or_else(|_| {
                            Event::default().comment("unserializable")
                        })))
                }
                // A slow client missed events: tell it to refetch everything.
                Err(_) => Some(Ok(Event::default().event("resync").data("{}"))),
            }
        }
    });
    Sse::new(hello.chain(changes).take_until(shutdown))
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}

/// `GET /healthz`: without a credential (or with an agent key) only that the
/// hub is up — `{ok, version}`, 503 with `ok: false` while the store's writes
/// fail — so nobody learns how many sessions wait from the network. With the
/// secret or a panel login: the counts, the uptime, the MongoDB sync's state and
/// last error (the driver's text, with the database's address), the store's last
/// error, each notification channel's state and the hub's process.
pub async fn health(State(app): State<AppState>, headers: HeaderMap) -> Response {
    // The person's details only: an agent key sees what everyone sees.
    let authorized = matches!(
        super::guard::authenticate(&app.credentials, &headers),
        Ok(super::guard::Caller::Person)
    );
    let state = app.hub.store().state();
    let ok = state == StoreState::Ok;
    let status = if ok {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    if !authorized {
        let up = Up {
            ok,
            version: env!("CARGO_PKG_VERSION"),
        };
        return (status, Json(up)).into_response();
    }
    let (sessions, waiting) = app.hub.counts();
    let store = match state {
        StoreState::Ok => StoreHealth {
            state: StoreCondition::Ok,
            last_error: None,
            since: None,
        },
        StoreState::Failing { last_error, since } => StoreHealth {
            state: StoreCondition::Failing,
            last_error: Some(last_error),
            since: Some(since),
        },
    };
    let health = Health {
        ok,
        version: env!("CARGO_PKG_VERSION").into(),
        sessions,
        waiting,
        uptime_ms: app.hub.uptime().as_millis() as u64,
        mongo: app.sync_state(),
        store,
        notify: app.notify.as_ref().map(|n| n.states()),
        process: Some(crate::process::HubProcess::this()),
    };
    (status, Json(health)).into_response()
}

/// `GET /metrics`: Prometheus text.
pub async fn metrics(State(app): State<AppState>) -> Response {
    let (sessions, waiting) = app.hub.counts();
    let c = app.hub.counters();
    let body = format!(
        "# TYPE holdline_sessions gauge\nholdline_sessions {sessions}\n\
         # TYPE holdline_waiting gauge\nholdline_waiting {waiting}\n\
         # TYPE holdline_replies_total counter\nholdline_replies_total {}\n\
         # TYPE holdline_auto_replies_total counter\nholdline_auto_replies_total {}\n\
         # TYPE holdline_polls_total counter\nholdline_polls_total {}\n\
         # TYPE holdline_http_requests_total counter\nholdline_http_requests_total {}\n\
         # TYPE holdline_store_bytes gauge\nholdline_store_bytes {}\n\
         # TYPE holdline_uptime_seconds gauge\nholdline_uptime_seconds {}\n",
        c.replies.load(Ordering::Relaxed),
        c.auto_replies.load(Ordering::Relaxed),
        c.polls.load(Ordering::Relaxed),
        c.http_requests.load(Ordering::Relaxed),
        app.hub.store().size_on_disk(),
        app.hub.uptime().as_secs(),
    );
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], body).into_response()
}
