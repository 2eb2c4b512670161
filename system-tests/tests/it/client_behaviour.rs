//! What the MCP clients people run do that an SDK test client does not, reproduced against
//! the real `holdline-mcp` binary and a real hub: stopping the server with a signal,
//! loop detectors that stop identical calls, calls abandoned without a cancel, clients that
//! show the model only `structuredContent`, notifications before `initialize`, a failing hub.

#![allow(deprecated)] // roots are deprecated for future protocols; IDEs still send them

use std::{
    process::Stdio,
    time::{Duration, Instant},
};

use crate::harness::*;
use anyhow::{Context, bail};
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};

/// The bridge as a plain child process spoken to with raw JSON-RPC lines, for what an
/// SDK client cannot do (signals, stray notifications).
struct RawBridge {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    lines: Lines<BufReader<tokio::process::ChildStdout>>,
}

impl RawBridge {
    fn spawn(hub: &TestHub) -> anyhow::Result<RawBridge> {
        let mut child = tokio::process::Command::new(bridge_bin())
            .env("HOLDLINE_HUB", hub.url())
            .env("HOLDLINE_SECRET", &hub.secret)
            .env("HOLDLINE_HOME", &hub.home)
            .env("HOLDLINE_HOST_ID", "raw-host")
            .env("HOLDLINE_NO_AUTOSTART", "1")
            .env("HOLDLINE_POLL_MS", "400")
            .env("HOLDLINE_LOG", "holdline_mcp=debug")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()?;
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Ok(RawBridge {
            child,
            stdin,
            lines,
        })
    }

    async fn send(&mut self, v: Value) -> anyhow::Result<()> {
        self.stdin.write_all(v.to_string().as_bytes()).await?;
        self.stdin.write_all(b"\n").await?;
        self.stdin.flush().await?;
        Ok(())
    }

    /// The next answer with `id`, skipping notifications.
    async fn answer(&mut self, id: i64) -> anyhow::Result<Value> {
        loop {
            let line = tokio::time::timeout(Duration::from_secs(20), self.lines.next_line())
                .await
                .context("no answer within 20 s")??
                .context("bridge closed stdout")?;
            let v: Value = serde_json::from_str(&line)?;
            if v["id"] == id {
                return Ok(v);
            }
        }
    }

    async fn initialize(&mut self) -> anyhow::Result<()> {
        self.send(
            json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
            "protocolVersion":"2025-06-18","capabilities":{},
            "clientInfo":{"name":"raw","version":"1"}}}),
        )
        .await?;
        let first = self.answer(1).await?;
        assert_eq!(first["result"]["serverInfo"]["name"], "holdline-mcp");
        self.send(json!({"jsonrpc":"2.0","method":"notifications/initialized"}))
            .await
    }

    async fn call(&mut self, id: i64, tool: &str, arguments: Value) -> anyhow::Result<()> {
        self.send(json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
            "params":{"name":tool,"arguments":arguments}}))
            .await
    }

    fn signal(&self, signal: &str) {
        let pid = self.child.id().expect("running");
        let status = std::process::Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(pid.to_string())
            .status()
            .unwrap();
        assert!(status.success());
    }
}

#[tokio::test]
async fn a_signal_cancels_the_open_wait_at_the_hub_and_the_bridge_exits() -> anyhow::Result<()> {
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    // Claude Code stops stdio servers with SIGINT, opencode and Copilot CLI with SIGTERM,
    // a closed terminal sends SIGHUP.
    for signal in ["INT", "TERM", "HUP"] {
        let mut bridge = RawBridge::spawn(&hub)?;
        bridge.initialize().await?;
        bridge
            .call(
                2,
                "init_conversation",
                json!({"cursorTitle": format!("Stopped by SIG{signal}"), "workspace": "/raw"}),
            )
            .await?;
        let token = bridge.answer(2).await?["result"]["structuredContent"]["token"]
            .as_str()
            .context("token")?
            .to_owned();
        bridge
            .call(
                3,
                "wait_for_user_input",
                json!({"token": token, "message": "hold on"}),
            )
            .await?;
        hub.wait_status(&token, "waiting").await?;
        bridge.signal(signal);
        let exited = tokio::time::timeout(Duration::from_secs(6), bridge.child.wait()).await;
        assert!(exited.is_ok(), "the bridge did not exit on SIG{signal}");
        // Cancelled at the hub before the exit: no ghost, nothing to wait for.
        let s = hub.session(&token).await?;
        assert_eq!(s["status"], "holding", "after SIG{signal}: {s}");
        let r = hub.reply(&token, "later", json!([])).await?;
        assert_eq!(r["queued"], true, "after SIG{signal}");
    }
    Ok(())
}

#[tokio::test]
async fn a_notification_before_initialize_is_ignored() -> anyhow::Result<()> {
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let mut bridge = RawBridge::spawn(&hub)?;
    bridge
        .send(json!({"jsonrpc":"2.0","method":"notifications/initialized"}))
        .await?;
    bridge
        .send(json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}))
        .await?;
    bridge.initialize().await?;
    bridge
        .send(json!({"jsonrpc":"2.0","id":2,"method":"tools/list"}))
        .await?;
    let tools = bridge.answer(2).await?;
    assert_eq!(tools["result"]["tools"].as_array().map(Vec::len), Some(4));
    Ok(())
}

#[tokio::test]
async fn recalls_differ_reattach_and_store_the_message_once() -> anyhow::Result<()> {
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let mut o = BridgeOptions::for_hub(&hub);
    o.extra_env.push(("HOLDLINE_MAX_WAIT_SEC", "1".into()));
    let client = start_bridge(o).await?;
    let token = init(&client, "Loop detector").await?;
    let mut resume: Option<String> = None;
    let mut seen = Vec::new();
    let mut wait_ids = Vec::new();
    for _ in 0..6 {
        let mut args = json!({"token": token, "message": "Step done; shall I go on?"});
        if let Some(r) = &resume {
            args["resume"] = json!(r);
        }
        seen.push(args.to_string());
        let r = call(&client, "wait_for_user_input", args).await?;
        assert_ne!(r.is_error, Some(true), "{}", text(&r));
        let s = structured(&r);
        assert_eq!(s["status"], "no_reply_yet");
        // What a client that shows only structuredContent gives the model is enough.
        let instruction = s["instruction"].as_str().unwrap();
        assert!(instruction.contains("call wait_for_user_input again now"));
        assert!(instruction.contains(&token));
        resume = Some(resume_of(&r));
        wait_ids.push(hub.session(&token).await?["status"].clone());
    }
    // No two consecutive calls identical (loop detectors stop at the fifth).
    for pair in seen.windows(2) {
        assert_ne!(pair[0], pair[1]);
    }
    let s = hub.session(&token).await?;
    assert_eq!(count_messages(&s, "Step done; shall I go on?"), 1, "{s}");
    hub.reply(&token, "yes, go on", json!([])).await?;
    let r = call(
        &client,
        "wait_for_user_input",
        json!({"token": token, "message": "Step done; shall I go on?", "resume": resume}),
    )
    .await?;
    assert_eq!(structured(&r)["reply"]["text"], "yes, go on");
    assert!(
        structured(&r)["instruction"]
            .as_str()
            .unwrap()
            .contains("wait_for_user_input")
    );
    client.cancel().await?;
    Ok(())
}

#[tokio::test]
async fn a_reply_written_to_an_abandoned_call_is_returned_again() -> anyhow::Result<()> {
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let client = start_bridge(BridgeOptions::for_hub(&hub)).await?;
    let token = init(&client, "Abandoning client").await?;
    let first = call(
        &client,
        "wait_for_user_input",
        json!({"token": token, "message": "Working", "timeoutSec": 1}),
    )
    .await?;
    let old_resume = resume_of(&first);
    // The client gives up on this call without a cancel (Gemini's Esc, Cline's timeout):
    // the bridge writes the reply to a request nobody reads.
    let abandoned = start_call(
        &client,
        "wait_for_user_input",
        json!({"token": token, "message": "Working", "resume": old_resume}),
    )
    .await?;
    hub.wait_status(&token, "waiting").await?;
    hub.reply(&token, "the answer you missed", json!([]))
        .await?;
    let lost = finish(abandoned).await?;
    let reply_resume = resume_of(&lost);
    hub.wait_status(&token, "holding").await?;
    // The agent calls again with the resume of the last result it did see.
    let again = call(
        &client,
        "wait_for_user_input",
        json!({"token": token, "message": "Working", "resume": old_resume, "timeoutSec": 1}),
    )
    .await?;
    assert_eq!(structured(&again)["reply"]["text"], "the answer you missed");
    assert!(text(&again).starts_with("the answer you missed"));
    assert_eq!(resume_of(&again), reply_resume);
    // Having seen it, the agent reports its next step: a normal new wait.
    let next = call(
        &client,
        "wait_for_user_input",
        json!({"token": token, "message": "Did it", "resume": reply_resume, "timeoutSec": 1}),
    )
    .await?;
    assert_eq!(structured(&next)["status"], "no_reply_yet");
    let s = hub.session(&token).await?;
    assert_eq!(count_messages(&s, "the answer you missed"), 1);
    assert_eq!(count_messages(&s, "Did it"), 1);
    client.cancel().await?;
    Ok(())
}

#[tokio::test]
async fn images_reach_a_client_that_shows_the_model_only_structured_content() -> anyhow::Result<()>
{
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let image = json!([{"mimeType": "image/png", "data": PNG_1PX}]);
    for (client_name, structured_expected) in [("codex-mcp-client", false), ("claude-code", true)] {
        let mut o = BridgeOptions::for_hub(&hub);
        o.client_name = client_name;
        let client = start_bridge(o).await?;
        let token = init(&client, &format!("Images for {client_name}")).await?;
        let handle = start_call(
            &client,
            "wait_for_user_input",
            json!({"token": token, "message": "Look"}),
        )
        .await?;
        hub.wait_status(&token, "waiting").await?;
        hub.reply(&token, "see this", image.clone()).await?;
        let r = finish(handle).await?;
        assert!(
            r.content.iter().any(|c| c.as_image().is_some()),
            "{client_name}: no image block"
        );
        // Codex drops images when structuredContent is present.
        assert_eq!(
            r.structured_content.is_some(),
            structured_expected,
            "{client_name}"
        );
        assert!(text(&r).contains("wait_for_user_input"));
        client.cancel().await?;
    }
    Ok(())
}

#[tokio::test]
async fn an_oversized_message_answers_too_large_not_no_reply_yet() -> anyhow::Result<()> {
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let client = start_bridge(BridgeOptions::for_hub(&hub)).await?;
    let token = init(&client, "Verbose agent").await?;
    let r = call(
        &client,
        "wait_for_user_input",
        json!({"token": token, "message": "x".repeat(8 * 1024 * 1024)}),
    )
    .await?;
    assert_eq!(r.is_error, Some(true));
    assert_eq!(structured(&r)["error"]["code"], "TOO_LARGE", "{}", text(&r));
    assert!(!text(&r).contains("No reply yet"));
    assert_eq!(hub.session(&token).await?["status"], "holding");
    client.cancel().await?;
    Ok(())
}

#[tokio::test]
async fn a_session_bound_with_an_explicit_workspace_survives_a_bridge_restart() -> anyhow::Result<()>
{
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let first = start_bridge(BridgeOptions::for_hub(&hub)).await?;
    let r = call(
        &first,
        "init_conversation",
        json!({"cursorTitle": "Explicit", "workspace": "/somewhere/else"}),
    )
    .await?;
    let token = structured(&r)["token"].as_str().unwrap().to_owned();
    first.cancel().await?;
    // A new bridge process (the IDE restarted it) whose roots name another folder.
    let second = start_bridge(BridgeOptions::for_hub(&hub)).await?;
    let r = call(
        &second,
        "wait_for_user_input",
        json!({"token": token, "message": "after restart", "cursorTitle": "Explicit",
               "timeoutSec": 1}),
    )
    .await?;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    assert_eq!(structured(&r)["status"], "no_reply_yet");
    second.cancel().await?;
    Ok(())
}

/// A fake hub on 127.0.0.1: each connection's first read (the request head and what body
/// came with it) goes to `answer`, which writes what that hub says. Its URL.
async fn fake_hub<F, Fut>(answer: F) -> anyhow::Result<String>
where
    F: Fn(tokio::net::TcpStream, String) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    use tokio::io::AsyncReadExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let answer = answer.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 64 * 1024];
                let n = socket.read(&mut buf).await.unwrap_or(0);
                let request = String::from_utf8_lossy(&buf[..n]).into_owned();
                answer(socket, request).await;
            });
        }
    });
    Ok(format!("http://{addr}"))
}

/// A whole HTTP/1.1 answer with a JSON body, closing the connection.
fn http_json(status: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// One `wait_for_user_input` call with a made-up token against a bridge for the hub at
/// `url`, limited to `timeout_sec`: its result and how long it took.
async fn wait_against(
    url: String,
    timeout_sec: u64,
) -> anyhow::Result<(rmcp::model::CallToolResult, Duration)> {
    let home = TempDir::new()?;
    let client = start_bridge(BridgeOptions::for_url(url, home.path())).await?;
    let started = Instant::now();
    let r = call(
        &client,
        "wait_for_user_input",
        json!({"token": "ct_00000000000000000000000000000000", "message": "m",
               "cursorTitle": "t", "workspace": "/w", "timeoutSec": timeout_sec}),
    )
    .await?;
    let took = started.elapsed();
    client.cancel().await?;
    Ok((r, took))
}

#[tokio::test]
async fn a_failing_hub_is_not_reported_as_the_person_not_answering() -> anyhow::Result<()> {
    // Every request answered 500.
    let url = fake_hub(|mut socket, _| async move {
        let answer = http_json(
            "500 Internal Server Error",
            r#"{"error":{"code":"INTERNAL","message":"disk on fire"}}"#,
        );
        let _ = socket.write_all(answer.as_bytes()).await;
    })
    .await?;
    let (r, took) = wait_against(url, 2).await?;
    assert!(took < Duration::from_secs(4));
    assert_eq!(r.is_error, Some(true));
    assert_eq!(structured(&r)["status"], "hub_unavailable", "{}", text(&r));
    assert!(!text(&r).contains("has not answered"), "{}", text(&r));
    assert!(text(&r).contains("500"), "{}", text(&r));
    Ok(())
}

#[tokio::test]
async fn a_full_attachment_quota_is_said_at_once_not_retried() -> anyhow::Result<()> {
    // Every request answered 507 ATTACHMENT_QUOTA, as a hub whose attachment space is full.
    let url = fake_hub(|mut socket, _| async move {
        let answer = http_json(
            "507 Insufficient Storage",
            r#"{"error":{"code":"ATTACHMENT_QUOTA","message":"this key's attachments would pass 200 MiB"}}"#,
        );
        let _ = socket.write_all(answer.as_bytes()).await;
    })
    .await?;
    let (r, took) = wait_against(url, 6).await?;
    assert!(took < Duration::from_secs(3), "retried for {took:?}");
    assert_eq!(r.is_error, Some(true));
    let said = text(&r);
    assert_eq!(
        structured(&r)["error"]["code"],
        "ATTACHMENT_QUOTA",
        "{said}"
    );
    for part in [
        "attachment space",
        "Nothing was sent",
        "without attachments",
        "holdline-hub attachments",
    ] {
        assert!(said.contains(part), "{part:?} not in: {said}");
    }
    Ok(())
}

#[tokio::test]
async fn tools_carry_annotations_output_schemas_and_portable_input_schemas() -> anyhow::Result<()> {
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let client = start_bridge(BridgeOptions::for_hub(&hub)).await?;
    let tools = client.list_all_tools().await?;
    let listed = serde_json::to_value(&tools)?;
    let text = listed.to_string();
    assert!(!text.contains("\"format\""), "{text}");
    assert!(!text.contains("\"null\""), "{text}");
    for tool in &tools {
        let a = tool.annotations.as_ref().context("annotations")?;
        assert!(
            a.title.is_some() && a.read_only_hint == Some(false),
            "{}",
            tool.name
        );
        if tool.name != "wait_for_user_input" {
            assert!(tool.output_schema.is_some(), "{}", tool.name);
        }
    }
    let wait = tools
        .iter()
        .find(|t| t.name == "wait_for_user_input")
        .context("wait tool")?;
    let props = &wait.input_schema["properties"];
    if props.get("resume").is_none() {
        bail!("wait_for_user_input takes no resume: {props:?}");
    }
    client.cancel().await?;
    Ok(())
}

#[tokio::test]
async fn a_line_over_the_limit_gets_an_error_answer_and_the_bridge_goes_on() -> anyhow::Result<()> {
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let mut bridge = RawBridge::spawn(&hub)?;
    bridge.initialize().await?;
    // The id last, as the MCP TypeScript SDK writes it.
    let huge = format!(
        "{{\"jsonrpc\":\"2.0\",\"method\":\"tools/call\",\"params\":{{\"name\":\"wait_for_user_input\",\"arguments\":{{\"token\":\"ct_x\",\"message\":\"{}\"}}}},\"id\":77}}",
        "m".repeat(17 * 1024 * 1024)
    );
    bridge.stdin.write_all(huge.as_bytes()).await?;
    bridge.stdin.write_all(b"\n").await?;
    bridge.stdin.flush().await?;
    let answer = bridge.answer(77).await?;
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("send a shorter one"), "{answer}");
    bridge
        .send(json!({"jsonrpc":"2.0","id":78,"method":"tools/list"}))
        .await?;
    assert!(bridge.answer(78).await?["result"]["tools"].is_array());
    Ok(())
}

#[tokio::test]
async fn the_first_wait_after_init_is_covered_and_a_garbled_resume_is_no_loop() -> anyhow::Result<()>
{
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let client = start_bridge(BridgeOptions::for_hub(&hub)).await?;
    let r = call(
        &client,
        "init_conversation",
        json!({"cursorTitle": "First wait"}),
    )
    .await?;
    let token = structured(&r)["token"].as_str().unwrap().to_owned();
    let init_resume = resume_of(&r);
    // The very first wait is abandoned with the reply written to it.
    let abandoned = start_call(
        &client,
        "wait_for_user_input",
        json!({"token": token, "message": "Starting", "resume": init_resume}),
    )
    .await?;
    hub.wait_status(&token, "waiting").await?;
    hub.reply(&token, "first answer", json!([])).await?;
    finish(abandoned).await?;
    hub.wait_status(&token, "holding").await?;
    // Passing init's resume again shows the agent never saw it: returned again, at most
    // three times while the agent keeps passing that old value.
    for _ in 0..3 {
        let again = call(
            &client,
            "wait_for_user_input",
            json!({"token": token, "message": "Starting", "resume": init_resume, "timeoutSec": 1}),
        )
        .await?;
        assert_eq!(structured(&again)["reply"]["text"], "first answer");
    }
    let fourth = call(
        &client,
        "wait_for_user_input",
        json!({"token": token, "message": "Starting", "resume": init_resume, "timeoutSec": 1}),
    )
    .await?;
    assert_eq!(
        structured(&fourth)["status"],
        "no_reply_yet",
        "{}",
        text(&fourth)
    );

    // A value this bridge never handed out (a garbled one) is taken as seen: no resend.
    let handle = start_call(
        &client,
        "wait_for_user_input",
        json!({"token": token, "message": "Next", "resume": resume_of(&fourth)}),
    )
    .await?;
    hub.wait_status(&token, "waiting").await?;
    hub.reply(&token, "second answer", json!([])).await?;
    finish(handle).await?;
    let garbled = call(
        &client,
        "wait_for_user_input",
        json!({"token": token, "message": "Next", "resume": "not-a-value-we-gave", "timeoutSec": 1}),
    )
    .await?;
    assert_eq!(
        structured(&garbled)["status"],
        "no_reply_yet",
        "{}",
        text(&garbled)
    );
    let s = hub.session(&token).await?;
    assert_eq!(count_messages(&s, "first answer"), 1);
    client.cancel().await?;
    Ok(())
}

#[tokio::test]
async fn a_stalled_hub_cannot_keep_a_wait_past_the_clients_limit() -> anyhow::Result<()> {
    // Every wait registered, then each poll's answer trickled in one byte a second.
    let url = fake_hub(|mut socket, request| async move {
        if request.contains("/api/wait/register") {
            let answer = http_json("200 OK", r#"{"waitId":"w_1","status":"waiting"}"#);
            let _ = socket.write_all(answer.as_bytes()).await;
            return;
        }
        let _ = socket
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 4000\r\n\r\n{")
            .await;
        for _ in 0..4000 {
            tokio::time::sleep(Duration::from_secs(1)).await;
            if socket.write_all(b" ").await.is_err() {
                return;
            }
        }
    })
    .await?;
    let (r, took) = wait_against(url, 3).await?;
    assert!(
        took < Duration::from_millis(3500),
        "answered after {took:?}"
    );
    assert_ne!(structured(&r)["status"], "replied", "{}", text(&r));
    Ok(())
}
