//! A reply answers the question it was written for: `POST /api/reply` with
//! `inReplyTo` (the `seq` of the agent's message being answered) is refused
//! with 409 `STALE_QUESTION` once the agent has asked something newer, and
//! queues nothing; a bad `inReplyTo` is a 400; without it, nothing changes.
//! Real hub, real HTTP, real sled; the CLI is the real binary.

use crate::realhub;

use crate::inproc::TestHub;
use reqwest::StatusCode;
use serde_json::{Value, json};

/// A session that asked Q1 (seq 0), got "postgres" from the panel (seq 1),
/// and now asks Q2 (seq 2): `(token, wait id of Q2)`.
async fn moved_on(hub: &TestHub) -> (String, String) {
    let token = hub.init("Migrations").await;
    let wait = hub
        .register(&token, "Migrations", "Which database?", "q1")
        .await;
    hub.ok(
        "/api/reply",
        json!({"token": token, "text": "postgres", "inReplyTo": 0}),
    )
    .await;
    let v = hub.poll(&token, &wait, 2000).await;
    assert_eq!(v["reply"]["text"], "postgres", "{v}");
    hub.ok(
        "/api/wait/ack",
        json!({"token": token, "waitId": wait, "replyId": v["reply"]["id"]}),
    )
    .await;
    let wait = hub
        .register(&token, "Migrations", "Deploy to prod now?", "q2")
        .await;
    (token, wait)
}

/// Nothing is queued and no message was added: the agent's next poll renews.
async fn nothing_queued(hub: &TestHub, token: &str, wait: &str) {
    let s = hub.session(token).await;
    assert_eq!(s["queuedReplies"], 0, "{s}");
    assert_eq!(s["msgCount"], 3, "{s}");
    let v = hub.poll(token, wait, 300).await;
    assert_eq!(v["status"], "renewal", "{v}");
}

#[tokio::test]
async fn a_reply_to_an_older_question_is_refused_as_stale_and_queues_nothing() {
    let hub = TestHub::start().await;
    let (token, wait) = moved_on(&hub).await;

    let (status, v) = hub
        .post(
            "/api/reply",
            json!({"token": token, "text": "yes go ahead", "inReplyTo": 0}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{v}");
    let e = &v["error"];
    assert_eq!(e["code"], "STALE_QUESTION", "{v}");
    assert_eq!(e["currentQuestion"]["seq"], 2, "{v}");
    assert_eq!(
        e["currentQuestion"]["preview"], "Deploy to prod now?",
        "{v}"
    );
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("Deploy to prod now?"),
        "{v}"
    );
    nothing_queued(&hub, &token, &wait).await;

    // Naming the current question delivers it.
    let answered = hub
        .ok(
            "/api/reply",
            json!({"token": token, "text": "not yet", "inReplyTo": 2}),
        )
        .await;
    let v = hub.poll(&token, &wait, 2000).await;
    assert_eq!(
        (v["status"].as_str(), v["reply"]["text"].as_str()),
        (Some("replied"), Some("not yet")),
        "{v}"
    );
    assert_eq!(v["reply"]["id"], answered["replyId"]);
}

#[tokio::test]
async fn without_in_reply_to_a_reply_goes_to_the_current_question_as_before() {
    let hub = TestHub::start().await;
    let (token, wait) = moved_on(&hub).await;
    hub.ok("/api/reply", json!({"token": token, "text": "sure"}))
        .await;
    let v = hub.poll(&token, &wait, 2000).await;
    assert_eq!(v["reply"]["text"], "sure", "{v}");
}

#[tokio::test]
async fn in_reply_to_a_persons_message_or_past_the_end_is_a_bad_request() {
    let hub = TestHub::start().await;
    let (token, wait) = moved_on(&hub).await;
    for (seq, word) in [(json!(1), "not the agent's"), (json!(3), "past the end")] {
        let (status, v) = hub
            .post(
                "/api/reply",
                json!({"token": token, "text": "hm", "inReplyTo": seq}),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{seq}: {v}");
        assert_eq!(v["error"]["code"], "BAD_REQUEST", "{v}");
        let message = v["error"]["message"].as_str().unwrap();
        assert!(message.contains(word), "{seq}: {message}");
    }
    for bad in [json!(-1), json!("2"), json!(1.5)] {
        let (status, v) = hub
            .post(
                "/api/reply",
                json!({"token": token, "text": "hm", "inReplyTo": bad}),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {v}");
    }
    nothing_queued(&hub, &token, &wait).await;
}

#[tokio::test]
async fn the_cli_names_the_question_and_a_stale_one_fails_showing_the_current() {
    let hub = TestHub::start().await;
    let (token, wait) = moved_on(&hub).await;
    let home = hub.home.clone();
    let run = |args: Vec<String>| {
        let home = home.clone();
        tokio::task::spawn_blocking(move || {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            realhub::run_cli(&home, &args)
        })
    };
    let args = |seq: &str| -> Vec<String> {
        ["reply", &token, "yes go ahead", "--in-reply-to", seq]
            .map(str::to_owned)
            .to_vec()
    };
    let out = run(args("0")).await.unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains("Deploy to prod now?") && said.contains("2"),
        "{said}"
    );
    nothing_queued(&hub, &token, &wait).await;

    let out = run(args("2")).await.unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = hub.poll(&token, &wait, 2000).await;
    assert_eq!(v["reply"]["text"], "yes go ahead", "{v}");
}
