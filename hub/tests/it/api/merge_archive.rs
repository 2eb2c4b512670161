//! A session's end: merged into another (history, progress and queued replies move, the
//! source's wait ends) or archived (replies refused until restored).

use super::*;

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

/// Two sessions of one workspace ("Old" with a question waiting and a reply queued,
/// "New" from a new plan), and the agent's merge of Old into New: (old, new, Old's wait).
async fn merged_old_into_new(hub: &TestHub) -> (String, String, String) {
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
    (from, to, w)
}

#[tokio::test]
async fn merge_moves_history_and_ends_the_sources_wait() {
    let hub = TestHub::start().await;
    let (from, to, w) = merged_old_into_new(&hub).await;
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
}

#[tokio::test]
async fn bad_merges_are_refused_and_the_persons_merge_needs_no_binding() {
    let hub = TestHub::start().await;
    let (from, to, _) = merged_old_into_new(&hub).await;
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
