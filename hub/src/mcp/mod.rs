//! The hub's MCP endpoint `/mcp` (Streamable HTTP): the same tools the stdio bridge runs
//! ([`holdline_tools::Tools`]), whose hub calls go in process to this hub's agent routes
//! with the caller's credentials ([`in_process`]) — one implementation of the tools and
//! their wait rules, one of the agent rules, for both transports.
//!
//! Invariants: a `/mcp` call can do exactly what its credentials can do on the agent
//! routes; the host in a binding made here is the address the hub saw, never one the
//! caller reports.

mod call_stream;
mod calls;
mod handshake;
mod in_process;
mod mux;
mod sessions;
mod tasks;

pub use sessions::Sessions;

use std::{
    net::SocketAddr,
    sync::{
        Arc,
        atomic::{AtomicI64, Ordering},
    },
};

use axum::{
    body::Body,
    extract::{ConnectInfo, Request},
    http::{StatusCode, header},
    response::{IntoResponse, Response},
};
use futures::{
    FutureExt,
    future::{Either, ready},
};
use holdline_contract::routes;
use holdline_tools::{
    Hub, Roots, Settings, Tools, Transport, WorkspaceFallback, delivery::Delivery, limits::MaxWait,
    server::DEFAULT_POLL_HOLD,
};
use rmcp::{
    ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CancelTaskParams, CustomRequest, CustomResult,
        ErrorData, GetTaskParams, GetTaskResult, Implementation, ListToolsResult, NumberOrString,
        PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    },
    service::{NotificationContext, RequestContext, RoleServer},
    transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService},
};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use tokio_util::{sync::CancellationToken, task::TaskTracker};
use tower::ServiceExt;

use crate::api::{AppState, guard::Caller};
use call_stream::StreamEnded;
use in_process::InProcess;
use tasks::Tasks;

/// The largest `/mcp` request body: a `wait_for_user_input` message fits the hub's 1 MiB
/// JSON limit, and the JSON-RPC envelope around it gets room of its own.
pub const MCP_BODY_LIMIT: usize = routes::JSON_LIMIT + 64 * 1024;

/// A body over [`MCP_BODY_LIMIT`] but at most this long is read to its end, and
/// dropped, before the 413: a client still sending it would otherwise see its
/// connection reset instead of the answer. A longer one is refused at once.
const DRAIN_LIMIT: u64 = 16 * 1024 * 1024;

/// The request's body, at most [`MCP_BODY_LIMIT`]; past it, the rest is read
/// and dropped (up to [`DRAIN_LIMIT`]) and the answer is `TOO_LARGE`.
async fn read_body(mut body: axum::body::Body) -> Result<axum::body::Bytes, Refusal> {
    use http_body_util::BodyExt as _;
    let mut kept = Vec::new();
    let mut seen: u64 = 0;
    while let Some(frame) = body.frame().await {
        let Ok(frame) = frame else {
            return Err(Refusal::too_large());
        };
        let Some(data) = frame.data_ref() else {
            continue;
        };
        seen += data.len() as u64;
        if seen > DRAIN_LIMIT {
            break;
        }
        if seen <= MCP_BODY_LIMIT as u64 {
            kept.extend_from_slice(data);
        }
    }
    if seen > MCP_BODY_LIMIT as u64 {
        return Err(Refusal::too_large());
    }
    Ok(kept.into())
}

/// The workspace of a binding whose agent named none (no argument, no roots): the
/// hub's own directory is not the agent's.
pub const FALLBACK_WORKSPACE: &str = "remote agent";

/// The header that names an MCP session.
const SESSION_HEADER: &str = routes::MCP_SESSION_ID;

/// rmcp's Streamable HTTP service as `/mcp` runs it.
type Service = StreamableHttpService<RemoteAgent, Sessions>;

/// The `/mcp` endpoint: rmcp's Streamable HTTP service over one [`RemoteAgent`], which
/// serves every session's requests on one loop ([`mux`]) after each session's own
/// `initialize` ([`handshake`]); a stateless 2026-07-28 request gets a loop of its own.
#[derive(Clone)]
pub struct McpEndpoint {
    service: Service,
    sessions: Arc<Sessions>,
    /// The loop every session's requests share and the idle sessions' end: both end with
    /// the hub's stop, and hold the hub's state until they have.
    running: TaskTracker,
}

impl McpEndpoint {
    /// An endpoint whose tools call the agent routes of `app` in process, with `sessions`
    /// as its MCP sessions; `stop` ends every session and wait when the hub stops.
    pub async fn new(
        app: AppState,
        sessions: Arc<Sessions>,
        stop: CancellationToken,
    ) -> McpEndpoint {
        let settings = Settings {
            // Set per call from the connection; never the hub's own.
            host_ip: String::new(),
            // A remote agent is named by its key; the hub cannot know its machine.
            host_name: None,
            max_wait: MaxWait::ClientDefault,
            tool_timeout: None,
            poll_hold: DEFAULT_POLL_HOLD,
            workspace_fallback: WorkspaceFallback::Named(FALLBACK_WORKSPACE.to_owned()),
            transport: Transport::Http,
            // The hub cannot read a remote agent's workspace.
            share_changes: false,
        };
        // The bookkeeping all remote agents share acks in process as the hub itself: an
        // ack only says a reply reached its agent.
        let hub_itself = Hub::new(Arc::new(InProcess::for_hub(app.clone())));
        let delivery = Delivery::new(hub_itself.clone());
        let calls = Arc::new(AtomicI64::new(1));
        let hub = &app.hub;
        let tasks = Tasks::open(
            hub.store().clone(),
            calls.clone(),
            hub.config().wait_grace,
            &hub.config().mcp,
        );
        tasks.ack_delivered(hub).await;
        let template = RemoteAgent {
            tools: Tools::new(&settings, hub_itself, delivery, stop.child_token()),
            app,
            calls,
            tasks,
        };
        let config = StreamableHttpServerConfig::default()
            // The hub's front door checks Host and Origin for every route, this one too.
            .disable_allowed_hosts()
            .disable_allowed_origins()
            .with_max_request_body_bytes(MCP_BODY_LIMIT)
            // No priming event (`data:` empty, `id`, `retry`) before a stream's first
            // message: Gemini CLI's SDK parses it as JSON, fails and disconnects. Without
            // it there is no SSE resumption, which a dropped call does not need (the
            // `resume` rule gives the reply again).
            .with_sse_retry(None)
            // A closed connection shows only when the hub writes to it: a comment line
            // every 2 s finds a client gone mid-wait within 2 s (see `dropped_stream`),
            // inside the 3 s grace the tests give (measured: 5 s left opencode, Continue
            // and Gemini CLI waiting past it).
            .with_sse_keep_alive(Some(SSE_KEEP_ALIVE))
            .with_cancellation_token(stop.clone());
        let running = TaskTracker::new();
        running.spawn(sessions.clone().end_idle(stop.clone()));
        sessions.serve(mux::Mux::start(
            template.clone(),
            stop.child_token(),
            &running,
        ));
        running.close();
        let service =
            StreamableHttpService::new(move || Ok(template.clone()), sessions.clone(), config);
        McpEndpoint {
            service,
            sessions,
            running,
        }
    }

    /// Once the hub's stop has ended `/mcp`'s own tasks (the store is free of them).
    pub async fn stopped(&self) {
        self.running.wait().await;
    }

    /// The `/mcp` route: every method, the caller's credential checked first.
    pub fn route(self) -> axum::routing::MethodRouter<AppState> {
        axum::routing::any(
            move |axum::extract::State(app): axum::extract::State<AppState>, request: Request| {
                let endpoint = self.clone();
                async move {
                    let caller = check_caller(&app, &request);
                    endpoint.answer(caller, request).await
                }
            },
        )
    }

    /// Answers one `/mcp` request: the caller's credentials, the body's size and JSON, the
    /// session's owner and room for a new one first, each refusal a JSON-RPC error with one
    /// sentence, then rmcp.
    pub async fn answer(&self, caller: Result<Caller, Refusal>, request: Request) -> Response {
        let caller = match caller {
            Ok(caller) => caller,
            Err(refusal) => return refusal.into_response(),
        };
        if request.method() == axum::http::Method::GET {
            return Refusal::no_event_stream().into_response();
        }
        // The tools' calls go to the agent routes as this caller.
        let mut request = request;
        request.extensions_mut().insert(caller.clone());
        let declared = request
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > DRAIN_LIMIT) {
            return Refusal::too_large().into_response();
        }
        let (parts, body) = request.into_parts();
        let bytes = match read_body(body).await {
            Ok(bytes) => bytes,
            Err(refusal) => return refusal.into_response(),
        };
        let message = match (parts.method == axum::http::Method::POST).then(|| parse(&bytes)) {
            Some(Err(refusal)) => return refusal.into_response(),
            Some(Ok(message)) => Some(message),
            None => None,
        };
        let opening = match self
            .admit_session(&caller, &parts.headers, message.as_ref())
            .await
        {
            Ok(opening) => opening,
            Err(refusal) => return refusal.into_response(),
        };
        drop(message);
        let request = Request::from_parts(parts, Body::from(bytes));
        let response = self.service.clone().oneshot(request).await;
        let Ok(response) = response;
        if let Some(opening) = opening
            && let Some(id) = response.headers().get(SESSION_HEADER)
        {
            opening.opened(id.to_str().unwrap_or_default());
        }
        if response.status() == StatusCode::PAYLOAD_TOO_LARGE {
            return Refusal::too_large().into_response();
        }
        response.map(Body::new)
    }
}

impl McpEndpoint {
    /// The session side of a request from `caller`: a session it names must be one
    /// `caller` opened (any other is as unknown as one that never was); an `initialize`
    /// without one gets room for a new session (answered, to be told the new id).
    async fn admit_session(
        &self,
        caller: &Caller,
        headers: &axum::http::HeaderMap,
        message: Option<&serde_json::Value>,
    ) -> Result<Option<sessions::Opening>, Refusal> {
        match headers.get(SESSION_HEADER) {
            Some(id)
                if self
                    .sessions
                    .answers(id.to_str().unwrap_or_default(), caller) =>
            {
                Ok(None)
            }
            Some(_) => Err(Refusal::unknown_session()),
            None if message.is_some_and(|m| m["method"] == "initialize") => self
                .sessions
                .reserve(caller)
                .map(Some)
                .map_err(Refusal::full),
            None => Ok(None),
        }
    }
}

/// How long a call's answer may take to leave on its stream before its reply is left
/// unacked for the agent's next call.
const ANSWER_WRITE_LIMIT: std::time::Duration = std::time::Duration::from_secs(20);

/// How often an open `/mcp` event stream gets a keep-alive comment.
pub const SSE_KEEP_ALIVE: std::time::Duration = std::time::Duration::from_secs(2);

/// Who made a `/mcp` call, as the tools read it: put in the call's extensions in place of
/// its HTTP request's head (the head's headers and extensions were most of what a waiting
/// call kept), for as long as the call runs.
#[derive(Clone, Debug)]
pub(crate) struct McpCaller {
    who: Caller,
    /// The address the hub saw.
    peer: SocketAddr,
    /// What `HOLDLINE_MAX_WAIT_SEC` is to a stdio bridge, sent by the entry `install`
    /// writes where it raised the client's timeout.
    max_wait: MaxWait,
    /// The SHA-256 of the request's credential: whose a task is.
    credential: [u8; 32],
    /// Fires once the call's answer left the hub (a call on a session only).
    ended: Option<StreamEnded>,
}

impl McpCaller {
    /// The caller of the request whose head is `parts` (`None` without the caller the
    /// guard sets or the address the server sets).
    fn of(parts: &axum::http::request::Parts, ended: Option<StreamEnded>) -> Option<McpCaller> {
        let header = |name: &str| parts.headers.get(name).map(|v| v.as_bytes());
        Some(McpCaller {
            who: parts.extensions.get::<Caller>()?.clone(),
            peer: parts.extensions.get::<ConnectInfo<SocketAddr>>()?.0,
            max_wait: header(routes::MAX_WAIT_HEADER)
                .and_then(|v| std::str::from_utf8(v).ok())
                .and_then(MaxWait::parse)
                .unwrap_or_default(),
            credential: Sha256::digest(header(header::AUTHORIZATION.as_str()).unwrap_or_default())
                .into(),
            ended,
        })
    }

    /// The caller of the request with `extensions`: a session's call has it, a request
    /// outside any session (2026-07-28, stateless) its HTTP request's head.
    fn in_request(extensions: &rmcp::model::Extensions) -> Option<McpCaller> {
        match extensions.get::<McpCaller>() {
            Some(caller) => Some(caller.clone()),
            None => McpCaller::of(extensions.get::<axum::http::request::Parts>()?, None),
        }
    }

    /// Whose a task is: the credential's SHA-256, in hex.
    pub(crate) fn owner(&self) -> String {
        hex::encode(self.credential)
    }
}

/// Why `/mcp` refused a request before MCP: the HTTP status and a JSON-RPC error body.
#[derive(Debug)]
pub struct Refusal {
    status: StatusCode,
    code: i32,
    message: String,
}

impl Refusal {
    /// Wrong, missing or revoked credentials.
    pub fn unauthorized(message: impl Into<String>) -> Refusal {
        Refusal {
            status: StatusCode::UNAUTHORIZED,
            code: -32001,
            message: message.into(),
        }
    }

    /// A session id that is not open, or that another credential opened: the same answer,
    /// so a session's existence is never revealed to others.
    fn unknown_session() -> Refusal {
        Refusal {
            status: StatusCode::NOT_FOUND,
            code: -32001,
            message: "SESSION_NOT_FOUND: no such MCP session (it ended or never was); start a new one with initialize".into(),
        }
    }

    fn full(full: sessions::Full) -> Refusal {
        Refusal {
            status: StatusCode::SERVICE_UNAVAILABLE,
            code: -32000,
            message: full.message(),
        }
    }

    /// A body that is not JSON.
    fn parse_error(e: &serde_json::Error) -> Refusal {
        Refusal {
            status: StatusCode::BAD_REQUEST,
            code: -32700,
            message: format!("PARSE_ERROR: the body is not JSON ({e})"),
        }
    }

    /// JSON that is not one JSON-RPC message MCP knows.
    fn invalid_request(e: &serde_json::Error) -> Refusal {
        Refusal {
            status: StatusCode::BAD_REQUEST,
            code: -32600,
            message: format!("INVALID_REQUEST: the body is not an MCP JSON-RPC message ({e})"),
        }
    }

    /// A GET: the hub sends nothing outside a request's own stream (every message of a
    /// call rides the call's stream), so it offers no standalone stream, as MCP allows —
    /// one that stayed open would hold a connection per agent for nothing.
    fn no_event_stream() -> Refusal {
        Refusal {
            status: StatusCode::METHOD_NOT_ALLOWED,
            code: -32600,
            message: "METHOD_NOT_ALLOWED: the hub offers no standalone event stream; each request's messages come on its own response".into(),
        }
    }

    fn too_large() -> Refusal {
        Refusal {
            status: StatusCode::PAYLOAD_TOO_LARGE,
            code: -32600,
            message: format!(
                "TOO_LARGE: an MCP request to the hub is at most {} KiB; send a shorter message",
                MCP_BODY_LIMIT / 1024
            ),
        }
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let body = serde_json::json!({
            "jsonrpc": "2.0",
            "id": null,
            "error": {"code": self.code, "message": self.message},
        });
        let mut response = (self.status, axum::Json(body)).into_response();
        if self.status == StatusCode::METHOD_NOT_ALLOWED {
            response.headers_mut().insert(
                header::ALLOW,
                header::HeaderValue::from_static("POST, DELETE"),
            );
        }
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static("Bearer realm=\"holdline\""),
            );
        }
        response
    }
}

/// The server of every MCP session: the tools, re-aimed per call at the caller and the
/// caller's session (its roots).
#[derive(Clone)]
struct RemoteAgent {
    tools: Tools,
    app: AppState,
    /// Request ids unique in this hub: the shared delivery bookkeeping is keyed by them,
    /// and every client numbers its own requests from 0.
    calls: Arc<AtomicI64>,
    tasks: Tasks,
}

impl RemoteAgent {
    /// The tools with the roots of the session `extensions` are of (no roots known outside
    /// any session).
    fn session_tools(&self, extensions: &rmcp::model::Extensions) -> Tools {
        let roots = extensions.get::<Roots>().cloned().unwrap_or_default();
        self.tools.with_roots(&roots)
    }

    /// The tools answering the caller of `ctx`'s HTTP request: their hub calls carry the
    /// request's credential and their bindings the address the hub saw.
    fn tools_for(&self, ctx: &RequestContext<RoleServer>) -> Result<Tools, ErrorData> {
        let caller = McpCaller::in_request(&ctx.extensions)
            .ok_or_else(|| ErrorData::internal_error("the caller is missing", None))?;
        let hub = Hub::new(Arc::new(InProcess::for_caller(
            self.app.clone(),
            caller.who,
            caller.peer,
        )));
        let host_ip = caller.peer.ip().to_canonical().to_string();
        Ok(self
            .session_tools(&ctx.extensions)
            .for_caller(hub, host_ip)
            .with_max_wait(caller.max_wait))
    }
}

/// What follows a call's answer, which rmcp writes to the caller's stream from here. On a
/// session the reply is acked once the stream ended, so a hub killed before the answer
/// left keeps the reply queued; an ack lost after it is made up by the agent's next call,
/// whose `resume` names the reply. A stream that never ends frees the reply for the next
/// call.
fn after_answer(tools: Tools, id: NumberOrString, ended: Option<StreamEnded>) {
    match ended {
        Some(ended) => {
            tokio::spawn(async move {
                if ended.within(ANSWER_WRITE_LIMIT).await {
                    tools.result_written(&id);
                }
            });
        }
        None => tools.result_written(&id),
    }
}

impl ServerHandler for RemoteAgent {
    fn get_info(&self) -> ServerConfig {
        let mut info = self.tools.get_info();
        info.capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tasks()
            .build();
        info.server_info = Implementation::new("holdline-hub", env!("CARGO_PKG_VERSION"));
        info
    }

    /// Made of combinators, not an `async fn`: a waiting call's future is the wait's own,
    /// with nothing of the request kept beside it.
    fn call_tool(
        &self,
        request: CallToolRequestParams,
        mut ctx: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<CallToolResponse, ErrorData>> + Send + '_ {
        let tools = match self.tools_for(&ctx) {
            Ok(tools) => tools,
            Err(e) => return Either::Right(ready(Err(e)).boxed()),
        };
        let waits = request.name == holdline_contract::WAIT_TOOL;
        if waits && tasks::client_does_tasks(&ctx) {
            return Either::Right(self.tasks.start(tools, request, ctx).boxed());
        }
        let id = NumberOrString::Number(self.calls.fetch_add(1, Ordering::Relaxed));
        ctx.id = id.clone();
        let ended = ctx
            .extensions
            .get::<McpCaller>()
            .and_then(|a| a.ended.clone());
        let answered = tools.clone();
        // The wait straight, not through the router: a waiting call keeps only its future.
        let call = if waits {
            Either::Left(
                tools
                    .call_wait(request.arguments, ctx)
                    .map(|result| Ok(result.into())),
            )
        } else {
            Either::Right(async move { tools.call_tool(request, ctx).await }.boxed())
        };
        Either::Left(call.map(move |answer| {
            after_answer(answered, id, ended);
            answer
        }))
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let tools = self.tools_for(&ctx)?;
        self.tasks.get(&request.task_id, tools, ctx)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks.cancel(&request.task_id, &ctx).await
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.tools.list_tools(request, ctx).await
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.get_tool(name)
    }

    async fn on_roots_list_changed(&self, ctx: NotificationContext<RoleServer>) {
        self.session_tools(&ctx.extensions)
            .on_roots_list_changed(ctx)
            .await
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        self.tools.on_custom_request(request, ctx).await
    }
}

/// The credentials check of `/mcp`: the same rule as every agent route (the secret, a
/// panel login or a live agent key).
pub fn check_caller(app: &crate::api::AppState, request: &Request) -> Result<Caller, Refusal> {
    crate::api::guard::Audience::Agent
        .admit(&app.credentials, request.headers())
        .map_err(|e| Refusal::unauthorized(e.message))
}

/// A POST body as one JSON-RPC message: not JSON is a parse error (-32700), JSON that is
/// not an MCP message an invalid request (-32600), both HTTP 400 (rmcp would answer 415
/// in plain text).
fn parse(body: &[u8]) -> Result<serde_json::Value, Refusal> {
    let value: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| Refusal::parse_error(&e))?;
    rmcp::model::ClientJsonRpcMessage::deserialize(&value)
        .map_err(|e| Refusal::invalid_request(&e))?;
    Ok(value)
}
