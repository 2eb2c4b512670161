//! Hubs over HTTP: the ordered list with failover (the hub that answered last first),
//! retry, and the auto-start of a loopback hub when none answers.
//!
//! Invariant: one call, every hub tried and an auto-start included, ends by its deadline.

use std::{
    net::{IpAddr, SocketAddr, ToSocketAddrs},
    path::PathBuf,
    process::Stdio,
    sync::{
        Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use holdline_contract::{HubError, routes};
use serde::de::DeserializeOwned;

use super::{MAX_ANSWER, read_answer};
use crate::config::{Config, SecretSource};

/// How long an auto-started hub has to answer `/healthz`.
const AUTOSTART_READY: Duration = Duration::from_secs(15);
/// Auto-start is tried at most this often, so a broken hub binary is not spawned in a loop.
const AUTOSTART_COOLDOWN: Duration = Duration::from_secs(30);

/// The ordered hub list reached over HTTP.
pub(super) struct Network {
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

impl Network {
    /// The hubs of `config`.
    pub(super) fn new(config: &Config) -> Network {
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
        Network {
            hubs: config.hubs.clone(),
            http,
            secret: config.secret.clone(),
            home: config.home.clone(),
            hub_bin: config.hub_bin.clone(),
            autostart: config.autostart,
            active: AtomicUsize::new(0),
            last_autostart: Mutex::new(None),
        }
    }

    /// The hub calls go to now.
    pub(super) fn active_hub(&self) -> &str {
        &self.hubs[self.active.load(Ordering::Relaxed) % self.hubs.len()]
    }
    /// One call over HTTP, bounded by `timeout` in all: every hub tried, the auto-start
    /// and the retry after it share it, so the call answers within it
    /// whatever the hubs do.
    pub(super) async fn send<T: DeserializeOwned>(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Vec<u8>>,
        timeout: Duration,
    ) -> Result<T, HubError> {
        let deadline = Instant::now() + timeout;
        match self.try_all(&method, path, body.as_deref(), deadline).await {
            // No secret yet is what a first run looks like: the hub makes it on first start.
            Err(e @ (HubError::Unreachable { .. } | HubError::NoSecret(_))) => {
                if self.autostart_local_hub(deadline).await {
                    self.try_all(&method, path, body.as_deref(), deadline).await
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
        body: Option<&[u8]>,
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
                request = request
                    .header(reqwest::header::CONTENT_TYPE, "application/json")
                    .body(body.to_vec());
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
                let error = HubError::from_answer(hub, status, &bytes, self.secret.is_key());
                if !error.is_transient() {
                    // A full attachment quota: this hub's answer, no failure of it.
                    return Err(error);
                }
                tracing::warn!(hub = %hub, path, status, "hub failed");
                last_server_error = Some(error);
                tried.push(hub.clone());
                continue;
            }
            if i != start {
                tracing::info!(hub = %hub, "switched to hub");
            }
            self.active.store(i, Ordering::Relaxed);
            return read_answer(hub, status, &bytes, self.secret.is_key());
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
            // `holdline-hub status` tells the person a bridge started it.
            .env("HOLDLINE_STARTED_BY", "bridge")
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
            .get(format!("{hub}{}", routes::HEALTHZ))
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
}
