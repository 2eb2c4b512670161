//! `verify` and `restore`: a store or backup opened with every check of a start and
//! read through, and a verified backup put in place of a store.
//!
//! Invariant: `restore` never deletes a store, it renames the one it replaces (a
//! name of its own, also for several restores within one second), answers only
//! for a copy that verifies, and never widens access: the credentials it names
//! come from the store it replaces, or none are kept.

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
        t.check_trees(&manifest, dir)?;
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

/// What a restore did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restored {
    /// What the restored store holds.
    pub verified: Verified,
    /// Where the store it replaced went (`None`: there was none).
    pub aside: Option<PathBuf>,
    /// Whose credentials the restored store has.
    pub credentials: Credentials,
}

/// Whose credentials (agent keys, panel logins) a restored store has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credentials {
    /// The store it replaced had them: they are carried over, the backup's
    /// dropped (newer than the backup, they never grant more than now).
    Carried,
    /// There was no store, or it does not verify: nothing vouches for the
    /// backup's, so none is kept.
    Dropped,
}

/// Puts a copy of `backup` in place of the store in `db_dir` (whose hub must
/// not run), after verifying the backup; the store it replaces is renamed
/// `db.replaced-<time>`, never deleted.
///
/// A restore never widens access: the meta records named in `credentials`
/// (agent keys, panel logins) are taken from the store it replaces when that
/// one verifies, so a key revoked or a login ended after the backup stays so;
/// otherwise the restored store has none of them.
pub fn restore(backup: &Path, db_dir: &Path, credentials: &[&str]) -> Result<Restored, StoreError> {
    verify(backup)?;
    let current = current_credentials(db_dir, credentials);
    let aside = move_aside(db_dir)?;
    copy_dir(backup, db_dir).map_err(|e| {
        StoreError::Restore(format!(
            "cannot copy {} into {}: {e}",
            backup.display(),
            db_dir.display()
        ))
    })?;
    put_credentials(db_dir, credentials, current.as_deref())?;
    Ok(Restored {
        verified: verify(db_dir)?,
        aside,
        credentials: match current {
            Some(_) => Credentials::Carried,
            None => Credentials::Dropped,
        },
    })
}

/// The meta records `names` of the store in `dir`, if there is one that
/// verifies (one that does not may hold older ones).
fn current_credentials(dir: &Path, names: &[&str]) -> Option<Vec<Option<Vec<u8>>>> {
    verify(dir).ok()?;
    let (t, _) = open::open_trees_for(dir, 64 << 20, open::Purpose::Verify).ok()?;
    names
        .iter()
        .map(|name| t.meta.get(name).ok().map(|v| v.map(|v| v.to_vec())))
        .collect()
}

/// Sets the meta records `names` of the store in `dir` to `values` (removed
/// where a value is missing, all of them when `values` is `None`).
fn put_credentials(
    dir: &Path,
    names: &[&str],
    values: Option<&[Option<Vec<u8>>]>,
) -> Result<(), StoreError> {
    let (t, _) = open::open_trees(dir, 64 << 20)?;
    for (i, name) in names.iter().enumerate() {
        match values.and_then(|v| v.get(i)).and_then(Option::as_ref) {
            Some(value) => t.meta.insert(name, value.as_slice())?,
            None => t.meta.remove(name)?,
        };
    }
    t.db.flush()?;
    Ok(())
}

/// Renames the store in `db_dir` to a name no other has (`db.replaced-<time>`,
/// with `-2`, `-3`, … for more restores within one second).
fn move_aside(db_dir: &Path) -> Result<Option<PathBuf>, StoreError> {
    if !db_dir.exists() {
        return Ok(None);
    }
    let stamp = time::OffsetDateTime::now_utc()
        .format(FORMAT)
        .expect("a UTC time formats");
    let mut aside = db_dir.with_file_name(format!("db.replaced-{stamp}"));
    for n in 2.. {
        if !aside.exists() {
            break;
        }
        aside = db_dir.with_file_name(format!("db.replaced-{stamp}-{n}"));
    }
    std::fs::rename(db_dir, &aside).map_err(|e| {
        StoreError::Restore(format!(
            "cannot move {} aside to {}: {e}",
            db_dir.display(),
            aside.display()
        ))
    })?;
    Ok(Some(aside))
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
