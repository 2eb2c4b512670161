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

/// How long after `from` the session leaves `waiting` (up to `within`).
async fn closed_after(hub: &TestHub, token: &str, from: Instant, within: Duration) -> Duration {
    let status = status_within(hub, token, "holding", within).await;
    assert_eq!(status, "holding", "the wait stayed open");
    from.elapsed()
}

/// The watch looks every third of the grace (at most 10 s): a wait is closed between one
/// grace and a grace and a third after its agent's last sign; this much more for a slow machine.
const SLACK: Duration = Duration::from_millis(600);

/// A bridge killed outright mid-poll: its connection closes, the hub drops the held poll
/// at once, and the grace counts from that poll's START — the dead poll's hold (5 s here,
/// 10 s from the bridge) does not come first.
#[tokio::test]
async fn a_killed_agents_held_poll_ends_with_its_connection_and_the_grace_counts_from_its_start() {
    let hub = hub_with_grace().await;
    let token = hub.init("t").await;
    let w = hub.register(&token, "t", "m", "q1").await;
    let held = {
        let (http, url, secret) = (hub.http.clone(), hub.url.clone(), hub.secret.clone());
        let body = json!({"token": token, "waitId": w, "timeoutMs": 5000});
        tokio::spawn(async move {
            let _ = http
                .post(format!("{url}/api/wait/poll"))
                .bearer_auth(secret)
                .json(&body)
                .send()
                .await;
        })
    };
    let poll_started = Instant::now();
    tokio::time::sleep(Duration::from_millis(300)).await;
    held.abort(); // the process is gone: its socket closes
    let closed = closed_after(&hub, &token, poll_started, Duration::from_secs(5)).await;
    assert!(
        closed >= GRACE && closed <= GRACE + GRACE / 3 + SLACK,
        "closed {closed:?} after the dead poll began (grace {GRACE:?}, its hold 5 s)"
    );
}

/// A poll held to its end (a machine gone without closing its connection holds its last
/// poll so) is a sign of life at its END: the grace counts from there.
#[tokio::test]
async fn a_poll_held_to_its_end_counts_the_grace_from_its_end() {
    let hub = hub_with_grace().await;
    let token = hub.init("t").await;
    let w = hub.register(&token, "t", "m", "q1").await;
    let v = hub.poll(&token, &w, 1500).await;
    assert_eq!(v["status"], "renewal", "{v}");
    let poll_ended = Instant::now();
    let closed = closed_after(&hub, &token, poll_ended, Duration::from_secs(5)).await;
    assert!(
        closed >= GRACE && closed <= GRACE + GRACE / 3 + SLACK,
        "closed {closed:?} after the last poll ended (grace {GRACE:?})"
    );
}
