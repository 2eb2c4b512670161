//! Routes the bridge calls on behalf of an agent: init, select, the wait
//! lifecycle (register, poll, ack, cancel) and merge.

use std::time::Duration;

use axum::Json;
use axum::extract::State;

use super::AppState;
use super::dto::*;
use super::error::{ApiError, Body, token};
use crate::binding::Caller;
use crate::hub::{InitRequest, MAX_POLL_MS, PollOutcome, RegisterRequest};

type Answer<T> = Result<Json<T>, ApiError>;

pub async fn init(State(app): State<AppState>, Body(b): Body<InitBody>) -> Answer<InitAnswer> {
    let out = app.hub.init(InitRequest {
        cursor_title: b.cursor_title,
        workspace: b.workspace,
        host_ip: b.host_ip,
        new_plan: b.new_plan,
        plan_label: b.plan_label,
        thread_id: b.thread_id,
    })?;
    app.hub.flush().await?;
    Ok(Json(InitAnswer {
        token: out.token.to_string(),
        status: out.status.as_str(),
        created: out.created,
        binding_key: out.binding_key,
    }))
}

pub async fn select(State(app): State<AppState>, Body(b): Body<SelectBody>) -> Answer<TokenStatus> {
    let t = token(&b.token)?;
    app.adopt_if_remote(&t).await;
    let caller = Caller {
        cursor_title: &b.cursor_title,
        workspace: &b.workspace,
        host_ip: &b.host_ip,
    };
    let status = app.hub.select(&t, &caller)?;
    app.hub.flush().await?;
    Ok(Json(TokenStatus {
        token: t.to_string(),
        status: status.as_str(),
    }))
}

pub async fn register(
    State(app): State<AppState>,
    Body(b): Body<RegisterBody>,
) -> Answer<RegisterAnswer> {
    let t = token(&b.token)?;
    app.adopt_if_remote(&t).await;
    let wait_id = app.hub.register(RegisterRequest {
        token: t,
        message: b.message,
        cursor_title: b.cursor_title,
        workspace: b.workspace,
        host_ip: b.host_ip,
        request_id: b.request_id,
        completion_pct: b.completion_pct,
        next_step: b.next_step,
    })?;
    app.hub.flush().await?;
    Ok(Json(RegisterAnswer {
        wait_id,
        status: "waiting",
    }))
}

pub async fn poll(State(app): State<AppState>, Body(b): Body<PollBody>) -> Answer<PollAnswer> {
    let t = token(&b.token)?;
    app.adopt_if_remote(&t).await;
    let ms = b.timeout_ms.unwrap_or(app.hub.config().poll_timeout_ms);
    if ms > MAX_POLL_MS {
        return Err(ApiError::bad_request(format!(
            "timeoutMs must be 0 to {MAX_POLL_MS}"
        )));
    }
    let answer = match app
        .hub
        .poll(&t, &b.wait_id, Duration::from_millis(ms))
        .await?
    {
        PollOutcome::Replied(r) => PollAnswer::Replied { reply: r.into() },
        PollOutcome::Renewal => PollAnswer::Renewal,
        PollOutcome::Gone {
            reason,
            merged_into,
        } => PollAnswer::Gone {
            reason,
            merged_into: merged_into.map(|t| t.to_string()),
        },
    };
    Ok(Json(answer))
}

pub async fn ack(State(app): State<AppState>, Body(b): Body<AckBody>) -> Answer<Ok> {
    let t = token(&b.token)?;
    app.adopt_if_remote(&t).await;
    app.hub.ack(&t, &b.wait_id, &b.reply_id)?;
    app.hub.flush().await?;
    Ok(Json(OK))
}

pub async fn cancel(State(app): State<AppState>, Body(b): Body<CancelBody>) -> Answer<Ok> {
    let t = token(&b.token)?;
    app.adopt_if_remote(&t).await;
    app.hub.cancel(&t, &b.wait_id)?;
    app.hub.flush().await?;
    Ok(Json(OK))
}

pub async fn merge(State(app): State<AppState>, Body(b): Body<MergeBody>) -> Answer<TokenOnly> {
    let from = token(&b.from_token)?;
    let to = token(&b.to_token)?;
    app.adopt_if_remote(&from).await;
    app.adopt_if_remote(&to).await;
    let caller = Caller {
        cursor_title: &b.cursor_title,
        workspace: &b.workspace,
        host_ip: &b.host_ip,
    };
    app.hub.merge(&from, &to, Some(&caller))?;
    app.hub.flush().await?;
    Ok(Json(TokenOnly {
        token: to.to_string(),
    }))
}
