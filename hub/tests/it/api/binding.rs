//! Sessions and bindings: a chat's init finds its session again (by title, plan label or
//! thread id), select is strict, a renamed title keeps the token.

use super::*;

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
