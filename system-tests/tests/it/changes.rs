//! Workspace changes through the real bridge and hub: a git workspace made here (edited,
//! staged-new, untracked, deleted, binary and renamed files) reaches the hub's history with
//! exactly those statuses, counts and diff; a folder that is no repository, or a bridge
//! that does not share, sends nothing; a diff past 256 KiB arrives cut, saying so; the
//! programs a repository names (fsmonitor, a clean filter, an external diff) never run.

use std::{path::Path, process::Command};

use crate::harness::*;
use holdline_contract::changes::MAX_DIFF_BYTES;
use serde_json::{Value, json};
use tempfile::TempDir;

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn write(dir: &Path, name: &str, bytes: impl AsRef<[u8]>) {
    std::fs::write(dir.join(name), bytes).unwrap();
}

/// The question `message` as the hub stored it, asked through a bridge in `workspace`.
async fn asked(
    hub: &TestHub,
    share: bool,
    workspace: &Path,
    message: &str,
) -> anyhow::Result<Value> {
    asked_with(hub, share, workspace, message, vec![]).await
}

/// [`asked`] with more of the bridge's environment.
async fn asked_with(
    hub: &TestHub,
    share: bool,
    workspace: &Path,
    message: &str,
    env: Vec<(&'static str, String)>,
) -> anyhow::Result<Value> {
    let root = format!("file://{}", workspace.display());
    let mut options = BridgeOptions {
        root: Some(&root),
        ..BridgeOptions::for_hub(hub)
    };
    options.extra_env.extend(env);
    if share {
        options
            .extra_env
            .push(("HOLDLINE_SHARE_CHANGES", "1".into()));
    }
    let client = start_bridge(options).await?;
    let r = call(
        &client,
        "init_conversation",
        json!({"cursorTitle": message, "workspace": workspace.to_str().unwrap()}),
    )
    .await?;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    let token = structured(&r)["token"].as_str().unwrap().to_owned();
    let _wait = start_call(
        &client,
        "wait_for_user_input",
        json!({"token": token, "message": message}),
    )
    .await?;
    let s = hub.wait_status(&token, "waiting").await?;
    client.cancel().await?;
    let question = s["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["content"] == message))
        .cloned()
        .expect("the question is in the history");
    Ok(question)
}

/// A repository with one commit, then every kind of change.
fn changed_repository() -> TempDir {
    let dir = TempDir::new().unwrap();
    let d = dir.path();
    git(d, &["init", "-q"]);
    write(d, "edited.txt", "one\ntwo\nthree\n");
    write(d, "deleted.txt", "gone\nsoon\n");
    write(d, "old name.txt", "moved\nalong\nwith\nme\n");
    write(d, "image.bin", [0u8, 1, 2, 3, 255, 0, 7]);
    git(d, &["add", "."]);
    git(d, &["commit", "-q", "-m", "first"]);
    write(d, "edited.txt", "one\nTWO\nthree\nfour\n");
    write(d, "added.txt", "fresh\n");
    git(d, &["add", "added.txt"]);
    write(d, "untracked.txt", "loose\nlines\n");
    std::fs::remove_file(d.join("deleted.txt")).unwrap();
    write(d, "image.bin", [0u8, 9, 9, 9, 255, 0, 7, 8]);
    git(d, &["mv", "old name.txt", "new name.txt"]);
    dir
}

#[tokio::test]
async fn each_kind_of_change_reaches_the_hub_with_its_counts_and_diff() -> anyhow::Result<()> {
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let repo = changed_repository();
    let question = asked(&hub, true, repo.path(), "All done, look?").await?;
    let changes = &question["changes"];
    let files = changes["files"].as_array().expect("files").clone();
    let by_path = |p: &str| {
        files
            .iter()
            .find(|f| f["path"] == p)
            .cloned()
            .unwrap_or_else(|| panic!("{p} not listed: {changes}"))
    };
    assert_eq!(files.len(), 6, "{changes}");
    assert_eq!(
        by_path("edited.txt"),
        json!({"path": "edited.txt", "status": "modified", "added": 2, "removed": 1})
    );
    assert_eq!(
        by_path("added.txt"),
        json!({"path": "added.txt", "status": "added", "added": 1, "removed": 0})
    );
    assert_eq!(
        by_path("untracked.txt"),
        json!({"path": "untracked.txt", "status": "untracked", "added": 2, "removed": 0})
    );
    assert_eq!(
        by_path("deleted.txt"),
        json!({"path": "deleted.txt", "status": "deleted", "added": 0, "removed": 2})
    );
    assert_eq!(
        by_path("image.bin"),
        json!({"path": "image.bin", "status": "modified", "binary": true})
    );
    assert_eq!(
        by_path("new name.txt"),
        json!({"path": "new name.txt", "status": "renamed", "added": 0, "removed": 0, "oldPath": "old name.txt"})
    );
    assert!(changes.get("truncated").is_none(), "{changes}");
    let diff = changes["diff"].as_str().unwrap();
    for part in [
        "diff --git a/edited.txt b/edited.txt\n",
        "-two\n+TWO\n three\n+four\n",
        "+++ b/added.txt\n@@ -0,0 +1 @@\n+fresh\n",
        "--- a/deleted.txt\n+++ /dev/null\n",
        "Binary files a/image.bin and b/image.bin differ\n",
        "rename from old name.txt\nrename to new name.txt\n",
        "+++ b/untracked.txt\n@@ -0,0 +1,2 @@\n+loose\n+lines\n",
    ] {
        assert!(diff.contains(part), "{part:?} not in:\n{diff}");
    }
    // The person's history shows the same (the diff never carries a binary's bytes).
    assert!(!diff.contains('\u{0}'));
    Ok(())
}

#[tokio::test]
async fn no_repository_or_no_sharing_sends_nothing() -> anyhow::Result<()> {
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let plain = TempDir::new()?;
    write(plain.path(), "notes.txt", "not in git\n");
    let question = asked(&hub, true, plain.path(), "No git here").await?;
    assert!(question.get("changes").is_none(), "{question}");
    let repo = changed_repository();
    let question = asked(&hub, false, repo.path(), "Not shared").await?;
    assert!(question.get("changes").is_none(), "{question}");
    Ok(())
}

#[tokio::test]
async fn a_diff_past_256_kib_arrives_cut_on_a_file_boundary() -> anyhow::Result<()> {
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let dir = TempDir::new()?;
    let d = dir.path();
    git(d, &["init", "-q"]);
    write(d, "a.txt", "a\n");
    write(d, "big.txt", "");
    git(d, &["add", "."]);
    git(d, &["commit", "-q", "-m", "first"]);
    write(d, "a.txt", "b\n");
    write(d, "big.txt", "0123456789abcdef\n".repeat(20_000));
    let question = asked(&hub, true, d, "Huge diff").await?;
    let changes = &question["changes"];
    assert_eq!(changes["truncated"], true, "{changes}");
    let files = changes["files"].as_array().unwrap();
    assert_eq!(files.len(), 2);
    assert_eq!(files[1]["added"], 20_000);
    let diff = changes["diff"].as_str().unwrap();
    assert!(diff.len() <= MAX_DIFF_BYTES);
    assert!(diff.starts_with("diff --git a/a.txt b/a.txt\n"), "{diff}");
    assert!(
        !diff.contains("big.txt"),
        "the file that does not fit is left out whole"
    );
    Ok(())
}

#[tokio::test]
async fn no_program_the_repository_names_runs_in_the_bridge_s_git() -> anyhow::Result<()> {
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let dir = TempDir::new()?;
    let d = dir.path().join("repo");
    std::fs::create_dir(&d)?;
    git(&d, &["init", "-q"]);
    write(&d, "a.txt", "one\n");
    git(&d, &["add", "."]);
    git(&d, &["commit", "-q", "-m", "first"]);
    write(&d, "a.txt", "two\n");
    let ran = dir.path().join("ran");
    let trap = dir.path().join("trap.sh");
    write(
        dir.path(),
        "trap.sh",
        format!(
            "#!/bin/sh\necho \"$*\" >> '{}'\n[ $# -eq 0 ] && exec cat\nexit 0\n",
            ran.display()
        ),
    );
    std::fs::set_permissions(&trap, std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
    let trap = trap.display().to_string();
    write(&d, ".git/info/attributes", "a.txt filter=trap diff=trap\n");
    git(&d, &["config", "core.fsmonitor", &trap]);
    git(&d, &["config", "filter.trap.clean", &trap]);
    git(&d, &["config", "diff.trap.command", &trap]);
    // What the IDE's environment may carry: an external diff, settings for every git.
    let env = vec![
        ("GIT_EXTERNAL_DIFF", trap.clone()),
        (
            "GIT_CONFIG_PARAMETERS",
            format!("'core.fsmonitor'='{trap}'"),
        ),
    ];
    let question = asked_with(&hub, true, &d, "Trapped repo", env).await?;
    assert!(
        !ran.exists(),
        "a program ran: {:?}",
        std::fs::read_to_string(&ran)
    );
    let changes = &question["changes"];
    assert_eq!(changes["files"][0]["path"], "a.txt", "{changes}");
    assert!(
        changes["diff"].as_str().unwrap().contains("-one\n+two\n"),
        "{changes}"
    );
    Ok(())
}

#[tokio::test]
async fn a_workspace_outside_the_client_s_roots_sends_no_changes() -> anyhow::Result<()> {
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let repo = changed_repository();
    // The client opened another folder: the agent's workspace argument cannot widen it.
    let mut options = BridgeOptions::for_hub(&hub);
    options
        .extra_env
        .push(("HOLDLINE_SHARE_CHANGES", "1".into()));
    let client = start_bridge(options).await?;
    let r = call(
        &client,
        "init_conversation",
        json!({"cursorTitle": "Elsewhere", "workspace": repo.path()}),
    )
    .await?;
    let token = structured(&r)["token"].as_str().unwrap().to_owned();
    let _wait = start_call(
        &client,
        "wait_for_user_input",
        json!({"token": token, "message": "Elsewhere"}),
    )
    .await?;
    let s = hub.wait_status(&token, "waiting").await?;
    client.cancel().await?;
    let question = &s["messages"][0];
    assert_eq!(question["content"], "Elsewhere", "{s}");
    assert!(question.get("changes").is_none(), "{question}");
    Ok(())
}
