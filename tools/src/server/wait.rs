//! The wait loop of `wait_for_user_input`: register the agent's message at the hub, hold
//! long polls until the person's reply, the client's limit or a cancel, with progress.
//!
//! Invariants: the same message (with no reply in between) is the same hub request, so a
//! re-call reattaches to the open wait and stores nothing twice; a reply is acked only after
//! its result was written (see `delivery`), and a reply the agent shows it never saw (its
//! next call passes an older `resume`) is returned again; a wait ends before the client's
//! limit with a normal result, never an error the agent gives up on.

// A step that ends the call returns the call's result as its `Err`: built once per call,
// never on a path that repeats.
#![allow(clippy::result_large_err)]

use std::time::{Duration, Instant};

use holdline_contract::{
    HubError, PollAnswer, QuestionOrigin, RegisterRequest, Reply, WaitEnd,
    changes::WorkspaceChanges, choices, routes,
};
use rmcp::{
    model::{CallToolResult, ProgressNotificationParam, ProgressToken, RequestId},
    service::{RequestContext, RoleServer},
};
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use super::{Tools, WaitParams, attachments, image_files::ImageRoute, sentences::*};
use crate::{
    delivery::{Delivery, OpenWait, resume_naming},
    hub::Hub,
    limits::{self, LimitInputs},
};

/// A wait with less than this left before the client's limit ends now.
const DEADLINE_SLACK: Duration = Duration::from_millis(300);
/// How often a wait the hub no longer knows (restart, failover, expiry) is registered
/// again in one call.
const GONE_RETRIES: u32 = 20;

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
    hub: Hub,
    delivery: Delivery,
    request: RequestId,
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
    request: RequestId,
}

impl Drop for StepDown {
    fn drop(&mut self) {
        self.delivery.step_down(&self.token, &self.request);
    }
}

/// One call of `wait_for_user_input`, as it goes.
struct Call<'a> {
    token: String,
    /// The `resume` value the agent passed: which result it saw last.
    resume: Option<String>,
    started: Instant,
    deadline: Option<Instant>,
    ctx: &'a RequestContext<RoleServer>,
    progress: Progress,
    /// Whether a result with image blocks may carry `structuredContent` for this client.
    images_beside_structure: bool,
    /// How a reply's images reach this client's model.
    images: ImageRoute,
    /// Hub calls failed in a row, and the last failure, while the hub keeps failing.
    failures: u32,
    failing: Option<String>,
    /// Cancelled when a newer call for the same token takes over.
    replaced: CancellationToken,
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

    /// How long the next poll may hold; `None` when the call must end now.
    fn next_hold(&self, poll_hold: Duration) -> Option<Duration> {
        match self.deadline {
            None => Some(poll_hold),
            Some(d) => {
                let left = d.saturating_duration_since(Instant::now());
                (left > DEADLINE_SLACK).then(|| poll_hold.min(left - DEADLINE_SLACK))
            }
        }
    }

    /// Whether the call ends at its next step (progress then would arrive after the
    /// result, which clients report as an error).
    fn ending(&self) -> bool {
        self.deadline
            .is_some_and(|d| d.saturating_duration_since(Instant::now()) <= DEADLINE_SLACK)
    }

    fn failed(&mut self, e: &HubError) {
        self.failures += 1;
        self.failing = Some(failure_summary(e));
    }

    fn recovered(&mut self) {
        self.failures = 0;
        self.failing = None;
    }

    /// The reply's result, its images as this client's model can get them.
    fn reply(&self, reply: &Reply, resume: &str) -> CallToolResult {
        let images = self.images.deliver(reply);
        reply_result(
            &self.token,
            reply,
            resume,
            &images,
            self.images_beside_structure,
        )
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

/// The chat and folder a wait binds with.
struct Fingerprint {
    title: String,
    workspace: String,
}

/// What a register request is made of beside the call's arguments.
struct Prepared<'a> {
    fingerprint: &'a Fingerprint,
    changes: Option<WorkspaceChanges>,
    /// The folders the client opened (empty when the call attaches nothing).
    client_folders: &'a [std::path::PathBuf],
}

/// What one poll of the open wait came to.
enum Polled {
    Answer(Result<PollAnswer, HubError>),
    Interrupted(Interrupt),
}

/// What the call does after a step.
enum Next {
    /// Poll the same wait again.
    Poll,
    /// Register the message again (the hub lost or replaced the wait).
    Register,
    /// The call ends with this result.
    End(CallToolResult),
}

/// How often this call still re-registers after the hub closed its wait.
struct Retries {
    superseded: u32,
    gone: u32,
}

impl Tools {
    /// `wait_for_user_input` with its call's `arguments`, called without the tool router: a
    /// transport holding thousands of waits (the hub's `/mcp`) then keeps only the wait's
    /// own future, not the router's box around it and its copy of the request context. The
    /// same arguments and answer as through the router; arguments that do not parse are
    /// the tool error the router gives.
    pub fn call_wait(
        self,
        arguments: Option<rmcp::model::JsonObject>,
        ctx: RequestContext<RoleServer>,
    ) -> impl Future<Output = CallToolResult> + Send + 'static {
        use futures::future::{Either, ready};
        match rmcp::handler::server::tool::parse_json_object::<WaitParams>(
            arguments.unwrap_or_default(),
        ) {
            Ok(p) => Either::Left(self.wait(p, ctx)),
            Err(e) => Either::Right(ready(CallToolResult::error(vec![
                rmcp::model::ContentBlock::text(e.message),
            ]))),
        }
    }

    /// `wait_for_user_input`: a reply the agent never saw, else register the message and
    /// poll until a reply, a cancellation, or the client's limit. Owns its tools, so a
    /// caller holds this future and nothing around it; one `async` block over its
    /// arguments, as an `async fn` would keep each of them twice.
    #[expect(
        clippy::manual_async_fn,
        reason = "an async fn keeps its arguments twice"
    )]
    pub(super) fn wait(
        self,
        p: WaitParams,
        ctx: RequestContext<RoleServer>,
    ) -> impl Future<Output = CallToolResult> + Send + 'static {
        async move {
            let token = p.token.trim().to_owned();
            // A reply the agent never saw comes first: its resume is older than that reply's.
            if let Some((resume, reply)) = self.delivery.unseen_reply(&token, p.resume.as_deref()) {
                tracing::info!(%token, reply = %reply.id, "returning a reply again: the agent never saw it");
                let client = crate::client::client_info(&ctx).map(|i| i.name);
                // The workspace the first delivery saved its images in: the same files again.
                let workspace = self.known(&token).map(|k| k.workspace);
                let images = self
                    .image_route(client.as_deref(), workspace)
                    .deliver(&reply);
                let beside = limits::images_beside_structure(client.as_deref());
                return reply_result(&token, &reply, &resume, &images, beside);
            }
            // The steps before the hold are boxed, as are the hold's rare ones: a wait's future
            // lives as long as the wait, and is as large as its largest step.
            let fingerprint = match Box::pin(self.fingerprint(&token, &p, &ctx)).await {
                Ok(f) => f,
                Err(result) => return result,
            };
            let request = match Box::pin(self.prepare(&token, &p, &fingerprint, &ctx)).await {
                Ok(r) => r,
                Err(result) => return result,
            };
            let mut call = self.start_call(&p, &ctx, token.clone(), &fingerprint);
            // Shutdown waits for this call to cancel its hub wait before the process ends.
            let _in_flight = self.delivery.call_started();
            let _turn = StepDown {
                delivery: self.delivery.clone(),
                token,
                request: ctx.id.clone(),
            };
            self.hold(&mut call, &request, &fingerprint).await
        }
    }

    /// The call's limit (argument, setting, client), its progress and its client.
    fn start_call<'a>(
        &self,
        p: &WaitParams,
        ctx: &'a RequestContext<RoleServer>,
        token: String,
        fingerprint: &Fingerprint,
    ) -> Call<'a> {
        let started = Instant::now();
        let client = crate::client::client_info(ctx).map(|i| i.name);
        let progress_token = ctx.meta.get_progress_token();
        let (limit, source) = limits::choose(&LimitInputs {
            client_name: client.as_deref(),
            has_progress_token: progress_token.is_some(),
            argument_secs: p.timeout_sec,
            max_wait: self.max_wait,
            tool_timeout: self.tool_timeout,
            transport: self.transport,
        });
        tracing::debug!(
            %token, client = ?client, progress = progress_token.is_some(),
            limit_s = ?limit.map(|l| l.as_secs()), source = ?source, resume = ?p.resume,
            "wait_for_user_input called"
        );
        Call {
            replaced: self.delivery.take_over(&token, &ctx.id),
            token,
            resume: p.resume.clone(),
            started,
            deadline: limit.map(|d| started + d),
            ctx,
            progress: Progress {
                token: progress_token,
                count: 0,
                started,
            },
            images_beside_structure: limits::images_beside_structure(client.as_deref()),
            images: self.image_route(client.as_deref(), Some(fingerprint.workspace.clone())),
            failures: 0,
            failing: None,
            delivery: self.delivery.clone(),
        }
    }

    /// How reply images reach `client`'s model, saved in `workspace` when they must be.
    fn image_route(&self, client: Option<&str>, workspace: Option<String>) -> ImageRoute {
        ImageRoute {
            client: limits::images(client),
            transport: self.transport,
            workspace,
        }
    }

    /// The chat and folder to bind with: the call's, else what this process bound the
    /// token with, else the session's own record on this machine, else the roots.
    async fn fingerprint(
        &self,
        token: &str,
        p: &WaitParams,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<Fingerprint, CallToolResult> {
        let given = |v: &Option<String>| v.clone().filter(|s| !s.trim().is_empty());
        let known = self.known(token);
        let mut title = given(&p.cursor_title).or_else(|| known.as_ref().map(|k| k.title.clone()));
        let mut workspace =
            given(&p.workspace).or_else(|| known.as_ref().map(|k| k.workspace.clone()));
        if title.is_none() || workspace.is_none() {
            // A token this process has not bound (the bridge restarted): the session's own
            // record says which chat and folder it was bound with on this machine.
            let head = self
                .hub
                .session(token)
                .await
                .map_err(|e| hub_error_result(&e, Some(token)))?;
            if title.is_none() && !head.title.is_empty() {
                title = Some(head.title);
            }
            if workspace.is_none() && head.host_ip == self.host_ip && !head.workspace.is_empty() {
                workspace = Some(head.workspace);
            }
        }
        let Some(title) = title else {
            return Err(tool_error(
                "Pass cursorTitle (this chat's title): the bridge does not know which chat this token belongs to.",
                "BAD_REQUEST",
            ));
        };
        let workspace = match workspace {
            Some(w) => w,
            None => self.workspace(None, ctx).await,
        };
        Ok(Fingerprint { title, workspace })
    }

    /// The workspace's changes when this bridge shares them, collected again for every
    /// call (bounded by git's deadline; a re-call of the same message reattaches, and the
    /// hub keeps the changes the message was first stored with); none for a workspace
    /// outside the folders the client opened, as for attachments.
    async fn workspace_changes(
        &self,
        workspace: &str,
        client_folders: &[std::path::PathBuf],
    ) -> Option<WorkspaceChanges> {
        let git = self.changes.as_ref()?;
        if workspace.is_empty() {
            return None;
        }
        if let Err(why) = attachments::confined_workspace(workspace, client_folders) {
            tracing::info!(%why, "no changes sent");
            return None;
        }
        git.collect(std::path::Path::new(workspace)).await
    }

    /// The register request with what the bridge reads on this machine (the workspace's
    /// changes, the files attached), within the folders the client opened.
    async fn prepare(
        &self,
        token: &str,
        p: &WaitParams,
        fingerprint: &Fingerprint,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<RegisterRequest, CallToolResult> {
        let attaches = p.attachments.as_deref().is_some_and(|a| !a.is_empty());
        let folders = match self.changes.is_some() || attaches {
            true => self.client_folders(ctx).await,
            false => Vec::new(),
        };
        let changes = self
            .workspace_changes(&fingerprint.workspace, &folders)
            .await;
        let prepared = Prepared {
            fingerprint,
            changes,
            client_folders: &folders,
        };
        self.register_request(token, p, prepared)
    }

    /// The register request for this message; too large for the hub, the agent is told
    /// (the changes give way first: the diff, then the whole list).
    fn register_request(
        &self,
        token: &str,
        p: &WaitParams,
        prepared: Prepared<'_>,
    ) -> Result<RegisterRequest, CallToolResult> {
        let Prepared {
            fingerprint,
            changes,
            client_folders,
        } = prepared;
        let mut request = RegisterRequest {
            token: token.to_owned(),
            message: p.message.clone(),
            cursor_title: fingerprint.title.clone(),
            workspace: fingerprint.workspace.clone(),
            host_ip: self.host_ip.clone(),
            request_id: register_request_id(token, &p.message, &self.delivery.last_reply(token)),
            completion_pct: p.completion_pct.map(|pct| pct.min(100)),
            next_step: p.next_step.clone().filter(|s| !s.is_empty()),
            options: p.options.clone().unwrap_or_default(),
            multi_select: p.multi_select.unwrap_or(false),
            host_name: self.host_name.clone(),
            attachments: Vec::new(),
            changes,
            origin: QuestionOrigin::Asked,
        };
        if let Err(e) = choices::check_options(&request.options, request.multi_select) {
            tracing::debug!(%token, error = %e, "options refused");
            return Err(tool_error(
                &format!(
                    "{e}. Offer 1 to 10 options with distinct labels of at most {} characters, or none.",
                    choices::MAX_LABEL_CHARS
                ),
                "BAD_REQUEST",
            ));
        }
        let size = fit_changes(&mut request, routes::JSON_LIMIT);
        if size > routes::JSON_LIMIT {
            tracing::debug!(%token, size, "message refused: too large");
            return Err(too_large(size, routes::JSON_LIMIT));
        }
        request.attachments = self.attachments_for(&request, p, client_folders)?;
        Ok(request)
    }

    /// The files the call attaches, read from the workspace; none when the hub already
    /// has this request's files (a re-call reattaching to the same wait).
    fn attachments_for(
        &self,
        request: &RegisterRequest,
        p: &WaitParams,
        client_folders: &[std::path::PathBuf],
    ) -> Result<Vec<holdline_contract::AttachmentUpload>, CallToolResult> {
        let paths = p.attachments.as_deref().unwrap_or_default();
        if paths.is_empty() || self.files_sent.contains(&request.request_id) {
            return Ok(Vec::new());
        }
        let scope = attachments::Scope {
            transport: self.transport,
            client_folders,
            protected: &self.protected,
        };
        attachments::read_attachments(paths, &request.workspace, &scope).map_err(|e| {
            tracing::debug!(token = %request.token, error = ?e, "attachments refused");
            tool_error(&e.sentence(), "BAD_REQUEST")
        })
    }

    /// Registers the message and polls its wait until the call ends; registers again when
    /// the hub lost or replaced the wait while this agent is still here.
    async fn hold(
        &self,
        call: &mut Call<'_>,
        request: &RegisterRequest,
        fingerprint: &Fingerprint,
    ) -> CallToolResult {
        let mut retries = Retries {
            superseded: 1,
            gone: 0,
        };
        loop {
            let wait_id = match Box::pin(self.register(call, request)).await {
                Ok(id) => id,
                Err(result) => return result,
            };
            tracing::debug!(token = %call.token, %wait_id, "registered at the hub");
            self.remember(&call.token, &fingerprint.workspace, &fingerprint.title);
            let wait = OpenWait {
                token: call.token.clone(),
                wait_id,
            };
            self.delivery.open(&call.ctx.id, wait.clone());
            let mut guard = WaitGuard {
                hub: self.hub.clone(),
                delivery: self.delivery.clone(),
                request: call.ctx.id.clone(),
                wait: Some(wait.clone()),
            };
            loop {
                match self.poll_step(call, &wait, &mut guard, &mut retries).await {
                    Next::Poll => continue,
                    Next::Register => break,
                    Next::End(result) => return result,
                }
            }
        }
    }

    /// Registers the message, retrying while the hub is unreachable; the wait's id.
    async fn register(
        &self,
        call: &mut Call<'_>,
        request: &RegisterRequest,
    ) -> Result<String, CallToolResult> {
        loop {
            if self.shutdown.is_cancelled() || call.ctx.ct.is_cancelled() {
                return Err(cancelled(&call.token));
            }
            match self
                .hub
                .api()
                .register(request.clone(), call.time_left())
                .await
            {
                Ok(a) => {
                    call.recovered();
                    if !request.attachments.is_empty() {
                        self.files_sent.note(&request.request_id);
                    }
                    return Ok(a.wait_id);
                }
                Err(e) if e.is_transient() => {
                    call.failed(&e);
                    if let Err(stop) = self.pause(call).await {
                        return Err(self.stopped(stop, call));
                    }
                }
                Err(e) => return Err(hub_error_result(&e, Some(&call.token))),
            }
        }
    }

    /// One poll of the open wait, and what the call does next.
    async fn poll_step(
        &self,
        call: &mut Call<'_>,
        wait: &OpenWait,
        guard: &mut WaitGuard,
        retries: &mut Retries,
    ) -> Next {
        let Some(hold) = call.next_hold(self.poll_hold) else {
            // The hub wait stays open for the re-call, which reattaches to it; if none
            // comes, the hub closes it after its grace period.
            guard.keep();
            self.delivery.linger(wait.clone());
            return Next::End(call.no_reply());
        };
        match self.poll_once(call, wait, hold).await {
            Polled::Interrupted(Interrupt::Cancelled) => {
                guard.cancel_now().await;
                Next::End(cancelled(&call.token))
            }
            Polled::Interrupted(stop) => {
                // The agent called again; the newer call owns the hub wait now.
                guard.keep();
                Next::End(self.stopped(stop, call))
            }
            Polled::Answer(Ok(PollAnswer::Replied { reply })) => {
                call.recovered();
                Box::pin(self.on_reply(call, wait, guard, reply)).await
            }
            Polled::Answer(Ok(PollAnswer::Renewal)) => {
                call.recovered();
                tracing::debug!(token = %call.token, waited_s = call.started.elapsed().as_secs(), "renewal");
                if !call.ending() {
                    Box::pin(
                        call.progress
                            .tick(call.ctx, "waiting for the person's reply"),
                    )
                    .await;
                }
                Next::Poll
            }
            Polled::Answer(Ok(PollAnswer::Gone {
                reason,
                merged_into,
            })) => {
                guard.keep();
                tracing::debug!(token = %call.token, reason = reason.as_str(), "the hub closed the wait");
                Box::pin(self.on_gone(call, reason, merged_into.as_deref(), retries)).await
            }
            Polled::Answer(Err(e)) => Box::pin(self.on_poll_failure(call, guard, e)).await,
        }
    }

    /// Holds one poll, unless the client cancels, the bridge stops or a newer call takes
    /// over first.
    async fn poll_once(&self, call: &Call<'_>, wait: &OpenWait, hold: Duration) -> Polled {
        tokio::select! {
            _ = call.ctx.ct.cancelled() => {
                tracing::debug!(token = %call.token, "call ends: the client cancelled it");
                Polled::Interrupted(Interrupt::Cancelled)
            }
            _ = self.shutdown.cancelled() => {
                tracing::debug!(token = %call.token, "call ends: the bridge is stopping");
                Polled::Interrupted(Interrupt::Cancelled)
            }
            _ = call.replaced.cancelled() => Polled::Interrupted(Interrupt::Replaced),
            a = self.hub.poll(&wait.token, &wait.wait_id, hold, call.time_left()) => Polled::Answer(a),
        }
    }

    /// The person replied: return it once, unless the agent already has it.
    async fn on_reply(
        &self,
        call: &Call<'_>,
        wait: &OpenWait,
        guard: &mut WaitGuard,
        reply: Reply,
    ) -> Next {
        let token = &call.token;
        let seen_before = call
            .resume
            .as_deref()
            .is_some_and(|r| r.trim() == resume_naming(&reply.id));
        if self.delivery.was_returned(&reply.id) {
            // Written before. If it went to a call the agent abandoned, this call's resume
            // shows it and the agent gets it now.
            if let Some((resume, unseen)) =
                self.delivery.unseen_reply(token, call.resume.as_deref())
            {
                guard.keep();
                tracing::info!(%token, reply = %unseen.id, "returning a reply again: it went to an abandoned call");
                return Next::End(call.reply(&unseen, &resume));
            }
            // Only its ack got lost.
            self.ack_in_background(wait, &reply.id).await;
            return Next::Poll;
        }
        if seen_before {
            // The agent's last result was this reply, returned before this process lost
            // its memory (the hub's `/mcp` restarted between writing the result and its
            // ack): only the ack is missing.
            tracing::info!(%token, reply = %reply.id, "acking a reply the agent's resume shows it saw");
            self.ack_in_background(wait, &reply.id).await;
            return Next::Poll;
        }
        let resume = self.delivery.issue_resume_for_reply(token, &reply.id);
        if !self
            .delivery
            .claim(&call.ctx.id, token, &wait.wait_id, &reply, &resume)
        {
            // Another call of this process is returning it right now.
            tokio::time::sleep(Duration::from_millis(200)).await;
            return Next::Poll;
        }
        guard.keep();
        tracing::debug!(%token, reply = %reply.id, images = reply.images.len(), "call ends: the person replied");
        Next::End(call.reply(&reply, &resume))
    }

    /// The hub closed the wait: say why, or register again while the agent is here.
    async fn on_gone(
        &self,
        call: &Call<'_>,
        reason: WaitEnd,
        merged_into: Option<&str>,
        retries: &mut Retries,
    ) -> Next {
        let token = &call.token;
        Next::End(match reason {
            WaitEnd::Merged => merged_result(token, merged_into),
            WaitEnd::Archived => tool_error(
                &format!(
                    "Session {token} was archived in the panel: call init_conversation to start a new session."
                ),
                "SESSION_CLOSED",
            ),
            WaitEnd::Superseded if retries.superseded > 0 => {
                retries.superseded -= 1;
                return Next::Register;
            }
            WaitEnd::Superseded => {
                call.ended_elsewhere("another call is now waiting on this session")
            }
            // The hub restarted, another hub took over, or the hub closed the wait while
            // this process could not poll: this agent is still here, so wait again (the
            // message is not stored twice).
            WaitEnd::Unknown | WaitEnd::Expired if retries.gone < GONE_RETRIES => {
                retries.gone += 1;
                tokio::time::sleep(Duration::from_millis(200)).await;
                return Next::Register;
            }
            WaitEnd::Cancelled => call.ended_elsewhere("the wait was cancelled from the panel"),
            WaitEnd::KeyRevoked => hub_error_result(&HubError::KeyRefused, Some(token)),
            WaitEnd::Unknown | WaitEnd::Expired | WaitEnd::Finished | WaitEnd::HandedOver => {
                call.ended_elsewhere("the wait was closed at the hub")
            }
        })
    }

    /// A poll failed: back off and poll again while the hub is unreachable (a failover's
    /// new hub answers `unknown` and the call registers again), else say why.
    async fn on_poll_failure(
        &self,
        call: &mut Call<'_>,
        guard: &mut WaitGuard,
        e: HubError,
    ) -> Next {
        if !e.is_transient() {
            guard.keep();
            return Next::End(hub_error_result(&e, Some(&call.token)));
        }
        call.failed(&e);
        tracing::debug!(token = %call.token, error = %e, failures = call.failures, "poll failed");
        match self.pause(call).await {
            Ok(()) => Next::Poll,
            Err(stop) => {
                if matches!(stop, Interrupt::Cancelled) {
                    guard.cancel_now().await;
                } else {
                    guard.keep();
                }
                Next::End(self.stopped(stop, call))
            }
        }
    }

    /// Acks a reply the agent already has, then gives the ack a moment before the next
    /// poll (which would otherwise answer the same reply at once).
    async fn ack_in_background(&self, wait: &OpenWait, reply_id: &str) {
        let hub = self.hub.clone();
        let (wait, reply_id) = (wait.clone(), reply_id.to_owned());
        tokio::spawn(async move { hub.ack(&wait.token, &wait.wait_id, &reply_id).await });
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    /// Backs off after a failed hub call, sending progress meanwhile.
    async fn pause(&self, call: &mut Call<'_>) -> Result<(), Interrupt> {
        let backoff =
            Duration::from_millis(250 * 2u64.pow(call.failures.min(4))).min(Duration::from_secs(3));
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
        if call.failures.is_multiple_of(4) {
            call.progress
                .tick(call.ctx, "reconnecting to the hub")
                .await;
        }
        tokio::select! {
            _ = call.ctx.ct.cancelled() => Err(Interrupt::Cancelled),
            _ = self.shutdown.cancelled() => Err(Interrupt::Cancelled),
            _ = call.replaced.cancelled() => Err(Interrupt::Replaced),
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

/// The size of `request` as sent, once its workspace changes give way to fit `limit`
/// (the diff first, then the whole list): the agent's own message is never cut for them.
fn fit_changes(request: &mut RegisterRequest, limit: usize) -> usize {
    let size_of = |r: &RegisterRequest| serde_json::to_vec(r).map_or(usize::MAX, |b| b.len());
    let size = size_of(request);
    let Some(changes) = request.changes.as_mut().filter(|_| size > limit) else {
        return size;
    };
    tracing::debug!(token = %request.token, size, "the question with its diff is too large: the diff is left out");
    changes.diff.clear();
    changes.truncated = true;
    if size_of(request) > limit {
        request.changes = None;
    }
    size_of(request)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_give_way_before_the_message_is_refused() {
        use holdline_contract::changes::{ChangedFile, FileStatus};
        let file = |i: usize| ChangedFile {
            path: format!("src/file-{i}.rs"),
            status: FileStatus::Modified,
            added: Some(1),
            removed: Some(1),
            binary: false,
            old_path: None,
        };
        let request = |changes| RegisterRequest {
            token: "ct_1".into(),
            message: "Done?".into(),
            changes: Some(changes),
            ..serde_json::from_value(serde_json::json!({
                "token": "", "message": "", "cursorTitle": "t", "workspace": "/w",
                "hostIp": "h", "requestId": "q"
            }))
            .unwrap()
        };
        let small = WorkspaceChanges {
            files: vec![file(0)],
            diff: "diff --git a/x b/x\n".into(),
            truncated: false,
        };
        let mut r = request(small.clone());
        let size = fit_changes(&mut r, 4096);
        assert!(size < 4096);
        assert_eq!(
            r.changes.as_ref(),
            Some(&small),
            "what fits is sent as it is"
        );
        // The diff goes first, saying so.
        let mut r = request(WorkspaceChanges {
            diff: "+".repeat(8192),
            ..small.clone()
        });
        assert!(fit_changes(&mut r, 4096) <= 4096);
        let sent = r.changes.unwrap();
        assert!(sent.diff.is_empty() && sent.truncated && sent.files.len() == 1);
        // Then the list.
        let mut r = request(WorkspaceChanges {
            files: (0..200).map(file).collect(),
            ..small
        });
        assert!(fit_changes(&mut r, 4096) <= 4096);
        assert!(r.changes.is_none());
        assert_eq!(r.message, "Done?");
    }

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

#[cfg(test)]
mod future_size {
    #![allow(unreachable_code, unused_variables, clippy::diverging_sub_expression)]
    use super::*;

    /// The size of the future `make` would answer (it is never called).
    fn size_of_future<F>(_make: impl FnOnce() -> F) -> usize {
        std::mem::size_of::<F>()
    }

    /// A wait's future lives as long as the wait, in the hub once per waiting remote
    /// agent, and is as large as its largest step: the steps before the hold and the
    /// hold's rare ones are boxed. In the debug build the tests run: 2,064 bytes, the tools
    /// it owns included (2,120 with the whole workspace's features); as an `async fn`,
    /// which keeps its arguments twice, 2,752.
    #[test]
    fn a_waits_future_is_not_sized_by_its_rare_steps() {
        let wait = size_of_future(|| {
            let tools: Tools = todo!();
            let params: WaitParams = todo!();
            let ctx: RequestContext<RoleServer> = todo!();
            tools.wait(params, ctx)
        });
        assert!(wait <= 2_400, "a wait's future is {wait} bytes");
    }
}
