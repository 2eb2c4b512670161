//! `/mcp`'s MCP sessions: whose each one is, whether a call is in flight on it, and how
//! many a credential and the hub keep — the session layer rmcp's Streamable HTTP service
//! runs on: each session's `initialize` goes to its own [`Handshake`], its requests to the
//! loop all sessions share ([`Mux`]).
//!
//! Invariants: a session answers only the credential that opened it (the guard's
//! [`Caller`]); any other sees the same 404 as an unknown id. A credential keeps at most
//! `per_credential` sessions and the hub `total`: opening one past either first closes the
//! longest-unused session with no call in flight (the credential's own, then anyone's), and
//! is refused when none is idle. A revoked key's sessions end with it, and a session with
//! no call in flight ends after [`SESSION_IDLE`] without a message. Ending a session
//! cancels its calls in flight (rmcp would let them run to their end).
//!
//! This layer replaces rmcp's `LocalSessionManager` for the memory of waiting remote agents:
//! why, the benchmark and the tests that keep it honest are in [`crate::transport`]'s doc.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, MutexGuard},
};

use futures::Stream;
use holdline_tools::Roots;
use rmcp::{
    model::{ClientJsonRpcMessage, ClientRequest, JsonRpcMessage, ServerJsonRpcMessage},
    transport::streamable_http_server::{SessionId, SessionManager, session::ServerSseMessage},
};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::McpCaller;
use super::call_stream::{CallStream, StreamEnded};
use super::handshake::{Handshake, HandshakeTransport};
use super::mux::{Client, Mux, Outgoing};
use crate::api::guard::Caller;
use holdline_core::config::McpLimits;
use holdline_core::keys::KeyName;
use holdline_store::lock::Unpoisoned as _;

/// How long a revoked key's session may go on writing the answers of its calls.
const DRAIN_LIMIT: std::time::Duration = std::time::Duration::from_secs(30);

/// How long an MCP session with no call in flight lives without a message. rmcp's default
/// (5 min) ended every wait past 5 minutes from a client that sends no progress token (a
/// wait sends nothing until it ends); 2 hours is above every limit the tools choose for
/// such a client (the longest, an installed entry's `Holdline-Max-Wait-Sec`, is 3,570 s),
/// and still bounds what a client that vanished without closing its session leaves behind.
pub const SESSION_IDLE: std::time::Duration = std::time::Duration::from_secs(2 * 3600);

/// How often sessions are checked for [`SESSION_IDLE`].
const IDLE_CHECK: std::time::Duration = std::time::Duration::from_secs(60);

/// Why a session could not take a message.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// No session has the id (it ended, or never was).
    #[error("the MCP session {0} is not open")]
    NotFound(SessionId),
    /// `/mcp` is not serving yet (its endpoint has not started the shared loop).
    #[error("the hub's MCP service is not running")]
    NotServing,
    /// `/mcp` answers a GET itself: the hub sends nothing outside a request's stream.
    #[error("the hub offers no standalone event stream")]
    NoStandaloneStream,
    /// The hub gives no event ids, so there is nothing to resume from.
    #[error("this hub keeps no MCP events to resume a stream from")]
    NoResumption,
    /// rmcp never answered `initialize`.
    #[error("the MCP session's initialize got no answer")]
    NotInitialized,
}

/// Every open `/mcp` session of this hub.
pub struct Sessions {
    /// What serves the sessions' requests: set once, when `/mcp` starts.
    mux: std::sync::OnceLock<Arc<Mux>>,
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
    /// Until its loop has ended and rmcp has closed the session for it (which is not the
    /// client's close).
    handshake: Option<Arc<Handshake>>,
    /// Who the client is, once its `initialize` said.
    client: Option<Arc<Client>>,
    /// Its client's roots, in the extensions of each of its messages to the shared loop.
    roots: Roots,
    /// `None` between rmcp making the session and its `initialize` answering: nobody
    /// holds its id yet.
    owner: Option<Caller>,
    last_used: Instant,
    /// Requests on it whose response stream is open (a tool call, a list).
    calls: u32,
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
    /// The hub's sessions, capped by `limits`.
    pub fn for_hub(limits: &McpLimits) -> Sessions {
        Sessions {
            mux: std::sync::OnceLock::new(),
            table: Arc::default(),
            per_credential: limits.sessions_per_credential,
            total: limits.sessions_total,
        }
    }

    /// Serves the sessions' requests with `mux`.
    pub fn serve(&self, mux: Arc<Mux>) {
        let _ = self.mux.set(mux);
    }

    fn mux(&self) -> Result<&Arc<Mux>, SessionError> {
        self.mux.get().ok_or(SessionError::NotServing)
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
    pub fn reserve(self: &Arc<Self>, caller: &Caller) -> Result<Opening, Full> {
        let closing = {
            let mut table = lock(&self.table);
            let mut closing = Vec::new();
            if table.held(|o| o == caller) >= self.per_credential {
                let oldest = table
                    .take_oldest_idle(|o| o == caller)
                    .ok_or(Full::Credential(self.per_credential))?;
                closing.push(oldest);
            }
            if table.held(|_| true) >= self.total {
                let oldest = table
                    .take_oldest_idle(|_| true)
                    .ok_or(Full::Hub(self.total))?;
                closing.push(oldest);
            }
            table.opening.push(caller.clone());
            closing
        };
        for (id, entry) in closing {
            tracing::info!(session = %id, "MCP session closed to make room for a new one");
            self.close_entry(&id, entry);
        }
        Ok(Opening {
            sessions: self.clone(),
            caller: Some(caller.clone()),
        })
    }

    /// Ends every session opened with the agent key `key` (it was revoked); answers how many.
    /// An idle one ends now; one with a call in flight answers nobody from now on and ends
    /// when its calls have written their answers (the revoke ended their waits).
    pub fn close_of_key(self: &Arc<Self>, key: &KeyName) -> usize {
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
                    _ => idle.extend(table.open.remove(&id).map(|e| (id, e))),
                }
            }
            (idle, busy)
        };
        let count = idle.len() + busy.len();
        for (id, entry) in idle {
            self.close_entry(&id, entry);
        }
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
        self.end(&id);
    }

    /// Ends the sessions with no call in flight and no message for [`SESSION_IDLE`], every
    /// [`IDLE_CHECK`] until `stop`.
    pub async fn end_idle(self: Arc<Self>, stop: CancellationToken) {
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(IDLE_CHECK) => {}
            }
            let idle: Vec<(SessionId, Entry)> = {
                let mut table = lock(&self.table);
                let ids: Vec<SessionId> = table
                    .open
                    .iter()
                    .filter(|(_, e)| e.calls == 0 && e.last_used.elapsed() >= SESSION_IDLE)
                    .map(|(id, _)| id.clone())
                    .collect();
                ids.into_iter()
                    .filter_map(|id| table.open.remove(&id).map(|e| (id, e)))
                    .collect()
            };
            if !idle.is_empty() {
                tracing::info!(sessions = idle.len(), "idle MCP sessions ended");
            }
            for (id, entry) in idle {
                self.close_entry(&id, entry);
            }
        }
    }

    /// Ends session `id`, if it is open.
    fn end(&self, id: &SessionId) {
        let entry = lock(&self.table).open.remove(id);
        if let Some(entry) = entry {
            self.close_entry(id, entry);
        }
    }

    /// Ends the session `entry`: its calls in flight are cancelled (rmcp would let them run
    /// to their end), its handshake and streams end.
    fn close_entry(&self, id: &SessionId, entry: Entry) {
        if let Some(handshake) = &entry.handshake {
            handshake.close();
        }
        if let Ok(mux) = self.mux() {
            mux.end_session(id);
        }
    }

    /// Session `id`'s entry, counted as used now, through `read`.
    fn touch<T>(
        &self,
        id: &SessionId,
        read: impl FnOnce(&mut Entry) -> T,
    ) -> Result<T, SessionError> {
        let mut table = lock(&self.table);
        let entry = table
            .open
            .get_mut(id)
            .ok_or_else(|| SessionError::NotFound(id.clone()))?;
        entry.last_used = Instant::now();
        Ok(read(entry))
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
    fn take_oldest_idle(&mut self, whose: impl Fn(&Caller) -> bool) -> Option<(SessionId, Entry)> {
        let id = self
            .open
            .iter()
            .filter(|(_, e)| e.calls == 0 && e.owner.as_ref().is_some_and(&whose))
            .min_by_key(|(_, e)| e.last_used)
            .map(|(id, _)| id.clone())?;
        let entry = self.open.remove(&id)?;
        Some((id, entry))
    }
}

fn lock(table: &Mutex<Table>) -> MutexGuard<'_, Table> {
    // Map operations only: a poisoned lock holds consistent data.
    table.lock_unpoisoned()
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
}

impl InFlight {
    fn begin(table: &Arc<Mutex<Table>>, id: &SessionId) -> InFlight {
        if let Some(e) = lock(table).open.get_mut(id) {
            e.calls += 1;
            e.last_used = Instant::now();
        }
        InFlight {
            table: table.clone(),
            id: id.clone(),
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Some(e) = lock(&self.table).open.get_mut(&self.id) {
            e.calls = e.calls.saturating_sub(1);
            e.last_used = Instant::now();
        }
    }
}

/// Who the client of `initialize` `message` is.
fn client_of(message: &ClientJsonRpcMessage) -> Option<Arc<Client>> {
    let JsonRpcMessage::Request(request) = message else {
        return None;
    };
    let ClientRequest::InitializeRequest(init) = &request.request else {
        return None;
    };
    Some(Arc::new(Client {
        info: init.params.client_info.clone(),
        capabilities: init.params.capabilities.clone(),
    }))
}

impl SessionManager for Sessions {
    type Error = SessionError;
    type Transport = HandshakeTransport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let id: SessionId = uuid::Uuid::new_v4().to_string().into();
        let (handshake, transport) = Handshake::open();
        lock(&self.table).open.insert(
            id.clone(),
            Entry {
                handshake: Some(handshake),
                client: None,
                roots: Roots::default(),
                owner: None,
                last_used: Instant::now(),
                calls: 0,
            },
        );
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        let client = client_of(&message);
        let handshake = self.touch(id, |e| {
            e.client = client;
            e.handshake.clone()
        })?;
        let answer = match handshake {
            Some(handshake) => handshake.initialize(message).await,
            None => None,
        };
        if answer.is_none() {
            self.end(id);
        }
        answer.ok_or(SessionError::NotInitialized)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(lock(&self.table).open.contains_key(id))
    }

    /// Its calls in flight are cancelled first: rmcp would let them run to their end, and
    /// a wait would then stay open for the grace (Codex ends its session on Ctrl-C). rmcp
    /// also closes a session when its loop ends: for a handshake's loop that is not the
    /// session's end.
    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        let handshake_ended = self
            .touch(id, |e| e.handshake.take_if(|h| h.ended()).is_some())
            .unwrap_or(false);
        if !handshake_ended {
            self.end(id);
        }
        Ok(())
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let mux = self.mux()?;
        let (client, roots) = self.touch(id, |e| (e.client.clone(), e.roots.clone()))?;
        let in_flight = InFlight::begin(&self.table, id);
        let ended = StreamEnded::default();
        let cancel = match &message {
            JsonRpcMessage::Request(r) => Some((mux.clone(), id.clone(), r.id.clone())),
            _ => None,
        };
        let messages = mux.call(
            id,
            client.as_ref(),
            |extensions| {
                if let Some(parts) = extensions.remove::<axum::http::request::Parts>()
                    && let Some(caller) = McpCaller::of(&parts, Some(ended.clone()))
                {
                    extensions.insert(caller);
                }
                extensions.insert(roots);
            },
            message,
        );
        Ok(CallStream::new(messages, ended, cancel, in_flight))
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        let mux = self.mux()?;
        let roots = self.touch(id, |e| e.roots.clone())?;
        mux.notify(
            id,
            |extensions| {
                extensions.insert(roots);
            },
            message,
        );
        Ok(())
    }

    /// Never reached: `/mcp` answers a GET with 405 before rmcp.
    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id, |_| ())?;
        Err::<Outgoing, _>(SessionError::NoStandaloneStream)
    }

    /// No stream is given event ids (no priming, see `McpEndpoint::new`): nothing to resume.
    async fn resume(
        &self,
        _id: &SessionId,
        _last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Err::<Outgoing, _>(SessionError::NoResumption)
    }
}

impl crate::api::KeyHolder for Sessions {
    fn end_key(
        self: Arc<Self>,
        key: KeyName,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = usize> + Send>> {
        Box::pin(async move { self.close_of_key(&key) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sessions() -> Arc<Sessions> {
        let sessions = Arc::new(Sessions::for_hub(&McpLimits {
            sessions_per_credential: 8,
            sessions_total: 8,
            tasks_per_credential: 8,
            task_keep: std::time::Duration::from_secs(60),
        }));
        sessions.serve(Mux::open().0);
        sessions
    }

    fn call() -> ClientJsonRpcMessage {
        serde_json::from_value(serde_json::json!({"jsonrpc": "2.0", "id": 1,
            "method": "tools/call", "params": {"name": "wait_for_user_input"}}))
        .unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn a_session_without_a_call_ends_after_the_idle_time_one_with_a_call_stays() {
        let sessions = sessions();
        let (idle, _) = sessions.create_session().await.unwrap();
        let (busy, _) = sessions.create_session().await.unwrap();
        let stream = sessions.create_stream(&busy, call()).await.unwrap();
        let stop = CancellationToken::new();
        tokio::spawn(sessions.clone().end_idle(stop.clone()));

        tokio::time::sleep(SESSION_IDLE - IDLE_CHECK).await;
        assert!(
            sessions.has_session(&idle).await.unwrap(),
            "not yet idle long enough"
        );
        tokio::time::sleep(IDLE_CHECK * 2).await;
        assert!(!sessions.has_session(&idle).await.unwrap(), "ended");
        assert!(
            sessions.has_session(&busy).await.unwrap(),
            "a call in flight"
        );

        drop(stream);
        tokio::time::sleep(SESSION_IDLE + IDLE_CHECK).await;
        assert!(
            !sessions.has_session(&busy).await.unwrap(),
            "idle once its call ended"
        );
        stop.cancel();
    }

    #[tokio::test]
    async fn only_the_close_for_an_ended_handshake_is_not_the_sessions_end() {
        let sessions = sessions();
        let (id, _transport) = sessions.create_session().await.unwrap();
        sessions.close_session(&id).await.unwrap();
        assert!(
            !sessions.has_session(&id).await.unwrap(),
            "a close before: the end"
        );

        let (id, mut ended) = sessions.create_session().await.unwrap();
        let init: ClientJsonRpcMessage = serde_json::from_value(serde_json::json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}}))
        .unwrap();
        let answering = {
            let sessions = sessions.clone();
            let id = id.clone();
            tokio::spawn(async move { sessions.initialize_session(&id, init).await })
        };
        use rmcp::transport::Transport as _;
        assert!(ended.receive().await.is_some(), "the initialize");
        let answer: ServerJsonRpcMessage = serde_json::from_value(serde_json::json!({
            "jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "2025-06-18",
                "capabilities": {}, "serverInfo": {"name": "h", "version": "1"}}}))
        .unwrap();
        ended.send(answer).await.unwrap();
        answering.await.unwrap().unwrap();
        assert!(ended.receive().await.is_none(), "the loop reads its end");
        sessions.close_session(&id).await.unwrap();
        assert!(
            sessions.has_session(&id).await.unwrap(),
            "rmcp's close after the loop"
        );
        sessions.close_session(&id).await.unwrap();
        assert!(
            !sessions.has_session(&id).await.unwrap(),
            "the client's close"
        );
    }
}
