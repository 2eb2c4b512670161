//! A wait lives only while an agent is behind it: the hub closes a
//! wait nobody polls for its grace period, so the panel shows no ghost agent
//! and a later reply is queued for the next wait. Real hub, real HTTP.

use std::time::{Duration, Instant};

use crate::inproc::{Options, TestHub};
use serde_json::json;

const GRACE: Duration = Duration::from_secs(1);

async fn hub_with_grace() -> TestHub {
    TestHub::start_with(Options {
        wait_grace: Some(GRACE),
        ..Options::default()
    })
    .await
}

/// Polls the session's status until it is `want` or `within` passes.
async fn status_within(hub: &TestHub, token: &str, want: &str, within: Duration) -> String {
    let until = Instant::now() + within;
    loop {
        let status = hub.session(token).await["status"]
            .as_str()
            .unwrap()
            .to_owned();
        if status == want || Instant::now() > until {
            return status;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_wait_nobody_polls_is_closed_and_a_later_reply_is_queued_for_the_next_wait() {
    let hub = hub_with_grace().await;
    let token = hub.init("t").await;
    let w = hub.register(&token, "t", "done, what next?", "q1").await;
    assert_eq!(hub.session(&token).await["status"], "waiting");

    // The agent is gone (killed without a cancel): nobody polls.
    let status = status_within(&hub, &token, "holding", GRACE * 6).await;
    assert_eq!(status, "holding", "an unpolled wait must not stay waiting");
    assert_eq!(
        hub.poll(&token, &w, 0).await,
        json!({"status": "gone", "reason": "expired"})
    );

    let reply = hub
        .ok("/api/reply", json!({"token": token, "text": "later"}))
        .await;
    assert_eq!(reply["queued"], true);

    // The agent comes back with the same call: the message is not stored twice,
    // and the queued reply reaches the new wait.
    let w2 = hub.register(&token, "t", "done, what next?", "q1").await;
    assert_ne!(w2, w);
    let got = hub.poll(&token, &w2, 0).await;
    assert_eq!(got["reply"]["text"], "later");
    let s = hub.session(&token).await;
    let agent_messages = s["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["content"] == "done, what next?")
        .count();
    assert_eq!(agent_messages, 1, "{s}");
}

#[tokio::test]
async fn a_wait_that_is_polled_stays_open_past_the_grace_period() {
    let hub = hub_with_grace().await;
    let token = hub.init("t").await;
    let w = hub.register(&token, "t", "m", "q1").await;
    // Held polls and short gaps between them, for four grace periods.
    let until = Instant::now() + GRACE * 4;
    while Instant::now() < until {
        let v = hub.poll(&token, &w, 400).await;
        assert_eq!(v["status"], "renewal", "{v}");
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    assert_eq!(hub.session(&token).await["status"], "waiting");
}

#[tokio::test]
async fn a_pending_reply_on_an_abandoned_wait_stays_queued() {
    let hub = hub_with_grace().await;
    let token = hub.init("t").await;
    hub.register(&token, "t", "m", "q1").await;
    hub.ok(
        "/api/reply",
        json!({"token": token, "text": "sent while it died"}),
    )
    .await;
    let status = status_within(&hub, &token, "holding", GRACE * 6).await;
    assert_eq!(status, "holding");
    assert_eq!(hub.session(&token).await["queuedReplies"], 1);
    let w = hub.register(&token, "t", "m2", "q2").await;
    assert_eq!(
        hub.poll(&token, &w, 0).await["reply"]["text"],
        "sent while it died"
    );
}
