//! `holdline-mcp hook` — the bridge binary answering a client's lifecycle hook — against a
//! real hub: a `Stop` becomes the person's question, their reply continues the turn once
//! (`{"decision":"block"}`), "Let it finish" or an archive lets the turn end, a reply
//! whose hook was killed reaches the next hook, a bad payload or a missing hub lets the
//! client go on with one line on stderr, and two agent keys never share a session; Cursor's
//! `stop` gets the reply as its `followup_message`.

use std::{path::Path, process::Stdio, time::Duration};

use anyhow::Context;
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::io::AsyncWriteExt;

use crate::harness::*;
use crate::hook_harness::*;

#[tokio::test]
async fn a_stop_asks_the_person_and_their_reply_continues_the_turn_once() -> anyhow::Result<()> {
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let env = HookEnv::secret(&hub);
    let thread = "claude-code:sess-one";

    let hook = spawn_hook(
        &env,
        "claude-code",
        &stop_payload(
            "sess-one",
            "/home/dev/app",
            Some("I refactored the parser."),
        ),
    )
    .await?;
    let token = waiting_tokens(&hub, thread, 1).await?.remove(0);
    let question = last_question(&hub, &token).await?;
    assert_eq!(question["content"], "I refactored the parser.");
    assert_eq!(question["options"][0]["label"], "Let it finish");
    assert_eq!(question["origin"], "stopped", "{question}");
    assert_eq!(hub.session(&token).await?["workspace"], "/home/dev/app");

    hub.reply(&token, "Now add tests for it", json!([])).await?;
    let out = finished(hook).await?;
    let reason = block_reason(&out);
    assert!(reason.contains("Now add tests for it"), "{reason}");
    assert!(reason.to_lowercase().contains("continue"), "{reason}");
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));

    // Once: the next stop of the same chat reaches the same session and waits for a new
    // answer; "Let it finish" then lets the turn end.
    let hook = spawn_hook(
        &env,
        "claude-code",
        &stop_payload("sess-one", "/home/dev/app", Some("Tests added.")),
    )
    .await?;
    let again = waiting_tokens(&hub, thread, 1).await?.remove(0);
    assert_eq!(again, token, "the same chat reaches the same session");
    assert_eq!(
        last_question(&hub, &token).await?["content"],
        "Tests added."
    );
    pick(&hub, &token, 0).await?;
    lets_it_end(&finished(hook).await?);
    let s = hub.session(&token).await?;
    assert_eq!(s["queuedReplies"], 0, "the pick was consumed: {s}");
    Ok(())
}

#[tokio::test]
async fn the_question_comes_from_the_transcript_and_an_archive_lets_the_turn_end()
-> anyhow::Result<()> {
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let env = HookEnv::secret(&hub);
    let transcript = home.path().join("transcript.jsonl");
    let lines = [
        json!({"type": "user", "message": {"role": "user", "content": "Fix the bug"}}),
        json!({"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "text", "text": "Looking at it."}]}}),
        json!({"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "tool_use", "name": "Edit"}, {"type": "text", "text": "Fixed: the loop was off by one."}]}}),
        json!({"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "content": "ok"}]}}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&transcript, text)?;
    let mut payload: Value = serde_json::from_str(&stop_payload("sess-two", "/w", None))?;
    payload["transcript_path"] = json!(transcript);
    payload["stop_hook_active"] = json!(true);

    let hook = spawn_hook(&env, "claude-code", &payload.to_string()).await?;
    let token = waiting_tokens(&hub, "claude-code:sess-two", 1)
        .await?
        .remove(0);
    assert_eq!(
        last_question(&hub, &token).await?["content"],
        "Fixed: the loop was off by one."
    );
    hub.http
        .post(format!("{}/api/sessions/{token}/archive", hub.url()))
        .bearer_auth(&hub.secret)
        .send()
        .await?
        .error_for_status()?;
    lets_it_end(&finished(hook).await?);
    Ok(())
}

#[tokio::test]
async fn a_reply_to_a_killed_hook_reaches_the_next_hook_at_once() -> anyhow::Result<()> {
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let env = HookEnv::secret(&hub);
    let codex_stop = |turn: &str, last: &str| {
        json!({
            "session_id": "019a-codex", "turn_id": turn, "transcript_path": null,
            "cwd": "/home/dev/svc", "model": "gpt", "permission_mode": "default",
            "hook_event_name": "Stop", "stop_hook_active": false,
            "last_assistant_message": last,
        })
        .to_string()
    };
    let mut hook = spawn_hook(&env, "codex", &codex_stop("t1", "Deployed to staging.")).await?;
    let token = waiting_tokens(&hub, "codex:019a-codex", 1).await?.remove(0);
    // The client's timeout: no goodbye.
    hook.start_kill()?;
    let killed = hook.wait_with_output().await?;
    assert!(killed.stdout.is_empty());
    hub.reply(&token, "Roll it out to production", json!([]))
        .await?;

    let hook = spawn_hook(&env, "codex", &codex_stop("t2", "Anything else?")).await?;
    let out = finished(hook).await?;
    let reason = block_reason(&out);
    assert!(reason.contains("Roll it out to production"), "{reason}");
    // Consumed once: the hub holds it no more.
    let s = hub.session(&token).await?;
    assert_eq!(s["queuedReplies"], 0, "{s}");
    assert_ne!(s["status"], "replied", "{s}");
    Ok(())
}

#[tokio::test]
async fn a_bad_payload_or_a_missing_hub_lets_the_client_go_on_with_one_line() -> anyhow::Result<()>
{
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let env = HookEnv::secret(&hub);
    let unknown_event = json!({"session_id": "s", "cwd": "/w", "hook_event_name": "Teleport"});
    let no_session = json!({"cwd": "/w", "hook_event_name": "Stop"});
    for payload in [
        "not json at all".to_owned(),
        String::new(),
        unknown_event.to_string(),
        no_session.to_string(),
    ] {
        let out = finished(spawn_hook(&env, "claude-code", &payload).await?).await?;
        lets_it_end(&out);
        let said = stderr(&out);
        assert_eq!(said.lines().count(), 1, "{payload:?}: {said:?}");
        assert!(said.starts_with("holdline-mcp hook:"), "{said}");
    }
    // No hub listening: the turn ends as if the hook were not there.
    let gone = HookEnv {
        hub_url: format!("http://127.0.0.1:{}", free_port()),
        ..HookEnv::secret(&hub)
    };
    let out = finished(
        spawn_hook(
            &gone,
            "claude-code",
            &stop_payload("s", "/w", Some("Done.")),
        )
        .await?,
    )
    .await?;
    lets_it_end(&out);
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert!(
        sessions_of(&hub, "claude-code:s", "waiting")
            .await?
            .is_empty()
    );
    Ok(())
}

#[tokio::test]
async fn two_agent_keys_never_share_a_hook_session() -> anyhow::Result<()> {
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let keys = TwoKeys::create(home.path())?;
    let (env_a, env_b) = keys.envs(&hub);
    // The same client session id, the same folder, the same host: only the key differs.
    let payload = stop_payload("shared-id", "/w", Some("Which way?"));
    let hook_a = spawn_hook(&env_a, "claude-code", &payload).await?;
    let tokens = waiting_tokens(&hub, "claude-code:shared-id", 1).await?;
    let mut hook_b = spawn_hook(&env_b, "claude-code", &payload).await?;
    let both = waiting_tokens(&hub, "claude-code:shared-id", 2).await?;
    let token_a = tokens[0].clone();
    let token_b = both
        .iter()
        .find(|t| **t != token_a)
        .expect("B's own")
        .clone();
    assert_eq!(hub.session(&token_a).await?["owner"]["key"], "alpha");
    assert_eq!(hub.session(&token_b).await?["owner"]["key"], "beta");

    hub.reply(&token_a, "for alpha only", json!([])).await?;
    let reason = block_reason(&finished(hook_a).await?);
    assert!(reason.contains("for alpha only"), "{reason}");
    // B still waits on its own session and never saw A's reply.
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert!(hook_b.try_wait()?.is_none(), "B's hook ended on A's reply");
    assert_eq!(hub.session(&token_b).await?["status"], "waiting");
    hub.reply(&token_b, "for beta", json!([])).await?;
    let reason = block_reason(&finished(hook_b).await?);
    assert!(
        reason.contains("for beta") && !reason.contains("alpha"),
        "{reason}"
    );
    Ok(())
}

#[tokio::test]
async fn a_reply_whose_block_could_not_be_written_stays_for_the_next_stop() -> anyhow::Result<()> {
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let env = HookEnv::secret(&hub);
    let mut hook = spawn_hook(
        &env,
        "claude-code",
        &stop_payload("sess-pipe", "/w", Some("Done?")),
    )
    .await?;
    // The client stopped reading: the block cannot reach it.
    drop(hook.stdout.take());
    let token = waiting_tokens(&hub, "claude-code:sess-pipe", 1)
        .await?
        .remove(0);
    hub.reply(&token, "Keep going", json!([])).await?;
    let out = finished(hook).await?;
    assert!(out.status.success());
    assert!(
        stderr(&out).contains("could not write the answer"),
        "{}",
        stderr(&out)
    );
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));

    let out = finished(
        spawn_hook(
            &env,
            "claude-code",
            &stop_payload("sess-pipe", "/w", Some("Done?")),
        )
        .await?,
    )
    .await?;
    assert!(block_reason(&out).contains("Keep going"));
    Ok(())
}

#[tokio::test]
async fn a_stopped_or_timed_out_hook_cancels_its_wait_and_lets_the_turn_end() -> anyhow::Result<()>
{
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let env = HookEnv::secret(&hub);
    let hook = spawn_hook(
        &env,
        "claude-code",
        &stop_payload("sess-term", "/w", Some("Done.")),
    )
    .await?;
    let token = waiting_tokens(&hub, "claude-code:sess-term", 1)
        .await?
        .remove(0);
    let pid = hook.id().context("pid")?.to_string();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()?;
    assert!(killed.success());
    let out = finished(hook).await?;
    lets_it_end(&out);
    assert!(stderr(&out).contains("SIGTERM"), "{}", stderr(&out));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    hub.wait_status(&token, "holding").await?;

    // `--timeout-sec` below the hook's shortest wait: it waits that long, then gives up.
    let mut hook = tokio::process::Command::new(bridge_bin());
    hook.args(["hook", "--client", "codex", "--timeout-sec", "1"])
        .env("HOLDLINE_HUB", hub.url())
        .env("HOLDLINE_HOME", &hub.home)
        .env("HOLDLINE_SECRET", &hub.secret)
        .env("HOLDLINE_HOST_ID", "test-host")
        .env("HOLDLINE_NO_AUTOSTART", "1")
        .env_remove("HOLDLINE_KEY")
        .env_remove("HOLDLINE_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = hook.spawn()?;
    let mut input = child.stdin.take().expect("stdin");
    input
        .write_all(
            json!({"session_id": "c-late", "cwd": "/w", "hook_event_name": "Stop",
                          "turn_id": "t", "last_assistant_message": "Over to you."})
            .to_string()
            .as_bytes(),
        )
        .await?;
    drop(input);
    let token = waiting_tokens(&hub, "codex:c-late", 1).await?.remove(0);
    let out = finished(child).await?;
    lets_it_end(&out);
    assert!(stderr(&out).contains("no reply within"), "{}", stderr(&out));
    assert_ne!(hub.session(&token).await?["status"], "waiting");
    Ok(())
}

#[tokio::test]
async fn the_tool_and_the_hook_of_one_chat_reach_one_session() -> anyhow::Result<()> {
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let client = start_bridge(BridgeOptions::for_hub(&hub)).await?;
    let r = call(
        &client,
        "init_conversation",
        json!({"cursorTitle": "Fix the parser", "threadId": "claude-code:sess-both"}),
    )
    .await?;
    let token = structured(&r)["token"]
        .as_str()
        .context("token")?
        .to_owned();

    let env = HookEnv::secret(&hub);
    let payload = stop_payload("sess-both", "/home/dev/project one", Some("Parser fixed."));
    let hook = spawn_hook(&env, "claude-code", &payload).await?;
    let waiting = waiting_tokens(&hub, "claude-code:sess-both", 1).await?;
    assert_eq!(waiting, std::slice::from_ref(&token));
    hub.reply(&token, "Good, now the lexer", json!([])).await?;
    assert!(block_reason(&finished(hook).await?).contains("Good, now the lexer"));

    // The tool goes on with the same session, and the hook's reply is not returned again.
    let handle = start_call(
        &client,
        "wait_for_user_input",
        json!({"token": token, "message": "Lexer done.", "cursorTitle": "Fix the parser"}),
    )
    .await?;
    hub.wait_status(&token, "waiting").await?;
    hub.reply(&token, "Ship it", json!([])).await?;
    let r = finish(handle).await?;
    assert!(
        text(&r).contains("Ship it") && !text(&r).contains("lexer"),
        "{}",
        text(&r)
    );
    Ok(())
}

/// Writes a Claude Code transcript of `records` and a `Stop` payload naming it.
fn stop_with_transcript(dir: &Path, session_id: &str, records: &[Value]) -> anyhow::Result<String> {
    let path = dir.join(format!("{session_id}.jsonl"));
    let text: String = records.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(&path, text)?;
    let mut payload: Value = serde_json::from_str(&stop_payload(session_id, "/w", Some("Done.")))?;
    payload["transcript_path"] = json!(path);
    Ok(payload.to_string())
}

#[tokio::test]
async fn a_stop_after_a_wait_in_the_same_turn_asks_nothing_and_a_forgetful_one_asks()
-> anyhow::Result<()> {
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let env = HookEnv::secret(&hub);
    let prompt = json!({"type": "user", "message": {"role": "user", "content": "Fix the bug"}});
    let call = |name: &str| {
        json!({"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": name, "input": {"message": "Fixed?"}}]}})
    };
    let result = json!({"type": "user", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "ok"}]}]}});
    let text = json!({"type": "assistant", "message": {"role": "assistant", "content": [
        {"type": "text", "text": "Glad it works."}]}});
    let waited = [
        prompt.clone(),
        call("Edit"),
        result.clone(),
        call("mcp__holdline__wait_for_user_input"),
        result.clone(),
        text.clone(),
    ];
    let payload = stop_with_transcript(home.path(), "sess-waited", &waited)?;
    let out = finished(spawn_hook(&env, "claude-code", &payload).await?).await?;
    lets_it_end(&out);
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
    let s = sessions_of(&hub, "claude-code:sess-waited", "waiting").await?;
    assert!(s.is_empty(), "a second question for the same turn: {s:?}");

    // Acted on the answer (a tool after the wait) and stopped without asking: asked.
    let forgot = [
        prompt,
        call("mcp__holdline__wait_for_user_input"),
        result.clone(),
        call("Bash"),
        result,
        text,
    ];
    let payload = stop_with_transcript(home.path(), "sess-forgot", &forgot)?;
    let hook = spawn_hook(&env, "claude-code", &payload).await?;
    let token = waiting_tokens(&hub, "claude-code:sess-forgot", 1)
        .await?
        .remove(0);
    hub.reply(&token, "Also update the docs", json!([])).await?;
    assert!(block_reason(&finished(hook).await?).contains("Also update the docs"));
    Ok(())
}

/// Gemini CLI's `AfterAgent` payload: `prompt_response` holds every answer since the
/// person's prompt, the transcript its records one per line.
fn after_agent_payload(session_id: &str, cwd: &str, transcript: &Path, all: &str) -> String {
    json!({
        "session_id": session_id,
        "transcript_path": transcript,
        "cwd": cwd,
        "hook_event_name": "AfterAgent",
        "timestamp": "2026-12-06T00:00:00Z",
        "prompt": "go",
        "prompt_response": all,
        "stop_hook_active": true,
    })
    .to_string()
}

#[tokio::test]
async fn gemini_asks_its_last_answer_and_qwen_its_message_each_in_its_own_session()
-> anyhow::Result<()> {
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let env = HookEnv::secret(&hub);
    let transcript = home.path().join("session.jsonl");
    let records = [
        json!({"sessionId": "g-1", "kind": "main"}),
        json!({"id": "1", "type": "user", "content": [{"text": "go"}]}),
        json!({"id": "2", "type": "gemini", "content": "Turn 1 done."}),
        json!({"id": "3", "type": "user", "content": [{"text": "reply"}]}),
        json!({"id": "4", "type": "gemini", "content": "Turn 2 done."}),
    ];
    let text: String = records.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(&transcript, text)?;

    let payload = after_agent_payload("g-1", "/w", &transcript, "Turn 1 done.\nTurn 2 done.");
    // Claude Code's hook does not answer Gemini's event: it lets the client go on.
    let wrong = finished(spawn_hook(&env, "claude-code", &payload).await?).await?;
    lets_it_end(&wrong);
    assert!(
        stderr(&wrong).contains("\"AfterAgent\" event"),
        "{}",
        stderr(&wrong)
    );

    let hook = spawn_hook(&env, "gemini", &payload).await?;
    let token = waiting_tokens(&hub, "gemini:g-1", 1).await?.remove(0);
    assert_eq!(
        last_question(&hub, &token).await?["content"],
        "Turn 2 done."
    );
    hub.reply(&token, "Go on with the parser", json!([]))
        .await?;
    assert!(block_reason(&finished(hook).await?).contains("Go on with the parser"));

    let qwen = json!({
        "session_id": "q-1", "transcript_path": "", "cwd": "/w", "hook_event_name": "Stop",
        "permission_mode": "yolo", "stop_hook_active": false,
        "last_assistant_message": "Qwen is done.", "background_tasks": [], "crons": [],
    });
    let hook = spawn_hook(&env, "qwen", &qwen.to_string()).await?;
    let q_token = waiting_tokens(&hub, "qwen:q-1", 1).await?.remove(0);
    assert_ne!(q_token, token, "each client's chat is its own session");
    assert_eq!(
        last_question(&hub, &q_token).await?["content"],
        "Qwen is done."
    );
    pick(&hub, &q_token, 0).await?;
    lets_it_end(&finished(hook).await?);
    Ok(())
}

/// A `stop` payload as Cursor's docs describe it: no message, the chat and turn by id.
fn cursor_stop_payload(conversation: &str, generation: &str, status: &str) -> String {
    json!({
        "conversation_id": conversation,
        "generation_id": generation,
        "model": "test-model",
        "hook_event_name": "stop",
        "cursor_version": "2.0.77",
        "workspace_roots": ["/home/dev/app", "/home/dev/lib"],
        "user_email": null,
        "status": status,
        "loop_count": 0,
    })
    .to_string()
}

#[tokio::test]
async fn cursors_stop_asks_and_the_reply_comes_back_as_its_followup_message() -> anyhow::Result<()>
{
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let env = HookEnv::secret(&hub);
    let thread = "cursor:conv-1";

    let hook = spawn_hook(
        &env,
        "cursor",
        &cursor_stop_payload("conv-1", "gen-1", "completed"),
    )
    .await?;
    let token = waiting_tokens(&hub, thread, 1).await?.remove(0);
    let question = last_question(&hub, &token).await?;
    let content = question["content"].as_str().unwrap_or_default();
    assert!(content.contains("ended its turn"), "{question}");
    assert_eq!(question["options"][0]["label"], "Let it finish");
    assert_eq!(question["origin"], "stopped", "{question}");
    assert_eq!(hub.session(&token).await?["workspace"], "/home/dev/app");

    hub.reply(&token, "Now add tests for it", json!([])).await?;
    let out = finished(hook).await?;
    assert!(out.status.success(), "{}", stderr(&out));
    let answer: Value = serde_json::from_str(stdout(&out).trim())?;
    let followup = answer["followup_message"]
        .as_str()
        .context("a followup_message")?;
    assert!(followup.contains("Now add tests for it"), "{answer}");
    assert_eq!(
        answer.as_object().map(|a| a.len()),
        Some(1),
        "only followup_message: {answer}"
    );

    // The next stop of the same chat reaches the same session; "Let it finish" prints
    // nothing, so Cursor submits no follow-up.
    let hook = spawn_hook(
        &env,
        "cursor",
        &cursor_stop_payload("conv-1", "gen-2", "completed"),
    )
    .await?;
    let again = waiting_tokens(&hub, thread, 1).await?.remove(0);
    assert_eq!(again, token, "the same chat reaches the same session");
    pick(&hub, &token, 0).await?;
    let out = finished(hook).await?;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "", "nothing printed after Let it finish");

    // A stop the person aborted asks nothing.
    let out = finished(
        spawn_hook(
            &env,
            "cursor",
            &cursor_stop_payload("conv-1", "gen-3", "aborted"),
        )
        .await?,
    )
    .await?;
    assert_eq!(stdout(&out), "");
    assert!(sessions_of(&hub, thread, "waiting").await?.is_empty());
    Ok(())
}
