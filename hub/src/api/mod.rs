//! The only code that knows routes and JSON: the router of docs/api.md, its guards
//! and body limits (connections and framing are `transport`'s). Handlers
//! translate to [`holdline_core::hub::Hub`] calls.

pub mod agent;
pub mod dto;
pub mod error;
mod events;
pub mod guard;
mod keys;
pub mod paths;
mod person;
mod push;
#[cfg(test)]
pub(crate) mod tests;

use std::sync::Arc;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request};
use axum::middleware::from_fn_with_state;
use axum::routing::{get, post};
use tower::ServiceExt;

use holdline_contract::routes;

use crate::transport::server::Answering;
use holdline_core::hub::Hub;

/// JSON bodies are capped at 1 MiB; replies with images at 10 MiB.
pub use routes::{JSON_LIMIT, REPLY_LIMIT};
/// `import` over HTTP takes whole exports.
pub const IMPORT_LIMIT: usize = 256 * 1024 * 1024;
/// `login` is unauthenticated: its body (`{"key":"…"}`) gets only a few KiB.
pub const LOGIN_LIMIT: usize = 4 * 1024;

/// What every handler shares.
#[derive(Clone)]
pub struct AppState {
    pub hub: Hub,
    pub credentials: Arc<guard::Credentials>,
    pub logins: Arc<guard::LoginLimiter>,
    /// How many refusals get a log line of their own.
    pub refusals: Arc<guard::RefusalLog>,
    /// MongoDB sync, when configured.
    pub sync: Option<holdline_sync::Sync>,
    /// Notification channels, when `[notify]` has any.
    pub notify: Option<holdline_notify::Notifier>,
    /// Web Push: the hub's VAPID key and the browsers subscribed.
    pub push: holdline_notify::push::WebPush,
    /// What an agent key holds besides its waits (`/mcp`'s sessions), ended with the key.
    pub key_holder: Arc<dyn KeyHolder>,
}

/// Something an agent key holds besides its waits (the `/mcp` sessions it opened), ended
/// when the key is revoked.
pub trait KeyHolder: Send + Sync {
    /// Ends what `key` holds; answers how many things ended.
    fn end_key(
        self: Arc<Self>,
        key: holdline_core::keys::KeyName,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = usize> + Send>>;
}

/// The whole HTTP surface: API, health, metrics, panel. The connections
/// (`transport`) hand every request to [`Api::answer`]. One `Arc`: every connection
/// and every held long poll keeps a clone for as long as it lives.
#[derive(Clone)]
pub struct Api(Arc<Surface>);

struct Surface {
    router: Router,
    state: AppState,
}

impl Api {
    /// The hub's whole surface, with `mcp` as the MCP endpoint when given (composed by
    /// the caller: the API does not know what serves MCP).
    pub fn new(state: AppState, mcp: Option<axum::routing::MethodRouter<AppState>>) -> Api {
        Api(Arc::new(Surface {
            router: router(state.clone(), mcp),
            state,
        }))
    }

    pub fn state(&self) -> &AppState {
        &self.0.state
    }
}

impl crate::transport::server::Answer for Api {
    /// Answers one request: the front door ([`guard::Visit`]) around the router, which
    /// makes every route's checks; a long poll the router admitted ([`agent::PollToHold`])
    /// is held here, after the router's future and the request are gone (a held poll
    /// keeps only the visit, this `Arc` and the hub's hold).
    fn answer(&self, request: Request) -> Answering {
        let visit = match guard::Visit::begin(self.state(), &request) {
            Ok(visit) => visit,
            Err(refused) => return Box::pin(std::future::ready(*refused)),
        };
        // Boxed apart: routing's state is gone before a poll is held.
        let routed = Box::pin(self.0.router.clone().oneshot(request));
        let api = self.clone();
        Box::pin(async move {
            let routed = routed.await.unwrap_or_else(|never| match never {});
            let answer = agent::hold_if_admitted(api.state(), routed).await;
            visit.end(api.state(), answer)
        })
    }

    fn trusts(&self, headers: &axum::http::HeaderMap) -> bool {
        guard::is_authorized(&self.state().credentials, headers)
    }

    const STREAMED_PATHS: &'static [&'static str] = &[paths::EVENTS];
}

/// Every route; `/mcp` when `mcp` is given. The front door is [`Api::answer`]'s.
fn router(state: AppState, mcp: Option<axum::routing::MethodRouter<AppState>>) -> Router {
    let mut routes = Router::new()
        .merge(agent_router(&state))
        .merge(person_router(&state));
    if let Some(mcp) = mcp {
        routes = routes.route(routes::MCP, mcp);
    }
    routes
        .route(
            paths::LOGIN,
            post(person::login).layer(DefaultBodyLimit::max(LOGIN_LIMIT)),
        )
        .route(routes::HEALTHZ, get(events::health))
        .route(paths::ANY_API, axum::routing::any(person::no_such_route))
        .method_not_allowed_fallback(person::wrong_method)
        .merge(crate::panel::routes())
        .layer(DefaultBodyLimit::max(JSON_LIMIT))
        .with_state(state)
}

/// The agent routes: the secret, a panel login or an agent key. A key reads only the
/// sessions it owns (the handlers check).
fn agent_router(state: &AppState) -> Router<AppState> {
    Router::new()
        .route(routes::INIT, post(agent::http::init))
        .route(routes::SELECT, post(agent::http::select))
        // A question's files travel in its register (base64): only this route takes them.
        .route(
            routes::REGISTER,
            post(agent::http::register).layer(DefaultBodyLimit::max(routes::REGISTER_LIMIT)),
        )
        // Admitted here, held by `Api::answer`.
        .route(routes::POLL, post(agent::http::poll))
        .route(routes::ACK, post(agent::http::ack))
        .route(routes::CANCEL, post(agent::http::cancel))
        .route(routes::MERGE, post(agent::http::merge))
        .route(paths::SESSION, get(person::detail))
        .route_layer(from_fn_with_state(state.clone(), |s, r, n| {
            guard::Audience::Agent.layer(s, r, n)
        }))
}

/// The person's routes: the secret or a panel login; an agent key is refused.
fn person_router(state: &AppState) -> Router<AppState> {
    Router::new()
        .route(paths::SESSION_CONFIG, post(person::configure))
        .route(
            paths::REPLY,
            post(person::reply).layer(DefaultBodyLimit::max(REPLY_LIMIT)),
        )
        .route(paths::SESSIONS, get(person::list))
        .route(paths::SESSION_FIND, get(person::find))
        .route(paths::SESSION_ATTACHMENT, get(person::attachment))
        .route(paths::SESSION_ARCHIVE, post(person::archive))
        .route(paths::SESSION_RESTORE, post(person::restore))
        .route(paths::SESSION_MERGE, post(person::merge))
        .route(paths::SESSION_OWNER, post(person::hand_over))
        .route(
            paths::TEMPLATES,
            get(person::templates).put(person::set_templates),
        )
        .route(paths::EXPORT, get(person::export))
        .route(paths::ATTACHMENTS, get(person::attachments))
        .route(paths::ATTACHMENTS_FREE, post(person::free_attachments))
        .route(paths::BACKUP, post(person::backup))
        .route(
            paths::IMPORT,
            post(person::import).layer(DefaultBodyLimit::max(IMPORT_LIMIT)),
        )
        .route(paths::KEYS, get(keys::list).post(keys::create))
        .route(paths::KEY, axum::routing::delete(keys::revoke))
        .route(paths::PUSH_KEY, get(push::key))
        .route(
            paths::PUSH_SUBSCRIPTIONS,
            post(push::subscribe).delete(push::unsubscribe),
        )
        .route(paths::PUSH_TEST, post(push::test))
        .route(paths::WHOAMI, get(person::whoami))
        .route(paths::LOGOUT, post(person::logout))
        .route(paths::LOGOUT_EVERYWHERE, post(person::logout_everywhere))
        .route(paths::EVENTS, get(events::stream))
        .route(paths::METRICS, get(events::metrics))
        .route_layer(from_fn_with_state(state.clone(), |s, r, n| {
            guard::Audience::Person.layer(s, r, n)
        }))
}

impl AppState {
    /// A session as the API shows it (whether its owner key still lives included).
    pub fn session_dto(&self, info: holdline_core::hub::SessionInfo) -> dto::SessionDto {
        dto::SessionDto::new(info, self.credentials.keys())
    }

    /// The MongoDB sync state for `/healthz`; `None` while sync is off.
    pub fn sync_state(&self) -> Option<holdline_sync::SyncState> {
        self.sync.as_ref().map(holdline_sync::Sync::state)
    }

    /// Before an agent's call: take over a session this hub knows only from
    /// MongoDB (its agent failed over here). Failing that, the call goes on
    /// and answers what this hub knows.
    pub async fn adopt_if_remote(&self, token: &holdline_store::session::Token) {
        if let Some(sync) = &self.sync
            && self.hub.owns(token) != Some(true)
            // Boxed: a MongoDB round trip's state is kilobytes, and every
            // agent call (a held long poll too) would otherwise carry room for it.
            && let Err(e) = Box::pin(sync.adopt(token)).await
        {
            tracing::warn!(token = %token, error = %e, "could not adopt the session from MongoDB");
        }
    }
}
