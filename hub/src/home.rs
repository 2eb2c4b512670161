//! The holdline home folder: its layout, its permissions (0700 folder, 0600
//! files) and the secret made at first start.

use std::fs;
use std::io::Write as _;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

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
    /// Where a running hub writes the address it listens on (for the admin CLI and tests).
    pub fn addr_file(&self) -> PathBuf {
        self.root.join("hub.addr")
    }

    /// Makes the folders (0700) and the secret (0600) if they are missing,
    /// and tightens permissions that are too open.
    pub fn prepare(&self) -> std::io::Result<()> {
        for dir in [
            &self.root,
            &self.db_dir(),
            &self.archive_dir(),
            &self.logs_dir(),
        ] {
            fs::create_dir_all(dir)?;
            fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
        }
        let secret = self.secret_file();
        if !secret.exists() {
            write_private(&secret, new_secret().as_bytes())?;
        } else {
            fs::set_permissions(&secret, fs::Permissions::from_mode(0o600))?;
        }
        Ok(())
    }

    /// The shared secret, trimmed.
    pub fn read_secret(&self) -> std::io::Result<String> {
        let s = fs::read_to_string(self.secret_file())?;
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

/// 244 random bits (two v4 UUIDs) as 64 hex digits: the secret, and the
/// panel's login ids.
pub fn new_secret() -> String {
    format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

/// Writes a file only its owner can read (0600), replacing any old one atomically.
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    {
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    fs::set_permissions(&tmp, fs::Permissions::from_mode(0o600))?;
    fs::rename(&tmp, path)
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
}
