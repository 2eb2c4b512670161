//! `holdline-mcp hook` answering a `PermissionRequest` against a real hub: the tool call
//! becomes a question labelled "permission" with Allow / Deny (and "Allow for this
//! session" for Claude Code), answered in each client's shape; words deny with the words;
//! a malformed payload or the bounded wait give no decision; a permission answer reaches
//! only the hook that asked (a late one is refused, an earlier reply for the agent is not
//! taken); two agent keys never see or answer each other's.

use std::time::Duration;

use serde_json::{Value, json};
use tempfile::TempDir;

use crate::harness::*;
use crate::hook_harness::*;

/// A `PermissionRequest` payload as Claude Code sends it, for a shell command.
fn claude_bash(session_id: &str, command: &str) -> Value {
    json!({
        "session_id": session_id,
        "transcript_path": null,
        "cwd": "/home/dev/app",
        "permission_mode": "default",
        "hook_event_name": "PermissionRequest",
        "tool_name": "Bash",
        "tool_input": {"command": command, "description": "Run the test suite"},
        "permission_suggestions": [
            {"type": "addRules", "behavior": "allow", "destination": "localSettings",
             "rules": [{"toolName": "Bash", "ruleContent": "npm test:*"}]}
        ],
    })
}

/// The same as Codex sends it.
fn codex_bash(session_id: &str, command: &str) -> Value {
    json!({
        "session_id": session_id,
        "turn_id": "turn-1",
        "transcript_path": null,
        "cwd": "/home/dev/svc",
        "model": "gpt-5",
        "permission_mode": "default",
        "hook_event_name": "PermissionRequest",
        "tool_name": "Bash",
        "tool_input": {"command": command},
    })
}

/// The decision the hook printed.
fn decision(out: &std::process::Output) -> Value {
    let answer = hook_answer(out);
    assert_eq!(
        answer["hookSpecificOutput"]["hookEventName"], "PermissionRequest",
        "{answer}"
    );
    answer["hookSpecificOutput"]["decision"].clone()
}

async fn pick_and_decide(
    hub: &TestHub,
    env: &HookEnv<'_>,
    client: &str,
    thread: &str,
    payload: &Value,
    choice: Option<u32>,
) -> anyhow::Result<(Value, Value)> {
    let hook = spawn_hook(env, client, &payload.to_string()).await?;
    let token = waiting_tokens(hub, thread, 1).await?.remove(0);
    let question = last_question(hub, &token).await?;
    match choice {
        Some(i) => pick(hub, &token, i).await?,
        None => {
            hub.reply(&token, "use yarn test instead", json!([]))
                .await?;
        }
    }
    let out = finished(hook).await?;
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
    Ok((question, decision(&out)))
}

#[tokio::test]
async fn claude_code_permission_allow_deny_words_and_allow_for_the_session() -> anyhow::Result<()> {
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let env = HookEnv::secret(&hub);
    let thread = "claude-code:perm-1";
    let payload = claude_bash("perm-1", "npm test");

    let (question, allowed) =
        pick_and_decide(&hub, &env, "claude-code", thread, &payload, Some(0)).await?;
    assert_eq!(question["origin"], "permission", "{question}");
    let labels: Vec<&str> = question["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["Allow", "Deny", "Allow for this session"]);
    let content = question["content"].as_str().unwrap();
    assert!(content.contains("```sh\nnpm test\n```"), "{content}");
    assert!(content.contains("Run the test suite"), "{content}");
    assert_eq!(allowed, json!({"behavior": "allow"}));

    let (_, for_session) =
        pick_and_decide(&hub, &env, "claude-code", thread, &payload, Some(2)).await?;
    assert_eq!(for_session["behavior"], "allow", "{for_session}");
    assert_eq!(
        for_session["updatedPermissions"],
        json!([{"type": "addRules", "behavior": "allow", "destination": "session",
                "rules": [{"toolName": "Bash", "ruleContent": "npm test:*"}]}])
    );

    let (_, denied) = pick_and_decide(&hub, &env, "claude-code", thread, &payload, Some(1)).await?;
    assert_eq!(denied["behavior"], "deny", "{denied}");
    assert!(
        denied["message"].as_str().unwrap().contains("denied"),
        "{denied}"
    );

    let (_, words) = pick_and_decide(&hub, &env, "claude-code", thread, &payload, None).await?;
    assert_eq!(words["behavior"], "deny", "{words}");
    assert!(
        words["message"]
            .as_str()
            .unwrap()
            .ends_with("said: use yarn test instead"),
        "{words}"
    );
    Ok(())
}

#[tokio::test]
async fn codex_permission_offers_no_session_rule_and_answers_in_its_shape() -> anyhow::Result<()> {
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let env = HookEnv::secret(&hub);
    let thread = "codex:perm-codex";
    let payload = codex_bash("perm-codex", "cargo publish");
    let (question, allowed) =
        pick_and_decide(&hub, &env, "codex", thread, &payload, Some(0)).await?;
    assert_eq!(
        question["options"].as_array().unwrap().len(),
        2,
        "{question}"
    );
    assert!(
        question["content"]
            .as_str()
            .unwrap()
            .starts_with("**Codex asks to run a command**")
    );
    // Codex refuses any field it does not take (updatedPermissions would deny).
    assert_eq!(allowed, json!({"behavior": "allow"}));
    let (_, denied) = pick_and_decide(&hub, &env, "codex", thread, &payload, Some(1)).await?;
    assert_eq!(denied["behavior"], "deny");

    // A Claude Code edit shows its file and change.
    let mut edit = claude_bash("perm-edit", "");
    edit["tool_name"] = json!("Edit");
    edit["tool_input"] = json!({"file_path": "/home/dev/app/src/main.rs",
                                "old_string": "fn main() {}", "new_string": "fn main() { run() }"});
    let hook = spawn_hook(&env, "claude-code", &edit.to_string()).await?;
    let token = waiting_tokens(&hub, "claude-code:perm-edit", 1)
        .await?
        .remove(0);
    let content = last_question(&hub, &token).await?["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(content.contains("asks to edit `src/main.rs`"), "{content}");
    assert!(
        content.contains("-fn main() {}\n+fn main() { run() }"),
        "{content}"
    );
    pick(&hub, &token, 0).await?;
    assert_eq!(decision(&finished(hook).await?)["behavior"], "allow");
    Ok(())
}

#[tokio::test]
async fn a_malformed_permission_request_or_the_bounded_wait_gives_no_decision() -> anyhow::Result<()>
{
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let env = HookEnv::secret(&hub);
    let mut no_tool = claude_bash("perm-bad", "ls");
    no_tool.as_object_mut().unwrap().remove("tool_name");
    let mut null_input = claude_bash("perm-bad", "ls");
    null_input["tool_input"] = Value::Null;
    for payload in [no_tool, null_input] {
        let out = finished(spawn_hook(&env, "claude-code", &payload.to_string()).await?).await?;
        lets_it_end(&out);
        assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
        assert!(stderr(&out).contains("tool_"), "{}", stderr(&out));
    }
    assert!(
        sessions_of(&hub, "claude-code:perm-bad", "waiting")
            .await?
            .is_empty()
    );

    // The person is away: after its bounded wait the hook leaves the client's own prompt.
    let hook = spawn_hook_args(
        &env,
        &["--client", "codex", "--permission-wait-sec", "2"],
        &codex_bash("perm-away", "make deploy").to_string(),
    )
    .await?;
    let token = waiting_tokens(&hub, "codex:perm-away", 1).await?.remove(0);
    let out = finished(hook).await?;
    lets_it_end(&out);
    assert!(
        stderr(&out).contains("no answer within 2 s"),
        "{}",
        stderr(&out)
    );
    let s = hub.session(&token).await?;
    assert_ne!(s["status"], "waiting", "{s}");

    // A late answer is refused: it would reach the agent's next question as words.
    let refused = post_reply(&hub, json!({"token": token, "choices": [0]})).await?;
    assert_eq!(refused.status(), 409);
    let body: Value = refused.json().await?;
    assert_eq!(body["error"]["code"], "PERMISSION_OVER", "{body}");
    assert_eq!(hub.session(&token).await?["queuedReplies"], 0);
    Ok(())
}

#[tokio::test]
async fn a_permission_answer_reaches_only_its_hook_and_an_earlier_reply_waits_for_the_agent()
-> anyhow::Result<()> {
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let env = HookEnv::secret(&hub);
    let thread = "claude-code:perm-order";
    // The agent's session, with a reply the person wrote while the agent worked.
    let stop = spawn_hook(
        &env,
        "claude-code",
        &stop_payload("perm-order", "/w", Some("Plan ready.")),
    )
    .await?;
    let token = waiting_tokens(&hub, thread, 1).await?.remove(0);
    hub.reply(&token, "Go ahead", json!([])).await?;
    block_reason(&finished(stop).await?);
    hub.reply(&token, "And keep the logs short", json!([]))
        .await?;

    // The permission hook does not take that reply as a denial.
    let hook = spawn_hook(
        &env,
        "claude-code",
        &claude_bash("perm-order", "rm -rf build").to_string(),
    )
    .await?;
    tokio::time::sleep(Duration::from_millis(600)).await;
    let s = hub.session(&token).await?;
    assert_eq!(s["status"], "waiting", "{s}");
    assert_eq!(last_question(&hub, &token).await?["origin"], "permission");
    pick(&hub, &token, 0).await?;
    assert_eq!(decision(&finished(hook).await?)["behavior"], "allow");

    // The agent's next stop gets the reply meant for it, and only it.
    let stop = spawn_hook(
        &env,
        "claude-code",
        &stop_payload("perm-order", "/w", Some("Built.")),
    )
    .await?;
    let reason = block_reason(&finished(stop).await?);
    assert!(reason.contains("keep the logs short"), "{reason}");
    assert!(!reason.contains("Allow"), "{reason}");

    // The hook stopped (the terminal answered first, then the turn was interrupted): a
    // reply naming no question afterwards is the agent's, for its next wait.
    let hook = spawn_hook(
        &env,
        "claude-code",
        &claude_bash("perm-order", "ls").to_string(),
    )
    .await?;
    hub.wait_status(&token, "waiting").await?;
    let pid = hook.id().expect("pid").to_string();
    assert!(
        std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()?
            .success()
    );
    lets_it_end(&hook.wait_with_output().await?);
    let late = post_reply(&hub, json!({"token": token, "text": "no, not ls"})).await?;
    assert!(late.status().is_success(), "{}", late.text().await?);
    let stop = spawn_hook(
        &env,
        "claude-code",
        &stop_payload("perm-order", "/w", Some("Listed.")),
    )
    .await?;
    assert!(block_reason(&finished(stop).await?).contains("no, not ls"));
    Ok(())
}

#[tokio::test]
async fn two_agent_keys_never_see_or_answer_each_others_permission_questions() -> anyhow::Result<()>
{
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let keys = TwoKeys::create(home.path())?;
    let (env_a, env_b) = keys.envs(&hub);
    let payload = claude_bash("shared-perm", "npm publish").to_string();
    let hook_a = spawn_hook(&env_a, "claude-code", &payload).await?;
    let token_a = waiting_tokens(&hub, "claude-code:shared-perm", 1)
        .await?
        .remove(0);
    assert_eq!(hub.session(&token_a).await?["owner"]["key"], "alpha");

    // Key B reaches no person route: it cannot list, read or answer A's question (a
    // person's path answers an agent key like one that does not exist, or refuses it).
    for (method, path, body) in [
        ("GET", "/api/sessions".to_owned(), None),
        ("GET", format!("/api/sessions/{token_a}"), None),
        (
            "POST",
            "/api/reply".to_owned(),
            Some(json!({"token": token_a, "choices": [0]})),
        ),
    ] {
        let mut request = hub
            .http
            .request(method.parse()?, format!("{}{path}", hub.url()))
            .bearer_auth(&keys.beta);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let answer = request.send().await?;
        let status = answer.status();
        let body = answer.text().await?;
        assert!(
            [401, 403, 404].contains(&status.as_u16()),
            "{method} {path} with key B: {status}"
        );
        assert!(!body.contains("npm publish"), "{body}");
    }
    // B's own hook for the same client session id gets its own question.
    let mut hook_b = spawn_hook(&env_b, "claude-code", &payload).await?;
    let both = waiting_tokens(&hub, "claude-code:shared-perm", 2).await?;
    let token_b = both.into_iter().find(|t| *t != token_a).expect("B's own");
    assert_eq!(hub.session(&token_b).await?["owner"]["key"], "beta");
    pick(&hub, &token_a, 1).await?;
    assert_eq!(decision(&finished(hook_a).await?)["behavior"], "deny");
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert!(hook_b.try_wait()?.is_none(), "B's hook ended on A's answer");
    pick(&hub, &token_b, 0).await?;
    assert_eq!(decision(&finished(hook_b).await?)["behavior"], "allow");
    Ok(())
}
