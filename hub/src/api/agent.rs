//! Routes the bridge calls on behalf of an agent: init, select, the wait
//! lifecycle (register, poll, ack, cancel) and merge.

use std::net::SocketAddr;
use std::time::Duration;

use axum::extract::{ConnectInfo, FromRequest, Request, State};
use axum::http::Method;
use axum::response::IntoResponse;
use axum::{Extension, Json};
use http_body_util::Limited;

use super::dto::*;
use super::error::{ApiError, Body, token};
use super::{AppState, JSON_LIMIT, guard};
use crate::binding::Caller;
use crate::hub::{InitRequest, MAX_POLL_MS, PollOutcome, RegisterRequest};
use crate::names::KeyName;
use crate::server::Answering;
use crate::session::Token;

type Answer<T> = Result<Json<T>, ApiError>;

/// The address the request came from (the connection's peer).
type Peer = ConnectInfo<SocketAddr>;

/// The host a binding records: what the secret's bridges report, but for an
/// agent key the address the hub saw — a key cannot claim another machine.
fn binding_host(who: &guard::Caller, reported: String, ConnectInfo(peer): Peer) -> String {
    match who {
        guard::Caller::Person => reported,
        guard::Caller::Agent { .. } => peer.ip().to_canonical().to_string(),
    }
}

pub async fn init(
    State(app): State<AppState>,
    Extension(who): Extension<guard::Caller>,
    peer: Peer,
    Body(b): Body<InitBody>,
) -> Answer<InitAnswer> {
    let out = app
        .hub
        .init(InitRequest {
            host_ip: binding_host(&who, b.host_ip, peer),
            cursor_title: b.cursor_title,
            workspace: b.workspace,
            new_plan: b.new_plan,
            plan_label: b.plan_label,
            thread_id: b.thread_id,
            agent_key: who.agent_key().cloned(),
        })?
        .flushed(&app.hub)
        .await?;
    Ok(Json(InitAnswer {
        token: out.token.to_string(),
        status: out.status.as_str(),
        created: out.created,
        binding_key: out.binding_key,
    }))
}

pub async fn select(
    State(app): State<AppState>,
    Extension(who): Extension<guard::Caller>,
    peer: Peer,
    Body(b): Body<SelectBody>,
) -> Answer<TokenStatus> {
    let t = token(&b.token)?;
    app.adopt_if_remote(&t).await;
    let host_ip = binding_host(&who, b.host_ip, peer);
    let caller = Caller {
        cursor_title: &b.cursor_title,
        workspace: &b.workspace,
        host_ip: &host_ip,
        agent_key: who.agent_key(),
    };
    let status = app.hub.select(&t, &caller)?.flushed(&app.hub).await?;
    Ok(Json(TokenStatus {
        token: t.to_string(),
        status: status.as_str(),
    }))
}

pub async fn register(
    State(app): State<AppState>,
    Extension(who): Extension<guard::Caller>,
    peer: Peer,
    Body(b): Body<RegisterBody>,
) -> Answer<RegisterAnswer> {
    let t = token(&b.token)?;
    app.adopt_if_remote(&t).await;
    let wait_id = app
        .hub
        .register(RegisterRequest {
            token: t,
            message: b.message,
            host_ip: binding_host(&who, b.host_ip, peer),
            cursor_title: b.cursor_title,
            workspace: b.workspace,
            request_id: b.request_id,
            completion_pct: b.completion_pct,
            next_step: b.next_step,
            agent_key: who.agent_key().cloned(),
        })?
        .flushed(&app.hub)
        .await?;
    Ok(Json(RegisterAnswer {
        wait_id,
        status: "waiting",
    }))
}

/// `POST /api/wait/poll`, the one request that waits for minutes: answered
/// beside the router ([`super::Api::answer`]) with the router's checks as plain
/// calls — the front door, the method, the credential, the JSON body limit — made
/// before the answer's future is built, so a held poll keeps only what it
/// needs (the request's head and these checks were most of its memory;
/// docs/benchmarks.md).
pub fn held_poll(app: AppState, req: Request) -> Answering {
    let visit = match guard::Visit::begin(&app, &req) {
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
    let admit = Box::pin(admit_poll(app.clone(), admitted, body));
    Box::pin(async move {
        let answer = match admit.await {
            Ok(poll) => match app
                .hub
                .poll(
                    &poll.token,
                    &poll.wait_id,
                    poll.timeout,
                    poll.owner.as_ref(),
                )
                .await
            {
                Ok(outcome) => Json(PollAnswer::from(outcome)).into_response(),
                Err(e) => ApiError::from(e).into_response(),
            },
            Err(e) => e.into_response(),
        };
        visit.end(&app, answer)
    })
}

/// A poll that passed every check, ready to wait.
struct Admitted {
    token: Token,
    wait_id: String,
    timeout: Duration,
    /// The agent key it came with (`None`: the secret): only its own session answers.
    owner: Option<KeyName>,
}

/// The poll's body (under the JSON limit, with the errors every route gives),
/// its token and time limit; a session another hub owned is adopted first.
async fn admit_poll(
    app: AppState,
    admitted: Result<guard::Caller, ApiError>,
    body: axum::body::Body,
) -> Result<Admitted, ApiError> {
    let owner = admitted?.agent_key().cloned();
    let limited = Request::new(axum::body::Body::new(Limited::new(body, JSON_LIMIT)));
    let Body(b) = Body::<PollBody>::from_request(limited, &()).await?;
    let token = token(&b.token)?;
    let ms = b.timeout_ms.unwrap_or(app.hub.config().poll_timeout_ms);
    if ms > MAX_POLL_MS {
        return Err(ApiError::bad_request(format!(
            "timeoutMs must be 0 to {MAX_POLL_MS}"
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

impl From<PollOutcome> for PollAnswer {
    fn from(outcome: PollOutcome) -> Self {
        match outcome {
            PollOutcome::Replied(r) => PollAnswer::Replied { reply: r.into() },
            PollOutcome::Renewal => PollAnswer::Renewal,
            PollOutcome::Gone {
                reason,
                merged_into,
            } => PollAnswer::Gone {
                reason,
                merged_into: merged_into.map(|t| t.to_string()),
            },
        }
    }
}

pub async fn ack(
    State(app): State<AppState>,
    Extension(who): Extension<guard::Caller>,
    Body(b): Body<AckBody>,
) -> Answer<Ok> {
    let t = token(&b.token)?;
    app.adopt_if_remote(&t).await;
    app.hub.ack(&t, &b.wait_id, &b.reply_id, who.agent_key())?;
    app.hub.flush().await?;
    Ok(Json(OK))
}

pub async fn cancel(
    State(app): State<AppState>,
    Extension(who): Extension<guard::Caller>,
    Body(b): Body<CancelBody>,
) -> Answer<Ok> {
    let t = token(&b.token)?;
    app.adopt_if_remote(&t).await;
    app.hub
        .cancel(&t, &b.wait_id, who.agent_key())?
        .flushed(&app.hub)
        .await?;
    Ok(Json(OK))
}

pub async fn merge(
    State(app): State<AppState>,
    Extension(who): Extension<guard::Caller>,
    peer: Peer,
    Body(b): Body<MergeBody>,
) -> Answer<TokenOnly> {
    let from = token(&b.from_token)?;
    let to = token(&b.to_token)?;
    app.adopt_if_remote(&from).await;
    app.adopt_if_remote(&to).await;
    let host_ip = binding_host(&who, b.host_ip, peer);
    let caller = Caller {
        cursor_title: &b.cursor_title,
        workspace: &b.workspace,
        host_ip: &host_ip,
        agent_key: who.agent_key(),
    };
    app.hub
        .merge(&from, &to, Some(&caller))?
        .flushed(&app.hub)
        .await?;
    Ok(Json(TokenOnly {
        token: to.to_string(),
    }))
}
