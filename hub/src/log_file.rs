//! `logs/hub.log`: opened without following a symbolic link, 0600, and
//! rotated to `hub.log.1` once it passes [`MAX_LOG`], so the hub's own log
//! files never hold more than twice that however many requests it refuses.

use std::fs::{self, File};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Size at which `hub.log` is moved to `hub.log.1` (replacing it).
pub const MAX_LOG: u64 = 10 * 1024 * 1024;

/// The log file; writes go to it, rotating as it fills.
pub struct LogFile {
    path: PathBuf,
    file: File,
    written: u64,
    max: u64,
}

fn open_append(path: &Path) -> io::Result<File> {
    fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)
}

impl LogFile {
    pub fn open(path: PathBuf) -> io::Result<LogFile> {
        Self::open_capped(path, MAX_LOG)
    }

    /// With another cap (tests).
    pub fn open_capped(path: PathBuf, max: u64) -> io::Result<LogFile> {
        let file = open_append(&path)?;
        let written = file.metadata()?.len();
        Ok(LogFile {
            path,
            file,
            written,
            max,
        })
    }

    fn rotate(&mut self) -> io::Result<()> {
        let mut old = self.path.clone().into_os_string();
        old.push(".1");
        fs::rename(&self.path, &old)?;
        self.file = open_append(&self.path)?;
        self.written = 0;
        Ok(())
    }
}

impl Write for LogFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.written >= self.max {
            // A failed rotation keeps appending: losing log lines is worse.
            let _ = self.rotate();
        }
        let n = self.file.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_rotates_once_past_its_cap() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hub.log");
        let mut log = LogFile::open_capped(path.clone(), 1000).unwrap();
        for _ in 0..100 {
            log.write_all(&[b'x'; 99]).unwrap();
            log.write_all(b"\n").unwrap();
        }
        let live = fs::metadata(&path).unwrap().len();
        let old = fs::metadata(dir.path().join("hub.log.1")).unwrap().len();
        assert!(live <= 1000 && old <= 1100, "{live} {old}");
    }

    #[test]
    fn a_log_that_is_a_link_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("elsewhere");
        fs::write(&target, "").unwrap();
        let path = dir.path().join("hub.log");
        std::os::unix::fs::symlink(&target, &path).unwrap();
        assert!(LogFile::open(path).is_err());
    }
}
