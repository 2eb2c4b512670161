//! The holdline home folder: its layout, its permissions (0700 folder, 0600
//! files) and the secret made at first start.
//!
//! Invariant: the hub only uses a home and secret that are its own user's and
//! that no other user can write, and never follows a symbolic link inside the
//! home: files are opened with `O_NOFOLLOW` and new ones created exclusively,
//! so a planted link can neither be chmod-ed nor receive the secret.

use std::fs;
use std::io::{self, Write as _};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// `O_NOFOLLOW`: opening a symbolic link fails (`ELOOP`).
fn no_follow() -> i32 {
    rustix::fs::OFlags::NOFOLLOW.bits() as i32
}

fn refused(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, message)
}

/// Refuses `meta` (of `path`) when another user owns it or every user may
/// write it: someone else could have planted or may swap its content.
fn check_owner(path: &Path, meta: &fs::Metadata) -> io::Result<()> {
    let me = rustix::process::geteuid().as_raw();
    // Root's files are trusted by everyone: root can change anything anyway.
    if meta.uid() != me && meta.uid() != 0 {
        return Err(refused(format!(
            "{} belongs to user id {}, not to the user running the hub ({me}); \
             run the hub as its owner, or move it aside and restart to make a new one",
            path.display(),
            meta.uid()
        )));
    }
    if meta.mode() & 0o002 != 0 {
        return Err(refused(format!(
            "{} is writable by every user, so its content cannot be trusted; \
             check it, then `chmod o-w {}` (or move it aside) and restart",
            path.display(),
            path.display()
        )));
    }
    Ok(())
}

/// Makes `dir` (0700) unless it exists as this user's folder; refuses a
/// symbolic link (inside the home) or a folder that is not the user's.
fn private_dir(dir: &Path, follow: bool) -> io::Result<()> {
    match fs::symlink_metadata(dir) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)?;
        }
        Err(e) => return Err(e),
        Ok(m) if m.file_type().is_symlink() && !follow => {
            return Err(refused(format!(
                "{} is a symbolic link; the hub does not follow links inside its home: \
                 replace it with a folder (move the link aside and restart)",
                dir.display()
            )));
        }
        Ok(_) => {}
    }
    let meta = fs::metadata(dir)?;
    if !meta.is_dir() {
        return Err(refused(format!(
            "{} is not a folder; move it aside and restart",
            dir.display()
        )));
    }
    check_owner(dir, &meta)?;
    if meta.mode() & 0o777 != 0o700 {
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// Paths inside the home folder.
#[derive(Debug, Clone)]
pub struct Home {
    pub root: PathBuf,
}

impl Home {
    pub fn new(root: PathBuf) -> Self {
        Home { root }
    }
    pub fn secret_file(&self) -> PathBuf {
        self.root.join("secret")
    }
    pub fn db_dir(&self) -> PathBuf {
        self.root.join("db")
    }
    pub fn archive_dir(&self) -> PathBuf {
        self.root.join("archive")
    }
    pub fn logs_dir(&self) -> PathBuf {
        self.root.join("logs")
    }
    /// The Web Push (VAPID) private key, made at first start.
    pub fn vapid_key_file(&self) -> PathBuf {
        self.root.join("vapid-key")
    }
    /// Where a running hub writes the address it listens on (for the admin CLI and tests).
    pub fn addr_file(&self) -> PathBuf {
        holdline_contract::local_hub::addr_file(&self.root)
    }

    /// Makes the folders (0700) and the secret (0600) if they are missing,
    /// tightens permissions that are too open, and refuses (saying what to
    /// do) a home or secret that is another user's, writable by every user,
    /// or a symbolic link inside the home. The home itself may be a link.
    pub fn prepare(&self) -> io::Result<()> {
        private_dir(&self.root, true)?;
        for dir in [&self.db_dir(), &self.archive_dir(), &self.logs_dir()] {
            private_dir(dir, false)?;
        }
        let secret = self.secret_file();
        match open_own(&secret) {
            Ok(file) => file.set_permissions(fs::Permissions::from_mode(0o600)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                write_private(&secret, new_secret().as_bytes())
            }
            Err(e) => Err(e),
        }
    }

    /// The shared secret, trimmed.
    pub fn read_secret(&self) -> io::Result<String> {
        let mut s = String::new();
        io::Read::read_to_string(&mut open_own(&self.secret_file())?, &mut s)?;
        let s = s.trim().to_owned();
        if s.len() < 16 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "{} holds a secret shorter than 16 characters; delete it and restart the hub to make a new one",
                    self.secret_file().display()
                ),
            ));
        }
        Ok(s)
    }
}

/// The content of a private file of the home (0600 kept), or `make()`
/// written there (0600) when the file is missing.
pub fn read_or_make_private(path: &Path, make: impl FnOnce() -> String) -> io::Result<String> {
    match open_own(path) {
        Ok(mut file) => {
            file.set_permissions(fs::Permissions::from_mode(0o600))?;
            let mut s = String::new();
            io::Read::read_to_string(&mut file, &mut s)?;
            Ok(s)
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let made = make();
            write_private(path, made.as_bytes())?;
            Ok(made)
        }
        Err(e) => Err(e),
    }
}

/// 244 random bits (two v4 UUIDs) as 64 hex digits: the secret, and the
/// panel's login ids.
pub fn new_secret() -> String {
    format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

/// Opens an existing file of the home for reading, refusing a symbolic link
/// or a file another user owns or every user may write.
fn open_own(path: &Path) -> io::Result<fs::File> {
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(no_follow())
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) {
                refused(format!(
                    "{} is a symbolic link; the hub does not follow links inside its home: \
                     move the link aside and restart (a new file is made)",
                    path.display()
                ))
            } else {
                e
            }
        })?;
    check_owner(path, &file.metadata()?)?;
    Ok(file)
}

/// Writes a file only its owner can read (0600), replacing any old one
/// atomically. The temporary file is created new (never opened through a
/// link someone planted there).
pub fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut f = PrivateFile::create(path)?;
    f.file.write_all(bytes)?;
    f.commit()
}

/// A file [`write_private`] writes as a stream: written under a temporary
/// name (0600, never through a link), in place only once [`PrivateFile::commit`]ted.
pub struct PrivateFile {
    pub file: fs::File,
    tmp: PathBuf,
    path: PathBuf,
}

impl PrivateFile {
    pub fn create(path: &Path) -> io::Result<PrivateFile> {
        let tmp = path.with_extension("tmp");
        // A leftover (or planted) temporary: unlinking a link leaves its target alone.
        match fs::remove_file(&tmp) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        let file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(no_follow())
            .mode(0o600)
            .open(&tmp)?;
        file.set_permissions(fs::Permissions::from_mode(0o600))?;
        Ok(PrivateFile {
            file,
            tmp,
            path: path.to_owned(),
        })
    }

    /// Synced, then renamed into place.
    pub fn commit(self) -> io::Result<()> {
        self.file.sync_all()?;
        fs::rename(&self.tmp, &self.path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prepare_makes_private_folder_and_a_lasting_secret() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path().join("h"));
        home.prepare().unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&home.root), 0o700);
        assert_eq!(mode(&home.secret_file()), 0o600);
        let first = home.read_secret().unwrap();
        assert_eq!(first.len(), 64);
        home.prepare().unwrap();
        assert_eq!(home.read_secret().unwrap(), first);
    }

    fn prepared() -> (tempfile::TempDir, Home) {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path().join("h"));
        home.prepare().unwrap();
        (dir, home)
    }

    fn mode(p: &Path) -> u32 {
        fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_secret_that_is_a_link_is_refused_and_its_target_untouched() {
        let (dir, home) = prepared();
        let target = dir.path().join("elsewhere");
        fs::write(&target, "0123456789abcdef0123456789abcdef").unwrap();
        fs::set_permissions(&target, fs::Permissions::from_mode(0o644)).unwrap();
        fs::remove_file(home.secret_file()).unwrap();
        std::os::unix::fs::symlink(&target, home.secret_file()).unwrap();
        let err = home.prepare().unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert!(home.read_secret().is_err());
        assert_eq!(mode(&target), 0o644, "the link's target was not chmod-ed");
    }

    #[test]
    fn a_planted_temporary_link_does_not_receive_the_secret() {
        let (dir, home) = prepared();
        let target = dir.path().join("stolen");
        fs::write(&target, "").unwrap();
        std::os::unix::fs::symlink(&target, home.root.join("secret.tmp")).unwrap();
        write_private(&home.secret_file(), b"fedcba9876543210fedcba9876543210").unwrap();
        assert_eq!(fs::read_to_string(&target).unwrap(), "");
        assert_eq!(
            home.read_secret().unwrap(),
            "fedcba9876543210fedcba9876543210"
        );
        assert!(
            !fs::symlink_metadata(home.secret_file())
                .unwrap()
                .file_type()
                .is_symlink()
        );
    }

    #[test]
    fn a_home_writable_by_everyone_is_refused_with_what_to_do() {
        let (_dir, home) = prepared();
        fs::set_permissions(&home.root, fs::Permissions::from_mode(0o777)).unwrap();
        let err = home.prepare().unwrap_err();
        assert!(err.to_string().contains("chmod o-w"), "{err}");
        fs::set_permissions(&home.root, fs::Permissions::from_mode(0o755)).unwrap();
        home.prepare().unwrap();
        assert_eq!(mode(&home.root), 0o700, "a merely loose home is tightened");
    }

    #[test]
    fn a_secret_or_home_of_another_user_is_refused() {
        if rustix::process::geteuid().as_raw() != 0 {
            eprintln!("skipped: changing a file's owner needs root");
            return;
        }
        let (_dir, home) = prepared();
        let other = Some(rustix::process::Uid::from_raw(4242));
        rustix::fs::chown(home.secret_file(), other, None).unwrap();
        let err = home.prepare().unwrap_err();
        assert!(err.to_string().contains("user id 4242"), "{err}");
        rustix::fs::chown(home.secret_file(), Some(rustix::process::Uid::ROOT), None).unwrap();
        home.prepare().unwrap();
        rustix::fs::chown(&home.root, other, None).unwrap();
        let err = home.prepare().unwrap_err();
        assert!(err.to_string().contains("user id 4242"), "{err}");
    }
}
