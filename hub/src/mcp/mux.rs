//! One rmcp service loop for the requests of every `/mcp` session: each request goes in
//! under an id unique in this hub, carrying its session's client (name, capabilities) and
//! roots in its extensions, and each message the service sends goes out on the stream of
//! the call it belongs to, under the client's own ids.
//!
//! Invariant: a session's messages reach only that session — a response, a progress
//! notification or a request of the service goes to the one call it names, and a client's
//! answer to a request of the service is taken only from the session that request went to.
//! Why: rmcp serves each session with a loop of its own whose two channels allocate 32
//! message slots each when made (~28 KiB), plus a task: a waiting remote agent cost the hub
//! ~117 KiB with a loop per session, and costs ~30 KiB with this one (docs/benchmarks.md,
//! "Memory per remote agent"; the earlier figures in docs/benchmarks-history.md). Part of
//! the hand-made transport beside rmcp's `LocalSessionManager`: see [`crate::transport`].

use std::{
    collections::HashMap,
    convert::Infallible,
    sync::{
        Arc, Mutex, MutexGuard,
        atomic::{AtomicI64, Ordering},
    },
};

use futures::{StreamExt, channel::mpsc};
use rmcp::{
    RoleServer, ServerHandler,
    model::{
        ClientJsonRpcMessage, ClientNotification, ClientRequest, GetExtensions, GetMeta,
        JsonRpcMessage, JsonRpcRequest, NumberOrString, ProgressToken, RequestId,
        ServerJsonRpcMessage, ServerNotification, ServerRequest,
    },
    service::{OriginatingRequestId, serve_directly_with_ct},
    transport::{Transport, streamable_http_server::session::ServerSseMessage},
};
use tokio_util::{sync::CancellationToken, task::TaskTracker};

use super::calls::Calls;
use holdline_store::lock::Unpoisoned as _;

/// The messages of one call, as the client reads them.
pub type Outgoing = mpsc::UnboundedReceiver<ServerSseMessage>;

pub use holdline_tools::Client;

/// The shared service loop's routes.
pub struct Mux {
    inbound: mpsc::UnboundedSender<ClientJsonRpcMessage>,
    routes: Mutex<Routes>,
    next: AtomicI64,
}

#[derive(Default)]
struct Routes {
    /// Calls in flight by their hub-wide id.
    calls: HashMap<i64, Call>,
    /// The hub-wide id of each call in flight, by its session and the client's id.
    by_client: HashMap<(Arc<str>, RequestId), i64>,
    /// Requests of the service to a client in flight, by their id, with the call they
    /// were made for.
    asked: HashMap<RequestId, i64>,
}

struct Call {
    session: Arc<str>,
    /// The client's id for it.
    id: RequestId,
    /// The client's progress token, if it gave one.
    progress: Option<ProgressToken>,
    outlet: mpsc::UnboundedSender<ServerSseMessage>,
}

/// The shared loop's transport.
pub(super) struct MuxTransport {
    inbound: mpsc::UnboundedReceiver<ClientJsonRpcMessage>,
    mux: Arc<Mux>,
}

impl Mux {
    /// Starts the loop serving `service` until `stop`, as a task of `running`.
    pub fn start<S: ServerHandler>(
        service: S,
        stop: CancellationToken,
        running: &TaskTracker,
    ) -> Arc<Mux> {
        let (mux, transport) = Mux::open();
        let service = serve_directly_with_ct(Calls(service), transport, None, stop);
        running.spawn(async move {
            let _ = service.waiting().await;
        });
        mux
    }

    /// The routes and the transport the loop reads and writes.
    pub(super) fn open() -> (Arc<Mux>, MuxTransport) {
        let (tx, rx) = mpsc::unbounded();
        let mux = Arc::new(Mux {
            inbound: tx,
            routes: Mutex::default(),
            next: AtomicI64::new(1),
        });
        let transport = MuxTransport {
            inbound: rx,
            mux: mux.clone(),
        };
        (mux, transport)
    }

    /// Passes `session`'s request `message` to the service, with `extensions` (what the
    /// service needs of the session); the answer is the stream its messages come back on,
    /// which ends with its response.
    pub fn call(
        &self,
        session: &Arc<str>,
        client: Option<&Arc<Client>>,
        extensions: impl FnOnce(&mut rmcp::model::Extensions),
        message: ClientJsonRpcMessage,
    ) -> Outgoing {
        let (tx, rx) = mpsc::unbounded();
        let JsonRpcMessage::Request(mut request) = message else {
            return rx;
        };
        let hub_id = self.next.fetch_add(1, Ordering::Relaxed);
        let is_call = matches!(request.request, ClientRequest::CallToolRequest(_));
        let meta = request.request.get_meta_mut();
        let progress = meta.get_progress_token();
        if progress.is_some() {
            meta.set_progress_token(ProgressToken(NumberOrString::Number(hub_id)));
        }
        if let Some(client) = client {
            // The tools read a call's client from its extensions; rmcp's own dispatch of
            // every other request reads `_meta` (a task request checks the client does
            // tasks). Copied there for those only: a call's `_meta` lives as long as it.
            if !is_call {
                if meta.client_info().is_none() {
                    meta.set_client_info(client.info.clone());
                }
                if meta.client_capabilities().is_none() {
                    meta.set_client_capabilities(client.capabilities.clone());
                }
            }
            request.request.extensions_mut().insert(client.clone());
        }
        extensions(request.request.extensions_mut());
        let client_id = std::mem::replace(&mut request.id, RequestId::Number(hub_id));
        {
            let mut routes = self.routes();
            let key = (session.clone(), client_id.clone());
            // A client reusing the id of a call in flight: the older call gets no more.
            if let Some(older) = routes.by_client.get(&key).copied() {
                routes.end(older);
            }
            routes.by_client.insert(key, hub_id);
            routes.calls.insert(
                hub_id,
                Call {
                    session: session.clone(),
                    id: client_id,
                    progress,
                    outlet: tx,
                },
            );
        }
        let _ = self
            .inbound
            .unbounded_send(JsonRpcMessage::Request(request));
        rx
    }

    /// Passes `session`'s notification, response or error to the service: a cancel under the
    /// hub-wide id of the call it names (whose stream ends), an answer only if the request
    /// it answers went to this session. Anything else the session cannot name is dropped.
    pub fn notify(
        &self,
        session: &Arc<str>,
        extensions: impl FnOnce(&mut rmcp::model::Extensions),
        message: ClientJsonRpcMessage,
    ) {
        let message = match message {
            JsonRpcMessage::Notification(mut n) => {
                if let ClientNotification::CancelledNotification(c) = &mut n.notification {
                    let Some(id) = &c.params.request_id else {
                        return;
                    };
                    let Some(hub_id) = self.routes().end_of_client(session, id) else {
                        return;
                    };
                    c.params.request_id = Some(RequestId::Number(hub_id));
                }
                extensions(n.notification.extensions_mut());
                JsonRpcMessage::Notification(n)
            }
            JsonRpcMessage::Response(r) => {
                if !self.routes().answers(session, &r.id) {
                    return;
                }
                JsonRpcMessage::Response(r)
            }
            JsonRpcMessage::Error(e) => {
                if !e
                    .id
                    .as_ref()
                    .is_some_and(|id| self.routes().answers(session, id))
                {
                    return;
                }
                JsonRpcMessage::Error(e)
            }
            JsonRpcMessage::Request(_) => return,
        };
        let _ = self.inbound.unbounded_send(message);
    }

    /// Cancels the call `session` knows as `id`, as the client's `notifications/cancelled`
    /// would: its stream ends and the service is told why.
    pub fn cancel(&self, session: &Arc<str>, id: &RequestId, reason: &str) {
        if let Some(hub_id) = self.routes().end_of_client(session, id) {
            let _ = self.inbound.unbounded_send(cancelled(hub_id, reason));
        }
    }

    /// Ends `session`'s calls in flight: the service is told each was cancelled, and their
    /// streams end.
    pub fn end_session(&self, session: &str) {
        let ended: Vec<i64> = {
            let mut routes = self.routes();
            let ids: Vec<i64> = routes
                .calls
                .iter()
                .filter(|(_, c)| &*c.session == session)
                .map(|(id, _)| *id)
                .collect();
            for id in &ids {
                routes.end(*id);
            }
            ids
        };
        for id in ended {
            let _ = self
                .inbound
                .unbounded_send(cancelled(id, "the client ended the session"));
        }
    }

    fn routes(&self) -> MutexGuard<'_, Routes> {
        // Map operations only: a poisoned lock holds consistent data.
        self.routes.lock_unpoisoned()
    }
}

impl Routes {
    /// Removes call `hub_id` and what points at it.
    fn end(&mut self, hub_id: i64) -> Option<Call> {
        let call = self.calls.remove(&hub_id)?;
        self.by_client
            .remove(&(call.session.clone(), call.id.clone()));
        self.asked.retain(|_, c| *c != hub_id);
        Some(call)
    }

    /// Ends the call `session` knows as `id`, answering its hub-wide id.
    fn end_of_client(&mut self, session: &Arc<str>, id: &RequestId) -> Option<i64> {
        let hub_id = *self.by_client.get(&(session.clone(), id.clone()))?;
        self.end(hub_id);
        Some(hub_id)
    }

    /// Whether `id` is a request of the service to `session` still unanswered (it is
    /// answered now).
    fn answers(&mut self, session: &Arc<str>, id: &RequestId) -> bool {
        let Some(hub_id) = self.asked.get(id) else {
            return false;
        };
        let of_session = self
            .calls
            .get(hub_id)
            .is_some_and(|c| &c.session == session);
        if of_session {
            self.asked.remove(id);
        }
        of_session
    }

    /// Sends the service's `message` to the call it belongs to, under the client's ids.
    fn deliver(&mut self, message: ServerJsonRpcMessage) {
        match message {
            JsonRpcMessage::Response(mut r) => {
                if let Some(call) = hub_id_of(&r.id).and_then(|id| self.end(id)) {
                    r.id = call.id;
                    send(&call.outlet, JsonRpcMessage::Response(r));
                }
            }
            JsonRpcMessage::Error(mut e) => {
                let call =
                    e.id.as_ref()
                        .and_then(hub_id_of)
                        .and_then(|id| self.end(id));
                if let Some(call) = call {
                    e.id = Some(call.id);
                    send(&call.outlet, JsonRpcMessage::Error(e));
                }
            }
            JsonRpcMessage::Notification(mut n) => match self.call_told(&mut n.notification) {
                Some(call) => send(&call.outlet, JsonRpcMessage::Notification(n)),
                None => tracing::debug!("an MCP notification for no call was dropped"),
            },
            JsonRpcMessage::Request(r) => self.ask(r),
        }
    }

    /// The call `notification` is about, the notification put in the client's terms: a
    /// progress under the client's token, the service withdrawing a request it made.
    fn call_told(&self, notification: &mut ServerNotification) -> Option<&Call> {
        match notification {
            ServerNotification::ProgressNotification(p) => {
                let call = self.calls.get(&hub_id_of(&p.params.progress_token.0)?)?;
                p.params.progress_token = call.progress.clone()?;
                Some(call)
            }
            ServerNotification::CancelledNotification(c) => self
                .calls
                .get(self.asked.get(c.params.request_id.as_ref()?)?),
            _ => None,
        }
    }

    /// A request of the service (`roots/list` during a call) rides the stream of the call
    /// it was made for; the client's answer is then taken from that call's session only.
    fn ask(&mut self, request: JsonRpcRequest<ServerRequest>) {
        let origin = request
            .request
            .extensions()
            .get::<OriginatingRequestId>()
            .and_then(|o| hub_id_of(&o.0))
            .filter(|id| self.calls.contains_key(id));
        match origin {
            Some(hub_id) => {
                self.asked.insert(request.id.clone(), hub_id);
                send(
                    &self.calls[&hub_id].outlet,
                    JsonRpcMessage::Request(request),
                );
            }
            None => tracing::warn!("a request of the MCP service outside any call was dropped"),
        }
    }
}

/// The hub-wide id `id` stands for, if it is one.
fn hub_id_of(id: &RequestId) -> Option<i64> {
    match id {
        NumberOrString::Number(n) => Some(*n),
        NumberOrString::String(_) => None,
    }
}

fn send(outlet: &mpsc::UnboundedSender<ServerSseMessage>, message: ServerJsonRpcMessage) {
    let _ = outlet.unbounded_send(ServerSseMessage::from_message(message));
}

/// `notifications/cancelled` for the call `hub_id`.
fn cancelled(hub_id: i64, reason: &str) -> ClientJsonRpcMessage {
    serde_json::from_value(serde_json::json!({
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": hub_id, "reason": reason},
    }))
    .expect("a well-formed notification")
}

impl Transport<RoleServer> for MuxTransport {
    type Error = Infallible;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.mux.routes().deliver(item);
        std::future::ready(Ok(()))
    }

    fn receive(&mut self) -> impl Future<Output = Option<ClientJsonRpcMessage>> + Send {
        self.inbound.next()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.inbound.close();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use futures::FutureExt;
    use serde_json::{Value, json};

    use super::*;

    fn client_message(value: Value) -> ClientJsonRpcMessage {
        serde_json::from_value(value).expect("a client message")
    }

    fn server_message(value: Value) -> ServerJsonRpcMessage {
        serde_json::from_value(value).expect("a server message")
    }

    /// A `tools/call` with the id 1 and the progress token "p": every client's first.
    fn first_call() -> ClientJsonRpcMessage {
        client_message(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "wait_for_user_input", "arguments": {}, "_meta": {"progressToken": "p"}}}))
    }

    fn client() -> Arc<Client> {
        Arc::new(Client {
            info: rmcp::model::Implementation::new("codex", "1"),
            capabilities: rmcp::model::ClientCapabilities::default(),
        })
    }

    /// What `stream` has now, as JSON, and whether it has ended.
    fn drain(stream: &mut Outgoing) -> (Vec<Value>, bool) {
        let mut got = Vec::new();
        loop {
            match stream.next().now_or_never() {
                Some(Some(m)) => got.push(serde_json::to_value(&*m.message.unwrap()).unwrap()),
                Some(None) => return (got, true),
                None => return (got, false),
            }
        }
    }

    /// What the loop reads next, as JSON.
    async fn read(transport: &mut MuxTransport) -> Value {
        serde_json::to_value(transport.receive().await.unwrap()).unwrap()
    }

    #[tokio::test]
    async fn two_sessions_with_the_same_ids_each_get_only_their_own_messages() {
        let (mux, mut transport) = Mux::open();
        let (a, b): (Arc<str>, Arc<str>) = ("a".into(), "b".into());
        let mut of_a = mux.call(&a, Some(&client()), |_| {}, first_call());
        let mut of_b = mux.call(&b, None, |_| {}, first_call());
        let first = transport.receive().await.unwrap();
        let JsonRpcMessage::Request(call) = &first else {
            panic!("a request: {first:?}");
        };
        let rides = call.request.extensions().get::<Arc<Client>>();
        assert_eq!(
            rides.map(|c| c.info.name.as_str()),
            Some("codex"),
            "the session's client rides each call"
        );
        let in_a = serde_json::to_value(&first).unwrap();
        assert!(
            in_a["params"]["_meta"]
                .get("io.modelcontextprotocol/clientInfo")
                .is_none(),
            "a call's _meta is the client's own: {in_a}"
        );
        let in_b = read(&mut transport).await;
        assert_ne!(in_a["id"], in_b["id"], "unique ids inside");
        let token_of_b = in_b["params"]["_meta"]["progressToken"].clone();
        assert_ne!(in_a["params"]["_meta"]["progressToken"], token_of_b);

        let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": token_of_b, "progress": 1}});
        transport.send(server_message(progress)).await.unwrap();
        let answer = json!({"jsonrpc": "2.0", "id": in_a["id"], "result": {"content": []}});
        transport.send(server_message(answer)).await.unwrap();

        let (got_a, ended_a) = drain(&mut of_a);
        assert_eq!(got_a.len(), 1, "{got_a:?}");
        assert_eq!(got_a[0]["id"], 1, "under the client's own id");
        assert!(ended_a, "the stream ends with the response");
        let (got_b, ended_b) = drain(&mut of_b);
        assert_eq!(got_b.len(), 1, "{got_b:?}");
        assert_eq!(
            got_b[0]["params"]["progressToken"], "p",
            "under the client's own token"
        );
        assert!(!ended_b);
    }

    #[tokio::test]
    async fn a_request_of_the_service_goes_to_its_call_and_only_that_session_answers_it() {
        let (mux, mut transport) = Mux::open();
        let (a, b): (Arc<str>, Arc<str>) = ("a".into(), "b".into());
        let mut of_a = mux.call(&a, None, |_| {}, first_call());
        let hub_id = read(&mut transport).await["id"].as_i64().unwrap();
        let JsonRpcMessage::Request(mut asked) =
            server_message(json!({"jsonrpc": "2.0", "id": 70, "method": "roots/list"}))
        else {
            unreachable!()
        };
        asked
            .request
            .extensions_mut()
            .insert(OriginatingRequestId(RequestId::Number(hub_id)));
        transport
            .send(JsonRpcMessage::Request(asked))
            .await
            .unwrap();
        assert_eq!(drain(&mut of_a).0[0]["method"], "roots/list");

        let roots = json!({"jsonrpc": "2.0", "id": 70, "result": {"roots": []}});
        mux.notify(&b, |_| {}, client_message(roots.clone()));
        assert!(
            transport.receive().now_or_never().is_none(),
            "another session's answer is dropped"
        );
        mux.notify(&a, |_| {}, client_message(roots.clone()));
        assert_eq!(read(&mut transport).await["id"], 70);
        mux.notify(&a, |_| {}, client_message(roots));
        assert!(
            transport.receive().now_or_never().is_none(),
            "a request is answered once"
        );
    }

    #[tokio::test]
    async fn a_cancel_names_the_hub_id_and_ending_a_session_cancels_only_its_calls() {
        let (mux, mut transport) = Mux::open();
        let (a, b): (Arc<str>, Arc<str>) = ("a".into(), "b".into());
        let mut first = mux.call(&a, None, |_| {}, first_call());
        let first_id = read(&mut transport).await["id"].clone();
        let second = client_message(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
        let mut second = mux.call(&a, None, |_| {}, second);
        let second_id = read(&mut transport).await["id"].clone();
        let mut of_b = mux.call(&b, None, |_| {}, first_call());
        let _ = read(&mut transport).await;

        let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 1}});
        mux.notify(&a, |_| {}, client_message(cancel));
        assert_eq!(read(&mut transport).await["params"]["requestId"], first_id);
        assert!(drain(&mut first).1, "the cancelled call's stream ended");

        mux.end_session(&a);
        let told = read(&mut transport).await;
        assert_eq!(told["method"], "notifications/cancelled");
        assert_eq!(told["params"]["requestId"], second_id);
        assert!(
            transport.receive().now_or_never().is_none(),
            "nothing for b"
        );
        assert!(drain(&mut second).1);
        assert!(!drain(&mut of_b).1, "b's call goes on");
    }
}
