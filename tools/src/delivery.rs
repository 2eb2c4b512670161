//! Exactly-once delivery on the tools' side: open waits, reply ids already returned, acks
//! that fire only after the tool result was written to the client, and the last reply
//! written per session until the agent shows it saw it.
//!
//! Invariant: a reply is consumed at the hub only once its result was written, and stays
//! here, keyed by the `resume` value its result gave, until the agent's next call passes
//! that value; a next call that passes another value gets the reply again.

use std::{
    collections::{HashMap, HashSet, VecDeque},
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

use holdline_contract::Reply;

use crate::hub::Hub;

/// How long a reply stays claimed by a call whose result was never written (the client
/// cancelled); after that the reply may be delivered to a later call.
const CLAIM_TTL: Duration = Duration::from_secs(30);

/// An open wait at a hub.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenWait {
    pub token: String,
    pub wait_id: String,
}

/// A reply a call is returning and the wait it came from: what its ack names. The hub's
/// MCP tasks keep it with a task's result, to ack it after a crash that came between.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClaimedReply {
    pub token: String,
    pub wait_id: String,
    pub reply_id: String,
}

/// An ack to send once the response to a request has been written.
#[derive(Debug, Clone)]
struct PendingAck {
    token: String,
    wait_id: String,
    reply: Reply,
    resume: String,
}

/// Shared delivery bookkeeping; cheap to clone.
#[derive(Clone)]
pub struct Delivery {
    inner: Arc<Mutex<State>>,
    hub: Hub,
    /// How many wait calls are running: shutdown waits for them to cancel their waits
    /// (one whose register is still on its way has no wait id to cancel from outside).
    calls: Arc<tokio::sync::watch::Sender<usize>>,
}

/// Counts one running wait call while it lives.
pub struct CallInFlight {
    calls: Arc<tokio::sync::watch::Sender<usize>>,
}

impl Drop for CallInFlight {
    fn drop(&mut self) {
        self.calls.send_modify(|n| *n -= 1);
    }
}

/// Behind a std mutex: every critical section is a few map operations, never an `.await`.
#[derive(Default)]
struct State {
    /// Waits the bridge is polling, by the MCP request that polls them.
    open: HashMap<RequestId, OpenWait>,
    /// Per token, a wait left open at the hub after "no reply yet" for the agent's re-call.
    lingering: HashMap<String, OpenWait>,
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
    /// Per token, the last reply written, the `resume` value its result gave, and how often
    /// it was returned again, until the agent's next call shows it saw it.
    unconfirmed: HashMap<String, Unconfirmed>,
    /// Per token, the `resume` values handed out most recently, oldest first.
    issued: HashMap<String, VecDeque<String>>,
    /// The tokens the per-token maps may hold, oldest first, at most [`TOKENS_KEPT`]: a
    /// hub serves agents for months, and a session whose agent never calls again must
    /// not keep its last reply (images too) for good.
    tokens: VecDeque<String>,
    known_tokens: HashSet<String>,
    /// `returned` in the order written, at most [`RETURNED_KEPT`].
    returned_order: VecDeque<String>,
}

impl State {
    /// Notes that per-token state is kept for `token`; forgets the oldest tokens' state
    /// past [`TOKENS_KEPT`] (never a token a call waits on now). A forgotten token only
    /// loses the repeat of an unseen reply, as after a bridge restart.
    fn remember(&mut self, token: &str) {
        if !self.known_tokens.insert(token.to_owned()) {
            return;
        }
        self.tokens.push_back(token.to_owned());
        let mut kept = 0;
        while self.tokens.len() > TOKENS_KEPT && kept < self.tokens.len() {
            let oldest = self.tokens.pop_front().expect("not empty");
            if self.current.contains_key(&oldest) || self.lingering.contains_key(&oldest) {
                self.tokens.push_back(oldest);
                kept += 1;
                continue;
            }
            self.known_tokens.remove(&oldest);
            self.last_reply.remove(&oldest);
            self.unconfirmed.remove(&oldest);
            self.issued.remove(&oldest);
        }
    }

    /// Records `reply_id` as written; the oldest past [`RETURNED_KEPT`] are forgotten (the
    /// hub has their acks by then, so it never sends them again).
    fn returned(&mut self, reply_id: &str) {
        if self.returned.insert(reply_id.to_owned()) {
            self.returned_order.push_back(reply_id.to_owned());
            if self.returned_order.len() > RETURNED_KEPT
                && let Some(old) = self.returned_order.pop_front()
            {
                self.returned.remove(&old);
            }
        }
    }
}

/// A reply written to the client that the agent has not yet shown it saw.
#[derive(Clone)]
struct Unconfirmed {
    resume: String,
    reply: Reply,
    returned_again: u32,
}

/// How many sessions' delivery state is kept (see `State::tokens`).
const TOKENS_KEPT: usize = 4096;
/// How many written reply ids are remembered.
const RETURNED_KEPT: usize = 16_384;
/// How many `resume` values per token the bridge remembers having handed out.
const ISSUED_KEPT: usize = 32;
/// How often one reply is returned again before the bridge takes it as seen (an agent that
/// keeps passing an old value would otherwise get it forever).
const RETURN_AGAIN_MAX: u32 = 3;

impl Delivery {
    pub fn new(hub: Hub) -> Delivery {
        Delivery {
            inner: Arc::new(Mutex::new(State::default())),
            hub,
            calls: Arc::new(tokio::sync::watch::Sender::new(0)),
        }
    }

    /// The same bookkeeping, acking through `hub` (the hub's `/mcp` acks with the
    /// caller's own credentials).
    pub fn with_hub(&self, hub: Hub) -> Delivery {
        Delivery {
            hub,
            ..self.clone()
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner.lock().expect("delivery state not poisoned")
    }

    /// Counts a wait call as running until the guard is dropped.
    pub fn call_started(&self) -> CallInFlight {
        self.calls.send_modify(|n| *n += 1);
        CallInFlight {
            calls: self.calls.clone(),
        }
    }

    /// Resolves once no wait call is running.
    pub async fn calls_ended(&self) {
        let mut running = self.calls.subscribe();
        let _ = running.wait_for(|n| *n == 0).await;
    }

    /// Records that `request` is polling `wait`.
    pub fn open(&self, request: &RequestId, wait: OpenWait) {
        let mut state = self.state();
        state.lingering.remove(&wait.token);
        state.open.insert(request.clone(), wait);
    }

    /// Records a wait left open for the agent's re-call, so it is cancelled if the bridge
    /// stops first.
    pub fn linger(&self, wait: OpenWait) {
        self.state().lingering.insert(wait.token.clone(), wait);
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

    /// Every open wait, polled or left for a re-call, for shutdown.
    pub fn open_waits(&self) -> Vec<OpenWait> {
        let state = self.state();
        let mut waits: Vec<OpenWait> = state.open.values().cloned().collect();
        for w in state.lingering.values() {
            if !waits.contains(w) {
                waits.push(w.clone());
            }
        }
        waits
    }

    /// The last reply id returned for `token` in this process, or "".
    pub fn last_reply(&self, token: &str) -> String {
        self.state()
            .last_reply
            .get(token)
            .cloned()
            .unwrap_or_default()
    }

    /// Sets the last reply id of `token` when this bridge has none (see
    /// [`crate::Tools::restore_last_reply`]).
    pub fn restore_last_reply(&self, token: &str, reply_id: &str) {
        if !reply_id.is_empty() {
            let mut state = self.state();
            state.remember(token);
            state
                .last_reply
                .entry(token.to_owned())
                .or_insert_with(|| reply_id.to_owned());
        }
    }

    /// Claims `reply` for `request`, whose result gives `resume`; false when it was returned
    /// (or is being returned) already. On success the ack is sent once the response to
    /// `request` is written.
    pub fn claim(
        &self,
        request: &RequestId,
        token: &str,
        wait_id: &str,
        reply: &Reply,
        resume: &str,
    ) -> bool {
        let mut state = self.state();
        if state.returned.contains(&reply.id) || !state.claimed.insert(reply.id.clone()) {
            return false;
        }
        state.pending.insert(
            request.clone(),
            PendingAck {
                token: token.to_owned(),
                wait_id: wait_id.to_owned(),
                reply: reply.clone(),
                resume: resume.to_owned(),
            },
        );
        drop(state);
        let this = self.clone();
        let (request, reply_id) = (request.clone(), reply.id.clone());
        tokio::spawn(async move {
            tokio::time::sleep(CLAIM_TTL).await;
            let mut state = this.state();
            if state.pending.remove(&request).is_some() {
                state.claimed.remove(&reply_id);
            }
        });
        true
    }

    /// A new `resume` value for a result about `token`: what the agent passes on its next
    /// call, so that no two calls are identical (clients' loop detectors stop at the fifth
    /// identical call) and the bridge can tell which result the agent saw last.
    pub fn issue_resume(&self, token: &str) -> String {
        self.issue(
            token,
            uuid::Uuid::new_v4().simple().to_string()[..10].to_owned(),
        )
    }

    /// The `resume` value for a result that returns `reply_id`: [`resume_naming`] it, so
    /// that the agent's next call shows it saw the reply even to a bridge that has
    /// forgotten everything since (the hub's `/mcp` after a restart).
    pub fn issue_resume_for_reply(&self, token: &str, reply_id: &str) -> String {
        self.issue(token, resume_naming(reply_id))
    }

    fn issue(&self, token: &str, resume: String) -> String {
        let mut state = self.state();
        state.remember(token);
        let issued = state.issued.entry(token.to_owned()).or_default();
        if issued.len() == ISSUED_KEPT {
            issued.pop_front();
        }
        issued.push_back(resume.clone());
        resume
    }

    /// The reply last written for `token` if the agent's call shows it never saw it: the
    /// call passes an older `resume` this bridge handed out for the token. A call that
    /// passes the reply's own value confirms it; one that passes none, or a value this
    /// bridge never gave (a garbled one), cannot tell and is taken as having seen it, as
    /// is one that still passes an old value after the reply was returned again
    /// [`RETURN_AGAIN_MAX`] times.
    pub fn unseen_reply(&self, token: &str, resume: Option<&str>) -> Option<(String, Reply)> {
        let mut state = self.state();
        let pending = state.unconfirmed.get(token)?;
        let resume = resume.map(str::trim);
        let older = resume.is_some_and(|r| {
            r != pending.resume
                && state
                    .issued
                    .get(token)
                    .is_some_and(|issued| issued.iter().any(|i| i == r))
        });
        if older && pending.returned_again < RETURN_AGAIN_MAX {
            let pending = state.unconfirmed.get_mut(token).expect("present");
            pending.returned_again += 1;
            return Some((pending.resume.clone(), pending.reply.clone()));
        }
        state.unconfirmed.remove(token);
        None
    }

    /// Whether `reply_id` was already written to the client (so it only needs an ack).
    pub fn was_returned(&self, reply_id: &str) -> bool {
        self.state().returned.contains(reply_id)
    }

    /// The reply `request` claimed and has not yet had written, if any.
    pub fn claimed(&self, request: &RequestId) -> Option<ClaimedReply> {
        self.state().pending.get(request).map(|ack| ClaimedReply {
            token: ack.token.clone(),
            wait_id: ack.wait_id.clone(),
            reply_id: ack.reply.id.clone(),
        })
    }

    /// The response to `request` will never go out: its reply is neither acked nor
    /// claimed any longer, so the next call returns it.
    pub fn dropped(&self, request: &RequestId) {
        let mut state = self.state();
        if let Some(ack) = state.pending.remove(request) {
            state.claimed.remove(&ack.reply.id);
        }
    }

    /// Called by the transport after the response to `request` went out.
    pub fn written(&self, request: &RequestId) {
        let ack = {
            let mut state = self.state();
            let Some(ack) = state.pending.remove(request) else {
                return;
            };
            state.claimed.remove(&ack.reply.id);
            state.returned(&ack.reply.id);
            state.remember(&ack.token);
            state
                .last_reply
                .insert(ack.token.clone(), ack.reply.id.clone());
            state.unconfirmed.insert(
                ack.token.clone(),
                Unconfirmed {
                    resume: ack.resume.clone(),
                    reply: ack.reply.clone(),
                    returned_again: 0,
                },
            );
            ack
        };
        let hub = self.hub.clone();
        tokio::spawn(async move {
            for attempt in 0..5u32 {
                match hub.ack(&ack.token, &ack.wait_id, &ack.reply.id).await {
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

/// The `resume` value a result returning `reply_id` gives: 10 hex digits of its SHA-256,
/// unique per reply as every `resume` value must be, and the same in every process.
pub fn resume_naming(reply_id: &str) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(format!("holdline resume {reply_id}")))[..10].to_owned()
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
    /// Whether a request has arrived; notifications before the first one (a client that
    /// sends one before `initialize`) are dropped instead of ending the session.
    started: bool,
}

impl<T> AckingTransport<T> {
    pub fn new(inner: T, delivery: Delivery, closed: CancellationToken) -> Self {
        AckingTransport {
            inner,
            delivery,
            closed,
            started: false,
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

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            let message = self.inner.receive().await;
            match &message {
                None => self.closed.cancel(),
                Some(JsonRpcMessage::Notification(n)) if !self.started => {
                    tracing::debug!(method = ?n.notification, "notification before the first request dropped");
                    continue;
                }
                Some(JsonRpcMessage::Request(_)) => self.started = true,
                Some(_) => {}
            }
            return message;
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_token_state_is_bounded_and_never_drops_a_token_a_call_waits_on() {
        let mut state = State::default();
        state.current.insert(
            "t_waiting".into(),
            (RequestId::Number(1), CancellationToken::new()),
        );
        state.remember("t_waiting");
        state
            .issued
            .insert("t_waiting".into(), VecDeque::from(["r".to_owned()]));
        for i in 0..TOKENS_KEPT + 10 {
            let token = format!("t_{i}");
            state.remember(&token);
            state.last_reply.insert(token, format!("reply_{i}"));
        }
        assert!(state.tokens.len() <= TOKENS_KEPT + 1);
        assert_eq!(state.tokens.len(), state.known_tokens.len());
        assert!(
            !state.last_reply.contains_key("t_0"),
            "the oldest is forgotten"
        );
        assert!(
            state
                .last_reply
                .contains_key(&format!("t_{}", TOKENS_KEPT + 9))
        );
        assert!(
            state.issued.contains_key("t_waiting"),
            "a waiting token is kept"
        );
    }

    #[test]
    fn written_reply_ids_are_bounded() {
        let mut state = State::default();
        for i in 0..RETURNED_KEPT + 5 {
            state.returned(&format!("r_{i}"));
        }
        assert_eq!(state.returned.len(), RETURNED_KEPT);
        assert!(!state.returned.contains("r_0"));
        assert!(state.returned.contains(&format!("r_{}", RETURNED_KEPT + 4)));
    }
}
