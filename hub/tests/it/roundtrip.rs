//! Export/import round trip of every session field, the archive files, and
//! the backup and restore procedure of docs/operations.md followed literally
//! with the real binary: every field comes back as it was exported.

use std::collections::BTreeMap;
use std::path::Path;

use crate::realhub::{Api, RealHub, free_addr, run_cli};
use serde_json::{Value, json};

/// A 1×1 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

fn who(title: &str, workspace: &str) -> Value {
    json!({"cursorTitle": title, "workspace": workspace, "hostIp": "10.1.1.1"})
}

async fn init(api: &Api, body: Value) -> String {
    api.ok("/api/init", &body).await["token"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Registers a message and returns the wait id.
async fn register(api: &Api, token: &str, who: &Value, n: u32, pct: u32, next: &str) -> String {
    let mut b = who.clone();
    b["token"] = json!(token);
    b["message"] = json!(format!("agent message {n}: done with **part {n}**"));
    b["requestId"] = json!(format!("q{n}"));
    b["completionPct"] = json!(pct);
    b["nextStep"] = json!(next);
    api.ok("/api/wait/register", &b).await["waitId"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Polls the reply that is pending and acks it.
async fn take_reply(api: &Api, token: &str, wait_id: &str) -> Value {
    let poll = json!({"token": token, "waitId": wait_id, "timeoutMs": 5000});
    let v = api.ok("/api/wait/poll", &poll).await;
    assert_eq!(v["status"], "replied", "{v}");
    let ack = json!({"token": token, "waitId": wait_id, "replyId": v["reply"]["id"]});
    api.ok("/api/wait/ack", &ack).await;
    v["reply"].clone()
}

/// The sessions a hub holds, every field as the API shows them.
struct Filled {
    tokens: BTreeMap<&'static str, String>,
}

/// Fills a hub with sessions that between them set every field: keep-alive
/// settings, display title, plan and thread ids, a review, images, automatic
/// replies, a merge, an archive, an open wait and a queued reply.
async fn fill(api: &Api) -> Filled {
    let mut tokens = BTreeMap::new();

    // Every setting, a review, an image, then left waiting.
    let full_who = who("Full session", "/w/a");
    let mut b = full_who.clone();
    b["planLabel"] = json!("plan-a");
    b["threadId"] = json!("thread-a");
    let full = init(api, b).await;
    let w = register(api, &full, &full_who, 1, 40, "write the docs").await;
    let reply = json!({"token": full, "text": "here is a screenshot 图", "images": [{"mimeType": "image/png", "data": PNG}]});
    api.ok("/api/reply", &reply).await;
    let got = take_reply(api, &full, &w).await;
    assert_eq!(got["images"][0]["data"], PNG);
    let config = json!({
        "token": full, "sessionAutoContinue": false, "timedReplyEnabled": true,
        "timedReplyIntervalMs": 3_600_000, "continueMode": "custom",
        "continuePrompt": "Carry on with the plan.", "maxAutoStreak": 7,
        "displayTitle": "Shown title ✓",
    });
    api.ok("/api/session/config", &config).await;
    register(api, &full, &full_who, 2, 90, "commit").await;
    tokens.insert("full", full);

    // Idle auto-continue: an automatic reply, autoStreak 1, status running.
    let auto_who = who("Auto session", "/w/a");
    let auto = init(api, auto_who.clone()).await;
    api.ok(
        "/api/session/config",
        &json!({"token": auto, "sessionAutoContinue": true, "continuePrompt": "Keep going."}),
    )
    .await;
    let w = register(api, &auto, &auto_who, 1, 10, "the next part").await;
    let got = take_reply(api, &auto, &w).await;
    assert_eq!(got["auto"], true, "{got}");
    tokens.insert("auto", auto);

    // A merge: the source is closed, the target has both histories.
    let src_who = who("Merge source", "/w/b");
    let dst_who = who("Merge target", "/w/b");
    let src = init(api, src_who.clone()).await;
    let dst = init(api, dst_who.clone()).await;
    register(api, &src, &src_who, 1, 50, "merge me").await;
    let w = register(api, &dst, &dst_who, 1, 60, "").await;
    api.ok("/api/reply", &json!({"token": dst, "text": "fine"}))
        .await;
    take_reply(api, &dst, &w).await;
    let mut m = dst_who.clone();
    m["fromToken"] = json!(src);
    m["toToken"] = json!(dst);
    api.ok("/api/merge", &m).await;
    tokens.insert("merged", src);
    tokens.insert("target", dst);

    // Archived.
    let arch_who = who("Archived session", "/w/c");
    let arch = init(api, arch_who.clone()).await;
    let w = register(api, &arch, &arch_who, 1, 100, "").await;
    api.ok(
        "/api/reply",
        &json!({"token": arch, "text": "done, thanks"}),
    )
    .await;
    take_reply(api, &arch, &w).await;
    api.ok(&format!("/api/sessions/{arch}/archive"), &json!({}))
        .await;
    tokens.insert("archived", arch);

    // A reply sent while nobody waits.
    let queued = init(api, who("Queued session", "/w/d")).await;
    api.ok(
        "/api/reply",
        &json!({"token": queued, "text": "for your next turn"}),
    )
    .await;
    tokens.insert("queued", queued);

    Filled { tokens }
}

/// Every session (with its whole history) by token.
async fn snapshot(api: &Api) -> BTreeMap<String, Value> {
    let (status, list) = api.get("/api/sessions?status=all&limit=200").await.unwrap();
    assert_eq!(status, 200);
    let mut out = BTreeMap::new();
    for s in list["sessions"].as_array().unwrap() {
        let token = s["token"].as_str().unwrap().to_owned();
        out.insert(token.clone(), api.session(&token).await);
    }
    out
}

/// What an export cannot carry: an open wait becomes `holding`, and queued
/// (undelivered) replies stay only as messages in the history.
fn as_exported(mut s: Value) -> Value {
    if matches!(s["status"].as_str(), Some("waiting" | "replied")) {
        s["status"] = json!("holding");
    }
    s["waitingSince"] = Value::Null;
    s["queuedReplies"] = json!(0);
    s["nextBefore"] = Value::Null;
    s
}

fn assert_same_sessions(
    before: &BTreeMap<String, Value>,
    after: &BTreeMap<String, Value>,
    normalize: fn(Value) -> Value,
) {
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        after.keys().collect::<Vec<_>>(),
        "the same sessions"
    );
    for (token, b) in before {
        let (b, a) = (normalize(b.clone()), normalize(after[token].clone()));
        let fields: std::collections::BTreeSet<&String> = b
            .as_object()
            .unwrap()
            .keys()
            .chain(a.as_object().unwrap().keys())
            .collect();
        for f in fields {
            assert_eq!(b.get(f), a.get(f), "{token}: field {f} changed");
        }
    }
}

/// A config.toml that points the admin CLI at this hub's port, so it never
/// talks to some other hub on the default port of this machine.
fn pin_listen(home: &Path, addr: std::net::SocketAddr) {
    std::fs::create_dir_all(home).unwrap();
    std::fs::write(home.join("config.toml"), format!("listen = \"{addr}\"\n")).unwrap();
}

fn cli_ok(home: &Path, args: &[&str]) -> String {
    let out = run_cli(home, args);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "holdline-hub {args:?} failed: {text}");
    text
}

#[tokio::test]
async fn export_import_keeps_every_field_and_archive_files_are_written() {
    let dir = tempfile::tempdir().unwrap();
    let (home_a, home_b) = (dir.path().join("a"), dir.path().join("b"));
    let (addr_a, addr_b) = (free_addr(), free_addr());
    pin_listen(&home_a, addr_a);
    pin_listen(&home_b, addr_b);
    let mut a = RealHub::start(&home_a, addr_a).await;
    let filled = fill(&a.api).await;
    let before = snapshot(&a.api).await;
    assert_eq!(before.len(), 6);
    let full = &before[&filled.tokens["full"]];
    assert_eq!(full["status"], "waiting");
    assert_eq!(full["lastReview"]["completionPct"], 90);
    assert_eq!(before[&filled.tokens["auto"]]["status"], "running");
    assert_eq!(before[&filled.tokens["merged"]]["status"], "merged");
    assert_eq!(before[&filled.tokens["archived"]]["status"], "archived");

    // The archive file: archive/YYYY-MM/ct_….json with the whole session.
    let arch = &filled.tokens["archived"];
    let month = time::OffsetDateTime::now_utc()
        .format(time::macros::format_description!("[year]-[month]"))
        .unwrap();
    let file = home_a
        .join("archive")
        .join(&month)
        .join(format!("{arch}.json"));
    let archived: Value = serde_json::from_slice(
        &std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display())),
    )
    .unwrap();
    assert_eq!(archived[arch]["status"], "archived");
    assert_eq!(archived[arch]["messages"].as_array().unwrap().len(), 2);
    // It is a sessions.json of its own: import reads it.
    let home_c = dir.path().join("c");
    pin_listen(&home_c, free_addr());
    let out = cli_ok(&home_c, &["import", file.to_str().unwrap()]);
    assert!(out.contains("imported 1 session,"), "{out}");

    // Export from the running hub, import into a fresh home with no hub.
    let export = dir.path().join("sessions.json");
    cli_ok(&home_a, &["export", "--out", export.to_str().unwrap()]);
    let out = cli_ok(&home_b, &["import", export.to_str().unwrap()]);
    assert!(out.contains("imported 6 sessions"), "{out}");
    let b = RealHub::start(&home_b, addr_b).await;
    let after = snapshot(&b.api).await;
    assert_same_sessions(&before, &after, as_exported);

    // The bindings came along: each chat, plan and thread finds its session.
    let full_tok = &filled.tokens["full"];
    for body in [
        who("Full session", "/w/a"),
        json!({"cursorTitle": "Full session", "workspace": "/w/a", "hostIp": "10.1.1.1", "planLabel": "plan-a"}),
        json!({"cursorTitle": "Full session", "workspace": "/w/a", "hostIp": "10.1.1.1", "threadId": "thread-a"}),
    ] {
        let v = b.api.ok("/api/init", &body).await;
        assert_eq!(
            (&v["token"], &v["created"]),
            (&json!(full_tok), &json!(false)),
            "{body}"
        );
    }
    for (name, title, ws) in [
        ("target", "Merge target", "/w/b"),
        ("queued", "Queued session", "/w/d"),
        ("auto", "Auto session", "/w/a"),
    ] {
        let mut sel = who(title, ws);
        sel["token"] = json!(filled.tokens[name]);
        b.api.ok("/api/select", &sel).await;
    }
    // Importing the same file again adds nothing and changes nothing.
    drop(b);
    let out = cli_ok(&home_b, &["import", export.to_str().unwrap()]);
    assert!(out.contains("imported 0 sessions, skipped 6"), "{out}");
    a.stop();
}

#[tokio::test]
async fn merged_chat_binding_survives_export_import() {
    let dir = tempfile::tempdir().unwrap();
    let (home_a, home_b) = (dir.path().join("a"), dir.path().join("b"));
    let (addr_a, addr_b) = (free_addr(), free_addr());
    pin_listen(&home_a, addr_a);
    pin_listen(&home_b, addr_b);
    let a = RealHub::start(&home_a, addr_a).await;
    let filled = fill(&a.api).await;
    let export = dir.path().join("sessions.json");
    cli_ok(&home_a, &["export", "--out", export.to_str().unwrap()]);
    cli_ok(&home_b, &["import", export.to_str().unwrap()]);
    let b = RealHub::start(&home_b, addr_b).await;
    // On the old hub the merged source's chat was re-pointed to the target;
    // the restored hub must send it there too, not open a new session.
    let on_a = a.api.ok("/api/init", &who("Merge source", "/w/b")).await;
    let on_b = b.api.ok("/api/init", &who("Merge source", "/w/b")).await;
    assert_eq!(on_a["token"], json!(filled.tokens["target"]));
    assert_eq!(on_b["token"], on_a["token"]);
}

/// docs/operations.md, "Backup and restore", step by step.
#[tokio::test]
async fn backup_and_restore_as_documented() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("holdline");
    let addr = free_addr();
    pin_listen(&home, addr);
    let mut hub = RealHub::start(&home, addr).await;
    let filled = fill(&hub.api).await;
    let before = snapshot(&hub.api).await;

    // 1. `holdline-hub export --out holdline-backup.json` while the hub runs.
    let backup = dir.path().join("holdline-backup.json");
    let out = cli_ok(&home, &["export", "--out", backup.to_str().unwrap()]);
    assert!(out.contains("exported 6 sessions"), "{out}");

    // 2. Stop the hub and copy the whole home (db/, secret, archive/).
    hub.stop();
    let copy = dir.path().join("holdline-copy");
    let cp = std::process::Command::new("cp")
        .arg("-a")
        .arg(&home)
        .arg(&copy)
        .status()
        .unwrap();
    assert!(cp.success());

    // Restore from the export on a new machine: `holdline-hub import`, start.
    let new_home = dir.path().join("new-machine");
    let new_addr = free_addr();
    pin_listen(&new_home, new_addr);
    let out = cli_ok(&new_home, &["import", backup.to_str().unwrap()]);
    assert!(out.contains("imported 6 sessions"), "{out}");
    let restored = RealHub::start(&new_home, new_addr).await;
    assert_same_sessions(&before, &snapshot(&restored.api).await, as_exported);
    drop(restored);

    // Restore from the copy: everything, waits and undelivered replies too.
    let copy_addr = free_addr();
    pin_listen(&copy, copy_addr);
    let restored = RealHub::start(&copy, copy_addr).await;
    assert_same_sessions(&before, &snapshot(&restored.api).await, |s| s);
    assert_eq!(
        std::fs::read(copy.join("secret")).unwrap(),
        std::fs::read(home.join("secret")).unwrap(),
        "the copy keeps the secret: bridges and phones keep working"
    );
    let queued = &filled.tokens["queued"];
    let queued_who = who("Queued session", "/w/d");
    let w = register(&restored.api, queued, &queued_who, 1, 0, "").await;
    let got = take_reply(&restored.api, queued, &w).await;
    assert_eq!(got["text"], "for your next turn");
}
