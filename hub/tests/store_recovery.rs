//! Storage faults the hub must live through: a disk that fills up and is
//! freed again (writes work again by themselves, nothing answered 200 lost),
//! a damaged store (refused at start with one line and the way back, never a
//! panic, never a partial open), and backups with `verify` and `restore`.

mod realhub;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use realhub::{RealHub, free_addr, hub_command, run_cli};
use serde_json::{Value, json};

/// A small tmpfs mounted for one test; unmounted when dropped, also when the
/// test fails.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// `None` (with a message) when not root: only root may mount.
    fn mount(size: &str) -> Option<Tmpfs> {
        if !running_as_root() {
            eprintln!("skipped: a real full disk needs a tmpfs, and mounting one needs root");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size},mode=0700")])
            .arg("tmpfs")
            .arg(dir.path())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            eprintln!("skipped: mount -t tmpfs failed (no CAP_SYS_ADMIN in this container?)");
            return None;
        }
        Some(Tmpfs { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

fn running_as_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// Fills the file system holding `dir` with one file, up to the last byte.
fn fill(dir: &Path) -> PathBuf {
    use std::io::Write;
    let path = dir.join("filler");
    let mut f = std::fs::File::create(&path).unwrap();
    let block = vec![0x5a; 64 * 1024];
    loop {
        if f.write_all(&block).is_err() {
            break;
        }
    }
    // The last partial block, byte by byte in small pieces.
    for _ in 0..64 {
        if f.write_all(&block[..1024]).is_err() {
            break;
        }
    }
    let _ = f.sync_all();
    path
}

fn who(i: usize) -> Value {
    json!({"cursorTitle": format!("chat {i}"), "workspace": "/w", "hostIp": "10.0.0.1"})
}

/// The texts of every message the hub shows for `token`.
async fn texts(api: &realhub::Api, token: &str) -> Vec<String> {
    api.session(token).await["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn a_full_disk_heals_by_itself_once_there_is_room() {
    let Some(fs) = Tmpfs::mount("12m") else {
        return;
    };
    let home = fs.path().join("home");
    let mut hub = RealHub::start(&home, free_addr()).await;
    let token = hub.api.ok("/api/init", &who(0)).await["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut answered = Vec::new();
    for i in 0..5 {
        let text = format!("before {i}");
        hub.api
            .ok("/api/reply", &json!({"token": token, "text": text}))
            .await;
        answered.push(text);
    }

    let filler = fill(fs.path());
    let body = "y".repeat(2000);
    let mut refused = 0;
    for i in 0..60 {
        let text = format!("full {i} {body}");
        let (status, v) = hub
            .api
            .post("/api/reply", &json!({"token": token, "text": text}))
            .await
            .expect("the hub answers with a full disk");
        match status {
            200 => answered.push(text),
            500 => {
                assert!(
                    v["error"]["message"]
                        .as_str()
                        .is_some_and(|m| m.contains("disk")),
                    "{v}"
                );
                refused += 1;
                if refused >= 3 {
                    break;
                }
            }
            other => panic!("a reply on a full disk answered {other}: {v}"),
        }
    }
    assert!(refused >= 3, "the disk never filled up");
    let (status, h) = health(hub.addr, None).await;
    assert_eq!(status, 503, "a failing store is not healthy: {h}");
    assert_eq!(h["ok"], false, "{h}");
    assert_eq!(h["store"]["state"], "failing", "{h}");
    assert!(h["store"]["since"].is_i64(), "{h}");
    assert!(
        h["store"]["lastError"].is_null(),
        "the error's text is the person's: {h}"
    );
    let (_, h) = health(hub.addr, Some(&hub.api.secret)).await;
    assert!(h["store"]["lastError"].is_string(), "{h}");

    std::fs::remove_file(filler).unwrap();
    // No restart: the hub finds room by itself.
    let deadline = Instant::now() + Duration::from_secs(30);
    let text = "after the disk was freed".to_owned();
    loop {
        let (status, v) = hub
            .api
            .post("/api/reply", &json!({"token": token, "text": text}))
            .await
            .expect("the hub answers");
        if status == 200 {
            answered.push(text);
            break;
        }
        assert!(
            Instant::now() < deadline,
            "writes still fail 30 s after the disk was freed: {v}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    for i in 0..3 {
        let text = format!("after {i}");
        hub.api
            .ok("/api/reply", &json!({"token": token, "text": text}))
            .await;
        answered.push(text);
    }
    let (status, h) = health(hub.addr, None).await;
    assert_eq!(status, 200, "{h}");
    assert_eq!(h["ok"], true, "{h}");
    assert_eq!(h["store"]["state"], "ok", "{h}");

    let shown = texts(&hub.api, &token).await;
    for t in &answered {
        assert!(shown.contains(t), "a reply answered 200 is missing: {t}");
    }
    // And on disk: a hub killed now starts with every one of them.
    hub.kill();
    hub.restart().await;
    let shown = texts(&hub.api, &token).await;
    for t in &answered {
        assert!(shown.contains(t), "lost after a restart: {t}");
    }
    hub.stop();
}

/// `/healthz`'s status and body, whatever the status.
async fn health(addr: std::net::SocketAddr, secret: Option<&str>) -> (u16, Value) {
    let mut req = reqwest::Client::new().get(format!("http://{addr}/healthz"));
    if let Some(secret) = secret {
        req = req.bearer_auth(secret);
    }
    let res = req
        .timeout(Duration::from_secs(5))
        .send()
        .await
        .expect("healthz answers");
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}
