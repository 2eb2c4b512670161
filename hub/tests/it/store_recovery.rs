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

/// A real hub whose home is on a tmpfs of `size` (`None` where none can be
/// mounted: not root), and one session of it.
async fn session_on_tmpfs(size: &str) -> Option<(Tmpfs, RealHub, String)> {
    let fs = Tmpfs::mount(size)?;
    let hub = RealHub::start(&fs.path().join("home"), free_addr()).await;
    let token = hub.api.ok("/api/init", &who(0)).await["token"]
        .as_str()
        .unwrap()
        .to_owned();
    Some((fs, hub, token))
}

#[tokio::test]
async fn a_full_disk_heals_by_itself_once_there_is_room() {
    let Some((fs, mut hub, token)) = session_on_tmpfs("12m").await else {
        return;
    };
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
            503 => {
                assert_eq!(v["error"]["code"], "STORE_FAILING", "{v}");
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

/// Seeded bytes that do not compress, `n` of them, base64 for an upload.
fn attachment_data(n: usize, seed: u64) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(Rng(seed | 1).bytes(n))
}

/// Every request a person or a supervisor makes answers within `limit`,
/// whatever it answers: answers what `/healthz` said.
async fn answers_within(hub: &RealHub, token: &str, limit: Duration) -> (u16, Value) {
    let http = reqwest::Client::builder().timeout(limit).build().unwrap();
    let base = format!("http://{}", hub.addr);
    let started = Instant::now();
    // With the secret: without it `/healthz` says only whether the hub is up.
    let health = http
        .get(format!("{base}{}", holdline_contract::routes::HEALTHZ))
        .bearer_auth(&hub.api.secret)
        .send()
        .await
        .unwrap_or_else(|e| panic!("/healthz did not answer within {limit:?}: {e}"));
    let status = health.status().as_u16();
    let body: Value = health.json().await.unwrap_or(Value::Null);
    for (what, req) in [
        (
            "GET /api/sessions",
            http.get(format!("{base}/api/sessions")),
        ),
        (
            "GET /api/sessions/{token}",
            http.get(format!("{base}/api/sessions/{token}")),
        ),
        (
            "POST /api/reply",
            http.post(format!("{base}/api/reply"))
                .json(&json!({"token": token, "text": "are you there"})),
        ),
    ] {
        let res = req
            .bearer_auth(&hub.api.secret)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{what} did not answer within {limit:?}: {e}"));
        let code = res.status().as_u16();
        assert!(
            matches!(code, 200 | 503),
            "{what} answered {code}: {}",
            res.text().await.unwrap_or_default()
        );
    }
    eprintln!("every request answered in {:?}", started.elapsed());
    (status, body)
}

/// The disk fills while a question's files are written (the biggest writes
/// the store takes). sled 0.34 may then never let go of the failed database
/// (its drop waits for a log write the full disk cut short), so the hub never
/// holds a request on that drop: every request, `/healthz` included, answers
/// within a bounded time all along, refusals are 503 `STORE_FAILING`, the
/// store reopens by itself if sled lets go, SIGTERM ends the hub either way,
/// and nothing answered 200 is lost.
#[tokio::test]
async fn a_disk_filled_by_attachments_never_hangs_a_request_and_sigterm_ends_the_hub() {
    let Some((fs, mut hub, token)) = session_on_tmpfs("40m").await else {
        return;
    };
    // Leave about 6 MiB: a few questions with files fit, then the disk is full.
    let filler = fill(fs.path());
    {
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(&filler)
            .unwrap();
        let len = f.metadata().unwrap().len();
        f.set_len(len.saturating_sub(6 << 20)).unwrap();
    }
    let mut stored = Vec::new();
    let mut refused = None;
    for i in 0..40 {
        let mut reg = who(0);
        reg["token"] = json!(token);
        reg["message"] = json!(format!("question {i} with files"));
        reg["requestId"] = json!(format!("q{i}"));
        reg["attachments"] = json!([
            {"name": "shot.png", "mimeType": "image/png", "data": attachment_data(900_000, 2 * i)},
            {"name": "run.log", "mimeType": "text/plain", "data": attachment_data(900_000, 2 * i + 1)},
        ]);
        let (status, v) = hub
            .api
            .post("/api/wait/register", &reg)
            .await
            .expect("the hub answers a question with files on a full disk");
        match status {
            200 => stored.push(format!("question {i} with files")),
            _ => {
                assert_eq!(status, 503, "a write on a full disk: {v}");
                assert_eq!(v["error"]["code"], "STORE_FAILING", "{v}");
                refused = Some(v);
                break;
            }
        }
    }
    assert!(refused.is_some(), "the disk never filled up");
    // A file that does not fit is refused before the store is written (the
    // files live beside sled); the store's own writes then take what room is
    // left until sled fails too.
    fill_the_rest_with_replies(&hub, &token).await;
    let (status, h) = answers_within(&hub, &token, Duration::from_secs(5)).await;
    assert_eq!(status, 503, "{h}");
    assert_eq!(h["store"]["state"], "failing", "{h}");

    std::fs::remove_file(filler).unwrap();
    // Room again: the hub reopens its store by itself when sled lets go of
    // the failed one; when sled never does, it starts again in place (the
    // same process), and either way it takes writes again with nobody
    // restarting it, never leaving a request hanging meanwhile.
    let pid = h["process"]["pid"].clone();
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        match health_or_starting_again(&hub, Duration::from_secs(5)).await {
            Some(h) if h["store"]["state"] == "ok" => {
                assert_eq!(h["process"]["pid"], pid, "the same process: {h}");
                eprintln!("taking writes again, up {} ms", h["uptimeMs"]);
                break;
            }
            Some(h) => assert_eq!(h["store"]["state"], "failing", "{h}"),
            None => eprintln!("starting again in place"),
        }
        if Instant::now() >= until {
            let log =
                std::fs::read_to_string(hub.home.with_extension("stderr.log")).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(15).collect();
            panic!(
                "the hub did not take writes again within 60 s of the disk having room; its last lines:\n{}",
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    register_with_file(&hub, &token, "after the disk was freed").await;
    stored.push("after the disk was freed".into());
    // SIGTERM ends the hub, whatever sled's drop does.
    let status = hub
        .terminate_within(Duration::from_secs(20))
        .expect("SIGTERM did not end the hub within 20 s");
    eprintln!("SIGTERM after the disk was freed: {status}");
    // And a new start has every question answered 200, and takes files again.
    hub.restart().await;
    register_with_file(&hub, &token, "after a restart").await;
    stored.push("after a restart".into());
    let shown = texts(&hub.api, &token).await;
    for t in &stored {
        assert!(shown.contains(t), "a question answered 200 is missing: {t}");
    }
    hub.stop();
}

/// `/healthz` with the secret; `None` while nothing listens (the hub starting
/// again in place); a hub that takes the connection but does not answer
/// within `limit` fails the test.
async fn health_or_starting_again(hub: &RealHub, limit: Duration) -> Option<Value> {
    let res = reqwest::Client::new()
        .get(format!("http://{}/healthz", hub.addr))
        .bearer_auth(&hub.api.secret)
        .timeout(limit)
        .send()
        .await;
    match res {
        Ok(res) => Some(res.json().await.unwrap_or(Value::Null)),
        Err(e) if e.is_connect() => None,
        Err(e) => panic!("/healthz did not answer within {limit:?}: {e}"),
    }
}

/// Replies of 200 KB until the store refuses one with 503 `STORE_FAILING`
/// (sled's write failed on the full disk).
async fn fill_the_rest_with_replies(hub: &RealHub, token: &str) {
    for i in 0..400 {
        let text = format!("{i} {}", "r".repeat(200_000));
        let (status, v) = hub
            .api
            .post("/api/reply", &json!({"token": token, "text": text}))
            .await
            .expect("the hub answers a reply on a full disk");
        if status == 503 {
            assert_eq!(v["error"]["code"], "STORE_FAILING", "{v}");
            return;
        }
        assert_eq!(status, 200, "a reply on a nearly full disk: {v}");
    }
    panic!("the store never failed on the full disk");
}

/// Registers a question with one small file, which must answer 200.
async fn register_with_file(hub: &RealHub, token: &str, message: &str) {
    let mut reg = who(0);
    reg["token"] = json!(token);
    reg["message"] = json!(message);
    reg["requestId"] = json!(message);
    reg["attachments"] = json!([
        {"name": "after.png", "mimeType": "image/png", "data": attachment_data(100_000, 99)},
    ]);
    hub.api.ok("/api/wait/register", &reg).await;
}

/// `POST /api/login` with the secret: the cookie's `name=value` pair.
async fn panel_cookie(hub: &RealHub) -> String {
    let res = reqwest::Client::new()
        .post(format!("http://{}/api/login", hub.addr))
        .json(&json!({"key": hub.api.secret}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let set = res.headers()[reqwest::header::SET_COOKIE].to_str().unwrap();
    set.split(';').next().unwrap().to_owned()
}

/// `GET /api/whoami` with a panel cookie: its status.
async fn whoami(hub: &RealHub, cookie: &str) -> u16 {
    reqwest::Client::new()
        .get(format!("http://{}/api/whoami", hub.addr))
        .header(reqwest::header::COOKIE, cookie)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// `POST /api/init` as the agent key `key`: its status and error code.
async fn init_as(hub: &RealHub, key: &str, chat: usize) -> (u16, Value) {
    realhub::call(
        hub,
        reqwest::Method::POST,
        "/api/init",
        key,
        Some(who(chat)),
    )
    .await
}

/// `holdline-hub restore BACKUP`, which must succeed: what it said.
fn restore(home: &Path, backup: &Path) -> String {
    let out = run_cli(home, &["restore", backup.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "restore failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A restore never widens access: a key revoked and a "log out everywhere"
/// made after the backup still hold after restoring it (the credentials of
/// the store it replaces win), a key live in both still works, a key made
/// after the backup is kept; over a store that cannot be read, no key or
/// login of the backup is kept, and it says so. Two restores in one second
/// both work.
#[tokio::test]
async fn a_restore_keeps_revoked_keys_revoked_and_ended_logins_ended() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let mut hub = RealHub::start(&home, free_addr()).await;
    let key = |name: &'static str| {
        let api = hub.api.clone();
        async move {
            api.ok("/api/keys", &json!({"name": name})).await["key"]
                .as_str()
                .unwrap()
                .to_owned()
        }
    };
    let kept = key("kept").await;
    let revoked = key("revoked").await;
    assert_eq!(init_as(&hub, &kept, 1).await.0, 200);
    assert_eq!(init_as(&hub, &revoked, 2).await.0, 200);
    let cookie = panel_cookie(&hub).await;
    assert_eq!(whoami(&hub, &cookie).await, 200);

    let out = run_cli(&home, &["backup"]);
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{said}");
    let backup = PathBuf::from(said.trim().rsplit(" to ").next().unwrap());

    // After the backup: one key revoked, every login ended, one key made.
    let (status, v) = realhub::call(
        &hub,
        reqwest::Method::DELETE,
        "/api/keys/revoked",
        &hub.api.secret,
        None,
    )
    .await;
    assert_eq!(status, 200, "{v}");
    let (status, v) = realhub::call(
        &hub,
        reqwest::Method::POST,
        "/api/logout/everywhere",
        &hub.api.secret,
        Some(json!({})),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(whoami(&hub, &cookie).await, 401);
    let later = key("later").await;
    hub.stop();

    let said = restore(&home, &backup);
    assert!(said.contains("restored 2 sessions"), "{said}");
    assert!(said.contains("agent keys and panel logins"), "{said}");
    hub.restart().await;
    let (status, v) = init_as(&hub, &revoked, 2).await;
    assert_eq!(
        status, 401,
        "a key revoked after the backup works again: {v}"
    );
    assert_eq!(v["error"]["code"], "KEY_REFUSED", "{v}");
    assert_eq!(
        whoami(&hub, &cookie).await,
        401,
        "a login ended after the backup works again"
    );
    assert_eq!(
        init_as(&hub, &kept, 1).await.0,
        200,
        "a live key is refused"
    );
    assert_eq!(
        init_as(&hub, &later, 3).await.0,
        200,
        "a newer key is refused"
    );
    assert_eq!(hub.api.health().await.unwrap()["sessions"], 3);
    let fresh = panel_cookie(&hub).await;
    assert_eq!(whoami(&hub, &fresh).await, 200);
    hub.stop();

    // Over a store that cannot be read: nothing vouches for the backup's
    // credentials, so none is kept; and again within the same second.
    let len = std::fs::metadata(db_file(&home)).unwrap().len() as usize;
    std::fs::write(db_file(&home), Rng(0x5eed).bytes(len)).unwrap();
    assert!(!run_cli(&home, &["verify"]).status.success());
    for i in 0..3 {
        let said = restore(&home, &backup);
        assert!(said.contains("restored 2 sessions"), "{said}");
        if i == 0 {
            assert!(said.contains("none kept"), "{said}");
        }
    }
    hub.restart().await;
    let (status, v) = init_as(&hub, &kept, 1).await;
    assert_eq!(status, 401, "{v}");
    assert_eq!(v["error"]["code"], "KEY_REFUSED", "{v}");
    assert_eq!(whoami(&hub, &fresh).await, 401);
    assert_eq!(whoami(&hub, &panel_cookie(&hub).await).await, 200);
    hub.stop();
}

/// A store that had a note of its confirmed writes and lost it could be
/// missing any of them: `verify` and a start both call it damaged.
#[tokio::test]
async fn a_removed_witness_is_damage() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let mut hub = RealHub::start(&home, free_addr()).await;
    sessions_with_queued_replies(&hub, 40).await;
    hub.stop();
    let out = run_cli(&home, &["verify"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::remove_file(home.join("db").join("holdline-generation")).unwrap();
    let out = run_cli(&home, &["verify"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "verify passed a store without its witness"
    );
    assert!(
        err.contains("damaged") && err.contains("holdline-generation"),
        "{err}"
    );
    let line = assert_refused(&home, "a removed witness");
    assert!(line.contains("holdline-generation"), "{line}");
}

/// A tree lost whole (sled's files edited, a tree dropped) is damage even
/// when every session is there: a start refuses a counted tree that is
/// empty, and `verify` counts the records of every tree, so one record
/// missing is found too. (The records of the questions' files are the tree
/// here; their bytes, in the folder beside sled, are checked at every start.)
#[tokio::test]
async fn a_lost_tree_is_damage_even_with_every_session_there() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let mut hub = RealHub::start(&home, free_addr()).await;
    for i in 0..12 {
        let token = hub.api.ok("/api/init", &who(i)).await["token"].clone();
        let mut reg = who(i);
        reg["token"] = token;
        reg["message"] = json!(format!("question {i}"));
        reg["requestId"] = json!("q1");
        reg["attachments"] = json!([
            {"name": "shot.png", "mimeType": "image/png", "data": attachment_data(2000, i as u64)},
        ]);
        hub.api.ok("/api/wait/register", &reg).await;
    }
    hub.stop();
    let made = dir.path().join("made");
    copy_home(&home, &made);

    // One record gone: a start does not read every record, `verify` does.
    {
        let db = sled::open(home.join("db")).unwrap();
        let tree = db.open_tree("files").unwrap();
        let first = tree.iter().keys().next().unwrap().unwrap();
        tree.remove(first).unwrap();
        db.flush().unwrap();
    }
    let out = run_cli(&home, &["verify"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "verify passed a store missing a file"
    );
    assert!(err.contains("damaged") && err.contains("files"), "{err}");

    // The whole tree gone: a start refuses it too.
    let home = dir.path().join("whole");
    copy_home(&made, &home);
    {
        let db = sled::open(home.join("db")).unwrap();
        assert!(db.drop_tree("files").unwrap());
        db.flush().unwrap();
    }
    let out = run_cli(&home, &["verify"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "verify passed a store without its files"
    );
    assert!(err.contains("files"), "{err}");
    let line = assert_refused(&home, "a dropped tree");
    assert!(line.contains("files"), "{line}");

    // The files themselves gone (the folder beside sled): a start and `verify`
    // both refuse, naming what is missing.
    let home = dir.path().join("no-files");
    copy_home(&made, &home);
    std::fs::remove_dir_all(home.join("db").join("attachments")).unwrap();
    let out = run_cli(&home, &["verify"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "verify passed a store without its files"
    );
    assert!(err.contains("missing"), "{err}");
    let line = assert_refused(&home, "the files removed");
    assert!(line.contains("missing"), "{line}");
}
