//! The workspace's uncommitted git changes a bridge may send with a question (opt-in),
//! so the person sees what the agent changed beside what it says it changed.
//!
//! Invariant: a question's changes hold at most [`MAX_DIFF_BYTES`] of unified diff and
//! [`MAX_CHANGED_FILES`] files; whatever was cut says so with `truncated`. The bridge
//! cuts, the hub refuses more with [`check_changes`].

use serde::{Deserialize, Serialize};

/// Largest unified diff sent, in bytes (256 KiB).
pub const MAX_DIFF_BYTES: usize = 256 * 1024;
/// Most files listed.
pub const MAX_CHANGED_FILES: usize = 1000;

/// How git sees one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FileStatus {
    Added,
    Modified,
    Deleted,
    Renamed,
    Copied,
    /// New and not yet added to git.
    Untracked,
    /// Its type changed (file ↔ link), or git said something this bridge does not know.
    #[serde(other)]
    Other,
}

/// One changed file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChangedFile {
    /// Relative to the repository's top.
    pub path: String,
    pub status: FileStatus,
    /// Lines added; absent for a binary file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub added: Option<u64>,
    /// Lines removed; absent for a binary file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removed: Option<u64>,
    /// A binary file is named only; its bytes are never in `diff`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub binary: bool,
    /// Where a renamed or copied file came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_path: Option<String>,
}

/// The workspace's uncommitted changes at the time of a question.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceChanges {
    pub files: Vec<ChangedFile>,
    /// The unified diff (`git diff HEAD` and new files), at most [`MAX_DIFF_BYTES`].
    #[serde(default)]
    pub diff: String,
    /// The file list or the diff was cut (a limit, or git's deadline).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

/// Why the hub refuses a question's changes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChangesRefused {
    #[error("changes: the diff is {0} bytes; at most {MAX_DIFF_BYTES}")]
    DiffTooLarge(usize),
    #[error("changes: {0} files listed; at most {MAX_CHANGED_FILES}")]
    TooManyFiles(usize),
}

/// The hub's rule on what it stores.
pub fn check_changes(changes: &WorkspaceChanges) -> Result<(), ChangesRefused> {
    if changes.diff.len() > MAX_DIFF_BYTES {
        return Err(ChangesRefused::DiffTooLarge(changes.diff.len()));
    }
    if changes.files.len() > MAX_CHANGED_FILES {
        return Err(ChangesRefused::TooManyFiles(changes.files.len()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_a_newer_bridge_adds_reads_as_other() {
        let file: ChangedFile =
            serde_json::from_str(r#"{"path":"a","status":"conflicted"}"#).unwrap();
        assert_eq!(file.status, FileStatus::Other);
        let renamed = serde_json::to_value(ChangedFile {
            path: "b".into(),
            status: FileStatus::Renamed,
            added: Some(1),
            removed: Some(0),
            binary: false,
            old_path: Some("a".into()),
        })
        .unwrap();
        assert_eq!(renamed["status"], "renamed");
        assert_eq!(renamed["oldPath"], "a");
    }

    #[test]
    fn a_diff_past_the_cap_is_refused() {
        let mut changes = WorkspaceChanges {
            diff: "x".repeat(MAX_DIFF_BYTES),
            ..Default::default()
        };
        assert_eq!(check_changes(&changes), Ok(()));
        changes.diff.push('x');
        assert!(check_changes(&changes).is_err());
    }
}
