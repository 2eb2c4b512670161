//! The wait loop of `wait_for_user_input`: register the agent's message at the hub, hold
//! long polls until the person's reply, the client's limit or a cancel, with progress.
//!
//! Invariants: the same message (with no reply in between) is the same hub request, so a
//! re-call reattaches to the open wait and stores nothing twice; a reply is acked only after
//! its result was written (see `delivery`), and a reply the agent shows it never saw (its
//! next call passes an older `resume`) is returned again; a wait ends before the client's
//! limit with a normal result, never an error the agent gives up on.

use std::time::{Duration, Instant};

use rmcp::{
    model::{CallToolResult, ProgressNotificationParam, ProgressToken},
    service::{RequestContext, RoleServer},
};
use serde_json::json;
use sha2::{Digest, Sha256};

use super::{Bridge, WaitParams, sentences::*};
use crate::{
    delivery::{Delivery, OpenWait, resume_naming},
    hub_client::{HubClient, HubError, PollAnswer, Reply},
    limits::{self, LimitInputs},
};

/// A wait with less than this left before the client's limit ends now.
const DEADLINE_SLACK: Duration = Duration::from_millis(300);
/// The hub's JSON body limit (`/api/wait/register`).
const MAX_REGISTER_BODY: usize = 1024 * 1024;

/// Why a wait step stopped.
enum Interrupt {
    Cancelled,
    Deadline,
    /// A newer call for the same token took over.
    Replaced,
}

/// Sends strictly increasing progress when the client asked for it.
struct Progress {
    token: Option<ProgressToken>,
    count: u32,
    started: Instant,
}

impl Progress {
    async fn tick(&mut self, ctx: &RequestContext<RoleServer>, note: &str) {
        let Some(token) = self.token.clone() else {
            return;
        };
        self.count += 1;
        let message = format!("{note} for {}", human_duration(self.started.elapsed()));
        let param =
            ProgressNotificationParam::new(token, f64::from(self.count)).with_message(message);
        match ctx.peer.notify_progress(param).await {
            Ok(()) => tracing::debug!(count = self.count, "progress sent"),
            Err(e) => tracing::debug!(error = %e, "progress not sent"),
        }
    }
}

/// Keeps a hub wait open only on purpose: dropped while armed (the call was cancelled or
/// the task aborted), it cancels the wait at the hub.
struct WaitGuard {
    hub: HubClient,
    delivery: Delivery,
    request: rmcp::model::RequestId,
    wait: Option<OpenWait>,
}

impl WaitGuard {
    /// Leaves the hub wait as it is (a reply was taken, or the agent will call again).
    fn keep(&mut self) {
        self.wait = None;
    }

    /// Cancels the hub wait now and waits briefly for the hub to confirm.
    async fn cancel_now(&mut self) {
        if let Some(w) = self.wait.take() {
            let cancel = self.hub.cancel(&w.token, &w.wait_id);
            match tokio::time::timeout(Duration::from_secs(3), cancel).await {
                Ok(Ok(())) => tracing::info!(token = %w.token, "wait cancelled at the hub"),
                Ok(Err(e)) => tracing::warn!(error = %e, "cancel failed"),
                Err(_) => tracing::warn!("cancel timed out"),
            }
        }
    }
}

impl Drop for WaitGuard {
    fn drop(&mut self) {
        self.delivery.close(&self.request);
        if let Some(w) = self.wait.take() {
            let hub = self.hub.clone();
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                rt.spawn(async move {
                    let _ = hub.cancel(&w.token, &w.wait_id).await;
                });
            }
        }
    }
}

/// Gives up the waiting turn on a token when the call ends, however it ends.
struct StepDown {
    delivery: Delivery,
    token: String,
    request: rmcp::model::RequestId,
}

impl Drop for StepDown {
    fn drop(&mut self) {
        self.delivery.step_down(&self.token, &self.request);
    }
}

/// One call of `wait_for_user_input`, as it goes.
struct Call<'a> {
    token: String,
    started: Instant,
    deadline: Option<Instant>,
    ctx: &'a RequestContext<RoleServer>,
    progress: Progress,
    /// Whether a reply's result may carry `structuredContent` alongside its images.
    structured_images: bool,
    /// The last hub failure, if the latest attempt failed.
    failing: Option<String>,
    delivery: Delivery,
}

impl Call<'_> {
    /// What is left of the call's time, less the slack its result needs to go out.
    fn time_left(&self) -> Option<Duration> {
        self.deadline.map(|d| {
            d.saturating_duration_since(Instant::now())
                .saturating_sub(DEADLINE_SLACK / 2)
                .max(Duration::from_millis(50))
        })
    }

    fn no_reply(&self) -> CallToolResult {
        let resume = self.delivery.issue_resume(&self.token);
        let waited = self.started.elapsed();
        match &self.failing {
            Some(why) => {
                tracing::info!(token = %self.token, %why, "call ends: the hub kept failing");
                hub_unavailable(&self.token, waited, &resume, why)
            }
            None => {
                tracing::debug!(token = %self.token, waited_ms = waited.as_millis() as u64, "call ends: no reply yet");
                no_reply_yet(&self.token, waited, &resume)
            }
        }
    }

    fn ended_elsewhere(&self, why: &str) -> CallToolResult {
        tracing::debug!(token = %self.token, %why, "call ends without a reply");
        ended_elsewhere(&self.token, why, &self.delivery.issue_resume(&self.token))
    }
}

impl Bridge {
    /// Register, then poll until a reply, a cancellation, or the client's limit.
    pub(super) async fn wait(
        &self,
        p: WaitParams,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let token = p.token.trim().to_owned();
        let started = Instant::now();
        let client = ctx.client_info().map(|i| i.name);
        let progress_token = ctx.meta.get_progress_token();
        let (limit, source) = limits::choose(&LimitInputs {
            client_name: client.as_deref(),
            has_progress_token: progress_token.is_some(),
            argument_secs: p.timeout_sec,
            env_max: self.max_wait,
            tool_timeout: self.tool_timeout,
            over_http: self.over_http,
        });
        tracing::debug!(
            %token, client = ?client, progress = progress_token.is_some(),
            limit_s = ?limit.map(|l| l.as_secs()), source = ?source, resume = ?p.resume,
            "wait_for_user_input called"
        );
        // Codex hands the model only `structuredContent` when there is one, and then drops
        // the images: a reply with images goes to it as content blocks alone.
        let structured_images = !client
            .as_deref()
            .is_some_and(|n| n.to_lowercase().contains("codex"));
        let structured = |reply: &Reply| reply.images.is_empty() || structured_images;

        // A reply the agent never saw comes first: its resume is older than that reply's.
        if let Some((resume, reply)) = self.delivery.unseen_reply(&token, p.resume.as_deref()) {
            tracing::info!(%token, reply = %reply.id, "returning a reply again: the agent never saw it");
            return reply_result(&token, &reply, &resume, structured(&reply));
        }

        let known = self.known(&token);
        let mut title = p
            .cursor_title
            .clone()
            .filter(|t| !t.trim().is_empty())
            .or_else(|| known.as_ref().map(|k| k.title.clone()));
        let mut workspace = p
            .workspace
            .clone()
            .filter(|w| !w.trim().is_empty())
            .or_else(|| known.as_ref().map(|k| k.workspace.clone()));
        if title.is_none() || workspace.is_none() {
            // A token this process has not bound (the bridge restarted): the session's own
            // record says which chat and folder it was bound with on this machine.
            match self.hub.session(&token).await {
                Ok(s) => {
                    if title.is_none() && !s.title.is_empty() {
                        title = Some(s.title);
                    }
                    if workspace.is_none() && s.host_ip == self.host_ip && !s.workspace.is_empty() {
                        workspace = Some(s.workspace);
                    }
                }
                Err(e) => return hub_error_result(&e, Some(&token)),
            }
        }
        let Some(title) = title else {
            return tool_error(
                "Pass cursorTitle (this chat's title): the bridge does not know which chat this token belongs to.",
                "BAD_REQUEST",
            );
        };
        let workspace = match workspace {
            Some(w) => w,
            None => self.workspace(None, &ctx).await,
        };
        let request_id = register_request_id(&token, &p.message, &self.delivery.last_reply(&token));
        let mut body = json!({
            "token": token, "message": p.message, "cursorTitle": title,
            "workspace": workspace, "hostIp": self.host_ip, "requestId": request_id,
        });
        if let Some(pct) = p.completion_pct {
            body["completionPct"] = json!(pct.min(100));
        }
        if let Some(next) = p.next_step.as_ref().filter(|s| !s.is_empty()) {
            body["nextStep"] = json!(next);
        }
        let size = serde_json::to_vec(&body).map_or(usize::MAX, |b| b.len());
        if size > MAX_REGISTER_BODY {
            tracing::debug!(%token, size, "message refused: too large");
            return too_large(size, MAX_REGISTER_BODY);
        }

        let mut call = Call {
            token: token.clone(),
            started,
            deadline: limit.map(|d| started + d),
            ctx: &ctx,
            progress: Progress {
                token: progress_token,
                count: 0,
                started,
            },
            structured_images,
            failing: None,
            delivery: self.delivery.clone(),
        };
        // Shutdown waits for this call to cancel its hub wait before the process ends.
        let _in_flight = self.delivery.call_started();
        let replaced = self.delivery.take_over(&token, &ctx.id);
        let _turn = StepDown {
            delivery: self.delivery.clone(),
            token: token.clone(),
            request: ctx.id.clone(),
        };
        let mut supersede_retries = 1u32;
        let mut gone_retries = 0u32;
        let mut failures = 0u32;
        'register: loop {
            let wait_id = loop {
                if self.shutdown.is_cancelled() || ctx.ct.is_cancelled() {
                    return cancelled(&token);
                }
                match self.hub.register(body.clone(), call.time_left()).await {
                    Ok(a) => break a.wait_id,
                    Err(e) if e.is_transient() => {
                        failures += 1;
                        call.failing = Some(failure_summary(&e));
                        if let Err(stop) = self.pause(&mut call, failures, &replaced).await {
                            return self.stopped(stop, &call);
                        }
                    }
                    Err(e) => return hub_error_result(&e, Some(&token)),
                }
            };
            failures = 0;
            call.failing = None;
            tracing::debug!(%token, %wait_id, "registered at the hub");
            self.remember(&token, &workspace, &title);
            let wait = OpenWait {
                token: token.clone(),
                wait_id: wait_id.clone(),
            };
            self.delivery.open(&ctx.id, wait.clone());
            let mut guard = WaitGuard {
                hub: self.hub.clone(),
                delivery: self.delivery.clone(),
                request: ctx.id.clone(),
                wait: Some(wait),
            };
            loop {
                let hold = match call.deadline {
                    Some(d) => {
                        let left = d.saturating_duration_since(Instant::now());
                        if left <= DEADLINE_SLACK {
                            // The hub wait stays open for the re-call, which reattaches to
                            // it; if none comes, the hub closes it after its grace period.
                            guard.keep();
                            self.delivery.linger(OpenWait {
                                token: token.clone(),
                                wait_id: wait_id.clone(),
                            });
                            return call.no_reply();
                        }
                        self.poll_hold.min(left - DEADLINE_SLACK)
                    }
                    None => self.poll_hold,
                };
                let answer = tokio::select! {
                    _ = ctx.ct.cancelled() => {
                        tracing::debug!(%token, "call ends: the client cancelled it");
                        guard.cancel_now().await;
                        return cancelled(&token);
                    }
                    _ = self.shutdown.cancelled() => {
                        tracing::debug!(%token, "call ends: the bridge is stopping");
                        guard.cancel_now().await;
                        return cancelled(&token);
                    }
                    _ = replaced.cancelled() => {
                        // The agent called again; the newer call owns the hub wait now.
                        guard.keep();
                        return call.ended_elsewhere("a newer wait_for_user_input call for this session took over");
                    }
                    a = self.hub.poll(&token, &wait_id, hold, call.time_left()) => a,
                };
                match answer {
                    Ok(PollAnswer::Replied { reply }) => {
                        failures = 0;
                        call.failing = None;
                        let seen_before = p
                            .resume
                            .as_deref()
                            .is_some_and(|r| r.trim() == resume_naming(&reply.id));
                        if seen_before && !self.delivery.was_returned(&reply.id) {
                            // The agent's last result was this reply, returned before this
                            // bridge lost its memory (the hub's `/mcp` restarted between
                            // writing the result and its ack): only the ack is missing.
                            tracing::info!(%token, reply = %reply.id, "acking a reply the agent's resume shows it saw");
                            self.ack_in_background(&token, &wait_id, &reply.id).await;
                            continue;
                        }
                        if self.delivery.was_returned(&reply.id) {
                            // Written before. If it went to a call the agent abandoned, this
                            // call's resume shows it and the agent gets it now.
                            if let Some((resume, unseen)) =
                                self.delivery.unseen_reply(&token, p.resume.as_deref())
                            {
                                guard.keep();
                                tracing::info!(%token, reply = %unseen.id, "returning a reply again: it went to an abandoned call");
                                return reply_result(&token, &unseen, &resume, structured(&unseen));
                            }
                            // Only its ack got lost.
                            self.ack_in_background(&token, &wait_id, &reply.id).await;
                            continue;
                        }
                        let resume = self.delivery.issue_resume_for_reply(&token, &reply.id);
                        if !self
                            .delivery
                            .claim(&ctx.id, &token, &wait_id, &reply, &resume)
                        {
                            // Another call of this bridge is returning it right now.
                            tokio::time::sleep(Duration::from_millis(200)).await;
                            continue;
                        }
                        guard.keep();
                        tracing::debug!(%token, reply = %reply.id, images = reply.images.len(), "call ends: the person replied");
                        let with_structure = reply.images.is_empty() || call.structured_images;
                        return reply_result(&token, &reply, &resume, with_structure);
                    }
                    Ok(PollAnswer::Renewal) => {
                        failures = 0;
                        call.failing = None;
                        tracing::debug!(%token, waited_s = started.elapsed().as_secs(), "renewal");
                        // Not on the renewal that ends the call: progress arriving after
                        // the result is an error to the client (Claude Code logs one).
                        let ending = call.deadline.is_some_and(|d| {
                            d.saturating_duration_since(Instant::now()) <= DEADLINE_SLACK
                        });
                        if !ending {
                            call.progress
                                .tick(&ctx, "waiting for the person's reply")
                                .await;
                        }
                    }
                    Ok(PollAnswer::Gone {
                        reason,
                        merged_into,
                    }) => {
                        guard.keep();
                        tracing::debug!(%token, %reason, "the hub closed the wait");
                        match reason.as_str() {
                            "merged" => return merged_result(&token, merged_into.as_deref()),
                            "archived" => {
                                return tool_error(
                                    &format!(
                                        "Session {token} was archived in the panel: call init_conversation to start a new session."
                                    ),
                                    "SESSION_CLOSED",
                                );
                            }
                            "superseded" if supersede_retries > 0 => {
                                supersede_retries -= 1;
                                continue 'register;
                            }
                            "superseded" => {
                                return call.ended_elsewhere(
                                    "another call is now waiting on this session",
                                );
                            }
                            // The hub restarted, another hub took over, or the hub closed
                            // the wait while this bridge could not poll: this agent is
                            // still here, so wait again (the message is not stored twice).
                            "unknown" | "expired" if gone_retries < 20 => {
                                gone_retries += 1;
                                tokio::time::sleep(Duration::from_millis(200)).await;
                                continue 'register;
                            }
                            "cancelled" => {
                                return call
                                    .ended_elsewhere("the wait was cancelled from the panel");
                            }
                            "key_revoked" => {
                                return hub_error_result(&HubError::KeyRefused, Some(&token));
                            }
                            _ => {
                                return call.ended_elsewhere("the wait was closed at the hub");
                            }
                        }
                    }
                    Err(e) if e.is_transient() => {
                        failures += 1;
                        call.failing = Some(failure_summary(&e));
                        tracing::debug!(%token, error = %e, failures, "poll failed");
                        if let Err(stop) = self.pause(&mut call, failures, &replaced).await {
                            if matches!(stop, Interrupt::Cancelled) {
                                guard.cancel_now().await;
                            } else {
                                guard.keep();
                            }
                            return self.stopped(stop, &call);
                        }
                        // A failover means a new hub that may not know this wait; polling
                        // it answers `unknown` and the loop registers again.
                    }
                    Err(e) => {
                        guard.keep();
                        return hub_error_result(&e, Some(&token));
                    }
                }
            }
        }
    }

    /// Acks a reply the agent already has, then gives the ack a moment before the next
    /// poll (which would otherwise answer the same reply at once).
    async fn ack_in_background(&self, token: &str, wait_id: &str, reply_id: &str) {
        let hub = self.hub.clone();
        let (t, w, r) = (token.to_owned(), wait_id.to_owned(), reply_id.to_owned());
        tokio::spawn(async move { hub.ack(&t, &w, &r).await });
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    /// Backs off after a failed hub call, sending progress meanwhile.
    async fn pause(
        &self,
        call: &mut Call<'_>,
        failures: u32,
        replaced: &tokio_util::sync::CancellationToken,
    ) -> Result<(), Interrupt> {
        let backoff =
            Duration::from_millis(250 * 2u64.pow(failures.min(4))).min(Duration::from_secs(3));
        let sleep_for = match call.deadline {
            Some(d) => {
                let left = d.saturating_duration_since(Instant::now());
                if left <= DEADLINE_SLACK {
                    return Err(Interrupt::Deadline);
                }
                backoff.min(left - DEADLINE_SLACK)
            }
            None => backoff,
        };
        if failures.is_multiple_of(4) {
            call.progress
                .tick(call.ctx, "reconnecting to the hub")
                .await;
        }
        tokio::select! {
            _ = call.ctx.ct.cancelled() => Err(Interrupt::Cancelled),
            _ = self.shutdown.cancelled() => Err(Interrupt::Cancelled),
            _ = replaced.cancelled() => Err(Interrupt::Replaced),
            _ = tokio::time::sleep(sleep_for) => Ok(()),
        }
    }

    fn stopped(&self, stop: Interrupt, call: &Call<'_>) -> CallToolResult {
        match stop {
            Interrupt::Deadline => call.no_reply(),
            Interrupt::Cancelled => cancelled(&call.token),
            Interrupt::Replaced => {
                call.ended_elsewhere("a newer wait_for_user_input call for this session took over")
            }
        }
    }
}

/// A hub failure in a few words, for the agent and the log.
fn failure_summary(e: &HubError) -> String {
    match e {
        HubError::Unreachable { tried } => format!("no hub answered: {}", tried.join(", ")),
        HubError::Api { status, code, .. } => format!("the hub answered {status} {code}"),
        other => other.to_string(),
    }
}

/// The register request id: the same token and message (with no reply in between) is the
/// same request, so a re-call after "no reply yet" does not record the message twice.
pub fn register_request_id(token: &str, message: &str, last_reply: &str) -> String {
    let mut h = Sha256::new();
    for part in [token, message, last_reply] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    format!("rq_{}", &hex::encode(h.finalize())[..32])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_id_is_stable_and_depends_on_the_last_reply() {
        let a = register_request_id("ct_1", "done", "");
        assert_eq!(a, register_request_id("ct_1", "done", ""));
        assert_ne!(a, register_request_id("ct_1", "done", "r_1"));
        assert_ne!(a, register_request_id("ct_1", "done.", ""));
        assert_ne!(
            register_request_id("ab", "c", ""),
            register_request_id("a", "bc", "")
        );
        assert!(a.starts_with("rq_") && a.len() == 35);
    }
}
