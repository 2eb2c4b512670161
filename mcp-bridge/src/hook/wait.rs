//! One hook's question at the hub, whatever the event: the chat's session found (or made)
//! by the client's session id, the question registered with its origin, long polls with
//! renewals until the person answers, the hub closes the wait, the hook's time is up or a
//! signal comes; then the event's answer written and the reply acked.
//!
//! Invariant: a reply is acked only once the event took it (its answer written to stdout);
//! a reply the event declines stays queued; every other ending leaves no decision, and
//! a wait the hook stops holding is cancelled at the hub (a killed hook's wait is closed
//! by the hub's grace).

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use holdline_contract::{
    ChoiceOption, HubError, InitRequest, PollAnswer, QuestionOrigin, RegisterRequest, Reply,
    WaitEnd, WorkspaceChanges,
};
use holdline_tools::{Hub, server::register_request_id};

use super::{HookClient, HookError, input::HookInput};
use crate::{config::Config, hub_client::HubClient};

/// How often one hook registers again after the hub lost its wait (restart, failover).
const GONE_RETRIES: u32 = 5;
/// How long the hook gives the hub to confirm a cancel when it stops waiting.
const CANCEL_LIMIT: Duration = Duration::from_secs(3);

/// What a hook asks the person.
pub(super) struct Question {
    pub message: String,
    pub options: Vec<ChoiceOption>,
    pub changes: Option<WorkspaceChanges>,
    pub origin: QuestionOrigin,
    /// What makes this question one request however often the client runs the hook
    /// (the turn for a stop, the tool call for a permission).
    pub occasion: String,
}

/// What the event made of the person's reply.
pub(super) enum Answered {
    /// The event took it (its answer, if it has one, is on stdout): ack the reply.
    Taken,
    /// Not a reply this event takes (an automatic one): it stays queued for the agent.
    Declined,
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

/// One question of one hook, with the hook's deadline.
pub(super) struct HookWait<'a> {
    hub: Hub,
    request: RegisterRequest,
    config: &'a Config,
    deadline: Instant,
    limit: Duration,
}

impl<'a> HookWait<'a> {
    /// Binds the chat's session (the caller's own, bound to `"<client>:<session id>"`)
    /// and prepares `question`; the hook waits at most `limit` from now.
    pub async fn bind(
        client: HookClient,
        config: &'a Config,
        input: &HookInput,
        question: Question,
        limit: Duration,
    ) -> Result<HookWait<'a>, HookError> {
        let deadline = Instant::now() + limit;
        let hub = Hub::new(Arc::new(HubClient::new(config)));
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
        // The same question on the same occasion is the same request: a hook the client
        // runs again reattaches to the open wait and stores the message once.
        let occasion = format!("hook:{}", question.occasion);
        let request = RegisterRequest {
            request_id: register_request_id(&init.token, &question.message, &occasion),
            token: init.token,
            message: question.message,
            cursor_title: title,
            workspace: input.cwd.clone(),
            host_ip: config.host_ip.clone(),
            completion_pct: None,
            next_step: None,
            options: question.options,
            multi_select: false,
            host_name: config.host_name.clone(),
            attachments: Vec::new(),
            changes: question.changes,
            origin: question.origin,
        };
        Ok(HookWait {
            hub,
            request,
            config,
            deadline,
            limit,
        })
    }

    /// Asks and waits; `answer` writes the event's answer to the person's reply.
    pub async fn ask(
        &self,
        answer: impl FnOnce(&Reply) -> Result<Answered, HookError>,
    ) -> Result<(), HookError> {
        let signal = crate::stop_signals().map_err(HookError::Runtime)?;
        match self.hold(signal).await? {
            Ending::Replied { wait_id, reply } => match answer(&reply)? {
                Answered::Taken => self.ack(&wait_id, &reply).await,
                Answered::Declined => {
                    self.cancel(&wait_id).await;
                    Ok(())
                }
            },
            Ending::Closed(WaitEnd::KeyRevoked) => Err(HubError::KeyRefused.into()),
            Ending::Closed(_) => Ok(()),
            Ending::Interrupted { wait_id, why } => {
                self.cancel(&wait_id).await;
                Err(why)
            }
        }
    }

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
                let why = match self.request.origin {
                    QuestionOrigin::Permission => HookError::NoDecisionInTime(self.limit),
                    _ => HookError::NoReplyInTime(self.limit),
                };
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

    /// Consumes the reply whose answer was written.
    async fn ack(&self, wait_id: &str, reply: &Reply) -> Result<(), HookError> {
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

/// Writes one JSON answer line to stdout.
pub(super) fn write_answer(answer: &impl serde::Serialize) -> Result<Answered, HookError> {
    use std::io::Write;
    let line = serde_json::to_string(answer).expect("a hook answer serializes");
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")
        .and_then(|()| out.flush())
        .map_err(HookError::Write)?;
    Ok(Answered::Taken)
}
