//! The real `holdline-mcp` with an agent key (`HOLDLINE_KEY`) and no secret it could read,
//! against a real `holdline-hub`: it waits and gets the reply; once the key is revoked, mid-wait
//! or before a call, the agent reads one clear sentence.

#![allow(deprecated)] // roots are deprecated for future protocols; IDEs still send them

use std::path::Path;
use std::process::Command;

use crate::harness::*;
use serde_json::json;
use tempfile::TempDir;

/// `holdline-hub key …` against the hub's home.
pub(crate) fn key_command(hub_home: &Path, args: &[&str]) -> String {
    let out = Command::new(hub_bin())
        .arg("--home")
        .arg(hub_home)
        .arg("key")
        .args(args)
        .env_remove("HOLDLINE_HOME")
        .output()
        .expect("run holdline-hub key");
    assert!(
        out.status.success(),
        "holdline-hub key {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

const REFUSED: &str = "The hub refused this agent key: it is wrong or was revoked.";

#[tokio::test]
async fn a_bridge_with_only_an_agent_key_waits_and_a_revoked_key_reads_clearly()
-> anyhow::Result<()> {
    let hub_home = TempDir::new()?;
    let hub = TestHub::start(hub_home.path()).await?;
    let key = key_command(hub_home.path(), &["create", "--name", "laptop"]);
    let key = key.lines().next().unwrap_or("").to_owned();
    assert!(key.starts_with("hlk_"), "{key:?}");

    // The bridge's own home has no secret; it knows only the hub's URL and the key.
    let bridge_home = TempDir::new()?;
    let mut options = BridgeOptions::for_hub(&hub);
    options.home = bridge_home.path();
    options.secret = None;
    options.extra_env.push(("HOLDLINE_KEY", key.clone()));
    let client = start_bridge(options).await?;

    let token = init(&client, "Remote chat").await?;
    let handle = start_call(
        &client,
        "wait_for_user_input",
        json!({"token": token, "message": "Step one done. Next?"}),
    )
    .await?;
    hub.wait_status(&token, "waiting").await?;
    hub.reply(&token, "Do step two", json!([])).await?;
    let r = finish(handle).await?;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    assert!(text(&r).starts_with("Do step two"), "{}", text(&r));

    // Revoked mid-wait: the call ends with the sentence, the session stops waiting.
    let handle = start_call(
        &client,
        "wait_for_user_input",
        json!({"token": token, "message": "Step two done. Next?"}),
    )
    .await?;
    hub.wait_status(&token, "waiting").await?;
    let said = key_command(hub_home.path(), &["revoke", "laptop"]);
    assert!(said.contains("1 open wait ended"), "{said}");
    let r = finish(handle).await?;
    assert_eq!(r.is_error, Some(true), "{}", text(&r));
    assert!(text(&r).starts_with(REFUSED), "{}", text(&r));
    hub.wait_status(&token, "holding").await?;

    // Any later call: the same sentence (the hub answers 401).
    let r = call(
        &client,
        "wait_for_user_input",
        json!({"token": token, "message": "Anyone there?"}),
    )
    .await?;
    assert_eq!(r.is_error, Some(true), "{}", text(&r));
    assert!(text(&r).starts_with(REFUSED), "{}", text(&r));
    assert!(
        structured(&r).to_string().contains("KEY_REFUSED"),
        "{}",
        structured(&r)
    );
    client.cancel().await?;
    Ok(())
}
