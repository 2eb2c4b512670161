//! Backups of the store: taking one, and the folder they are kept in.
//!
//! A backup is a store itself: every tree copied key by key into a new sled
//! folder `<home>/backups/store-<UTC time>/`, with the manifest and witness of
//! the moment it was taken. It is taken while no write runs (the write lock is
//! held), so it is one consistent moment even while the hub serves; reads go
//! on meanwhile. Because it is a store, `verify` (in `verify.rs`) checks it
//! with the very checks of an open.
//!
//! Each backup has a kind, in its name: a person's (`store-<time>`), the
//! daily one (`store-<time>-daily`) or the one before a schema upgrade
//! (`store-<time>-upgrade`); each kind is rotated on its own, so manual
//! backups never push the daily ones out.
//!
//! Invariant: a backup folder exists under its final name only once it is
//! complete and flushed; the newest [`KEPT`] of each kind are kept.

use std::path::{Path, PathBuf};

use super::{Manifest, Store, StoreError, Trees, manifest};
use crate::lock::Unpoisoned as _;

/// How many backups are kept.
pub const KEPT: usize = 7;
const PREFIX: &str = "store-";

/// Why a backup is taken: each kind keeps its newest [`KEPT`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Asked for (`holdline-hub backup`, the panel).
    Manual,
    /// The hub's own, once a day.
    Daily,
    /// Before the schema is upgraded.
    Upgrade,
}

impl Kind {
    /// What follows the time in the folder's name.
    fn suffix(self) -> &'static str {
        match self {
            Kind::Manual => "",
            Kind::Daily => "-daily",
            Kind::Upgrade => "-upgrade",
        }
    }

    /// The kind a backup folder's name says.
    fn of(name: &str) -> Kind {
        if name.ends_with(Kind::Daily.suffix()) {
            Kind::Daily
        } else if name.ends_with(Kind::Upgrade.suffix()) {
            Kind::Upgrade
        } else {
            Kind::Manual
        }
    }
}

/// A backup just taken.
#[derive(Debug, Clone)]
pub struct BackupReport {
    pub path: PathBuf,
    pub sessions: u64,
    pub replies: u64,
}

/// The home whose store is in `dir`: its parent, if `dir` is a home's `db`
/// folder (a store elsewhere, as in tests, has no home to keep backups in).
pub(super) fn home_of(dir: &Path) -> Option<&Path> {
    dir.parent()
        .filter(|_| dir.file_name().is_some_and(|n| n == "db"))
}

/// Where a home keeps its backups.
pub fn backups_dir(home: &Path) -> PathBuf {
    home.join("backups")
}

impl Store {
    /// Takes a person's backup into `<home>/backups/` now (the home is the
    /// store's folder's parent) and drops the oldest of theirs beyond [`KEPT`].
    pub fn backup(&self) -> Result<BackupReport, StoreError> {
        self.backup_of_kind(Kind::Manual)
    }

    /// Takes the daily backup now; the oldest dailies beyond [`KEPT`] go.
    pub fn daily_backup(&self) -> Result<BackupReport, StoreError> {
        self.backup_of_kind(Kind::Daily)
    }

    fn backup_of_kind(&self, kind: Kind) -> Result<BackupReport, StoreError> {
        let home = home_of(&self.dir).ok_or_else(|| {
            StoreError::Io(format!(
                "{} is not a holdline home's store",
                self.dir.display()
            ))
        })?;
        let manifest = self.writing.lock_unpoisoned();
        let t = self.t()?;
        snapshot(&t, &manifest, &backups_dir(home), kind)
    }

    /// How long ago the newest daily backup in `<home>/backups/` was
    /// finished (its folder's time); `None` when there is none.
    pub fn newest_daily_backup_age(&self) -> Option<std::time::Duration> {
        let home = home_of(&self.dir)?;
        let newest = list(&backups_dir(home), Kind::Daily).pop()?;
        let finished = std::fs::metadata(newest).ok()?.modified().ok()?;
        Some(finished.elapsed().unwrap_or_default())
    }
}

pub(super) const FORMAT: &[time::format_description::FormatItem<'static>] =
    time::macros::format_description!("[year][month][day]T[hour][minute][second]Z");

/// Copies every tree of `t` into a new folder in `backups`, then drops the
/// oldest backups of its kind beyond [`KEPT`]. The caller holds the write lock.
pub(super) fn snapshot(
    t: &Trees,
    manifest: &Manifest,
    backups: &Path,
    kind: Kind,
) -> Result<BackupReport, StoreError> {
    let io = |e: std::io::Error| {
        StoreError::Io(format!(
            "cannot write a backup in {}: {e}",
            backups.display()
        ))
    };
    std::fs::create_dir_all(backups).map_err(io)?;
    let name = format!(
        "{PREFIX}{}{}",
        time::OffsetDateTime::now_utc()
            .format(FORMAT)
            .expect("a UTC time formats"),
        kind.suffix()
    );
    let dest = backups.join(&name);
    let tmp = backups.join(format!(".{name}.partial"));
    // What an earlier backup cut short (a full disk, a crash) left.
    for entry in std::fs::read_dir(backups).into_iter().flatten().flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with(&format!(".{PREFIX}")) && name.ends_with(".partial") {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
    let copied = copy_trees(t, &tmp).and_then(|()| {
        super::files::copy_files(&t.dir, &tmp)
            .map_err(|e| StoreError::Io(format!("cannot copy the attachments into a backup: {e}")))
    });
    if let Err(e) = copied {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(e);
    }
    manifest::witness(&tmp, manifest.generation);
    if dest.exists() {
        // Two backups within one second: the newer replaces the older.
        std::fs::remove_dir_all(&dest).map_err(io)?;
    }
    std::fs::rename(&tmp, &dest).map_err(io)?;
    for old in list(backups, kind).iter().rev().skip(KEPT) {
        let _ = std::fs::remove_dir_all(old);
    }
    Ok(BackupReport {
        path: dest,
        sessions: manifest.sessions,
        replies: manifest.replies,
    })
}

fn copy_trees(t: &Trees, dest: &Path) -> Result<(), StoreError> {
    let copy = sled::Config::new().path(dest).open().map_err(|e| {
        StoreError::Io(format!("cannot create a backup in {}: {e}", dest.display()))
    })?;
    for name in t.db.tree_names() {
        let from = t.db.open_tree(&name)?;
        let to = copy.open_tree(&name)?;
        for kv in from.iter() {
            let (k, v) = kv?;
            to.insert(k, v)?;
        }
    }
    copy.flush()?;
    Ok(())
}

/// The backups of `kind` in `backups`, oldest first.
fn list(backups: &Path, kind: Kind) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(backups)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.is_dir()
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(PREFIX) && Kind::of(n) == kind)
        })
        .collect();
    found.sort();
    found
}
