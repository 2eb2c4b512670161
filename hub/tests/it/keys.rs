//! Agent keys against the real `holdline-hub` binary over real HTTP: a key
//! opens the agent routes and nothing else, a wrong or revoked key is refused
//! at once (mid-wait too), the store and the log never hold a key's text, and
//! `holdline-hub key …` creates, lists and revokes with the hub running or not.

use std::path::Path;
use std::time::Duration;

use crate::realhub::{RealHub, call, create_key, free_addr, run_cli};
use reqwest::Method;
use serde_json::{Value, json};

fn fingerprint(title: &str) -> Value {
    json!({"cursorTitle": title, "workspace": "/w", "hostIp": "10.0.0.9"})
}

/// `init` then `wait/register` with `bearer`: (token, waitId).
async fn waiting_session(hub: &RealHub, bearer: &str, title: &str) -> (String, String) {
    let (s, v) = call(
        hub,
        Method::POST,
        "/api/init",
        bearer,
        Some(fingerprint(title)),
    )
    .await;
    assert_eq!(s, 200, "init: {v}");
    let token = v["token"].as_str().unwrap().to_owned();
    let mut body = fingerprint(title);
    body["token"] = json!(token);
    body["message"] = json!("done with step one");
    body["requestId"] = json!(format!("q-{title}"));
    let (s, v) = call(hub, Method::POST, "/api/wait/register", bearer, Some(body)).await;
    assert_eq!(s, 200, "register: {v}");
    (token, v["waitId"].as_str().unwrap().to_owned())
}

/// `initialize` at `/mcp` with `bearer`: the status and the body's text.
async fn mcp_initialize(hub: &RealHub, bearer: &str) -> (u16, String) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "keys-test", "version": "1"}}});
    let res = reqwest::Client::new()
        .post(format!("http://{}/mcp", hub.addr))
        .bearer_auth(bearer)
        .header("accept", "application/json, text/event-stream")
        .json(&body)
        .send()
        .await
        .expect("the hub answers");
    let status = res.status().as_u16();
    (status, res.text().await.unwrap_or_default())
}

async fn start() -> (tempfile::TempDir, RealHub) {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let hub = RealHub::start_logging(&home, free_addr()).await;
    (dir, hub)
}

#[tokio::test]
async fn an_agent_key_is_refused_on_every_person_route() {
    let (_dir, hub) = start().await;
    let key = create_key(&hub.home, "laptop");
    let (token, _) = waiting_session(&hub, &key, "chat").await;
    let t = token.as_str();
    let routes: Vec<(Method, String, Option<Value>)> = vec![
        (
            Method::POST,
            "/api/session/config".into(),
            Some(json!({"token": t, "displayTitle": "x"})),
        ),
        (
            Method::POST,
            "/api/reply".into(),
            Some(json!({"token": t, "text": "hi"})),
        ),
        (Method::GET, "/api/sessions".into(), None),
        (Method::GET, format!("/api/sessions/{t}/find?q=step"), None),
        (Method::POST, format!("/api/sessions/{t}/archive"), None),
        (Method::POST, format!("/api/sessions/{t}/restore"), None),
        (
            Method::POST,
            format!("/api/sessions/{t}/merge"),
            Some(json!({"toToken": t})),
        ),
        (Method::GET, "/api/templates".into(), None),
        (
            Method::PUT,
            "/api/templates".into(),
            Some(json!({"templates": []})),
        ),
        (Method::GET, "/api/export".into(), None),
        (Method::POST, "/api/import".into(), Some(json!({}))),
        (Method::GET, "/api/whoami".into(), None),
        (Method::POST, "/api/logout".into(), None),
        (Method::POST, "/api/logout/everywhere".into(), None),
        (Method::GET, "/api/events".into(), None),
        (Method::GET, "/metrics".into(), None),
        (Method::GET, "/api/keys".into(), None),
        (
            Method::POST,
            "/api/keys".into(),
            Some(json!({"name": "second"})),
        ),
        (Method::DELETE, "/api/keys/laptop".into(), None),
    ];
    let mut wrong = Vec::new();
    for (method, path, body) in routes {
        let (status, v) = call(&hub, method.clone(), &path, &key, body).await;
        let sentence = v["error"]["message"].as_str().unwrap_or("");
        if status != 403
            || v["error"]["code"] != "FORBIDDEN"
            || !sentence.contains("an agent key can only call the agent routes")
        {
            wrong.push(format!("{method} {path} answered {status} {v}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "person routes an agent key was not refused on:\n{}",
        wrong.join("\n")
    );
    // Nothing the refused calls asked for happened.
    let s = hub.api.session(&token).await;
    assert_eq!(s["status"], "waiting");
    assert_eq!(s["displayTitle"], "");
    let (_, keys) = call(&hub, Method::GET, "/api/keys", &hub.api.secret, None).await;
    let names: Vec<&str> = keys["keys"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|k| k["name"].as_str())
        .collect();
    assert_eq!(names, ["laptop"]);
}

#[tokio::test]
async fn an_agent_key_works_on_the_agent_routes_and_reads_only_its_sessions() {
    let (_dir, hub) = start().await;
    let key = create_key(&hub.home, "laptop");
    let other = create_key(&hub.home, "desk");
    let secret = hub.api.secret.clone();

    let (token, wait_id) = waiting_session(&hub, &key, "chat").await;
    let mut select = fingerprint("chat");
    select["token"] = json!(token);
    let (s, v) = call(&hub, Method::POST, "/api/select", &key, Some(select)).await;
    assert_eq!((s, v["status"].as_str()), (200, Some("waiting")), "{v}");

    // Its own session reads; another key's and the secret's do not exist for it.
    let (s, v) = call(
        &hub,
        Method::GET,
        &format!("/api/sessions/{token}?limit=1"),
        &key,
        None,
    )
    .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["title"], "chat");
    let (theirs, _) = waiting_session(&hub, &other, "their chat").await;
    let (mine_by_secret, _) = waiting_session(&hub, &secret, "person chat").await;
    for t in [&theirs, &mine_by_secret] {
        let (s, v) = call(&hub, Method::GET, &format!("/api/sessions/{t}"), &key, None).await;
        assert_eq!(
            (s, v["error"]["code"].as_str()),
            (404, Some("SESSION_NOT_FOUND")),
            "{v}"
        );
    }

    // The person replies; the key's poll gets it, acks it.
    let (s, v) = call(
        &hub,
        Method::POST,
        "/api/reply",
        &secret,
        Some(json!({"token": token, "text": "go on"})),
    )
    .await;
    assert_eq!((s, v["queued"].as_bool()), (200, Some(false)), "{v}");
    let poll = json!({"token": token, "waitId": wait_id, "timeoutMs": 5000});
    let (s, v) = call(&hub, Method::POST, "/api/wait/poll", &key, Some(poll)).await;
    assert_eq!((s, v["status"].as_str()), (200, Some("replied")), "{v}");
    assert_eq!(v["reply"]["text"], "go on");
    let ack = json!({"token": token, "waitId": wait_id, "replyId": v["reply"]["id"]});
    let (s, v) = call(&hub, Method::POST, "/api/wait/ack", &key, Some(ack)).await;
    assert_eq!(s, 200, "{v}");

    // A new wait, cancelled; then a merge of a second chat into this one.
    let (_, wait2) = waiting_session(&hub, &key, "chat").await;
    let cancel = json!({"token": token, "waitId": wait2});
    let (s, v) = call(&hub, Method::POST, "/api/wait/cancel", &key, Some(cancel)).await;
    assert_eq!(s, 200, "{v}");
    let (from, _) = waiting_session(&hub, &key, "side chat").await;
    let mut merge = fingerprint("chat");
    merge["fromToken"] = json!(from);
    merge["toToken"] = json!(token);
    let (s, v) = call(&hub, Method::POST, "/api/merge", &key, Some(merge)).await;
    assert_eq!((s, v["token"].as_str()), (200, Some(token.as_str())), "{v}");

    // /healthz with a key shows what it shows everyone: that the hub is up.
    let (s, v) = call(
        &hub,
        Method::GET,
        holdline_contract::routes::HEALTHZ,
        &key,
        None,
    )
    .await;
    assert_eq!(s, 200);
    assert_eq!(
        v.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["ok", "version"],
        "{v}"
    );
}

#[tokio::test]
async fn a_wrong_key_is_refused_with_its_own_code_and_one_sentence() {
    let (_dir, hub) = start().await;
    let key = create_key(&hub.home, "laptop");
    let forged = format!("hlk_{}", "A".repeat(43));
    let flipped = format!("{}x", &key[..key.len() - 1]);
    for bad in [forged.as_str(), flipped.as_str()] {
        let (s, v) = call(&hub, Method::POST, "/api/init", bad, Some(fingerprint("c"))).await;
        assert_eq!(
            (s, v["error"]["code"].as_str()),
            (401, Some("KEY_REFUSED")),
            "{v}"
        );
        // Bridges before the `KEY_REFUSED` code know a refused key by its 401 (and, over
        // `/mcp`, by these words): the message keeps its beginning.
        assert_eq!(
            v["error"]["message"],
            "the hub refused this agent key: it is wrong or was revoked (`holdline-hub key list` shows the live keys)"
        );
    }
}

#[tokio::test]
async fn revoking_a_key_refuses_it_at_once_and_ends_its_wait_mid_poll() {
    let (_dir, hub) = start().await;
    let key = create_key(&hub.home, "laptop");
    let spare = create_key(&hub.home, "desk");
    let (s, text) = mcp_initialize(&hub, &key).await;
    assert_eq!(s, 200, "/mcp takes a live key: {text}");
    let (token, wait_id) = waiting_session(&hub, &key, "chat").await;
    let (spare_token, spare_wait) = waiting_session(&hub, &spare, "other").await;

    // A long poll in flight when the key is revoked.
    let poll = {
        let hub_addr = hub.addr;
        let key = key.clone();
        let body = json!({"token": token, "waitId": wait_id, "timeoutMs": 30000});
        tokio::spawn(async move {
            let res = reqwest::Client::new()
                .post(format!("http://{hub_addr}/api/wait/poll"))
                .bearer_auth(key)
                .json(&body)
                .send()
                .await
                .unwrap();
            (res.status().as_u16(), res.json::<Value>().await.unwrap())
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let out = run_cli(&hub.home, &["key", "revoke", "laptop"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("1 open wait ended"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let (s, v) = tokio::time::timeout(Duration::from_secs(10), poll)
        .await
        .expect("the held poll ends when its key is revoked")
        .unwrap();
    assert_eq!(
        (s, v["status"].as_str(), v["reason"].as_str()),
        (200, Some("gone"), Some("key_revoked")),
        "{v}"
    );

    // The key is refused from now on, on every route, /mcp too.
    let (s, text) = mcp_initialize(&hub, &key).await;
    assert_eq!(s, 401, "{text}");
    assert!(
        text.contains("the hub refused this agent key: it is wrong or was revoked"),
        "{text}"
    );
    let poll = json!({"token": token, "waitId": wait_id, "timeoutMs": 0});
    let (s, v) = call(&hub, Method::POST, "/api/wait/poll", &key, Some(poll)).await;
    assert_eq!(s, 401, "{v}");
    let (s, _) = call(
        &hub,
        Method::POST,
        "/api/init",
        &key,
        Some(fingerprint("chat")),
    )
    .await;
    assert_eq!(s, 401);

    // The session left `waiting`; a reply now queues for the next wait.
    let session = hub.api.session(&token).await;
    assert_eq!(session["status"], "holding");
    let v = hub
        .api
        .ok("/api/reply", &json!({"token": token, "text": "later"}))
        .await;
    assert_eq!(v["queued"], true, "{v}");

    // The other key's wait goes on.
    assert_eq!(hub.api.session(&spare_token).await["status"], "waiting");
    let poll = json!({"token": spare_token, "waitId": spare_wait, "timeoutMs": 0});
    let (s, v) = call(&hub, Method::POST, "/api/wait/poll", &spare, Some(poll)).await;
    assert_eq!((s, v["status"].as_str()), (200, Some("renewal")), "{v}");
}

#[tokio::test]
async fn a_key_revoked_while_the_hub_is_stopped_ends_its_wait_at_start() {
    let (_dir, mut hub) = start().await;
    let key = create_key(&hub.home, "laptop");
    let (token, wait_id) = waiting_session(&hub, &key, "chat").await;
    hub.stop();
    let out = run_cli(&hub.home, &["key", "revoke", "laptop"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    hub.restart().await;
    // The session is the key's: only a key of that name (made anew) polls it.
    let again = create_key(&hub.home, "laptop");
    let poll = json!({"token": token, "waitId": wait_id, "timeoutMs": 0});
    let (s, v) = call(&hub, Method::POST, "/api/wait/poll", &again, Some(poll)).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(
        (v["status"].as_str(), v["reason"].as_str()),
        (Some("gone"), Some("key_revoked")),
        "{v}"
    );
    assert_eq!(hub.api.session(&token).await["status"], "holding");
}

/// Every file under `dir`, recursively.
fn files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[tokio::test]
async fn a_key_is_stored_hashed_and_never_logged() {
    let (dir, mut hub) = start().await;
    let key = create_key(&hub.home, "laptop");
    waiting_session(&hub, &key, "chat").await;
    let (s, _) = call(&hub, Method::GET, "/api/sessions", &key, None).await;
    assert_eq!(s, 403);
    let (s, _) = call(
        &hub,
        Method::POST,
        "/api/init",
        &format!("{key}x"),
        Some(fingerprint("c")),
    )
    .await;
    assert_eq!(s, 401);
    hub.stop();
    let home = hub.home.clone();
    let mut checked = 0;
    for path in files(dir.path()) {
        let bytes = std::fs::read(&path).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            !text.contains(&key),
            "{} holds the key's text",
            path.display()
        );
        assert!(
            !text.contains(&key[4..]),
            "{} holds the key's random part",
            path.display()
        );
        checked += 1;
    }
    assert!(checked > 3 && home.join("logs/hub.log").exists());
}

#[tokio::test]
async fn the_key_commands_round_trip_with_the_hub_stopped_and_running() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let say = |args: &[&str]| {
        let out = run_cli(&home, args);
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // Stopped: straight to the store.
    let (ok, out, err) = say(&["key", "list"]);
    assert!(
        ok && out.is_empty() && err.contains("no agent keys yet"),
        "{out}{err}"
    );
    let offline = create_key(&home, "laptop");
    let (ok, _, err) = say(&["key", "create", "--name", "laptop"]);
    assert!(
        !ok && err.contains("there is already a key named \"laptop\""),
        "{err}"
    );
    let (ok, _, err) = say(&["key", "create", "--name", "two words"]);
    assert!(!ok && err.contains("is not a key name"), "{err}");
    let (ok, _, err) = say(&["key", "revoke", "nobody"]);
    assert!(
        !ok && err.contains("there is no key named \"nobody\""),
        "{err}"
    );

    // Running: the same commands over HTTP; the offline key works.
    let hub = RealHub::start(&home, free_addr()).await;
    let (s, _) = call(
        &hub,
        Method::POST,
        "/api/init",
        &offline,
        Some(fingerprint("c")),
    )
    .await;
    assert_eq!(s, 200);
    let online = create_key(&home, "desk");
    let (ok, _, err) = say(&["key", "create", "--name", "desk"]);
    assert!(
        !ok && err.contains("there is already a key named \"desk\""),
        "{err}"
    );
    let (ok, out, _) = say(&["key", "list"]);
    assert!(ok, "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert!(
        lines[0].starts_with("NAME") && lines[0].contains("LAST USED"),
        "{out}"
    );
    assert!(
        lines[1].starts_with("desk") && lines[1].ends_with("never"),
        "{out}"
    );
    assert!(
        lines[2].starts_with("laptop") && lines[2].ends_with("UTC"),
        "{out}"
    );
    assert!(!out.contains(&online) && !out.contains(&offline));
    let (ok, out, _) = say(&["key", "revoke", "desk"]);
    assert!(
        ok && out.contains("revoked agent key \"desk\"; 0 open waits ended"),
        "{out}"
    );
    let (ok, _, err) = say(&["key", "revoke", "desk"]);
    assert!(
        !ok && err.contains("there is no key named \"desk\""),
        "{err}"
    );
    let (s, _) = call(
        &hub,
        Method::POST,
        "/api/init",
        &online,
        Some(fingerprint("c")),
    )
    .await;
    assert_eq!(s, 401);
    let (ok, out, _) = say(&["key", "list"]);
    assert!(
        ok && out.lines().count() == 2 && !out.contains("desk"),
        "{out}"
    );
}

#[tokio::test]
async fn key_create_prints_the_install_command_of_a_remote_entry_that_reaches_mcp() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let hub = RealHub::start(&home, free_addr()).await;
    let out = run_cli(
        &home,
        &[
            "key",
            "create",
            "--name",
            "laptop",
            "--print-config",
            "claude-code",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let (key, command) = stdout.split_once('\n').expect("the key, then the command");
    assert!(key.starts_with("hlk_"), "{key}");
    let url = format!("http://{}/mcp", hub.addr);
    assert_eq!(
        command.trim_end(),
        format!("holdline-mcp install --client claude-code --url {url} --key {key}")
    );
    // What the command names works: /mcp takes that key.
    let (status, body) = mcp_initialize(&hub, key).await;
    assert_eq!(status, 200, "{body}");

    let out = run_cli(
        &home,
        &[
            "key",
            "create",
            "--name",
            "other",
            "--print-config",
            "no-such-client",
        ],
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no-such-client"));
}
