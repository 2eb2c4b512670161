//! The only code that calls hubs: over HTTP with ordered failover, retry and auto-start of
//! a loopback hub, or in process when the hub itself runs the tools (its `/mcp`). Both
//! routes send the same requests and read the answers by the same rules.

use std::{
    future::Future,
    net::{IpAddr, SocketAddr, ToSocketAddrs},
    path::PathBuf,
    pin::Pin,
    process::Stdio,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use serde::{Deserialize, Serialize, de::DeserializeOwned};
use serde_json::Value;

use crate::config::{Config, SecretSource};

/// How long a plain request may take; polls add their own hold time on top.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);
/// How long an auto-started hub has to answer `/healthz`.
const AUTOSTART_READY: Duration = Duration::from_secs(15);
/// Auto-start is tried at most this often, so a broken hub binary is not spawned in a loop.
const AUTOSTART_COOLDOWN: Duration = Duration::from_secs(30);
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

/// The ordered hub list reached over HTTP.
struct Network {
    hubs: Vec<String>,
    http: reqwest::Client,
    secret: SecretSource,
    home: PathBuf,
    hub_bin: Option<PathBuf>,
    autostart: bool,
    /// Index of the hub that answered last; calls start there so a dead primary costs
    /// one connect failure, not one per call.
    active: AtomicUsize,
    /// When auto-start was last tried; a std mutex because it is never held across `.await`.
    last_autostart: Mutex<Option<Instant>>,
}

impl HubClient {
    /// A client for `config.hubs`.
    pub fn new(config: &Config) -> HubClient {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(3))
            .no_proxy()
            // A hub never redirects: following one would send the agent's
            // message (and the secret's power) to another host.
            .redirect(reqwest::redirect::Policy::none())
            // The hub closes a connection idle past its 10 s head limit when
            // hyper serves it (large bodies); never reuse one that old.
            .pool_idle_timeout(Duration::from_secs(5))
            .build()
            .expect("reqwest client without TLS always builds");
        HubClient {
            route: Route::Network(Arc::new(Network {
                hubs: config.hubs.clone(),
                http,
                secret: config.secret.clone(),
                home: config.home.clone(),
                hub_bin: config.hub_bin.clone(),
                autostart: config.autostart,
                active: AtomicUsize::new(0),
                last_autostart: Mutex::new(None),
            })),
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
            Route::Network(net) => &net.hubs[net.active.load(Ordering::Relaxed) % net.hubs.len()],
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

impl Network {
    /// One call over HTTP, bounded by `timeout` in all: every hub tried, the auto-start
    /// and the retry after it share it, so the call answers within it
    /// whatever the hubs do.
    async fn send<T: DeserializeOwned>(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
        timeout: Duration,
    ) -> Result<T, HubError> {
        let deadline = Instant::now() + timeout;
        match self.try_all(&method, path, body, deadline).await {
            // No secret yet is what a first run looks like: the hub makes it on first start.
            Err(e @ (HubError::Unreachable { .. } | HubError::NoSecret(_))) => {
                if self.autostart_local_hub(deadline).await {
                    self.try_all(&method, path, body, deadline).await
                } else {
                    Err(e)
                }
            }
            other => other,
        }
    }

    async fn try_all<T: DeserializeOwned>(
        &self,
        method: &reqwest::Method,
        path: &str,
        body: Option<&Value>,
        deadline: Instant,
    ) -> Result<T, HubError> {
        let secret = self
            .secret
            .read()
            .ok_or_else(|| HubError::NoSecret(self.secret.describe()))?;
        let n = self.hubs.len();
        let start = self.active.load(Ordering::Relaxed) % n;
        // The active hub first, then the list in its configured order.
        let order = std::iter::once(start).chain((0..n).filter(|&i| i != start));
        let mut tried = Vec::new();
        let mut last_server_error = None;
        for i in order {
            let hub = &self.hubs[i];
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                tracing::warn!(hub = %hub, path, "no time left for this hub");
                tried.push(hub.clone());
                continue;
            }
            let mut request = self
                .http
                .request(method.clone(), format!("{hub}{path}"))
                .bearer_auth(&secret)
                .timeout(left);
            if let Some(body) = body {
                request = request.json(body);
            }
            let response = match request.send().await {
                Ok(r) => r,
                Err(e) => {
                    tracing::warn!(hub = %hub, path, error = %e, "hub did not answer");
                    tried.push(hub.clone());
                    continue;
                }
            };
            let status = response.status().as_u16();
            let bytes = match read_capped(response).await {
                Ok(Some(b)) => b,
                Ok(None) => {
                    tracing::warn!(hub = %hub, path, "hub answer larger than the cap");
                    return Err(HubError::BadAnswer {
                        hub: hub.clone(),
                        detail: format!("an answer larger than {} MiB", MAX_ANSWER >> 20),
                    });
                }
                Err(e) => {
                    tracing::warn!(hub = %hub, path, error = %e, "hub answer cut off");
                    tried.push(hub.clone());
                    continue;
                }
            };
            if status >= 500 {
                tracing::warn!(hub = %hub, path, status, "hub failed");
                last_server_error = Some(api_error(hub, status, &bytes));
                tried.push(hub.clone());
                continue;
            }
            if i != start {
                tracing::info!(hub = %hub, "switched to hub");
            }
            self.active.store(i, Ordering::Relaxed);
            // Any 401 to a key (a wrong secret says otherwise): the key is wrong or revoked.
            if status == 401 && self.secret.is_key() {
                return Err(HubError::KeyRefused);
            }
            return read_answer(hub, status, &bytes);
        }
        Err(last_server_error.unwrap_or(HubError::Unreachable { tried }))
    }

    /// Starts `holdline-hub serve` for the first loopback hub in the list and waits for its
    /// `/healthz` (until `deadline` at most). Answers whether a hub is up now.
    async fn autostart_local_hub(&self, deadline: Instant) -> bool {
        if !self.autostart {
            return false;
        }
        let Some(hub) = self.hubs.iter().find(|h| loopback_addr(h).is_some()) else {
            return false;
        };
        {
            let mut last = self.last_autostart.lock().expect("not poisoned");
            if last.is_some_and(|t| t.elapsed() < AUTOSTART_COOLDOWN) {
                return false;
            }
            *last = Some(Instant::now());
        }
        let Some(addr) = loopback_addr(hub) else {
            return false;
        };
        if self.healthy(hub).await {
            // A hub runs already; only the secret may have been missing.
            return self.secret.read().is_some();
        }
        let Some(bin) = self.hub_binary() else {
            tracing::warn!(
                "no hub answered and holdline-hub was not found beside holdline-mcp or on PATH"
            );
            return false;
        };
        let mut command = std::process::Command::new(&bin);
        command
            .arg("--home")
            .arg(&self.home)
            .arg("serve")
            .arg("--listen")
            .arg(addr.to_string())
            .env("HOLDLINE_HOME", &self.home)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // Its own process group: the hub outlives this bridge and serves other IDE windows,
        // so a signal the IDE sends to the bridge's group must not reach it.
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        match command.spawn() {
            Ok(child) => {
                tracing::info!(pid = child.id(), bin = %bin.display(), %addr, "started holdline-hub");
                // Reap it in the background if it exits while the bridge still runs.
                std::thread::spawn(move || {
                    let mut child = child;
                    let _ = child.wait();
                });
            }
            Err(e) => {
                tracing::warn!(bin = %bin.display(), error = %e, "could not start holdline-hub");
                return false;
            }
        }
        let deadline = deadline.min(Instant::now() + AUTOSTART_READY);
        while Instant::now() < deadline {
            if self.healthy(hub).await && self.secret.read().is_some() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        tracing::warn!(%addr, "auto-started holdline-hub did not become healthy");
        false
    }

    async fn healthy(&self, hub: &str) -> bool {
        self.http
            .get(format!("{hub}/healthz"))
            .timeout(Duration::from_secs(2))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success())
    }

    fn hub_binary(&self) -> Option<PathBuf> {
        if let Some(bin) = &self.hub_bin {
            return Some(bin.clone());
        }
        let name = format!("holdline-hub{}", std::env::consts::EXE_SUFFIX);
        let beside = std::env::current_exe()
            .ok()
            .and_then(|exe| exe.parent().map(|dir| dir.join(&name)))
            .filter(|p| p.is_file());
        beside.or_else(|| {
            std::env::var_os("PATH").and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|dir| dir.join(&name))
                    .find(|p| p.is_file())
            })
        })
    }
}

/// The answer's body, or `None` when it is larger than [`MAX_ANSWER`] (by
/// its length, or once that much has arrived).
async fn read_capped(mut response: reqwest::Response) -> reqwest::Result<Option<Vec<u8>>> {
    if response
        .content_length()
        .is_some_and(|n| n > MAX_ANSWER as u64)
    {
        return Ok(None);
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if body.len() + chunk.len() > MAX_ANSWER {
            return Ok(None);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Some(body))
}

/// A hub's answer read by the one rule both routes share: 2xx is the documented JSON,
/// anything else an API error.
/// How the hub's 401 for a wrong or revoked agent key begins (`hub/src/api/guard.rs`).
const KEY_REFUSED: &str = "the hub refused this agent key";

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

/// The socket address of a hub URL when it is on this machine's loopback interface.
pub fn loopback_addr(url: &str) -> Option<SocketAddr> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split('/').next()?;
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || authority.starts_with('[') => {
            (h, p.parse::<u16>().ok()?)
        }
        _ => (authority, 80),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let ip: IpAddr = match host {
        "localhost" => IpAddr::from([127, 0, 0, 1]),
        h => match h.parse() {
            Ok(ip) => ip,
            Err(_) => (h, port).to_socket_addrs().ok()?.next()?.ip(),
        },
    };
    ip.is_loopback().then_some(SocketAddr::new(ip, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_detection() {
        assert_eq!(
            loopback_addr("http://127.0.0.1:13458"),
            Some("127.0.0.1:13458".parse().unwrap())
        );
        assert_eq!(
            loopback_addr("http://localhost:9"),
            Some("127.0.0.1:9".parse().unwrap())
        );
        assert_eq!(
            loopback_addr("http://[::1]:7/"),
            Some("[::1]:7".parse().unwrap())
        );
        assert_eq!(loopback_addr("http://192.168.1.5:13458"), None);
    }

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
