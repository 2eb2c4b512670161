//! The files `wait_for_user_input` shows the person beside its message (a screenshot, a
//! log): read from the agent's workspace by the stdio bridge, refused over `/mcp`.
//!
//! Invariants: a file is read only when it resolves (after `..` and symbolic links)
//! inside the canonical workspace, is a regular file and is at most
//! [`MAX_ATTACHMENT_BYTES`] by its metadata; the count, every path and every size are
//! checked before any file is read, so a refused call reads and sends nothing.

use std::{
    collections::VecDeque,
    fs,
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
};

use base64::Engine;
use holdline_contract::attachments::{
    AttachmentUpload, MAX_ATTACHMENT_BYTES, check_count, check_name, check_size,
};

use crate::limits::Transport;

/// What a call over `/mcp` is told when it passes attachments.
pub const NEEDS_STDIO: &str = "attachments need the stdio bridge: the hub cannot read files on the agent's machine. Call again without attachments (describe the files in your message), or use holdline through the stdio bridge (holdline-mcp).";

/// How many register requests whose files were sent are remembered.
const REMEMBERED: usize = 64;

/// A file that passed every rule, not yet read.
struct Checked {
    path: PathBuf,
    name: String,
}

/// The files of `paths` (absolute, or relative to `workspace`), read and encoded for the
/// hub; the error names the rule a path broke.
pub fn read_attachments(
    paths: &[String],
    workspace: &str,
    transport: Transport,
) -> Result<Vec<AttachmentUpload>, String> {
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    if transport == Transport::Http {
        return Err(NEEDS_STDIO.to_owned());
    }
    check_count(paths.len()).map_err(|e| format!("{e}: attach at most 10 files"))?;
    let root = canonical_workspace(workspace)?;
    let checked = paths
        .iter()
        .map(|p| check_path(&root, p))
        .collect::<Result<Vec<_>, _>>()?;
    checked.iter().map(read_checked).collect()
}

/// The workspace as the file system names it (no `..`, no links).
fn canonical_workspace(workspace: &str) -> Result<PathBuf, String> {
    let given = Path::new(workspace);
    if workspace.trim().is_empty() || !given.is_absolute() {
        return Err(format!(
            "attachments must be inside the workspace, and the workspace is unknown ({workspace:?}): pass workspace (the project's absolute path)"
        ));
    }
    fs::canonicalize(given).map_err(|e| format!("the workspace {workspace:?} cannot be read: {e}"))
}

/// One path checked against every rule, by its metadata only.
fn check_path(root: &Path, given: &str) -> Result<Checked, String> {
    if given.trim().is_empty() {
        return Err("an attachment path is empty".to_owned());
    }
    let joined = root.join(given);
    let path = fs::canonicalize(&joined).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!("attachment {given:?} does not exist"),
        _ => format!("attachment {given:?} cannot be read: {e}"),
    })?;
    if !path.starts_with(root) {
        return Err(format!(
            "attachment {given:?} is outside the workspace {} (after resolving .. and symbolic links): only files inside the workspace may be attached",
            root.display()
        ));
    }
    let meta =
        fs::metadata(&path).map_err(|e| format!("attachment {given:?} cannot be read: {e}"))?;
    if !meta.is_file() {
        return Err(format!(
            "attachment {given:?} is not a file (a folder?): attach files only"
        ));
    }
    let name = Path::new(given)
        .file_name()
        .or_else(|| path.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    check_name(&name).map_err(|e| e.to_string())?;
    check_size(given, meta.len()).map_err(|e| e.to_string())?;
    Ok(Checked { path, name })
}

/// Reads a checked file (its size again: it may have grown since) and encodes it.
fn read_checked(file: &Checked) -> Result<AttachmentUpload, String> {
    let bytes = fs::read(&file.path)
        .map_err(|e| format!("attachment {:?} cannot be read: {e}", file.name))?;
    if bytes.len() as u64 > MAX_ATTACHMENT_BYTES {
        check_size(&file.name, bytes.len() as u64).map_err(|e| e.to_string())?;
    }
    Ok(AttachmentUpload {
        name: file.name.clone(),
        mime_type: mime_guess::from_path(&file.path)
            .first_or_octet_stream()
            .essence_str()
            .to_owned(),
        data: base64::engine::general_purpose::STANDARD.encode(bytes),
    })
}

/// The register requests (by id) whose files the hub already has: a re-call that
/// reattaches to the same open wait sends them no second time.
#[derive(Debug, Clone, Default)]
pub struct FilesSent(Arc<Mutex<VecDeque<String>>>);

impl FilesSent {
    pub fn contains(&self, request_id: &str) -> bool {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .any(|r| r == request_id)
    }

    pub fn note(&self, request_id: &str) {
        let mut sent = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if sent.iter().any(|r| r == request_id) {
            return;
        }
        if sent.len() == REMEMBERED {
            sent.pop_front();
        }
        sent.push_back(request_id.to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace() -> (PathBuf, PathBuf) {
        let base = std::env::temp_dir().join(format!("hl-attach-{}", uuid::Uuid::new_v4()));
        let ws = base.join("ws");
        fs::create_dir_all(ws.join("logs")).unwrap();
        fs::write(ws.join("shot.png"), [0x89, b'P', b'N', b'G']).unwrap();
        fs::write(ws.join("logs/test.log"), "ok\n").unwrap();
        fs::write(base.join("secret.txt"), "no").unwrap();
        (base, ws)
    }

    #[test]
    fn files_inside_are_read_with_their_type() {
        let (base, ws) = workspace();
        let got = read_attachments(
            &[
                "shot.png".into(),
                ws.join("logs/test.log").display().to_string(),
            ],
            ws.to_str().unwrap(),
            Transport::Stdio,
        )
        .unwrap();
        assert_eq!(got[0].name, "shot.png");
        assert_eq!(got[0].mime_type, "image/png");
        assert_eq!(got[1].name, "test.log");
        assert_eq!(got[1].data, "b2sK");
        fs::remove_dir_all(base).unwrap();
    }

    #[test]
    fn each_rule_is_named() {
        let (base, ws) = workspace();
        let w = ws.to_str().unwrap();
        let refused = |paths: &[&str]| {
            let paths: Vec<String> = paths.iter().map(|p| p.to_string()).collect();
            read_attachments(&paths, w, Transport::Stdio).unwrap_err()
        };
        assert!(refused(&["../secret.txt"]).contains("outside the workspace"));
        std::os::unix::fs::symlink(base.join("secret.txt"), ws.join("link.txt")).unwrap();
        assert!(refused(&["link.txt"]).contains("outside the workspace"));
        assert!(refused(&["gone.png"]).contains("does not exist"));
        assert!(refused(&["logs"]).contains("not a file"));
        assert!(refused(&["shot.png"; 11]).contains("at most 10"));
        fs::write(ws.join("big.bin"), vec![0u8; 6 * 1024 * 1024]).unwrap();
        assert!(refused(&["big.bin"]).contains("5 MiB"));
        let over_mcp = read_attachments(&["shot.png".into()], w, Transport::Http).unwrap_err();
        assert!(over_mcp.contains("stdio bridge"));
        fs::remove_dir_all(base).unwrap();
    }
}
