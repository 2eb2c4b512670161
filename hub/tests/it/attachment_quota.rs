//! Attachment space at the hub (SPEC §4 "Attachments are bounded"): quotas per
//! credential and in all (`[attachments]` in `config.toml`), refused whole with
//! 507 `ATTACHMENT_QUOTA`; a file stored once however often it is sent; the
//! retention rule releasing files of answered or superseded questions; the
//! person seeing and freeing the space (`holdline-hub attachments`); an export
//! that streams. Real hub binary, real HTTP, real sled and files.

use base64::Engine as _;
use reqwest::Method;
use serde_json::{Value, json};

use crate::realhub::{RealHub, call, create_key, free_addr, run_cli};

const KIB: usize = 1024;

/// `n` bytes no other call of this makes (the seed goes in every byte).
fn file(seed: u8, n: usize) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(31) ^ seed).collect()
}

fn upload(name: &str, bytes: &[u8]) -> Value {
    json!({"name": name, "mimeType": "application/octet-stream",
           "data": base64::engine::general_purpose::STANDARD.encode(bytes)})
}

async fn start(config: &str) -> (tempfile::TempDir, RealHub) {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(home.join("config.toml"), config).unwrap();
    let hub = RealHub::start(&home, free_addr()).await;
    (dir, hub)
}

async fn init(hub: &RealHub, bearer: &str, title: &str) -> String {
    let body = json!({"cursorTitle": title, "workspace": "/w", "hostIp": "10.0.0.9"});
    let (s, v) = call(hub, Method::POST, "/api/init", bearer, Some(body)).await;
    assert_eq!(s, 200, "{v}");
    v["token"].as_str().unwrap().to_owned()
}

async fn register(
    hub: &RealHub,
    bearer: &str,
    token: &str,
    request: &str,
    files: &[Value],
) -> (u16, Value) {
    let body = json!({"token": token, "message": format!("question {request}"),
        "cursorTitle": "Site", "workspace": "/w", "hostIp": "10.0.0.9",
        "requestId": request, "attachments": files});
    call(hub, Method::POST, "/api/wait/register", bearer, Some(body)).await
}

async fn messages(hub: &RealHub, token: &str) -> Vec<Value> {
    let path = format!("/api/sessions/{token}");
    let (s, v) = call(hub, Method::GET, &path, &hub.api.secret, None).await;
    assert_eq!(s, 200, "{v}");
    v["messages"].as_array().unwrap().clone()
}

async fn usage(hub: &RealHub) -> Value {
    let (s, v) = call(hub, Method::GET, "/api/attachments", &hub.api.secret, None).await;
    assert_eq!(s, 200, "{v}");
    v
}

fn owner_bytes(usage: &Value, key: Option<&str>) -> u64 {
    usage["owners"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["key"].as_str() == key)
        .map_or(0, |o| o["bytes"].as_u64().unwrap())
}

/// The files the store keeps (its `attachments/` folder), in bytes.
fn stored_files(hub: &RealHub) -> (usize, u64) {
    let dir = hub.home.join("db").join("attachments");
    let Ok(entries) = std::fs::read_dir(dir) else {
        return (0, 0);
    };
    entries
        .flatten()
        .fold((0, 0), |(n, b), e| (n + 1, b + e.metadata().unwrap().len()))
}

async fn fetch_status(hub: &RealHub, url: &str) -> (u16, Value) {
    call(hub, Method::GET, url, &hub.api.secret, None).await
}

#[tokio::test]
async fn over_its_quota_a_key_is_refused_whole_while_another_key_stores_within_its_own() {
    let (_dir, hub) = start("[attachments]\nowner_quota_mb = 1\ntotal_quota_mb = 4\n").await;
    let laptop = create_key(&hub.home, "laptop");
    let desktop = create_key(&hub.home, "desktop");
    let token = init(&hub, &laptop, "Site").await;
    let first = [
        upload("a.bin", &file(1, 400 * KIB)),
        upload("b.bin", &file(2, 400 * KIB)),
    ];
    let (s, v) = register(&hub, &laptop, &token, "q1", &first).await;
    assert_eq!(s, 200, "{v}");
    let wait_id = v["waitId"].as_str().unwrap().to_owned();
    assert_eq!(stored_files(&hub), (2, 800 * KIB as u64));

    // 1.2 MiB would pass the key's 1 MiB: refused with the code, nothing stored.
    let third = [upload("c.bin", &file(3, 400 * KIB))];
    let (s, v) = register(&hub, &laptop, &token, "q2", &third).await;
    assert_eq!(s, 507, "{v}");
    assert_eq!(v["error"]["code"], "ATTACHMENT_QUOTA", "{v}");
    let said = v["error"]["message"].as_str().unwrap();
    assert!(said.contains("laptop") && said.contains("quota"), "{said}");
    assert_eq!(messages(&hub, &token).await.len(), 1, "no second message");
    assert_eq!(stored_files(&hub), (2, 800 * KIB as u64), "no bytes of it");
    // The first question's wait is still the open one (no wait was opened).
    let poll = json!({"token": token, "waitId": wait_id, "timeoutMs": 1});
    let (s, v) = call(&hub, Method::POST, "/api/wait/poll", &laptop, Some(poll)).await;
    assert_eq!((s, v["status"].as_str()), (200, Some("renewal")), "{v}");

    // Another key has its own quota.
    let other = init(&hub, &desktop, "Site").await;
    let (s, v) = register(&hub, &desktop, &other, "q1", &third).await;
    assert_eq!(s, 200, "{v}");
    let u = usage(&hub).await;
    assert_eq!(owner_bytes(&u, Some("laptop")), 800 * KIB as u64, "{u}");
    assert_eq!(owner_bytes(&u, Some("desktop")), 400 * KIB as u64, "{u}");
    assert_eq!(u["total"]["quota"], 4 << 20, "{u}");
    assert_eq!(u["owners"][0]["quota"], 1 << 20, "{u}");
}

#[tokio::test]
async fn the_total_quota_binds_every_owner_together() {
    let (_dir, hub) = start("[attachments]\nowner_quota_mb = 1\ntotal_quota_mb = 1\n").await;
    let key = create_key(&hub.home, "laptop");
    let secret = hub.api.secret.clone();
    let mine = init(&hub, &secret, "Mine").await;
    let theirs = init(&hub, &key, "Theirs").await;
    let (s, v) = register(
        &hub,
        &secret,
        &mine,
        "q1",
        &[upload("a", &file(1, 600 * KIB))],
    )
    .await;
    assert_eq!(s, 200, "{v}");
    let (s, v) = register(
        &hub,
        &key,
        &theirs,
        "q1",
        &[upload("b", &file(2, 600 * KIB))],
    )
    .await;
    assert_eq!(s, 507, "{v}");
    assert_eq!(v["error"]["code"], "ATTACHMENT_QUOTA");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("total quota"),
        "{v}"
    );
    assert!(messages(&hub, &theirs).await.is_empty());
    // The same file the hub already holds costs the total nothing more.
    let (s, v) = register(
        &hub,
        &key,
        &theirs,
        "q2",
        &[upload("a", &file(1, 600 * KIB))],
    )
    .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(stored_files(&hub), (1, 600 * KIB as u64));
}

#[tokio::test]
async fn a_file_sent_twice_is_stored_once_and_served_for_both_messages() {
    let (_dir, hub) = start("").await;
    let secret = hub.api.secret.clone();
    let token = init(&hub, &secret, "Site").await;
    let log = file(9, 300 * KIB);
    for request in ["q1", "q2"] {
        let (s, v) = register(&hub, &secret, &token, request, &[upload("run.log", &log)]).await;
        assert_eq!(s, 200, "{v}");
    }
    assert_eq!(stored_files(&hub), (1, 300 * KIB as u64));
    let u = usage(&hub).await;
    assert_eq!(u["total"]["files"], 1, "{u}");
    assert_eq!(u["total"]["bytes"], 300 * KIB, "{u}");
    for m in messages(&hub, &token).await {
        let url = m["attachments"][0]["url"].as_str().unwrap().to_owned();
        let (s, bytes) = hub.api.get_bytes(&url).await.unwrap();
        assert_eq!((s, bytes.len()), (200, log.len()));
    }
    // The store does not hold the bytes again in sled (journal, tree, log).
    let sled: u64 = walk(&hub.home.join("db"))
        .filter(|p| !p.starts_with(hub.home.join("db").join("attachments")))
        .map(|p| p.metadata().unwrap().len())
        .sum();
    assert!(sled < 300 * KIB as u64, "sled holds {sled} bytes");
}

fn walk(dir: &std::path::Path) -> impl Iterator<Item = std::path::PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            if e.file_type().unwrap().is_dir() {
                todo.push(e.path());
            } else {
                out.push(e.path());
            }
        }
    }
    out.into_iter()
}

#[tokio::test]
async fn retention_releases_files_of_answered_and_superseded_questions_only() {
    let (_dir, hub) = start("[attachments]\nkeep_sec = 1\n").await;
    let secret = hub.api.secret.clone();
    let token = init(&hub, &secret, "Site").await;
    let (s, v) = register(
        &hub,
        &secret,
        &token,
        "q1",
        &[upload("old.png", &file(1, 1000))],
    )
    .await;
    assert_eq!(s, 200, "{v}");
    // q2 supersedes q1; it is the open question.
    let (s, v) = register(
        &hub,
        &secret,
        &token,
        "q2",
        &[upload("new.png", &file(2, 1000))],
    )
    .await;
    assert_eq!(s, 200, "{v}");
    let wait_id = v["waitId"].as_str().unwrap().to_owned();
    let url = |m: &Value| m["attachments"][0]["url"].as_str().unwrap().to_owned();
    let shown = messages(&hub, &token).await;
    let (old, new) = (url(&shown[0]), url(&shown[1]));

    // The hub applies the rule every second: wait until the superseded file went.
    let mut released = false;
    for _ in 0..50 {
        if fetch_status(&hub, &old).await.0 == 404 {
            released = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(released, "the superseded question's file is released");
    let (s, v) = fetch_status(&hub, &old).await;
    assert_eq!(s, 404);
    assert!(
        v["error"]["message"].as_str().unwrap().contains("removed"),
        "{v}"
    );
    assert_eq!(
        fetch_status(&hub, &new).await.0,
        200,
        "the open question keeps its file"
    );
    let shown = messages(&hub, &token).await;
    assert_eq!(shown[0]["attachments"][0]["removed"], true, "{shown:?}");
    assert!(
        shown[1]["attachments"][0].get("removed").is_none(),
        "{shown:?}"
    );

    // Answered (replied and acked), the open question's file goes too.
    let reply = json!({"token": token, "text": "ok"});
    let (s, v) = call(&hub, Method::POST, "/api/reply", &secret, Some(reply)).await;
    assert_eq!(s, 200, "{v}");
    let poll = json!({"token": token, "waitId": wait_id, "timeoutMs": 1000});
    let (_, v) = call(&hub, Method::POST, "/api/wait/poll", &secret, Some(poll)).await;
    let ack = json!({"token": token, "waitId": wait_id, "replyId": v["reply"]["id"]});
    let (s, v) = call(&hub, Method::POST, "/api/wait/ack", &secret, Some(ack)).await;
    assert_eq!(s, 200, "{v}");
    for _ in 0..50 {
        if stored_files(&hub).0 == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(stored_files(&hub), (0, 0));
    assert_eq!(usage(&hub).await["total"]["bytes"], 0);
}

#[tokio::test]
async fn the_cli_shows_the_space_per_owner_and_frees_it() {
    let (_dir, mut hub) = start("").await;
    let key = create_key(&hub.home, "laptop");
    let secret = hub.api.secret.clone();
    let theirs = init(&hub, &key, "Theirs").await;
    let mine = init(&hub, &secret, "Mine").await;
    let (s, _) = register(
        &hub,
        &key,
        &theirs,
        "q1",
        &[upload("a", &file(1, 512 * KIB))],
    )
    .await;
    assert_eq!(s, 200);
    let (s, _) = register(
        &hub,
        &secret,
        &mine,
        "q1",
        &[upload("b", &file(2, 256 * KIB))],
    )
    .await;
    assert_eq!(s, 200);

    let shown = run_cli(&hub.home, &["attachments"]);
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.status.success(), "{shown:?}");
    assert!(
        text.contains("key laptop") && text.contains("0.50 MiB"),
        "{text}"
    );
    assert!(
        text.contains("(hub secret)") && text.contains("0.25 MiB"),
        "{text}"
    );
    assert!(
        text.contains("256.00 MiB") && text.contains("1024.00 MiB"),
        "{text}"
    );

    // Freed through the running hub: the key's file is gone, the secret's stays.
    let freed = run_cli(&hub.home, &["attachments", "--free-key", "laptop"]);
    let text = String::from_utf8_lossy(&freed.stdout);
    assert!(freed.status.success(), "{freed:?}");
    assert!(
        text.contains("released the files of 1 attachment; 0.50 MiB freed"),
        "{text}"
    );
    assert!(!text.contains("key laptop"), "{text}");
    assert_eq!(stored_files(&hub), (1, 256 * KIB as u64));
    let url = messages(&hub, &theirs).await[0]["attachments"][0]["url"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(fetch_status(&hub, &url).await.0, 404);

    // With no hub running, the command opens the store.
    hub.stop();
    let freed = run_cli(&hub.home, &["attachments", "--free-secret"]);
    let text = String::from_utf8_lossy(&freed.stdout);
    assert!(freed.status.success(), "{freed:?}");
    assert!(text.contains("0.25 MiB freed"), "{text}");
    assert_eq!(stored_files(&hub), (0, 0));
}

#[tokio::test]
async fn an_export_with_files_streams_and_carries_them_with_or_without_a_hub() {
    let (dir, mut hub) = start("").await;
    let secret = hub.api.secret.clone();
    let log = file(5, 2 << 20);
    let mut tokens = Vec::new();
    for n in 0..3 {
        let token = init(&hub, &secret, &format!("Site {n}")).await;
        let files = [upload("run.log", &log), upload("n.txt", &[b'0' + n])];
        let (s, v) = register(&hub, &secret, &token, "q1", &files).await;
        assert_eq!(s, 200, "{v}");
        tokens.push(token);
    }
    // The answer is streamed (chunked, no length known up front).
    let res = reqwest::Client::new()
        .get(format!("http://{}/api/export", hub.addr))
        .bearer_auth(&secret)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert!(res.headers().get("content-length").is_none(), "{res:?}");
    assert_eq!(res.headers()["x-holdline-sessions"], "3");
    let export: Value = serde_json::from_slice(&res.bytes().await.unwrap()).unwrap();
    let b64 = base64::engine::general_purpose::STANDARD.encode(&log);
    for t in &tokens {
        assert_eq!(export[t]["messages"][0]["attachments"][0]["data"], b64);
    }

    let out = dir.path().join("running.json");
    let ran = run_cli(&hub.home, &["export", "--out", out.to_str().unwrap()]);
    assert!(ran.status.success(), "{ran:?}");
    assert!(
        String::from_utf8_lossy(&ran.stderr).contains("exported 3 sessions"),
        "{ran:?}"
    );
    let written: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(written, export);

    hub.stop();
    let out = dir.path().join("offline.json");
    let ran = run_cli(&hub.home, &["export", "--out", out.to_str().unwrap()]);
    assert!(ran.status.success(), "{ran:?}");
    let written: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(written, export);
}

#[tokio::test]
async fn two_registers_at_once_cannot_both_pass_the_quota() {
    let (_dir, hub) = start("[attachments]\nowner_quota_mb = 1\n").await;
    let key = create_key(&hub.home, "laptop");
    let (a, b) = (init(&hub, &key, "A").await, init(&hub, &key, "B").await);
    let (fa, fb) = (
        [upload("a", &file(1, 700 * KIB))],
        [upload("b", &file(2, 700 * KIB))],
    );
    let ((sa, va), (sb, vb)) = tokio::join!(
        register(&hub, &key, &a, "q1", &fa),
        register(&hub, &key, &b, "q1", &fb)
    );
    let mut statuses = [sa, sb];
    statuses.sort();
    assert_eq!(statuses, [200, 507], "{va} {vb}");
    // Only the one that passed is stored, once the refused one's file is swept.
    for _ in 0..50 {
        if stored_files(&hub).0 == 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(stored_files(&hub), (1, 700 * KIB as u64));
    assert_eq!(
        owner_bytes(&usage(&hub).await, Some("laptop")),
        700 * KIB as u64
    );
}
