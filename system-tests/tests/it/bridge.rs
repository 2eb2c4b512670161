//! The real `holdline-mcp` binary over stdio, driven by an rmcp client, against a real
//! `holdline-hub` process on an ephemeral port with a temporary home.

#![allow(deprecated)] // roots are deprecated for future protocols; IDEs still send them

use std::{
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use crate::harness::*;
use anyhow::Context;
use rmcp::model::ProgressToken;
use serde_json::{Value, json};
use tempfile::TempDir;
#[tokio::test]
async fn init_wait_reply_returns_the_reply_and_records_the_message_once() -> anyhow::Result<()> {
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let client = start_bridge(BridgeOptions::for_hub(&hub)).await?;
    let token = init(&client, "Fix flaky CI").await?;
    let s = hub.session(&token).await?;
    assert_eq!(
        s["workspace"], "/home/dev/project one",
        "workspace from the client's roots"
    );
    assert_eq!(s["hostIp"], "test-host");

    let handle = start_call(
        &client,
        "wait_for_user_input",
        json!({"token": token, "message": "Tests pass. Ship?", "completionPct": 80, "nextStep": "commit"}),
    )
    .await?;
    hub.wait_status(&token, "waiting").await?;
    hub.reply(&token, "Ship it", json!([])).await?;
    let r = finish(handle).await?;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    let t = text(&r);
    assert!(t.starts_with("Ship it"), "{t}");
    assert!(
        t.contains(&format!("wait_for_user_input with token {token}")),
        "{t}"
    );
    assert_eq!(structured(&r)["reply"]["text"], "Ship it");
    let s = hub.wait_status(&token, "holding").await?;
    assert_eq!(count_messages(&s, "Tests pass. Ship?"), 1);
    assert_eq!(count_messages(&s, "Ship it"), 1);
    client.cancel().await?;
    Ok(())
}

#[tokio::test]
async fn images_in_a_reply_become_image_content() -> anyhow::Result<()> {
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let client = start_bridge(BridgeOptions::for_hub(&hub)).await?;
    let token = init(&client, "Screenshots").await?;
    let handle = start_call(
        &client,
        "wait_for_user_input",
        json!({"token": token, "message": "Which layout?"}),
    )
    .await?;
    hub.wait_status(&token, "waiting").await?;
    hub.reply(
        &token,
        "This one",
        json!([{"mimeType": "image/png", "data": PNG_1PX}]),
    )
    .await?;
    let r = finish(handle).await?;
    let images: Vec<_> = r.content.iter().filter_map(|c| c.as_image()).collect();
    assert_eq!(images.len(), 1);
    assert_eq!(images[0].mime_type, "image/png");
    assert_eq!(images[0].data, PNG_1PX);
    assert!(text(&r).starts_with("This one"));
    client.cancel().await?;
    Ok(())
}

/// No image block and no image data anywhere in the result's JSON.
fn assert_no_image_data(r: &rmcp::model::CallToolResult, who: &str) {
    assert!(
        r.content.iter().all(|c| c.as_image().is_none()),
        "{who}: an image block"
    );
    let all = serde_json::to_string(r).unwrap();
    assert!(
        !all.contains(PNG_1PX) && !all.contains("iVBORw0KGgo"),
        "{who}: image data in the result: {all}"
    );
}

/// A wait on `token` answered by the person with `text` and a one-pixel PNG: its result.
async fn answered_with_an_image(
    client: &Client,
    hub: &TestHub,
    token: &str,
    args: Value,
    text: &str,
) -> anyhow::Result<rmcp::model::CallToolResult> {
    let handle = start_call(client, "wait_for_user_input", args).await?;
    hub.wait_status(token, "waiting").await?;
    hub.reply(
        token,
        text,
        json!([{"mimeType": "image/png", "data": PNG_1PX}]),
    )
    .await?;
    finish(handle).await
}

#[tokio::test]
async fn a_client_that_cannot_show_images_gets_them_as_files_in_the_workspace() -> anyhow::Result<()>
{
    use base64::Engine;
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let png = base64::engine::general_purpose::STANDARD.decode(PNG_1PX)?;
    for client_name in ["cline", "Continue", "copilot"] {
        let workspace = TempDir::new()?;
        let ws = workspace.path().canonicalize()?;
        let root = format!("file://{}", ws.display());
        let mut o = BridgeOptions::for_hub(&hub);
        o.client_name = client_name;
        o.root = Some(&root);
        let client = start_bridge(o).await?;
        let token = init(&client, &format!("Files for {client_name}")).await?;
        let first = call(
            &client,
            "wait_for_user_input",
            json!({"token": token, "message": "Look", "timeoutSec": 1}),
        )
        .await?;
        let old_resume = resume_of(&first);
        let args = json!({"token": token, "message": "Look", "resume": old_resume});
        let r = answered_with_an_image(&client, &hub, &token, args, "see this").await?;
        assert_no_image_data(&r, client_name);
        let files = structured(&r)["reply"]["imageFiles"].clone();
        let path = std::path::PathBuf::from(files[0].as_str().expect("a saved file"));
        assert_eq!(files.as_array().map(Vec::len), Some(1), "{client_name}");
        assert_eq!(path.parent(), Some(ws.join(".holdline/images").as_path()));
        assert_eq!(std::fs::read(&path)?, png, "{client_name}: the exact bytes");
        assert_eq!(
            std::fs::read_to_string(ws.join(".holdline/.gitignore"))?,
            "*\n"
        );
        let t = text(&r);
        let name = path.file_name().unwrap().to_str().unwrap();
        assert!(
            t.starts_with(&format!(
                "see this\nThe person attached 1 image: .holdline/images/{name} (absolute path {})",
                path.display()
            )),
            "{client_name}: {t}"
        );
        // Returned again (the agent shows it never saw it): the same file, written once.
        let again = call(
            &client,
            "wait_for_user_input",
            json!({"token": token, "message": "Look", "resume": old_resume, "timeoutSec": 1}),
        )
        .await?;
        assert_no_image_data(&again, client_name);
        assert_eq!(structured(&again)["reply"]["imageFiles"], files);
        assert_eq!(std::fs::read_dir(ws.join(".holdline/images"))?.count(), 1);
        client.cancel().await?;
    }
    Ok(())
}

#[tokio::test]
async fn an_images_only_reply_says_the_client_cannot_show_it_when_no_workspace_is_here()
-> anyhow::Result<()> {
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    // The default root, /home/dev/project one, is no folder on this machine.
    let mut o = BridgeOptions::for_hub(&hub);
    o.client_name = "cline";
    let client = start_bridge(o).await?;
    let token = init(&client, "Nowhere to save").await?;
    let args = json!({"token": token, "message": "Look"});
    let r = answered_with_an_image(&client, &hub, &token, args, "").await?;
    assert_no_image_data(&r, "cline");
    let t = text(&r);
    assert!(
        t.starts_with("The person attached 1 image that this client cannot show you; if it matters, ask the person to describe it."),
        "{t}"
    );
    assert!(structured(&r)["reply"].get("imageFiles").is_none());
    client.cancel().await?;
    Ok(())
}

#[tokio::test]
async fn a_client_that_shows_images_still_gets_the_block_and_no_files() -> anyhow::Result<()> {
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let workspace = TempDir::new()?;
    let root = format!("file://{}", workspace.path().canonicalize()?.display());
    let mut o = BridgeOptions::for_hub(&hub);
    o.client_name = "claude-code";
    o.root = Some(&root);
    let client = start_bridge(o).await?;
    let token = init(&client, "Blocks").await?;
    let args = json!({"token": token, "message": "Look"});
    let r = answered_with_an_image(&client, &hub, &token, args, "see").await?;
    let images: Vec<_> = r.content.iter().filter_map(|c| c.as_image()).collect();
    assert_eq!(images.len(), 1);
    assert_eq!(images[0].data, PNG_1PX);
    assert!(structured(&r)["reply"].get("imageFiles").is_none());
    assert!(!workspace.path().join(".holdline").exists());
    client.cancel().await?;
    Ok(())
}

#[tokio::test]
async fn progress_notifications_carry_the_clients_token_and_increase() -> anyhow::Result<()> {
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let client = start_bridge(BridgeOptions::for_hub(&hub)).await?;
    let token = init(&client, "Progress").await?;
    let handle = start_call(
        &client,
        "wait_for_user_input",
        json!({"token": token, "message": "Long one"}),
    )
    .await?;
    let progress_token: ProgressToken = handle.progress_token.clone();
    hub.wait_status(&token, "waiting").await?;
    // Polls are held 400 ms here; three renewals take about 1.2 s.
    let started = Instant::now();
    while client.service().progress.lock().unwrap().len() < 3 {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "no progress notifications"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    hub.reply(&token, "done waiting", json!([])).await?;
    let r = finish(handle).await?;
    assert!(text(&r).starts_with("done waiting"));
    let seen = client.service().progress.lock().unwrap().clone();
    assert!(seen.iter().all(|p| p.progress_token == progress_token));
    assert!(seen.windows(2).all(|w| w[1].progress > w[0].progress));
    assert!(seen[0].message.as_deref().unwrap_or("").contains("waiting"));
    client.cancel().await?;
    Ok(())
}

#[tokio::test]
async fn client_cancellation_cancels_the_wait_at_the_hub() -> anyhow::Result<()> {
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let client = start_bridge(BridgeOptions::for_hub(&hub)).await?;
    let token = init(&client, "Cancel me").await?;
    let handle = start_call(
        &client,
        "wait_for_user_input",
        json!({"token": token, "message": "Waiting..."}),
    )
    .await?;
    hub.wait_status(&token, "waiting").await?;
    handle.cancel(Some("user pressed stop".into())).await?;
    // Well inside one poll hold: the bridge cancels at once, not at the next renewal.
    hub.wait_status(&token, "holding").await?;
    // A reply sent now is queued for the next wait, not lost.
    let queued = hub.reply(&token, "later", json!([])).await?;
    assert_eq!(queued["queued"], true);
    let r = call(
        &client,
        "wait_for_user_input",
        json!({"token": token, "message": "Back"}),
    )
    .await?;
    assert!(text(&r).starts_with("later"));
    client.cancel().await?;
    Ok(())
}

#[tokio::test]
async fn timeout_sec_gives_no_reply_yet_and_the_recall_does_not_duplicate() -> anyhow::Result<()> {
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let client = start_bridge(BridgeOptions::for_hub(&hub)).await?;
    let token = init(&client, "Short client limit").await?;
    let msg = "Built it; review please";
    let started = Instant::now();
    let r = call(
        &client,
        "wait_for_user_input",
        json!({"token": token, "message": msg, "timeoutSec": 2}),
    )
    .await?;
    assert!(started.elapsed() < Duration::from_secs(4));
    assert_ne!(r.is_error, Some(true), "a normal result, never an error");
    assert!(text(&r).contains("No reply yet"), "{}", text(&r));
    assert!(text(&r).contains(&token));
    assert_eq!(structured(&r)["status"], "no_reply_yet");
    // The session still shows the agent waiting.
    hub.wait_status(&token, "waiting").await?;

    let handle = start_call(
        &client,
        "wait_for_user_input",
        json!({"token": token, "message": msg, "timeoutSec": 30}),
    )
    .await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    hub.reply(&token, "Looks good", json!([])).await?;
    let r = finish(handle).await?;
    assert!(text(&r).starts_with("Looks good"));
    let s = hub.wait_status(&token, "holding").await?;
    assert_eq!(
        count_messages(&s, msg),
        1,
        "the re-call did not add the message again"
    );
    client.cancel().await?;
    Ok(())
}

#[tokio::test]
async fn a_call_the_client_abandoned_does_not_take_the_reply() -> anyhow::Result<()> {
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let client = start_bridge(BridgeOptions::for_hub(&hub)).await?;
    let token = init(&client, "Impatient client").await?;
    let wait = json!({"token": token, "message": "Same message"});
    // The client gives up on the first call without telling the bridge, then calls again.
    let abandoned = start_call(&client, "wait_for_user_input", wait.clone()).await?;
    hub.wait_status(&token, "waiting").await?;
    let again = start_call(&client, "wait_for_user_input", wait).await?;
    let r = finish(abandoned).await?;
    assert_ne!(r.is_error, Some(true));
    assert!(text(&r).contains("took over"), "{}", text(&r));
    hub.reply(&token, "for the live call", json!([])).await?;
    let r = finish(again).await?;
    assert!(text(&r).starts_with("for the live call"), "{}", text(&r));
    let s = hub.wait_status(&token, "holding").await?;
    assert_eq!(count_messages(&s, "Same message"), 1);
    client.cancel().await?;
    Ok(())
}

#[tokio::test]
async fn max_wait_env_applies_when_no_timeout_sec() -> anyhow::Result<()> {
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let mut o = BridgeOptions::for_hub(&hub);
    o.extra_env.push(("HOLDLINE_MAX_WAIT_SEC", "1".into()));
    let client = start_bridge(o).await?;
    let token = init(&client, "Env limit").await?;
    let r = call(
        &client,
        "wait_for_user_input",
        json!({"token": token, "message": "x"}),
    )
    .await?;
    assert_eq!(structured(&r)["status"], "no_reply_yet");
    client.cancel().await?;
    Ok(())
}

#[tokio::test]
async fn hub_killed_mid_wait_and_restarted_delivers_the_reply_once() -> anyhow::Result<()> {
    let home = TempDir::new()?;
    let mut hub = TestHub::start(home.path()).await?;
    let client = start_bridge(BridgeOptions::for_hub(&hub)).await?;
    let token = init(&client, "Crashy hub").await?;
    let handle = start_call(
        &client,
        "wait_for_user_input",
        json!({"token": token, "message": "Before the crash", "timeoutSec": 60}),
    )
    .await?;
    hub.wait_status(&token, "waiting").await?;
    let addr = hub.addr.clone();
    hub.kill();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let hub = TestHub::start_on(home.path(), &addr).await?;
    hub.wait_status(&token, "waiting").await?;
    let sent = hub.reply(&token, "After the crash", json!([])).await?;
    let r = finish(handle).await?;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    assert!(text(&r).starts_with("After the crash"), "{}", text(&r));
    assert_eq!(structured(&r)["reply"]["id"], sent["replyId"]);

    // The reply is consumed: the next wait does not get it again.
    hub.wait_status(&token, "holding").await?;
    let r = call(
        &client,
        "wait_for_user_input",
        json!({"token": token, "message": "Next step", "timeoutSec": 2}),
    )
    .await?;
    assert_eq!(structured(&r)["status"], "no_reply_yet", "{}", text(&r));
    let s = hub.session(&token).await?;
    assert_eq!(count_messages(&s, "Before the crash"), 1);
    assert_eq!(count_messages(&s, "After the crash"), 1);
    client.cancel().await?;
    Ok(())
}

#[tokio::test]
async fn dead_primary_falls_back_to_the_next_hub() -> anyhow::Result<()> {
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let mut o = BridgeOptions::for_hub(&hub);
    o.hubs = format!("http://127.0.0.1:{},{}", free_port(), hub.url());
    let client = start_bridge(o).await?;
    let token = init(&client, "Fallback").await?;
    let handle = start_call(
        &client,
        "wait_for_user_input",
        json!({"token": token, "message": "via fallback"}),
    )
    .await?;
    hub.wait_status(&token, "waiting").await?;
    hub.reply(&token, "got it", json!([])).await?;
    assert!(text(&finish(handle).await?).starts_with("got it"));
    client.cancel().await?;
    Ok(())
}

/// Kills the hub a bridge auto-started on `port`.
fn kill_autostarted_hub(port: u16) {
    if let Some(pid) = hub_pid_with(&format!("127.0.0.1:{port}")) {
        let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
    }
}

#[tokio::test]
async fn a_local_hub_is_started_when_none_answers() -> anyhow::Result<()> {
    let home = TempDir::new()?;
    let port = free_port();
    let client = start_bridge(BridgeOptions {
        hubs: format!("http://127.0.0.1:{port}"),
        secret: None,
        home: home.path(),
        host: "test-host",
        client_name: "holdline-test",
        root: None,
        autostart: true,
        extra_env: vec![],
    })
    .await?;
    let r = call(
        &client,
        "init_conversation",
        json!({"cursorTitle": "Auto", "workspace": "/w"}),
    )
    .await;
    kill_autostarted_hub(port);
    let r = r?;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    assert!(structured(&r)["token"].as_str().unwrap().starts_with("ct_"));
    assert!(
        home.path().join("secret").is_file(),
        "the hub made its secret"
    );
    client.cancel().await?;
    Ok(())
}

#[tokio::test]
async fn a_token_of_another_chat_is_binding_rejected() -> anyhow::Result<()> {
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let client = start_bridge(BridgeOptions::for_hub(&hub)).await?;
    let token = init(&client, "Chat A").await?;
    let r = call(
        &client,
        "select_conversation",
        json!({"token": token, "cursorTitle": "Chat B"}),
    )
    .await?;
    assert_eq!(r.is_error, Some(true));
    assert!(text(&r).contains("BINDING_REJECTED"), "{}", text(&r));
    assert!(text(&r).contains("init_conversation"));
    let ok = call(
        &client,
        "select_conversation",
        json!({"token": token, "cursorTitle": "Chat A"}),
    )
    .await?;
    assert_ne!(ok.is_error, Some(true), "{}", text(&ok));
    client.cancel().await?;
    Ok(())
}

#[tokio::test]
async fn merging_a_waiting_source_tells_its_wait_the_new_token() -> anyhow::Result<()> {
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let client = start_bridge(BridgeOptions::for_hub(&hub)).await?;
    let from = init(&client, "Old chat").await?;
    let to = init(&client, "New chat").await?;
    assert_ne!(from, to);
    let handle = start_call(
        &client,
        "wait_for_user_input",
        json!({"token": from, "message": "old work"}),
    )
    .await?;
    hub.wait_status(&from, "waiting").await?;
    let m = call(
        &client,
        "merge_conversation",
        json!({"fromToken": from, "toToken": to, "cursorTitle": "New chat"}),
    )
    .await?;
    assert_ne!(m.is_error, Some(true), "{}", text(&m));
    assert_eq!(structured(&m)["token"], to.as_str());
    let r = finish(handle).await?;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    assert!(
        text(&r).contains(&format!("Use token {to}")),
        "{}",
        text(&r)
    );
    assert_eq!(structured(&r)["token"], to.as_str());
    let s = hub.session(&to).await?;
    assert_eq!(count_messages(&s, "old work"), 1);
    client.cancel().await?;
    Ok(())
}

#[tokio::test]
async fn bad_input_gives_one_sentence_tool_errors() -> anyhow::Result<()> {
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let client = start_bridge(BridgeOptions::for_hub(&hub)).await?;

    let r = call(&client, "wait_for_user_input", json!({"token": 5})).await?;
    assert_eq!(r.is_error, Some(true));
    let r = call(&client, "init_conversation", json!({})).await?;
    assert_eq!(r.is_error, Some(true));
    assert!(text(&r).contains("cursorTitle"), "{}", text(&r));

    let unknown = "ct_0123456789abcdef0123456789abcdef";
    let r = call(
        &client,
        "wait_for_user_input",
        json!({"token": unknown, "message": "hi", "cursorTitle": "t"}),
    )
    .await?;
    assert_eq!(r.is_error, Some(true));
    assert!(text(&r).contains("init_conversation"), "{}", text(&r));

    let token = init(&client, "Archived").await?;
    hub.http
        .post(format!("{}/api/sessions/{token}/archive", hub.url()))
        .bearer_auth(&hub.secret)
        .send()
        .await?
        .error_for_status()?;
    let r = call(
        &client,
        "wait_for_user_input",
        json!({"token": token, "message": "hi"}),
    )
    .await?;
    assert_eq!(r.is_error, Some(true));
    assert!(text(&r).contains("SESSION_CLOSED"), "{}", text(&r));
    client.cancel().await?;

    let mut o = BridgeOptions::for_hub(&hub);
    o.secret = Some("not-the-secret");
    let wrong = start_bridge(o).await?;
    let r = call(&wrong, "init_conversation", json!({"cursorTitle": "x"})).await?;
    assert_eq!(r.is_error, Some(true));
    assert!(
        text(&r).contains("401") && text(&r).contains("HOLDLINE_SECRET"),
        "{}",
        text(&r)
    );
    wrong.cancel().await?;

    let mut o = BridgeOptions::for_hub(&hub);
    o.hubs = format!("http://127.0.0.1:{}", free_port());
    let nowhere = start_bridge(o).await?;
    let started = Instant::now();
    let r = call(&nowhere, "init_conversation", json!({"cursorTitle": "x"})).await?;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(r.is_error, Some(true));
    assert!(
        text(&r).contains("No holdline hub answered"),
        "{}",
        text(&r)
    );
    nowhere.cancel().await?;
    Ok(())
}

/// Raw stdio: garbage gets a JSON-RPC error or is ignored, the bridge keeps answering, and
/// closing stdin cancels the open wait and ends the process.
#[tokio::test]
async fn garbage_is_survived_and_stdin_eof_cancels_open_waits() -> anyhow::Result<()> {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let mut child = tokio::process::Command::new(bridge_bin())
        .env("HOLDLINE_HUB", hub.url())
        .env("HOLDLINE_SECRET", &hub.secret)
        .env("HOLDLINE_HOME", home.path())
        .env("HOLDLINE_HOST_ID", "raw-host")
        .env("HOLDLINE_NO_AUTOSTART", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()?;
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut send = async |v: &str| -> anyhow::Result<()> {
        stdin.write_all(v.as_bytes()).await?;
        stdin.write_all(b"\n").await?;
        stdin.flush().await?;
        Ok(())
    };
    send(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#).await?;
    let first: Value = serde_json::from_str(&lines.next_line().await?.unwrap())?;
    assert_eq!(first["result"]["serverInfo"]["name"], "holdline-mcp");
    send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await?;
    // Unparsable bytes are skipped; JSON that is not JSON-RPC and an unknown method get
    // JSON-RPC errors; none of it stops the bridge.
    send("this is not json {").await?;
    send(r#"{"foo": 1}"#).await?;
    send(r#"{"jsonrpc":"2.0","id":9,"method":"no/such/method"}"#).await?;
    send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"init_conversation","arguments":{"cursorTitle":"Raw","workspace":"/raw"}}}"#).await?;
    let (mut token, mut errors) = (None, Vec::new());
    while token.is_none() || errors.len() < 2 {
        let line = lines.next_line().await?.context("bridge closed stdout")?;
        let v: Value = serde_json::from_str(&line)?;
        if v["id"] == 2 {
            token = v["result"]["structuredContent"]["token"]
                .as_str()
                .map(str::to_owned);
        } else if let Some(code) = v["error"]["code"].as_i64() {
            errors.push((v["id"].clone(), code));
        }
    }
    assert!(errors.contains(&(Value::Null, -32600)), "{errors:?}");
    assert!(errors.contains(&(json!(9), -32601)), "{errors:?}");
    let token = token.unwrap();
    send(&format!(r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"wait_for_user_input","arguments":{{"token":"{token}","message":"hold"}}}}}}"#)).await?;
    hub.wait_status(&token, "waiting").await?;
    drop(stdin);
    let status = tokio::time::timeout(Duration::from_secs(3), child.wait()).await??;
    assert!(status.success(), "bridge exited with {status}");
    hub.wait_status(&token, "holding").await?;
    Ok(())
}

/// Node-based clients (most IDEs) give a child sockets, not pipes, for stdin and
/// stdout; the bridge serves those on its own thread too, and a wait and a reply go
/// through them.
#[tokio::test]
async fn a_client_that_gives_sockets_for_stdio_is_served() -> anyhow::Result<()> {
    use std::os::fd::OwnedFd;
    use std::os::unix::net::UnixStream;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let (to_bridge, bridge_in) = UnixStream::pair()?;
    let (from_bridge, bridge_out) = UnixStream::pair()?;
    let mut child = tokio::process::Command::new(bridge_bin())
        .env("HOLDLINE_HUB", hub.url())
        .env("HOLDLINE_SECRET", &hub.secret)
        .env("HOLDLINE_HOME", home.path())
        .env("HOLDLINE_HOST_ID", "socket-host")
        .env("HOLDLINE_NO_AUTOSTART", "1")
        .stdin(Stdio::from(OwnedFd::from(bridge_in)))
        .stdout(Stdio::from(OwnedFd::from(bridge_out)))
        .stderr(Stdio::inherit())
        .spawn()?;
    for s in [&to_bridge, &from_bridge] {
        s.set_nonblocking(true)?;
    }
    let mut stdin = tokio::net::UnixStream::from_std(to_bridge)?;
    let mut lines = BufReader::new(tokio::net::UnixStream::from_std(from_bridge)?).lines();
    let mut next = async || -> anyhow::Result<Value> {
        let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
            .await??
            .context("bridge closed stdout")?;
        Ok(serde_json::from_str(&line)?)
    };
    stdin.write_all(concat!(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"node-like","version":"1"}}}"#, "\n",
    ).as_bytes()).await?;
    assert_eq!(
        next().await?["result"]["serverInfo"]["name"],
        "holdline-mcp"
    );
    stdin.write_all(concat!(
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#, "\n",
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"init_conversation","arguments":{"cursorTitle":"Sockets","workspace":"/sock"}}}"#, "\n",
    ).as_bytes()).await?;
    let init = next().await?;
    let token = init["result"]["structuredContent"]["token"]
        .as_str()
        .with_context(|| format!("no token in {init}"))?
        .to_owned();
    stdin.write_all(format!(
        "{}\n",
        json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"wait_for_user_input","arguments":{"token":token,"message":"over sockets"}}})
    ).as_bytes()).await?;
    hub.wait_status(&token, "waiting").await?;
    hub.reply(&token, "answered through a socket", json!([]))
        .await?;
    let result = next().await?;
    assert_eq!(result["id"], 3, "{result}");
    assert!(
        result.to_string().contains("answered through a socket"),
        "{result}"
    );
    drop(stdin);
    let status = tokio::time::timeout(Duration::from_secs(5), child.wait()).await??;
    assert!(status.success(), "bridge exited with {status}");
    Ok(())
}

/// One tap in the panel: the offered options reach the hub with the agent's message, the
/// pick comes back said in the text and listed in `structuredContent` — over stdio and over
/// the hub's own `/mcp`, which run the same tools; options outside the rule are a tool error
/// and nothing is stored.
#[tokio::test]
async fn a_pick_among_offered_options_reaches_the_agent_over_stdio_and_mcp() -> anyhow::Result<()> {
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let mut o = BridgeOptions::for_hub(&hub);
    o.extra_env
        .push(("HOLDLINE_HOST_NAME", "desk-7".to_owned()));
    let stdio = start_bridge(o).await?;
    let key = make_key(&hub, "buildbox").await;
    let remote = start_remote(&hub, &key, "holdline-test").await?;
    for (client, machine) in [(&stdio, "desk-7"), (&remote, "buildbox")] {
        let token = init(client, "Storage").await?;
        let handle = start_call(
            client,
            "wait_for_user_input",
            json!({"token": token, "message": "Which databases?", "multiSelect": true,
                   "options": [{"label": "Postgres", "description": "the server"},
                               {"label": "SQLite"}, {"label": "MySQL"}]}),
        )
        .await?;
        let s = hub.wait_status(&token, "waiting").await?;
        assert_eq!(s["machine"], machine, "{s}");
        let question = s["messages"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(question["options"][0]["description"], "the server", "{s}");
        assert_eq!(question["multiSelect"], true, "{s}");
        let answered = hub
            .http
            .post(format!("{}/api/reply", hub.url()))
            .bearer_auth(&hub.secret)
            .json(&json!({"token": token, "choices": [2, 0], "text": "MySQL only for the legacy app"}))
            .send()
            .await?;
        assert!(answered.status().is_success(), "{}", answered.text().await?);
        let r = finish(handle).await?;
        assert_ne!(r.is_error, Some(true), "{}", text(&r));
        assert!(
            text(&r).starts_with(
                "The person chose: \"Postgres\", \"MySQL\".\nThey added: MySQL only for the legacy app"
            ),
            "{}",
            text(&r)
        );
        assert_eq!(
            structured(&r)["reply"]["choices"],
            json!([{"index": 0, "label": "Postgres"}, {"index": 2, "label": "MySQL"}])
        );

        let r = call(
            client,
            "wait_for_user_input",
            json!({"token": token, "message": "Which one?",
                   "options": [{"label": "same"}, {"label": "same"}]}),
        )
        .await?;
        assert_eq!(r.is_error, Some(true), "{}", text(&r));
        assert!(text(&r).contains("same label"), "{}", text(&r));
        let s = hub.session(&token).await?;
        assert_eq!(count_messages(&s, "Which one?"), 0, "{s}");
    }
    stdio.cancel().await?;
    remote.cancel().await?;
    Ok(())
}

/// Clients keep the bridge's stderr (Claude Code's debug log labels every line of it
/// `[ERROR]`): a normal run (start, init, a wait with renewals, a reply, a second wait
/// cancelled when stdin closes) writes nothing there at the default level, and
/// `HOLDLINE_LOG=info` still shows its life.
#[tokio::test]
async fn a_normal_run_writes_nothing_to_stderr_unless_holdline_log_asks() -> anyhow::Result<()> {
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let quiet = normal_stdio_run(&hub, None).await?;
    assert_eq!(quiet, "", "a normal run wrote to stderr");
    let told = normal_stdio_run(&hub, Some("info")).await?;
    for line in [
        "holdline-mcp serving on stdio",
        "client closed the connection",
    ] {
        assert!(
            told.contains(line),
            "HOLDLINE_LOG=info: no '{line}' in {told}"
        );
    }
    Ok(())
}

/// Drives the real bridge over raw stdio through a normal session; answers its stderr.
async fn normal_stdio_run(hub: &TestHub, log: Option<&str>) -> anyhow::Result<String> {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
    let mut cmd = tokio::process::Command::new(bridge_bin());
    cmd.env("HOLDLINE_HUB", hub.url())
        .env("HOLDLINE_SECRET", &hub.secret)
        .env("HOLDLINE_HOME", &hub.home)
        .env("HOLDLINE_HOST_ID", "quiet-host")
        .env("HOLDLINE_NO_AUTOSTART", "1")
        .env("HOLDLINE_POLL_MS", "300")
        .env_remove("HOLDLINE_LOG")
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(filter) = log {
        cmd.env("HOLDLINE_LOG", filter);
    }
    let mut child = cmd.spawn()?;
    let mut stdin = child.stdin.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut send = async |v: String| -> anyhow::Result<()> {
        stdin.write_all(v.as_bytes()).await?;
        stdin.write_all(b"\n").await?;
        stdin.flush().await?;
        Ok(())
    };
    let mut answer = async |id: i64| -> anyhow::Result<Value> {
        loop {
            let line = lines.next_line().await?.context("bridge closed stdout")?;
            let v: Value = serde_json::from_str(&line)?;
            if v["id"] == id {
                return Ok(v);
            }
        }
    };
    send(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"quiet","version":"1"}}}"#.into()).await?;
    answer(1).await?;
    send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.into()).await?;
    send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"init_conversation","arguments":{"cursorTitle":"Quiet","workspace":"/quiet"}}}"#.into()).await?;
    let init = answer(2).await?;
    let token = init["result"]["structuredContent"]["token"]
        .as_str()
        .context("no token")?
        .to_owned();
    let wait = |id: i64| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"wait_for_user_input","arguments":{{"token":"{token}","message":"step {id} done"}}}}}}"#
        )
    };
    send(wait(3)).await?;
    hub.wait_status(&token, "waiting").await?;
    // A few renewals (300 ms polls) before the person answers.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    hub.reply(&token, "go on", json!([])).await?;
    let got = answer(3).await?;
    assert!(got["result"].to_string().contains("go on"), "{got}");
    send(wait(4)).await?;
    hub.wait_status(&token, "waiting").await?;
    // The client goes away: stdin closes, the bridge cancels the wait and ends.
    drop(stdin);
    let status = tokio::time::timeout(Duration::from_secs(5), child.wait()).await??;
    assert!(status.success(), "bridge exited with {status}");
    hub.wait_status(&token, "holding").await?;
    let mut said = String::new();
    stderr.read_to_string(&mut said).await?;
    Ok(said)
}
