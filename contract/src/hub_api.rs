//! [`HubApi`]: the hub as an agent's tools call it — over HTTP from the stdio bridge, in
//! process from the hub's own `/mcp` — with typed requests and answers, no bytes between.
//!
//! Invariant: both implementations answer the same request with the same outcome (the
//! in-process one runs the agent routes' own code with the caller's credential).

use std::{future::Future, pin::Pin, time::Duration};

use crate::{
    HubError,
    wire::{
        AckRequest, CancelRequest, InitAnswer, InitRequest, MergeAnswer, MergeRequest, PollAnswer,
        PollRequest, RegisterAnswer, RegisterRequest, SelectAnswer, SelectRequest, SessionHead,
    },
};

/// How long a plain hub call may take, whatever the transport; a poll adds its hold.
pub const CALL_LIMIT: Duration = Duration::from_secs(15);

/// The limit of one call: `own` (the transport's), or the caller's deadline `within` when
/// it is sooner.
pub fn call_limit(own: Duration, within: Option<Duration>) -> Duration {
    within.map_or(own, |w| w.min(own))
}

/// A hub call on its way.
pub type HubAnswer<'a, T> = Pin<Box<dyn Future<Output = Result<T, HubError>> + Send + 'a>>;

/// The agent routes of a hub. `within`: the caller's own deadline for the whole call
/// (every hub tried), when sooner than the transport's.
pub trait HubApi: Send + Sync {
    /// The hub calls go to now, for logs and the agent's sentences.
    fn name(&self) -> &str;
    fn init(&self, request: InitRequest) -> HubAnswer<'_, InitAnswer>;
    fn select(&self, request: SelectRequest) -> HubAnswer<'_, SelectAnswer>;
    fn register(
        &self,
        request: RegisterRequest,
        within: Option<Duration>,
    ) -> HubAnswer<'_, RegisterAnswer>;
    /// Holds up to `request.timeout_ms` for the person's reply.
    fn poll(&self, request: PollRequest, within: Option<Duration>) -> HubAnswer<'_, PollAnswer>;
    fn ack(&self, request: AckRequest) -> HubAnswer<'_, ()>;
    fn cancel(&self, request: CancelRequest) -> HubAnswer<'_, ()>;
    fn merge(&self, request: MergeRequest) -> HubAnswer<'_, MergeAnswer>;
    /// The session's head (title, workspace, host), for a token this process has not bound.
    fn session(&self, token: &str) -> HubAnswer<'_, SessionHead>;
}
