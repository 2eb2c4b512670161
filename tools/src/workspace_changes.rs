//! The workspace's uncommitted git changes a stdio bridge sends with a question (opt-in,
//! `HOLDLINE_SHARE_CHANGES`): the changed files with status and +/- counts, untracked files
//! included, and the unified diff against `HEAD`, binary files named only.
//!
//! Invariants: collection never outlasts [`COLLECT_DEADLINE`] — git runs as children killed
//! when their step is dropped, and whatever finished is sent, `truncated`; what is sent fits
//! the contract's limits (cut on a file boundary, else a line boundary); only git reads,
//! inside the workspace's own repository (one whose top folder holds the workspace; never
//! a submodule), never taking the index lock (`GIT_OPTIONAL_LOCKS=0`); git runs no program
//! the repository names — no fsmonitor, hook, pager, external diff, textconv, or clean,
//! smudge or process filter (see [`NO_PROGRAMS`] and [`Git::without_filters`]); a folder
//! that is not a repository gives nothing, silently, and a missing git one warning per
//! process.

use std::{
    path::{Path, PathBuf},
    process::Stdio,
    sync::atomic::{AtomicBool, Ordering},
    time::Duration,
};

use holdline_contract::changes::{
    ChangedFile, FileStatus, MAX_CHANGED_FILES, MAX_DIFF_BYTES, WorkspaceChanges,
};
use tokio::{io::AsyncReadExt, process::Command, time::Instant};

/// The longest a question waits for its changes to be collected.
pub const COLLECT_DEADLINE: Duration = Duration::from_secs(2);

/// Set once git was found missing, so the log says it once per process.
static GIT_MISSING_SAID: AtomicBool = AtomicBool::new(false);

/// Where a unified diff of one file starts.
const FILE_HEADER: &str = "diff --git ";

/// The most bytes of a file list read from git (far past [`MAX_CHANGED_FILES`] paths).
const LIST_LIMIT: usize = 8 * 1024 * 1024;

/// The changes as collected so far: what a deadline leaves is what is sent.
#[derive(Default)]
struct Collected {
    changes: WorkspaceChanges,
    diff: Diff,
}

impl Collected {
    /// The changes to send: the diff within the limit, whole files when cut.
    fn finish(mut self) -> WorkspaceChanges {
        let mut diff = self.diff.text;
        if self.changes.truncated && diff.len() <= MAX_DIFF_BYTES && self.diff.whole > 0 {
            // A file's diff the deadline stopped mid-way is left out.
            diff.truncate(self.diff.whole);
        }
        self.changes.diff = cut_diff(diff, &mut self.changes.truncated);
        self.changes
    }
}

/// The unified diff as it arrives, and how much of it is whole files' diffs.
#[derive(Default)]
struct Diff {
    text: String,
    /// `text[..whole]` holds only complete files.
    whole: usize,
}

impl Diff {
    /// Lines of a diff as git streams it: the files before the last one seen are whole.
    fn push_lines(&mut self, lines: &str) {
        self.text.push_str(lines);
        if let Some(at) = self.text[self.whole..].rfind(&format!("\n{FILE_HEADER}")) {
            self.whole += at + 1;
        }
    }

    /// One file's complete diff.
    fn push_file(&mut self, file: &str) {
        self.text.push_str(file);
        self.whole = self.text.len();
    }
}

/// Settings every git run gets, over every config file (command-line scope wins): the
/// repository's files and its `.git` may have been written by anyone (an archive, a shared
/// folder, the agent itself), so nothing it names may run here. The person's own global
/// config stays in force for everything else. The commands the bridge runs (`rev-parse`,
/// `hash-object`, `config`, `ls-files`, `diff`) consult no credential helper, askpass, ssh
/// command, editor or signing program; those need no setting.
const NO_PROGRAMS: &[(&str, &str)] = &[
    // The fsmonitor hook runs on every index read.
    ("core.fsmonitor", "false"),
    ("core.untrackedCache", "false"),
    // No hook should run on a read, and none may: hooks are looked up in a non-folder.
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    // A submodule is another repository, with its own config: never entered.
    ("diff.ignoreSubmodules", "all"),
    ("submodule.recurse", "false"),
    ("core.quotepath", "off"),
    ("color.ui", "never"),
];

/// The most filter drivers a repository's config may define for its changes to be sent:
/// each is neutralised by name, and a config past this is not a project's.
const MAX_FILTER_DRIVERS: usize = 64;

/// The git this bridge runs: `git` from `PATH`, or another program (tests).
#[derive(Debug, Clone)]
pub struct Git {
    program: PathBuf,
    /// Settings over every config file, for every run: [`NO_PROGRAMS`], then each filter
    /// driver of the repository at hand emptied ([`Git::without_filters`]).
    config: Vec<(String, String)>,
}

impl Default for Git {
    fn default() -> Self {
        Git::at("git")
    }
}

/// What one git run gave: its stdout (at most the limit asked for) and whether more was cut.
struct Output {
    stdout: Vec<u8>,
    cut: bool,
}

impl Output {
    /// The NUL-ended records read whole (a cut read's last one may be partial).
    fn whole_records(&self) -> Vec<u8> {
        if !self.cut {
            return self.stdout.clone();
        }
        let end = self
            .stdout
            .iter()
            .rposition(|b| *b == 0)
            .map_or(0, |i| i + 1);
        self.stdout[..end].to_vec()
    }
}

/// Why a git run gave nothing usable.
enum GitFailed {
    /// No git on this machine.
    Missing,
    /// Git ran and said no (not a repository, a bad revision).
    Refused,
}

impl Git {
    /// Runs `program` as git.
    pub fn at(program: impl Into<PathBuf>) -> Git {
        Git {
            program: program.into(),
            config: NO_PROGRAMS
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        }
    }

    /// This git with every filter driver the repository at `top` configures (its own
    /// config, the files it includes, the person's) emptied by name, so a `filter`
    /// attribute — from `.gitattributes`, `.git/info/attributes` or anywhere — names a
    /// driver that does nothing: git's config has no wildcard, and an empty command is
    /// git's "no filter". `None` when the config cannot be read whole or defines more than
    /// [`MAX_FILTER_DRIVERS`]: then nothing is collected.
    async fn without_filters(&self, top: &Path) -> Option<Git> {
        let args = ["config", "--list", "--name-only", "-z"];
        let listed = self.run(top, &args, 1024 * 1024).await.ok()?;
        if listed.cut {
            tracing::warn!(repository = %top.display(), "the repository's config is too large: no changes sent");
            return None;
        }
        let drivers = filter_drivers(&listed.stdout);
        if drivers.len() > MAX_FILTER_DRIVERS {
            tracing::warn!(repository = %top.display(), drivers = drivers.len(), "the repository defines too many filters: no changes sent");
            return None;
        }
        let mut git = self.clone();
        for driver in drivers {
            for (key, value) in [
                ("clean", ""),
                ("smudge", ""),
                ("process", ""),
                ("required", "false"),
            ] {
                git.config
                    .push((format!("filter.{driver}.{key}"), value.to_owned()));
            }
        }
        Some(git)
    }

    /// The changes in the repository holding `workspace`, within [`COLLECT_DEADLINE`].
    pub async fn collect(&self, workspace: &Path) -> Option<WorkspaceChanges> {
        self.collect_within(workspace, COLLECT_DEADLINE).await
    }

    /// The changes in the repository holding `workspace`; what finished by `limit`, cut.
    pub async fn collect_within(
        &self,
        workspace: &Path,
        limit: Duration,
    ) -> Option<WorkspaceChanges> {
        let deadline = Instant::now() + limit;
        let top = match tokio::time::timeout_at(deadline, self.top_level(workspace)).await {
            Ok(top) => top?,
            Err(_) => {
                tracing::warn!(workspace = %workspace.display(), "git did not answer in time: no changes sent");
                return None;
            }
        };
        let git = match tokio::time::timeout_at(deadline, self.without_filters(&top)).await {
            Ok(git) => git?,
            Err(_) => return None,
        };
        let mut collected = Collected::default();
        let steps = git.gather(&top, &mut collected);
        if tokio::time::timeout_at(deadline, steps).await.is_err() {
            tracing::info!(repository = %top.display(), "git's deadline passed: the changes sent are cut");
            collected.changes.truncated = true;
        }
        Some(collected.finish())
    }

    /// The files, then the diff of tracked files, then each untracked file's counts and
    /// diff, into `out` as each finishes (a step cut by the deadline leaves the rest).
    async fn gather(&self, top: &Path, out: &mut Collected) {
        let Some(base) = self.base(top).await else {
            out.changes.truncated = true;
            return;
        };
        let (status_args, count_args) = (
            diff_args(&base, "--name-status"),
            diff_args(&base, "--numstat"),
        );
        let (statuses, counts, untracked) = tokio::join!(
            self.run(top, &status_args, LIST_LIMIT),
            self.run(top, &count_args, LIST_LIMIT),
            self.untracked(top),
        );
        let (Ok(statuses), Ok(counts), Ok(untracked)) = (statuses, counts, untracked) else {
            out.changes.truncated = true;
            return;
        };
        let changes = &mut out.changes;
        changes.truncated |= statuses.cut || counts.cut || untracked.cut;
        changes.files = tracked_files(&statuses.whole_records(), &counts.whole_records());
        let first_new = changes.files.len();
        changes.files.extend(
            split_nul(&untracked.whole_records())
                .into_iter()
                .map(|path| ChangedFile {
                    path,
                    status: FileStatus::Untracked,
                    added: None,
                    removed: None,
                    binary: false,
                    old_path: None,
                }),
        );
        if changes.files.len() > MAX_CHANGED_FILES {
            changes.files.truncate(MAX_CHANGED_FILES);
            changes.truncated = true;
        }
        if self
            .run_into(top, &diff_args(&base, "--patch"), &mut out.diff)
            .await
        {
            out.changes.truncated = true;
        }
        out.diff.whole = out.diff.text.len();
        for i in first_new..out.changes.files.len() {
            let budget = (MAX_DIFF_BYTES + 1).saturating_sub(out.diff.text.len());
            let file = &mut out.changes.files[i];
            if self.untracked_file(top, file, &mut out.diff, budget).await {
                out.changes.truncated = true;
            }
        }
    }

    /// One untracked file's counts (and binary mark), and its diff while `budget` lasts.
    async fn untracked_file(
        &self,
        top: &Path,
        file: &mut ChangedFile,
        diff: &mut Diff,
        budget: usize,
    ) -> bool {
        let mut args: Vec<String> = [
            "diff",
            "--no-index",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "--src-prefix=a/",
            "--dst-prefix=b/",
            "--numstat",
            "-z",
        ]
        .map(str::to_owned)
        .to_vec();
        if budget > 0 {
            args.push("--patch".into());
        }
        args.extend(["--".into(), "/dev/null".into(), file.path.clone()]);
        let Ok(run) = self.run(top, &args, budget.saturating_add(4096)).await else {
            return false;
        };
        let (stat, patch) = match find(&run.stdout, FILE_HEADER.as_bytes()) {
            Some(at) => run.stdout.split_at(at),
            None => (&run.stdout[..], &[][..]),
        };
        if let Some((added, removed)) = counts_of(stat) {
            file.added = added;
            file.removed = removed;
            file.binary = added.is_none();
        }
        diff.push_file(&String::from_utf8_lossy(patch));
        run.cut
    }

    /// The repository's top folder; `None` when `workspace` is in none (or git is missing).
    async fn top_level(&self, workspace: &Path) -> Option<PathBuf> {
        let args = ["rev-parse", "--show-toplevel"];
        match self.run(workspace, &args, 64 * 1024).await {
            Ok(out) => {
                let top = String::from_utf8(out.stdout).ok()?;
                let top = top.trim_end_matches(['\n', '\r']);
                if top.is_empty() {
                    return None;
                }
                holds(Path::new(top), workspace).then(|| PathBuf::from(top))
            }
            Err(GitFailed::Refused) => None,
            Err(GitFailed::Missing) => {
                if !GIT_MISSING_SAID.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        "HOLDLINE_SHARE_CHANGES is on but git was not found: questions go without the workspace's changes"
                    );
                }
                None
            }
        }
    }

    /// What the changes are against: `HEAD`, or the empty tree in a repository with no
    /// commit yet.
    async fn base(&self, top: &Path) -> Option<String> {
        if self
            .run(top, &["rev-parse", "--verify", "-q", "HEAD"], 4096)
            .await
            .is_ok()
        {
            return Some("HEAD".into());
        }
        let empty = self
            .run(top, &["hash-object", "-t", "tree", "--stdin"], 4096)
            .await
            .ok()?;
        let id = String::from_utf8(empty.stdout).ok()?;
        Some(id.trim().to_owned())
    }

    /// The untracked files `.gitignore` leaves, every one (`-uall`); none when the
    /// repository says not to show them (`status.showUntrackedFiles=no`, as a home
    /// folder's dotfiles repository does).
    async fn untracked(&self, top: &Path) -> Result<Output, GitFailed> {
        let shown = ["config", "--get", "status.showUntrackedFiles"];
        if let Ok(out) = self.run(top, &shown, 4096).await
            && String::from_utf8_lossy(&out.stdout).trim() == "no"
        {
            return Ok(Output {
                stdout: Vec::new(),
                cut: false,
            });
        }
        let args = ["ls-files", "--others", "--exclude-standard", "-z"];
        self.run(top, &args, LIST_LIMIT).await
    }

    /// Runs git in `dir` and reads at most `limit` bytes of its stdout.
    async fn run<S: AsRef<str>>(
        &self,
        dir: &Path,
        args: &[S],
        limit: usize,
    ) -> Result<Output, GitFailed> {
        let mut child = self.command(dir, args).spawn().map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                GitFailed::Missing
            } else {
                tracing::debug!(error = %e, "git did not start");
                GitFailed::Refused
            }
        })?;
        let mut stdout = Vec::new();
        let cut = match child.stdout.take() {
            Some(pipe) => read_limited(pipe, &mut stdout, limit).await,
            None => false,
        };
        if cut {
            // Enough read: the rest is not wanted, and git need not finish it.
            let _ = child.start_kill();
            return Ok(Output { stdout, cut });
        }
        match child.wait().await {
            // `diff --no-index` says 1 when the files differ.
            Ok(status) if status.success() || (status.code() == Some(1) && is_no_index(args)) => {
                Ok(Output { stdout, cut })
            }
            _ => Err(GitFailed::Refused),
        }
    }

    /// Runs git's patch into `diff` as it is read, so a deadline keeps what arrived;
    /// whether it was cut at the size limit.
    async fn run_into<S: AsRef<str>>(&self, dir: &Path, args: &[S], diff: &mut Diff) -> bool {
        let Ok(mut child) = self.command(dir, args).spawn() else {
            return true;
        };
        let Some(mut pipe) = child.stdout.take() else {
            return true;
        };
        let mut chunk = vec![0u8; 64 * 1024];
        let mut pending = Vec::new();
        loop {
            if diff.text.len() > MAX_DIFF_BYTES {
                let _ = child.start_kill();
                return true;
            }
            match pipe.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    pending.extend_from_slice(&chunk[..n]);
                    // Whole lines only, so a multi-byte character is never split.
                    if let Some(end) = pending.iter().rposition(|b| *b == b'\n') {
                        let rest = pending.split_off(end + 1);
                        diff.push_lines(&String::from_utf8_lossy(&pending));
                        pending = rest;
                    }
                }
            }
        }
        diff.push_lines(&String::from_utf8_lossy(&pending));
        let _ = child.wait().await;
        false
    }

    /// Git in `dir` with `args`, its settings ([`Git::config`]) given as
    /// `GIT_CONFIG_COUNT` pairs: unlike `-c name=value`, a pair keeps a driver name that
    /// holds `=` whole. Settings inherited from the bridge's environment that would come
    /// after them (`GIT_CONFIG_PARAMETERS`) are removed, so they stay last.
    fn command<S: AsRef<str>>(&self, dir: &Path, args: &[S]) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.arg("--no-pager")
            .arg("-C")
            .arg(dir)
            .args(args.iter().map(AsRef::as_ref))
            .env("GIT_OPTIONAL_LOCKS", "0")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_INDEX_FILE")
            .env_remove("GIT_EXTERNAL_DIFF")
            .env_remove("GIT_CONFIG_PARAMETERS")
            .env_remove("GIT_CONFIG")
            .env("GIT_CONFIG_COUNT", self.config.len().to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        for (i, (key, value)) in self.config.iter().enumerate() {
            cmd.env(format!("GIT_CONFIG_KEY_{i}"), key)
                .env(format!("GIT_CONFIG_VALUE_{i}"), value);
        }
        cmd
    }
}

/// Whether `workspace` is `top` or inside it (both as the file system names them): a
/// repository whose `core.worktree` points elsewhere is not the workspace's.
fn holds(top: &Path, workspace: &Path) -> bool {
    match (std::fs::canonicalize(top), std::fs::canonicalize(workspace)) {
        (Ok(top), Ok(workspace)) => workspace.starts_with(top),
        _ => false,
    }
}

/// The filter drivers a `git config --list --name-only -z` names (`filter.<driver>.<key>`;
/// a driver's name may hold dots), each once.
fn filter_drivers(names: &[u8]) -> Vec<String> {
    let mut drivers: Vec<String> = split_nul(names)
        .into_iter()
        .filter_map(|name| {
            let rest = name.strip_prefix("filter.")?;
            let (driver, _key) = rest.rsplit_once('.')?;
            Some(driver.to_owned())
        })
        .collect();
    drivers.sort();
    drivers.dedup();
    drivers
}

fn is_no_index<S: AsRef<str>>(args: &[S]) -> bool {
    args.iter().any(|a| a.as_ref() == "--no-index")
}

/// `git diff BASE` with `what` (`--name-status`, `--numstat`, `--patch`): no colour, no
/// external diff or textconv, no submodule, the usual prefixes whatever the person's
/// config says.
fn diff_args(base: &str, what: &str) -> Vec<String> {
    [
        "diff",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        "--ignore-submodules=all",
        "--no-relative",
        "--src-prefix=a/",
        "--dst-prefix=b/",
        "-M",
        what,
    ]
    .into_iter()
    .map(str::to_owned)
    .chain((what != "--patch").then(|| "-z".to_owned()))
    .chain([base.to_owned(), "--".to_owned()])
    .collect()
}

/// Reads `pipe` into `into` up to `limit` bytes; whether there was more.
async fn read_limited(
    mut pipe: impl tokio::io::AsyncRead + Unpin,
    into: &mut Vec<u8>,
    limit: usize,
) -> bool {
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        match pipe.read(&mut chunk).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => {
                let room = limit.saturating_sub(into.len());
                into.extend_from_slice(&chunk[..n.min(room)]);
                if n > room {
                    return true;
                }
            }
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn split_nul(bytes: &[u8]) -> Vec<String> {
    bytes
        .split(|b| *b == 0)
        .filter(|s| !s.is_empty())
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect()
}

/// The added and removed counts at the start of a `--numstat` record: `None`s for a
/// binary file (`-\t-`); `None` when the record is not one.
fn counts_of(record: &[u8]) -> Option<(Option<u64>, Option<u64>)> {
    let text = String::from_utf8_lossy(record);
    let mut fields = text.splitn(3, '\t');
    let added = fields.next()?;
    let removed = fields.next()?;
    if added == "-" && removed == "-" {
        return Some((None, None));
    }
    Some((Some(added.parse().ok()?), Some(removed.parse().ok()?)))
}

/// `git diff --name-status -z`: `X\0path\0`, or `R100\0old\0new\0` for renames and copies.
fn parse_name_status(bytes: &[u8]) -> Vec<ChangedFile> {
    let fields = split_nul(bytes);
    let mut fields = fields.into_iter();
    let mut files = Vec::new();
    while let Some(code) = fields.next() {
        let status = match code.chars().next() {
            Some('A') => FileStatus::Added,
            Some('M') => FileStatus::Modified,
            Some('D') => FileStatus::Deleted,
            Some('R') => FileStatus::Renamed,
            Some('C') => FileStatus::Copied,
            _ => FileStatus::Other,
        };
        let two_paths = matches!(status, FileStatus::Renamed | FileStatus::Copied);
        let old_path = if two_paths { fields.next() } else { None };
        let Some(path) = fields.next() else { break };
        files.push(ChangedFile {
            path,
            status,
            added: None,
            removed: None,
            binary: false,
            old_path,
        });
    }
    files
}

/// `git diff --numstat -z`: `a\tr\tpath\0`, or `a\tr\t\0old\0new\0` for renames; each
/// path with its counts (`None`s for a binary file).
fn parse_numstat(bytes: &[u8]) -> Vec<(String, Option<u64>, Option<u64>)> {
    let mut records = bytes.split(|b| *b == 0);
    let mut out = Vec::new();
    while let Some(record) = records.next() {
        if record.is_empty() {
            continue;
        }
        let Some((added, removed)) = counts_of(record) else {
            continue;
        };
        let text = String::from_utf8_lossy(record);
        let inline_path = text.splitn(3, '\t').nth(2).unwrap_or("");
        let path = if inline_path.is_empty() {
            // A rename: the old path, then the new one, each its own record.
            let _old = records.next();
            records
                .next()
                .map(|p| String::from_utf8_lossy(p).into_owned())
        } else {
            Some(inline_path.to_owned())
        };
        if let Some(path) = path {
            out.push((path, added, removed));
        }
    }
    out
}

/// The tracked files git lists against the base, each with its counts.
fn tracked_files(name_status: &[u8], numstat: &[u8]) -> Vec<ChangedFile> {
    let counts = parse_numstat(numstat);
    let mut files = parse_name_status(name_status);
    for file in &mut files {
        if let Some((_, added, removed)) = counts.iter().find(|(p, _, _)| *p == file.path) {
            file.added = *added;
            file.removed = *removed;
            file.binary = added.is_none();
        }
    }
    files
}

/// `diff` within [`MAX_DIFF_BYTES`]: cut before the first file that does not fit whole,
/// else (one file alone is too large) after the last line that fits; `truncated` set when
/// anything was cut.
fn cut_diff(mut diff: String, truncated: &mut bool) -> String {
    if diff.len() <= MAX_DIFF_BYTES {
        return diff;
    }
    *truncated = true;
    let end = match last_file_start(&diff, MAX_DIFF_BYTES) {
        Some(start) if start > 0 => start,
        _ => diff[..floor_char(&diff, MAX_DIFF_BYTES)]
            .rfind('\n')
            .map_or(0, |i| i + 1),
    };
    diff.truncate(end);
    diff
}

/// Where the last file's diff that starts before `limit` starts.
fn last_file_start(diff: &str, limit: usize) -> Option<usize> {
    let head = &diff[..floor_char(diff, limit)];
    if head.starts_with(FILE_HEADER) && !head[1..].contains(&format!("\n{FILE_HEADER}")) {
        return Some(0);
    }
    head.rfind(&format!("\n{FILE_HEADER}")).map(|i| i + 1)
}

fn floor_char(s: &str, mut at: usize) -> usize {
    at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

#[cfg(test)]
mod tests;
