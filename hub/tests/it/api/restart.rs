//! The real binary: restarts keep waits, replies and bindings; SIGKILL after a reply
//! delivers it once; a second serve on the same home is refused; logs carry no message
//! text or secret; the Node hub's file imports.

use super::*;

#[tokio::test]
async fn a_clean_restart_keeps_waits_replies_and_bindings() {
    let hub = TestHub::start().await;
    let token = hub.init("t").await;
    let w = hub.register(&token, "t", "m", "q1").await;
    let r = hub
        .ok("/api/reply", json!({"token": token, "text": "survives"}))
        .await;
    let dir = hub.stop().await.unwrap();
    let hub = TestHub::start_at(dir.path(), Options::default()).await;
    let s = hub.session(&token).await;
    assert_eq!(s["status"], "replied");
    let got = hub.poll(&token, &w, 0).await;
    assert_eq!(got["reply"]["id"], r["replyId"]);
    assert_eq!(hub.init("t").await, token);
}

/// After a restart the hub holds only summaries; whole sessions are read when
/// needed. Lists, search, waits and changes must not tell the difference.
#[tokio::test]
async fn after_a_restart_sessions_read_on_demand_answer_as_before() {
    let hub = TestHub::start().await;
    let waiting = hub.init("Waiting").await;
    let wait = hub.register(&waiting, "Waiting", "still here", "q1").await;
    let quiet = hub.init("Quiet").await;
    hub.register(&quiet, "Quiet", "the haystack holds a needle", "q1")
        .await;
    hub.ok("/api/reply", json!({"token": quiet, "text": "ok"}))
        .await;
    let archived = hub.init("Archived").await;
    hub.ok(&format!("/api/sessions/{archived}/archive"), json!({}))
        .await;
    let (from, to) = (hub.init("From").await, hub.init("To").await);
    let list_all = "/api/sessions?status=all";
    let (_, before) = hub.get(list_all).await;
    let (_, open_before) = hub.get("/api/sessions").await;

    let dir = hub.stop().await.unwrap();
    let hub = TestHub::start_at(dir.path(), Options::default()).await;
    // First, before anything reads it: the open wait came back with its session: another session cannot use it.
    let (status, v) = hub
        .post("/api/wait/cancel", json!({"token": quiet, "waitId": wait}))
        .await;
    assert_eq!(
        (status, error_code(&v)),
        (StatusCode::FORBIDDEN, "FORBIDDEN")
    );
    // Search reads sessions it does not keep: by title and by message text.
    let (_, found) = hub.get("/api/sessions?q=quiet").await;
    assert_eq!(found["sessions"][0]["token"], quiet);
    let (_, found) = hub.get("/api/sessions?q=NEEDLE").await;
    assert_eq!(found["sessions"].as_array().unwrap().len(), 1);
    assert_eq!(found["sessions"][0]["token"], quiet);
    // Same lists, same order, same fields.
    assert_eq!(hub.get(list_all).await.1, before);
    assert_eq!(hub.get("/api/sessions").await.1, open_before);
    let r = hub
        .ok(
            "/api/reply",
            json!({"token": waiting, "text": "after restart"}),
        )
        .await;
    assert_eq!(
        hub.poll(&waiting, &wait, 0).await["reply"]["id"],
        r["replyId"]
    );
    // Two sessions never read since the start merge; an archived one restores.
    hub.ok(
        "/api/merge",
        json!({"fromToken": from, "toToken": to, "cursorTitle": "To", "workspace": "/w", "hostIp": "10.0.0.2"}),
    )
    .await;
    assert_eq!(hub.session(&from).await["status"], "merged");
    hub.ok(&format!("/api/sessions/{archived}/restore"), json!({}))
        .await;
    assert_eq!(hub.session(&archived).await["status"], "holding");
}

/// `v` with the fields of `extra` set.
fn body(v: Value, extra: Value) -> Value {
    let mut v = v;
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    v
}

#[tokio::test]
async fn sigkill_after_a_reply_delivers_it_exactly_once_after_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut hub = RealHub::start(dir.path(), free_addr()).await;
    let chat = json!({"cursorTitle": "t", "workspace": "/w", "hostIp": "h"});
    let token = hub.api.ok("/api/init", &chat).await["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let wait = hub
        .api
        .ok(
            "/api/wait/register",
            &body(
                chat.clone(),
                json!({"token": token, "message": "m", "requestId": "q1"}),
            ),
        )
        .await["waitId"]
        .as_str()
        .unwrap()
        .to_owned();
    let reply = hub
        .api
        .ok("/api/reply", &json!({"token": token, "text": "durable"}))
        .await;
    // Killed right after the 200, before anyone polled.
    hub.kill();

    hub.restart().await;
    let s = hub.api.session(&token).await;
    assert_eq!(
        s["status"], "replied",
        "the session still waits, with its reply"
    );
    let poll = json!({"token": token, "waitId": wait, "timeoutMs": 0});
    let got = hub.api.ok("/api/wait/poll", &poll).await;
    assert_eq!(got["reply"]["id"], reply["replyId"]);
    assert_eq!(got["reply"]["text"], "durable");
    hub.api
        .ok(
            "/api/wait/ack",
            &json!({"token": token, "waitId": wait, "replyId": reply["replyId"]}),
        )
        .await;
    hub.kill();

    // Acked before the second kill: never delivered again.
    hub.restart().await;
    let got = hub.api.ok("/api/wait/poll", &poll).await;
    assert_eq!(got, json!({"status": "gone", "reason": "finished"}));
    let w2 = hub
        .api
        .ok(
            "/api/wait/register",
            &body(
                chat,
                json!({"token": token, "message": "next", "requestId": "q2"}),
            ),
        )
        .await["waitId"]
        .as_str()
        .unwrap()
        .to_owned();
    let got = hub
        .api
        .ok(
            "/api/wait/poll",
            &json!({"token": token, "waitId": w2, "timeoutMs": 100}),
        )
        .await;
    assert_eq!(got["status"], "renewal");
}

#[tokio::test]
async fn a_second_serve_on_the_same_home_says_the_store_is_locked() {
    let dir = tempfile::tempdir().unwrap();
    let _first = RealHub::start(dir.path(), free_addr()).await;
    let out = realhub::hub_command(dir.path())
        .args(["serve", "--listen", &free_addr().to_string()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("locked by another holdline-hub"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[tokio::test]
async fn logs_carry_no_message_text_and_no_secret() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let mut hub = RealHub::start_logging(home, free_addr()).await;
    let secret = hub.api.secret.clone();
    let chat = json!({"cursorTitle": "t", "workspace": "/w", "hostIp": "h"});
    let token = hub.api.ok("/api/init", &chat).await["token"]
        .as_str()
        .unwrap()
        .to_owned();
    hub.api
        .ok(
            "/api/wait/register",
            &body(
                chat,
                json!({"token": token, "message": "AGENT-SAYS-zebra-42", "requestId": "q1"}),
            ),
        )
        .await;
    hub.api
        .ok(
            "/api/reply",
            &json!({"token": token, "text": "PERSON-SAYS-okapi-17"}),
        )
        .await;
    // A failed login and a bad request are logged too, without their contents.
    let url = format!("http://{}", hub.addr);
    let _ = reqwest::Client::new()
        .post(format!("{url}/api/login"))
        .json(&json!({"key": "GUESS-narwhal"}))
        .send()
        .await;
    let _ = reqwest::Client::new()
        .post(format!("{url}/api/reply"))
        .bearer_auth(&secret)
        .body("{\"token\":\"SECRET-TEXT-ibis\"")
        .send()
        .await;
    hub.stop();
    let log = std::fs::read_to_string(home.join("logs/hub.log")).unwrap();
    assert!(log.contains("reply recorded"), "the log is written: {log}");
    for needle in ["zebra-42", "okapi-17", "narwhal", "ibis", secret.as_str()] {
        assert!(!log.contains(needle), "log contains {needle}");
    }
    // The home is private: folders 0700, files 0600, sled's included.
    fn walk(dir: &Path) {
        use std::os::unix::fs::PermissionsExt;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            if path.is_dir() {
                assert_eq!(mode, 0o700, "{}", path.display());
                walk(&path);
            } else {
                assert_eq!(mode, 0o600, "{}", path.display());
            }
        }
    }
    walk(home);
}

#[tokio::test]
async fn the_node_hub_file_imports_with_tokens_titles_messages_and_bindings() {
    let home = tempfile::tempdir().unwrap();
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../store/tests/data/node-hub-sessions.json");
    let out = Command::new(env!("CARGO_BIN_EXE_holdline-hub"))
        .arg("--home")
        .arg(home.path())
        .arg("import")
        .arg(&fixture)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("imported 2"));

    let hub = TestHub::start_at(home.path(), Options::default()).await;
    let s = hub.session("ct_9f2c1e7a4b5d4c3e8a1f2b3c4d5e6f70").await;
    assert_eq!(s["title"], "重构登录模块");
    assert_eq!(s["displayTitle"], "登录重构");
    assert_eq!(s["msgCount"], 4);
    assert_eq!(s["messages"][1]["content"], "先补单元测试，再提交。");
    assert_eq!(s["lastReview"]["nextStep"], "提交并更新 CHANGELOG");
    // Export gives back the same file shape.
    let (_, export) = hub.get("/api/export").await;
    let node: Value = serde_json::from_str(include_str!(
        "../../../../store/tests/data/node-hub-sessions.json"
    ))
    .unwrap();
    for (token, n) in node.as_object().unwrap() {
        let e = &export[token];
        for field in [
            "token",
            "title",
            "displayTitle",
            "workspace",
            "createdAt",
            "lastActiveAt",
            "msgCount",
            "autoStreak",
            "bindingKey",
            "hostIp",
            "hub",
            "bindingCheckCount",
            "continueMode",
            "sessionAutoContinue",
            "timedReplyEnabled",
            "timedReplyIntervalMs",
            "messages",
            "lastReview",
        ] {
            assert_eq!(e[field], n[field], "{token} {field}");
        }
    }
    // Its binding survives: the same chat selects it.
    let v = hub
        .ok(
            "/api/select",
            json!({"token": "ct_9f2c1e7a4b5d4c3e8a1f2b3c4d5e6f70", "cursorTitle": "重构登录模块",
                   "workspace": "/Users/dev/work/webapp", "hostIp": "192.168.1.20"}),
        )
        .await;
    assert_eq!(v["status"], "holding");
    let v = hub
        .ok("/api/init", json!({"cursorTitle": "Fix flaky CI", "workspace": "/home/dev/service", "hostIp": "192.168.1.31"}))
        .await;
    assert_eq!(v["token"], "ct_0a1b2c3d4e5f60718293a4b5c6d7e8f9");
    assert_eq!(v["created"], false);
}
