//! [`Hub`]: the hub as the tools hold it — a clonable handle over whichever [`HubApi`] the
//! transport gives (HTTP with failover for the stdio bridge, in process for `/mcp`).

use std::{sync::Arc, time::Duration};

use holdline_contract::{
    AckRequest, CancelRequest, HubAnswer, HubApi, PollAnswer, PollRequest, SessionHead,
};

/// A clonable handle to a hub.
#[derive(Clone)]
pub struct Hub(Arc<dyn HubApi>);

impl Hub {
    pub fn new(api: Arc<dyn HubApi>) -> Hub {
        Hub(api)
    }

    /// The typed agent routes.
    pub fn api(&self) -> &dyn HubApi {
        &*self.0
    }

    /// The hub calls go to now.
    pub fn name(&self) -> &str {
        self.0.name()
    }

    // The calls answer the transport's own future: a waiting agent's poll is held for
    // minutes, and a wrapper's state would sit beside it all the while.

    /// Long-polls one wait for up to `hold`; the whole call ends by `within` when given.
    pub fn poll(
        &self,
        token: &str,
        wait_id: &str,
        hold: Duration,
        within: Option<Duration>,
    ) -> HubAnswer<'_, PollAnswer> {
        let request = PollRequest {
            token: token.to_owned(),
            wait_id: wait_id.to_owned(),
            timeout_ms: Some(hold.as_millis() as u64),
        };
        self.0.poll(request, within)
    }

    /// The reply `reply_id` reached the agent.
    pub fn ack(&self, token: &str, wait_id: &str, reply_id: &str) -> HubAnswer<'_, ()> {
        let request = AckRequest {
            token: token.to_owned(),
            wait_id: wait_id.to_owned(),
            reply_id: reply_id.to_owned(),
        };
        self.0.ack(request)
    }

    /// The agent stopped waiting.
    pub fn cancel(&self, token: &str, wait_id: &str) -> HubAnswer<'_, ()> {
        let request = CancelRequest {
            token: token.to_owned(),
            wait_id: wait_id.to_owned(),
        };
        self.0.cancel(request)
    }

    /// The session's title, workspace and host.
    pub fn session(&self, token: &str) -> HubAnswer<'_, SessionHead> {
        self.0.session(token)
    }
}
