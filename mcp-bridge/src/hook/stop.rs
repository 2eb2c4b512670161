//! The `Stop` hook against the hub: the chat's session found (or made) by the client's
//! session id, the agent's last message registered as the question with one option that
//! lets the agent stop, long polls with renewals until the person answers or the hook's
//! time is up, and the answer in the client's shape.
//!
//! Invariant: the reply is acked only once its block was written to stdout; every other
//! ending leaves no decision, and a wait this hook stops holding is cancelled at the hub
//! (a killed hook's wait is closed by the hub's grace), so queued replies stay queued.

use std::{
    io::Write,
    sync::Arc,
    time::{Duration, Instant},
};

use holdline_contract::{
    ChoiceOption, HubError, InitRequest, PollAnswer, RegisterRequest, Reply, WaitEnd,
};
use holdline_tools::{Hub, server::register_request_id};

use super::{HookClient, HookError, input::HookInput};
use crate::{config::Config, hub_client::HubClient};

/// The one option of a stop question: the person lets the agent end its turn.
pub const LET_IT_FINISH: &str = "Let it finish";
/// The question when neither the payload nor the transcript says what the agent said.
const NO_MESSAGE: &str = "(The agent ended its turn without a message.)";
/// How often one hook registers again after the hub lost its wait (restart, failover).
const GONE_RETRIES: u32 = 5;
/// How long the hook gives the hub to confirm a cancel when it stops waiting.
const CANCEL_LIMIT: Duration = Duration::from_secs(3);

/// A stop hook's answer that continues the turn, in the shape Claude Code, Codex, Qwen
/// Code and Gemini CLI all read: the `reason` becomes the model's next instruction.
#[derive(Debug, serde::Serialize)]
struct StopAnswer {
    decision: Decision,
    reason: String,
}

/// A stop hook's decision; only `block` is ever written (no answer lets the turn end).
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "lowercase")]
enum Decision {
    Block,
}

impl StopAnswer {
    fn block(reason: String) -> StopAnswer {
        StopAnswer {
            decision: Decision::Block,
            reason,
        }
    }
}

/// How the wait ended.
enum Ending {
    Replied {
        wait_id: String,
        reply: Reply,
    },
    /// The hub closed the wait without a reply (archived, cancelled, superseded, merged).
    Closed(WaitEnd),
    /// The hook's time ran out, or a signal came: the wait is still open.
    Interrupted {
        wait_id: String,
        why: HookError,
    },
}

/// One stop: the session, the question and the hook's deadline.
struct StopWait<'a> {
    hub: Hub,
    request: RegisterRequest,
    config: &'a Config,
    deadline: Instant,
    limit: Duration,
}

/// Answers a `Stop`: asks the person, prints the block when they reply with words.
pub(super) async fn answer_stop(
    client: HookClient,
    config: &Config,
    input: &HookInput,
    limit: Duration,
) -> Result<(), HookError> {
    let deadline = Instant::now() + limit;
    let hub = Hub::new(Arc::new(HubClient::new(config)));
    let question = client
        .last_message(input)
        .unwrap_or_else(|| NO_MESSAGE.to_owned());
    let request = bind(&hub, client, config, input, question).await?;
    let stop = StopWait {
        hub,
        request,
        config,
        deadline,
        limit,
    };
    let signal = crate::stop_signals().map_err(HookError::Runtime)?;
    match stop.hold(signal).await? {
        Ending::Replied { wait_id, reply } => stop.answer(&wait_id, &reply).await,
        Ending::Closed(WaitEnd::KeyRevoked) => Err(HubError::KeyRefused.into()),
        Ending::Closed(_) => Ok(()),
        Ending::Interrupted { wait_id, why } => {
            stop.cancel(&wait_id).await;
            Err(why)
        }
    }
}

/// The chat's session (the caller's own, bound to `"<client>:<session id>"`) and the
/// register request for this stop's question.
async fn bind(
    hub: &Hub,
    client: HookClient,
    config: &Config,
    input: &HookInput,
    question: String,
) -> Result<RegisterRequest, HookError> {
    let short: String = input.session_id.chars().take(36).collect();
    let title = format!("{} {short}", client.display());
    let init = hub
        .api()
        .init(InitRequest {
            cursor_title: title.clone(),
            workspace: input.cwd.clone(),
            host_ip: config.host_ip.clone(),
            host_name: config.host_name.clone(),
            new_plan: false,
            plan_label: None,
            thread_id: Some(format!("{}:{}", client.name(), input.session_id)),
        })
        .await?;
    // The same question in the same turn is the same request: a hook the client runs
    // again reattaches to the open wait and stores the message once.
    let turn = format!("hook:{}", input.turn_id.as_deref().unwrap_or_default());
    Ok(RegisterRequest {
        request_id: register_request_id(&init.token, &question, &turn),
        token: init.token,
        message: question,
        cursor_title: title,
        workspace: input.cwd.clone(),
        host_ip: config.host_ip.clone(),
        completion_pct: None,
        next_step: None,
        options: vec![ChoiceOption {
            label: LET_IT_FINISH.to_owned(),
            description: Some("The agent ends its turn here.".to_owned()),
        }],
        multi_select: false,
        host_name: config.host_name.clone(),
        attachments: Vec::new(),
        changes: None,
    })
}

impl StopWait<'_> {
    fn left(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    async fn register(&self) -> Result<String, HubError> {
        let left = Some(self.left());
        let answer = self.hub.api().register(self.request.clone(), left).await?;
        Ok(answer.wait_id)
    }

    /// Registers the question and polls until a reply, the wait's end, the deadline or a
    /// signal.
    async fn hold(
        &self,
        signal: impl std::future::Future<Output = &'static str>,
    ) -> Result<Ending, HookError> {
        tokio::pin!(signal);
        let token = &self.request.token;
        let mut wait_id = self.register().await?;
        let mut gone = 0;
        let mut failures = 0;
        loop {
            let left = self.left();
            if left.is_zero() {
                let why = HookError::NoReplyInTime(self.limit);
                return Ok(Ending::Interrupted { wait_id, why });
            }
            let hold = self.config.poll_hold.min(left);
            let polled = tokio::select! {
                a = self.hub.poll(token, &wait_id, hold, Some(left)) => a,
                s = &mut signal => {
                    return Ok(Ending::Interrupted { wait_id, why: HookError::Stopped(s) });
                }
            };
            match polled {
                Ok(PollAnswer::Replied { reply }) => return Ok(Ending::Replied { wait_id, reply }),
                Ok(PollAnswer::Renewal) => failures = 0,
                // The hub restarted or closed a wait it saw nobody poll: ask again (the
                // same request id stores the question once).
                Ok(PollAnswer::Gone {
                    reason: WaitEnd::Unknown | WaitEnd::Expired,
                    ..
                }) if gone < GONE_RETRIES => {
                    gone += 1;
                    wait_id = self.register().await?;
                }
                Ok(PollAnswer::Gone { reason, .. }) => return Ok(Ending::Closed(reason)),
                Err(e) if e.is_transient() => {
                    failures += 1;
                    let backoff = Duration::from_millis(250 << failures.min(4));
                    tokio::time::sleep(backoff.min(self.left())).await;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// The person's answer in the client's shape: "Let it finish" lets the turn end,
    /// anything else continues it; acked once written.
    async fn answer(&self, wait_id: &str, reply: &Reply) -> Result<(), HookError> {
        let let_finish = reply.choices.iter().any(|c| c.index == 0);
        if !let_finish {
            let block = serde_json::to_string(&StopAnswer::block(reason(reply)))
                .expect("a stop answer serializes");
            let mut out = std::io::stdout().lock();
            writeln!(out, "{block}")
                .and_then(|()| out.flush())
                .map_err(HookError::Write)?;
        }
        let token = &self.request.token;
        let mut acked = self.hub.ack(token, wait_id, &reply.id).await;
        if acked.as_ref().is_err_and(HubError::is_transient) {
            tokio::time::sleep(Duration::from_millis(300)).await;
            acked = self.hub.ack(token, wait_id, &reply.id).await;
        }
        acked.map_err(Into::into)
    }

    /// Closes the wait this hook no longer holds, so the panel shows no agent waiting.
    async fn cancel(&self, wait_id: &str) {
        let cancel = self.hub.cancel(&self.request.token, wait_id);
        let _ = tokio::time::timeout(CANCEL_LIMIT, cancel).await;
    }
}

/// What the model reads as its next instruction: the person's words and a line to go on.
fn reason(reply: &Reply) -> String {
    let typed = reply.text.trim();
    let mut said = match typed.is_empty() {
        true => "(The person replied without words.)".to_owned(),
        false if reply.auto => format!("[automatic reply] {typed}"),
        false => typed.to_owned(),
    };
    if !reply.images.is_empty() {
        said.push_str(&format!(
            "\n(The person also attached {} image(s), which a hook cannot pass on; if they matter, ask the person to describe them.)",
            reply.images.len()
        ));
    }
    format!(
        "The person answered you through holdline:\n\n{said}\n\nContinue with this now, then end your turn as usual."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reason_carries_the_words_and_a_line_to_continue() {
        let reply: Reply =
            serde_json::from_value(serde_json::json!({"id": "r1", "text": " Add tests "})).unwrap();
        let r = reason(&reply);
        assert!(r.contains("\n\nAdd tests\n\n"), "{r}");
        assert!(r.contains("Continue with this now"), "{r}");
        let answer = serde_json::to_value(StopAnswer::block(r.clone())).unwrap();
        assert_eq!(
            answer,
            serde_json::json!({"decision": "block", "reason": r})
        );
    }
}
