//! Owners, against the real `holdline-hub` binary over real HTTP with two agent
//! keys and the secret: every session belongs to the credential that made it;
//! a lookup by fingerprint, plan label or thread id never reaches another
//! owner's session (it makes the caller its own), and another owner's token
//! answers exactly like an unknown one on every agent route, `/mcp` included.
//! The person hands a session to another key from the panel.

use std::time::Duration;

use crate::realhub::{RealHub, call, create_key, free_addr, run_cli};
use reqwest::Method;
use serde_json::{Value, json};

async fn post(hub: &RealHub, path: &str, bearer: &str, body: Value) -> (u16, Value) {
    call(hub, Method::POST, path, bearer, Some(body)).await
}

/// One chat's fingerprint (title, workspace, host): the same body from both keys.
fn chat_a() -> Value {
    json!({"cursorTitle": "chatA", "workspace": "/w/a", "hostIp": "10.0.0.1"})
}

fn with(mut body: Value, extra: Value) -> Value {
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    body
}

async fn init(hub: &RealHub, bearer: &str, body: Value) -> (String, bool) {
    let (s, v) = post(hub, "/api/init", bearer, body).await;
    assert_eq!(s, 200, "init: {v}");
    (
        v["token"].as_str().unwrap().to_owned(),
        v["created"].as_bool().unwrap(),
    )
}

/// Registers a wait on `token` with `message`: the waitId.
/// A poll of `wait` with `bearer`, held up to 20 s in a task of its own: its
/// status and answer.
fn hold_poll(
    hub: &RealHub,
    bearer: &str,
    token: &str,
    wait: &str,
) -> tokio::task::JoinHandle<(u16, Value)> {
    let (addr, bearer, token, wait) = (
        hub.addr,
        bearer.to_owned(),
        token.to_owned(),
        wait.to_owned(),
    );
    tokio::spawn(async move {
        let res = reqwest::Client::new()
            .post(format!("http://{addr}/api/wait/poll"))
            .bearer_auth(bearer)
            .json(&json!({"token": token, "waitId": wait, "timeoutMs": 20000}))
            .send()
            .await
            .unwrap();
        (res.status().as_u16(), res.json::<Value>().await.unwrap())
    })
}

async fn register(hub: &RealHub, bearer: &str, token: &str, fp: &Value, message: &str) -> String {
    let body = with(
        fp.clone(),
        json!({"token": token, "message": message, "requestId": format!("r-{message}")}),
    );
    let (s, v) = post(hub, "/api/wait/register", bearer, body).await;
    assert_eq!(s, 200, "register: {v}");
    v["waitId"].as_str().unwrap().to_owned()
}

async fn start() -> (tempfile::TempDir, RealHub, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let hub = RealHub::start(&dir.path().join("home"), free_addr()).await;
    let a = create_key(&hub.home, "alpha");
    let b = create_key(&hub.home, "beta");
    (dir, hub, a, b)
}

/// What the agent routes answer for `token` (status and error code), for
/// comparing another owner's token with an unknown one.
async fn agent_answers(
    hub: &RealHub,
    bearer: &str,
    token: &str,
    wait_id: &str,
) -> Vec<(u16, Value)> {
    let fp = chat_a();
    let mut out = vec![];
    for (path, body) in [
        ("/api/select", with(fp.clone(), json!({"token": token}))),
        (
            "/api/wait/register",
            with(
                fp.clone(),
                json!({"token": token, "message": "m", "requestId": "x"}),
            ),
        ),
        (
            "/api/wait/poll",
            json!({"token": token, "waitId": wait_id, "timeoutMs": 0}),
        ),
        (
            "/api/wait/ack",
            json!({"token": token, "waitId": wait_id, "replyId": "r_x"}),
        ),
        (
            "/api/wait/cancel",
            json!({"token": token, "waitId": wait_id}),
        ),
        (
            "/api/merge",
            with(fp.clone(), json!({"fromToken": token, "toToken": token})),
        ),
    ] {
        let (s, v) = post(hub, path, bearer, body).await;
        out.push((s, v["error"]["code"].clone()));
    }
    let (s, v) = call(
        hub,
        Method::GET,
        &format!("/api/sessions/{token}"),
        bearer,
        None,
    )
    .await;
    out.push((s, v["error"]["code"].clone()));
    out
}

#[tokio::test]
async fn a_key_with_another_keys_fingerprint_gets_a_session_of_its_own() {
    let (_dir, hub, a, b) = start().await;
    let (sa, created) = init(&hub, &a, chat_a()).await;
    assert!(created);
    register(&hub, &a, &sa, &chat_a(), "A-PRIVATE-MESSAGE").await;
    let (s, _) = call(&hub, Method::GET, &format!("/api/sessions/{sa}"), &b, None).await;
    assert_eq!(s, 404);

    let (sb, created) = init(&hub, &b, chat_a()).await;
    assert_ne!(sb, sa, "B was handed A's session");
    assert!(created);
    let (s, _) = call(&hub, Method::GET, &format!("/api/sessions/{sa}"), &b, None).await;
    assert_eq!(s, 404, "B reads A's history");
    let (s, v) = call(&hub, Method::GET, &format!("/api/sessions/{sa}"), &a, None).await;
    assert_eq!(s, 200, "A lost its own session: {v}");
    // Both keep their own session on the next init, in either order.
    assert_eq!(init(&hub, &a, chat_a()).await, (sa.clone(), false));
    assert_eq!(init(&hub, &b, chat_a()).await, (sb, false));
    assert_eq!(init(&hub, &a, chat_a()).await, (sa, false));
}

#[tokio::test]
async fn a_key_cannot_take_the_secrets_session_by_fingerprint() {
    let (_dir, hub, _a, b) = start().await;
    let secret = hub.api.secret.clone();
    let (mine, _) = init(&hub, &secret, chat_a()).await;
    register(&hub, &secret, &mine, &chat_a(), "the person's own agent").await;
    let (theirs, created) = init(&hub, &b, chat_a()).await;
    assert_ne!(theirs, mine);
    assert!(created);
    // The secret's agent keeps its session; the key reaches none of it.
    assert_eq!(init(&hub, &secret, chat_a()).await, (mine.clone(), false));
    let unknown = "ct_00000000000000000000000000000000";
    let wait = "w_00000000000000000000000000000000";
    assert_eq!(
        agent_answers(&hub, &b, &mine, wait).await,
        agent_answers(&hub, &b, unknown, wait).await,
        "the secret's token answers a key unlike an unknown one"
    );
}

#[tokio::test]
async fn a_plan_label_or_thread_id_never_reaches_another_owners_session() {
    let (_dir, hub, a, b) = start().await;
    for extra in [json!({"planLabel": "release"}), json!({"threadId": "th-1"})] {
        let fp_a = with(chat_a(), extra.clone());
        let (sa, _) = init(&hub, &a, fp_a.clone()).await;
        let fp_b = with(
            json!({"cursorTitle": format!("B's chat {extra}"), "workspace": "/w/b", "hostIp": "10.0.0.2"}),
            extra.clone(),
        );
        let (sb, created) = init(&hub, &b, fp_b).await;
        assert_ne!(sb, sa, "{extra}: B found A's session");
        assert!(created);
        // A is not rejected on its own session.
        register(&hub, &a, &sa, &chat_a(), &format!("still mine {extra}")).await;
        assert_eq!(init(&hub, &a, fp_a).await, (sa, false));
    }
}

#[tokio::test]
async fn another_owners_token_answers_like_an_unknown_one_and_its_reply_stays_with_its_owner() {
    let (_dir, hub, a, b) = start().await;
    let (sa, _) = init(&hub, &a, chat_a()).await;
    let wait_a = register(&hub, &a, &sa, &chat_a(), "deploy?").await;
    let unknown = "ct_00000000000000000000000000000000";
    let unknown_wait = "w_00000000000000000000000000000000";
    let theirs = agent_answers(&hub, &b, &sa, &wait_a).await;
    assert_eq!(theirs, agent_answers(&hub, &b, unknown, unknown_wait).await);
    // Every route but merge (which refuses a merge into itself first) says 404.
    let merge = 5;
    assert!(
        theirs
            .iter()
            .enumerate()
            .all(|(i, (s, _))| i == merge || *s == 404),
        "{theirs:?}"
    );

    // A's wait is still open and the person's reply reaches A.
    let (s, v) = hub
        .api
        .post(
            "/api/reply",
            &json!({"token": sa, "text": "yes deploy to prod"}),
        )
        .await
        .unwrap();
    assert_eq!(s, 200, "{v}");
    let reply_id = v["replyId"].as_str().unwrap().to_owned();
    for bearer in [&b] {
        let (s, _) = post(
            &hub,
            "/api/wait/poll",
            bearer,
            json!({"token": sa, "waitId": wait_a, "timeoutMs": 0}),
        )
        .await;
        assert_eq!(s, 404);
        let (s, _) = post(
            &hub,
            "/api/wait/ack",
            bearer,
            json!({"token": sa, "waitId": wait_a, "replyId": reply_id}),
        )
        .await;
        assert_eq!(s, 404);
    }
    let (s, v) = post(
        &hub,
        "/api/wait/poll",
        &a,
        json!({"token": sa, "waitId": wait_a, "timeoutMs": 0}),
    )
    .await;
    assert_eq!((s, v["status"].as_str()), (200, Some("replied")), "{v}");
    assert_eq!(v["reply"]["text"], "yes deploy to prod");
}

#[tokio::test]
async fn a_held_poll_keeps_its_reply_when_another_key_registers_with_its_fingerprint() {
    let (_dir, hub, a, b) = start().await;
    let (sa, _) = init(&hub, &a, chat_a()).await;
    let wait_a = register(&hub, &a, &sa, &chat_a(), "A-PRIVATE-MESSAGE").await;
    let held = hold_poll(&hub, &a, &sa, &wait_a);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (sb, _) = init(&hub, &b, chat_a()).await;
    let wait_b = register(&hub, &b, &sb, &chat_a(), "B waits too").await;
    // B registering on A's token is refused like an unknown token.
    let (s, _) = post(
        &hub,
        "/api/wait/register",
        &b,
        with(
            chat_a(),
            json!({"token": sa, "message": "mine now", "requestId": "steal"}),
        ),
    )
    .await;
    assert_eq!(s, 404);
    hub.api
        .ok(
            "/api/reply",
            &json!({"token": sa, "text": "yes deploy to prod"}),
        )
        .await;
    let (_, got) = held.await.unwrap();
    assert_eq!(got["status"], "replied", "{got}");
    assert_eq!(got["reply"]["text"], "yes deploy to prod");
    let (_, v) = post(
        &hub,
        "/api/wait/poll",
        &b,
        json!({"token": sb, "waitId": wait_b, "timeoutMs": 0}),
    )
    .await;
    assert_eq!(v["status"], "renewal", "B heard something: {v}");
}

#[tokio::test]
async fn a_keys_binding_host_is_the_address_the_hub_saw() {
    let (_dir, hub, a, _b) = start().await;
    let (sa, _) = init(&hub, &a, chat_a()).await;
    let s = hub.api.session(&sa).await;
    assert_eq!(s["hostIp"], "127.0.0.1", "{s}");
    assert_eq!(s["bindingKey"], "/w/a::chatA@127.0.0.1");
    // The secret's own bridges report their host.
    let (mine, _) = init(&hub, &hub.api.secret.clone(), chat_a()).await;
    assert_eq!(hub.api.session(&mine).await["hostIp"], "10.0.0.1");
}

#[tokio::test]
async fn the_person_hands_a_session_to_another_key() {
    let (_dir, hub, a, b) = start().await;
    let (sa, _) = init(&hub, &a, chat_a()).await;
    let wait_a = register(&hub, &a, &sa, &chat_a(), "over to you").await;
    assert_eq!(
        hub.api.session(&sa).await["owner"],
        json!({"key": "alpha", "revoked": false})
    );

    // An agent key may not hand sessions over.
    let (s, _) = post(
        &hub,
        &format!("/api/sessions/{sa}/owner"),
        &b,
        json!({"key": "beta"}),
    )
    .await;
    assert_eq!(s, 403);
    let (s, v) = hub
        .api
        .post(
            &format!("/api/sessions/{sa}/owner"),
            &json!({"key": "nobody"}),
        )
        .await
        .unwrap();
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (400, Some("BAD_REQUEST")),
        "{v}"
    );
    let (s, v) = hub
        .api
        .post(
            &format!("/api/sessions/{sa}/owner"),
            &json!({"key": "beta"}),
        )
        .await
        .unwrap();
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["owner"], json!({"key": "beta", "revoked": false}));

    // A's wait ended as handed over; B finds the session by its fingerprint.
    let (s, v) = post(
        &hub,
        "/api/wait/poll",
        &a,
        json!({"token": sa, "waitId": wait_a, "timeoutMs": 0}),
    )
    .await;
    assert_eq!((s, v["reason"].as_str()), (200, Some("handed_over")), "{v}");
    assert_eq!(init(&hub, &b, chat_a()).await, (sa.clone(), false));
    register(&hub, &b, &sa, &chat_a(), "B carries on").await;
    // Back to the secret.
    let (s, v) = hub
        .api
        .post(&format!("/api/sessions/{sa}/owner"), &json!({"key": null}))
        .await
        .unwrap();
    assert_eq!(
        (s, v["owner"].clone()),
        (200, json!({"secret": true})),
        "{v}"
    );
}

#[tokio::test]
async fn a_revoked_keys_sessions_say_so() {
    let (_dir, hub, a, _b) = start().await;
    let (sa, _) = init(&hub, &a, chat_a()).await;
    register(&hub, &a, &sa, &chat_a(), "waiting").await;
    let out = run_cli(&hub.home, &["key", "revoke", "alpha"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = hub.api.session(&sa).await;
    assert_eq!(s["owner"], json!({"key": "alpha", "revoked": true}), "{s}");
    assert_eq!(s["status"], "holding");
    let (_, list) = hub.api.get("/api/sessions").await.unwrap();
    assert_eq!(list["sessions"][0]["owner"]["revoked"], true, "{list}");
}

/// One JSON-RPC message to `/mcp` with `bearer`: the answer's JSON (from a
/// JSON body or the first `data:` line of an event stream) and the session id.
async fn mcp(
    hub: &RealHub,
    bearer: &str,
    session: Option<&str>,
    msg: Value,
) -> (Value, Option<String>) {
    let mut req = reqwest::Client::new()
        .post(format!("http://{}/mcp", hub.addr))
        .bearer_auth(bearer)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .json(&msg);
    if let Some(id) = session {
        req = req.header("mcp-session-id", id);
    }
    let res = req.send().await.unwrap();
    let id = res
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_owned());
    let text = res.text().await.unwrap();
    let json = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .find(|d| d.starts_with('{'))
        .map(|d| serde_json::from_str(d).unwrap())
        .unwrap_or_else(|| serde_json::from_str(&text).unwrap_or(Value::Null));
    (json, id)
}

/// `init_conversation` over `/mcp` with `bearer`: the token it answered.
async fn mcp_init_conversation(
    hub: &RealHub,
    bearer: &str,
    title: &str,
    workspace: &str,
) -> String {
    let (_, id) = mcp(
        hub,
        bearer,
        None,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "owners-test", "version": "1"}}}),
    )
    .await;
    let id = id.expect("an MCP session id");
    mcp(
        hub,
        bearer,
        Some(&id),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    let (v, _) = mcp(
        hub,
        bearer,
        Some(&id),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "init_conversation",
            "arguments": {"cursorTitle": title, "workspace": workspace}}}),
    )
    .await;
    v["result"]["structuredContent"]["token"]
        .as_str()
        .unwrap_or_else(|| panic!("no token in {v}"))
        .to_owned()
}

#[tokio::test]
async fn over_mcp_a_key_cannot_reach_a_local_agents_session() {
    let (_dir, hub, _a, b) = start().await;
    // The person's own agent on the hub's machine: 127.0.0.1, like every
    // `/mcp` caller on this machine.
    let local = json!({"cursorTitle": "chatA", "workspace": "/w/a", "hostIp": "127.0.0.1"});
    let (mine, _) = init(&hub, &hub.api.secret.clone(), local).await;
    let theirs = mcp_init_conversation(&hub, &b, "chatA", "/w/a").await;
    assert_ne!(
        theirs, mine,
        "init_conversation over /mcp returned the local agent's token"
    );
    // The key's own session is found again, and the secret's stays its own.
    assert_eq!(
        mcp_init_conversation(&hub, &b, "chatA", "/w/a").await,
        theirs
    );
    assert_eq!(
        mcp_init_conversation(&hub, &hub.api.secret.clone(), "chatA", "/w/a").await,
        mine
    );
}

/// Merge checks the owner before anything else: another owner's token, open,
/// archived or merged, answers exactly like an unknown one (404), from and to alike.
#[tokio::test]
async fn merge_answers_another_owners_closed_token_like_an_unknown_one() {
    let (_dir, hub, a, b) = start().await;
    let (open, _) = init(&hub, &a, chat_a()).await;
    let (archived, _) = init(
        &hub,
        &a,
        json!({"cursorTitle": "old", "workspace": "/w/a", "hostIp": "10.0.0.1"}),
    )
    .await;
    hub.api
        .ok(&format!("/api/sessions/{archived}/archive"), &json!({}))
        .await;
    let (mine, _) = init(&hub, &b, chat_a()).await;
    let unknown = "ct_00000000000000000000000000000000";
    let merge = |from: &str, to: &str| with(chat_a(), json!({"fromToken": from, "toToken": to}));
    let answer = |from: String, to: String| {
        let (hub, b, body) = (&hub, &b, merge(&from, &to));
        async move {
            let (s, v) = post(hub, "/api/merge", b, body).await;
            (s, v["error"]["code"].clone())
        }
    };
    let not_found = (404, json!("SESSION_NOT_FOUND"));
    for theirs in [&open, &archived] {
        assert_eq!(
            answer(theirs.clone(), mine.clone()).await,
            not_found,
            "from {theirs}"
        );
        assert_eq!(
            answer(mine.clone(), theirs.clone()).await,
            not_found,
            "into {theirs}"
        );
    }
    assert_eq!(answer(unknown.into(), mine.clone()).await, not_found);
    // Nothing moved: A's archived session is still A's and archived.
    let s = hub.api.session(&archived).await;
    assert_eq!(s["status"], "archived", "{s}");
}

/// A wait a hand-over ends is told so: its held poll ends `gone`, reason
/// `handed_over` (and a late poll with that wait's id says the same), never
/// `SESSION_NOT_FOUND`; the old owner reaches nothing else of the session.
#[tokio::test]
async fn the_old_owners_held_poll_ends_handed_over() {
    let (_dir, hub, a, _b) = start().await;
    let (sa, _) = init(&hub, &a, chat_a()).await;
    let wait_a = register(&hub, &a, &sa, &chat_a(), "over to you").await;
    let held = hold_poll(&hub, &a, &sa, &wait_a);
    tokio::time::sleep(Duration::from_millis(300)).await;
    hub.api
        .ok(
            &format!("/api/sessions/{sa}/owner"),
            &json!({"key": "beta"}),
        )
        .await;
    let (s, v) = tokio::time::timeout(Duration::from_secs(10), held)
        .await
        .expect("the held poll ends at the hand-over")
        .unwrap();
    assert_eq!(
        (s, v["status"].as_str(), v["reason"].as_str()),
        (200, Some("gone"), Some("handed_over")),
        "{v}"
    );
    let (s, v) = post(
        &hub,
        "/api/wait/poll",
        &a,
        json!({"token": sa, "waitId": wait_a, "timeoutMs": 0}),
    )
    .await;
    assert_eq!((s, v["reason"].as_str()), (200, Some("handed_over")), "{v}");
    // Any other wait id, or any other route, is still an unknown token to A.
    let (s, _) = post(
        &hub,
        "/api/wait/poll",
        &a,
        json!({"token": sa, "waitId": "w_00000000000000000000000000000000", "timeoutMs": 0}),
    )
    .await;
    assert_eq!(s, 404);
    let (s, _) = call(&hub, Method::GET, &format!("/api/sessions/{sa}"), &a, None).await;
    assert_eq!(s, 404);
}

/// Handing a session to a key that already has an open session bound to the
/// same chat is refused (409 BINDING_TAKEN, naming the session in the way), and
/// nothing changes: the key's agent keeps its own session, the old owner its wait.
#[tokio::test]
async fn a_hand_over_to_a_key_with_its_own_session_for_that_chat_is_refused() {
    let (_dir, hub, a, b) = start().await;
    let (sa, _) = init(&hub, &a, chat_a()).await;
    let wait_a = register(&hub, &a, &sa, &chat_a(), "A asks").await;
    let (sb, _) = init(&hub, &b, chat_a()).await;
    assert_ne!(sa, sb);
    let (s, v) = hub
        .api
        .post(
            &format!("/api/sessions/{sa}/owner"),
            &json!({"key": "beta"}),
        )
        .await
        .unwrap();
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (409, Some("BINDING_TAKEN")),
        "{v}"
    );
    let said = v["error"]["message"].as_str().unwrap();
    assert!(said.contains(&sb) && said.contains("beta"), "{said}");
    assert_eq!(
        init(&hub, &b, chat_a()).await,
        (sb.clone(), false),
        "B's binding moved"
    );
    let s = hub.api.session(&sa).await;
    assert_eq!(s["owner"], json!({"key": "alpha", "revoked": false}), "{s}");
    assert_eq!(s["status"], "waiting", "{s}");
    let (_, v) = post(
        &hub,
        "/api/wait/poll",
        &a,
        json!({"token": sa, "waitId": wait_a, "timeoutMs": 0}),
    )
    .await;
    assert_eq!(v["status"], "renewal", "A's wait is still open: {v}");

    // Once B's own session is archived, the hand-over goes through.
    hub.api
        .ok(&format!("/api/sessions/{sb}/archive"), &json!({}))
        .await;
    let v = hub
        .api
        .ok(
            &format!("/api/sessions/{sa}/owner"),
            &json!({"key": "beta"}),
        )
        .await;
    assert_eq!(v["owner"], json!({"key": "beta", "revoked": false}));
    assert_eq!(init(&hub, &b, chat_a()).await, (sa.clone(), false));
}
