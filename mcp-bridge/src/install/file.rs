//! Reading and rewriting a person's config and rule files: a symlink is written through to
//! its target, the mode and owner of an existing file are kept (a file written to hold a
//! credential is `0600` from its first byte: a new one, or an existing one that others
//! could read, whose other bits are kept), the old text is backed up beside it, and the
//! new text replaces it in one rename.

use std::{
    path::{Path, PathBuf},
    time::{SystemTime, UNIX_EPOCH},
};

use super::InstallError;

/// A file as `install` found it.
#[derive(Debug, Clone)]
pub struct TextFile {
    /// The path the client reads (maybe a symlink).
    pub path: PathBuf,
    /// The file the text really lives in: `path` with every symlink followed.
    pub target: PathBuf,
    /// The text, `None` when the file does not exist.
    pub text: Option<String>,
}

impl TextFile {
    /// Reads `path` through any symlinks; a missing file (or a dangling link) reads as `None`.
    pub fn read(path: &Path) -> Result<TextFile, InstallError> {
        let target = follow_links(path)?;
        let text = match std::fs::read_to_string(&target) {
            Ok(s) => Some(s),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(InstallError::io("cannot read", &target, e)),
        };
        Ok(TextFile {
            path: path.to_owned(),
            target,
            text,
        })
    }

    /// Where the text lives, said the way a person recognises it: `PATH` or `PATH -> TARGET`.
    pub fn describe(&self) -> String {
        if self.path == self.target {
            self.path.display().to_string()
        } else {
            format!("{} -> {}", self.path.display(), self.target.display())
        }
    }

    /// Replaces the text: backs the old one up first, keeps mode and owner, and renames a
    /// finished file into place so a client reading it never sees half of it. When
    /// `private` (it holds a key) a new file gets mode `0600`, and an existing one (and its
    /// backup) loses its group and other bits; otherwise a new file gets the default.
    /// Answers the backup's path, if there was an old file.
    pub fn write(&self, text: &str, private: bool) -> Result<Option<PathBuf>, InstallError> {
        self.replace(text, private, true)
    }

    /// Replaces the text as [`TextFile::write`] does but keeps no backup: for an
    /// uninstall, whose old text held holdline's entry (and maybe an agent key).
    pub fn write_unsaved(&self, text: &str) -> Result<(), InstallError> {
        self.replace(text, false, false).map(drop)
    }

    /// Deletes every backup the installer made of this file (`NAME.holdline-backup-*`
    /// beside it): each holds holdline's entry, and maybe an agent key. Answers them.
    pub fn delete_backups(&self) -> Result<Vec<PathBuf>, InstallError> {
        let prefix = format!("{}.holdline-backup-", name(&self.target));
        let Some(dir) = self.target.parent() else {
            return Ok(vec![]);
        };
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Ok(vec![]);
        };
        let mut deleted = vec![];
        for entry in entries.flatten() {
            let made_by_us = entry.file_name().to_str().is_some_and(|n| {
                n.strip_prefix(&prefix).is_some_and(|secs| {
                    !secs.is_empty() && secs.bytes().all(|b| b.is_ascii_digit())
                })
            });
            if made_by_us {
                let path = entry.path();
                std::fs::remove_file(&path)
                    .map_err(|e| InstallError::io("cannot delete", &path, e))?;
                deleted.push(path);
            }
        }
        deleted.sort();
        Ok(deleted)
    }

    fn replace(
        &self,
        text: &str,
        private: bool,
        keep_backup: bool,
    ) -> Result<Option<PathBuf>, InstallError> {
        let target = &self.target;
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| InstallError::io("cannot create", parent, e))?;
        }
        let old = std::fs::metadata(target).ok();
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let backup = sibling(target, &format!("{}.holdline-backup-{secs}", name(target)));
        // One install may write a file twice within a second (Qwen's and Gemini's settings
        // take the entry, then the hooks): the first backup holds the person's own text
        // and stays.
        let backup = if old.is_some() && keep_backup && !backup.exists() {
            // fs::copy keeps the permission bits: a 0600 file's backup is 0600 too.
            std::fs::copy(target, &backup)
                .map_err(|e| InstallError::io("cannot back up", target, e))?;
            if let Some(meta) = &old {
                keep_owner(&backup, meta);
                if private {
                    set_mode(&backup, owner_only(meta.permissions()))?;
                }
            }
            Some(backup)
        } else {
            None
        };
        let tmp = sibling(target, &format!(".{}.holdline-tmp", name(target)));
        write_new(&tmp, text, private).map_err(|e| InstallError::io("cannot write", &tmp, e))?;
        if let Some(meta) = &old {
            let mode = match private {
                true => owner_only(meta.permissions()),
                false => meta.permissions(),
            };
            set_mode(&tmp, mode)?;
            keep_owner(&tmp, meta);
        }
        std::fs::rename(&tmp, target).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            InstallError::io("cannot replace", target, e)
        })?;
        Ok(backup)
    }

    /// The file's permission bits (`0o644`), `None` when it does not exist (or off Unix).
    pub fn mode(&self) -> Option<u32> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let meta = std::fs::metadata(&self.target).ok()?;
            Some(meta.permissions().mode() & 0o777)
        }
        #[cfg(not(unix))]
        None
    }

    /// Takes the group and other bits off an existing file (it holds a key); a missing
    /// one is left missing.
    pub fn make_private(&self) -> Result<(), InstallError> {
        match std::fs::metadata(&self.target) {
            Ok(meta) => set_mode(&self.target, owner_only(meta.permissions())),
            Err(_) => Ok(()),
        }
    }

    /// Deletes the file the client reads (the link itself, when it is one).
    pub fn delete(&self) -> Result<(), InstallError> {
        match std::fs::remove_file(&self.path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(InstallError::io("cannot delete", &self.path, e)),
        }
    }
}

/// Writes `text` into a new file at `path`; a `private` one is `0600` from the start.
fn write_new(path: &Path, text: &str, private: bool) -> std::io::Result<()> {
    use std::io::Write as _;
    let _ = std::fs::remove_file(path);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    if private {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    #[cfg(not(unix))]
    let _ = private;
    options.open(path)?.write_all(text.as_bytes())
}

/// `permissions` without the group and other bits (`0644` → `0600`).
fn owner_only(permissions: std::fs::Permissions) -> std::fs::Permissions {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::Permissions::from_mode(permissions.mode() & 0o7700)
    }
    #[cfg(not(unix))]
    permissions
}

fn set_mode(path: &Path, permissions: std::fs::Permissions) -> Result<(), InstallError> {
    std::fs::set_permissions(path, permissions)
        .map_err(|e| InstallError::io("cannot set the mode of", path, e))
}

/// `path` with every symlink in its last component followed, also when the final target
/// does not exist yet (a dangling link is written through, creating its target).
fn follow_links(path: &Path) -> Result<PathBuf, InstallError> {
    let mut current = path.to_owned();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let link = std::fs::read_link(&current)
                    .map_err(|e| InstallError::io("cannot read the link", &current, e))?;
                current = if link.is_absolute() {
                    link
                } else {
                    current.parent().unwrap_or(Path::new(".")).join(link)
                };
            }
            _ => return Ok(current),
        }
    }
    Err(InstallError::Refused(format!(
        "{} is a loop of symlinks; fix it, then run install again",
        path.display()
    )))
}

fn name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn sibling(path: &Path, name: &str) -> PathBuf {
    path.with_file_name(name)
}

/// Gives `path` the owner of the file it replaces (root editing a person's file must not
/// leave it root's). Only root may change an owner; for anyone else the file is theirs anyway.
#[cfg(unix)]
fn keep_owner(path: &Path, old: &std::fs::Metadata) {
    use std::os::unix::fs::MetadataExt as _;
    let Ok(now) = std::fs::metadata(path) else {
        return;
    };
    if (now.uid(), now.gid()) != (old.uid(), old.gid())
        && let Err(e) = std::os::unix::fs::chown(path, Some(old.uid()), Some(old.gid()))
    {
        eprintln!(
            "note: could not give {} its old owner back: {e}",
            path.display()
        );
    }
}

#[cfg(not(unix))]
fn keep_owner(_path: &Path, _old: &std::fs::Metadata) {}
