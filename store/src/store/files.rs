//! A question's files, stored once by content: the bytes in
//! `<store>/attachments/<SHA-256 hex>` beside sled's files (never in sled, so
//! neither a journal record nor sled's log and page cache holds them), and the
//! `files` tree naming, for each attachment id a message carries, its file, its
//! owner (the credential that sent it), its question and when it came.
//!
//! Invariant: a file is on disk (written, synced, renamed into place) before
//! any record names it; a file no record names is deleted only after a flush
//! made its release durable and while no write is staging it; a write that
//! asks for the quota check ([`super::Write::within_quota`]) is refused whole
//! when the distinct files of its owner, or of everyone, would pass their
//! quota — checked under the store's write lock, so two concurrent writes
//! cannot both pass.

use std::collections::HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};

use super::journal::{Op, TreeId};
use super::{StoreError, Trees, decode, encode};
use crate::lock::Unpoisoned as _;

/// The folder of the files, inside the store's folder.
pub const FOLDER: &str = "attachments";

/// What one attachment id names: written in the `files` tree, by id.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FileRecord {
    /// SHA-256 of the bytes, lowercase hex: the file's name.
    pub sha: String,
    pub size: u64,
    /// The agent key that sent it (`None`: the hub secret).
    pub owner: Option<String>,
    /// The session whose message carries it.
    pub token: String,
    /// The `requestId` of its question (empty when unknown: imported, adopted, upgraded).
    pub request: String,
    /// When it was stored (ms since the epoch).
    pub at: i64,
}

/// The quotas a write checked with [`super::Write::within_quota`] must keep: bytes of
/// distinct files per owner and in all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quota {
    pub per_owner: u64,
    pub total: u64,
}

impl Default for Quota {
    fn default() -> Self {
        Quota {
            per_owner: 256 << 20,
            total: 1 << 30,
        }
    }
}

/// What an owner (or everyone) holds: distinct files and their bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Usage {
    pub files: u64,
    pub bytes: u64,
}

/// Why a write was refused for its files.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuotaExceeded {
    #[error(
        "the attachments of {owner} would take {would} bytes, over its quota of {quota} bytes; nothing was stored (the person can free space with `holdline-hub attachments`)"
    )]
    Owner {
        owner: String,
        would: u64,
        quota: u64,
    },
    #[error(
        "the hub's attachments would take {would} bytes, over its total quota of {quota} bytes; nothing was stored (the person can free space with `holdline-hub attachments`)"
    )]
    Total { would: u64, quota: u64 },
}

/// How many records of each owner (`None`: the hub secret) name one file.
type OwnerRefs = Vec<(Option<String>, u32)>;

/// Every file record in memory as counts: which owners name each file, and what
/// each owner holds. Small: one entry per distinct file.
#[derive(Debug, Clone, Default)]
pub(super) struct Index {
    /// File → its size and how many records of each owner name it.
    files: HashMap<String, (u64, OwnerRefs)>,
    usage: HashMap<Option<String>, Usage>,
    total: Usage,
}

impl Index {
    fn add(&mut self, r: &FileRecord) {
        let (size, refs) = self
            .files
            .entry(r.sha.clone())
            .or_insert_with(|| (r.size, Vec::new()));
        if refs.is_empty() {
            self.total.files += 1;
            self.total.bytes += *size;
        }
        match refs.iter_mut().find(|(o, _)| *o == r.owner) {
            Some((_, n)) => *n += 1,
            None => {
                refs.push((r.owner.clone(), 1));
                let u = self.usage.entry(r.owner.clone()).or_default();
                u.files += 1;
                u.bytes += *size;
            }
        }
    }

    fn remove(&mut self, r: &FileRecord) {
        let Some((size, refs)) = self.files.get_mut(&r.sha) else {
            return;
        };
        let size = *size;
        if let Some(i) = refs.iter().position(|(o, _)| *o == r.owner) {
            refs[i].1 -= 1;
            if refs[i].1 == 0 {
                refs.swap_remove(i);
                if let Some(u) = self.usage.get_mut(&r.owner) {
                    u.files -= 1;
                    u.bytes -= size;
                    if u.files == 0 {
                        self.usage.remove(&r.owner);
                    }
                }
            }
        }
        if refs.is_empty() {
            self.files.remove(&r.sha);
            self.total.files -= 1;
            self.total.bytes -= size;
        }
    }

    fn usage_of(&self, owner: &Option<String>) -> Usage {
        self.usage.get(owner).copied().unwrap_or_default()
    }
}

/// The files of one store: their folder, the index, the files being staged.
pub(super) struct Files {
    dir: PathBuf,
    /// Changed only under the store's write lock, after the write is applied.
    index: Mutex<Index>,
    /// Files written for a write not yet applied: never swept.
    pins: Mutex<HashMap<String, usize>>,
    quota: Mutex<Quota>,
}

/// A file on disk that a write is about to name; while it lives, no sweep deletes it.
pub struct Staged {
    files: Arc<Files>,
    pub sha: String,
    pub size: u64,
}

impl Drop for Staged {
    fn drop(&mut self) {
        let mut pins = self.files.pins.lock_unpoisoned();
        if let Some(n) = pins.get_mut(&self.sha) {
            *n -= 1;
            if *n == 0 {
                pins.remove(&self.sha);
            }
        }
    }
}

/// The SHA-256 of `bytes`, lowercase hex.
pub fn sha_of(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn is_sha(name: &str) -> bool {
    name.len() == 64 && name.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

impl Files {
    /// Reads every record of `t` and checks each named file is there with its size.
    pub(super) fn load(store_dir: &Path, t: &Trees) -> Result<Files, StoreError> {
        let dir = store_dir.join(FOLDER);
        let index = index_of(&dir, t, store_dir)?;
        Ok(Files {
            dir,
            index: Mutex::new(index),
            pins: Mutex::default(),
            quota: Mutex::new(Quota::default()),
        })
    }

    pub(super) fn set_quota(&self, q: Quota) {
        *self.quota.lock_unpoisoned() = q;
    }

    pub(super) fn quota(&self) -> Quota {
        *self.quota.lock_unpoisoned()
    }

    pub(super) fn index(&self) -> std::sync::MutexGuard<'_, Index> {
        self.index.lock_unpoisoned()
    }

    pub(super) fn path(&self, sha: &str) -> PathBuf {
        self.dir.join(sha)
    }

    /// Writes `bytes` as a file (unless it is there already), synced, pinned.
    pub(super) fn stage(self: &Arc<Self>, bytes: &[u8]) -> std::io::Result<Staged> {
        let sha = sha_of(bytes);
        *self.pins.lock_unpoisoned().entry(sha.clone()).or_default() += 1;
        let staged = Staged {
            files: self.clone(),
            sha,
            size: bytes.len() as u64,
        };
        let path = self.path(&staged.sha);
        if std::fs::metadata(&path).is_ok_and(|m| m.len() == staged.size) {
            return Ok(staged);
        }
        std::fs::create_dir_all(&self.dir)?;
        let tmp = self
            .dir
            .join(format!(".{}.partial", uuid::Uuid::new_v4().simple()));
        let written = (|| {
            let mut f = private_file(&tmp)?;
            f.write_all(bytes)?;
            f.sync_all()?;
            std::fs::rename(&tmp, &path)?;
            std::fs::File::open(&self.dir)?.sync_all()
        })();
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written.map(|()| staged)
    }

    /// Whether the owner's and everyone's usage, plus `files` (sha, size) not yet
    /// held, stay within the quota: a cheap refusal before anything is written.
    pub(super) fn fits(
        &self,
        owner: &Option<String>,
        files: &[(String, u64)],
    ) -> Result<(), QuotaExceeded> {
        let mut next = self.index().clone();
        for (sha, size) in files {
            next.add(&FileRecord {
                sha: sha.clone(),
                size: *size,
                owner: owner.clone(),
                token: String::new(),
                request: String::new(),
                at: 0,
            });
        }
        check(&next, &self.quota(), std::slice::from_ref(owner))
    }

    /// The index after the file records of `ops` on `t`, checked against the quota
    /// for the owners it adds to when `checked`; `None` when `ops` has no file record.
    pub(super) fn after(
        &self,
        t: &Trees,
        ops: &[Op],
        checked: bool,
    ) -> Result<Option<Index>, StoreError> {
        if !ops.iter().any(|o| o.tree == TreeId::Files) {
            return Ok(None);
        }
        let mut next = self.index().clone();
        let mut added = Vec::new();
        for op in ops.iter().filter(|o| o.tree == TreeId::Files) {
            if let Some(old) = t.files.get(&op.key)? {
                next.remove(&decode(&old)?);
            }
            if let Some(v) = &op.value {
                let r: FileRecord = decode(v)?;
                next.add(&r);
                added.push(r.owner);
            }
        }
        if checked {
            check(&next, &self.quota(), &added).map_err(StoreError::Quota)?;
        }
        Ok(Some(next))
    }

    pub(super) fn set_index(&self, next: Index) {
        *self.index() = next;
    }

    /// Deletes the files no record names and no write stages (and leftovers of
    /// writes cut short). Call only after a flush made every release durable.
    pub(super) fn sweep(&self) -> u64 {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return 0;
        };
        let mut freed = 0;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let named = {
                let index = self.index();
                let pins = self.pins.lock_unpoisoned();
                index.files.contains_key(&name) || pins.contains_key(&name)
            };
            let partial = name.starts_with('.') && name.ends_with(".partial");
            if !named && (is_sha(&name) || partial) {
                let size = entry.metadata().map_or(0, |m| m.len());
                if std::fs::remove_file(entry.path()).is_ok() && !partial {
                    freed += size;
                }
            }
        }
        freed
    }

    pub(super) fn usage(&self) -> (Vec<(Option<String>, Usage)>, Usage) {
        let index = self.index();
        let mut owners: Vec<_> = index.usage.iter().map(|(o, u)| (o.clone(), *u)).collect();
        owners.sort();
        (owners, index.total)
    }
}

/// The owners in `owners` and the total against the quota.
fn check(next: &Index, q: &Quota, owners: &[Option<String>]) -> Result<(), QuotaExceeded> {
    for owner in owners {
        let would = next.usage_of(owner).bytes;
        if would > q.per_owner {
            return Err(QuotaExceeded::Owner {
                owner: match owner {
                    Some(k) => format!("agent key {k:?}"),
                    None => "the hub secret".into(),
                },
                would,
                quota: q.per_owner,
            });
        }
    }
    if next.total.bytes > q.total {
        return Err(QuotaExceeded::Total {
            would: next.total.bytes,
            quota: q.total,
        });
    }
    Ok(())
}

/// Every record of `t` counted, each named file checked on disk in `dir`.
fn index_of(dir: &Path, t: &Trees, store_dir: &Path) -> Result<Index, StoreError> {
    let mut index = Index::default();
    for kv in t.files.iter() {
        let (id, v) = kv?;
        let r: FileRecord = decode(&v)?;
        let there = std::fs::metadata(dir.join(&r.sha)).map(|m| m.len());
        if !is_sha(&r.sha) || there.ok() != Some(r.size) {
            return Err(StoreError::Corrupt {
                path: store_dir.to_owned(),
                detail: format!(
                    "the file of attachment {} is missing or cut short in {FOLDER}/",
                    String::from_utf8_lossy(&id)
                ),
            });
        }
        index.add(&r);
    }
    Ok(index)
}

/// Checks that every file the records of `t` name is in `<store_dir>/attachments/`
/// (for `verify`).
pub(super) fn check_files(store_dir: &Path, t: &Trees) -> Result<Usage, StoreError> {
    index_of(&store_dir.join(FOLDER), t, store_dir).map(|i| i.total)
}

/// Puts the files of `from` (a store folder) into `to`'s (a backup being made):
/// hard links where the disk allows (the files never change), copies elsewhere.
pub(super) fn copy_files(from: &Path, to: &Path) -> std::io::Result<()> {
    let Ok(entries) = std::fs::read_dir(from.join(FOLDER)) else {
        return Ok(());
    };
    let dest = to.join(FOLDER);
    std::fs::create_dir_all(&dest)?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !is_sha(&name.to_string_lossy()) {
            continue;
        }
        let target = dest.join(&name);
        if std::fs::hard_link(entry.path(), &target).is_err() {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

fn private_file(path: &Path) -> std::io::Result<std::fs::File> {
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        o.mode(0o600);
    }
    o.open(path)
}

/// Schema version 3 kept each file's bytes in the `attachments` tree by id:
/// writes each as a file and a record naming it (owner and session from the
/// message that carries it), then the caller drops the tree. Idempotent, so a
/// crash part-way starts over. Returns how many it moved.
pub(super) fn upgrade_from_v3(store_dir: &Path, t: &Trees, now: i64) -> Result<usize, StoreError> {
    let names = t.db.tree_names();
    if !names.iter().any(|n| n.as_ref() == LEGACY_TREE.as_bytes()) {
        return Ok(0);
    }
    let old = t.db.open_tree(LEGACY_TREE)?;
    if old.is_empty() {
        return Ok(0);
    }
    let carriers = carriers(t)?;
    let dir = store_dir.join(FOLDER);
    std::fs::create_dir_all(&dir).map_err(|e| StoreError::Io(e.to_string()))?;
    let mut moved = 0;
    for kv in old.iter() {
        let (id, bytes) = kv?;
        let id = String::from_utf8_lossy(&id).into_owned();
        let sha = sha_of(&bytes);
        let path = dir.join(&sha);
        if !std::fs::metadata(&path).is_ok_and(|m| m.len() == bytes.len() as u64) {
            write_synced(&dir, &path, &bytes).map_err(|e| StoreError::Io(e.to_string()))?;
        }
        let (token, owner) = carriers.get(&id).cloned().unwrap_or_default();
        let record = FileRecord {
            sha,
            size: bytes.len() as u64,
            owner,
            token,
            request: String::new(),
            at: now,
        };
        t.files.insert(id.as_bytes(), encode(&record))?;
        moved += 1;
    }
    Ok(moved)
}

/// The tree schema version 3 kept the bytes in.
pub(super) const LEGACY_TREE: &str = "attachments";

fn write_synced(dir: &Path, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = dir.join(format!(".{}.partial", uuid::Uuid::new_v4().simple()));
    let mut f = private_file(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)?;
    std::fs::File::open(dir)?.sync_all()
}

/// Attachment id → (session token, the session's owner), from every message.
fn carriers(t: &Trees) -> Result<HashMap<String, (String, Option<String>)>, StoreError> {
    let mut out = HashMap::new();
    for kv in t.history.iter() {
        let (k, v) = kv?;
        let token = String::from_utf8_lossy(&k[..k.len().saturating_sub(8)]).into_owned();
        for (_, m) in super::history::entries(&v)? {
            if !contains(m, b"\"attachments\"") {
                continue;
            }
            let m: crate::session::Message = decode(m)?;
            if m.attachments.is_empty() {
                continue;
            }
            let owner = t
                .sessions
                .get(token.as_bytes())?
                .map(|s| decode::<crate::session::Session>(&s))
                .transpose()?
                .and_then(|s| s.owner.map(|k| k.to_string()));
            for a in m.attachments {
                out.insert(a.id, (token.clone(), owner.clone()));
            }
        }
    }
    Ok(out)
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}
