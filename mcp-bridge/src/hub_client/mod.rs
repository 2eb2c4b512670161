//! The only code that calls hubs: over HTTP with ordered failover, retry and auto-start of
//! a loopback hub, or in process when the hub itself runs the tools (its `/mcp`). Both
//! routes send the same requests and read the answers by the same rules.

mod network;

use std::{future::Future, pin::Pin, sync::Arc, time::Duration};

use serde::{Deserialize, Serialize, de::DeserializeOwned};
use serde_json::Value;

use crate::config::Config;
use network::Network;
pub use network::loopback_addr;

/// How long a plain request may take; polls add their own hold time on top.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);
/// The largest hub answer read: a poll carrying a reply with images (the hub
/// takes replies up to 10 MiB) fits with room; a broken or hostile hub cannot
/// make the bridge hold more.
pub const MAX_ANSWER: usize = 32 * 1024 * 1024;

/// Why a hub call failed, in the terms the tools explain to the agent.
#[derive(Debug, thiserror::Error)]
pub enum HubError {
    /// No listed hub answered.
    #[error("no holdline hub answered (tried {})", tried.join(", "))]
    Unreachable {
        /// The hubs tried, in order.
        tried: Vec<String>,
    },
    /// A hub answered with an API error.
    #[error("hub {hub} answered {status} {code}: {message}")]
    Api {
        /// Which hub answered.
        hub: String,
        /// HTTP status.
        status: u16,
        /// The `error.code` of the body.
        code: String,
        /// The `error.message` of the body.
        message: String,
    },
    /// The hub refused the agent key (`HOLDLINE_KEY`) with 401, or ended a wait because
    /// the key was revoked.
    #[error("the hub refused this agent key: it is wrong or was revoked")]
    KeyRefused,
    /// There is no secret to send.
    #[error("no secret found in {0}")]
    NoSecret(String),
    /// The hub answered something that is not the documented JSON.
    #[error("hub {hub} answered unexpected data: {detail}")]
    BadAnswer {
        /// Which hub answered.
        hub: String,
        /// What was wrong.
        detail: String,
    },
}

impl HubError {
    /// Whether another attempt (same or next hub) may succeed.
    pub fn is_transient(&self) -> bool {
        matches!(self, HubError::Unreachable { .. })
            || matches!(self, HubError::Api { status, .. } if *status >= 500)
    }
}

/// `POST /api/init` answer.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InitAnswer {
    pub token: String,
    pub status: String,
    pub created: bool,
    pub binding_key: String,
}

/// `POST /api/select` answer.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SelectAnswer {
    pub token: String,
    pub status: String,
}

/// `POST /api/wait/register` answer.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RegisterAnswer {
    pub wait_id: String,
}

/// An image as the hub sends it.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Image {
    pub mime_type: String,
    pub data: String,
}

/// A reply as the agent receives it.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Reply {
    pub id: String,
    #[serde(default)]
    pub text: String,
    #[serde(default)]
    pub images: Vec<Image>,
    #[serde(default)]
    pub auto: bool,
    #[serde(default)]
    pub at: i64,
}

/// `POST /api/wait/poll` answer.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "status", rename_all = "camelCase")]
pub enum PollAnswer {
    /// A reply is pending; ack it once it reached the agent.
    Replied { reply: Reply },
    /// Nothing yet; poll again.
    Renewal,
    /// The wait is closed.
    #[serde(rename_all = "camelCase")]
    Gone {
        reason: String,
        #[serde(default)]
        merged_into: Option<String>,
    },
}

/// `POST /api/merge` answer.
#[derive(Debug, Clone, Deserialize)]
pub struct MergeAnswer {
    pub token: String,
}

/// Session metadata, only the fields the bridge uses.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    #[serde(default)]
    pub title: String,
    #[serde(default)]
    pub workspace: String,
    #[serde(default)]
    pub host_ip: String,
    #[serde(default)]
    pub status: String,
}

/// A hub request answered in process: the HTTP status and the body.
pub type InProcessAnswer = Pin<Box<dyn Future<Output = (u16, Vec<u8>)> + Send>>;

/// A hub the tools reach without a socket: the hub's own `/mcp` hands its requests to its
/// router, so an in-process call passes the same guards and rules as one over HTTP.
pub trait InProcessHub: Send + Sync {
    /// Answers `method path` with a JSON `body`; the answer is read like an HTTP one.
    fn call(&self, method: reqwest::Method, path: &str, body: Option<Vec<u8>>) -> InProcessAnswer;
}

/// A clonable handle to the hubs calls go to.
#[derive(Clone)]
pub struct HubClient {
    route: Route,
}

#[derive(Clone)]
enum Route {
    Network(Arc<Network>),
    InProcess(Arc<dyn InProcessHub>),
}

/// The name a hub reached in process has in errors and logs.
const IN_PROCESS: &str = "this hub";

impl HubClient {
    /// A client for `config.hubs`.
    pub fn new(config: &Config) -> HubClient {
        HubClient {
            route: Route::Network(Arc::new(Network::new(config))),
        }
    }

    /// A client whose calls `hub` answers in process.
    pub fn in_process(hub: Arc<dyn InProcessHub>) -> HubClient {
        HubClient {
            route: Route::InProcess(hub),
        }
    }

    /// The hub calls currently go to.
    pub fn active_hub(&self) -> &str {
        match &self.route {
            Route::Network(net) => net.active_hub(),
            Route::InProcess(_) => IN_PROCESS,
        }
    }

    pub async fn init(&self, body: Value) -> Result<InitAnswer, HubError> {
        self.post("/api/init", &body, REQUEST_TIMEOUT).await
    }

    pub async fn select(&self, body: Value) -> Result<SelectAnswer, HubError> {
        self.post("/api/select", &body, REQUEST_TIMEOUT).await
    }

    /// Registers a wait; the whole call, every hub tried, ends by `within` (the caller's
    /// own deadline, when it is sooner than the usual request timeout).
    pub async fn register(
        &self,
        body: Value,
        within: Option<Duration>,
    ) -> Result<RegisterAnswer, HubError> {
        let timeout = within.map_or(REQUEST_TIMEOUT, |w| w.min(REQUEST_TIMEOUT));
        self.post("/api/wait/register", &body, timeout).await
    }

    /// Long-polls one wait for up to `hold`; the whole call ends by `within` when given (a
    /// hub that trickles its answer cannot keep the caller past its own deadline).
    pub async fn poll(
        &self,
        token: &str,
        wait_id: &str,
        hold: Duration,
        within: Option<Duration>,
    ) -> Result<PollAnswer, HubError> {
        let body = serde_json::json!({
            "token": token, "waitId": wait_id, "timeoutMs": hold.as_millis() as u64,
        });
        let timeout = within.map_or(hold + REQUEST_TIMEOUT, |w| w.min(hold + REQUEST_TIMEOUT));
        self.post("/api/wait/poll", &body, timeout).await
    }

    pub async fn ack(&self, token: &str, wait_id: &str, reply_id: &str) -> Result<(), HubError> {
        let body = serde_json::json!({"token": token, "waitId": wait_id, "replyId": reply_id});
        self.post::<Value>("/api/wait/ack", &body, REQUEST_TIMEOUT)
            .await
            .map(drop)
    }

    pub async fn cancel(&self, token: &str, wait_id: &str) -> Result<(), HubError> {
        let body = serde_json::json!({"token": token, "waitId": wait_id});
        self.post::<Value>("/api/wait/cancel", &body, REQUEST_TIMEOUT)
            .await
            .map(drop)
    }

    pub async fn merge(&self, body: Value) -> Result<MergeAnswer, HubError> {
        self.post("/api/merge", &body, REQUEST_TIMEOUT).await
    }

    /// `GET /api/sessions/{token}` with one message, for the title and workspace of a
    /// session this bridge has not seen since it started.
    pub async fn session(&self, token: &str) -> Result<SessionInfo, HubError> {
        let path = format!("/api/sessions/{token}?limit=1");
        self.send(reqwest::Method::GET, &path, None, REQUEST_TIMEOUT)
            .await
    }

    /// POSTs `body` to `path` on the active hub, then the others in list order; starts a
    /// loopback hub once when none answers.
    pub async fn post<T: DeserializeOwned>(
        &self,
        path: &str,
        body: &Value,
        timeout: Duration,
    ) -> Result<T, HubError> {
        self.send(reqwest::Method::POST, path, Some(body), timeout)
            .await
    }

    /// One call, bounded by `timeout` in all.
    async fn send<T: DeserializeOwned>(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
        timeout: Duration,
    ) -> Result<T, HubError> {
        match &self.route {
            Route::Network(net) => net.send(method, path, body, timeout).await,
            Route::InProcess(hub) => {
                let body = body.map(|b| serde_json::to_vec(b).expect("a JSON value serializes"));
                match tokio::time::timeout(timeout, hub.call(method, path, body)).await {
                    Ok((status, bytes)) => read_answer(IN_PROCESS, status, &bytes),
                    Err(_) => Err(HubError::Unreachable {
                        tried: vec![IN_PROCESS.to_owned()],
                    }),
                }
            }
        }
    }
}

/// How the hub's 401 for a wrong or revoked agent key begins (`hub/src/api/guard.rs`).
const KEY_REFUSED: &str = "the hub refused this agent key";

/// A hub's answer read by the one rule both routes share: 2xx is the documented JSON,
/// anything else an API error.
fn read_answer<T: DeserializeOwned>(hub: &str, status: u16, bytes: &[u8]) -> Result<T, HubError> {
    if !(200..300).contains(&status) {
        return Err(match api_error(hub, status, bytes) {
            // In process (`/mcp`) the caller's own key is sent: refused, it was revoked.
            HubError::Api {
                status: 401,
                message,
                ..
            } if message.starts_with(KEY_REFUSED) => HubError::KeyRefused,
            other => other,
        });
    }
    serde_json::from_slice(bytes).map_err(|e| HubError::BadAnswer {
        hub: hub.to_owned(),
        detail: e.to_string(),
    })
}

fn api_error(hub: &str, status: u16, bytes: &[u8]) -> HubError {
    #[derive(Deserialize)]
    struct Body {
        error: Detail,
    }
    #[derive(Deserialize)]
    struct Detail {
        code: String,
        #[serde(default)]
        message: String,
    }
    let (code, message) = match serde_json::from_slice::<Body>(bytes) {
        Ok(b) => (b.error.code, b.error.message),
        Err(_) => (
            format!("HTTP_{status}"),
            String::from_utf8_lossy(bytes).chars().take(200).collect(),
        ),
    };
    HubError::Api {
        hub: hub.to_owned(),
        status,
        code,
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poll_answers_parse() {
        let a: PollAnswer = serde_json::from_str(
            r#"{"status":"replied","reply":{"id":"r_1","text":"hi","images":[{"mimeType":"image/png","data":"AA=="}],"auto":false,"at":1}}"#,
        )
        .unwrap();
        assert!(matches!(a, PollAnswer::Replied { ref reply } if reply.images.len() == 1));
        let a: PollAnswer = serde_json::from_str(r#"{"status":"renewal"}"#).unwrap();
        assert!(matches!(a, PollAnswer::Renewal));
        let a: PollAnswer =
            serde_json::from_str(r#"{"status":"gone","reason":"merged","mergedInto":"ct_x"}"#)
                .unwrap();
        assert!(
            matches!(a, PollAnswer::Gone { ref reason, ref merged_into } if reason == "merged" && merged_into.as_deref() == Some("ct_x"))
        );
    }

    #[test]
    fn api_error_body_is_read() {
        let e = api_error(
            "h",
            403,
            br#"{"error":{"code":"BINDING_REJECTED","message":"no"}}"#,
        );
        assert!(
            matches!(e, HubError::Api { ref code, status: 403, .. } if code == "BINDING_REJECTED")
        );
        let e = api_error("h", 502, b"bad gateway");
        assert!(e.is_transient());
    }
}
