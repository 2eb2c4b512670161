//! `verify` and `restore`: a store or backup opened with every check of a start and
//! read through, and a verified backup put in place of a store.
//!
//! Invariant: `restore` never deletes a store, it renames the one it replaces, and
//! answers only for a copy that verifies.

use std::path::{Path, PathBuf};

use super::backup::FORMAT;
use super::{StoreError, Trees, open};

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
        super::files::check_files(dir, &t)?;
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
