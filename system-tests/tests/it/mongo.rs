//! MongoDB sync against a real MongoDB-wire server (SecantusDB's
//! `secantusd-py`, installed by scripts/test.sh): new and changed sessions
//! and messages, an outage and the catch-up, and two hubs sharing one
//! database with adoption through a real bridge failover.
//!
//! Skipped, with the reason printed, only when that server is not installed.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use crate::harness::{bridge_bin, free_port, hub_bin};
use crate::inproc::{Options, TestHub};
use mongodb::bson::{Document, doc};
use serde_json::{Value, json};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_owned()
}

fn secantusd() -> Option<PathBuf> {
    let path = std::env::var_os("HOLDLINE_TEST_SECANTUSD")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target/test-venvs/mongo/bin/secantusd-py"));
    if path.exists() {
        Some(path)
    } else {
        eprintln!(
            "skipped: no MongoDB-wire server at {} (scripts/test.sh installs SecantusDB==0.7.0b3 there)",
            path.display()
        );
        None
    }
}

/// A `secantusd-py` process on loopback.
struct Mongo {
    bin: PathBuf,
    port: u16,
    dir: tempfile::TempDir,
    child: Option<Child>,
}

impl Mongo {
    async fn start() -> Option<Mongo> {
        let bin = secantusd()?;
        let mut m = Mongo {
            bin,
            port: free_port(),
            dir: tempfile::tempdir().unwrap(),
            child: None,
        };
        m.restart().await;
        Some(m)
    }

    fn uri(&self) -> String {
        format!("mongodb://127.0.0.1:{}/?directConnection=true", self.port)
    }

    async fn restart(&mut self) {
        let child = Command::new(&self.bin)
            .args([
                "--host",
                "127.0.0.1",
                "--port",
                &self.port.to_string(),
                "--storage-path",
            ])
            .arg(self.dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start secantusd-py");
        self.child = Some(child);
        let client = self.client().await;
        let deadline = Instant::now() + Duration::from_secs(30);
        while client
            .database("admin")
            .run_command(doc! {"ping": 1})
            .await
            .is_err()
        {
            assert!(
                Instant::now() < deadline,
                "secantusd-py did not answer ping"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Stops the server as an operator would (SIGTERM), so it keeps what it
    /// acknowledged; SIGKILL only if it does not exit.
    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = Command::new("kill")
                .args(["-TERM", &c.id().to_string()])
                .status();
            let deadline = Instant::now() + Duration::from_secs(10);
            while c.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    async fn client(&self) -> mongodb::Client {
        let mut o = mongodb::options::ClientOptions::parse(self.uri())
            .await
            .unwrap();
        o.server_selection_timeout = Some(Duration::from_secs(2));
        mongodb::Client::with_options(o).unwrap()
    }

    async fn coll(&self, name: &str) -> mongodb::Collection<Document> {
        self.client().await.database("holdline").collection(name)
    }
}

impl Drop for Mongo {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A hub in this process syncing to `uri`.
async fn hub(home: &Path, uri: &str, secret: Option<&str>, port: u16) -> TestHub {
    let options = Options {
        mongo_uri: Some(uri.to_owned()),
        secret: secret.map(str::to_owned),
        port,
        ..Options::default()
    };
    TestHub::start_at(home, options).await
}

/// Polls `check` until it holds or `secs` pass.
async fn eventually<F, Fut>(secs: u64, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn count(coll: &mongodb::Collection<Document>, filter: Document) -> u64 {
    coll.count_documents(filter).await.unwrap_or(0)
}

fn fingerprint(title: &str) -> Value {
    json!({"cursorTitle": title, "workspace": "/w", "hostIp": "10.0.0.2"})
}

#[tokio::test]
async fn sessions_and_messages_reach_mongodb_and_follow_changes() {
    let Some(mongo) = Mongo::start().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let hub = hub(dir.path(), &mongo.uri(), None, 0).await;
    let token = hub.ok("/api/init", fingerprint("Sync me")).await["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let wait = hub
        .ok(
            "/api/wait/register",
            json!({"token": token, "message": "agent words", "cursorTitle": "Sync me", "workspace": "/w", "hostIp": "10.0.0.2", "requestId": "q1"}),
        )
        .await["waitId"]
        .as_str()
        .unwrap()
        .to_owned();
    let reply = hub
        .ok(
            "/api/reply",
            json!({"token": token, "text": "person words"}),
        )
        .await;

    let sessions = mongo.coll("sessions").await;
    let messages = mongo.coll("messages").await;
    let replies = mongo.coll("replies").await;
    eventually(10, "session and messages in MongoDB", || async {
        count(&messages, doc! {"token": &token}).await == 2
            && count(&sessions, doc! {"_id": &token, "status": "replied"}).await == 1
            && count(&replies, doc! {"token": &token}).await == 1
    })
    .await;
    let m = messages
        .find_one(doc! {"_id": format!("{token}:1")})
        .await
        .unwrap()
        .unwrap();
    assert_eq!(m.get_str("content").unwrap(), "person words");
    let s = sessions
        .find_one(doc! {"_id": &token})
        .await
        .unwrap()
        .unwrap();
    assert_eq!(s.get_str("title").unwrap(), "Sync me");
    assert_eq!(
        s.get_str("owner").unwrap(),
        hub.url.trim_start_matches("http://")
    );

    // A change is followed; the delivered reply leaves the queue.
    hub.ok(
        "/api/wait/ack",
        json!({"token": token, "waitId": wait, "replyId": reply["replyId"]}),
    )
    .await;
    hub.ok(
        "/api/session/config",
        json!({"token": token, "displayTitle": "Renamed"}),
    )
    .await;
    eventually(10, "the change in MongoDB", || async {
        count(
            &sessions,
            doc! {"_id": &token, "status": "holding", "title": "Renamed"},
        )
        .await
            == 1
            && count(&replies, doc! {"token": &token}).await == 0
    })
    .await;
    let h = hub.health().await;
    assert_eq!(h["mongo"]["state"], "ok", "{h}");
    assert_eq!(h["mongo"]["pending"], 0);
    assert_eq!(
        count(&messages, doc! {"token": &token}).await,
        2,
        "no duplicates"
    );
}

#[tokio::test]
async fn an_outage_changes_nothing_for_clients_and_sync_catches_up() {
    let Some(mut mongo) = Mongo::start().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let hub = hub(dir.path(), &mongo.uri(), None, 0).await;
    let first = hub.ok("/api/init", fingerprint("before")).await["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let sessions = mongo.coll("sessions").await;
    eventually(10, "first session synced", || async {
        count(&sessions, doc! {"_id": &first}).await == 1
    })
    .await;

    mongo.stop();
    let mut tokens = vec![first.clone()];
    let mut slowest = Duration::ZERO;
    for i in 0..5 {
        let started = Instant::now();
        let t = hub
            .ok("/api/init", fingerprint(&format!("during {i}")))
            .await["token"]
            .as_str()
            .unwrap()
            .to_owned();
        for j in 0..3 {
            hub.ok(
                "/api/reply",
                json!({"token": t, "text": format!("reply {j}")}),
            )
            .await;
        }
        slowest = slowest.max(started.elapsed());
        tokens.push(t);
    }
    // Not an assertion (the machine is shared): the figure is printed for the record.
    eprintln!("slowest init + 3 replies while MongoDB was down: {slowest:?}");
    eventually(20, "healthz reports the outage", || async {
        let h = hub.health().await;
        h["mongo"]["state"] == "down" && h["mongo"]["pending"].as_u64().unwrap_or(0) >= 5
    })
    .await;
    let h = hub.health().await;
    let shown = h.to_string();
    assert!(h["mongo"]["lastError"].is_string(), "{shown}");

    mongo.restart().await;
    let sessions = mongo.coll("sessions").await;
    let messages = mongo.coll("messages").await;
    eventually(40, "catch-up after the outage", || async {
        count(&sessions, doc! {}).await == 6 && count(&messages, doc! {}).await == 15
    })
    .await;
    eventually(10, "healthz back to ok", || async {
        let h = hub.health().await;
        h["mongo"]["state"] == "ok" && h["mongo"]["pending"] == 0
    })
    .await;
    // Idempotent: nothing doubled even though pushes were retried.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(count(&messages, doc! {}).await, 15);
}

#[tokio::test]
async fn a_hub_started_while_mongodb_is_absent_works_and_syncs_later() {
    let Some(mut mongo) = Mongo::start().await else {
        return;
    };
    mongo.stop();
    let dir = tempfile::tempdir().unwrap();
    let hub = hub(dir.path(), &mongo.uri(), None, 0).await;
    let token = hub.ok("/api/init", fingerprint("offline start")).await["token"]
        .as_str()
        .unwrap()
        .to_owned();
    hub.ok("/api/reply", json!({"token": token, "text": "queued"}))
        .await;
    let h = hub.health().await;
    assert_ne!(h["mongo"]["state"], "ok", "{h}");
    mongo.restart().await;
    let sessions = mongo.coll("sessions").await;
    eventually(40, "sync after MongoDB arrives", || async {
        count(&sessions, doc! {"_id": &token}).await == 1
    })
    .await;
}

#[tokio::test]
async fn credentials_in_the_uri_never_show() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let uri = format!("mongodb://alice:hunter2pass@127.0.0.1:{port}/?directConnection=true");
    let hub = hub(dir.path(), &uri, None, 0).await;
    eventually(20, "a sync error is reported", || async {
        hub.health().await["mongo"]["lastError"].is_string()
    })
    .await;
    let shown = hub.health().await.to_string();
    assert!(!shown.contains("hunter2pass"), "{shown}");
    hub.stop().await;
    let log = std::fs::read_to_string(dir.path().join("logs/hub.log")).unwrap_or_default();
    assert!(!log.contains("hunter2pass"));
    let out = Command::new(hub_bin())
        .arg("--home")
        .arg(dir.path())
        .arg("config")
        .env("HOLDLINE_MONGO_URI", &uri)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("mongo_uri") && !text.contains("hunter2pass"),
        "{text}"
    );
}

/// The real bridge, spoken to as an MCP client would (JSON-RPC lines on stdio).
struct Bridge {
    child: Child,
    stdin: ChildStdin,
    lines: std::sync::mpsc::Receiver<Value>,
    next_id: u64,
}

impl Bridge {
    fn start(hubs: &str, secret: &str, home: &Path) -> Bridge {
        let mut child = Command::new(bridge_bin())
            .env("HOLDLINE_HUB", hubs)
            .env("HOLDLINE_SECRET", secret)
            .env("HOLDLINE_HOME", home)
            .env("HOLDLINE_HOST_ID", "10.0.0.2")
            .env("HOLDLINE_NO_AUTOSTART", "1")
            .env("HOLDLINE_POLL_MS", "1000")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Ok(v) = serde_json::from_str::<Value>(&line)
                    && tx.send(v).is_err()
                {
                    break;
                }
            }
        });
        let mut b = Bridge {
            child,
            stdin,
            lines: rx,
            next_id: 1,
        };
        let init = b.request("initialize", json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "holdline-test", "version": "1"}}));
        b.wait_for(init, 20);
        b.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        b
    }

    fn send(&mut self, v: Value) {
        writeln!(self.stdin, "{v}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn request(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    fn call(&mut self, tool: &str, args: Value) -> u64 {
        self.request("tools/call", json!({"name": tool, "arguments": args}))
    }

    fn wait_for(&mut self, id: u64, secs: u64) -> Value {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let v = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no answer to request {id}"));
            if v["id"] == json!(id) {
                return v;
            }
        }
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// Multi-threaded: the bridge is read with blocking calls while the hubs run here.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_hubs_share_sessions_and_a_failed_over_wait_is_adopted() {
    let Some(mongo) = Mongo::start().await else {
        return;
    };
    let secret = "0123456789abcdef0123456789abcdef-shared";
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let port_a = free_port();
    let hub_a = hub(dir_a.path(), &mongo.uri(), Some(secret), port_a).await;
    let hub_b = hub(dir_b.path(), &mongo.uri(), Some(secret), 0).await;
    let name_a = hub_a.name().to_owned();
    let name_b = hub_b.name().to_owned();

    let bridge_home = tempfile::tempdir().unwrap();
    let mut bridge = Bridge::start(
        &format!("{},{}", hub_a.url, hub_b.url),
        secret,
        bridge_home.path(),
    );
    let id = bridge.call(
        "init_conversation",
        json!({"cursorTitle": "Failover", "workspace": "/w"}),
    );
    let init = bridge.wait_for(id, 20);
    let token = init["result"]["structuredContent"]["token"]
        .as_str()
        .unwrap_or_else(|| panic!("{init}"))
        .to_owned();

    // B sees A's session, marked with its owner, read-only.
    eventually(15, "hub B shows hub A's session", || async {
        let s = hub_b.get(&format!("/api/sessions/{token}")).await.1;
        s["hub"] == name_a.as_str() && s["mirror"] == true
    })
    .await;
    let (status, v) = hub_b
        .post("/api/reply", json!({"token": token, "text": "wrong hub"}))
        .await;
    assert_eq!(status, reqwest::StatusCode::FORBIDDEN, "{v}");

    // The agent waits on A; A goes away; the bridge moves to B, which adopts.
    let wait = bridge.call("wait_for_user_input", json!({"token": token, "message": "waiting through a failover", "cursorTitle": "Failover", "workspace": "/w"}));
    eventually(10, "the wait is registered on A and synced", || async {
        mongo
            .coll("sessions")
            .await
            .count_documents(doc! {"_id": &token, "status": "waiting"})
            .await
            .unwrap_or(0)
            == 1
    })
    .await;
    hub_a.stop().await;
    eventually(30, "hub B adopts the session", || async {
        let s = hub_b.get(&format!("/api/sessions/{token}")).await.1;
        s["hub"] == name_b.as_str() && s["mirror"] == false && s["status"] == "waiting"
    })
    .await;
    hub_b
        .ok(
            "/api/reply",
            json!({"token": token, "text": "answered on B"}),
        )
        .await;
    let result = tokio::task::spawn_blocking(move || {
        let r = bridge.wait_for(wait, 60);
        (r, bridge)
    })
    .await
    .unwrap();
    let (answer, _bridge) = result;
    assert!(answer.to_string().contains("answered on B"), "{answer}");
    let s = hub_b.get(&format!("/api/sessions/{token}")).await.1;
    let history: Vec<&str> = s["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        history,
        vec!["waiting through a failover", "answered on B"],
        "no message lost or doubled"
    );

    // A comes back: it keeps a copy and does not take the session back.
    let hub_a = hub(dir_a.path(), &mongo.uri(), Some(secret), port_a).await;
    eventually(15, "hub A sees that B owns it now", || async {
        let s = hub_a.get(&format!("/api/sessions/{token}")).await.1;
        s["mirror"] == true && s["hub"] == name_b.as_str()
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let doc = mongo
        .coll("sessions")
        .await
        .find_one(doc! {"_id": &token})
        .await
        .unwrap()
        .unwrap();
    assert_eq!(doc.get_str("owner").unwrap(), name_b);
}

#[tokio::test]
async fn a_questions_files_reach_mongodb_in_their_own_documents_and_another_hub_serves_them() {
    use base64::Engine as _;
    let Some(mongo) = Mongo::start().await else {
        return;
    };
    let secret = "0123456789abcdef0123456789abcdef-shared";
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let hub_a = hub(dir_a.path(), &mongo.uri(), Some(secret), 0).await;
    let hub_b = hub(dir_b.path(), &mongo.uri(), Some(secret), 0).await;
    let png: Vec<u8> = [0x89, b'P', b'N', b'G', 13, 10, 26, 10].repeat(1000);
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let token = hub_a.ok("/api/init", fingerprint("Files")).await["token"]
        .as_str()
        .unwrap()
        .to_owned();
    hub_a
        .ok(
            "/api/wait/register",
            json!({"token": token, "message": "see the chart", "cursorTitle": "Files",
                   "workspace": "/w", "hostIp": "10.0.0.2", "requestId": "q1",
                   "attachments": [{"name": "chart.png", "mimeType": "image/png", "data": b64(&png)}]}),
        )
        .await;

    let files = mongo.coll("attachments").await;
    eventually(10, "the file in MongoDB", || async {
        count(&files, doc! {"token": &token}).await == 1
    })
    .await;
    let d = files
        .find_one(doc! {"token": &token})
        .await
        .unwrap()
        .unwrap();
    assert_eq!(d.get_str("name").unwrap(), "chart.png");
    assert_eq!(d.get_binary_generic("data").unwrap(), &png);
    let m = mongo
        .coll("messages")
        .await
        .find_one(doc! {"_id": format!("{token}:0")})
        .await
        .unwrap()
        .unwrap();
    assert!(
        !format!("{m:?}").contains(&b64(&png[..64])),
        "the message document names the file only"
    );

    // Hub B's copy of the session serves the same bytes.
    let url = eventually_url(&hub_b, &token).await;
    let got = reqwest::Client::new()
        .get(format!("{}{url}", hub_b.url))
        .bearer_auth(secret)
        .send()
        .await
        .unwrap();
    assert_eq!(got.status(), 200);
    assert_eq!(got.bytes().await.unwrap().as_ref(), png.as_slice());
}

/// The url of the first file of `token`'s first message, once hub `h` has a copy.
async fn eventually_url(h: &TestHub, token: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let s = h.get(&format!("/api/sessions/{token}")).await.1;
        if let Some(url) = s["messages"][0]["attachments"][0]["url"].as_str() {
            return url.to_owned();
        }
        assert!(Instant::now() < deadline, "hub B has no copy: {s}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
