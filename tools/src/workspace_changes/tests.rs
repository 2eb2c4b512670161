//! The parsing of git's lists, the diff's cut, and the deadline against a git that hangs.

use std::{os::unix::fs::PermissionsExt, process::Command as StdCommand, time::Instant};

use super::*;

fn file(path: &str, status: FileStatus, old: Option<&str>) -> ChangedFile {
    ChangedFile {
        path: path.into(),
        status,
        added: None,
        removed: None,
        binary: false,
        old_path: old.map(Into::into),
    }
}

#[test]
fn name_status_gives_each_status_and_a_rename_s_old_path() {
    let raw =
        b"M\0src/a b.rs\0A\0new.txt\0D\0gone.md\0R087\0old.rs\0moved/new.rs\0T\0link\0C100\0x\0y\0";
    assert_eq!(
        parse_name_status(raw),
        vec![
            file("src/a b.rs", FileStatus::Modified, None),
            file("new.txt", FileStatus::Added, None),
            file("gone.md", FileStatus::Deleted, None),
            file("moved/new.rs", FileStatus::Renamed, Some("old.rs")),
            file("link", FileStatus::Other, None),
            file("y", FileStatus::Copied, Some("x")),
        ]
    );
    // A list cut between a rename's two paths ends before it.
    assert_eq!(
        parse_name_status(b"M\0a\0R100\0old\0"),
        vec![file("a", FileStatus::Modified, None)]
    );
}

#[test]
fn numstat_gives_counts_binary_files_none_and_renames_their_new_path() {
    let raw = b"3\t1\tsrc/a b.rs\0-\t-\timg.png\x002\t0\t\0old.rs\0moved/new.rs\0";
    assert_eq!(
        parse_numstat(raw),
        vec![
            ("src/a b.rs".into(), Some(3), Some(1)),
            ("img.png".into(), None, None),
            ("moved/new.rs".into(), Some(2), Some(0)),
        ]
    );
    let files = tracked_files(
        b"M\0src/a b.rs\0M\0img.png\0R090\0old.rs\0moved/new.rs\0",
        raw,
    );
    assert_eq!(files[0].added, Some(3));
    assert!(files[1].binary && files[1].added.is_none());
    assert_eq!(files[2].old_path.as_deref(), Some("old.rs"));
    assert_eq!((files[2].added, files[2].removed), (Some(2), Some(0)));
}

#[test]
fn a_diff_past_the_cap_is_cut_before_the_file_that_does_not_fit() {
    let small = "diff --git a/a b/a\n@@ -1 +1 @@\n-x\n+y\n";
    let big = format!(
        "diff --git a/b b/b\n@@ -0,0 +1 @@\n+{}\n",
        "z".repeat(MAX_DIFF_BYTES)
    );
    let mut truncated = false;
    let cut = cut_diff(format!("{small}{big}"), &mut truncated);
    assert!(truncated);
    assert_eq!(cut, small);
    // One file alone too large: cut after its last whole line within the cap.
    let lines = format!(
        "diff --git a/c b/c\n{}",
        "+0123456789\n".repeat(MAX_DIFF_BYTES / 8)
    );
    let mut truncated = false;
    let cut = cut_diff(lines, &mut truncated);
    assert!(truncated && cut.len() <= MAX_DIFF_BYTES && cut.ends_with("9\n"));
    let mut truncated = false;
    assert_eq!(cut_diff(small.into(), &mut truncated), small);
    assert!(!truncated);
}

#[test]
fn a_diff_stopped_by_the_deadline_keeps_whole_files_only() {
    let mut collected = Collected::default();
    collected
        .diff
        .push_lines("diff --git a/a b/a\n+1\ndiff --git a/b b/b\n+half\n");
    collected.changes.truncated = true;
    let changes = collected.finish();
    assert_eq!(changes.diff, "diff --git a/a b/a\n+1\n");
    assert!(changes.truncated);
}

/// A fake git in a folder of its own: `script` is its body.
fn fake_git(dir: &Path, script: &str) -> Git {
    let path = dir.join("git");
    std::fs::write(&path, format!("#!/bin/sh\n{script}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    Git::at(path)
}

#[tokio::test]
async fn a_git_that_hangs_gives_nothing_within_the_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let git = fake_git(dir.path(), "exec sleep 30");
    let started = Instant::now();
    let changes = git
        .collect_within(dir.path(), Duration::from_millis(300))
        .await;
    assert!(changes.is_none());
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_git_that_hangs_on_the_diff_sends_the_files_it_listed_truncated() {
    let dir = tempfile::tempdir().unwrap();
    let script = r#"case "$*" in
  *show-toplevel*) echo "$2" ;;
  *rev-parse*) exit 0 ;;
  *--name-status*) printf 'M\0a.rs\0' ;;
  *--numstat*) printf '1\t1\ta.rs\0' ;;
  *ls-files*) ;;
  *config*) exit 1 ;;
  *) exec sleep 30 ;;
esac"#;
    let git = fake_git(dir.path(), script);
    let started = Instant::now();
    let changes = git
        .collect_within(dir.path(), Duration::from_millis(500))
        .await
        .expect("the files listed before the deadline");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert!(changes.truncated);
    assert_eq!(changes.files.len(), 1);
    assert_eq!(changes.files[0].added, Some(1));
    assert_eq!(changes.diff, "");
}

#[tokio::test]
async fn no_git_and_no_repository_give_nothing() {
    let dir = tempfile::tempdir().unwrap();
    assert!(
        Git::at(dir.path().join("no-such-git"))
            .collect(dir.path())
            .await
            .is_none()
    );
    assert!(Git::default().collect(dir.path()).await.is_none());
}

fn git(dir: &Path, args: &[&str]) {
    let ok = StdCommand::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .status()
        .unwrap()
        .success();
    assert!(ok, "git {args:?}");
}

#[tokio::test]
async fn a_repository_with_no_commit_yet_lists_what_is_staged_and_untracked() {
    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "-q"]);
    std::fs::write(dir.path().join("staged.txt"), "one\ntwo\n").unwrap();
    std::fs::write(dir.path().join("loose.txt"), "x\n").unwrap();
    git(dir.path(), &["add", "staged.txt"]);
    let changes = Git::default().collect(dir.path()).await.unwrap();
    assert!(!changes.truncated, "{changes:?}");
    let staged = &changes.files[0];
    assert_eq!(
        (staged.path.as_str(), staged.status),
        ("staged.txt", FileStatus::Added)
    );
    assert_eq!((staged.added, staged.removed), (Some(2), Some(0)));
    let loose = &changes.files[1];
    assert_eq!(
        (loose.path.as_str(), loose.status),
        ("loose.txt", FileStatus::Untracked)
    );
    assert_eq!(loose.added, Some(1));
    assert!(
        changes.diff.contains("+++ b/staged.txt\n"),
        "{}",
        changes.diff
    );
    assert!(
        changes
            .diff
            .contains("+++ b/loose.txt\n@@ -0,0 +1 @@\n+x\n"),
        "{}",
        changes.diff
    );

    // A repository that hides its untracked files (a home folder's dotfiles) lists none.
    git(dir.path(), &["config", "status.showUntrackedFiles", "no"]);
    let changes = Git::default().collect(dir.path()).await.unwrap();
    assert_eq!(changes.files.len(), 1, "{changes:?}");
    assert!(!changes.diff.contains("loose.txt"));
}
