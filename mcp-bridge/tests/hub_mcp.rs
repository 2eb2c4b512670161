//! The tools served by the hub itself at `/mcp` (Streamable HTTP), driven by rmcp's HTTP
//! client against a real hub process: the same results as over stdio, the binding's host
//! is the address the hub saw, and refusals are JSON-RPC errors with one sentence.

#![allow(deprecated)] // the harness answers roots/list, deprecated by SEP-2577

mod harness;

use std::time::Duration;

use harness::*;
use serde_json::{Value, json};

#[tokio::test]
async fn a_remote_agent_waits_and_gets_the_reply_once_bound_to_the_address_the_hub_saw() {
    let home = tempfile::tempdir().unwrap();
    let hub = TestHub::start(home.path()).await.unwrap();
    let client = start_remote(&hub, &hub.secret, "holdline-test")
        .await
        .unwrap();

    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<_> = tools.iter().map(|t| t.name.to_string()).collect();
    for tool in [
        "init_conversation",
        "select_conversation",
        "wait_for_user_input",
        "merge_conversation",
    ] {
        assert!(
            names.iter().any(|n| n == tool),
            "{tool} missing from {names:?}"
        );
    }

    let token = init(&client, "remote work").await.unwrap();
    let session = hub.session(&token).await.unwrap();
    assert_eq!(session["hostIp"], "127.0.0.1", "binding host: {session}");

    let wait = start_call(
        &client,
        "wait_for_user_input",
        json!({"token": token, "message": "step one done"}),
    )
    .await
    .unwrap();
    hub.wait_status(&token, "waiting").await.unwrap();
    hub.reply(&token, "go on with step two", json!([]))
        .await
        .unwrap();
    let result = finish(wait).await.unwrap();
    assert_ne!(result.is_error, Some(true), "{}", text(&result));
    assert!(
        text(&result).contains("go on with step two"),
        "{}",
        text(&result)
    );
    assert_eq!(structured(&result)["status"], "replied");

    // Delivered once: the next wait does not get it again.
    let resume = structured(&result)["resume"].as_str().unwrap().to_owned();
    let again = tokio::time::timeout(
        Duration::from_secs(30),
        call(
            &client,
            "wait_for_user_input",
            json!({"token": token, "message": "step two done", "resume": resume, "timeoutSec": 2}),
        ),
    )
    .await
    .expect("a short wait ends")
    .unwrap();
    assert!(
        !text(&again).contains("go on with step two"),
        "{}",
        text(&again)
    );
    let session = hub.session(&token).await.unwrap();
    assert_eq!(count_messages(&session, "step one done"), 1, "{session}");
    assert_eq!(
        count_messages(&session, "go on with step two"),
        1,
        "{session}"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_wrong_credential_gets_a_json_rpc_401_with_one_sentence() {
    let home = tempfile::tempdir().unwrap();
    let hub = TestHub::start(home.path()).await.unwrap();
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}});
    for bearer in [Some("not-the-secret"), None] {
        let mut request = hub
            .http
            .post(format!("{}/mcp", hub.url()))
            .header("Accept", "application/json, text/event-stream")
            .json(&initialize);
        if let Some(b) = bearer {
            request = request.bearer_auth(b);
        }
        let answer = request.send().await.unwrap();
        assert_eq!(answer.status(), 401);
        let body: Value = answer.json().await.unwrap();
        assert_eq!(body["jsonrpc"], "2.0", "{body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("secret") || message.contains("key"),
            "{message}"
        );
    }
}

#[tokio::test]
async fn an_oversized_request_is_refused_as_too_large_and_the_session_keeps_working() {
    let home = tempfile::tempdir().unwrap();
    let hub = TestHub::start(home.path()).await.unwrap();
    let client = start_remote(&hub, &hub.secret, "holdline-test")
        .await
        .unwrap();
    let token = init(&client, "big").await.unwrap();

    let huge = "x".repeat(2 * 1024 * 1024);
    // Its own connection: the hub closes one whose body it refused to read.
    let answer = reqwest::Client::new()
        .post(format!("{}/mcp", hub.url()))
        .bearer_auth(&hub.secret)
        .header("Accept", "application/json, text/event-stream")
        .json(
            &json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {
            "name": "wait_for_user_input", "arguments": {"token": token, "message": huge}}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 413);
    let body: Value = answer.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("TOO_LARGE"),
        "{body}"
    );

    // Nothing stored, and the agent's next call works.
    let session = hub.session(&token).await.unwrap();
    assert_eq!(count_messages(&session, &huge), 0);
    let r = call(
        &client,
        "wait_for_user_input",
        json!({"token": token, "message": "short", "timeoutSec": 1}),
    )
    .await
    .unwrap();
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
}
