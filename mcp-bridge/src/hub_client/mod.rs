//! The hubs as the stdio bridge reaches them: over HTTP, with ordered failover, retry and
//! the auto-start of a loopback hub — the bridge's [`HubApi`].
//!
//! Invariant: every request and answer is a type of `holdline-contract`, read by the
//! contract's one rule for answers ([`read_answer`]).

mod network;

use std::{sync::Arc, time::Duration};

use holdline_contract::{
    AckRequest, CALL_LIMIT, CancelRequest, Done, HubAnswer, HubApi, HubError, InitAnswer,
    InitRequest, MergeAnswer, MergeRequest, PollAnswer, PollRequest, RegisterAnswer,
    RegisterRequest, SelectAnswer, SelectRequest, SessionHead, call_limit, routes,
};
use serde::{Serialize, de::DeserializeOwned};

use crate::config::Config;
use network::Network;
pub use network::loopback_addr;

/// The largest hub answer read: a poll carrying a reply with images (the hub
/// takes replies up to 10 MiB) fits with room; a broken or hostile hub cannot
/// make the bridge hold more.
pub const MAX_ANSWER: usize = 32 * 1024 * 1024;

/// A clonable handle to the hubs of `HOLDLINE_HUB`.
#[derive(Clone)]
pub struct HubClient {
    network: Arc<Network>,
}

impl HubClient {
    /// A client for `config.hubs`.
    pub fn new(config: &Config) -> HubClient {
        HubClient {
            network: Arc::new(Network::new(config)),
        }
    }

    /// POSTs `body` to `path` on the active hub, then the others in list order; starts a
    /// loopback hub once when none answers.
    async fn post<B: Serialize, T: DeserializeOwned>(
        &self,
        path: &str,
        body: &B,
        timeout: Duration,
    ) -> Result<T, HubError> {
        let body = serde_json::to_vec(body).expect("a request type serializes");
        self.network
            .send(reqwest::Method::POST, path, Some(body), timeout)
            .await
    }
}

impl HubApi for HubClient {
    fn name(&self) -> &str {
        self.network.active_hub()
    }

    fn init(&self, request: InitRequest) -> HubAnswer<'_, InitAnswer> {
        Box::pin(async move { self.post(routes::INIT, &request, CALL_LIMIT).await })
    }

    fn select(&self, request: SelectRequest) -> HubAnswer<'_, SelectAnswer> {
        Box::pin(async move { self.post(routes::SELECT, &request, CALL_LIMIT).await })
    }

    fn register(
        &self,
        request: RegisterRequest,
        within: Option<Duration>,
    ) -> HubAnswer<'_, RegisterAnswer> {
        let timeout = call_limit(CALL_LIMIT, within);
        Box::pin(async move { self.post(routes::REGISTER, &request, timeout).await })
    }

    /// A hub that trickles its answer cannot keep the caller past `within`.
    fn poll(&self, request: PollRequest, within: Option<Duration>) -> HubAnswer<'_, PollAnswer> {
        let hold = Duration::from_millis(request.timeout_ms.unwrap_or_default());
        let timeout = call_limit(hold + CALL_LIMIT, within);
        Box::pin(async move { self.post(routes::POLL, &request, timeout).await })
    }

    fn ack(&self, request: AckRequest) -> HubAnswer<'_, ()> {
        Box::pin(async move {
            self.post::<_, Done>(routes::ACK, &request, CALL_LIMIT)
                .await
                .map(drop)
        })
    }

    fn cancel(&self, request: CancelRequest) -> HubAnswer<'_, ()> {
        Box::pin(async move {
            self.post::<_, Done>(routes::CANCEL, &request, CALL_LIMIT)
                .await
                .map(drop)
        })
    }

    fn merge(&self, request: MergeRequest) -> HubAnswer<'_, MergeAnswer> {
        Box::pin(async move { self.post(routes::MERGE, &request, CALL_LIMIT).await })
    }

    fn session(&self, token: &str) -> HubAnswer<'_, SessionHead> {
        let path = routes::session_head(token);
        Box::pin(async move {
            self.network
                .send(reqwest::Method::GET, &path, None, CALL_LIMIT)
                .await
        })
    }
}

/// A hub's answer read by the contract's rule: 2xx is the documented JSON, anything else
/// an error answer. `sent_key`: the request carried an agent key.
fn read_answer<T: DeserializeOwned>(
    hub: &str,
    status: u16,
    bytes: &[u8],
    sent_key: bool,
) -> Result<T, HubError> {
    if !(200..300).contains(&status) {
        return Err(HubError::from_answer(hub, status, bytes, sent_key));
    }
    serde_json::from_slice(bytes).map_err(|e| HubError::BadAnswer {
        hub: hub.to_owned(),
        detail: e.to_string(),
    })
}
