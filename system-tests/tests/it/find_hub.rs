//! A bridge with no `HOLDLINE_HUB` finds the local hub where it really listens: the
//! address a running hub wrote to its home, else `listen` in `config.toml` — and starts
//! the hub there when none runs. Real hub and bridge binaries, non-default ports.

use std::{
    path::Path,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context, bail};
use rmcp::{
    ServiceExt,
    model::{CallToolRequestParams, CallToolResult},
    transport::TokioChildProcess,
};
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::harness::{bridge_bin, free_port, hub_bin, hub_pid_with};

/// Kills the hub on drop: one we started, or (by pid) one the bridge started.
struct HubProcess {
    child: Option<Child>,
    pid: Option<u32>,
}

impl Drop for HubProcess {
    fn drop(&mut self) {
        if let Some(c) = &mut self.child {
            let _ = c.kill();
            let _ = c.wait();
        }
        if let Some(pid) = self.pid {
            let _ = Command::new("kill").arg(pid.to_string()).status();
        }
    }
}

async fn wait_for_addr(home: &Path) -> anyhow::Result<String> {
    let started = Instant::now();
    loop {
        if let Ok(a) = std::fs::read_to_string(home.join("hub.addr"))
            && !a.trim().is_empty()
        {
            return Ok(a.trim().to_owned());
        }
        if started.elapsed() > Duration::from_secs(20) {
            bail!("no hub wrote {}", home.join("hub.addr").display());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Starts the bridge with no HOLDLINE_HUB and calls `init_conversation` through it.
async fn init_through_bridge(home: &Path, autostart: bool) -> anyhow::Result<CallToolResult> {
    let user_home = TempDir::new()?;
    let mut cmd = tokio::process::Command::new(bridge_bin());
    cmd.env_remove("HOLDLINE_HUB")
        .env_remove("HOLDLINE_LISTEN")
        .env_remove("HOLDLINE_SECRET")
        .env("HOME", user_home.path())
        .env("HOLDLINE_HOME", home)
        .env("HOLDLINE_HOST_ID", "test-host")
        // The hub under test is found beside the bridge, as an installed one is.
        .env_remove("HOLDLINE_HUB_BIN");
    if autostart {
        cmd.env_remove("HOLDLINE_NO_AUTOSTART");
    } else {
        cmd.env("HOLDLINE_NO_AUTOSTART", "1");
    }
    let (transport, _stderr) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::inherit())
        .spawn()?;
    let client = ().serve(transport).await?;
    let args = json!({"cursorTitle": "Find the hub"});
    let result = client
        .call_tool(
            CallToolRequestParams::new("init_conversation")
                .with_arguments(args.as_object().cloned().context("object")?),
        )
        .await?;
    client.cancel().await?;
    Ok(result)
}

fn token_of(r: &CallToolResult) -> anyhow::Result<String> {
    let text: String = r
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect();
    if r.is_error == Some(true) {
        bail!("init_conversation failed: {text}");
    }
    let structured = r.structured_content.clone().unwrap_or(Value::Null);
    Ok(structured["token"]
        .as_str()
        .context("no token in the result")?
        .to_owned())
}

async fn session_exists(addr: &str, home: &Path, token: &str) -> anyhow::Result<()> {
    let secret = std::fs::read_to_string(home.join("secret"))?;
    let r = reqwest::Client::new()
        .get(format!("http://{addr}/api/sessions/{token}"))
        .bearer_auth(secret.trim())
        .send()
        .await?;
    r.error_for_status()?;
    Ok(())
}

#[tokio::test]
async fn bridge_finds_a_running_hub_on_a_non_default_port() -> anyhow::Result<()> {
    let home = TempDir::new()?;
    let listen = format!("127.0.0.1:{}", free_port());
    let _hub = HubProcess {
        child: Some(
            Command::new(hub_bin())
                .arg("--home")
                .arg(home.path())
                .args(["serve", "--listen", &listen])
                .env_remove("HOLDLINE_MONGO_URI")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()?,
        ),
        pid: None,
    };
    let addr = wait_for_addr(home.path()).await?;
    assert_eq!(addr, listen);
    let r = init_through_bridge(home.path(), false).await?;
    let token = token_of(&r)?;
    session_exists(&addr, home.path(), &token).await
}

#[tokio::test]
async fn bridge_starts_the_hub_where_config_toml_says() -> anyhow::Result<()> {
    let home = TempDir::new()?;
    let listen = format!("127.0.0.1:{}", free_port());
    std::fs::write(
        home.path().join("config.toml"),
        format!("listen = \"{listen}\"\n"),
    )?;
    let result = init_through_bridge(home.path(), true).await;
    let _hub = HubProcess {
        child: None,
        pid: home.path().to_str().and_then(hub_pid_with),
    };
    let token = token_of(&result?)?;
    let addr = wait_for_addr(home.path()).await?;
    assert_eq!(
        addr, listen,
        "the auto-started hub listens where config.toml says"
    );
    session_exists(&addr, home.path(), &token).await
}
