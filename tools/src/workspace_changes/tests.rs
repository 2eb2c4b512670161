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
  *show-toplevel*) echo "$3" ;;
  *config\ --list*) ;;
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

/// A committed repository whose `f.txt` was edited since, and a program that writes the
/// marker file `ran` each time it runs: the program a hostile repository names.
struct Trap {
    dir: tempfile::TempDir,
    program: String,
    ran: PathBuf,
}

impl Trap {
    fn new() -> Trap {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("repo");
        std::fs::create_dir(&d).unwrap();
        git(&d, &["init", "-q"]);
        std::fs::write(d.join("f.txt"), "one\n").unwrap();
        git(&d, &["add", "f.txt"]);
        git(&d, &["commit", "-q", "-m", "first"]);
        std::fs::write(d.join("f.txt"), "two\n").unwrap();
        let ran = dir.path().join("ran");
        let program = dir.path().join("trap.sh");
        // A filter reads stdin, a textconv its one argument; anything else just ends.
        let script = format!(
            "#!/bin/sh\necho \"$*\" >> '{}'\n[ $# -eq 0 ] && exec cat\n[ $# -eq 1 ] && exec cat \"$1\"\nexit 0\n",
            ran.display()
        );
        std::fs::write(&program, script).unwrap();
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        Trap {
            dir,
            program: program.display().to_string(),
            ran,
        }
    }

    fn repo(&self) -> PathBuf {
        self.dir.path().join("repo")
    }

    fn config(&self, key: &str, value: &str) {
        git(&self.repo(), &["config", key, value]);
    }

    fn write(&self, path: &str, text: &str) {
        let path = self.repo().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// Git as the bridge ran it before (no lock, no external diff or textconv) runs the
    /// trap with `args`: the setting is live, so the check after it can fail.
    fn plain_git_runs_it(&self, args: &[&str]) {
        let _ = StdCommand::new("git")
            .arg("-C")
            .arg(self.repo())
            .args(args)
            .env("GIT_OPTIONAL_LOCKS", "0")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(self.ran.exists(), "plain git {args:?} did not run the trap");
        std::fs::remove_file(&self.ran).unwrap();
    }

    /// The bridge collects the changes (the edit listed) and the trap never ran.
    async fn collect_runs_nothing(&self) {
        let changes = Git::default().collect(&self.repo()).await;
        let ran = std::fs::read_to_string(&self.ran);
        assert!(ran.is_err(), "the repository's program ran: {ran:?}");
        let changes = changes.expect("the changes are still collected");
        assert!(
            changes.files.iter().any(|f| f.path == "f.txt"),
            "{changes:?}"
        );
    }
}

const DIFF: &[&str] = &["diff", "--no-ext-diff", "--no-textconv", "HEAD"];

#[tokio::test]
async fn the_repository_s_fsmonitor_never_runs() {
    let trap = Trap::new();
    trap.config("core.fsmonitor", &trap.program);
    trap.plain_git_runs_it(DIFF);
    trap.collect_runs_nothing().await;
}

#[tokio::test]
async fn a_clean_filter_named_by_gitattributes_never_runs() {
    let trap = Trap::new();
    trap.write(".gitattributes", "*.txt filter=trap\n");
    trap.config("filter.trap.clean", &trap.program);
    trap.plain_git_runs_it(DIFF);
    trap.collect_runs_nothing().await;
}

#[tokio::test]
async fn a_clean_filter_named_by_info_attributes_never_runs() {
    let trap = Trap::new();
    trap.write(".git/info/attributes", "f.txt filter=trap.x\n");
    trap.config("filter.trap.x.clean", &trap.program);
    trap.plain_git_runs_it(DIFF);
    trap.collect_runs_nothing().await;
}

#[tokio::test]
async fn a_required_process_filter_never_runs_and_the_changes_still_come() {
    let trap = Trap::new();
    trap.write(".gitattributes", "*.txt filter=trap\n");
    trap.config("filter.trap.process", &trap.program);
    trap.config("filter.trap.required", "true");
    trap.plain_git_runs_it(DIFF);
    trap.collect_runs_nothing().await;
}

#[tokio::test]
async fn a_filter_and_fsmonitor_from_an_included_config_never_run() {
    let trap = Trap::new();
    let included = trap.dir.path().join("included.config");
    std::fs::write(
        &included,
        format!(
            "[core]\n\tfsmonitor = {p}\n[filter \"inc\"]\n\tclean = {p}\n",
            p = trap.program
        ),
    )
    .unwrap();
    trap.write(".gitattributes", "f.txt filter=inc\n");
    trap.config("include.path", included.to_str().unwrap());
    trap.plain_git_runs_it(DIFF);
    trap.collect_runs_nothing().await;
}

#[tokio::test]
async fn a_textconv_or_an_external_diff_never_runs() {
    let trap = Trap::new();
    trap.write(".gitattributes", "f.txt diff=trap\n");
    trap.config("diff.trap.textconv", &trap.program);
    trap.plain_git_runs_it(&["diff", "HEAD"]);
    trap.collect_runs_nothing().await;
    trap.config("diff.trap.command", &trap.program);
    trap.plain_git_runs_it(&["diff", "HEAD"]);
    trap.collect_runs_nothing().await;
    git(&trap.repo(), &["config", "--unset", "diff.trap.command"]);
    trap.config("diff.external", &trap.program);
    trap.plain_git_runs_it(&["diff", "HEAD"]);
    trap.collect_runs_nothing().await;
}

#[tokio::test]
async fn no_hook_runs_from_the_hooks_folder_or_core_hooks_path() {
    let trap = Trap::new();
    for hook in ["post-index-change", "reference-transaction"] {
        let at = trap.repo().join(".git/hooks").join(hook);
        std::fs::copy(&trap.program, &at).unwrap();
    }
    // `add` writes the index, which runs post-index-change.
    trap.plain_git_runs_it(&["add", "f.txt"]);
    std::fs::write(trap.repo().join("f.txt"), "three\n").unwrap();
    trap.collect_runs_nothing().await;
    let hooks = trap.dir.path().join("hooks");
    std::fs::create_dir(&hooks).unwrap();
    std::fs::copy(&trap.program, hooks.join("post-index-change")).unwrap();
    trap.config("core.hooksPath", hooks.to_str().unwrap());
    std::fs::write(trap.repo().join("f.txt"), "four\n").unwrap();
    trap.plain_git_runs_it(&["add", "f.txt"]);
    std::fs::write(trap.repo().join("f.txt"), "five\n").unwrap();
    trap.collect_runs_nothing().await;
}

#[tokio::test]
async fn a_submodule_s_own_filter_and_fsmonitor_never_run() {
    let trap = Trap::new();
    let sub = trap.repo().join("sub");
    std::fs::create_dir(&sub).unwrap();
    git(&sub, &["init", "-q"]);
    std::fs::write(sub.join("s.txt"), "one\n").unwrap();
    git(&sub, &["add", "s.txt"]);
    git(&sub, &["commit", "-q", "-m", "sub"]);
    git(&trap.repo(), &["add", "sub"]);
    git(&trap.repo(), &["commit", "-q", "-m", "with sub"]);
    std::fs::write(sub.join("s.txt"), "two\n").unwrap();
    std::fs::write(sub.join(".gitattributes"), "*.txt filter=subtrap\n").unwrap();
    git(&sub, &["config", "filter.subtrap.clean", &trap.program]);
    git(&sub, &["config", "core.fsmonitor", &trap.program]);
    trap.plain_git_runs_it(DIFF);
    trap.collect_runs_nothing().await;
}

#[tokio::test]
async fn a_pager_never_runs_even_where_git_would_page() {
    let trap = Trap::new();
    trap.config("core.pager", &trap.program);
    trap.config("pager.diff", &trap.program);
    // On a terminal git pages (`script` gives it one): the setting is live.
    let on_terminal = format!("git -C '{}' diff HEAD", trap.repo().display());
    let paged = StdCommand::new("script")
        .args(["-qec", &on_terminal, "/dev/null"])
        .stdin(Stdio::null())
        .output();
    if paged.is_ok_and(|o| o.status.success()) {
        assert!(trap.ran.exists(), "git on a terminal did not page");
        std::fs::remove_file(&trap.ran).unwrap();
    }
    trap.collect_runs_nothing().await;
}

/// Settings only other commands consult (fetching, signing, editing, prompting): the
/// bridge's git must never come to run them, whatever it is changed to run.
#[tokio::test]
async fn no_credential_helper_ssh_signing_editor_or_alias_runs() {
    let trap = Trap::new();
    for key in [
        "core.sshCommand",
        "core.askPass",
        "credential.helper",
        "gpg.program",
        "gpg.ssh.program",
        "core.editor",
        "sequence.editor",
        "core.gitProxy",
    ] {
        trap.config(key, &trap.program);
    }
    trap.config("log.showSignature", "true");
    // An alias never replaces a git command, even one named like it.
    for alias in ["alias.diff", "alias.ls-files", "alias.rev-parse"] {
        trap.config(alias, &format!("!{}", trap.program));
    }
    trap.collect_runs_nothing().await;
}
