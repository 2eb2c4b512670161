//! The hub's `/mcp` sessions over raw HTTP against a real hub process: a session answers
//! only the credential that opened it, sessions are capped per credential and in all (the
//! oldest idle closed first, one with a call in flight never), a revoked key's sessions
//! end, and protocol errors are JSON-RPC errors with the status the MCP spec names.

#![allow(deprecated)] // the harness answers roots/list, deprecated by SEP-2577

use std::time::Duration;

use crate::harness::*;
use serde_json::{Value, json};

/// A hub on a fresh home whose `config.toml` is `config`.
async fn hub_with(home: &tempfile::TempDir, config: &str) -> TestHub {
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    TestHub::start(home.path()).await.unwrap()
}

async fn revoke_key(hub: &TestHub, name: &str) {
    let r = hub
        .http
        .delete(format!("{}/api/keys/{name}", hub.url()))
        .bearer_auth(&hub.secret)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}

/// A POST of `body` to `/mcp` with `bearer`, on `session` when given.
async fn post(
    hub: &TestHub,
    bearer: &str,
    session: Option<&str>,
    body: impl Into<reqwest::Body>,
) -> reqwest::Response {
    let mut request = reqwest::Client::new()
        .post(format!("{}/mcp", hub.url()))
        .bearer_auth(bearer)
        .header("Accept", "application/json, text/event-stream")
        .header("Content-Type", "application/json")
        .body(body);
    if let Some(s) = session {
        request = request
            .header("Mcp-Session-Id", s)
            .header("Mcp-Protocol-Version", "2025-06-18");
    }
    request.send().await.unwrap()
}

async fn delete(hub: &TestHub, bearer: &str, session: &str) -> reqwest::Response {
    hub.http
        .delete(format!("{}/mcp", hub.url()))
        .bearer_auth(bearer)
        .header("Mcp-Session-Id", session)
        .header("Mcp-Protocol-Version", "2025-06-18")
        .send()
        .await
        .unwrap()
}

/// The JSON-RPC messages of an SSE (or plain JSON) answer.
async fn messages(answer: reqwest::Response) -> Vec<Value> {
    let text = answer.text().await.unwrap();
    if let Ok(v) = serde_json::from_str::<Value>(&text) {
        return vec![v];
    }
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str(d.trim()).ok())
        .collect()
}

/// Opens an MCP session with `bearer` (initialize, then initialized); answers its id.
async fn open(hub: &TestHub, bearer: &str) -> String {
    let answer = try_open(hub, bearer).await;
    assert_eq!(answer.status(), 200, "initialize refused");
    let id = answer.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    messages(answer).await;
    let done = post(
        hub,
        bearer,
        Some(&id),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
    )
    .await;
    assert_eq!(done.status(), 202);
    id
}

async fn try_open(hub: &TestHub, bearer: &str) -> reqwest::Response {
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "holdline-test", "version": "1"}}});
    post(hub, bearer, None, initialize.to_string()).await
}

/// `tools/list` on `session` with `bearer`: the HTTP status and the messages.
async fn list_tools(hub: &TestHub, bearer: &str, session: &str) -> (u16, Vec<Value>) {
    let answer = post(
        hub,
        bearer,
        Some(session),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string(),
    )
    .await;
    (answer.status().as_u16(), messages(answer).await)
}

/// `init_conversation` on `session`; answers the token.
async fn init_on(hub: &TestHub, bearer: &str, session: &str, title: &str) -> String {
    let answer = post(
        hub,
        bearer,
        Some(session),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "init_conversation", "arguments": {"cursorTitle": title}}})
        .to_string(),
    )
    .await;
    let m = messages(answer).await;
    let result = m.iter().find(|m| m["id"] == 3).expect("an answer");
    result["result"]["structuredContent"]["token"]
        .as_str()
        .unwrap_or_else(|| panic!("{result}"))
        .to_owned()
}

/// Starts a `wait_for_user_input` on `session` and leaves its stream open: a call in
/// flight until the person replies.
async fn start_wait(hub: &TestHub, bearer: &str, session: &str, token: &str) -> reqwest::Response {
    let answer = post(
        hub,
        bearer,
        Some(session),
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
            "name": "wait_for_user_input",
            "arguments": {"token": token, "message": "waiting here", "timeoutSec": 60}}})
        .to_string(),
    )
    .await;
    assert_eq!(answer.status(), 200);
    hub.wait_status(token, "waiting").await.unwrap();
    answer
}

fn assert_not_found(status: u16, body: &[Value]) {
    let shown: String = format!("{body:?}").chars().take(300).collect();
    assert_eq!(status, 404, "{shown}");
    assert_eq!(body.len(), 1, "{shown}");
    assert_eq!(body[0]["jsonrpc"], "2.0", "{shown}");
    assert_eq!(body[0]["error"]["code"], -32001, "{shown}");
}

#[tokio::test]
async fn another_credentials_session_is_not_found_and_its_delete_leaves_it_open() {
    let home = tempfile::tempdir().unwrap();
    let hub = TestHub::start(home.path()).await.unwrap();
    let (a, b) = (make_key(&hub, "a").await, make_key(&hub, "b").await);
    let session = open(&hub, &a).await;

    for other in [&b, &hub.secret] {
        let (status, body) = list_tools(&hub, other, &session).await;
        assert_not_found(status, &body);
        let refused = delete(&hub, other, &session).await;
        let status = refused.status().as_u16();
        assert_not_found(status, &messages(refused).await);
        // Exactly as an id that never was.
        let unknown = delete(&hub, other, "0123456789abcdef").await;
        let status = unknown.status().as_u16();
        assert_not_found(status, &messages(unknown).await);
    }

    // A's session lives on, for A only; A's own DELETE ends it.
    let (status, body) = list_tools(&hub, &a, &session).await;
    assert_eq!(status, 200, "{body:?}");
    assert!(
        body[0]["result"]["tools"]
            .as_array()
            .is_some_and(|t| t.len() == 4),
        "{body:?}"
    );
    let ended = delete(&hub, &a, &session).await;
    assert!(ended.status().is_success(), "{}", ended.status());
    let (status, body) = list_tools(&hub, &a, &session).await;
    assert_not_found(status, &body);
    let again = delete(&hub, &a, &session).await;
    let status = again.status().as_u16();
    assert_not_found(status, &messages(again).await);
}

#[tokio::test]
async fn a_body_that_is_not_json_is_a_400_parse_error_and_json_that_is_not_json_rpc_a_400_invalid_request()
 {
    let home = tempfile::tempdir().unwrap();
    let hub = TestHub::start(home.path()).await.unwrap();
    let session = open(&hub, &hub.secret).await;
    for on in [None, Some(session.as_str())] {
        for (body, code) in [
            ("{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ", -32700),
            ("hello", -32700),
            ("{\"hello\": 1}", -32600),
        ] {
            let answer = post(&hub, &hub.secret, on, body).await;
            assert_eq!(answer.status(), 400, "{body}");
            assert!(
                answer.headers()["content-type"]
                    .to_str()
                    .unwrap()
                    .starts_with("application/json")
            );
            let m: Value = answer.json().await.unwrap();
            assert_eq!(m["jsonrpc"], "2.0", "{m}");
            assert_eq!(m["id"], Value::Null, "{m}");
            assert_eq!(m["error"]["code"], code, "{body}: {m}");
        }
    }
    // Nothing was lost: the session still answers.
    let (status, _) = list_tools(&hub, &hub.secret, &session).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn past_the_caps_the_oldest_idle_session_closes_and_one_with_a_call_in_flight_stays() {
    let home = tempfile::tempdir().unwrap();
    let hub = hub_with(
        &home,
        "[mcp]\nsessions_per_credential = 2\nsessions_total = 3\n",
    )
    .await;
    let secret = hub.secret.clone();
    let busy = open(&hub, &secret).await;
    let token = init_on(&hub, &secret, &busy, "busy").await;
    let waiting = start_wait(&hub, &secret, &busy, &token).await;
    let idle = open(&hub, &secret).await;

    // The credential's third: its oldest idle one closes, not the older one that waits.
    let third = open(&hub, &secret).await;
    let (status, body) = list_tools(&hub, &secret, &idle).await;
    assert_not_found(status, &body);
    assert_eq!(list_tools(&hub, &secret, &third).await.0, 200);

    // The hub's fourth (another credential's second): the oldest idle of anyone closes.
    let key = make_key(&hub, "laptop").await;
    let first_of_key = open(&hub, &key).await;
    list_tools(&hub, &key, &first_of_key).await;
    let second_of_key = open(&hub, &key).await;
    let (status, body) = list_tools(&hub, &secret, &third).await;
    assert_not_found(status, &body);
    assert_eq!(list_tools(&hub, &key, &first_of_key).await.0, 200);
    assert_eq!(list_tools(&hub, &key, &second_of_key).await.0, 200);

    // The wait in flight all along gets the person's reply on its stream.
    hub.reply(&token, "carry on", json!([])).await.unwrap();
    let got = tokio::time::timeout(Duration::from_secs(20), messages(waiting))
        .await
        .expect("the wait answers");
    assert!(
        got.iter().any(|m| m.to_string().contains("carry on")),
        "{got:?}"
    );
}

#[tokio::test]
async fn a_new_session_is_refused_with_503_when_every_session_has_a_call_in_flight() {
    let home = tempfile::tempdir().unwrap();
    let hub = hub_with(
        &home,
        "[mcp]\nsessions_per_credential = 1\nsessions_total = 1\n",
    )
    .await;
    let secret = hub.secret.clone();
    let busy = open(&hub, &secret).await;
    let token = init_on(&hub, &secret, &busy, "busy").await;
    let waiting = start_wait(&hub, &secret, &busy, &token).await;

    let key = make_key(&hub, "laptop").await;
    for who in [&secret, &key] {
        let refused = try_open(&hub, who).await;
        assert_eq!(refused.status(), 503);
        let m: Value = refused.json().await.unwrap();
        let message = m["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("TOO_MANY_SESSIONS"), "{m}");
    }
    assert_eq!(hub.session(&token).await.unwrap()["status"], "waiting");
    hub.reply(&token, "still here", json!([])).await.unwrap();
    let got = tokio::time::timeout(Duration::from_secs(20), messages(waiting))
        .await
        .expect("the wait answers");
    assert!(
        got.iter().any(|m| m.to_string().contains("still here")),
        "{got:?}"
    );
    // Idle again: the next one takes its place.
    let next = try_open(&hub, &key).await;
    assert_eq!(next.status(), 200);
    let (status, body) = list_tools(&hub, &secret, &busy).await;
    assert_not_found(status, &body);
}

#[tokio::test]
async fn a_revoked_keys_sessions_end_even_for_a_new_key_of_the_same_name() {
    let home = tempfile::tempdir().unwrap();
    let hub = TestHub::start(home.path()).await.unwrap();
    let old = make_key(&hub, "laptop").await;
    let session = open(&hub, &old).await;
    assert_eq!(list_tools(&hub, &old, &session).await.0, 200);

    revoke_key(&hub, "laptop").await;
    let new = make_key(&hub, "laptop").await;
    assert_ne!(old, new);
    let (status, body) = list_tools(&hub, &new, &session).await;
    assert_not_found(status, &body);
}

/// Seen with Codex over `/mcp` on Ctrl-C: the client ends its session (DELETE) while a
/// `wait_for_user_input` is in flight and its stream still open. The session's calls are
/// cancelled with it: the wait ends at once, not when the call would have ended and the
/// hub's grace after that.
#[tokio::test]
async fn ending_a_session_cancels_its_wait_in_flight_at_once() {
    let home = tempfile::tempdir().unwrap();
    let hub = TestHub::start(home.path()).await.unwrap();
    let key = make_key(&hub, "laptop").await;
    let session = open(&hub, &key).await;
    let token = init_on(&hub, &key, &session, "Ctrl-C").await;
    let call = start_wait(&hub, &key, &session, &token).await;
    let ended = delete(&hub, &key, &session).await;
    assert!(ended.status().is_success(), "{}", ended.status());
    let started = std::time::Instant::now();
    let s = hub.wait_status(&token, "holding").await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "left waiting {:?} after the DELETE: {s}",
        started.elapsed()
    );
    drop(call);
}

/// The hub sends nothing outside a request's own stream, so it offers no standalone
/// stream: a GET is a 405 naming what `/mcp` takes (after the credentials' check), and
/// the session goes on.
#[tokio::test]
async fn a_get_is_a_405_naming_post_and_delete_and_the_session_goes_on() {
    let home = tempfile::tempdir().unwrap();
    let hub = TestHub::start(home.path()).await.unwrap();
    let key = make_key(&hub, "laptop").await;
    let session = open(&hub, &key).await;
    let get = |bearer: Option<&str>| {
        let mut request = hub
            .http
            .get(format!("{}/mcp", hub.url()))
            .header("Accept", "text/event-stream")
            .header("Mcp-Session-Id", &session)
            .header("Mcp-Protocol-Version", "2025-06-18");
        if let Some(b) = bearer {
            request = request.bearer_auth(b);
        }
        request.send()
    };
    assert_eq!(get(None).await.unwrap().status(), 401);
    let refused = get(Some(&key)).await.unwrap();
    assert_eq!(refused.status(), 405);
    assert_eq!(refused.headers()["allow"], "POST, DELETE");
    let body = messages(refused).await;
    assert_eq!(body[0]["error"]["code"], -32600, "{body:?}");
    assert_eq!(list_tools(&hub, &key, &session).await.0, 200);
}

/// Every session's calls share one service loop in the hub: two agents of two keys that
/// number their calls and progress tokens alike each get their own reply, under their own
/// ids, and nothing of the other's.
#[tokio::test]
async fn two_agents_with_the_same_request_ids_each_get_only_their_own_reply() {
    let home = tempfile::tempdir().unwrap();
    let hub = TestHub::start(home.path()).await.unwrap();
    let mut agents = Vec::new();
    for name in ["laptop", "desktop"] {
        let key = make_key(&hub, name).await;
        let session = open(&hub, &key).await;
        let token = init_on(&hub, &key, &session, name).await;
        let call = post(
            &hub,
            &key,
            Some(&session),
            json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
                "name": "wait_for_user_input", "_meta": {"progressToken": "p"},
                "arguments": {"token": token, "message": "waiting here", "timeoutSec": 60}}})
            .to_string(),
        )
        .await;
        assert_eq!(call.status(), 200);
        hub.wait_status(&token, "waiting").await.unwrap();
        agents.push((name, token, call));
    }
    let (laptop, desktop) = (agents.remove(0), agents.remove(0));
    hub.reply(&desktop.1, "for the desktop", json!([]))
        .await
        .unwrap();
    let got = messages(desktop.2).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        hub.session(&laptop.1).await.unwrap()["status"],
        "waiting",
        "the laptop's wait goes on"
    );
    hub.reply(&laptop.1, "for the laptop", json!([]))
        .await
        .unwrap();
    let got_laptop = messages(laptop.2).await;
    for (messages, mine, other) in [
        (&got, "for the desktop", "for the laptop"),
        (&got_laptop, "for the laptop", "for the desktop"),
    ] {
        let shown = format!("{messages:?}");
        let answers: Vec<&Value> = messages
            .iter()
            .filter(|m| m.get("result").is_some())
            .collect();
        assert_eq!(answers.len(), 1, "{shown}");
        assert_eq!(answers[0]["id"], 4, "under the client's own id: {shown}");
        assert!(shown.contains(mine) && !shown.contains(other), "{shown}");
        for progress in messages
            .iter()
            .filter(|m| m["method"] == "notifications/progress")
        {
            assert_eq!(progress["params"]["progressToken"], "p", "{shown}");
        }
    }
}
