//! [`Hub`]: the hub as the tools hold it — a clonable handle over whichever [`HubApi`] the
//! transport gives (HTTP with failover for the stdio bridge, in process for `/mcp`).

use std::{sync::Arc, time::Duration};

use holdline_contract::{
    AckRequest, CancelRequest, HubApi, HubError, PollAnswer, PollRequest, SessionHead,
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

    /// Long-polls one wait for up to `hold`; the whole call ends by `within` when given.
    pub async fn poll(
        &self,
        token: &str,
        wait_id: &str,
        hold: Duration,
        within: Option<Duration>,
    ) -> Result<PollAnswer, HubError> {
        let request = PollRequest {
            token: token.to_owned(),
            wait_id: wait_id.to_owned(),
            timeout_ms: Some(hold.as_millis() as u64),
        };
        self.0.poll(request, within).await
    }

    /// The reply `reply_id` reached the agent.
    pub async fn ack(&self, token: &str, wait_id: &str, reply_id: &str) -> Result<(), HubError> {
        let request = AckRequest {
            token: token.to_owned(),
            wait_id: wait_id.to_owned(),
            reply_id: reply_id.to_owned(),
        };
        self.0.ack(request).await
    }

    /// The agent stopped waiting.
    pub async fn cancel(&self, token: &str, wait_id: &str) -> Result<(), HubError> {
        let request = CancelRequest {
            token: token.to_owned(),
            wait_id: wait_id.to_owned(),
        };
        self.0.cancel(request).await
    }

    /// The session's title, workspace and host.
    pub async fn session(&self, token: &str) -> Result<SessionHead, HubError> {
        self.0.session(token).await
    }
}
