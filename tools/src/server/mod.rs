//! The four MCP tools (rmcp tool router) and the binding fingerprint they send: workspace
//! from the argument, else the client's roots, else the transport's fallback; the caller's
//! host. The wait loop is in `wait`, the sentences the agent reads in `sentences`, the
//! schemas in `params`.
//!
//! Invariant: a token these tools have bound is always sent with the same fingerprint, so
//! a wait passes the hub's binding check that init or select passed.

mod attachments;
mod image_files;
mod params;
pub mod sentences;
mod wait;

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use holdline_contract::{HubError, InitRequest, MergeRequest, SelectRequest};
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

pub use crate::limits::{MaxWait, Transport};
use crate::{delivery::Delivery, hub::Hub, workspace_changes::Git};
pub use attachments::Protected;
use params::{InitOutput, MergeOutput, SelectOutput, output_schema};
pub use params::{InitParams, MergeParams, SelectParams, WaitParams};
use sentences::{hub_error_for_schema, keep_going, success};
pub use wait::register_request_id;

/// One long poll at the hub, and the progress interval: the hub's default renewal.
pub const DEFAULT_POLL_HOLD: Duration = Duration::from_secs(10);

/// How long the client has to answer `roots/list`.
const ROOTS_TIMEOUT: Duration = Duration::from_secs(3);

/// What this bridge last saw bound to a token: the wait uses the same fingerprint.
#[derive(Debug, Clone)]
struct KnownBinding {
    workspace: String,
    title: String,
}

/// The name of the request a transport puts in place of a client line over its limit
/// (`params.bytes` says how long it was): the tools answer it with a clear error.
pub const OVERSIZED_METHOD: &str = "holdline/oversized";
/// The longest client line a stdio transport passes on: below rmcp's own 16 MiB limit,
/// so its limit never fires.
pub const MAX_LINE: usize = 16 * 1024 * 1024 - 4096;

/// Where a binding's workspace comes from when neither the argument nor the client's
/// roots name one.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum WorkspaceFallback {
    /// The working directory: a bridge the IDE started in its project.
    #[default]
    WorkingDirectory,
    /// This name: the hub's own directory is not a remote agent's.
    Named(String),
}

/// How the tools wait and whom they name as the caller: from the environment for the
/// stdio bridge, from the connection for the hub's `/mcp`.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The caller's host in every binding.
    pub host_ip: String,
    /// The caller's machine name, sent with every binding call for the panel.
    pub host_name: Option<String>,
    /// The person's longest wait.
    pub max_wait: MaxWait,
    /// The client's own tool timeout when it tells its servers (`MCP_TOOL_TIMEOUT`).
    pub tool_timeout: Option<Duration>,
    /// How long one long poll at the hub is held.
    pub poll_hold: Duration,
    pub workspace_fallback: WorkspaceFallback,
    pub transport: Transport,
    /// Each question carries the workspace's uncommitted git changes (stdio only: the
    /// bridge reads its own machine's workspace).
    pub share_changes: bool,
}

/// The folders one client's roots name, once asked (empty inside: it has none); cleared
/// when they change. One per stdio connection or `/mcp` session.
#[derive(Clone, Default)]
pub struct Roots(Arc<Mutex<Option<Vec<String>>>>);

impl Roots {
    /// The folders the roots gave, if they were asked since they last changed.
    fn cached(&self) -> Option<Vec<String>> {
        self.0.lock().expect("not poisoned").clone()
    }

    fn remember(&self, found: Vec<String>) {
        *self.0.lock().expect("not poisoned") = Some(found);
    }

    fn forget(&self) {
        *self.0.lock().expect("not poisoned") = None;
    }
}

/// The MCP server of the four tools: one per stdio connection, or one per `/mcp` session.
#[derive(Clone)]
pub struct Tools {
    hub: Hub,
    delivery: Delivery,
    host_ip: String,
    host_name: Option<String>,
    max_wait: MaxWait,
    tool_timeout: Option<Duration>,
    poll_hold: Duration,
    workspace_fallback: WorkspaceFallback,
    transport: Transport,
    /// Where this bridge's questions get their workspace changes from, when it shares them.
    changes: Option<Git>,
    /// Token → binding; a std mutex, held only for a map operation.
    known: Arc<Mutex<HashMap<String, KnownBinding>>>,
    /// The workspace from the client's roots, once asked; cleared when the roots change.
    roots: Roots,
    /// Register requests whose files the hub has.
    files_sent: attachments::FilesSent,
    /// What is never attached (the holdline home, files holding a credential).
    protected: Arc<attachments::Protected>,
    shutdown: CancellationToken,
    /// Shared: every session's and caller's copy routes the same four tools.
    tool_router: Arc<ToolRouter<Tools>>,
}

impl Tools {
    /// Tools calling `hub`; `shutdown` ends every wait (stdin closed, a signal).
    pub fn new(
        settings: &Settings,
        hub: Hub,
        delivery: Delivery,
        shutdown: CancellationToken,
    ) -> Tools {
        Tools {
            hub,
            delivery,
            host_ip: settings.host_ip.clone(),
            host_name: settings.host_name.clone(),
            max_wait: settings.max_wait,
            tool_timeout: settings.tool_timeout,
            poll_hold: settings.poll_hold,
            workspace_fallback: settings.workspace_fallback.clone(),
            transport: settings.transport,
            changes: (settings.share_changes && settings.transport == Transport::Stdio)
                .then(Git::default),
            known: Arc::default(),
            roots: Roots::default(),
            files_sent: attachments::FilesSent::default(),
            protected: Arc::default(),
            shutdown,
            tool_router: Arc::new(Self::router_for(settings.transport)),
        }
    }

    /// The four tools as `transport` offers them: over `/mcp` no file of the agent's
    /// machine can be read, so `wait_for_user_input` does not offer `attachments` there
    /// (a model that follows the schema never loses a round trip to the refusal).
    fn router_for(transport: Transport) -> ToolRouter<Tools> {
        let mut router = Self::tool_router();
        if transport == Transport::Http
            && let Some(route) = router.map.get_mut(holdline_contract::WAIT_TOOL)
        {
            let mut schema = (*route.attr.input_schema).clone();
            if let Some(serde_json::Value::Object(properties)) = schema.get_mut("properties") {
                properties.remove("attachments");
            }
            route.attr.input_schema = Arc::new(schema);
        }
        router
    }

    /// These tools answering one caller: their calls go to `hub` (carrying the caller's
    /// credentials) and their bindings name `host_ip`; what they know (bindings,
    /// deliveries, roots) is shared with `self`.
    pub fn for_caller(&self, hub: Hub, host_ip: String) -> Tools {
        Tools {
            hub: hub.clone(),
            delivery: self.delivery.with_hub(hub),
            host_ip,
            ..self.clone()
        }
    }

    /// These tools with the person's longest wait set to `max_wait` (a remote entry's
    /// header; [`MaxWait::Unlimited`] for a task, where no client timer runs).
    pub fn with_max_wait(&self, max_wait: MaxWait) -> Tools {
        Tools {
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

    /// These tools never attaching what `protected` names (the bridge's holdline home and
    /// credentials).
    pub fn with_protected(self, protected: Protected) -> Tools {
        Tools {
            protected: Arc::new(protected),
            ..self
        }
    }

    /// The same tools with `roots` as the client's: each MCP session's client has its own.
    pub fn with_roots(&self, roots: &Roots) -> Tools {
        Tools {
            roots: roots.clone(),
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
        match &self.workspace_fallback {
            WorkspaceFallback::Named(ws) => ws.clone(),
            WorkspaceFallback::WorkingDirectory => std::env::current_dir()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
        }
    }

    /// The client's first root: its workspace.
    async fn roots_workspace(&self, ctx: &RequestContext<RoleServer>) -> Option<String> {
        self.root_folders(ctx).await.into_iter().next()
    }

    /// The folders whose files this client may attach: its roots when it gave some, else
    /// the bridge's working folder (the IDE starts it in the project); none over `/mcp`.
    async fn client_folders(&self, ctx: &RequestContext<RoleServer>) -> Vec<std::path::PathBuf> {
        let roots = self.root_folders(ctx).await;
        if !roots.is_empty() {
            return roots.into_iter().map(Into::into).collect();
        }
        match &self.workspace_fallback {
            WorkspaceFallback::Named(_) => Vec::new(),
            WorkspaceFallback::WorkingDirectory => std::env::current_dir().into_iter().collect(),
        }
    }

    // Roots are deprecated for protocols after 2025-11-25 but are what IDEs send today.
    #[allow(deprecated)]
    async fn root_folders(&self, ctx: &RequestContext<RoleServer>) -> Vec<String> {
        if let Some(cached) = self.roots.cached() {
            return cached;
        }
        let supports_roots =
            crate::client::client_capabilities(ctx).is_some_and(|c| c.roots.is_some());
        let found = if supports_roots {
            let asked = tokio::time::timeout(ROOTS_TIMEOUT, ctx.peer.list_roots()).await;
            match asked {
                Ok(Ok(result)) => result
                    .roots
                    .iter()
                    .filter_map(|r| file_uri_to_path(&r.uri))
                    .collect(),
                Ok(Err(e)) => {
                    tracing::debug!(error = %e, "roots/list failed");
                    Vec::new()
                }
                Err(_) => {
                    tracing::debug!("roots/list timed out");
                    Vec::new()
                }
            }
        } else {
            Vec::new()
        };
        self.roots.remember(found.clone());
        found
    }
}

#[tool_router]
impl Tools {
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
        let request = InitRequest {
            cursor_title: p.cursor_title.clone(),
            workspace: workspace.clone(),
            host_ip: self.host_ip.clone(),
            host_name: self.host_name.clone(),
            new_plan: p.new_plan.unwrap_or(false),
            plan_label: p.plan_label.filter(|s| !s.is_empty()),
            thread_id: p.thread_id.filter(|s| !s.is_empty()),
        };
        match self.hub.api().init(request).await {
            Ok(a) => {
                self.remember(&a.token, &workspace, &p.cursor_title);
                let resume = self.delivery.issue_resume(&a.token);
                let instruction = keep_going(&a.token, Some(&resume));
                let text = format!(
                    "Conversation {} ({}, status {}). Your token is {}. {instruction}",
                    if a.created { "created" } else { "resumed" },
                    a.binding_key,
                    a.status.as_str(),
                    a.token,
                );
                let out = InitOutput {
                    token: a.token,
                    status: a.status.as_str().to_owned(),
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
        let request = SelectRequest {
            token: p.token.clone(),
            cursor_title: p.cursor_title.clone(),
            workspace: workspace.clone(),
            host_ip: self.host_ip.clone(),
            host_name: self.host_name.clone(),
        };
        match self.hub.api().select(request).await {
            Ok(a) => {
                self.remember(&a.token, &workspace, &p.cursor_title);
                let resume = self.delivery.issue_resume(&a.token);
                let instruction = keep_going(&a.token, Some(&resume));
                let text = format!(
                    "Selected session {} (status {}). {instruction}",
                    a.token,
                    a.status.as_str(),
                );
                let out = SelectOutput {
                    token: a.token,
                    status: a.status.as_str().to_owned(),
                    resume,
                    instruction: instruction.clone(),
                };
                success(text, json!(out), &instruction)
            }
            Err(e) => hub_error_for_schema(&e, Some(&p.token)),
        }
    }

    #[tool(
        description = "Report what you just did and wait for the person's answer. Call this at the end of EVERY step instead of ending your turn; it blocks until the person replies (possibly a long time) and returns their reply, which may include images. Then do what the reply says and call this tool again. Every result gives a new `resume` value: pass it on your next call. If it returns \"no reply yet\", call it again at once with the same token, the same message and the new resume value. Whenever you ask the person to choose (A or B, which of these, yes or no), pass the answers as `options` (multiSelect for several) so they can pick with one tap.",
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
        self.clone().wait(p, ctx).await
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
        let request = MergeRequest {
            from_token: p.from_token.clone(),
            to_token: p.to_token.clone(),
            cursor_title: p.cursor_title.clone(),
            workspace: workspace.clone(),
            host_ip: self.host_ip.clone(),
        };
        match self.hub.api().merge(request).await {
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
fn merge_subject(e: &HubError, from: &str, to: &str) -> String {
    if let HubError::Api { message, .. } = e {
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
impl ServerHandler for Tools {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        info.server_info = Implementation::new("holdline-mcp", env!("CARGO_PKG_VERSION"));
        info.instructions = Some(
            "holdline keeps this turn alive as a conversation with the person. Call init_conversation once at the start, then at the end of every step call wait_for_user_input with your token (and the resume value of its last result) instead of ending your turn, and do what the reply says.".to_owned(),
        );
        info
    }

    async fn on_roots_list_changed(&self, _context: NotificationContext<RoleServer>) {
        self.roots.forget();
    }

    /// The stand-in for a client line over the limit (`line_cap`) gets a clear error.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        if request.method == OVERSIZED_METHOD {
            let bytes = request
                .params
                .as_ref()
                .and_then(|p| p["bytes"].as_u64())
                .unwrap_or_default();
            return Err(ErrorData::invalid_request(
                format!(
                    "The message was {} MiB, over the {} MiB holdline-mcp takes in one line: send a shorter one (a wait_for_user_input message must fit the hub's 1 MiB).",
                    bytes / (1024 * 1024),
                    MAX_LINE / (1024 * 1024) + 1
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
    fn attachments_are_offered_over_stdio_only() {
        let offered = |transport| {
            let router = Tools::router_for(transport);
            let wait = router
                .get(holdline_contract::WAIT_TOOL)
                .expect("the wait tool");
            wait.input_schema["properties"]
                .as_object()
                .expect("properties")
                .contains_key("attachments")
        };
        assert!(offered(Transport::Stdio));
        assert!(!offered(Transport::Http));
        let remote = Tools::router_for(Transport::Http);
        let wait = remote.get(holdline_contract::WAIT_TOOL).unwrap();
        assert!(wait.input_schema["properties"]["options"].is_object());
    }

    #[test]
    fn a_merge_failure_names_the_session_the_hub_names() {
        let closed = |message: &str| HubError::Api {
            hub: "h".into(),
            status: 409,
            code: holdline_contract::ErrorCode::SessionClosed,
            message: message.into(),
        };
        let e = closed("session ct_a was merged into ct_b");
        assert_eq!(merge_subject(&e, "ct_a", "ct_b"), "ct_a");
        let e = closed("session ct_b is archived; restore it first");
        assert_eq!(merge_subject(&e, "ct_a", "ct_b"), "ct_b");
    }
}
