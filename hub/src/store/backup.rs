//! Backups of the store, `verify` and `restore`.
//!
//! A backup is a store itself: every tree copied key by key into a new sled
//! folder `<home>/backups/store-<UTC time>/`, with the manifest and witness of
//! the moment it was taken. It is taken while no write runs (the write lock is
//! held), so it is one consistent moment even while the hub serves; reads go
//! on meanwhile. Because it is a store, `verify` checks it with the very
//! checks of an open, and `restore` puts a copy of it in place.
//!
//! Invariant: a backup folder exists under its final name only once it is
//! complete and flushed; the newest [`KEPT`] are kept; `restore` never
//! deletes a store, it renames the one it replaces.

use std::path::{Path, PathBuf};

use super::{Manifest, Store, StoreError, Trees, manifest, open};

/// How many backups are kept.
pub const KEPT: usize = 7;
const PREFIX: &str = "store-";

/// A backup just taken.
#[derive(Debug, Clone)]
pub struct BackupReport {
    pub path: PathBuf,
    pub sessions: u64,
    pub replies: u64,
}

/// What a store or backup that passed `verify` holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub sessions: u64,
    pub messages: u64,
    pub replies: u64,
    /// The older schema version of a backup taken before an upgrade: it
    /// opened and its sessions read, but it has no manifest to check
    /// against (a hub upgrades it when it starts on it).
    pub older_schema: Option<u32>,
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
    /// Takes a backup into `<home>/backups/` now (the home is the store's
    /// folder's parent) and drops the oldest beyond [`KEPT`].
    pub fn backup(&self) -> Result<BackupReport, StoreError> {
        let home = home_of(&self.dir).ok_or_else(|| {
            StoreError::Io(format!(
                "{} is not a holdline home's store",
                self.dir.display()
            ))
        })?;
        let manifest = self.writing.lock().unwrap_or_else(|p| p.into_inner());
        let t = self.t()?;
        snapshot(&t, &manifest, &backups_dir(home))
    }

    /// How long ago the newest backup in `<home>/backups/` was finished
    /// (its folder's time); `None` when there is none.
    pub fn newest_backup_age(&self) -> Option<std::time::Duration> {
        let home = home_of(&self.dir)?;
        let newest = list(&backups_dir(home)).pop()?;
        let finished = std::fs::metadata(newest).ok()?.modified().ok()?;
        Some(finished.elapsed().unwrap_or_default())
    }
}

const FORMAT: &[time::format_description::FormatItem<'static>] =
    time::macros::format_description!("[year][month][day]T[hour][minute][second]Z");

/// Copies every tree of `t` into a new folder in `backups`, then drops the
/// oldest backups beyond [`KEPT`]. The caller holds the write lock.
pub(super) fn snapshot(
    t: &Trees,
    manifest: &Manifest,
    backups: &Path,
) -> Result<BackupReport, StoreError> {
    let io = |e: std::io::Error| {
        StoreError::Io(format!(
            "cannot write a backup in {}: {e}",
            backups.display()
        ))
    };
    std::fs::create_dir_all(backups).map_err(io)?;
    let name = format!(
        "{PREFIX}{}",
        time::OffsetDateTime::now_utc()
            .format(FORMAT)
            .expect("a UTC time formats")
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
    if let Err(e) = copy_trees(t, &tmp) {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(e);
    }
    manifest::witness(&tmp, manifest.generation);
    if dest.exists() {
        // Two backups within one second: the newer replaces the older.
        std::fs::remove_dir_all(&dest).map_err(io)?;
    }
    std::fs::rename(&tmp, &dest).map_err(io)?;
    for old in list(backups).iter().rev().skip(KEPT) {
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

/// The backups in `backups`, oldest first.
fn list(backups: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(backups)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.is_dir()
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(PREFIX))
        })
        .collect();
    found.sort();
    found
}

/// Opens the store or backup in `dir` with every check of a start, then
/// reads every session record and message: answers what it holds.
pub fn verify(dir: &Path) -> Result<Verified, StoreError> {
    if !dir.join("db").is_file() {
        return Err(StoreError::Corrupt {
            path: dir.to_owned(),
            detail: "it is not a store (no sled database in it)".into(),
        });
    }
    let (t, manifest) = open::open_trees_for(dir, 64 << 20, open::Purpose::Verify)?;
    let Some(manifest) = manifest else {
        return verify_older(&t, dir);
    };
    let read = open::quiet_panics(|| {
        read_everything(&t, dir)?;
        count_messages(&t)
    });
    let messages = read
        .unwrap_or_else(|panic| Err(StoreError::Decode(format!("sled cannot read it: {panic}"))))
        .map_err(|e| open::damaged_at(dir, e))?;
    Ok(Verified {
        sessions: manifest.sessions,
        messages,
        replies: manifest.replies,
        older_schema: None,
    })
}

/// A store of an older schema version: every session record reads; its
/// messages are counted where that version kept them.
fn verify_older(t: &Trees, dir: &Path) -> Result<Verified, StoreError> {
    let version = t
        .meta
        .get("schema_version")?
        .and_then(|v| <[u8; 4]>::try_from(v.as_ref()).ok())
        .map(u32::from_be_bytes);
    let damaged = |detail: String| StoreError::Corrupt {
        path: dir.to_owned(),
        detail,
    };
    let mut sessions = 0;
    for kv in t.sessions.iter() {
        let (_, v) = kv?;
        super::decode::<crate::session::Session>(&v)
            .map_err(|e| damaged(format!("a session record is unreadable: {e}")))?;
        sessions += 1;
    }
    let legacy = t.db.open_tree(super::LEGACY_MESSAGES)?;
    Ok(Verified {
        sessions,
        messages: legacy.len() as u64 + count_messages(t)?,
        replies: t.replies.len() as u64,
        older_schema: version,
    })
}

/// Every session record decodes and has a summary.
fn read_everything(t: &Trees, dir: &Path) -> Result<(), StoreError> {
    let damaged = |detail: String| StoreError::Corrupt {
        path: dir.to_owned(),
        detail,
    };
    let mut records = 0u64;
    for kv in t.sessions.iter() {
        let (_, v) = kv?;
        let s: crate::session::Session = super::decode(&v)
            .map_err(|e| damaged(format!("a session record is unreadable: {e}")))?;
        if !t.summaries.contains_key(s.token.to_raw())? {
            return Err(damaged(format!("session {} has no summary", s.token)));
        }
        records += 1;
    }
    let summaries = t.summaries.len() as u64;
    if records != summaries {
        return Err(damaged(format!(
            "it has {summaries} session summaries but {records} session records"
        )));
    }
    Ok(())
}

fn count_messages(t: &Trees) -> Result<u64, StoreError> {
    let mut n = 0;
    for kv in t.history.iter() {
        let (_, v) = kv?;
        n += super::history::entries(&v)?.len() as u64;
    }
    Ok(n)
}

/// Puts a copy of `backup` in place of the store in `db_dir` (whose hub must
/// not run), after verifying the backup; the store it replaces is renamed
/// `db.replaced-<time>`, never deleted. Answers what the restored store holds
/// and where the old one went.
pub fn restore(backup: &Path, db_dir: &Path) -> Result<(Verified, Option<PathBuf>), StoreError> {
    verify(backup)?;
    let io = |what: &str, e: std::io::Error| StoreError::Io(format!("{what}: {e}"));
    let aside = if db_dir.exists() {
        let stamp = time::OffsetDateTime::now_utc()
            .format(FORMAT)
            .expect("a UTC time formats");
        let aside = db_dir.with_file_name(format!("db.replaced-{stamp}"));
        std::fs::rename(db_dir, &aside)
            .map_err(|e| io(&format!("cannot move {} aside", db_dir.display()), e))?;
        Some(aside)
    } else {
        None
    };
    copy_dir(backup, db_dir)
        .map_err(|e| io(&format!("cannot copy {} into place", backup.display()), e))?;
    let verified = verify(db_dir)?;
    Ok((verified, aside))
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}
