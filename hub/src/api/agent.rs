//! The agent routes: init, select, the wait lifecycle (register, poll, ack, cancel) and
//! merge. Each is one function of (state, caller, typed request) — [`init`], [`select`],
//! … — that the HTTP handlers ([`http`]) and `/mcp`'s in-process calls both run, so both
//! transports apply the same rules.
//!
//! Invariant: every answer that follows a write is given only after the store flushed.

use std::net::SocketAddr;
use std::time::Duration;

use axum::Json;
use axum::response::{IntoResponse, Response};
use futures::future::Either;
use futures::{FutureExt, TryFutureExt};
use holdline_contract::{Status, routes};

use super::dto::*;
use super::error::{ApiError, Body, token};
use super::{AppState, JSON_LIMIT, guard};
use holdline_core::binding::Fingerprint;
use holdline_core::hub::{InitRequest as HubInit, PollOutcome, RegisterRequest as HubRegister};
use holdline_store::names::KeyName;
use holdline_store::session::Token;

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
    let binding = Fingerprint {
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
#[derive(Clone)]
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
) -> impl std::future::Future<Output = Result<PollOutcome, holdline_core::hub::HubError>> + Send + '_
{
    app.hub
        .poll(poll.token, poll.wait_id, poll.timeout, poll.owner)
}

/// The long poll, for an in-process caller (the HTTP one is [`http::poll`], held as a
/// [`PollToHold`]): the admission, then the hold in its place (combinators: the two
/// share their room, and the hold is all a waiting agent's poll keeps).
pub fn poll<'a>(
    app: &'a AppState,
    caller: &AgentCaller,
    b: PollRequest,
) -> impl std::future::Future<Output = Result<PollAnswer, ApiError>> + Send + 'a {
    admit_poll(app, caller.agent_key().cloned(), b)
        .and_then(move |admitted| hold_poll(app, admitted).map_err(ApiError::from))
        .map_ok(PollAnswer::from)
}

/// A poll the router admitted (`POST /api/wait/poll` through the same layers as every
/// agent route: the front door, the method, the credential, the JSON body limit), handed
/// back to [`super::Api::answer`] in its answer's extensions to be held there: so the
/// held future keeps only the hold, not the router's and the request's state
/// (docs/benchmarks.md, "Hub RSS with 10,000 waiting").
#[derive(Clone)]
pub struct PollToHold(Admitted);

impl PollToHold {
    /// The router's answer for an admitted poll: it carries the poll. Should any path
    /// answer it without holding it, the client reads an internal error, never a `200`.
    fn into_answer(self) -> Response {
        let mut answer = ApiError::new(
            axum::http::StatusCode::INTERNAL_SERVER_ERROR,
            holdline_contract::ErrorCode::Internal,
            "the long poll was admitted but not held",
        )
        .into_response();
        answer.extensions_mut().insert(self);
        answer
    }

    /// Holds the poll until a reply, its time limit or the wait's end: its HTTP answer.
    fn held(self, app: &AppState) -> impl std::future::Future<Output = Response> + Send + '_ {
        hold_poll(app, self.0).map(|outcome| match outcome {
            Ok(outcome) => Json(PollAnswer::from(outcome)).into_response(),
            Err(e) => ApiError::from(e).into_response(),
        })
    }
}

/// The router's answer, or, when it admitted a long poll, the poll held: what
/// [`super::Api::answer`] awaits (one future, so the router's answer is not kept beside
/// the hold).
pub fn hold_if_admitted(
    app: &AppState,
    mut answer: Response,
) -> impl std::future::Future<Output = Response> + Send + '_ {
    let poll = answer.extensions_mut().remove::<PollToHold>();
    match poll {
        Some(poll) => Either::Left(poll.held(app)),
        None => Either::Right(std::future::ready(answer)),
    }
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
    let binding = Fingerprint {
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
) -> Result<holdline_core::hub::SessionInfo, ApiError> {
    let t = token(raw)?;
    let info = app.hub.info(&t)?;
    if let Some(key) = who.agent_key()
        && info.session.owner.as_ref() != Some(key)
    {
        return Err(holdline_core::hub::HubError::NotFound(t).into());
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

    /// `POST /api/wait/poll`: admits the poll; [`crate::api::Api::answer`] holds it.
    pub async fn poll(
        State(app): State<AppState>,
        Extension(who): Extension<guard::Caller>,
        Body(b): Body<PollRequest>,
    ) -> Result<Response, ApiError> {
        let admitted = admit_poll(&app, who.agent_key().cloned(), b).await?;
        Ok(PollToHold(admitted).into_answer())
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
