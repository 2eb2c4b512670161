//! The real `holdline-hub` binary as the durability tests drive it: started on
//! a fixed loopback port with a temp home, killed with SIGKILL, restarted, and
//! its admin commands run against the same home.

use std::fs::OpenOptions;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The hub binary cargo built for these tests.
pub const HUB_BIN: &str = env!("CARGO_BIN_EXE_holdline-hub");

/// A loopback address with a port free right now, kept across restarts so
/// clients reconnect to the same place.
pub fn free_addr() -> SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
    l.local_addr().unwrap()
}

/// `holdline-hub` with a clean environment (no user home, sync or listen
/// settings leak in) and the given home.
pub fn hub_command(home: &Path) -> Command {
    let mut c = Command::new(HUB_BIN);
    c.env_remove("HOLDLINE_MONGO_URI")
        .env_remove("HOLDLINE_LISTEN")
        .env("HOLDLINE_HOME", home)
        .env("HOLDLINE_LOG", "warn")
        .stdin(Stdio::null());
    c
}

/// Runs `serve` on `home` at `addr` with `RUST_BACKTRACE=1`, which must fail within 30 s
/// (a hub still running then is killed and `what` panics with its stderr); answers its
/// exit status and standard error.
pub fn serve_must_fail(
    home: &Path,
    addr: SocketAddr,
    what: &str,
) -> (std::process::ExitStatus, String) {
    let mut child = hub_command(home)
        .args(["serve", "--listen", &addr.to_string()])
        .env("RUST_BACKTRACE", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn holdline-hub");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "{what}: the hub kept running on a store it should refuse; stderr:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let stderr = String::from_utf8_lossy(&child.wait_with_output().unwrap().stderr).into_owned();
    (status, stderr)
}

/// Runs an admin command (`export`, `import`, …) to completion.
pub fn run_cli(home: &Path, args: &[&str]) -> Output {
    hub_command(home)
        .args(args)
        .output()
        .expect("run holdline-hub")
}

/// A running `holdline-hub serve`; killed when dropped.
pub struct RealHub {
    pub home: PathBuf,
    pub addr: SocketAddr,
    pub api: Api,
    child: Option<Child>,
    /// Standard error of every start, appended.
    log: PathBuf,
    /// `HOLDLINE_LOG` for the hub (quiet by default).
    log_level: &'static str,
    /// The open-files limit (soft and hard) to start the hub under.
    nofile: Option<u32>,
}

impl RealHub {
    /// Like [`RealHub::start`], logging at `info` (what a service logs).
    pub async fn start_logging(home: &Path, addr: SocketAddr) -> RealHub {
        Self::start_with(home, addr, "info").await
    }

    /// Starts the hub and waits until `/healthz` answers.
    pub async fn start(home: &Path, addr: SocketAddr) -> RealHub {
        Self::start_with(home, addr, "warn").await
    }

    /// Starts the hub under an open-files limit of `nofile` (as a service
    /// manager's `LimitNOFILE` would), logging at `info`.
    pub async fn start_with_nofile(home: &Path, addr: SocketAddr, nofile: u32) -> RealHub {
        let mut hub = Self::unstarted(home, addr, "info");
        hub.nofile = Some(nofile);
        hub.launch().await;
        hub
    }

    fn unstarted(home: &Path, addr: SocketAddr, log_level: &'static str) -> RealHub {
        RealHub {
            home: home.to_owned(),
            addr,
            api: Api::new(addr, String::new()),
            child: None,
            log: home.with_extension("stderr.log"),
            log_level,
            nofile: None,
        }
    }

    async fn start_with(home: &Path, addr: SocketAddr, log_level: &'static str) -> RealHub {
        let mut hub = Self::unstarted(home, addr, log_level);
        hub.launch().await;
        hub
    }

    async fn launch(&mut self) {
        assert!(self.child.is_none(), "hub already running");
        // A killed hub leaves its address file behind; start from a clean slate.
        let _ = std::fs::remove_file(self.home.join("hub.addr"));
        let err = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .expect("open the hub's stderr log");
        let mut command = hub_command(&self.home);
        if let Some(n) = self.nofile {
            let envs: Vec<_> = command
                .get_envs()
                .map(|(k, v)| (k.to_owned(), v.map(|v| v.to_owned())))
                .collect();
            command = Command::new("sh");
            command
                .args([
                    "-c",
                    &format!("ulimit -n {n} && exec \"$0\" \"$@\""),
                    HUB_BIN,
                ])
                .stdin(Stdio::null());
            for (k, v) in envs {
                match v {
                    Some(v) => command.env(k, v),
                    None => command.env_remove(k),
                };
            }
        }
        let child = command
            .env("HOLDLINE_LOG", self.log_level)
            .args(["serve", "--listen", &self.addr.to_string()])
            .stdout(Stdio::null())
            .stderr(err)
            .spawn()
            .expect("spawn holdline-hub");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                self.child = None;
                panic!(
                    "holdline-hub exited during start with {status}; stderr:\n{}",
                    self.stderr()
                );
            }
            if self.api.health().await.is_some() {
                break;
            }
            if Instant::now() > deadline {
                let pid = self.child.as_ref().unwrap().id();
                panic!(
                    "holdline-hub (pid {pid}) did not answer within 30 s; stderr:\n{}\n{}",
                    self.stderr(),
                    self.post_mortem(pid)
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let secret = std::fs::read_to_string(self.home.join("secret")).expect("read the secret");
        self.api.secret = secret.trim().to_owned();
    }

    /// For a hub that hangs: its threads' stacks (when gdb is installed) and
    /// a copy of its home that outlives the test's temp folder.
    fn post_mortem(&self, pid: u32) -> String {
        let stacks = Command::new("gdb")
            .args([
                "-p",
                &pid.to_string(),
                "-batch",
                "-ex",
                "thread apply all bt 25",
            ])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_else(|e| format!("(no gdb: {e})"));
        let keep = std::env::temp_dir().join(format!("holdline-hang-{pid}"));
        let copied = Command::new("cp")
            .arg("-a")
            .arg(&self.home)
            .arg(&keep)
            .status()
            .is_ok_and(|s| s.success());
        let kept = if copied {
            format!("its home is kept in {}", keep.display())
        } else {
            "its home could not be kept".to_owned()
        };
        format!("{kept}; threads:\n{stacks}")
    }

    /// SIGKILL: no shutdown path runs, nothing is flushed that was not already.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// SIGTERM (what systemd and launchd send) and wait for a clean exit.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = Command::new("kill")
                .args(["-TERM", &c.id().to_string()])
                .status();
            let status = c.wait().expect("wait for holdline-hub");
            assert!(
                status.success(),
                "holdline-hub stopped with {status}; stderr:\n{}",
                self.stderr()
            );
        }
    }

    /// The running hub's process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("the hub runs").id()
    }

    /// The running hub's resident memory, in KiB.
    pub fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))
            .expect("read the hub's /proc status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS in /proc status")
    }

    /// Sends SIGTERM and answers the exit status if the hub exits within `limit`.
    pub fn terminate_within(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let child = self.child.as_mut()?;
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let until = Instant::now() + limit;
        while Instant::now() < until {
            if let Some(status) = child.try_wait().unwrap() {
                self.child = None;
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }

    pub async fn restart(&mut self) {
        self.launch().await;
    }

    /// Everything the hub printed on stderr so far, across restarts.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for RealHub {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A thin HTTP client for the hub's API.
#[derive(Clone)]
pub struct Api {
    http: reqwest::Client,
    base: String,
    pub secret: String,
}

/// What came back: the status and the JSON body (`Null` if none).
pub type Answer = (u16, Value);

impl Api {
    pub fn new(addr: SocketAddr, secret: String) -> Api {
        Api {
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(10))
                .build()
                .unwrap(),
            base: format!("http://{addr}"),
            secret,
        }
    }

    async fn send(&self, req: reqwest::RequestBuilder) -> Result<Answer, reqwest::Error> {
        let res = req.bearer_auth(&self.secret).send().await?;
        let status = res.status().as_u16();
        let bytes = res.bytes().await?;
        Ok((
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        ))
    }

    pub async fn post(&self, path: &str, body: &Value) -> Result<Answer, reqwest::Error> {
        self.send(self.http.post(format!("{}{path}", self.base)).json(body))
            .await
    }

    pub async fn get(&self, path: &str) -> Result<Answer, reqwest::Error> {
        self.send(self.http.get(format!("{}{path}", self.base)))
            .await
    }

    /// GET `path` with the secret: the status and the raw bytes.
    pub async fn get_bytes(&self, path: &str) -> Result<(u16, Vec<u8>), reqwest::Error> {
        let res = self
            .http
            .get(format!("{}{path}", self.base))
            .bearer_auth(&self.secret)
            .send()
            .await?;
        let status = res.status().as_u16();
        Ok((status, res.bytes().await?.to_vec()))
    }

    /// `/healthz` with the secret (the counts), or `None` when the hub does not answer.
    pub async fn health(&self) -> Option<Value> {
        let res = self
            .http
            .get(format!("{}/healthz", self.base))
            .bearer_auth(&self.secret)
            .timeout(Duration::from_secs(2))
            .send()
            .await
            .ok()?;
        res.status().is_success().then_some(())?;
        res.json().await.ok()
    }

    /// POST that must answer 200.
    pub async fn ok(&self, path: &str, body: &Value) -> Value {
        let (status, v) = self.post(path, body).await.expect("hub answers");
        assert_eq!(status, 200, "{path} {body} answered {v}");
        v
    }

    /// A session with its whole history (every page), as the API shows it.
    pub async fn session(&self, token: &str) -> Value {
        let (status, mut first) = self
            .get(&format!("/api/sessions/{token}?limit=500"))
            .await
            .expect("hub answers");
        assert_eq!(status, 200, "GET session {token}: {first}");
        let mut before = first["nextBefore"].as_u64();
        while let Some(b) = before {
            let (_, page) = self
                .get(&format!("/api/sessions/{token}?limit=500&before={b}"))
                .await
                .expect("hub answers");
            let mut older = page["messages"].as_array().cloned().unwrap_or_default();
            older.extend(first["messages"].as_array().cloned().unwrap_or_default());
            first["messages"] = Value::Array(older);
            before = page["nextBefore"].as_u64();
        }
        first
    }
}

/// One request with `bearer` as its credential: the status and the JSON body.
pub async fn call(
    hub: &RealHub,
    method: reqwest::Method,
    path: &str,
    bearer: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let mut req = http
        .request(method, format!("http://{}{path}", hub.addr))
        .bearer_auth(bearer);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let res = req.send().await.expect("the hub answers");
    let status = res.status().as_u16();
    let bytes = res.bytes().await.unwrap_or_default();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

/// `holdline-hub key create --name NAME`: the key, from stdout's first line.
pub fn create_key(home: &Path, name: &str) -> String {
    let out = run_cli(home, &["key", "create", "--name", name]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "key create failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let key = stdout.lines().next().unwrap_or("").to_owned();
    assert!(
        key.starts_with("hlk_") && key.len() == 47,
        "not a key: {key:?}"
    );
    key
}
