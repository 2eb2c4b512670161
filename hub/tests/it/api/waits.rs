//! The wait cycle over HTTP: register, the person's reply, poll, ack — delivered once;
//! renewals, idempotent registers, superseded waits, queued replies, cancel, images, and
//! many writers at once.

use super::*;

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
