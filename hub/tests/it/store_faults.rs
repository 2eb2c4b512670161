//! A store that cannot be opened: damaged, locked, of another
//! schema version, not a folder, unwritable. The real hub must exit non-zero
//! with one clear line saying what to do — never a panic or a backtrace.

use crate::realhub;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use realhub::{RealHub, free_addr, hub_command};
use serde_json::json;

/// A home with a few sessions, a reply and a wait in its store; the hub that
/// made it stopped cleanly.
async fn home_with_data(dir: &Path) -> PathBuf {
    let home = dir.join("home");
    let mut hub = RealHub::start(&home, free_addr()).await;
    for i in 0..5 {
        let who =
            json!({"cursorTitle": format!("chat {i}"), "workspace": "/w", "hostIp": "10.0.0.1"});
        let token = hub.api.ok("/api/init", &who).await["token"].clone();
        let mut reg = who.clone();
        reg["token"] = token.clone();
        reg["message"] = json!(format!("message {i}"));
        reg["requestId"] = json!("q1");
        hub.api.ok("/api/wait/register", &reg).await;
        hub.api
            .ok("/api/reply", &json!({"token": token, "text": "go on"}))
            .await;
    }
    hub.stop();
    home
}

/// Runs `serve` on `home`, which must fail; returns its standard error.
fn serve_must_fail(home: &Path, addr: SocketAddr) -> String {
    let (status, stderr) = realhub::serve_must_fail(home, addr, "a bad store");
    assert!(
        !status.success(),
        "holdline-hub exited 0 on a bad store; stderr:\n{stderr}"
    );
    stderr
}

/// One line, from the hub, that says what happened and what to do, with none
/// of a panic's or backtrace's noise.
fn assert_one_clear_line(stderr: &str, must_say: &[&str]) {
    for noise in [
        "panicked",
        "backtrace",
        "RUST_BACKTRACE",
        "thread '",
        "unwrap",
    ] {
        assert!(!stderr.contains(noise), "stderr shows {noise:?}:\n{stderr}");
    }
    assert!(
        !stderr.contains('\u{1b}'),
        "terminal colour codes in a log that is not a terminal:\n{stderr}"
    );
    // Log records (sled's own warnings, say) may come first; they start with
    // their timestamp. Besides them, exactly one line: the hub's answer.
    let is_log = |l: &str| l.len() > 4 && l.as_bytes()[..4].iter().all(u8::is_ascii_digit);
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.trim().is_empty() && !is_log(l))
        .collect();
    assert_eq!(
        lines.len(),
        1,
        "expected one line on stderr, got:\n{stderr}"
    );
    let line = lines[0];
    assert!(
        line.starts_with("holdline-hub: "),
        "the line does not say who speaks: {line}"
    );
    for word in must_say {
        assert!(line.contains(word), "{word:?} missing from: {line}");
    }
}

fn db_file(home: &Path) -> PathBuf {
    home.join("db").join("db")
}

#[tokio::test]
async fn overwritten_database_is_reported_as_damaged() {
    let dir = tempfile::tempdir().unwrap();
    let home = home_with_data(dir.path()).await;
    let len = std::fs::metadata(db_file(&home)).unwrap().len() as usize;
    let garbage: Vec<u8> = (0..len).map(|i| (i * 7 + 0xa5) as u8).collect();
    std::fs::write(db_file(&home), garbage).unwrap();
    let stderr = serve_must_fail(&home, free_addr());
    assert_one_clear_line(&stderr, &["damaged", "restore it from a backup"]);
}

#[tokio::test]
async fn overwritten_config_of_the_database_is_reported_as_damaged() {
    let dir = tempfile::tempdir().unwrap();
    let home = home_with_data(dir.path()).await;
    std::fs::write(
        home.join("db").join("conf"),
        b"\x00\x01not a sled conf\xff\xfe",
    )
    .unwrap();
    let stderr = serve_must_fail(&home, free_addr());
    assert_one_clear_line(&stderr, &["damaged", "restore it from a backup"]);
}

/// A log cut short looks to sled like the torn tail of a crash: it recovers
/// the prefix it can read. The hub's own completeness check (the manifest
/// and the confirmed-write witness) then refuses it; only a cut that loses
/// nothing live may open, and then with every session. Either way: no panic.
#[tokio::test]
async fn truncated_database_never_panics() {
    for fraction in [2, 3, 10] {
        let dir = tempfile::tempdir().unwrap();
        let home = home_with_data(dir.path()).await;
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(db_file(&home))
            .unwrap();
        let len = f.metadata().unwrap().len();
        f.set_len(len / fraction).unwrap();
        drop(f);
        let addr = free_addr();
        let mut child = hub_command(&home)
            .args(["serve", "--listen", &addr.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let api = realhub::Api::new(addr, String::new());
        let deadline = Instant::now() + Duration::from_secs(30);
        let outcome = loop {
            if child.try_wait().unwrap().is_some() {
                break None;
            }
            if let Some(h) = api.health().await {
                break Some(h);
            }
            assert!(
                Instant::now() < deadline,
                "the hub neither started nor exited"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        if outcome.is_some() {
            let _ = child.kill();
        }
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        match outcome {
            Some(h) => {
                assert!(!stderr.contains("panicked"), "{stderr}");
                assert_eq!(h["sessions"], 5, "opened in part: {h}");
                eprintln!(
                    "db cut to 1/{fraction}: sled recovered a prefix, the hub serves {} of 5 sessions",
                    h["sessions"]
                );
            }
            None => {
                assert!(!out.status.success());
                assert_one_clear_line(&stderr, &["damaged", "restore it from a backup"]);
                eprintln!("db cut to 1/{fraction}: refused as damaged");
            }
        }
    }
}

#[tokio::test]
async fn second_hub_on_the_same_home_is_told_the_store_is_locked() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let first = RealHub::start(&home, free_addr()).await;
    // Another port: the store lock, not the address, must stop it.
    let stderr = serve_must_fail(&home, free_addr());
    assert_one_clear_line(
        &stderr,
        &["locked by another holdline-hub", "stop that hub"],
    );
    // The same port: the address is taken first.
    let stderr = serve_must_fail(&home, first.addr);
    assert_one_clear_line(&stderr, &["cannot listen", "another holdline-hub"]);
    assert!(
        first.api.health().await.is_some(),
        "the first hub still serves"
    );
}

/// Writes `value` as the store's schema version, with sled itself.
fn set_schema_version(home: &Path, value: &[u8]) {
    let db = sled::open(home.join("db")).unwrap();
    db.open_tree("meta")
        .unwrap()
        .insert("schema_version", value)
        .unwrap();
    db.flush().unwrap();
}

#[tokio::test]
async fn other_schema_version_is_refused_with_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let home = home_with_data(dir.path()).await;
    set_schema_version(&home, &7u32.to_be_bytes());
    let stderr = serve_must_fail(&home, free_addr());
    assert_one_clear_line(&stderr, &["schema version 7", "reads version 4", "export"]);

    // Offline admin commands open the same store and must say the same.
    let out = realhub::run_cli(&home, &["export", "--out", "/dev/null"]);
    assert!(!out.status.success());
    assert_one_clear_line(&String::from_utf8_lossy(&out.stderr), &["schema version 7"]);

    // Back to the version before summaries: upgraded at start, everything is
    // there again, messages too (this store has them in chunks already).
    set_schema_version(&home, &1u32.to_be_bytes());
    let hub = RealHub::start(&home, free_addr()).await;
    assert_eq!(hub.api.health().await.unwrap()["sessions"], 5);
    let (_, list) = hub.api.get("/api/sessions?limit=10").await.unwrap();
    let sessions = list["sessions"].as_array().expect("a list");
    assert_eq!(sessions.len(), 5);
    for s in sessions {
        let messages = hub.api.session(s["token"].as_str().unwrap()).await["messages"].clone();
        let texts: Vec<&str> = messages
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["content"].as_str().unwrap())
            .collect();
        assert_eq!(texts.len(), 2, "{messages}");
        assert!(
            texts[0].starts_with("message ") && texts[1] == "go on",
            "{texts:?}"
        );
    }
}

#[tokio::test]
async fn unreadable_schema_version_is_reported_as_damaged() {
    let dir = tempfile::tempdir().unwrap();
    let home = home_with_data(dir.path()).await;
    set_schema_version(&home, b"v1");
    let stderr = serve_must_fail(&home, free_addr());
    assert_one_clear_line(&stderr, &["damaged", "unreadable schema version"]);
}

#[test]
fn home_that_is_a_file_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::write(&home, b"not a folder").unwrap();
    let stderr = serve_must_fail(&home, free_addr());
    assert_one_clear_line(&stderr, &["is a file, not a folder", "--home"]);
}

#[test]
fn database_folder_that_is_a_file_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    std::fs::write(home.join("db"), b"not a folder").unwrap();
    let stderr = serve_must_fail(&home, free_addr());
    assert_one_clear_line(&stderr, &["home"]);
}

fn running_as_root() -> bool {
    std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

#[tokio::test]
async fn read_only_store_is_reported() {
    if running_as_root() {
        eprintln!(
            "skipped read_only_store_is_reported: running as root, file modes do not stop root \
             (the home-is-a-file and db-is-a-file tests cover unopenable homes)"
        );
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let home = home_with_data(dir.path()).await;
    for entry in std::fs::read_dir(home.join("db")).unwrap() {
        let p = entry.unwrap().path();
        if p.is_file() {
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o400)).unwrap();
        }
    }
    let stderr = serve_must_fail(&home, free_addr());
    assert_one_clear_line(&stderr, &["cannot open the store", "writable"]);
}

/// A full disk, played by a file-size limit (`ulimit -f`, with SIGXFSZ
/// ignored so a write fails with EFBIG as it would with ENOSPC): writes that
/// no longer fit answer 503 `STORE_FAILING` with the reason, the hub keeps answering, and
/// SIGTERM ends it at once with one line — no hang on the last flush.
#[tokio::test]
async fn full_disk_fails_requests_clearly_and_stops() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let addr = free_addr();
    let mut child = std::process::Command::new("bash")
        .args([
            "-c",
            r#"trap "" XFSZ; ulimit -f 64; exec "$0" serve --listen "$1""#,
            realhub::HUB_BIN,
            &addr.to_string(),
        ])
        .env("HOLDLINE_HOME", &home)
        .env("HOLDLINE_LOG", "error")
        .env_remove("HOLDLINE_MONGO_URI")
        .env_remove("HOLDLINE_LISTEN")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut api = realhub::Api::new(addr, String::new());
    let deadline = Instant::now() + Duration::from_secs(30);
    while api.health().await.is_none() {
        assert!(Instant::now() < deadline, "the hub did not start");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    api.secret = std::fs::read_to_string(home.join("secret"))
        .unwrap()
        .trim()
        .to_owned();
    let who = json!({"cursorTitle": "t", "workspace": "/w", "hostIp": "h"});
    let token = api.ok("/api/init", &who).await["token"].clone();
    let text = "x".repeat(3000);
    let mut refused = None;
    for _ in 0..200 {
        let (status, v) = api
            .post("/api/reply", &json!({"token": token, "text": text}))
            .await
            .expect("the hub answers even with a full disk");
        match status {
            200 => continue,
            503 => {
                assert_eq!(v["error"]["code"], "STORE_FAILING", "{v}");
                refused = Some(v);
                break;
            }
            other => panic!("a reply on a full disk answered {other}: {v}"),
        }
    }
    let refused = refused.expect("64 KiB filled up and a reply was refused");
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("could not write")),
        "{refused}"
    );
    // Still answering, and saying the store fails (a supervisor sees 503).
    let (status, h) = api
        .get(holdline_contract::routes::HEALTHZ)
        .await
        .expect("still answering");
    assert_eq!(status, 503, "{h}");
    assert_eq!(h["ok"], false, "{h}");
    assert_eq!(h["store"]["state"], "failing", "{h}");

    let _ = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let deadline = Instant::now() + Duration::from_secs(45);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the hub hung on shutdown with a full disk");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!status.success(), "a failed last flush must not exit 0");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let last = stderr
        .lines()
        .rfind(|l| l.starts_with("holdline-hub: "))
        .unwrap_or_else(|| panic!("no final line:\n{stderr}"));
    assert!(last.contains("check free disk space"), "{last}");
}
