//! The files `wait_for_user_input` shows the person beside its message (a screenshot, a
//! log): read from the agent's workspace by the stdio bridge, refused over `/mcp`.
//!
//! Invariants: a file is read only when it resolves (after `..` and symbolic links)
//! inside the workspace, and the workspace inside a folder the client opened (its MCP
//! roots, else the bridge's working folder: the `workspace` argument only narrows); it is
//! a regular file with one name (a hard link may be a file from outside), outside `/proc`,
//! `/sys` and `/dev`, outside the holdline home, and holds no credential the bridge knows;
//! the file opened is the one checked (device and inode), and at most
//! [`MAX_ATTACHMENT_BYTES`] + 1 bytes of it are ever read. The count, every path and every
//! size are checked before any file is read, and a refused call sends nothing.

use std::{
    collections::VecDeque,
    fs,
    io::Read,
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
};

use base64::Engine;
use holdline_contract::attachments::{
    AttachmentUpload, MAX_ATTACHMENT_BYTES, check_count, check_name, check_size,
};

use crate::limits::Transport;

/// Why a call's files were not sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// Over `/mcp`: no file on the agent's machine can be read, whatever its path.
    Remote,
    /// A path broke the rule this sentence names.
    Rule(String),
}

impl Refused {
    /// The whole sentence the agent reads: what happened and what to call next.
    pub fn sentence(&self) -> String {
        match self {
            Refused::Remote => "Attachments need the stdio bridge (holdline-mcp): over this remote connection the hub cannot read files on the agent's machine. Nothing was sent; call again without attachments and describe the files in your message.".to_owned(),
            Refused::Rule(rule) => format!(
                "{}. Nothing was sent; call again with only files that follow the rule, or none.",
                rule.trim_end_matches('.')
            ),
        }
    }
}

/// How many register requests whose files were sent are remembered.
const REMEMBERED: usize = 64;

/// Folders whose files are never attachments, whatever the workspace: the kernel's and
/// the devices' (reading `/proc/self/pagemap` whole is gigabytes).
const SYSTEM_FOLDERS: [&str; 3] = ["/proc", "/sys", "/dev"];

/// The shortest credential looked for inside a file (shorter values would match by chance).
const MIN_CREDENTIAL_CHARS: usize = 16;

/// What the bridge never attaches: its holdline homes (the hub's secret and everything
/// beside it) and any file holding a credential it knows.
#[derive(Debug, Clone, Default)]
pub struct Protected {
    /// The holdline home folders (`HOLDLINE_HOME`, `~/.holdline`).
    pub homes: Vec<PathBuf>,
    /// The credentials the bridge sends or could (its agent key or secret); each home's
    /// `secret` file is read again at every check, as a hub may have made it since.
    pub credentials: Vec<String>,
}

impl Protected {
    /// Every credential value known now.
    fn values(&self) -> Vec<String> {
        let from_homes = self
            .homes
            .iter()
            .filter_map(|h| fs::read_to_string(h.join("secret")).ok());
        self.credentials
            .iter()
            .cloned()
            .chain(from_homes)
            .map(|v| v.trim().to_owned())
            .filter(|v| v.chars().count() >= MIN_CREDENTIAL_CHARS)
            .collect()
    }
}

/// Where a call's files may come from.
pub struct Scope<'a> {
    pub transport: Transport,
    /// The folders the client opened: its roots, else the bridge's working folder.
    pub client_folders: &'a [PathBuf],
    pub protected: &'a Protected,
}

/// A file that passed every rule, not yet read.
struct Checked {
    path: PathBuf,
    name: String,
    id: Option<FileId>,
}

/// A file's device and inode.
type FileId = (u64, u64);

/// The files of `paths` (absolute, or relative to `workspace`), read and encoded for the
/// hub; the error names the rule a path broke.
pub fn read_attachments(
    paths: &[String],
    workspace: &str,
    scope: &Scope<'_>,
) -> Result<Vec<AttachmentUpload>, Refused> {
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    if scope.transport == Transport::Http {
        return Err(Refused::Remote);
    }
    read_local(paths, workspace, scope).map_err(Refused::Rule)
}

/// The files of `paths` read on this machine; the error names the rule a path broke.
fn read_local(
    paths: &[String],
    workspace: &str,
    scope: &Scope<'_>,
) -> Result<Vec<AttachmentUpload>, String> {
    check_count(paths.len()).map_err(|e| format!("{e}: attach at most 10 files"))?;
    let root = confined_workspace(workspace, scope.client_folders)?;
    let checked = paths
        .iter()
        .map(|p| check_path(&root, p, scope.protected))
        .collect::<Result<Vec<_>, _>>()?;
    let credentials = scope.protected.values();
    checked
        .iter()
        .map(|file| read_checked(file, &credentials))
        .collect()
}

/// The workspace as the file system names it (no `..`, no links), inside a folder the
/// client opened (the rule for the workspace's changes too).
pub fn confined_workspace(workspace: &str, client_folders: &[PathBuf]) -> Result<PathBuf, String> {
    let given = Path::new(workspace);
    if workspace.trim().is_empty() || !given.is_absolute() {
        return Err(format!(
            "attachments must be inside the workspace, and the workspace is unknown ({workspace:?}): pass workspace (the project's absolute path)"
        ));
    }
    let root = fs::canonicalize(given)
        .map_err(|e| format!("the workspace {workspace:?} cannot be read: {e}"))?;
    let opened: Vec<PathBuf> = client_folders
        .iter()
        .filter_map(|f| fs::canonicalize(f).ok())
        .collect();
    if !opened.iter().any(|f| root.starts_with(f)) {
        let listed = client_folders
            .iter()
            .map(|f| f.display().to_string())
            .collect::<Vec<_>>()
            .join(", ");
        return Err(format!(
            "the workspace {} is outside the folders this client opened ({}): files are attached only from inside those (its roots, else the folder holdline-mcp runs in)",
            root.display(),
            if listed.is_empty() { "none" } else { &listed }
        ));
    }
    Ok(root)
}

/// One path checked against every rule, by its metadata only.
fn check_path(root: &Path, given: &str, protected: &Protected) -> Result<Checked, String> {
    if given.trim().is_empty() {
        return Err("an attachment path is empty".to_owned());
    }
    let path = fs::canonicalize(root.join(given)).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!("attachment {given:?} does not exist"),
        _ => format!("attachment {given:?} cannot be read: {e}"),
    })?;
    if !path.starts_with(root) {
        return Err(format!(
            "attachment {given:?} is outside the workspace {} (after resolving .. and symbolic links): only files inside the workspace may be attached",
            root.display()
        ));
    }
    let meta = fs::symlink_metadata(&path)
        .map_err(|e| format!("attachment {given:?} cannot be read: {e}"))?;
    check_place(given, &path, &meta, protected)?;
    if !meta.file_type().is_file() {
        return Err(format!(
            "attachment {given:?} is not a regular file (a folder, a device, a pipe?): attach files only"
        ));
    }
    let links = link_count(&meta);
    if links > 1 {
        return Err(format!(
            "attachment {given:?} has {links} hard links, so it may be a file from outside the workspace: attach a copy of it instead"
        ));
    }
    let name = Path::new(given)
        .file_name()
        .or_else(|| path.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    check_name(&name).map_err(|e| e.to_string())?;
    check_size(given, meta.len()).map_err(|e| e.to_string())?;
    Ok(Checked {
        path,
        name,
        id: file_id(&meta),
    })
}

/// The rules on where a file is: not in the system's folders, not in a holdline home
/// (by path, and by device and inode for a home mounted elsewhere), not the secret.
fn check_place(
    given: &str,
    path: &Path,
    meta: &fs::Metadata,
    protected: &Protected,
) -> Result<(), String> {
    let system = SYSTEM_FOLDERS.iter().any(|f| {
        path.starts_with(f) || (file_id(meta).is_some() && same_device(meta, Path::new(f)))
    });
    if system {
        return Err(format!(
            "attachment {given:?} is a system file (/proc, /sys, /dev): attach files of the project only"
        ));
    }
    let homes: Vec<PathBuf> = protected
        .homes
        .iter()
        .filter_map(|h| fs::canonicalize(h).ok())
        .collect();
    let in_home = homes.iter().any(|home| {
        path.starts_with(home)
            || path
                .ancestors()
                .any(|a| ids_match(a, home) || ids_match(a, &home.join("secret")))
    });
    if in_home {
        return Err(format!(
            "attachment {given:?} is in the holdline home, which holds the hub's credentials: it is never attached"
        ));
    }
    Ok(())
}

/// Whether `a` and `b` are the same file (device and inode).
fn ids_match(a: &Path, b: &Path) -> bool {
    match (fs::metadata(a), fs::metadata(b)) {
        (Ok(a), Ok(b)) => file_id(&a).is_some() && file_id(&a) == file_id(&b),
        _ => false,
    }
}

/// Whether `meta`'s file is on the file system mounted at `folder` (a kernel file system
/// bound elsewhere: `/proc`'s `procfs` has one device wherever it is mounted).
fn same_device(meta: &fs::Metadata, folder: &Path) -> bool {
    let Ok(folder) = fs::metadata(folder) else {
        return false;
    };
    // `/dev` is often on the root's device (a plain folder); then only its path counts.
    let root = fs::metadata("/").ok().and_then(|r| file_id(&r));
    match (file_id(meta), file_id(&folder)) {
        (Some((dev, _)), Some((folder_dev, _))) => {
            dev == folder_dev && root.is_none_or(|(root_dev, _)| root_dev != folder_dev)
        }
        _ => false,
    }
}

#[cfg(unix)]
fn file_id(meta: &fs::Metadata) -> Option<FileId> {
    use std::os::unix::fs::MetadataExt;
    Some((meta.dev(), meta.ino()))
}

#[cfg(not(unix))]
fn file_id(_meta: &fs::Metadata) -> Option<FileId> {
    None
}

#[cfg(unix)]
fn link_count(meta: &fs::Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt;
    meta.nlink()
}

#[cfg(not(unix))]
fn link_count(_meta: &fs::Metadata) -> u64 {
    1
}

/// Opens the checked file without following a link and without blocking on a pipe, and
/// makes sure it is the file checked.
#[cfg(unix)]
fn open_checked(file: &Checked) -> std::io::Result<fs::File> {
    use rustix::fs::{Mode, OFlags};
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY;
    let fd = rustix::fs::open(&file.path, flags | OFlags::CLOEXEC, Mode::empty())?;
    let opened = fs::File::from(fd);
    let meta = opened.metadata()?;
    if !meta.file_type().is_file() || file_id(&meta) != file.id || link_count(&meta) > 1 {
        return Err(std::io::Error::other("it changed since it was checked"));
    }
    Ok(opened)
}

#[cfg(not(unix))]
fn open_checked(file: &Checked) -> std::io::Result<fs::File> {
    fs::File::open(&file.path)
}

/// Reads a checked file — at most the limit and one byte, as it may have grown since —
/// and encodes it; one that holds a credential is refused.
fn read_checked(file: &Checked, credentials: &[String]) -> Result<AttachmentUpload, String> {
    let cannot = |e: std::io::Error| format!("attachment {:?} cannot be read: {e}", file.name);
    let mut bytes = Vec::new();
    open_checked(file)
        .map_err(cannot)?
        .take(MAX_ATTACHMENT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    check_size(&file.name, bytes.len() as u64).map_err(|e| e.to_string())?;
    if credentials.iter().any(|c| contains(&bytes, c.as_bytes())) {
        return Err(format!(
            "attachment {:?} holds a holdline credential (the hub's secret or an agent key): it is never attached",
            file.name
        ));
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

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
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
mod tests;
