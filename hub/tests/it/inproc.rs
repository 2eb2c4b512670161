//! A hub running inside the test process (`holdline_hub::run` on a bound
//! listener, stopped through a oneshot), spoken to over real HTTP. Shared by
//! the hub's tests and system-tests' MongoDB tests (each uses a part: hence the
//! allow); the durability tests use the real binary (`realhub`).

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use holdline_core::config::Config;
use holdline_core::home::Home;
use reqwest::StatusCode;
use serde_json::{Value, json};

/// How to start a [`TestHub`].
#[derive(Default)]
pub struct Options {
    /// Sync to this MongoDB.
    pub mongo_uri: Option<String>,
    /// Write this secret before starting (hubs sharing a MongoDB share one).
    pub secret: Option<String>,
    /// Listen here instead of an ephemeral port (to come back on the same one).
    pub port: u16,
    /// Close waits nobody polls after this long (default: the hub's default).
    pub wait_grace: Option<std::time::Duration>,
    /// Notification channels (`[notify]`).
    pub notify: Option<holdline_core::config::notify::NotifyConfig>,
}

/// A hub in this process, shut down on drop.
pub struct TestHub {
    pub url: String,
    pub secret: String,
    pub home: PathBuf,
    pub http: reqwest::Client,
    /// Keeps a temporary home alive as long as the hub.
    _dir: Option<tempfile::TempDir>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl TestHub {
    /// A hub on a fresh temporary home.
    pub async fn start() -> TestHub {
        let dir = tempfile::tempdir().unwrap();
        let mut hub = Self::start_at(dir.path(), Options::default()).await;
        hub._dir = Some(dir);
        hub
    }

    /// A hub on a fresh temporary home, started with `options`.
    pub async fn start_with(options: Options) -> TestHub {
        let dir = tempfile::tempdir().unwrap();
        let mut hub = Self::start_at(dir.path(), options).await;
        hub._dir = Some(dir);
        hub
    }

    /// A hub on `home` (kept when the hub stops).
    pub async fn start_at(home: &Path, options: Options) -> TestHub {
        let h = Home::new(home.to_owned());
        if let Some(s) = &options.secret {
            std::fs::create_dir_all(home).unwrap();
            holdline_core::home::write_private(&h.secret_file(), s.as_bytes()).unwrap();
        }
        h.prepare().unwrap();
        let secret = h.read_secret().unwrap();
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", options.port))
            .await
            .unwrap();
        let addr = listener.local_addr().unwrap();
        let mut config = Config::for_home(home.to_owned(), addr);
        config.mongo_uri = options.mongo_uri;
        if let Some(grace) = options.wait_grace {
            config.wait_grace = grace;
        }
        if let Some(notify) = options.notify {
            config.notify = notify;
        }
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            holdline_hub::run(listener, config, async move {
                let _ = rx.await;
            })
            .await
            .unwrap();
        });
        TestHub {
            url: format!("http://{addr}"),
            secret,
            home: home.to_owned(),
            http: reqwest::Client::new(),
            _dir: None,
            stop: Some(tx),
            task: Some(task),
        }
    }

    /// `host:port`, the hub's name on the sessions it owns.
    pub fn name(&self) -> &str {
        self.url.trim_start_matches("http://")
    }

    /// Stops the hub, waits until it has flushed, and hands back its
    /// temporary home (if it made one) for a restart.
    pub async fn stop(mut self) -> Option<tempfile::TempDir> {
        let _ = self.stop.take().unwrap().send(());
        self.task.take().unwrap().await.unwrap();
        self._dir.take()
    }

    pub async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        let res = self
            .http
            .post(format!("{}{path}", self.url))
            .bearer_auth(&self.secret)
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = res.status();
        (status, res.json().await.unwrap_or(Value::Null))
    }

    pub async fn get(&self, path: &str) -> (StatusCode, Value) {
        let res = self
            .http
            .get(format!("{}{path}", self.url))
            .bearer_auth(&self.secret)
            .send()
            .await
            .unwrap();
        let status = res.status();
        (status, res.json().await.unwrap_or(Value::Null))
    }

    /// A POST that must answer 200.
    pub async fn ok(&self, path: &str, body: Value) -> Value {
        let (status, v) = self.post(path, body).await;
        assert_eq!(status, StatusCode::OK, "{path}: {v}");
        v
    }

    pub async fn health(&self) -> Value {
        self.get(holdline_contract::routes::HEALTHZ).await.1
    }

    /// A session on `/w` at host 10.0.0.2, its token.
    pub async fn init(&self, title: &str) -> String {
        let v = self
            .ok(
                "/api/init",
                json!({"cursorTitle": title, "workspace": "/w", "hostIp": "10.0.0.2"}),
            )
            .await;
        v["token"].as_str().unwrap().to_owned()
    }

    /// Registers a wait with `message` from the chat `title`, its wait id.
    pub async fn register(&self, token: &str, title: &str, message: &str, request: &str) -> String {
        let v = self
            .ok(
                "/api/wait/register",
                json!({"token": token, "message": message, "cursorTitle": title,
                       "workspace": "/w", "hostIp": "10.0.0.2", "requestId": request}),
            )
            .await;
        assert_eq!(v["status"], "waiting");
        v["waitId"].as_str().unwrap().to_owned()
    }

    pub async fn poll(&self, token: &str, wait_id: &str, ms: u64) -> Value {
        self.ok(
            "/api/wait/poll",
            json!({"token": token, "waitId": wait_id, "timeoutMs": ms}),
        )
        .await
    }

    /// The session with its newest messages; must exist.
    pub async fn session(&self, token: &str) -> Value {
        let (status, v) = self.get(&format!("/api/sessions/{token}")).await;
        assert_eq!(status, StatusCode::OK, "{v}");
        v
    }
}

impl Drop for TestHub {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
    }
}
