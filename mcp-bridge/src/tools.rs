//! The four MCP tools (rmcp tool router): binding fingerprint, the wait loop, and the
//! sentences the agent reads.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use rmcp::{
    ServerHandler,
    handler::server::{router::tool::ToolRouter, wrapper::Parameters},
    model::{
        CallToolResult, ContentBlock, Implementation, ProgressNotificationParam, ProgressToken,
        ServerCapabilities, ServerConfig,
    },
    service::{NotificationContext, RequestContext, RoleServer},
    tool, tool_handler, tool_router,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use crate::{
    config::Config,
    delivery::{Delivery, OpenWait},
    hub_client::{HubClient, HubError, PollAnswer, Reply},
};

/// A wait with less than this left before the client's limit ends now.
const DEADLINE_SLACK: Duration = Duration::from_millis(300);
/// How long the client has to answer `roots/list`.
const ROOTS_TIMEOUT: Duration = Duration::from_secs(3);

/// What the agent must do after every successful call; agents forget otherwise.
fn keep_going(token: &str) -> String {
    format!(
        "When you finish your next step, call wait_for_user_input with token {token} and a short report instead of ending your turn."
    )
}

/// How long each known client lets one tool call run, as seen from its `clientInfo.name`,
/// minus a margin so the bridge answers first. `None`: the client has no limit.
/// docs/clients.md explains each number and its source.
pub const CLIENT_WAIT_LIMITS: &[(&str, Option<u64>)] = &[
    ("claude-code", Some(1740)),
    ("cursor", Some(540)),
    ("codex", Some(50)),
    ("cline", Some(50)),
    ("gemini", Some(570)),
    ("visual studio code", Some(270)),
    ("vscode", Some(270)),
    ("copilot", Some(50)),
    ("windsurf", Some(50)),
    ("trae", Some(50)),
];
/// Clients not in the table: the MCP TypeScript SDK's 60 s default, minus a margin.
pub const UNKNOWN_CLIENT_WAIT: u64 = 50;

/// The wait limit for a client name, from [`CLIENT_WAIT_LIMITS`].
pub fn client_wait_limit(client_name: Option<&str>) -> Option<Duration> {
    let Some(name) = client_name.map(str::to_lowercase) else {
        return Some(Duration::from_secs(UNKNOWN_CLIENT_WAIT));
    };
    // The official Python SDK's default name; it has no request timeout unless set.
    if name == "mcp" {
        return None;
    }
    CLIENT_WAIT_LIMITS
        .iter()
        .find(|(needle, _)| name.contains(needle))
        .map_or(Some(UNKNOWN_CLIENT_WAIT), |(_, limit)| *limit)
        .map(Duration::from_secs)
}

/// `init_conversation` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitParams {
    /// The title of this IDE chat, exactly as the IDE shows it (it binds the session to this chat).
    pub cursor_title: String,
    /// Absolute path of the project folder; leave out to use the IDE's workspace.
    #[serde(default)]
    pub workspace: Option<String>,
    /// true to start a new session even if this chat already has one.
    #[serde(default)]
    pub new_plan: Option<bool>,
    /// A plan label to find or bind a session by, across chats.
    #[serde(default)]
    pub plan_label: Option<String>,
    /// The IDE's thread or conversation id, if you know it.
    #[serde(default)]
    pub thread_id: Option<String>,
}

/// `select_conversation` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SelectParams {
    /// The session token (ct_ followed by 32 hex digits).
    pub token: String,
    /// The title of this IDE chat.
    pub cursor_title: String,
    /// Absolute path of the project folder; leave out to use the IDE's workspace.
    #[serde(default)]
    pub workspace: Option<String>,
}

/// `wait_for_user_input` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WaitParams {
    /// Your session token from init_conversation.
    pub token: String,
    /// What you did in this step and what you propose next, for the person to read. When
    /// calling again after a "no reply yet" result, send the same message.
    pub message: String,
    /// The title of this IDE chat, if it changed or you know it.
    #[serde(default)]
    pub cursor_title: Option<String>,
    /// How far the whole task is, 0 to 100.
    #[serde(default)]
    #[schemars(range(min = 0, max = 100))]
    pub completion_pct: Option<u8>,
    /// The next step you would take without further instructions.
    #[serde(default)]
    pub next_step: Option<String>,
    /// Longest time to wait in seconds before returning "no reply yet"; leave out to use the
    /// safe limit known for this IDE.
    #[serde(default)]
    pub timeout_sec: Option<u64>,
}

/// `merge_conversation` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MergeParams {
    /// The token of the session to merge away (it becomes read-only).
    pub from_token: String,
    /// The token of the session that receives the messages and continues.
    pub to_token: String,
    /// The title of this IDE chat.
    pub cursor_title: String,
}

/// What this bridge last saw bound to a token: the wait uses the same fingerprint.
#[derive(Debug, Clone)]
struct KnownBinding {
    workspace: String,
    title: String,
}

/// The MCP server: one per stdio connection.
#[derive(Clone)]
pub struct Bridge {
    hub: HubClient,
    delivery: Delivery,
    host_ip: String,
    max_wait: Option<Option<Duration>>,
    poll_hold: Duration,
    /// Token → binding; a std mutex, held only for a map operation.
    known: Arc<Mutex<HashMap<String, KnownBinding>>>,
    /// The workspace from the client's roots, once asked; cleared when the roots change.
    roots: Arc<Mutex<Option<Option<String>>>>,
    shutdown: CancellationToken,
    tool_router: ToolRouter<Bridge>,
}

impl Bridge {
    /// A bridge forwarding to `hub`; `shutdown` ends every wait (stdin closed).
    pub fn new(
        config: &Config,
        hub: HubClient,
        delivery: Delivery,
        shutdown: CancellationToken,
    ) -> Bridge {
        Bridge {
            hub,
            delivery,
            host_ip: config.host_ip.clone(),
            max_wait: config.max_wait,
            poll_hold: config.poll_hold,
            known: Arc::default(),
            roots: Arc::default(),
            shutdown,
            tool_router: Self::tool_router(),
        }
    }

    fn remember(&self, token: &str, workspace: &str, title: &str) {
        self.known.lock().expect("not poisoned").insert(
            token.to_owned(),
            KnownBinding {
                workspace: workspace.to_owned(),
                title: title.to_owned(),
            },
        );
    }

    fn known(&self, token: &str) -> Option<KnownBinding> {
        self.known.lock().expect("not poisoned").get(token).cloned()
    }

    /// The workspace: the argument, else the client's first root, else the working directory.
    async fn workspace(&self, arg: Option<&str>, ctx: &RequestContext<RoleServer>) -> String {
        if let Some(ws) = arg.map(str::trim).filter(|s| !s.is_empty()) {
            return ws.to_owned();
        }
        if let Some(ws) = self.roots_workspace(ctx).await {
            return ws;
        }
        std::env::current_dir()
            .map(|p| p.display().to_string())
            .unwrap_or_default()
    }

    // Roots are deprecated for protocols after 2025-11-25 but are what IDEs send today.
    #[allow(deprecated)]
    async fn roots_workspace(&self, ctx: &RequestContext<RoleServer>) -> Option<String> {
        if let Some(cached) = self.roots.lock().expect("not poisoned").clone() {
            return cached;
        }
        let supports_roots = ctx.client_capabilities().is_some_and(|c| c.roots.is_some());
        let found = if supports_roots {
            let asked = tokio::time::timeout(ROOTS_TIMEOUT, ctx.peer.list_roots()).await;
            match asked {
                Ok(Ok(result)) => result.roots.iter().find_map(|r| file_uri_to_path(&r.uri)),
                Ok(Err(e)) => {
                    tracing::debug!(error = %e, "roots/list failed");
                    None
                }
                Err(_) => {
                    tracing::debug!("roots/list timed out");
                    None
                }
            }
        } else {
            None
        };
        *self.roots.lock().expect("not poisoned") = Some(found.clone());
        found
    }

    /// How long a wait may block before answering "no reply yet".
    fn wait_limit(&self, arg: Option<u64>, ctx: &RequestContext<RoleServer>) -> Option<Duration> {
        if let Some(secs) = arg.filter(|s| *s > 0) {
            return Some(Duration::from_secs(secs));
        }
        if let Some(limit) = self.max_wait {
            return limit;
        }
        let name = ctx.client_info().map(|i| i.name);
        client_wait_limit(name.as_deref())
    }
}

#[tool_router]
impl Bridge {
    #[tool(
        description = "Start or resume the holdline conversation for this IDE chat. Call it once at the start of every task (before any other work), with the chat's title as cursorTitle. It returns a token. From then on, never end your turn: at the end of every step call wait_for_user_input with that token and a short report, and continue with whatever the person replies."
    )]
    async fn init_conversation(
        &self,
        Parameters(p): Parameters<InitParams>,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let workspace = self.workspace(p.workspace.as_deref(), &ctx).await;
        let mut body = json!({
            "cursorTitle": p.cursor_title, "workspace": workspace, "hostIp": self.host_ip,
        });
        if let Some(v) = p.new_plan {
            body["newPlan"] = json!(v);
        }
        if let Some(v) = p.plan_label.filter(|s| !s.is_empty()) {
            body["planLabel"] = json!(v);
        }
        if let Some(v) = p.thread_id.filter(|s| !s.is_empty()) {
            body["threadId"] = json!(v);
        }
        match self.hub.init(body).await {
            Ok(a) => {
                self.remember(&a.token, &workspace, &p.cursor_title);
                let text = format!(
                    "Conversation {} ({}, status {}). Your token is {}. {}",
                    if a.created { "created" } else { "resumed" },
                    a.binding_key,
                    a.status,
                    a.token,
                    keep_going(&a.token)
                );
                success(text, json!(a))
            }
            Err(e) => hub_error_result(&e, None),
        }
    }

    #[tool(
        description = "Switch this IDE chat to an existing holdline session by its token, for example one the person gave you. Fails with BINDING_REJECTED when the session belongs to another chat; then use init_conversation instead."
    )]
    async fn select_conversation(
        &self,
        Parameters(p): Parameters<SelectParams>,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let workspace = self.workspace(p.workspace.as_deref(), &ctx).await;
        let body = json!({
            "token": p.token, "cursorTitle": p.cursor_title,
            "workspace": workspace, "hostIp": self.host_ip,
        });
        match self.hub.select(body).await {
            Ok(a) => {
                self.remember(&a.token, &workspace, &p.cursor_title);
                let text = format!(
                    "Selected session {} (status {}). {}",
                    a.token,
                    a.status,
                    keep_going(&a.token)
                );
                success(text, json!(a))
            }
            Err(e) => hub_error_result(&e, Some(&p.token)),
        }
    }

    #[tool(
        description = "Report what you just did and wait for the person's answer. Call this at the end of EVERY step instead of ending your turn; it blocks until the person replies (possibly a long time) and returns their reply, which may include images. Then do what the reply says and call this tool again. If it returns \"no reply yet\", call it again at once with the same token and the same message."
    )]
    async fn wait_for_user_input(
        &self,
        Parameters(p): Parameters<WaitParams>,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResult {
        self.wait(p, ctx).await
    }

    #[tool(
        description = "Merge one holdline session into another: the source's messages are appended to the target, the source closes and its bindings point to the target. Use the target token afterwards."
    )]
    async fn merge_conversation(
        &self,
        Parameters(p): Parameters<MergeParams>,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let workspace = match self.known(&p.to_token) {
            Some(k) => k.workspace,
            None => self.workspace(None, &ctx).await,
        };
        let body = json!({
            "fromToken": p.from_token, "toToken": p.to_token, "cursorTitle": p.cursor_title,
            "workspace": workspace, "hostIp": self.host_ip,
        });
        match self.hub.merge(body).await {
            Ok(a) => {
                self.remember(&a.token, &workspace, &p.cursor_title);
                let text = format!(
                    "Merged {} into {}. Use token {} from now on. {}",
                    p.from_token,
                    a.token,
                    a.token,
                    keep_going(&a.token)
                );
                success(
                    text,
                    json!({"token": a.token, "mergedFrom": p.from_token, "status": "merged"}),
                )
            }
            Err(e) => hub_error_result(&e, Some(&p.to_token)),
        }
    }
}

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
        if let Err(e) = ctx.peer.notify_progress(param).await {
            tracing::debug!(error = %e, "progress not sent");
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
            match tokio::time::timeout(Duration::from_secs(5), cancel).await {
                Ok(Ok(())) => tracing::info!(token = %w.token, "wait cancelled at the hub"),
                Ok(Err(e)) => tracing::warn!(error = %e, "cancel failed"),
                Err(_) => tracing::warn!("cancel timed out"),
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

impl Bridge {
    /// Register, then poll until a reply, a cancellation, or the client's limit.
    async fn wait(&self, p: WaitParams, ctx: RequestContext<RoleServer>) -> CallToolResult {
        let token = p.token.trim().to_owned();
        let started = Instant::now();
        let deadline = self.wait_limit(p.timeout_sec, &ctx).map(|d| started + d);
        let mut progress = Progress {
            token: ctx.meta.get_progress_token(),
            count: 0,
            started,
        };
        let known = self.known(&token);
        let title = match p
            .cursor_title
            .clone()
            .filter(|t| !t.trim().is_empty())
            .or_else(|| known.as_ref().map(|k| k.title.clone()))
        {
            Some(t) => t,
            None => match self.hub.session(&token).await {
                Ok(s) if !s.title.is_empty() => s.title,
                Ok(_) => {
                    return tool_error(
                        "Pass cursorTitle (this chat's title): the bridge does not know which chat this token belongs to.",
                        "BAD_REQUEST",
                    );
                }
                Err(e) => return hub_error_result(&e, Some(&token)),
            },
        };
        let workspace = match known {
            Some(k) => k.workspace,
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

        let replaced = self.delivery.take_over(&token, &ctx.id);
        let _turn = StepDown {
            delivery: self.delivery.clone(),
            token: token.clone(),
            request: ctx.id.clone(),
        };
        let mut supersede_retries = 1u32;
        let mut unknown_retries = 0u32;
        let mut failures = 0u32;
        'register: loop {
            let wait_id = loop {
                match self.hub.register(body.clone()).await {
                    Ok(a) => break a.wait_id,
                    Err(e) if e.is_transient() => {
                        failures += 1;
                        if let Err(stop) = self
                            .pause(&ctx, deadline, &mut progress, failures, &replaced)
                            .await
                        {
                            return self.stopped(stop, &token, started);
                        }
                    }
                    Err(e) => return hub_error_result(&e, Some(&token)),
                }
            };
            failures = 0;
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
                let hold = match deadline {
                    Some(d) => {
                        let left = d.saturating_duration_since(Instant::now());
                        if left <= DEADLINE_SLACK {
                            // The hub wait stays open: the panel keeps showing the agent as
                            // waiting and the re-call with the same message reattaches to it.
                            guard.keep();
                            return no_reply_yet(&token, started);
                        }
                        self.poll_hold.min(left - DEADLINE_SLACK)
                    }
                    None => self.poll_hold,
                };
                let answer = tokio::select! {
                    _ = ctx.ct.cancelled() => {
                        guard.cancel_now().await;
                        return cancelled(&token);
                    }
                    _ = self.shutdown.cancelled() => {
                        guard.cancel_now().await;
                        return cancelled(&token);
                    }
                    _ = replaced.cancelled() => {
                        // The agent called again; the newer call owns the hub wait now.
                        guard.keep();
                        return ended_elsewhere(&token, "a newer wait_for_user_input call for this session took over");
                    }
                    a = self.hub.poll(&token, &wait_id, hold) => a,
                };
                match answer {
                    Ok(PollAnswer::Replied { reply }) => {
                        failures = 0;
                        if self.delivery.was_returned(&reply.id) {
                            // Returned before; only its ack got lost.
                            let hub = self.hub.clone();
                            let (t, w, r) = (token.clone(), wait_id.clone(), reply.id.clone());
                            tokio::spawn(async move { hub.ack(&t, &w, &r).await });
                            tokio::time::sleep(Duration::from_millis(200)).await;
                            continue;
                        }
                        if !self.delivery.claim(&ctx.id, &token, &wait_id, &reply.id) {
                            // Another call of this bridge is returning it right now.
                            tokio::time::sleep(Duration::from_millis(200)).await;
                            continue;
                        }
                        guard.keep();
                        return reply_result(&token, reply);
                    }
                    Ok(PollAnswer::Renewal) => {
                        failures = 0;
                        progress.tick(&ctx, "waiting for the person's reply").await;
                    }
                    Ok(PollAnswer::Gone {
                        reason,
                        merged_into,
                    }) => {
                        guard.keep();
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
                                return ended_elsewhere(
                                    &token,
                                    "another call is now waiting on this session",
                                );
                            }
                            "unknown" if unknown_retries < 20 => {
                                // The hub restarted or another hub took over: wait again.
                                unknown_retries += 1;
                                tokio::time::sleep(Duration::from_millis(200)).await;
                                continue 'register;
                            }
                            "cancelled" => {
                                return ended_elsewhere(
                                    &token,
                                    "the wait was cancelled from the panel",
                                );
                            }
                            _ => {
                                return ended_elsewhere(&token, "the wait was closed at the hub");
                            }
                        }
                    }
                    Err(e) if e.is_transient() => {
                        failures += 1;
                        if let Err(stop) = self
                            .pause(&ctx, deadline, &mut progress, failures, &replaced)
                            .await
                        {
                            if matches!(stop, Interrupt::Cancelled) {
                                guard.cancel_now().await;
                            } else {
                                guard.keep();
                            }
                            return self.stopped(stop, &token, started);
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

    /// Backs off after a failed hub call, sending progress meanwhile.
    async fn pause(
        &self,
        ctx: &RequestContext<RoleServer>,
        deadline: Option<Instant>,
        progress: &mut Progress,
        failures: u32,
        replaced: &CancellationToken,
    ) -> Result<(), Interrupt> {
        let backoff =
            Duration::from_millis(250 * 2u64.pow(failures.min(4))).min(Duration::from_secs(3));
        let sleep_for = match deadline {
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
            progress.tick(ctx, "reconnecting to the hub").await;
        }
        tokio::select! {
            _ = ctx.ct.cancelled() => Err(Interrupt::Cancelled),
            _ = self.shutdown.cancelled() => Err(Interrupt::Cancelled),
            _ = replaced.cancelled() => Err(Interrupt::Replaced),
            _ = tokio::time::sleep(sleep_for) => Ok(()),
        }
    }

    fn stopped(&self, stop: Interrupt, token: &str, started: Instant) -> CallToolResult {
        match stop {
            Interrupt::Deadline => no_reply_yet(token, started),
            Interrupt::Cancelled => cancelled(token),
            Interrupt::Replaced => ended_elsewhere(
                token,
                "a newer wait_for_user_input call for this session took over",
            ),
        }
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Bridge {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        info.server_info = Implementation::new("holdline-mcp", env!("CARGO_PKG_VERSION"));
        info.instructions = Some(
            "holdline keeps this turn alive as a conversation with the person. Call init_conversation once at the start, then at the end of every step call wait_for_user_input with your token instead of ending your turn, and do what the reply says.".to_owned(),
        );
        info
    }

    async fn on_roots_list_changed(&self, _context: NotificationContext<RoleServer>) {
        *self.roots.lock().expect("not poisoned") = None;
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

fn success(text: String, structured: Value) -> CallToolResult {
    let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
    r.structured_content = Some(structured);
    r
}

fn tool_error(sentence: &str, code: &str) -> CallToolResult {
    let mut r = CallToolResult::error(vec![ContentBlock::text(sentence.to_owned())]);
    r.structured_content = Some(json!({"error": {"code": code, "message": sentence}}));
    r
}

fn reply_result(token: &str, reply: Reply) -> CallToolResult {
    let mut text = if reply.text.trim().is_empty() && !reply.images.is_empty() {
        "(The person replied with images only.)".to_owned()
    } else {
        reply.text.clone()
    };
    if reply.auto {
        text = format!("[automatic reply] {text}");
    }
    text.push_str("\n\n---\n");
    text.push_str(&keep_going(token));
    let mut content = vec![ContentBlock::text(text)];
    for image in &reply.images {
        content.push(ContentBlock::image(
            image.data.clone(),
            image.mime_type.clone(),
        ));
    }
    let mut r = CallToolResult::success(content);
    r.structured_content = Some(json!({
        "token": token, "status": "replied",
        "reply": {"id": reply.id, "text": reply.text, "auto": reply.auto, "at": reply.at,
                  "images": reply.images.len()},
    }));
    r
}

fn no_reply_yet(token: &str, started: Instant) -> CallToolResult {
    let waited = started.elapsed();
    let text = format!(
        "No reply yet (waited {}). The person has not answered; call wait_for_user_input again now with the same token {token} and the same message to keep waiting — do not end your turn.",
        human_duration(waited)
    );
    success(
        text,
        json!({"token": token, "status": "no_reply_yet", "waitedSec": waited.as_secs()}),
    )
}

fn cancelled(token: &str) -> CallToolResult {
    tool_error(
        &format!(
            "The wait on {token} was cancelled; call wait_for_user_input with token {token} when you want the person's reply."
        ),
        "CANCELLED",
    )
}

fn ended_elsewhere(token: &str, why: &str) -> CallToolResult {
    success(
        format!(
            "No reply: {why}. Call wait_for_user_input again with token {token} to keep the conversation going."
        ),
        json!({"token": token, "status": "no_reply_yet", "reason": why}),
    )
}

fn merged_result(token: &str, merged_into: Option<&str>) -> CallToolResult {
    match merged_into {
        Some(to) => success(
            format!(
                "This session ({token}) was merged into {to}. Use token {to} from now on. {}",
                keep_going(to)
            ),
            json!({"token": to, "status": "merged", "mergedFrom": token, "mergedInto": to}),
        ),
        None => tool_error(
            &format!(
                "Session {token} was merged into another session: call init_conversation to find this chat's session."
            ),
            "SESSION_CLOSED",
        ),
    }
}

/// One clear sentence for the agent per hub failure.
fn hub_error_result(e: &HubError, token: Option<&str>) -> CallToolResult {
    let token_desc = token.unwrap_or("this session");
    match e {
        HubError::Unreachable { tried } => tool_error(
            &format!(
                "No holdline hub answered (tried {}): ask the person to start it with `holdline-hub serve` or fix HOLDLINE_HUB, then call this tool again.",
                tried.join(", ")
            ),
            "HUB_UNREACHABLE",
        ),
        HubError::NoSecret(place) => tool_error(
            &format!(
                "The holdline secret is missing ({place}): ask the person to set HOLDLINE_SECRET for this MCP server (the hub machine's ~/.holdline/secret) and restart it."
            ),
            "NO_SECRET",
        ),
        HubError::BadAnswer { hub, detail } => tool_error(
            &format!(
                "The hub at {hub} answered something unexpected ({detail}); check that it is a holdline hub of the same version, then call again."
            ),
            "BAD_ANSWER",
        ),
        HubError::Api {
            hub,
            status,
            code,
            message,
        } => {
            let sentence = match (*status, code.as_str()) {
                (401, _) => format!(
                    "The hub at {hub} rejected the secret (401): ask the person to set HOLDLINE_SECRET for this MCP server to the hub's ~/.holdline/secret and restart the MCP server."
                ),
                (403, "BINDING_REJECTED") => format!(
                    "Session {token_desc} belongs to another IDE chat (BINDING_REJECTED): call init_conversation with this chat's title to get this chat's own token."
                ),
                (403, _) => format!(
                    "The hub at {hub} refused the request ({code}: {message}): point HOLDLINE_HUB at the hub that owns this session (and check the hub's allowed_hosts), then call again."
                ),
                (404, _) => format!(
                    "The hub does not know session {token_desc} (SESSION_NOT_FOUND): call init_conversation to start or find this chat's session."
                ),
                (409, _) => format!(
                    "Session {token_desc} is merged or archived (SESSION_CLOSED): call init_conversation to continue in a new session."
                ),
                (400, _) => {
                    format!("The hub rejected the arguments ({message}): fix them and call again.")
                }
                (413, _) => {
                    "The message is too large for the hub: send a shorter message.".to_owned()
                }
                (429, _) => {
                    "The hub is rate limiting this client: wait a minute and call again.".to_owned()
                }
                _ => format!(
                    "The hub at {hub} failed ({status} {code}: {message}): call again in a moment."
                ),
            };
            tool_error(&sentence, code)
        }
    }
}

fn human_duration(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m {}s", s / 60, s % 60),
        _ => format!("{}h {}m", s / 3600, (s % 3600) / 60),
    }
}

/// `file:///a/b%20c` → `/a/b c`; other schemes are not a folder on this machine.
fn file_uri_to_path(uri: &str) -> Option<String> {
    let rest = uri.strip_prefix("file://")?;
    let path = rest.strip_prefix("localhost").unwrap_or(rest);
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(v) = u8::from_str_radix(std::str::from_utf8(&bytes[i + 1..i + 3]).ok()?, 16)
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    let mut p = String::from_utf8(out).ok()?;
    // Windows: file:///C:/x → C:/x
    if p.len() > 2 && p.starts_with('/') && p.as_bytes()[2] == b':' {
        p.remove(0);
    }
    Some(p)
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

    #[test]
    fn client_limits() {
        assert_eq!(client_wait_limit(Some("mcp")), None);
        assert_eq!(
            client_wait_limit(Some("cursor-vscode")),
            Some(Duration::from_secs(540))
        );
        assert_eq!(
            client_wait_limit(Some("Visual Studio Code")),
            Some(Duration::from_secs(270))
        );
        assert_eq!(
            client_wait_limit(Some("codex-mcp-client")),
            Some(Duration::from_secs(50))
        );
        assert_eq!(
            client_wait_limit(Some("something-new")),
            Some(Duration::from_secs(UNKNOWN_CLIENT_WAIT))
        );
        assert_eq!(
            client_wait_limit(None),
            Some(Duration::from_secs(UNKNOWN_CLIENT_WAIT))
        );
    }

    #[test]
    fn file_uris() {
        assert_eq!(
            file_uri_to_path("file:///home/a/my%20proj").as_deref(),
            Some("/home/a/my proj")
        );
        assert_eq!(
            file_uri_to_path("file:///C:/work").as_deref(),
            Some("C:/work")
        );
        assert_eq!(file_uri_to_path("https://x"), None);
    }

    #[test]
    fn every_success_says_to_keep_going() {
        let r = no_reply_yet("ct_x", Instant::now());
        let text = r.content[0].as_text().unwrap().text.clone();
        assert!(text.contains("wait_for_user_input") && text.contains("ct_x"));
        let r = reply_result(
            "ct_x",
            Reply {
                id: "r_1".into(),
                text: "go".into(),
                images: vec![],
                auto: false,
                at: 0,
            },
        );
        let text = r.content[0].as_text().unwrap().text.clone();
        assert!(text.starts_with("go") && text.contains("wait_for_user_input with token ct_x"));
    }
}
