//! Keep-alive: timed replies up to the streak cap, true hold, idle auto-continue.

use super::*;

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
