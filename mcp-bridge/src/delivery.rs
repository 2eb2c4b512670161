//! Exactly-once delivery on the bridge side: open waits, reply ids already returned, and
//! acks that fire only after the tool result was written to the client.

use std::{
    collections::{HashMap, HashSet},
    future::Future,
    sync::{Arc, Mutex},
    time::Duration,
};

use tokio_util::sync::CancellationToken;

use rmcp::{
    RoleServer,
    model::{JsonRpcMessage, RequestId},
    service::{RxJsonRpcMessage, TxJsonRpcMessage},
    transport::Transport,
};

use crate::hub_client::HubClient;

/// How long a reply stays claimed by a call whose result was never written (the client
/// cancelled); after that the reply may be delivered to a later call.
const CLAIM_TTL: Duration = Duration::from_secs(30);

/// An open wait at a hub.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenWait {
    pub token: String,
    pub wait_id: String,
}

/// An ack to send once the response to a request has been written.
#[derive(Debug, Clone)]
struct PendingAck {
    token: String,
    wait_id: String,
    reply_id: String,
}

/// Shared delivery bookkeeping; cheap to clone.
#[derive(Clone)]
pub struct Delivery {
    inner: Arc<Mutex<State>>,
    hub: HubClient,
}

/// Behind a std mutex: every critical section is a few map operations, never an `.await`.
#[derive(Default)]
struct State {
    /// Waits the bridge is polling, by the MCP request that polls them.
    open: HashMap<RequestId, OpenWait>,
    /// Acks waiting for their response to be written.
    pending: HashMap<RequestId, PendingAck>,
    /// Reply ids written to the client: never returned again.
    returned: HashSet<String>,
    /// Reply ids a call is about to return.
    claimed: HashSet<String>,
    /// Per token, the call that waits on it now; an older call is told to stop.
    current: HashMap<String, (RequestId, CancellationToken)>,
    /// Per token, the last reply id returned; part of the register request id so that the
    /// same message after a real reply is a new message, but a re-call is not.
    last_reply: HashMap<String, String>,
}

impl Delivery {
    pub fn new(hub: HubClient) -> Delivery {
        Delivery {
            inner: Arc::new(Mutex::new(State::default())),
            hub,
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner.lock().expect("delivery state not poisoned")
    }

    /// Records that `request` is polling `wait`.
    pub fn open(&self, request: &RequestId, wait: OpenWait) {
        self.state().open.insert(request.clone(), wait);
    }

    /// Forgets the wait `request` polled.
    pub fn close(&self, request: &RequestId) {
        self.state().open.remove(request);
    }

    /// Makes `request` the one call waiting on `token`. A client that gave up on an older
    /// call without cancelling it would otherwise leave two calls polling one wait, and the
    /// abandoned one could take the reply. The token answered is cancelled when a newer
    /// call for `token` arrives.
    pub fn take_over(&self, token: &str, request: &RequestId) -> CancellationToken {
        let fresh = CancellationToken::new();
        let old = self
            .state()
            .current
            .insert(token.to_owned(), (request.clone(), fresh.clone()));
        if let Some((old_request, old_ct)) = old
            && &old_request != request
        {
            old_ct.cancel();
        }
        fresh
    }

    /// Ends `request`'s turn as the waiting call on `token`, if it still is.
    pub fn step_down(&self, token: &str, request: &RequestId) {
        let mut state = self.state();
        if state.current.get(token).is_some_and(|(r, _)| r == request) {
            state.current.remove(token);
        }
    }

    /// Every open wait, for shutdown.
    pub fn open_waits(&self) -> Vec<OpenWait> {
        self.state().open.values().cloned().collect()
    }

    /// The last reply id returned for `token` in this process, or "".
    pub fn last_reply(&self, token: &str) -> String {
        self.state()
            .last_reply
            .get(token)
            .cloned()
            .unwrap_or_default()
    }

    /// Claims `reply_id` for `request`; false when it was returned (or is being returned)
    /// already. On success the ack is sent once the response to `request` is written.
    pub fn claim(&self, request: &RequestId, token: &str, wait_id: &str, reply_id: &str) -> bool {
        let mut state = self.state();
        if state.returned.contains(reply_id) || !state.claimed.insert(reply_id.to_owned()) {
            return false;
        }
        state.pending.insert(
            request.clone(),
            PendingAck {
                token: token.to_owned(),
                wait_id: wait_id.to_owned(),
                reply_id: reply_id.to_owned(),
            },
        );
        drop(state);
        let this = self.clone();
        let (request, reply_id) = (request.clone(), reply_id.to_owned());
        tokio::spawn(async move {
            tokio::time::sleep(CLAIM_TTL).await;
            let mut state = this.state();
            if state.pending.remove(&request).is_some() {
                state.claimed.remove(&reply_id);
            }
        });
        true
    }

    /// Whether `reply_id` was already written to the client (so it only needs an ack).
    pub fn was_returned(&self, reply_id: &str) -> bool {
        self.state().returned.contains(reply_id)
    }

    /// Called by the transport after the response to `request` went out.
    fn written(&self, request: &RequestId) {
        let ack = {
            let mut state = self.state();
            let Some(ack) = state.pending.remove(request) else {
                return;
            };
            state.claimed.remove(&ack.reply_id);
            state.returned.insert(ack.reply_id.clone());
            state
                .last_reply
                .insert(ack.token.clone(), ack.reply_id.clone());
            ack
        };
        let hub = self.hub.clone();
        tokio::spawn(async move {
            for attempt in 0..5u32 {
                match hub.ack(&ack.token, &ack.wait_id, &ack.reply_id).await {
                    Ok(()) => return,
                    Err(e) => {
                        tracing::warn!(error = %e, attempt, "ack failed");
                        tokio::time::sleep(Duration::from_millis(500 * (attempt as u64 + 1))).await;
                    }
                }
            }
        });
    }
}

/// The stdio transport with one addition: when a response is written, the ack it was
/// waiting for is sent. A reply is thus consumed at the hub only after the client has it.
///
/// It also cancels `closed` as soon as the client closes stdin, so open waits are
/// cancelled at the hub and end at once instead of holding up the exit.
pub struct AckingTransport<T> {
    inner: T,
    delivery: Delivery,
    closed: CancellationToken,
}

impl<T> AckingTransport<T> {
    pub fn new(inner: T, delivery: Delivery, closed: CancellationToken) -> Self {
        AckingTransport {
            inner,
            delivery,
            closed,
        }
    }
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for AckingTransport<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let id = match &item {
            JsonRpcMessage::Response(r) => Some(r.id.clone()),
            _ => None,
        };
        let sent = self.inner.send(item);
        let delivery = self.delivery.clone();
        async move {
            let result = sent.await;
            if let (Ok(()), Some(id)) = (&result, id) {
                delivery.written(&id);
            }
            result
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleServer>>> + Send {
        let closed = self.closed.clone();
        let next = self.inner.receive();
        async move {
            let message = next.await;
            if message.is_none() {
                closed.cancel();
            }
            message
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
