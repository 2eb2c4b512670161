//! The four MCP tools (rmcp tool router) and the binding fingerprint they send: workspace
//! from the argument, else the client's roots, else the working directory; this machine's
//! host id. The wait loop is in `wait`, the sentences the agent reads in `sentences`, the
//! schemas in `params`.
//!
//! Invariant: a token this bridge has bound is always sent with the same fingerprint, so a
//! wait passes the hub's binding check that init or select passed.

mod params;
pub mod sentences;
mod wait;

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use rmcp::{
    ServerHandler,
    handler::server::{router::tool::ToolRouter, wrapper::Parameters},
    model::{
        CallToolResult, CustomRequest, CustomResult, ErrorData, Implementation, ServerCapabilities,
        ServerConfig,
    },
    service::{NotificationContext, RequestContext, RoleServer},
    tool, tool_handler, tool_router,
};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::{config::Config, delivery::Delivery, hub_client::HubClient};
use params::{InitOutput, MergeOutput, SelectOutput, output_schema};
pub use params::{InitParams, MergeParams, SelectParams, WaitParams};
use sentences::{hub_error_for_schema, keep_going, success};
pub use wait::register_request_id;

/// How long the client has to answer `roots/list`.
const ROOTS_TIMEOUT: Duration = Duration::from_secs(3);

/// What this bridge last saw bound to a token: the wait uses the same fingerprint.
#[derive(Debug, Clone)]
struct KnownBinding {
    workspace: String,
    title: String,
}

/// How a bridge waits and whom it names as the caller: from the environment for the stdio
/// bridge, from the connection for the hub's `/mcp`.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The caller's host in every binding.
    pub host_ip: String,
    /// `HOLDLINE_MAX_WAIT_SEC`: `Some(None)` = no limit of the bridge's own.
    pub max_wait: Option<Option<Duration>>,
    /// The client's own tool timeout when it tells its servers (`MCP_TOOL_TIMEOUT`).
    pub tool_timeout: Option<Duration>,
    /// How long one long poll at the hub is held.
    pub poll_hold: Duration,
    /// The workspace when neither the argument nor the client's roots name one; `None`:
    /// the working directory (a bridge the IDE started in its project). The hub's is not
    /// the agent's, so it names one.
    pub fallback_workspace: Option<String>,
    /// The client reaches these tools over HTTP (the hub's `/mcp`): some clients time
    /// HTTP calls differently (see `limits`).
    pub over_http: bool,
}

impl From<&Config> for Settings {
    fn from(config: &Config) -> Settings {
        Settings {
            host_ip: config.host_ip.clone(),
            max_wait: config.max_wait,
            tool_timeout: config.tool_timeout,
            poll_hold: config.poll_hold,
            fallback_workspace: None,
            over_http: false,
        }
    }
}

/// The MCP server: one per stdio connection, or one per `/mcp` session of the hub.
#[derive(Clone)]
pub struct Bridge {
    hub: HubClient,
    delivery: Delivery,
    host_ip: String,
    max_wait: Option<Option<Duration>>,
    tool_timeout: Option<Duration>,
    poll_hold: Duration,
    fallback_workspace: Option<String>,
    over_http: bool,
    /// Token → binding; a std mutex, held only for a map operation.
    known: Arc<Mutex<HashMap<String, KnownBinding>>>,
    /// The workspace from the client's roots, once asked; cleared when the roots change.
    roots: Arc<Mutex<Option<Option<String>>>>,
    shutdown: CancellationToken,
    tool_router: ToolRouter<Bridge>,
}

impl Bridge {
    /// A bridge forwarding to `hub`; `shutdown` ends every wait (stdin closed, a signal).
    pub fn new(
        settings: &Settings,
        hub: HubClient,
        delivery: Delivery,
        shutdown: CancellationToken,
    ) -> Bridge {
        Bridge {
            hub,
            delivery,
            host_ip: settings.host_ip.clone(),
            max_wait: settings.max_wait,
            tool_timeout: settings.tool_timeout,
            poll_hold: settings.poll_hold,
            fallback_workspace: settings.fallback_workspace.clone(),
            over_http: settings.over_http,
            known: Arc::default(),
            roots: Arc::default(),
            shutdown,
            tool_router: Self::tool_router(),
        }
    }

    /// This bridge answering one caller: its calls go to `hub` (carrying the caller's
    /// credentials) and its bindings name `host_ip`; what it knows (bindings, deliveries,
    /// roots) is shared with `self`.
    pub fn for_caller(&self, hub: HubClient, host_ip: String) -> Bridge {
        Bridge {
            hub: hub.clone(),
            delivery: self.delivery.with_hub(hub),
            host_ip,
            ..self.clone()
        }
    }

    /// This bridge with the longest wait set as `HOLDLINE_MAX_WAIT_SEC` would set it
    /// (`Some(None)`: no limit of its own, as for a task, where no client timer runs).
    pub fn with_max_wait(&self, max_wait: Option<Option<Duration>>) -> Bridge {
        Bridge {
            max_wait,
            ..self.clone()
        }
    }

    /// The last reply id returned on `token` (part of a wait's hub request id).
    pub fn last_reply(&self, token: &str) -> String {
        self.delivery.last_reply(token)
    }

    /// Sets the last reply id of `token` as recorded elsewhere (a task's record), so the
    /// same message is the same hub request after a restart.
    pub fn restore_last_reply(&self, token: &str, reply_id: &str) {
        self.delivery.restore_last_reply(token, reply_id);
    }

    /// The reply `request`'s result returns, until that result is written.
    pub fn claimed_reply(
        &self,
        request: &rmcp::model::RequestId,
    ) -> Option<crate::delivery::ClaimedReply> {
        self.delivery.claimed(request)
    }

    /// The result of `request` will never reach the client: its reply is free for the
    /// next call (see [`Delivery::dropped`]).
    pub fn result_dropped(&self, request: &rmcp::model::RequestId) {
        self.delivery.dropped(request);
    }

    /// The result of `request` reached the client (see [`Delivery::written`]).
    pub fn result_written(&self, request: &rmcp::model::RequestId) {
        self.delivery.written(request);
    }

    /// The same bridge with its own roots: a new MCP session's client has its own.
    pub fn for_session(&self) -> Bridge {
        Bridge {
            roots: Arc::default(),
            ..self.clone()
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
        if let Some(ws) = &self.fallback_workspace {
            return ws.clone();
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
}

#[tool_router]
impl Bridge {
    #[tool(
        description = "Start or resume the holdline conversation for this IDE chat. Call it once at the start of every task (before any other work), with the chat's title as cursorTitle. It returns a token. From then on, never end your turn: at the end of every step call wait_for_user_input with that token and a short report, and continue with whatever the person replies.",
        output_schema = output_schema::<InitOutput>(),
        annotations(
            title = "Start or resume the conversation",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
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
                let resume = self.delivery.issue_resume(&a.token);
                let instruction = keep_going(&a.token, Some(&resume));
                let text = format!(
                    "Conversation {} ({}, status {}). Your token is {}. {instruction}",
                    if a.created { "created" } else { "resumed" },
                    a.binding_key,
                    a.status,
                    a.token,
                );
                let out = InitOutput {
                    token: a.token,
                    status: a.status,
                    created: a.created,
                    binding_key: a.binding_key,
                    resume,
                    instruction: instruction.clone(),
                };
                success(text, json!(out), &instruction)
            }
            Err(e) => hub_error_for_schema(&e, None),
        }
    }

    #[tool(
        description = "Switch this IDE chat to an existing holdline session by its token, for example one the person gave you. Fails with BINDING_REJECTED when the session belongs to another chat; then use init_conversation instead.",
        output_schema = output_schema::<SelectOutput>(),
        annotations(
            title = "Switch to a holdline session",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
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
                let resume = self.delivery.issue_resume(&a.token);
                let instruction = keep_going(&a.token, Some(&resume));
                let text = format!(
                    "Selected session {} (status {}). {instruction}",
                    a.token, a.status,
                );
                let out = SelectOutput {
                    token: a.token,
                    status: a.status,
                    resume,
                    instruction: instruction.clone(),
                };
                success(text, json!(out), &instruction)
            }
            Err(e) => hub_error_for_schema(&e, Some(&p.token)),
        }
    }

    #[tool(
        description = "Report what you just did and wait for the person's answer. Call this at the end of EVERY step instead of ending your turn; it blocks until the person replies (possibly a long time) and returns their reply, which may include images. Then do what the reply says and call this tool again. Every result gives a new `resume` value: pass it on your next call. If it returns \"no reply yet\", call it again at once with the same token, the same message and the new resume value.",
        annotations(
            title = "Wait for the person's reply",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            // Its whole world is the holdline hub (the person answers through it), as a
            // memory tool's is its store: closed. Codex asks before every call of a tool
            // that says otherwise.
            open_world_hint = false
        )
    )]
    async fn wait_for_user_input(
        &self,
        Parameters(p): Parameters<WaitParams>,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResult {
        self.wait(p, ctx).await
    }

    #[tool(
        description = "Merge one holdline session into another: the source's messages are appended to the target, the source closes and its bindings point to the target. Use the target token afterwards.",
        output_schema = output_schema::<MergeOutput>(),
        annotations(
            title = "Merge two holdline sessions",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = false
        )
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
                let resume = self.delivery.issue_resume(&a.token);
                let instruction = keep_going(&a.token, Some(&resume));
                let text = format!(
                    "Merged {} into {}. Use token {} from now on. {instruction}",
                    p.from_token, a.token, a.token,
                );
                let out = MergeOutput {
                    token: a.token,
                    merged_from: p.from_token,
                    status: "merged".into(),
                    resume,
                    instruction: instruction.clone(),
                };
                success(text, json!(out), &instruction)
            }
            // The hub's message names the session that is closed (source or target).
            Err(e) => {
                hub_error_for_schema(&e, Some(&merge_subject(&e, &p.from_token, &p.to_token)))
            }
        }
    }
}

/// Which of a merge's two sessions a failure is about: the one the hub's message names
/// first, else the target.
fn merge_subject(e: &crate::hub_client::HubError, from: &str, to: &str) -> String {
    if let crate::hub_client::HubError::Api { message, .. } = e {
        let at = |t: &str| message.find(t);
        match (at(from), at(to)) {
            (Some(f), Some(t)) if f < t => return from.to_owned(),
            (Some(_), None) => return from.to_owned(),
            _ => {}
        }
    }
    to.to_owned()
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Bridge {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        info.server_info = Implementation::new("holdline-mcp", env!("CARGO_PKG_VERSION"));
        info.instructions = Some(
            "holdline keeps this turn alive as a conversation with the person. Call init_conversation once at the start, then at the end of every step call wait_for_user_input with your token (and the resume value of its last result) instead of ending your turn, and do what the reply says.".to_owned(),
        );
        info
    }

    async fn on_roots_list_changed(&self, _context: NotificationContext<RoleServer>) {
        *self.roots.lock().expect("not poisoned") = None;
    }

    /// The stand-in for a client line over the limit (`line_cap`) gets a clear error.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        if request.method == crate::line_cap::OVERSIZED_METHOD {
            let bytes = request
                .params
                .as_ref()
                .and_then(|p| p["bytes"].as_u64())
                .unwrap_or_default();
            return Err(ErrorData::invalid_request(
                format!(
                    "The message was {} MiB, over the {} MiB holdline-mcp takes in one line: send a shorter one (a wait_for_user_input message must fit the hub's 1 MiB).",
                    bytes / (1024 * 1024),
                    crate::line_cap::MAX_LINE / (1024 * 1024) + 1
                ),
                None,
            ));
        }
        Err(ErrorData::new(
            rmcp::model::ErrorCode::METHOD_NOT_FOUND,
            request.method,
            None,
        ))
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
    fn a_merge_failure_names_the_session_the_hub_names() {
        let closed = |message: &str| crate::hub_client::HubError::Api {
            hub: "h".into(),
            status: 409,
            code: "SESSION_CLOSED".into(),
            message: message.into(),
        };
        let e = closed("session ct_a was merged into ct_b");
        assert_eq!(merge_subject(&e, "ct_a", "ct_b"), "ct_a");
        let e = closed("session ct_b is archived; restore it first");
        assert_eq!(merge_subject(&e, "ct_a", "ct_b"), "ct_b");
    }
}
