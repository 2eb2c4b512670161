//! The agent routes: init, select, the wait lifecycle (register, poll, ack, cancel) and
//! merge. Each is one function of (state, caller, typed request) — [`init`], [`select`],
//! … — that the HTTP handlers ([`http`]) and `/mcp`'s in-process calls both run, so both
//! transports apply the same rules.
//!
//! Invariant: every answer that follows a write is given only after the store flushed.

use std::net::SocketAddr;
use std::time::Duration;

use axum::Json;
use axum::extract::{FromRequest, Request};
use axum::http::Method;
use axum::response::IntoResponse;
use futures::TryFutureExt;
use holdline_contract::{Status, routes};
use http_body_util::Limited;

use super::dto::*;
use super::error::{ApiError, Body, token};
use super::{AppState, JSON_LIMIT, guard};
use crate::binding::Caller;
use crate::hub::{InitRequest as HubInit, PollOutcome, RegisterRequest as HubRegister};
use crate::names::KeyName;
use crate::server::Answering;
use crate::session::Token;

/// Who calls an agent route: the credential, and the address the hub saw.
#[derive(Debug, Clone)]
pub struct AgentCaller {
    pub who: guard::Caller,
    pub peer: SocketAddr,
}

impl AgentCaller {
    /// The host a binding records: what the secret's bridges report, but for an agent
    /// key the address the hub saw — a key cannot claim another machine.
    fn binding_host(&self, reported: String) -> String {
        match self.who {
            guard::Caller::Person => reported,
            guard::Caller::Agent { .. } => self.peer.ip().to_canonical().to_string(),
        }
    }

    fn agent_key(&self) -> Option<&KeyName> {
        self.who.agent_key()
    }
}

pub async fn init(
    app: &AppState,
    caller: &AgentCaller,
    b: InitRequest,
) -> Result<InitAnswer, ApiError> {
    let out = app
        .hub
        .init(HubInit {
            host_ip: caller.binding_host(b.host_ip),
            cursor_title: b.cursor_title,
            workspace: b.workspace,
            new_plan: b.new_plan,
            plan_label: b.plan_label,
            thread_id: b.thread_id,
            host_name: b.host_name,
            agent_key: caller.agent_key().cloned(),
        })?
        .flushed(&app.hub)
        .await?;
    Ok(InitAnswer {
        token: out.token.to_string(),
        status: out.status,
        created: out.created,
        binding_key: out.binding_key,
    })
}

pub async fn select(
    app: &AppState,
    caller: &AgentCaller,
    b: SelectRequest,
) -> Result<SelectAnswer, ApiError> {
    let t = token(&b.token)?;
    app.adopt_if_remote(&t).await;
    let host_ip = caller.binding_host(b.host_ip);
    let binding = Caller {
        cursor_title: &b.cursor_title,
        workspace: &b.workspace,
        host_ip: &host_ip,
        agent_key: caller.agent_key(),
    };
    let status = app
        .hub
        .select(&t, &binding, b.host_name.as_deref())?
        .flushed(&app.hub)
        .await?;
    Ok(SelectAnswer {
        token: t.to_string(),
        status,
    })
}

pub async fn register(
    app: &AppState,
    caller: &AgentCaller,
    mut b: RegisterRequest,
) -> Result<RegisterAnswer, ApiError> {
    check_question_size(&mut b)?;
    let t = token(&b.token)?;
    app.adopt_if_remote(&t).await;
    let wait_id = app
        .hub
        .register(HubRegister {
            token: t,
            message: b.message,
            host_ip: caller.binding_host(b.host_ip),
            cursor_title: b.cursor_title,
            workspace: b.workspace,
            request_id: b.request_id,
            completion_pct: b.completion_pct,
            next_step: b.next_step,
            options: b.options,
            multi_select: b.multi_select,
            host_name: b.host_name,
            changes: b.changes,
            attachments: b.attachments,
            agent_key: caller.agent_key().cloned(),
            origin: b.origin,
        })?
        .flushed(&app.hub)
        .await?;
    Ok(RegisterAnswer {
        wait_id,
        status: Status::Waiting,
    })
}

/// The register route takes a large body for its files and changes; the question
/// itself (message, next step, options …) must still fit [`JSON_LIMIT`], as on every
/// other agent route.
fn check_question_size(b: &mut RegisterRequest) -> Result<(), ApiError> {
    let files = std::mem::take(&mut b.attachments);
    let changes = b.changes.take();
    let size = serde_json::to_vec(&*b).map_or(usize::MAX, |v| v.len());
    b.attachments = files;
    b.changes = changes;
    if size > JSON_LIMIT {
        return Err(ApiError::too_large(format!(
            "the question is {size} bytes besides its attachments and changes; at most {JSON_LIMIT}"
        )));
    }
    Ok(())
}

/// A poll that passed every check, ready to wait.
struct Admitted {
    token: Token,
    wait_id: String,
    timeout: Duration,
    /// The agent key it came with (`None`: the secret): only its own session answers.
    owner: Option<KeyName>,
}

/// The poll's token and time limit checked; a session another hub owned is adopted
/// first.
async fn admit_poll(
    app: &AppState,
    owner: Option<KeyName>,
    b: PollRequest,
) -> Result<Admitted, ApiError> {
    let token = token(&b.token)?;
    let ms = b.timeout_ms.unwrap_or(app.hub.config().poll_timeout_ms);
    if ms > routes::MAX_POLL_MS {
        return Err(ApiError::bad_request(format!(
            "timeoutMs must be 0 to {}",
            routes::MAX_POLL_MS
        )));
    }
    app.adopt_if_remote(&token).await;
    Ok(Admitted {
        token,
        wait_id: b.wait_id,
        timeout: Duration::from_millis(ms),
        owner,
    })
}

/// Holds an admitted poll until a reply, its time limit or the wait's end: the hub's
/// own future, owning the poll's fields, nothing around it (a held poll's state is
/// per waiting agent).
fn hold_poll(
    app: &AppState,
    poll: Admitted,
) -> impl std::future::Future<Output = Result<PollOutcome, crate::hub::HubError>> + Send + '_ {
    app.hub
        .poll(poll.token, poll.wait_id, poll.timeout, poll.owner)
}

/// The long poll, for an in-process caller (the HTTP one is [`held_poll`]): the
/// admission, then the hold in its place (combinators: the two share their room, and
/// the hold is all a waiting agent's poll keeps).
pub fn poll<'a>(
    app: &'a AppState,
    caller: &AgentCaller,
    b: PollRequest,
) -> impl std::future::Future<Output = Result<PollAnswer, ApiError>> + Send + 'a {
    admit_poll(app, caller.agent_key().cloned(), b)
        .and_then(move |admitted| hold_poll(app, admitted).map_err(ApiError::from))
        .map_ok(PollAnswer::from)
}

/// `POST /api/wait/poll`, the one request that waits for minutes: answered
/// beside the router ([`super::Api::answer`]) with the router's checks as plain
/// calls — the front door, the method, the credential, the JSON body limit — made
/// before the answer's future is built, so a held poll keeps only what it
/// needs (the request's head and these checks were most of its memory;
/// docs/benchmarks.md).
pub fn held_poll(api: super::Api, req: Request) -> Answering {
    let app = api.state();
    let visit = match guard::Visit::begin(app, &req) {
        Ok(visit) => visit,
        Err(refused) => return Box::pin(std::future::ready(*refused)),
    };
    let (parts, body) = req.into_parts();
    let admitted = if parts.method != Method::POST {
        Err(ApiError::method_not_allowed(
            "the long poll is POST /api/wait/poll",
        ))
    } else {
        guard::Audience::Agent.admit(&app.secret, &parts.headers)
    };
    drop(parts);
    // Boxed apart and done before the hold: what it needs (the body, the
    // checks' outcome, JSON decoding, adoption) is gone while the poll waits.
    let admit = Box::pin(admit_http_poll(app.clone(), admitted, body));
    // Keeps the API's one `Arc`, not a copy of its state.
    Box::pin(async move {
        let app = api.state();
        let poll = match admit.await {
            Ok(poll) => poll,
            Err(e) => return visit.end(app, e.into_response()),
        };
        let answer = match hold_poll(app, poll).await {
            Ok(outcome) => Json(PollAnswer::from(outcome)).into_response(),
            Err(e) => ApiError::from(e).into_response(),
        };
        visit.end(app, answer)
    })
}

/// The HTTP poll's body (under the JSON limit, with the errors every route gives), then
/// [`admit_poll`].
async fn admit_http_poll(
    app: AppState,
    admitted: Result<guard::Caller, ApiError>,
    body: axum::body::Body,
) -> Result<Admitted, ApiError> {
    let owner = admitted?.agent_key().cloned();
    let limited = Request::new(axum::body::Body::new(Limited::new(body, JSON_LIMIT)));
    let Body(b) = Body::<PollRequest>::from_request(limited, &()).await?;
    admit_poll(&app, owner, b).await
}

pub async fn ack(app: &AppState, caller: &AgentCaller, b: AckRequest) -> Result<Done, ApiError> {
    let t = token(&b.token)?;
    app.adopt_if_remote(&t).await;
    app.hub
        .ack(&t, &b.wait_id, &b.reply_id, caller.agent_key())?
        .flushed(&app.hub)
        .await?;
    Ok(Done::OK)
}

pub async fn cancel(
    app: &AppState,
    caller: &AgentCaller,
    b: CancelRequest,
) -> Result<Done, ApiError> {
    let t = token(&b.token)?;
    app.adopt_if_remote(&t).await;
    app.hub
        .cancel(&t, &b.wait_id, caller.agent_key())?
        .flushed(&app.hub)
        .await?;
    Ok(Done::OK)
}

pub async fn merge(
    app: &AppState,
    caller: &AgentCaller,
    b: MergeRequest,
) -> Result<MergeAnswer, ApiError> {
    let from = token(&b.from_token)?;
    let to = token(&b.to_token)?;
    app.adopt_if_remote(&from).await;
    app.adopt_if_remote(&to).await;
    let host_ip = caller.binding_host(b.host_ip);
    let binding = Caller {
        cursor_title: &b.cursor_title,
        workspace: &b.workspace,
        host_ip: &host_ip,
        agent_key: caller.agent_key(),
    };
    app.hub
        .merge(&from, &to, Some(&binding))?
        .flushed(&app.hub)
        .await?;
    Ok(MergeAnswer {
        token: to.to_string(),
    })
}

/// A session's head, for its owner only (another owner's token is as unknown as one
/// that never was).
pub fn session_head(
    app: &AppState,
    who: &guard::Caller,
    raw: &str,
) -> Result<crate::hub::SessionInfo, ApiError> {
    let t = token(raw)?;
    let info = app.hub.info(&t)?;
    if let Some(key) = who.agent_key()
        && info.session.owner.as_ref() != Some(key)
    {
        return Err(crate::hub::HubError::NotFound(t).into());
    }
    Ok(info)
}

/// The agent routes as axum handlers: each reads its caller and body and runs the
/// route's function.
pub mod http {
    use axum::extract::{ConnectInfo, State};
    use axum::{Extension, Json};

    use super::*;

    use crate::api::error::JsonResult;
    type Peer = ConnectInfo<SocketAddr>;

    fn caller(who: guard::Caller, ConnectInfo(peer): Peer) -> AgentCaller {
        AgentCaller { who, peer }
    }

    pub async fn init(
        State(app): State<AppState>,
        Extension(who): Extension<guard::Caller>,
        peer: Peer,
        Body(b): Body<InitRequest>,
    ) -> JsonResult<InitAnswer> {
        super::init(&app, &caller(who, peer), b).await.map(Json)
    }

    pub async fn select(
        State(app): State<AppState>,
        Extension(who): Extension<guard::Caller>,
        peer: Peer,
        Body(b): Body<SelectRequest>,
    ) -> JsonResult<SelectAnswer> {
        super::select(&app, &caller(who, peer), b).await.map(Json)
    }

    pub async fn register(
        State(app): State<AppState>,
        Extension(who): Extension<guard::Caller>,
        peer: Peer,
        Body(b): Body<RegisterRequest>,
    ) -> JsonResult<RegisterAnswer> {
        super::register(&app, &caller(who, peer), b).await.map(Json)
    }

    pub async fn ack(
        State(app): State<AppState>,
        Extension(who): Extension<guard::Caller>,
        peer: Peer,
        Body(b): Body<AckRequest>,
    ) -> JsonResult<Done> {
        super::ack(&app, &caller(who, peer), b).await.map(Json)
    }

    pub async fn cancel(
        State(app): State<AppState>,
        Extension(who): Extension<guard::Caller>,
        peer: Peer,
        Body(b): Body<CancelRequest>,
    ) -> JsonResult<Done> {
        super::cancel(&app, &caller(who, peer), b).await.map(Json)
    }

    pub async fn merge(
        State(app): State<AppState>,
        Extension(who): Extension<guard::Caller>,
        peer: Peer,
        Body(b): Body<MergeRequest>,
    ) -> JsonResult<MergeAnswer> {
        super::merge(&app, &caller(who, peer), b).await.map(Json)
    }
}
