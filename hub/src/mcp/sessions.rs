//! `/mcp`'s MCP sessions: whose each one is, whether a call is in flight on it, and how
//! many a credential and the hub keep — rmcp's [`LocalSessionManager`] underneath.
//!
//! Invariants: a session answers only the credential that opened it (the guard's
//! [`Caller`]); any other sees the same 404 as an unknown id. A credential keeps at most
//! `per_credential` sessions and the hub `total`: opening one past either first closes the
//! longest-unused session with no call in flight (the credential's own, then anyone's), and
//! is refused when none is idle. A revoked key's sessions end with it. Ending a session
//! cancels its calls in flight (rmcp would let them run to their end).

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, MutexGuard},
    time::Instant,
};

use futures::{Stream, StreamExt};
use rmcp::{
    model::{ClientJsonRpcMessage, JsonRpcMessage, RequestId, ServerJsonRpcMessage},
    transport::streamable_http_server::{
        SessionId, SessionManager,
        session::{
            ServerSseMessage,
            local::{LocalSessionManager, LocalSessionManagerError},
        },
    },
};

use crate::api::guard::Caller;
use crate::config::McpLimits;
use crate::keys::KeyName;

/// How long a revoked key's session may go on writing the answers of its calls.
const DRAIN_LIMIT: std::time::Duration = std::time::Duration::from_secs(30);

/// Every open `/mcp` session of this hub.
pub struct Sessions {
    local: LocalSessionManager,
    table: Arc<Mutex<Table>>,
    per_credential: usize,
    total: usize,
}

#[derive(Default)]
struct Table {
    open: HashMap<SessionId, Entry>,
    /// Credentials whose `initialize` has room reserved and no session id yet.
    opening: Vec<Caller>,
}

struct Entry {
    /// `None` between rmcp making the session and its `initialize` answering: nobody
    /// holds its id yet.
    owner: Option<Caller>,
    last_used: Instant,
    /// Requests on it whose response stream is open (a tool call, a list).
    calls: u32,
    /// The ids of those requests: ending the session cancels them.
    requests: Vec<RequestId>,
}

/// Why a session could not be opened: every session counted against the cap has a call in
/// flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Full {
    /// The credential's own cap.
    Credential(usize),
    /// The hub's cap over every credential.
    Hub(usize),
}

impl Full {
    /// The sentence the client reads.
    pub fn message(self) -> String {
        match self {
            Full::Credential(n) => format!(
                "TOO_MANY_SESSIONS: these credentials already hold {n} MCP sessions, each with a call in flight; end one (DELETE /mcp) or wait for one to finish"
            ),
            Full::Hub(n) => format!(
                "TOO_MANY_SESSIONS: the hub already holds {n} MCP sessions, each with a call in flight; try again when one finishes"
            ),
        }
    }
}

impl Sessions {
    /// The hub's sessions, as `/mcp` configures rmcp's, capped by `limits`.
    pub fn for_hub(limits: &McpLimits) -> Sessions {
        Sessions::new(super::session_manager(), limits)
    }

    /// rmcp's sessions (`local`), capped by `limits`.
    pub fn new(local: LocalSessionManager, limits: &McpLimits) -> Sessions {
        Sessions {
            local,
            table: Arc::default(),
            per_credential: limits.sessions_per_credential,
            total: limits.sessions_total,
        }
    }

    /// Whether session `id` is open and `caller` opened it; if so it counts as used now.
    pub fn answers(&self, id: &str, caller: &Caller) -> bool {
        let mut table = lock(&self.table);
        match table.open.get_mut(id) {
            Some(e) if e.owner.as_ref() == Some(caller) => {
                e.last_used = Instant::now();
                true
            }
            _ => false,
        }
    }

    /// Room for one more session of `caller`, made by closing the longest-unused idle
    /// session first when a cap is reached. Hold the answer until the session's id is
    /// known ([`Opening::opened`]); dropped without it, the room is given back.
    pub async fn reserve(self: &Arc<Self>, caller: &Caller) -> Result<Opening, Full> {
        let closing = {
            let mut table = lock(&self.table);
            let mut closing = Vec::new();
            if table.held(|o| o == caller) >= self.per_credential {
                let id = table
                    .take_oldest_idle(|o| o == caller)
                    .ok_or(Full::Credential(self.per_credential))?;
                closing.push(id);
            }
            if table.held(|_| true) >= self.total {
                let id = table
                    .take_oldest_idle(|_| true)
                    .ok_or(Full::Hub(self.total))?;
                closing.push(id);
            }
            table.opening.push(caller.clone());
            closing
        };
        for id in closing {
            tracing::info!(session = %id, "MCP session closed to make room for a new one");
            self.close_quietly(&id).await;
        }
        Ok(Opening {
            sessions: self.clone(),
            caller: Some(caller.clone()),
        })
    }

    /// Ends every session opened with the agent key `key` (it was revoked); answers how many.
    /// An idle one ends now; one with a call in flight answers nobody from now on and ends
    /// when its calls have written their answers (the revoke ended their waits).
    pub async fn close_of_key(self: &Arc<Self>, key: &KeyName) -> usize {
        let (idle, busy) = {
            let mut table = lock(&self.table);
            let of_key: Vec<SessionId> = table
                .open
                .iter()
                .filter(|(_, e)| e.owner.as_ref().and_then(Caller::agent_key) == Some(key))
                .map(|(id, _)| id.clone())
                .collect();
            let (mut idle, mut busy) = (Vec::new(), Vec::new());
            for id in of_key {
                match table.open.get_mut(&id) {
                    Some(e) if e.calls > 0 => {
                        e.owner = None;
                        busy.push(id);
                    }
                    _ => {
                        table.open.remove(&id);
                        idle.push(id);
                    }
                }
            }
            (idle, busy)
        };
        for id in &idle {
            self.close_quietly(id).await;
        }
        let count = idle.len() + busy.len();
        for id in busy {
            tokio::spawn(self.clone().close_when_done(id));
        }
        count
    }

    /// Closes session `id` once no call is in flight on it (at most [`DRAIN_LIMIT`] on).
    async fn close_when_done(self: Arc<Self>, id: SessionId) {
        let started = Instant::now();
        while started.elapsed() < DRAIN_LIMIT
            && lock(&self.table).open.get(&id).is_some_and(|e| e.calls > 0)
        {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        lock(&self.table).open.remove(&id);
        self.close_quietly(&id).await;
    }

    async fn close_quietly(&self, id: &SessionId) {
        if let Err(e) = self.local.close_session(id).await {
            tracing::warn!(session = %id, error = %e, "closing an MCP session failed");
        }
    }

    fn touch(&self, id: &SessionId) {
        if let Some(e) = lock(&self.table).open.get_mut(id) {
            e.last_used = Instant::now();
        }
    }
}

impl Table {
    /// Sessions held by owners matching `whose`, those being opened included.
    fn held(&self, whose: impl Fn(&Caller) -> bool) -> usize {
        let open = self
            .open
            .values()
            .filter(|e| e.owner.as_ref().is_some_and(&whose))
            .count();
        open + self.opening.iter().filter(|c| whose(c)).count()
    }

    /// Removes and answers the longest-unused session with no call in flight of an owner
    /// matching `whose`.
    fn take_oldest_idle(&mut self, whose: impl Fn(&Caller) -> bool) -> Option<SessionId> {
        let id = self
            .open
            .iter()
            .filter(|(_, e)| e.calls == 0 && e.owner.as_ref().is_some_and(&whose))
            .min_by_key(|(_, e)| e.last_used)
            .map(|(id, _)| id.clone())?;
        self.open.remove(&id);
        Some(id)
    }
}

fn lock(table: &Mutex<Table>) -> MutexGuard<'_, Table> {
    // Map operations only: a poisoned lock holds consistent data.
    table.lock().unwrap_or_else(|p| p.into_inner())
}

/// Room reserved for one session of a credential (see [`Sessions::reserve`]).
pub struct Opening {
    sessions: Arc<Sessions>,
    caller: Option<Caller>,
}

impl Opening {
    /// The session `id` was made for this credential: from now on it answers only it.
    pub fn opened(mut self, id: &str) {
        let Some(caller) = self.caller.take() else {
            return;
        };
        let mut table = lock(&self.sessions.table);
        release(&mut table, &caller);
        if let Some(e) = table.open.get_mut(id) {
            e.owner = Some(caller);
            e.last_used = Instant::now();
        }
    }
}

impl Drop for Opening {
    fn drop(&mut self) {
        if let Some(caller) = self.caller.take() {
            release(&mut lock(&self.sessions.table), &caller);
        }
    }
}

fn release(table: &mut Table, caller: &Caller) {
    if let Some(i) = table.opening.iter().position(|c| c == caller) {
        table.opening.swap_remove(i);
    }
}

/// A request's response stream on a session: the session has a call in flight while it
/// lives.
struct InFlight {
    table: Arc<Mutex<Table>>,
    id: SessionId,
    request: Option<RequestId>,
}

impl InFlight {
    fn begin(
        table: &Arc<Mutex<Table>>,
        id: &SessionId,
        message: &ClientJsonRpcMessage,
    ) -> InFlight {
        let request = match message {
            JsonRpcMessage::Request(r) => Some(r.id.clone()),
            _ => None,
        };
        if let Some(e) = lock(table).open.get_mut(id) {
            e.calls += 1;
            e.last_used = Instant::now();
            e.requests.extend(request.clone());
        }
        InFlight {
            table: table.clone(),
            id: id.clone(),
            request,
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Some(e) = lock(&self.table).open.get_mut(&self.id) {
            e.calls = e.calls.saturating_sub(1);
            e.last_used = Instant::now();
            if let Some(at) = self
                .request
                .as_ref()
                .and_then(|r| e.requests.iter().position(|x| x == r))
            {
                e.requests.swap_remove(at);
            }
        }
    }
}

/// `notifications/cancelled` for `request`: what ending its session tells its call.
fn cancelled(request: &RequestId) -> Option<ClientJsonRpcMessage> {
    serde_json::from_value(serde_json::json!({
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": request, "reason": "the client ended the session"},
    }))
    .ok()
}

impl SessionManager for Sessions {
    type Error = LocalSessionManagerError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let (id, transport) = self.local.create_session().await?;
        lock(&self.table).open.insert(
            id.clone(),
            Entry {
                owner: None,
                last_used: Instant::now(),
                calls: 0,
                requests: Vec::new(),
            },
        );
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.local.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.local.has_session(id).await
    }

    /// Its calls in flight are cancelled first: rmcp would let them run to their end, and
    /// a wait would then stay open for the grace (Codex ends its session on Ctrl-C).
    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        let requests = lock(&self.table)
            .open
            .remove(id)
            .map(|e| e.requests)
            .unwrap_or_default();
        for message in requests.iter().filter_map(cancelled) {
            let _ = self.local.accept_message(id, message).await;
        }
        self.local.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let in_flight = InFlight::begin(&self.table, id, &message);
        let stream = self.local.create_stream(id, message).await?;
        Ok(stream.map(move |m| {
            let _held = &in_flight;
            m
        }))
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.touch(id);
        self.local.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        self.local.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.local.resume(id, last_event_id).await
    }
}

impl crate::api::KeyHolder for Sessions {
    fn end_key(
        self: Arc<Self>,
        key: KeyName,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = usize> + Send>> {
        Box::pin(async move { self.close_of_key(&key).await })
    }
}
