//! Storage faults the hub must live through: a disk that fills up and is
//! freed again (writes work again by themselves, nothing answered 200 lost),
//! a damaged store (refused at start with one line and the way back, never a
//! panic, never a partial open), and backups with `verify` and `restore`.

use crate::realhub;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use realhub::{RealHub, free_addr, run_cli};
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
    assert!(
        h.get("store").is_none(),
        "the store's state is the person's: {h}"
    );
    let (_, h) = health(hub.addr, Some(&hub.api.secret)).await;
    assert_eq!(h["store"]["state"], "failing", "{h}");
    assert!(h["store"]["since"].is_i64(), "{h}");
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
    let (status, h) = health(hub.addr, Some(&hub.api.secret)).await;
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

/// One session per chat, each with a wait and a queued reply; answers the
/// sessions' tokens and wait ids. The hub keeps running.
async fn sessions_with_queued_replies(hub: &RealHub, n: usize) -> Vec<(String, String)> {
    let mut made = Vec::new();
    for i in 0..n {
        let token = hub.api.ok("/api/init", &who(i)).await["token"].clone();
        let mut reg = who(i);
        reg["token"] = token.clone();
        reg["message"] = json!(format!("question {i}"));
        reg["requestId"] = json!("q1");
        let wait = hub.api.ok("/api/wait/register", &reg).await["waitId"].clone();
        hub.api
            .ok(
                "/api/reply",
                &json!({"token": token, "text": format!("go on {i}")}),
            )
            .await;
        made.push((
            token.as_str().unwrap().to_owned(),
            wait.as_str().unwrap_or_default().to_owned(),
        ));
    }
    made
}

fn db_file(home: &Path) -> PathBuf {
    home.join("db").join("db")
}

/// A small seeded generator, so each damage is the same on every run.
struct Rng(u64);

impl Rng {
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n)
            .map(|_| {
                self.0 ^= self.0 << 13;
                self.0 ^= self.0 >> 7;
                self.0 ^= self.0 << 17;
                (self.0 >> 24) as u8
            })
            .collect()
    }
}

/// 4 KiB of seeded random bytes at `fraction` of the sled file.
fn overwrite_at(home: &Path, fraction: f64, seed: u64) {
    use std::io::{Seek, SeekFrom, Write};
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(db_file(home))
        .unwrap();
    let len = f.metadata().unwrap().len();
    f.seek(SeekFrom::Start((len as f64 * fraction) as u64))
        .unwrap();
    f.write_all(&Rng(seed).bytes(4096)).unwrap();
}

fn truncate_to(home: &Path, fraction: f64) {
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(db_file(home))
        .unwrap();
    let len = f.metadata().unwrap().len();
    f.set_len((len as f64 * fraction) as u64).unwrap();
}

/// `serve` on a damaged home must exit non-zero with one line that names
/// the damage and `restore`, and no panic: answers that line.
fn assert_refused(home: &Path, what: &str) -> String {
    let (status, stderr) = realhub::serve_must_fail(home, free_addr(), what);
    assert!(!status.success(), "{what}: exit 0 on a damaged store");
    assert_ne!(
        status.code(),
        Some(101),
        "{what}: a panic's exit code\n{stderr}"
    );
    for noise in ["panicked", "backtrace", "thread '"] {
        assert!(
            !stderr.contains(noise),
            "{what}: stderr shows {noise:?}:\n{stderr}"
        );
    }
    let is_log = |l: &str| l.len() > 4 && l.as_bytes()[..4].iter().all(u8::is_ascii_digit);
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.trim().is_empty() && !is_log(l))
        .collect();
    assert_eq!(lines.len(), 1, "{what}: expected one line:\n{stderr}");
    let line = lines[0];
    for word in ["holdline-hub: ", "damaged", "holdline-hub restore"] {
        assert!(line.contains(word), "{what}: {word:?} missing from: {line}");
    }
    line.to_owned()
}

/// A home of 120 sessions, made by a real hub that then stopped cleanly.
async fn home_of_120(dir: &Path) -> PathBuf {
    let home = dir.join("home");
    let mut hub = RealHub::start(&home, free_addr()).await;
    sessions_with_queued_replies(&hub, 120).await;
    hub.stop();
    home
}

fn copy_home(from: &Path, to: &Path) {
    let ok = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "cp -a {} {}", from.display(), to.display());
}

/// One way to damage a stopped hub's store.
type Damage = Box<dyn Fn(&Path)>;

#[tokio::test]
async fn a_damaged_store_is_refused_with_the_way_back_never_opened_in_part() {
    let dir = tempfile::tempdir().unwrap();
    let made = home_of_120(dir.path()).await;
    let cases: [(&str, Damage); 3] = [
        (
            "random bytes at 50%",
            Box::new(|h| overwrite_at(h, 0.5, 0x5eed_0050)),
        ),
        (
            "random bytes at 90%",
            Box::new(|h| overwrite_at(h, 0.9, 0x5eed_0090)),
        ),
        ("cut to 60%", Box::new(|h| truncate_to(h, 0.6))),
    ];
    for (i, (what, damage)) in cases.iter().enumerate() {
        let home = dir.path().join(format!("case{i}"));
        copy_home(&made, &home);
        damage(&home);
        let line = assert_refused(&home, what);
        eprintln!("{what}: {line}");
    }
}

#[tokio::test]
async fn backup_verify_restore_brings_every_session_back() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let mut hub = RealHub::start(&home, free_addr()).await;
    let made = sessions_with_queued_replies(&hub, 120).await;

    // Only the person may take a backup.
    let key = hub.api.ok("/api/keys", &json!({"name": "agent"})).await["key"]
        .as_str()
        .unwrap()
        .to_owned();
    let as_agent = realhub::Api::new(hub.addr, key);
    let (status, v) = as_agent.post("/api/backup", &json!({})).await.unwrap();
    assert_eq!(status, 403, "an agent key took a backup: {v}");
    let (status, _) = realhub::Api::new(hub.addr, "wrong".into())
        .post("/api/backup", &json!({}))
        .await
        .unwrap();
    assert_eq!(status, 401);

    // Through the running hub, while replies and new sessions are written:
    // the backup is one moment, so it verifies whole.
    let writer = {
        let api = hub.api.clone();
        let tokens: Vec<String> = made.iter().map(|(t, _)| t.clone()).collect();
        tokio::spawn(async move {
            for (i, token) in tokens.iter().enumerate().take(60) {
                api.ok(
                    "/api/reply",
                    &json!({"token": token, "text": format!("more {i}")}),
                )
                .await;
                api.ok("/api/init", &who(1000 + i)).await;
            }
        })
    };
    let out = tokio::task::spawn_blocking({
        let home = home.clone();
        move || run_cli(&home, &["backup"])
    })
    .await
    .unwrap();
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        said.contains("backed up ") && said.contains(" sessions to "),
        "{said}"
    );
    writer.await.unwrap();
    let first = PathBuf::from(said.trim().rsplit(" to ").next().unwrap());
    let out = run_cli(&home, &["verify", first.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "a backup taken under writes: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Restore is refused while the hub runs.
    let backups = home.join("backups");
    let newest = || {
        let mut all: Vec<PathBuf> = std::fs::read_dir(&backups)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        all.sort();
        all.pop().expect("a backup")
    };
    let out = run_cli(&home, &["restore", newest().to_str().unwrap()]);
    assert!(!out.status.success(), "restored under a running hub");
    assert!(String::from_utf8_lossy(&out.stderr).contains("stop it"));
    hub.stop();

    // With no hub running, from the store itself (a second later: a new name).
    std::thread::sleep(Duration::from_millis(1100));
    let out = run_cli(&home, &["backup"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read_dir(&backups).unwrap().count(), 2);
    // For the owner only, like the store (taken by the hub and by the command).
    use std::os::unix::fs::PermissionsExt;
    for b in std::fs::read_dir(&backups).unwrap() {
        let b = b.unwrap().path();
        for f in std::fs::read_dir(&b).unwrap() {
            let f = f.unwrap();
            let b = f.path();
            let mode = f.metadata().unwrap().permissions().mode();
            assert_eq!(
                mode & 0o077,
                0,
                "{} is open to others: {mode:o}",
                b.display()
            );
        }
    }

    truncate_to(&home, 0.6);
    let out = run_cli(&home, &["verify"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "verify passed a damaged store");
    assert!(
        err.contains("damaged") && !err.contains("panicked"),
        "{err}"
    );

    let backup = newest();
    let out = run_cli(&home, &["verify", backup.to_str().unwrap()]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        said.contains("180 sessions") && said.contains("180 replies queued"),
        "{said}"
    );

    let damaged = std::fs::read(db_file(&home)).unwrap();
    let out = run_cli(&home, &["restore", backup.to_str().unwrap()]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.contains("restored 180 sessions"), "{said}");
    let kept: Vec<_> = std::fs::read_dir(&home)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("db.replaced-"))
        .collect();
    assert_eq!(kept.len(), 1, "the damaged store is kept aside");
    assert!(
        std::fs::read(home.join(&kept[0]).join("db")).unwrap() == damaged,
        "the damaged store was changed on its way aside"
    );
    let out = run_cli(&home, &["verify"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    hub.restart().await;
    assert_eq!(hub.api.health().await.unwrap()["sessions"], 180);
    // Each queue keeps its order: the reply queued before the backup comes
    // first, also before one queued after the restore.
    for (i, (token, wait)) in made.iter().enumerate().step_by(17) {
        hub.api
            .ok(
                "/api/reply",
                &json!({"token": token, "text": "after restore"}),
            )
            .await;
        let got = hub
            .api
            .ok(
                "/api/wait/poll",
                &json!({"token": token, "waitId": wait, "timeoutMs": 1000}),
            )
            .await;
        assert_eq!(got["reply"]["text"], format!("go on {i}"), "{got}");
    }
    hub.stop();
}
