//! Integration tests of the hub's HTTP API: a real hub (`holdline_hub::run`)
//! on an ephemeral port with a temp home, spoken to over real HTTP; and the
//! real binary for restarts, SIGKILL and logs.

use crate::realhub;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::inproc::{Options, TestHub};
use realhub::{RealHub, free_addr};
use reqwest::StatusCode;
use serde_json::{Value, json};

fn error_code(v: &Value) -> &str {
    v["error"]["code"].as_str().unwrap_or("")
}

// ---- sessions and bindings ---------------------------------------------

#[tokio::test]
async fn init_reuses_the_chats_session_and_new_plan_makes_another() {
    let hub = TestHub::start().await;
    let a = hub
        .ok(
            "/api/init",
            json!({"cursorTitle": "Fix CI", "workspace": "/w", "hostIp": "10.0.0.2"}),
        )
        .await;
    assert_eq!(a["created"], true);
    assert_eq!(a["status"], "holding");
    assert_eq!(a["bindingKey"], "/w::Fix CI@10.0.0.2");
    let token = a["token"].as_str().unwrap();
    assert!(token.starts_with("ct_") && token.len() == 35);

    let again = hub
        .ok(
            "/api/init",
            json!({"cursorTitle": "Fix CI", "workspace": "/w", "hostIp": "10.0.0.2"}),
        )
        .await;
    assert_eq!(again["token"], token);
    assert_eq!(again["created"], false);

    let fresh = hub
        .ok(
            "/api/init",
            json!({"cursorTitle": "Fix CI", "workspace": "/w", "hostIp": "10.0.0.2", "newPlan": true}),
        )
        .await;
    assert_ne!(fresh["token"], token);
    // The chat's binding now points at the new plan's session.
    let third = hub
        .ok(
            "/api/init",
            json!({"cursorTitle": "Fix CI", "workspace": "/w", "hostIp": "10.0.0.2"}),
        )
        .await;
    assert_eq!(third["token"], fresh["token"]);
}

#[tokio::test]
async fn plan_label_and_thread_id_find_the_session_again_under_a_new_title() {
    let hub = TestHub::start().await;
    let a = hub
        .ok(
            "/api/init",
            json!({"cursorTitle": "A", "workspace": "/w", "hostIp": "h", "planLabel": "login-refactor", "threadId": "th-1"}),
        )
        .await;
    let by_plan = hub
        .ok(
            "/api/init",
            json!({"cursorTitle": "B", "workspace": "/w", "hostIp": "h", "planLabel": "login-refactor"}),
        )
        .await;
    assert_eq!(by_plan["token"], a["token"]);
    assert_eq!(by_plan["bindingKey"], "/w::B@h");
    let by_thread = hub
        .ok(
            "/api/init",
            json!({"cursorTitle": "C", "workspace": "/w", "hostIp": "h", "threadId": "th-1"}),
        )
        .await;
    assert_eq!(by_thread["token"], a["token"]);
    let s = hub.session(a["token"].as_str().unwrap()).await;
    assert_eq!(s["planName"], "login-refactor");
    assert_eq!(s["threadId"], "th-1");
    assert_eq!(s["title"], "C");
}

#[tokio::test]
async fn select_is_strict() {
    let hub = TestHub::start().await;
    let token = hub.init("Fix CI").await;
    let ok = hub
        .ok(
            "/api/select",
            json!({"token": token, "cursorTitle": "Fix CI", "workspace": "/w", "hostIp": "10.0.0.2"}),
        )
        .await;
    assert_eq!(ok, json!({"token": token, "status": "holding"}));
    for (title, ws, host) in [
        ("Other", "/w", "10.0.0.2"),
        ("Fix CI", "/x", "10.0.0.2"),
        ("Fix CI", "/w", "10.0.0.3"),
    ] {
        let (status, v) = hub
            .post(
                "/api/select",
                json!({"token": token, "cursorTitle": title, "workspace": ws, "hostIp": host}),
            )
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        assert_eq!(error_code(&v), "BINDING_REJECTED");
    }
    let (status, v) = hub
        .post(
            "/api/select",
            json!({"token": "ct_00000000000000000000000000000000", "cursorTitle": "x", "workspace": "/w", "hostIp": "h"}),
        )
        .await;
    assert_eq!(
        (status, error_code(&v)),
        (StatusCode::NOT_FOUND, "SESSION_NOT_FOUND")
    );
}

// ---- the wait lifecycle -------------------------------------------------

#[tokio::test]
async fn wait_reply_poll_ack_is_delivered_once() {
    let hub = TestHub::start().await;
    let token = hub.init("Fix CI").await;
    let wait = hub
        .register(&token, "Fix CI", "Tests pass. Next?", "q1")
        .await;
    assert_eq!(hub.session(&token).await["status"], "waiting");

    // A poll held open is answered by the reply as soon as it is sent.
    let held = {
        let (url, secret, token, wait) = (
            hub.url.clone(),
            hub.secret.clone(),
            token.clone(),
            wait.clone(),
        );
        tokio::spawn(async move {
            reqwest::Client::new()
                .post(format!("{url}/api/wait/poll"))
                .bearer_auth(secret)
                .json(&json!({"token": token, "waitId": wait, "timeoutMs": 20000}))
                .send()
                .await
                .unwrap()
                .json::<Value>()
                .await
                .unwrap()
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    let r = hub
        .ok("/api/reply", json!({"token": token, "text": "Ship it"}))
        .await;
    assert_eq!(r["queued"], false);
    let got = tokio::time::timeout(Duration::from_secs(5), held)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got["status"], "replied");
    assert_eq!(got["reply"]["text"], "Ship it");
    assert_eq!(got["reply"]["id"], r["replyId"]);
    assert_eq!(got["reply"]["auto"], false);
    assert_eq!(hub.session(&token).await["status"], "replied");

    // Until acked, the same reply is answered again.
    let again = hub.poll(&token, &wait, 0).await;
    assert_eq!(again["reply"]["id"], r["replyId"]);

    hub.ok(
        "/api/wait/ack",
        json!({"token": token, "waitId": wait, "replyId": r["replyId"]}),
    )
    .await;
    // A retried ack is fine; the wait is finished.
    hub.ok(
        "/api/wait/ack",
        json!({"token": token, "waitId": wait, "replyId": r["replyId"]}),
    )
    .await;
    assert_eq!(
        hub.poll(&token, &wait, 0).await,
        json!({"status": "gone", "reason": "finished"})
    );

    let s = hub.session(&token).await;
    assert_eq!(s["status"], "holding");
    assert_eq!(s["msgCount"], 2);
    assert_eq!(s["queuedReplies"], 0);
    let msgs = s["messages"].as_array().unwrap();
    assert_eq!(
        (msgs[0]["role"].as_str(), msgs[0]["content"].as_str()),
        (Some("assistant"), Some("Tests pass. Next?"))
    );
    assert_eq!(
        (msgs[1]["role"].as_str(), msgs[1]["content"].as_str()),
        (Some("user"), Some("Ship it"))
    );
}

#[tokio::test]
async fn a_poll_with_no_reply_renews() {
    let hub = TestHub::start().await;
    let token = hub.init("t").await;
    let wait = hub.register(&token, "t", "m", "q1").await;
    assert_eq!(
        hub.poll(&token, &wait, 50).await,
        json!({"status": "renewal"})
    );
}

#[tokio::test]
async fn register_is_idempotent_per_request_id() {
    let hub = TestHub::start().await;
    let token = hub.init("t").await;
    let w1 = hub.register(&token, "t", "same message", "q1").await;
    let w2 = hub.register(&token, "t", "same message", "q1").await;
    assert_eq!(w1, w2);
    assert_eq!(hub.session(&token).await["msgCount"], 1);

    // After a cancel, the same requestId opens a wait again without a new message.
    hub.ok("/api/wait/cancel", json!({"token": token, "waitId": w1}))
        .await;
    let w3 = hub.register(&token, "t", "same message", "q1").await;
    assert_ne!(w3, w1);
    let s = hub.session(&token).await;
    assert_eq!(s["msgCount"], 1);
    assert_eq!(s["status"], "waiting");
}

#[tokio::test]
async fn a_new_register_supersedes_and_replies_carry_over() {
    let hub = TestHub::start().await;
    let token = hub.init("t").await;
    let w1 = hub.register(&token, "t", "first", "q1").await;
    let r = hub
        .ok("/api/reply", json!({"token": token, "text": "hello"}))
        .await;
    let w2 = hub.register(&token, "t", "second", "q2").await;
    assert_eq!(
        hub.poll(&token, &w1, 0).await,
        json!({"status": "gone", "reason": "superseded"})
    );
    let got = hub.poll(&token, &w2, 0).await;
    assert_eq!(got["reply"]["id"], r["replyId"]);
}

#[tokio::test]
async fn an_ack_through_an_older_wait_leaves_the_newer_wait_open() {
    // The bridge acks after writing the result; the agent may already be
    // waiting again by then.
    let hub = TestHub::start().await;
    let token = hub.init("t").await;
    let w1 = hub.register(&token, "t", "first", "q1").await;
    let r = hub
        .ok("/api/reply", json!({"token": token, "text": "go"}))
        .await;
    assert_eq!(hub.poll(&token, &w1, 0).await["reply"]["id"], r["replyId"]);
    let w2 = hub.register(&token, "t", "second", "q2").await;
    hub.ok(
        "/api/wait/ack",
        json!({"token": token, "waitId": w1, "replyId": r["replyId"]}),
    )
    .await;
    let s = hub.session(&token).await;
    assert_eq!(s["status"], "waiting");
    assert_eq!(s["queuedReplies"], 0);
    assert_eq!(
        hub.poll(&token, &w2, 100).await,
        json!({"status": "renewal"})
    );
}

#[tokio::test]
async fn replies_without_a_wait_are_queued_for_the_next_one() {
    let hub = TestHub::start().await;
    let token = hub.init("t").await;
    let a = hub
        .ok("/api/reply", json!({"token": token, "text": "one"}))
        .await;
    let b = hub
        .ok("/api/reply", json!({"token": token, "text": "two"}))
        .await;
    assert_eq!(a["queued"], true);
    assert_eq!(hub.session(&token).await["queuedReplies"], 2);

    let w = hub.register(&token, "t", "m", "q1").await;
    assert_eq!(hub.session(&token).await["status"], "replied");
    let got = hub.poll(&token, &w, 0).await;
    assert_eq!(got["reply"]["text"], "one");
    hub.ok(
        "/api/wait/ack",
        json!({"token": token, "waitId": w, "replyId": a["replyId"]}),
    )
    .await;
    let w = hub.register(&token, "t", "m2", "q2").await;
    let got = hub.poll(&token, &w, 0).await;
    assert_eq!(got["reply"]["id"], b["replyId"]);
}

#[tokio::test]
async fn cancel_returns_to_holding_and_keeps_queued_replies() {
    let hub = TestHub::start().await;
    let token = hub.init("t").await;
    let w = hub.register(&token, "t", "m", "q1").await;
    hub.ok("/api/reply", json!({"token": token, "text": "kept"}))
        .await;
    hub.ok("/api/wait/cancel", json!({"token": token, "waitId": w}))
        .await;
    assert_eq!(
        hub.poll(&token, &w, 0).await,
        json!({"status": "gone", "reason": "cancelled"})
    );
    let s = hub.session(&token).await;
    assert_eq!(s["status"], "holding");
    assert_eq!(s["queuedReplies"], 1);
}

#[tokio::test]
async fn a_renamed_title_migrates_the_binding_and_keeps_the_token() {
    let hub = TestHub::start().await;
    let token = hub.init("Old title").await;
    hub.register(&token, "New title", "m", "q1").await;
    let s = hub.session(&token).await;
    assert_eq!(s["title"], "New title");
    assert_eq!(s["bindingKey"], "/w::New title@10.0.0.2");
    // The chat under its new title finds the same session.
    let v = hub
        .ok(
            "/api/init",
            json!({"cursorTitle": "New title", "workspace": "/w", "hostIp": "10.0.0.2"}),
        )
        .await;
    assert_eq!(v["token"], token);
    // Another machine may not wait on it.
    let (status, v) = hub
        .post(
            "/api/wait/register",
            json!({"token": token, "message": "m", "cursorTitle": "New title", "workspace": "/w",
                   "hostIp": "10.9.9.9", "requestId": "q2"}),
        )
        .await;
    assert_eq!(
        (status, error_code(&v)),
        (StatusCode::FORBIDDEN, "BINDING_REJECTED")
    );
}

#[tokio::test]
async fn images_travel_with_the_reply() {
    let hub = TestHub::start().await;
    let token = hub.init("t").await;
    let w = hub.register(&token, "t", "m", "q1").await;
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
    hub.ok(
        "/api/reply",
        json!({"token": token, "text": "see", "images": [{"mimeType": "image/png", "data": png}]}),
    )
    .await;
    let got = hub.poll(&token, &w, 0).await;
    assert_eq!(got["reply"]["images"][0]["mimeType"], "image/png");
    assert_eq!(got["reply"]["images"][0]["data"], png);
    let s = hub.session(&token).await;
    assert_eq!(s["messages"][1]["images"][0]["data"], png);
    // Not an image type, not base64.
    for bad in [
        json!({"mimeType": "text/html", "data": png}),
        json!({"mimeType": "image/png", "data": "%%%"}),
    ] {
        let (status, _) = hub
            .post(
                "/api/reply",
                json!({"token": token, "text": "x", "images": [bad]}),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
    }
}

// ---- merge, archive, restore -------------------------------------------

#[tokio::test]
async fn a_merge_keeps_the_newer_progress() {
    let hub = TestHub::start().await;
    let wait_with = |token: &str, title: &str, pct: u8, step: &str, request: &str| {
        json!({"token": token, "message": format!("{title} asks"), "cursorTitle": title,
               "workspace": "/w", "hostIp": "10.0.0.2", "requestId": request,
               "completionPct": pct, "nextStep": step})
    };
    let old = hub.init("Old chat").await;
    hub.ok(
        "/api/wait/register",
        wait_with(&old, "Old chat", 40, "write the parser", "o1"),
    )
    .await;
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let fresh = hub.init("Fresh chat").await;
    hub.ok(
        "/api/wait/register",
        wait_with(&fresh, "Fresh chat", 90, "tag the release", "f1"),
    )
    .await;
    // The fresh chat goes on in the old session: the old session now says where the work is.
    hub.ok(
        &format!("/api/sessions/{fresh}/merge"),
        json!({"toToken": old}),
    )
    .await;
    let review = &hub.session(&old).await["lastReview"];
    assert_eq!(review["completionPct"], 90, "{review}");
    assert_eq!(review["nextStep"], "tag the release", "{review}");

    // Merging an older session into a newer one keeps the newer one's progress.
    let stale = hub.init("Stale chat").await;
    hub.ok(
        "/api/wait/register",
        wait_with(&stale, "Stale chat", 10, "start over", "s1"),
    )
    .await;
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let newest = hub.init("Newest chat").await;
    hub.ok(
        "/api/wait/register",
        wait_with(&newest, "Newest chat", 70, "ship it", "n1"),
    )
    .await;
    hub.ok(
        &format!("/api/sessions/{stale}/merge"),
        json!({"toToken": newest}),
    )
    .await;
    let review = &hub.session(&newest).await["lastReview"];
    assert_eq!(review["completionPct"], 70, "{review}");
    assert_eq!(review["nextStep"], "ship it", "{review}");
}

#[tokio::test]
async fn merge_moves_history_and_ends_the_sources_wait() {
    let hub = TestHub::start().await;
    let from = hub.init("Old").await;
    let to = hub
        .ok(
            "/api/init",
            json!({"cursorTitle": "New", "workspace": "/w", "hostIp": "10.0.0.2", "newPlan": true}),
        )
        .await["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let w = hub.register(&from, "Old", "from the old chat", "q1").await;
    hub.ok("/api/reply", json!({"token": from, "text": "queued one"}))
        .await;
    let v = hub
        .ok(
            "/api/merge",
            json!({"fromToken": from, "toToken": to, "cursorTitle": "New", "workspace": "/w", "hostIp": "10.0.0.2"}),
        )
        .await;
    assert_eq!(v["token"], to);
    assert_eq!(
        hub.poll(&from, &w, 0).await,
        json!({"status": "gone", "reason": "merged", "mergedInto": to})
    );
    let src = hub.session(&from).await;
    assert_eq!(src["status"], "merged");
    assert_eq!(src["mergedInto"], to);
    let dst = hub.session(&to).await;
    assert_eq!(dst["msgCount"], 3);
    // A system line says where the merged messages came from, then they follow.
    assert_eq!(dst["messages"][0]["role"], "system");
    let trace = dst["messages"][0]["content"].as_str().unwrap();
    assert!(
        trace.starts_with("Merged from “Old”")
            && trace.contains(from.as_str())
            && trace.contains("2 messages follow"),
        "{trace}"
    );
    assert_eq!(dst["messages"][1]["content"], "from the old chat");
    assert_eq!(dst["queuedReplies"], 1);
    // The old chat's binding now leads to the target.
    let v = hub
        .ok(
            "/api/init",
            json!({"cursorTitle": "Old", "workspace": "/w", "hostIp": "10.0.0.2"}),
        )
        .await;
    assert_eq!(v["token"], to);

    // Bad merges.
    let merge = |from: &str, to: &str| json!({"fromToken": from, "toToken": to, "cursorTitle": "New", "workspace": "/w", "hostIp": "10.0.0.2"});
    let (status, v) = hub.post("/api/merge", merge(&to, &to)).await;
    assert_eq!(
        (status, error_code(&v)),
        (StatusCode::BAD_REQUEST, "BAD_REQUEST")
    );
    let other = hub.init("Third").await;
    let (status, v) = hub.post("/api/merge", merge(&other, &from)).await;
    assert_eq!(
        (status, error_code(&v)),
        (StatusCode::CONFLICT, "SESSION_CLOSED")
    );
    // Strict on the target: a caller that is not its chat is rejected.
    let (status, v) = hub
        .post(
            "/api/merge",
            json!({"fromToken": other, "toToken": to, "cursorTitle": "Third", "workspace": "/w", "hostIp": "10.0.0.2"}),
        )
        .await;
    assert_eq!(
        (status, error_code(&v)),
        (StatusCode::FORBIDDEN, "BINDING_REJECTED")
    );
    // The person's merge from the panel has no binding check.
    let v = hub
        .ok(
            &format!("/api/sessions/{other}/merge"),
            json!({"toToken": to}),
        )
        .await;
    assert_eq!(v["token"], to);
}

#[tokio::test]
async fn archive_ends_the_wait_refuses_replies_and_restore_reopens() {
    let hub = TestHub::start().await;
    let token = hub.init("t").await;
    let w = hub.register(&token, "t", "m", "q1").await;
    let v = hub
        .ok(&format!("/api/sessions/{token}/archive"), json!({}))
        .await;
    assert_eq!(v["status"], "archived");
    assert_eq!(
        hub.poll(&token, &w, 0).await,
        json!({"status": "gone", "reason": "archived"})
    );
    let (status, v) = hub
        .post("/api/reply", json!({"token": token, "text": "late"}))
        .await;
    assert_eq!(
        (status, error_code(&v)),
        (StatusCode::CONFLICT, "SESSION_CLOSED")
    );
    assert_eq!(
        hub.session(&token).await["msgCount"],
        1,
        "the refused reply left no trace"
    );

    // Archived sessions are listed only when asked for.
    let (_, list) = hub.get("/api/sessions").await;
    assert!(list["sessions"].as_array().unwrap().is_empty());
    let (_, list) = hub.get("/api/sessions?status=archived").await;
    assert_eq!(list["sessions"][0]["token"], token);

    // The archive file.
    let month = std::fs::read_dir(hub.home.join("archive"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    let file = month.path().join(format!("{token}.json"));
    let body: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(body[&token]["messages"][0]["content"], "m");

    let v = hub
        .ok(&format!("/api/sessions/{token}/restore"), json!({}))
        .await;
    assert_eq!(v["status"], "holding");
    hub.ok("/api/reply", json!({"token": token, "text": "back"}))
        .await;
}

// ---- keep-alive modes ---------------------------------------------------

#[tokio::test]
async fn timed_reply_sends_the_continue_prompt_until_the_streak_cap() {
    let hub = TestHub::start().await;
    let token = hub.init("t").await;
    hub.ok(
        "/api/session/config",
        json!({"token": token, "timedReplyEnabled": true, "timedReplyIntervalMs": 150,
               "continuePrompt": "keep going", "maxAutoStreak": 2}),
    )
    .await;
    for round in 1..=2 {
        let w = hub
            .register(&token, "t", &format!("step {round}"), &format!("q{round}"))
            .await;
        let got = hub.poll(&token, &w, 5000).await;
        assert_eq!(got["status"], "replied", "round {round}");
        assert_eq!(got["reply"]["text"], "keep going");
        assert_eq!(got["reply"]["auto"], true);
        hub.ok(
            "/api/wait/ack",
            json!({"token": token, "waitId": w, "replyId": got["reply"]["id"]}),
        )
        .await;
        let s = hub.session(&token).await;
        assert_eq!(s["status"], "running");
        assert_eq!(s["autoStreak"], round);
    }
    // The cap: no third automatic reply.
    let w = hub.register(&token, "t", "step 3", "q3").await;
    assert_eq!(hub.poll(&token, &w, 600).await["status"], "renewal");
    // A person's reply resets the streak.
    let r = hub
        .ok("/api/reply", json!({"token": token, "text": "real"}))
        .await;
    hub.ok(
        "/api/wait/ack",
        json!({"token": token, "waitId": w, "replyId": r["replyId"]}),
    )
    .await;
    let s = hub.session(&token).await;
    assert_eq!(
        (s["autoStreak"].as_u64(), s["status"].as_str()),
        (Some(0), Some("holding"))
    );
    let auto: Vec<bool> = s["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["auto"].as_bool().unwrap())
        .collect();
    assert_eq!(auto, vec![true, true, false]);
}

#[tokio::test]
async fn true_hold_sends_nothing_by_itself() {
    let hub = TestHub::start().await;
    let token = hub.init("t").await;
    let w = hub.register(&token, "t", "m", "q1").await;
    assert_eq!(hub.poll(&token, &w, 400).await["status"], "renewal");
    assert_eq!(hub.session(&token).await["queuedReplies"], 0);
}

#[tokio::test]
async fn idle_auto_continue_goes_on_with_the_named_next_step() {
    let hub = TestHub::start().await;
    let token = hub.init("t").await;
    hub.ok(
        "/api/session/config",
        json!({"token": token, "sessionAutoContinue": true}),
    )
    .await;
    let v = hub
        .ok(
            "/api/wait/register",
            json!({"token": token, "message": "done A", "cursorTitle": "t", "workspace": "/w",
                   "hostIp": "10.0.0.2", "requestId": "q1", "completionPct": 40, "nextStep": "do B"}),
        )
        .await;
    let got = hub.poll(&token, v["waitId"].as_str().unwrap(), 0).await;
    assert_eq!(got["reply"]["auto"], true);
    assert!(got["reply"]["text"].as_str().unwrap().contains("do B"));
    let s = hub.session(&token).await;
    assert_eq!(
        s["lastReview"],
        json!({"hasReview": true, "completionPct": 40, "nextStep": "do B", "isIdleNext": false})
    );
    hub.ok(
        "/api/wait/ack",
        json!({"token": token, "waitId": v["waitId"], "replyId": got["reply"]["id"]}),
    )
    .await;
    // With no next step the agent is idle: it waits for the person.
    let w = hub.register(&token, "t", "all done", "q2").await;
    assert_eq!(hub.poll(&token, &w, 0).await["status"], "renewal");
}

// ---- listing, history, templates, events --------------------------------

#[tokio::test]
async fn list_puts_waiting_first_and_searches_content() {
    let hub = TestHub::start().await;
    let a = hub.init("Alpha").await;
    let b = hub.init("Beta").await;
    let c = hub.init("Gamma").await;
    hub.register(&c, "Gamma", "the needle is here", "q1").await;
    // Waits are timed in milliseconds: make "c waited longer" true on a fast machine.
    tokio::time::sleep(Duration::from_millis(5)).await;
    hub.register(&a, "Alpha", "nothing", "q1").await;
    let (_, list) = hub.get("/api/sessions").await;
    let order: Vec<&str> = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["token"].as_str().unwrap())
        .collect();
    assert_eq!(order, vec![c.as_str(), a.as_str(), b.as_str()]);
    assert!(list["sessions"][0]["waitingSince"].is_i64());

    let (_, found) = hub.get("/api/sessions?q=NEEDLE").await;
    assert_eq!(found["sessions"].as_array().unwrap().len(), 1);
    assert_eq!(found["sessions"][0]["token"], c);
    let (_, found) = hub.get("/api/sessions?q=beta").await;
    assert_eq!(found["sessions"][0]["token"], b);

    let (_, page) = hub.get("/api/sessions?limit=2").await;
    assert_eq!(page["sessions"].as_array().unwrap().len(), 2);
    let cursor = page["nextCursor"].as_str().unwrap();
    let (_, rest) = hub
        .get(&format!("/api/sessions?limit=2&cursor={cursor}"))
        .await;
    assert_eq!(rest["sessions"][0]["token"], b);
    assert!(rest["nextCursor"].is_null());
}

#[tokio::test]
async fn find_answers_where_a_search_hit_in_a_session() {
    let hub = TestHub::start().await;
    let token = hub.init("t").await;
    let long = format!(
        "{} the Zebra-Quartz needle {}",
        "a".repeat(100),
        "b".repeat(100)
    );
    for text in ["zebra-quartz first", "nothing here", long.as_str()] {
        hub.ok("/api/reply", json!({"token": token, "text": text}))
            .await;
    }
    let (status, found) = hub
        .get(&format!("/api/sessions/{token}/find?q=ZEBRA-quartz"))
        .await;
    assert_eq!(status, StatusCode::OK);
    let hits = found["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 2, "{found}");
    assert_eq!(hits[0]["seq"], 2, "newest first");
    assert_eq!(hits[1]["seq"], 0);
    let snippet = hits[0]["snippet"].as_str().unwrap();
    assert!(snippet.contains("the Zebra-Quartz needle"), "{snippet}");
    assert!(
        snippet.starts_with('…') && snippet.ends_with('…'),
        "{snippet}"
    );
    assert!(snippet.chars().count() < 110, "{snippet}");
    let (_, one) = hub
        .get(&format!("/api/sessions/{token}/find?q=zebra&limit=1"))
        .await;
    assert_eq!(one["hits"].as_array().unwrap().len(), 1);
    let (status, body) = hub.get(&format!("/api/sessions/{token}/find?q=%20")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error_code(&body), "BAD_REQUEST");
    let (status, _) = hub
        .get("/api/sessions/ct_00000000000000000000000000000000/find?q=x")
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn history_pages_backwards() {
    let hub = TestHub::start().await;
    let token = hub.init("t").await;
    for i in 0..7 {
        hub.ok(
            "/api/reply",
            json!({"token": token, "text": format!("m{i}")}),
        )
        .await;
    }
    let (_, page) = hub.get(&format!("/api/sessions/{token}?limit=3")).await;
    let texts = |v: &Value| {
        v["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["content"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(texts(&page), vec!["m4", "m5", "m6"]);
    let before = page["nextBefore"].as_u64().unwrap();
    let (_, older) = hub
        .get(&format!("/api/sessions/{token}?limit=3&before={before}"))
        .await;
    assert_eq!(texts(&older), vec!["m1", "m2", "m3"]);
    let (_, oldest) = hub
        .get(&format!("/api/sessions/{token}?limit=3&before=1"))
        .await;
    assert_eq!(texts(&oldest), vec!["m0"]);
    assert!(oldest["nextBefore"].is_null());
}

#[tokio::test]
async fn templates_are_shared_and_editable() {
    let hub = TestHub::start().await;
    let (_, t) = hub.get("/api/templates").await;
    assert!(t["templates"].as_array().unwrap().len() >= 4);
    let res = hub
        .http
        .put(format!("{}/api/templates", hub.url))
        .bearer_auth(&hub.secret)
        .json(&json!({"templates": [{"label": "Go", "text": "Go on."}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let (_, t) = hub.get("/api/templates").await;
    assert_eq!(t, json!({"templates": [{"label": "Go", "text": "Go on."}]}));
}

#[tokio::test]
async fn events_stream_session_changes() {
    let hub = TestHub::start().await;
    let res = hub
        .http
        .get(format!("{}/api/events", hub.url))
        .bearer_auth(&hub.secret)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let mut body = res;
    let token = hub.init("Live").await;
    hub.register(&token, "Live", "m", "q1").await;
    let mut seen = String::new();
    let found = tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(chunk) = body.chunk().await.unwrap() {
            seen.push_str(&String::from_utf8_lossy(&chunk));
            if seen.contains("\"status\":\"waiting\"") {
                return true;
            }
        }
        false
    })
    .await
    .unwrap_or(false);
    assert!(found, "no waiting event in {seen}");
    assert!(seen.contains("event: session"));
}

#[tokio::test]
async fn health_and_metrics() {
    let hub = TestHub::start().await;
    hub.init("t").await;
    // Without a credential: only that the hub is up, no counts.
    let anonymous: Value = reqwest::get(format!("{}/healthz", hub.url))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        anonymous,
        json!({"ok": true, "version": env!("CARGO_PKG_VERSION")}),
        "{anonymous}"
    );
    let h = hub.health().await;
    assert_eq!(h["ok"], true);
    assert_eq!(h["sessions"], 1);
    assert_eq!(h["waiting"], 0);
    assert!(h["mongo"].is_null());
    let res = reqwest::get(format!("{}/metrics", hub.url)).await.unwrap();
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    let text = hub
        .http
        .get(format!("{}/metrics", hub.url))
        .bearer_auth(&hub.secret)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(text.contains("holdline_sessions 1"), "{text}");
}

// ---- security -----------------------------------------------------------

#[tokio::test]
async fn every_api_route_needs_the_secret() {
    let hub = TestHub::start().await;
    let token = hub.init("t").await;
    let plain = reqwest::Client::new();
    let posts = [
        "/api/init",
        "/api/select",
        "/api/wait/register",
        "/api/wait/poll",
        "/api/wait/ack",
        "/api/wait/cancel",
        "/api/merge",
        "/api/session/config",
        "/api/reply",
        "/api/import",
        "/api/logout",
        "/api/logout/everywhere",
    ];
    for path in posts {
        for auth in [None, Some("Bearer wrong-secret-wrong-secret")] {
            let mut req = plain.post(format!("{}{path}", hub.url)).json(&json!({}));
            if let Some(a) = auth {
                req = req.header("authorization", a);
            }
            let res = req.send().await.unwrap();
            assert_eq!(res.status(), StatusCode::UNAUTHORIZED, "{path}");
            let v: Value = res.json().await.unwrap();
            assert_eq!(error_code(&v), "UNAUTHORIZED");
        }
    }
    for path in [
        "/api/sessions".to_owned(),
        format!("/api/sessions/{token}"),
        "/api/events".into(),
        "/api/templates".into(),
        "/api/export".into(),
        "/api/whoami".into(),
    ] {
        let res = plain
            .get(format!("{}{path}", hub.url))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::UNAUTHORIZED, "{path}");
    }
    // The panel's files are public; the healthz is public.
    assert_eq!(
        plain
            .get(format!("{}/", hub.url))
            .send()
            .await
            .unwrap()
            .status(),
        StatusCode::OK
    );
    assert_eq!(
        plain
            .get(format!("{}/healthz", hub.url))
            .send()
            .await
            .unwrap()
            .status(),
        StatusCode::OK
    );
}

#[tokio::test]
async fn login_trades_the_key_for_a_strict_cookie_and_is_rate_limited() {
    let hub = TestHub::start().await;
    let plain = reqwest::Client::new();
    let res = plain
        .post(format!("{}/api/login", hub.url))
        .json(&json!({"key": hub.secret}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let cookie = res.headers()["set-cookie"].to_str().unwrap().to_owned();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    assert!(
        !cookie.contains(&hub.secret),
        "the cookie is not the secret itself"
    );
    let pair = cookie.split(';').next().unwrap();
    let res = plain
        .get(format!("{}/api/sessions", hub.url))
        .header("cookie", pair)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);

    for _ in 0..10 {
        let res = plain
            .post(format!("{}/api/login", hub.url))
            .json(&json!({"key": "nope"}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    }
    let res = plain
        .post(format!("{}/api/login", hub.url))
        .json(&json!({"key": "nope"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS);
    let v: Value = res.json().await.unwrap();
    assert_eq!(error_code(&v), "RATE_LIMITED");
    // The right key still gets in (finding L7 in docs/security.md): failures cannot lock the person out.
    let res = plain
        .post(format!("{}/api/login", hub.url))
        .json(&json!({"key": hub.secret}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
}

#[tokio::test]
async fn foreign_hosts_and_origins_are_refused() {
    let hub = TestHub::start().await;
    let port = hub.url.rsplit(':').next().unwrap().to_owned();
    let send = |host: Option<String>, origin: Option<String>| {
        let mut req = hub
            .http
            .get(format!("{}/api/sessions", hub.url))
            .bearer_auth(&hub.secret);
        if let Some(h) = host {
            req = req.header("host", h);
        }
        if let Some(o) = origin {
            req = req.header("origin", o);
        }
        req.send()
    };
    // DNS rebinding: a name that is not ours.
    let res = send(Some(format!("evil.example:{port}")), None)
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    let v: Value = res.json().await.unwrap();
    assert_eq!(error_code(&v), "FORBIDDEN");
    // A page on another origin.
    let res = send(None, Some("http://evil.example".into()))
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    // Our own origin, localhost and IP names are fine.
    let res = send(None, Some(hub.url.clone())).await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let res = send(Some(format!("localhost:{port}")), None).await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
}

// ---- bad input gets a clear error and loses nothing ----------------------

#[tokio::test]
async fn bad_inputs_get_clear_errors_and_change_nothing() {
    let hub = TestHub::start().await;
    let token = hub.init("t").await;
    let wait = hub.register(&token, "t", "m", "q1").await;
    let before = hub.session(&token).await;

    let raw = |path: &str, body: Vec<u8>| {
        hub.http
            .post(format!("{}{path}", hub.url))
            .bearer_auth(&hub.secret)
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    let expect = |res: reqwest::Response, status: StatusCode, code: &'static str| async move {
        assert_eq!(res.status(), status);
        let v: Value = res.json().await.expect("a JSON error body");
        assert_eq!(error_code(&v), code, "{v}");
        assert!(!v["error"]["message"].as_str().unwrap().is_empty());
    };
    let bad_request = StatusCode::BAD_REQUEST;

    // Malformed JSON, empty body, invalid UTF-8.
    for body in [
        b"{not json".to_vec(),
        b"".to_vec(),
        b"{\"token\": \"\xff\xfe\"}".to_vec(),
    ] {
        expect(
            raw("/api/reply", body).await.unwrap(),
            bad_request,
            "BAD_REQUEST",
        )
        .await;
    }
    // Wrong types and missing fields.
    for body in [
        json!({"token": token, "text": 5}),
        json!({"token": token}),
        json!({"text": "x"}),
        json!([1, 2]),
    ] {
        expect(
            raw("/api/reply", body.to_string().into_bytes())
                .await
                .unwrap(),
            bad_request,
            "BAD_REQUEST",
        )
        .await;
    }
    // Unknown and malformed tokens.
    let long = "a".repeat(10 * 1024);
    for t in [
        "../x",
        "",
        long.as_str(),
        "ct_ZZZ",
        "CT_0a1b2c3d4e5f60718293a4b5c6d7e8f9",
    ] {
        let (status, v) = hub
            .post("/api/reply", json!({"token": t, "text": "x"}))
            .await;
        assert_eq!(
            (status, error_code(&v)),
            (bad_request, "BAD_REQUEST"),
            "{t:.20}"
        );
    }
    let res = hub
        .http
        .get(format!("{}/api/sessions/..%2Fx", hub.url))
        .bearer_auth(&hub.secret)
        .send()
        .await
        .unwrap();
    expect(res, bad_request, "BAD_REQUEST").await;
    let (status, v) = hub
        .post(
            "/api/reply",
            json!({"token": "ct_00000000000000000000000000000000", "text": "x"}),
        )
        .await;
    assert_eq!(
        (status, error_code(&v)),
        (StatusCode::NOT_FOUND, "SESSION_NOT_FOUND")
    );
    // Empty and 100 KB cursorTitle.
    for title in [String::new(), "   ".into(), "t".repeat(100 * 1024)] {
        let (status, v) = hub
            .post(
                "/api/init",
                json!({"cursorTitle": title, "workspace": "/w", "hostIp": "h"}),
            )
            .await;
        assert_eq!((status, error_code(&v)), (bad_request, "BAD_REQUEST"));
    }
    // A 20 MB body.
    let huge = format!(
        "{{\"token\":\"{token}\",\"text\":\"{}\"}}",
        "x".repeat(20 * 1024 * 1024)
    );
    expect(
        raw("/api/reply", huge.into_bytes()).await.unwrap(),
        StatusCode::PAYLOAD_TOO_LARGE,
        "TOO_LARGE",
    )
    .await;
    // Over the 1 MiB cap of plain JSON routes.
    let big = json!({"token": token, "message": "x".repeat(2 * 1024 * 1024), "cursorTitle": "t", "workspace": "/w", "hostIp": "10.0.0.2", "requestId": "q9"});
    expect(
        raw("/api/wait/register", big.to_string().into_bytes())
            .await
            .unwrap(),
        StatusCode::PAYLOAD_TOO_LARGE,
        "TOO_LARGE",
    )
    .await;
    // timeoutMs of -1 and 10^12.
    for ms in [json!(-1), json!(1_000_000_000_000u64), json!("10")] {
        let (status, v) = hub
            .post(
                "/api/wait/poll",
                json!({"token": token, "waitId": wait, "timeoutMs": ms}),
            )
            .await;
        assert_eq!(
            (status, error_code(&v)),
            (bad_request, "BAD_REQUEST"),
            "{ms}"
        );
    }
    // A poll for another session's waitId.
    let other = hub.init("other").await;
    let other_wait = hub.register(&other, "other", "m", "q1").await;
    let (status, v) = hub
        .post(
            "/api/wait/poll",
            json!({"token": token, "waitId": other_wait, "timeoutMs": 0}),
        )
        .await;
    assert_eq!(
        (status, error_code(&v)),
        (StatusCode::FORBIDDEN, "FORBIDDEN")
    );
    // Ack of an unknown replyId.
    let (status, v) = hub
        .post(
            "/api/wait/ack",
            json!({"token": token, "waitId": wait, "replyId": "r_nope"}),
        )
        .await;
    assert_eq!((status, error_code(&v)), (bad_request, "BAD_REQUEST"));
    // Out-of-range settings.
    let (status, _) = hub
        .post(
            "/api/session/config",
            json!({"token": token, "timedReplyIntervalMs": 5}),
        )
        .await;
    assert_eq!(status, bad_request);
    let (status, _) = hub.post("/api/wait/register", json!({"token": token, "message": "m", "cursorTitle": "t", "workspace": "/w", "hostIp": "10.0.0.2", "requestId": "q5", "completionPct": 101})).await;
    assert_eq!(status, bad_request);
    let (status, v) = hub.get("/api/sessions?limit=0").await;
    assert_eq!((status, error_code(&v)), (bad_request, "BAD_REQUEST"));
    let (status, v) = hub.get("/api/sessions?limit=abc").await;
    assert_eq!((status, error_code(&v)), (bad_request, "BAD_REQUEST"));

    // Nothing was lost or changed: same wait, same history.
    let after = hub.session(&token).await;
    assert_eq!(after["msgCount"], before["msgCount"]);
    assert_eq!(after["messages"], before["messages"]);
    assert_eq!(after["status"], "waiting");
    assert_eq!(hub.poll(&token, &wait, 0).await["status"], "renewal");
}

// ---- restarts and the real binary ------------------------------------------

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
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/node-hub-sessions.json");
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
    let node: Value = serde_json::from_str(include_str!("../data/node-hub-sessions.json")).unwrap();
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_concurrent_writers_all_get_answers() {
    // sled 0.34's flush_async deadlocked under a few dozen concurrent
    // writers; the hub must keep answering.
    let hub = std::sync::Arc::new(TestHub::start().await);
    let mut tasks = Vec::new();
    for i in 0..64 {
        let hub = hub.clone();
        tasks.push(tokio::spawn(async move {
            let title = format!("agent {i}");
            let token = hub
                .ok(
                    "/api/init",
                    json!({"cursorTitle": title, "workspace": "/w", "hostIp": "10.0.0.2"}),
                )
                .await["token"]
                .as_str()
                .unwrap()
                .to_owned();
            for round in 0..5 {
                let w = hub
                    .register(&token, &title, "m", &format!("q{round}"))
                    .await;
                let r = hub
                    .ok("/api/reply", json!({"token": token, "text": "r"}))
                    .await;
                assert_eq!(
                    hub.poll(&token, &w, 5000).await["reply"]["id"],
                    r["replyId"]
                );
                hub.ok(
                    "/api/wait/ack",
                    json!({"token": token, "waitId": w, "replyId": r["replyId"]}),
                )
                .await;
            }
        }));
    }
    let all = futures::future::join_all(tasks);
    let done = tokio::time::timeout(Duration::from_secs(120), all)
        .await
        .expect("the hub stopped answering");
    for d in done {
        d.unwrap();
    }
}

// ---- random bodies at every route decoder ---------------------------------

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    const ROUTES: &[&str] = &[
        "/api/init",
        "/api/select",
        "/api/wait/register",
        "/api/wait/poll",
        "/api/wait/ack",
        "/api/wait/cancel",
        "/api/merge",
        "/api/session/config",
        "/api/reply",
        "/api/import",
        "/api/login",
        "/api/sessions/ct_00000000000000000000000000000000/merge",
    ];
    const FIELDS: &[&str] = &[
        "token",
        "cursorTitle",
        "workspace",
        "hostIp",
        "message",
        "requestId",
        "waitId",
        "timeoutMs",
        "replyId",
        "fromToken",
        "toToken",
        "text",
        "images",
        "newPlan",
        "planLabel",
        "threadId",
        "completionPct",
        "nextStep",
        "timedReplyIntervalMs",
        "maxAutoStreak",
        "displayTitle",
        "key",
    ];

    /// Values that mix valid pieces (a real token and wait) with hostile ones.
    fn value(token: String, wait: String) -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            prop_oneof![Just(0i64), Just(1), Just(-1), Just(100), Just(101)].prop_map(Value::from),
            any::<f64>()
                .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
            ".{0,40}".prop_map(Value::from),
            Just(Value::from(token)),
            Just(Value::from(wait)),
            Just(json!([{"mimeType": "image/png", "data": "AAAA"}])),
        ];
        leaf.prop_recursive(3, 24, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                proptest::collection::btree_map(
                    proptest::sample::select(FIELDS).prop_map(str::to_owned),
                    inner,
                    0..8
                )
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    fn bodies(token: String, wait: String) -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..512),
            value(token, wait).prop_map(|v| serde_json::to_vec(&v).unwrap()),
        ]
    }

    #[test]
    fn the_hub_answers_every_random_body_with_json_and_never_fails() {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let (hub, token, wait) = rt.block_on(async {
            let hub = TestHub::start().await;
            let token = hub.init("fuzz").await;
            let wait = hub.register(&token, "fuzz", "m", "q1").await;
            (hub, token, wait)
        });
        let config = ProptestConfig {
            cases: 400,
            failure_persistence: None,
            ..ProptestConfig::default()
        };
        proptest!(config, |(route in proptest::sample::select(ROUTES), body in bodies(token.clone(), wait.clone()))| {
            let (status, v) = rt.block_on(async {
                let res = hub.http.post(format!("{}{route}", hub.url)).bearer_auth(&hub.secret).body(body).send().await.unwrap();
                let status = res.status();
                (status, res.json::<Value>().await.unwrap_or(Value::Null))
            });
            prop_assert!(status.as_u16() < 500, "{route} answered {status}: {v}");
            if !status.is_success() {
                prop_assert!(v["error"]["code"].is_string(), "{route} {status}: {v}");
            }
        });
        rt.block_on(async {
            let h: Value = reqwest::get(format!("{}/healthz", hub.url))
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            assert_eq!(h["ok"], true);
        });
    }
}

#[tokio::test]
async fn a_sessions_own_quick_replies_are_kept_by_the_hub_and_travel_with_an_export() {
    let hub = TestHub::start().await;
    let token = hub.init("Release").await;
    let other = hub.init("Other").await;
    let own = json!([{"label": "Tag it", "text": "Tag v2 and push the tag."},
                     {"label": "回滚", "text": "回滚到上一个版本。", "lang": "zh"}]);
    let s = hub
        .ok(
            "/api/session/config",
            json!({"token": token, "quickReplies": own}),
        )
        .await;
    assert_eq!(s["quickReplies"], own, "{s}");
    assert_eq!(hub.session(&token).await["quickReplies"], own);
    assert!(hub.session(&other).await.get("quickReplies").is_none());

    // Outside the rule: 400, and the list kept is the one before.
    let too_many: Vec<Value> = (0..21)
        .map(|i| json!({"label": format!("q{i}"), "text": "x"}))
        .collect();
    for bad in [json!(too_many), json!([{"label": " ", "text": "x"}])] {
        let (status, v) = hub
            .post(
                "/api/session/config",
                json!({"token": token, "quickReplies": bad}),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{v}");
    }
    assert_eq!(hub.session(&token).await["quickReplies"], own);

    // An export carries them; an import into another hub gives them back.
    let (_, export) = hub.get("/api/export").await;
    assert_eq!(export[&token]["quickReplies"], own, "{export}");
    let fresh = TestHub::start().await;
    fresh.ok("/api/import", export).await;
    assert_eq!(fresh.session(&token).await["quickReplies"], own);

    // [] removes them.
    hub.ok(
        "/api/session/config",
        json!({"token": token, "quickReplies": []}),
    )
    .await;
    assert!(hub.session(&token).await.get("quickReplies").is_none());
}
