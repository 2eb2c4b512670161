//! What the hook tests share (`hooks`, `hook_permission`): running `holdline-mcp hook` with
//! a payload on stdin against a hub under test, reading what it printed, finding the
//! sessions it made wait and answering them as the person, and two agent keys of one hub.

use std::{
    path::Path,
    process::{Output, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context, bail};
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::{io::AsyncWriteExt, process::Child};

use crate::agent_key::key_command;
use crate::harness::*;

/// Longest any hook run here may take: a guard against a hang, not a measurement.
const HANG: Duration = Duration::from_secs(30);

/// How a hook process reaches the hub.
pub(crate) struct HookEnv<'a> {
    pub hub_url: String,
    pub credential: (&'a str, String),
    pub home: &'a Path,
}

impl<'a> HookEnv<'a> {
    pub fn secret(hub: &'a TestHub) -> Self {
        HookEnv {
            hub_url: hub.url(),
            credential: ("HOLDLINE_SECRET", hub.secret.clone()),
            home: &hub.home,
        }
    }

    pub fn key(hub: &'a TestHub, home: &'a Path, key: &str) -> Self {
        HookEnv {
            hub_url: hub.url(),
            credential: ("HOLDLINE_KEY", key.to_owned()),
            home,
        }
    }
}

/// Starts `holdline-mcp hook --client CLIENT` with `stdin` written and closed.
pub(crate) async fn spawn_hook(
    env: &HookEnv<'_>,
    client: &str,
    stdin: &str,
) -> anyhow::Result<Child> {
    spawn_hook_args(env, &["--client", client], stdin).await
}

/// Starts `holdline-mcp hook ARGS…` with `stdin` written and closed.
pub(crate) async fn spawn_hook_args(
    env: &HookEnv<'_>,
    args: &[&str],
    stdin: &str,
) -> anyhow::Result<Child> {
    let mut child = tokio::process::Command::new(bridge_bin())
        .arg("hook")
        .args(args)
        .env("HOLDLINE_HUB", &env.hub_url)
        .env("HOLDLINE_HOME", env.home)
        .env("HOME", env.home)
        .env("HOLDLINE_HOST_ID", "test-host")
        .env_remove("HOLDLINE_SECRET")
        .env_remove("HOLDLINE_KEY")
        .env_remove("HOLDLINE_LOG")
        .env(env.credential.0, &env.credential.1)
        .env("HOLDLINE_NO_AUTOSTART", "1")
        .env("HOLDLINE_POLL_MS", "400")
        .env_remove("HOLDLINE_PERMISSION_WAIT_SEC")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .context("spawn holdline-mcp hook")?;
    let mut input = child.stdin.take().expect("piped stdin");
    input.write_all(stdin.as_bytes()).await?;
    drop(input);
    Ok(child)
}

/// The hook's exit, stdout and stderr, failing on a hang.
pub(crate) async fn finished(child: Child) -> anyhow::Result<Output> {
    let out = tokio::time::timeout(HANG, child.wait_with_output())
        .await
        .context("the hook hung")??;
    Ok(out)
}

pub(crate) fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub(crate) fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A `Stop` payload as Claude Code sends it.
pub(crate) fn stop_payload(session_id: &str, cwd: &str, last: Option<&str>) -> String {
    let mut p = json!({
        "session_id": session_id,
        "transcript_path": null,
        "cwd": cwd,
        "permission_mode": "default",
        "hook_event_name": "Stop",
        "stop_hook_active": false,
    });
    if let Some(last) = last {
        p["last_assistant_message"] = json!(last);
    }
    p.to_string()
}

/// The sessions bound to `thread` whose status is `status`, as the person sees them.
pub(crate) async fn sessions_of(
    hub: &TestHub,
    thread: &str,
    status: &str,
) -> anyhow::Result<Vec<Value>> {
    let list: Value = hub
        .http
        .get(format!("{}/api/sessions?limit=200", hub.url()))
        .bearer_auth(&hub.secret)
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    Ok(list["sessions"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|s| s["threadId"] == thread && s["status"] == status)
        .collect())
}

/// Waits until `count` sessions of `thread` wait for the person; their tokens.
pub(crate) async fn waiting_tokens(
    hub: &TestHub,
    thread: &str,
    count: usize,
) -> anyhow::Result<Vec<String>> {
    let started = Instant::now();
    loop {
        let waiting = sessions_of(hub, thread, "waiting").await?;
        if waiting.len() == count {
            return Ok(waiting
                .iter()
                .map(|s| s["token"].as_str().unwrap_or_default().to_owned())
                .collect());
        }
        if started.elapsed() > HANG {
            bail!("{} sessions of {thread} wait, not {count}", waiting.len());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The newest agent message of the session.
pub(crate) async fn last_question(hub: &TestHub, token: &str) -> anyhow::Result<Value> {
    let s = hub.session(token).await?;
    let messages = s["messages"].as_array().cloned().unwrap_or_default();
    messages
        .into_iter()
        .rev()
        .find(|m| m["role"] == "assistant")
        .context("no agent message")
}

/// The person picks option `choice` of the session's question.
pub(crate) async fn pick(hub: &TestHub, token: &str, choice: u32) -> anyhow::Result<()> {
    post_reply(hub, json!({"token": token, "choices": [choice]}))
        .await?
        .error_for_status()?;
    Ok(())
}

/// The person's reply `body` as the panel posts it, with the hub's answer whatever it is.
pub(crate) async fn post_reply(hub: &TestHub, body: Value) -> anyhow::Result<reqwest::Response> {
    Ok(hub
        .http
        .post(format!("{}/api/reply", hub.url()))
        .bearer_auth(&hub.secret)
        .json(&body)
        .send()
        .await?)
}

/// What the hook printed on stdout, as JSON, failing when it did not exit 0 or print JSON.
pub(crate) fn hook_answer(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status,
        stderr(out)
    );
    serde_json::from_str(stdout(out).trim())
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {:?}", stdout(out)))
}

/// The `reason` of a block the hook printed, failing when it printed anything else.
pub(crate) fn block_reason(out: &Output) -> String {
    let answer = hook_answer(out);
    assert_eq!(answer["decision"], "block", "{answer}");
    answer["reason"].as_str().expect("a reason").to_owned()
}

/// The hook let the turn end: exit 0, no decision.
pub(crate) fn lets_it_end(out: &Output) {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status,
        stderr(out)
    );
    let printed = stdout(out);
    assert!(
        printed.trim().is_empty() || printed.trim() == "{}",
        "a decision was printed: {printed:?}"
    );
}

/// Two agent keys of one hub, `alpha` and `beta`, each with a home of its own for its
/// hooks: the same client, folder and host then differ only by the key.
pub(crate) struct TwoKeys {
    homes: (TempDir, TempDir),
    pub alpha: String,
    pub beta: String,
}

impl TwoKeys {
    /// Creates both keys in the hub whose home is `hub_home`.
    pub fn create(hub_home: &Path) -> anyhow::Result<TwoKeys> {
        let key_of = |name: &str| {
            let printed = key_command(hub_home, &["create", "--name", name]);
            printed.lines().next().unwrap_or_default().to_owned()
        };
        Ok(TwoKeys {
            homes: (TempDir::new()?, TempDir::new()?),
            alpha: key_of("alpha"),
            beta: key_of("beta"),
        })
    }

    /// How a hook of each key reaches `hub`: (alpha's, beta's).
    pub fn envs<'a>(&'a self, hub: &'a TestHub) -> (HookEnv<'a>, HookEnv<'a>) {
        (
            HookEnv::key(hub, self.homes.0.path(), &self.alpha),
            HookEnv::key(hub, self.homes.1.path(), &self.beta),
        )
    }
}
