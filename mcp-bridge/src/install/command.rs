//! The command an entry runs when `--command` is not given: the path a person would
//! expect to keep working across upgrades, never a folder a package manager replaces.
//!
//! In order: the npm launcher's own path (`HOLDLINE_MCP_LAUNCHER`, set by the launcher
//! that runs this binary out of the platform package); the PATH entry this binary was
//! started through (e.g. pipx's `~/.local/bin/holdline-mcp` link into its venv); this
//! binary's own resolved path.

use std::path::{Path, PathBuf};

/// The variable the npm launcher sets to the path it was run by (npm's bin shim).
pub const LAUNCHER_VAR: &str = "HOLDLINE_MCP_LAUNCHER";

/// The default command for an entry; `exe` is this binary's own path.
pub fn default_command(exe: &Path) -> String {
    let own = exe.canonicalize().unwrap_or_else(|_| exe.to_owned());
    if let Some(launcher) = launcher(std::env::var_os(LAUNCHER_VAR).map(PathBuf::from)) {
        return launcher.display().to_string();
    }
    let argv0 = std::env::args_os().next().map(PathBuf::from);
    let path = std::env::var_os("PATH");
    if let Some(shim) = argv0.and_then(|a| path_entry(&a, path.as_deref()?, &own)) {
        return shim.display().to_string();
    }
    own.display().to_string()
}

/// The launcher's path when it names an existing file by an absolute path.
fn launcher(var: Option<PathBuf>) -> Option<PathBuf> {
    var.filter(|p| p.is_absolute() && p.is_file())
}

/// Where a bare `argv0` (started by name, found on PATH) was found, when that file is
/// this binary (`own`, resolved): the first PATH folder holding it, as the shell does.
fn path_entry(argv0: &Path, path: &std::ffi::OsStr, own: &Path) -> Option<PathBuf> {
    if argv0.components().count() != 1 {
        return None;
    }
    let found = std::env::split_paths(path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(argv0))
        .find(|candidate| candidate.is_file())?;
    (found.canonicalize().ok()? == own).then_some(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_launcher_counts_only_as_an_existing_absolute_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("holdline-mcp");
        std::fs::write(&file, "").unwrap();
        assert_eq!(launcher(Some(file.clone())), Some(file));
        assert_eq!(launcher(Some(dir.path().join("gone"))), None);
        assert_eq!(launcher(Some(dir.path().to_owned())), None);
        assert_eq!(launcher(Some("holdline-mcp".into())), None);
        assert_eq!(launcher(None), None);
    }

    #[cfg(unix)]
    #[test]
    fn a_path_entry_counts_only_when_it_is_this_binary() {
        let dir = tempfile::tempdir().unwrap();
        let (real, shims, other) = (
            dir.path().join("real"),
            dir.path().join("shims"),
            dir.path().join("other"),
        );
        for d in [&real, &shims, &other] {
            std::fs::create_dir(d).unwrap();
        }
        let own = real.join("holdline-mcp");
        std::fs::write(&own, "").unwrap();
        std::os::unix::fs::symlink(&own, shims.join("holdline-mcp")).unwrap();
        std::fs::write(other.join("holdline-mcp"), "").unwrap();
        let own = own.canonicalize().unwrap();
        let path = |dirs: &[&Path]| std::env::join_paths(dirs).unwrap();
        let name = Path::new("holdline-mcp");
        assert_eq!(
            path_entry(name, &path(&[&dir.path().join("none"), &shims]), &own),
            Some(shims.join("holdline-mcp"))
        );
        // The first match on PATH is another file: the shell ran that one, not this binary.
        assert_eq!(path_entry(name, &path(&[&other, &shims]), &own), None);
        assert_eq!(
            path_entry(&shims.join("holdline-mcp"), &path(&[&shims]), &own),
            None
        );
    }
}
