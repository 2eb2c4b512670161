//! What the bridge tests share: a real `holdline-hub` process on an ephemeral port with a
//! temporary home, and the real `holdline-mcp` binary over stdio driven by an rmcp client.
//!
//! Both are the workspace's real binaries, found beside this test binary (`scripts/test.sh`
//! builds them in its workspace build; when missing, the first test that needs one builds
//! them with `cargo build -p holdline-hub -p holdline-mcp`).

#![allow(deprecated)] // the test client answers roots/list, deprecated by SEP-2577

use std::{
    net::TcpListener,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use anyhow::{Context, bail};
use rmcp::{
    ClientHandler, RoleClient, ServiceExt,
    model::{
        CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ClientRequest,
        Implementation, ListRootsResult, ProgressNotificationParam, ProtocolVersion, Request, Root,
        ServerResult,
    },
    service::{NotificationContext, PeerRequestOptions, RequestContext, RunningService},
    transport::TokioChildProcess,
};
use serde_json::{Value, json};

pub const PNG_1PX: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

/// The hub under test: the real `holdline-hub`.
pub fn hub_bin() -> PathBuf {
    workspace_bin("holdline-hub")
}

/// The bridge under test: the real `holdline-mcp`.
pub fn bridge_bin() -> PathBuf {
    workspace_bin("holdline-mcp")
}

/// A binary of the workspace where cargo put it: the folder of this test binary's profile
/// (`target/debug`, one up from its `deps/`). Cargo builds a package's binaries only for
/// that package's tests, so when one is missing this builds both once (cargo lets go of
/// the target folder while tests run). One already there is taken as it is: after changing
/// the hub or the bridge, build them (`scripts/test.sh` does) before these tests.
fn workspace_bin(name: &str) -> PathBuf {
    let test_exe = std::env::current_exe().expect("the test binary's path");
    let profile_dir = test_exe
        .parent()
        .and_then(Path::parent)
        .expect("the test binary runs from <target>/<profile>/deps");
    let bin = profile_dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    if !bin.is_file() {
        build_binaries_under_test(profile_dir);
    }
    assert!(
        bin.is_file(),
        "{} is missing: build the binaries under test first \
         (`cargo build -p holdline-hub -p holdline-mcp`, with this run's profile)",
        bin.display()
    );
    bin
}

/// `cargo build -p holdline-hub -p holdline-mcp` into `profile_dir` (`<target>/<profile>`),
/// once per test process; a failed build fails the test with cargo's own words above.
fn build_binaries_under_test(profile_dir: &Path) {
    static BUILT: Mutex<bool> = Mutex::new(false);
    let mut built = BUILT.lock().unwrap_or_else(|p| p.into_inner());
    if *built {
        return;
    }
    let target_dir = profile_dir.parent().expect("<target>/<profile>");
    let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") | None => "dev",
        Some(other) => other,
    };
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| env!("CARGO").into());
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
    eprintln!(
        "building the binaries under test: cargo build -p holdline-hub -p holdline-mcp --profile {profile}"
    );
    let status = Command::new(cargo)
        .args([
            "build",
            "-p",
            "holdline-hub",
            "-p",
            "holdline-mcp",
            "--profile",
            profile,
        ])
        .arg("--manifest-path")
        .arg(workspace)
        .arg("--target-dir")
        .arg(target_dir)
        .status()
        .expect("run cargo to build the binaries under test");
    assert!(status.success(), "building the binaries under test failed");
    *built = true;
}

/// The pid of a running hub under test whose command line holds `needle` (its home, its
/// address): how a test finds the hub a bridge auto-started, to stop it (Linux only).
pub fn hub_pid_with(needle: &str) -> Option<u32> {
    let bin = hub_bin();
    let bin = bin.to_str()?;
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
        let mut args = cmdline.split(|b| *b == 0).map(String::from_utf8_lossy);
        let is_hub = args.next().is_some_and(|exe| exe == bin);
        (is_hub && args.any(|a| a.contains(needle))).then_some(pid)
    })
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A real hub process; killed on drop.
pub struct TestHub {
    pub child: Child,
    pub home: PathBuf,
    pub addr: String,
    pub secret: String,
    pub http: reqwest::Client,
}

impl TestHub {
    pub async fn start(home: &Path) -> anyhow::Result<TestHub> {
        TestHub::start_on(home, "127.0.0.1:0").await
    }

    pub async fn start_on(home: &Path, listen: &str) -> anyhow::Result<TestHub> {
        TestHub::start_with_env(home, listen, &[]).await
    }

    /// A hub with extra environment variables (a debug build's crash point, say).
    pub async fn start_with_env(
        home: &Path,
        listen: &str,
        env: &[(&str, &str)],
    ) -> anyhow::Result<TestHub> {
        let addr_file = home.join("hub.addr");
        let _ = std::fs::remove_file(&addr_file);
        let child = Command::new(hub_bin())
            .envs(env.iter().copied())
            .arg("--home")
            .arg(home)
            .arg("serve")
            .arg("--listen")
            .arg(listen)
            .env_remove("HOLDLINE_MONGO_URI")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("spawn holdline-hub")?;
        let started = Instant::now();
        let addr = loop {
            if let Ok(a) = std::fs::read_to_string(&addr_file)
                && !a.trim().is_empty()
            {
                break a.trim().to_owned();
            }
            if started.elapsed() > Duration::from_secs(20) {
                bail!("hub did not write {}", addr_file.display());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        let secret = std::fs::read_to_string(home.join("secret"))?
            .trim()
            .to_owned();
        let hub = TestHub {
            child,
            home: home.to_owned(),
            addr,
            secret,
            http: reqwest::Client::new(),
        };
        hub.wait_healthy().await?;
        Ok(hub)
    }

    pub async fn wait_healthy(&self) -> anyhow::Result<()> {
        let started = Instant::now();
        loop {
            let ok = self
                .http
                .get(format!("{}/healthz", self.url()))
                .send()
                .await
                .is_ok_and(|r| r.status().is_success());
            if ok {
                return Ok(());
            }
            if started.elapsed() > Duration::from_secs(20) {
                bail!("hub not healthy");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Waits for the process to end by itself (at a crash point, say).
    pub async fn died(&mut self) -> anyhow::Result<()> {
        let started = Instant::now();
        while self.child.try_wait()?.is_none() {
            if started.elapsed() > Duration::from_secs(20) {
                bail!("the hub is still running");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(())
    }

    /// SIGKILL: no flush, no goodbye.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub async fn reply(&self, token: &str, text: &str, images: Value) -> anyhow::Result<Value> {
        let r = self
            .http
            .post(format!("{}/api/reply", self.url()))
            .bearer_auth(&self.secret)
            .json(&json!({"token": token, "text": text, "images": images}))
            .send()
            .await?;
        let status = r.status();
        let body: Value = r.json().await?;
        if !status.is_success() {
            bail!("reply answered {status}: {body}");
        }
        Ok(body)
    }

    pub async fn session(&self, token: &str) -> anyhow::Result<Value> {
        let r = self
            .http
            .get(format!("{}/api/sessions/{token}?limit=200", self.url()))
            .bearer_auth(&self.secret)
            .send()
            .await?;
        Ok(r.error_for_status()?.json().await?)
    }

    /// Polls the session until its status is `status`.
    pub async fn wait_status(&self, token: &str, status: &str) -> anyhow::Result<Value> {
        let started = Instant::now();
        loop {
            let s = self.session(token).await?;
            if s["status"] == status {
                return Ok(s);
            }
            if started.elapsed() > Duration::from_secs(15) {
                bail!("session {token} stayed {} (wanted {status})", s["status"]);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for TestHub {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The rmcp client side: records progress, answers roots.
#[derive(Clone)]
pub struct TestClient {
    pub name: String,
    pub root: Option<String>,
    pub progress: Arc<Mutex<Vec<ProgressNotificationParam>>>,
    /// Declares the MCP Tasks extension.
    pub tasks: bool,
}

impl TestClient {
    pub fn named(name: &str) -> TestClient {
        TestClient {
            name: name.to_owned(),
            root: None,
            progress: Arc::default(),
            tasks: false,
        }
    }
}

impl ClientHandler for TestClient {
    fn get_info(&self) -> ClientConfig {
        let caps = match (self.root.is_some(), self.tasks) {
            (true, true) => ClientCapabilities::builder()
                .enable_roots()
                .enable_tasks()
                .build(),
            (true, false) => ClientCapabilities::builder().enable_roots().build(),
            (false, true) => ClientCapabilities::builder().enable_tasks().build(),
            (false, false) => ClientCapabilities::default(),
        };
        ClientConfig::new(caps, Implementation::new(self.name.clone(), "1.0"))
            .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.lock().unwrap().push(params);
    }

    #[allow(deprecated)]
    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, rmcp::ErrorData> {
        Ok(ListRootsResult::new(
            self.root.iter().map(|r| Root::new(r.clone())).collect(),
        ))
    }
}

pub type Client = RunningService<RoleClient, TestClient>;

pub struct BridgeOptions<'a> {
    pub hubs: String,
    pub secret: Option<&'a str>,
    pub home: &'a Path,
    pub host: &'a str,
    pub client_name: &'a str,
    pub root: Option<&'a str>,
    pub autostart: bool,
    pub extra_env: Vec<(&'a str, String)>,
}

impl<'a> BridgeOptions<'a> {
    /// A bridge for a hub at `url` that is not a [`TestHub`] (a fake one), with `home`.
    pub fn for_url(url: String, home: &'a Path) -> Self {
        BridgeOptions {
            hubs: url,
            secret: Some("s"),
            home,
            host: "test-host",
            client_name: "holdline-test",
            root: None,
            autostart: false,
            extra_env: vec![],
        }
    }

    pub fn for_hub(hub: &'a TestHub) -> Self {
        BridgeOptions {
            hubs: hub.url(),
            secret: Some(&hub.secret),
            home: &hub.home,
            host: "test-host",
            client_name: "holdline-test",
            root: Some("file:///home/dev/project%20one"),
            autostart: false,
            extra_env: vec![("HOLDLINE_POLL_MS", "400".to_owned())],
        }
    }
}

pub async fn start_bridge(o: BridgeOptions<'_>) -> anyhow::Result<Client> {
    let mut cmd = tokio::process::Command::new(bridge_bin());
    cmd.env("HOLDLINE_HUB", &o.hubs)
        .env("HOLDLINE_HOME", o.home)
        .env("HOME", o.home)
        .env("HOLDLINE_HOST_ID", o.host)
        .env_remove("HOLDLINE_SECRET")
        .env_remove("HOLDLINE_MAX_WAIT_SEC")
        // Auto-start finds the hub under test beside the bridge, as an installed one does.
        .env_remove("HOLDLINE_HUB_BIN")
        .env("HOLDLINE_LOG", "holdline_mcp=debug");
    if let Some(s) = o.secret {
        cmd.env("HOLDLINE_SECRET", s);
    }
    if !o.autostart {
        cmd.env("HOLDLINE_NO_AUTOSTART", "1");
    } else {
        cmd.env_remove("HOLDLINE_NO_AUTOSTART");
    }
    for (k, v) in &o.extra_env {
        cmd.env(k, v);
    }
    let (transport, _stderr) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::inherit())
        .spawn()?;
    let client = TestClient {
        root: o.root.map(str::to_owned),
        ..TestClient::named(o.client_name)
    };
    Ok(client.serve(transport).await?)
}

/// A new agent key named `name`, made with the hub's secret.
pub async fn make_key(hub: &TestHub, name: &str) -> String {
    let made: Value = hub
        .http
        .post(format!("{}/api/keys", hub.url()))
        .bearer_auth(&hub.secret)
        .json(&json!({"name": name}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    made["key"].as_str().expect("a key").to_owned()
}

/// A client named `client_name` of the hub's own `/mcp` (Streamable HTTP) sending `bearer`.
pub async fn start_remote(
    hub: &TestHub,
    bearer: &str,
    client_name: &str,
) -> anyhow::Result<Client> {
    start_remote_as(hub, bearer, TestClient::named(client_name)).await
}

/// `client` on the hub's own `/mcp`, sending `bearer`.
pub async fn start_remote_as(
    hub: &TestHub,
    bearer: &str,
    client: TestClient,
) -> anyhow::Result<Client> {
    let transport =
        rmcp::transport::StreamableHttpClientTransport::from_config(remote_config(hub, bearer));
    Ok(client.serve(transport).await?)
}

/// A client named `client_name` of the hub's own `/mcp` that also sends `header: value`.
pub async fn start_remote_with_header(
    hub: &TestHub,
    bearer: &str,
    client_name: &str,
    (header, value): (&'static str, &str),
) -> anyhow::Result<Client> {
    let config = remote_config(hub, bearer).custom_headers(
        [(
            axum::http::HeaderName::from_static(header),
            axum::http::HeaderValue::from_str(value)?,
        )]
        .into(),
    );
    let transport = rmcp::transport::StreamableHttpClientTransport::from_config(config);
    Ok(TestClient::named(client_name).serve(transport).await?)
}

/// `client` on the hub's own `/mcp` speaking MCP 2026-07-28: `server/discover`, no
/// session, every request self-contained.
pub async fn start_remote_stateless(
    hub: &TestHub,
    bearer: &str,
    client: TestClient,
) -> anyhow::Result<Client> {
    use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
    let mode = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    let transport =
        rmcp::transport::StreamableHttpClientTransport::from_config(remote_config(hub, bearer));
    Ok(client.serve_with_lifecycle(transport, mode).await?)
}

/// Streamable HTTP to the hub's `/mcp` with `Authorization: Bearer <bearer>`.
fn remote_config(
    hub: &TestHub,
    bearer: &str,
) -> rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig {
    rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(format!(
        "{}/mcp",
        hub.url()
    ))
    .auth_header(bearer.to_owned())
}

pub fn args(v: Value) -> rmcp::model::JsonObject {
    v.as_object().cloned().expect("object")
}

pub async fn call(client: &Client, tool: &'static str, a: Value) -> anyhow::Result<CallToolResult> {
    Ok(client
        .call_tool(CallToolRequestParams::new(tool).with_arguments(args(a)))
        .await?)
}

/// Starts a tool call and hands back its handle (for cancel, progress token).
pub async fn start_call(
    client: &Client,
    tool: &'static str,
    a: Value,
) -> anyhow::Result<rmcp::service::RequestHandle<RoleClient>> {
    Ok(client
        .send_request_with_option(
            ClientRequest::CallToolRequest(Request::new(
                CallToolRequestParams::new(tool).with_arguments(args(a)),
            )),
            PeerRequestOptions::no_options(),
        )
        .await?)
}

pub async fn finish(
    handle: rmcp::service::RequestHandle<RoleClient>,
) -> anyhow::Result<CallToolResult> {
    match handle.await_response().await? {
        ServerResult::CallToolResult(r) => Ok(r),
        other => bail!("unexpected answer {other:?}"),
    }
}

pub fn text(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

pub fn structured(r: &CallToolResult) -> &Value {
    r.structured_content.as_ref().expect("structuredContent")
}

pub async fn init(client: &Client, title: &str) -> anyhow::Result<String> {
    let r = call(client, "init_conversation", json!({"cursorTitle": title})).await?;
    assert_ne!(r.is_error, Some(true), "init failed: {}", text(&r));
    assert!(text(&r).contains("wait_for_user_input"));
    Ok(structured(&r)["token"].as_str().unwrap().to_owned())
}

/// The `resume` value a wait result hands back, checked to be in its text too.
pub fn resume_of(r: &rmcp::model::CallToolResult) -> String {
    let resume = structured(r)["resume"].as_str().expect("resume").to_owned();
    assert!(text(r).contains(&resume), "{}", text(r));
    resume
}

pub fn count_messages(session: &Value, content: &str) -> usize {
    session["messages"]
        .as_array()
        .map(|m| m.iter().filter(|m| m["content"] == content).count())
        .unwrap_or(0)
}
