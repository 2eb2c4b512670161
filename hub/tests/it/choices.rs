//! Choices: a question's `options` are kept with the agent's message; the person's pick
//! (`POST /api/reply` `choices`, the CLI's `--choose`) reaches the agent as `choices`
//! `[{index, label}]` in option order; a pick the question does not offer is a 400 that
//! queues nothing; automatic replies never pick. And where each agent lives: the machine
//! name the bridge reports is the session's `hostName`, its `machine` the owning key's name
//! when a key owns it. Real hub, real HTTP, real sled; the CLI is the real binary.

use crate::inproc::TestHub;
use crate::realhub::{self, RealHub, call, create_key, free_addr};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

const DATABASES: &str = r#"[{"label":"Postgres","description":"the server we run"},{"label":"SQLite"},{"label":"MySQL"}]"#;

/// Registers "Which database?" offering three options: the wait id.
async fn ask(hub: &TestHub, token: &str, multi: bool, request: &str) -> String {
    let options: Value = serde_json::from_str(DATABASES).unwrap();
    let v = hub
        .ok(
            "/api/wait/register",
            json!({"token": token, "message": "Which database?", "cursorTitle": "Storage",
                   "workspace": "/w", "hostIp": "10.0.0.2", "requestId": request,
                   "options": options, "multiSelect": multi}),
        )
        .await;
    v["waitId"].as_str().unwrap().to_owned()
}

/// Nothing queued and no message added since the question (seq 0).
async fn nothing_queued(hub: &TestHub, token: &str, wait: &str) {
    let s = hub.session(token).await;
    assert_eq!(s["queuedReplies"], 0, "{s}");
    assert_eq!(s["msgCount"], 1, "{s}");
    let v = hub.poll(token, wait, 200).await;
    assert_eq!(v["status"], "renewal", "{v}");
}

#[tokio::test]
async fn a_pick_reaches_the_agent_as_choices_and_the_history_keeps_both_sides() {
    let hub = TestHub::start().await;
    let token = hub.init("Storage").await;
    let wait = ask(&hub, &token, false, "q1").await;

    let s = hub.session(&token).await;
    let question = &s["messages"][0];
    assert_eq!(question["options"][0]["label"], "Postgres", "{s}");
    assert_eq!(
        question["options"][0]["description"], "the server we run",
        "{s}"
    );
    assert_eq!(question["options"][1], json!({"label": "SQLite"}), "{s}");
    assert!(question.get("multiSelect").is_none(), "{s}");

    hub.ok(
        "/api/reply",
        json!({"token": token, "text": "", "choices": [1], "inReplyTo": 0}),
    )
    .await;
    let v = hub.poll(&token, &wait, 2000).await;
    assert_eq!(v["status"], "replied", "{v}");
    assert_eq!(
        v["reply"]["choices"],
        json!([{"index": 1, "label": "SQLite"}]),
        "{v}"
    );
    assert_eq!(v["reply"]["text"], "", "{v}");
    let s = hub.session(&token).await;
    assert_eq!(
        s["messages"][1]["choices"],
        json!([{"index": 1, "label": "SQLite"}]),
        "{s}"
    );
}

#[tokio::test]
async fn a_multi_select_pick_comes_in_option_order_with_the_persons_words() {
    let hub = TestHub::start().await;
    let token = hub.init("Storage").await;
    let wait = ask(&hub, &token, true, "q1").await;
    assert_eq!(
        hub.session(&token).await["messages"][0]["multiSelect"],
        true
    );
    hub.ok(
        "/api/reply",
        json!({"token": token, "text": "both, for now", "choices": [2, 0]}),
    )
    .await;
    let v = hub.poll(&token, &wait, 2000).await;
    assert_eq!(
        v["reply"]["choices"],
        json!([{"index": 0, "label": "Postgres"}, {"index": 2, "label": "MySQL"}]),
        "{v}"
    );
    assert_eq!(v["reply"]["text"], "both, for now", "{v}");
}

#[tokio::test]
async fn a_pick_the_question_does_not_offer_is_refused_and_queues_nothing() {
    let hub = TestHub::start().await;
    let token = hub.init("Storage").await;
    let wait = ask(&hub, &token, false, "q1").await;
    for (choices, says) in [
        (json!([3]), "not an option"),
        (json!([0, 1]), "one choice"),
        (json!([-1]), ""),
        (json!(["0"]), ""),
    ] {
        let (status, v) = hub
            .post("/api/reply", json!({"token": token, "choices": choices}))
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{choices}: {v}");
        assert!(
            v["error"]["message"].as_str().unwrap().contains(says),
            "{choices}: {v}"
        );
    }
    let multi = hub.init("Other").await;
    let other_wait = ask(&hub, &multi, true, "q2").await;
    let (status, v) = hub
        .post("/api/reply", json!({"token": multi, "choices": [1, 1]}))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("twice"));
    nothing_queued(&hub, &multi, &other_wait).await;
    nothing_queued(&hub, &token, &wait).await;

    // A question without options takes no pick.
    let plain = hub.init("Plain").await;
    let plain_wait = hub
        .register(&plain, "Plain", "Done. Anything else?", "p1")
        .await;
    let (status, v) = hub
        .post("/api/reply", json!({"token": plain, "choices": [0]}))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("offers no options"),
        "{v}"
    );
    nothing_queued(&hub, &plain, &plain_wait).await;
}

#[tokio::test]
async fn offered_options_outside_the_rule_are_refused_at_register() {
    let hub = TestHub::start().await;
    let token = hub.init("Storage").await;
    let eleven: Vec<Value> = (0..11).map(|i| json!({"label": format!("o{i}")})).collect();
    let long = "x".repeat(101);
    for (options, multi) in [
        (json!(eleven), false),
        (json!([{"label": long}]), false),
        (json!([{"label": "a"}, {"label": "a"}]), false),
        (json!([{"label": "  "}]), false),
        (json!([]), true),
    ] {
        let (status, v) = hub
            .post(
                "/api/wait/register",
                json!({"token": token, "message": "Which?", "cursorTitle": "Storage",
                       "workspace": "/w", "hostIp": "10.0.0.2", "requestId": "bad",
                       "options": options, "multiSelect": multi}),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{options}: {v}");
    }
    let s = hub.session(&token).await;
    assert_eq!(s["msgCount"], 0, "{s}");
    assert_ne!(s["status"], "waiting", "{s}");
}

#[tokio::test]
async fn an_automatic_reply_never_picks() {
    let hub = TestHub::start().await;
    let token = hub.init("Storage").await;
    hub.ok(
        "/api/session/config",
        json!({"token": token, "timedReplyEnabled": true, "timedReplyIntervalMs": 100}),
    )
    .await;
    let wait = ask(&hub, &token, false, "q1").await;
    let v = hub.poll(&token, &wait, 5000).await;
    assert_eq!(v["status"], "replied", "{v}");
    assert_eq!(v["reply"]["auto"], true, "{v}");
    assert!(v["reply"].get("choices").is_none(), "{v}");
    let s = hub.session(&token).await;
    assert!(s["messages"][1].get("choices").is_none(), "{s}");
}

#[tokio::test]
async fn the_cli_chooses_by_the_numbers_people_see() {
    let hub = TestHub::start().await;
    let token = hub.init("Storage").await;
    let wait = ask(&hub, &token, true, "q1").await;
    let home = hub.home.clone();
    let cli = token.clone();
    let out = tokio::task::spawn_blocking(move || {
        realhub::run_cli(&home, &["reply", &cli, "--choose", "1,3"])
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = hub.poll(&token, &wait, 2000).await;
    assert_eq!(
        v["reply"]["choices"],
        json!([{"index": 0, "label": "Postgres"}, {"index": 2, "label": "MySQL"}]),
        "{v}"
    );
    hub.ok(
        "/api/wait/ack",
        json!({"token": token, "waitId": wait, "replyId": v["reply"]["id"]}),
    )
    .await;
    let before = hub.session(&token).await["msgCount"].clone();
    // A number past the options fails and sends nothing; so does 0.
    let home = hub.home.clone();
    let cli = token.clone();
    let bad = tokio::task::spawn_blocking(move || {
        let past = realhub::run_cli(&home, &["reply", &cli, "--choose", "4"]);
        let zero = realhub::run_cli(&home, &["reply", &cli, "--choose", "0"]);
        (past, zero)
    })
    .await
    .unwrap();
    for (out, says) in [(bad.0, "offers 3 options (1 to 3)"), (bad.1, "from 1")] {
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
    }
    // Nothing was sent.
    let s = hub.session(&token).await;
    assert_eq!(
        (&s["queuedReplies"], &s["msgCount"]),
        (&json!(0), &before),
        "{s}"
    );
}

#[tokio::test]
async fn where_an_agent_lives_is_its_keys_name_else_its_host_name_else_its_address() {
    let dir = tempfile::tempdir().unwrap();
    let hub = RealHub::start(&dir.path().join("home"), free_addr()).await;
    let key = create_key(&hub.home, "buildbox");
    let secret = hub.api.secret.clone();
    let init = |bearer: String, body: Value| {
        let hub = &hub;
        async move {
            let (status, v) = call(hub, Method::POST, "/api/init", &bearer, Some(body)).await;
            assert_eq!(status, 200, "{v}");
            v["token"].as_str().unwrap().to_owned()
        }
    };
    let chat = |title: &str, host_name: Option<&str>| {
        let mut b =
            json!({"cursorTitle": title, "workspace": "/home/dev/api", "hostIp": "10.0.0.7"});
        if let Some(n) = host_name {
            b["hostName"] = json!(n);
        }
        b
    };
    let named = init(secret.clone(), chat("named", Some(" laptop\u{7}-7 "))).await;
    let unnamed = init(secret.clone(), chat("unnamed", None)).await;
    let keyed = init(key.clone(), chat("keyed", Some("ci-runner-3"))).await;

    let session = |token: String| {
        let hub = &hub;
        let secret = secret.clone();
        async move {
            let path = format!("/api/sessions/{token}");
            call(hub, Method::GET, &path, &secret, None).await.1
        }
    };
    let s = session(named.clone()).await;
    assert_eq!(
        (s["hostName"].as_str(), s["machine"].as_str()),
        (Some("laptop-7"), Some("laptop-7")),
        "{s}"
    );
    let s = session(unnamed).await;
    assert_eq!(
        (s["hostName"].as_str(), s["machine"].as_str()),
        (Some(""), Some("10.0.0.7")),
        "{s}"
    );
    let s = session(keyed).await;
    assert_eq!(s["hostName"], "ci-runner-3", "{s}");
    assert_eq!(s["machine"], "buildbox", "{s}");

    // The name is data of the binding, not its key: another name finds the same session.
    let again = init(secret.clone(), chat("named", Some("laptop-7.lan"))).await;
    assert_eq!(again, named);
    let s = session(named).await;
    assert_eq!(s["hostName"], "laptop-7.lan", "{s}");
    // The CLI's list says it too: machine and folder beside each session.
    let home = hub.home.clone();
    let out = tokio::task::spawn_blocking(move || realhub::run_cli(&home, &["sessions"]))
        .await
        .unwrap();
    let listed = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        listed.lines().next().unwrap().contains("MACHINE"),
        "{listed}"
    );
    let keyed_line = listed.lines().find(|l| l.contains("keyed")).unwrap();
    assert!(
        keyed_line.contains("buildbox") && keyed_line.contains(" api "),
        "{listed}"
    );
    let (_, list) = call(&hub, Method::GET, "/api/sessions", &secret, None).await;
    assert!(
        list["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["machine"].is_string()),
        "{list}"
    );
}
