//! The store's record of what it holds, checked at every open so a damaged
//! store is refused instead of opened in part.
//!
//! sled does not checksum-fail on every damage: a cut or overwritten log can
//! open with some sessions missing. So every write carries, in its own journal
//! record, the `manifest` meta key: a generation (one per write), the number
//! of sessions and queued replies the store holds after it, and the number of
//! records of every tree a write goes through (each [`TreeId`] but `meta`,
//! also trees added later: counted by their number, filled in at the first
//! open that knows them). An open checks sessions and queued replies, and
//! that no counted tree is empty that should not be (a deleted tree);
//! `verify` counts every tree. After each flush
//! the generation the disk confirmed is written beside the store (the
//! *witness*, a small file outside sled). At open the counts must match what
//! is there, and the generation must not be behind the witness.
//!
//! Invariant: a store that opens holds as many sessions and queued replies as
//! its last write recorded, no tree it recorded records in is empty, and no
//! write the disk confirmed is missing; one that verifies holds exactly as
//! many records in every counted tree.

use std::path::Path;

use super::journal::{Op, TreeId};
use super::{StoreError, Trees};
use crate::lock::Unpoisoned as _;

/// The meta key every write updates.
const KEY: &[u8] = b"manifest";
/// The file beside sled's own, in the store's folder.
const WITNESS: &str = "holdline-generation";

/// How many tree numbers the manifest has room for.
pub(super) const TREES: usize = 32;

/// What the store holds as of one write.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Manifest {
    /// Writes made since the store began (or since it was restored).
    pub generation: u64,
    pub sessions: u64,
    pub replies: u64,
    /// Records in each counted tree, by its [`TreeId`] number (`None`: not
    /// counted, or not yet: a manifest of an older build).
    pub trees: [Option<u64>; TREES],
}

/// Whether a tree's records are counted: every tree written only through a
/// journal record (meta is also written on its own; the legacy messages
/// tree is gone after an upgrade).
fn counted(id: TreeId) -> bool {
    !matches!(id, TreeId::Meta | TreeId::Messages)
}

/// Every counted tree of `t` with its number.
fn counted_trees(t: &Trees) -> impl Iterator<Item = (usize, TreeId, &sled::Tree)> {
    (0..TREES).filter_map(move |n| {
        let id = TreeId::from_u8(n as u8).filter(|id| counted(*id))?;
        Some((n, id, t.tree(id)?))
    })
}

impl Manifest {
    /// The manifest after `ops` (a write not yet applied) on `t`.
    pub(super) fn after(&self, t: &Trees, ops: &[Op]) -> Manifest {
        let mut next = Manifest {
            generation: self.generation + 1,
            ..*self
        };
        let mut seen: Vec<(TreeId, &[u8])> = Vec::new();
        for op in ops {
            // A key twice in one write counts once, by its first state.
            if !counted(op.tree) || seen.contains(&(op.tree, op.key.as_slice())) {
                continue;
            }
            seen.push((op.tree, &op.key));
            let Some(tree) = t.tree(op.tree) else {
                continue;
            };
            let there = tree.contains_key(&op.key).unwrap_or(false);
            let added = match (there, op.value.is_some()) {
                (false, true) => true,
                (true, false) => false,
                _ => continue,
            };
            let count = |c: &mut u64| {
                *c = if added { *c + 1 } else { c.saturating_sub(1) };
            };
            match op.tree {
                TreeId::Summaries => count(&mut next.sessions),
                TreeId::Replies => count(&mut next.replies),
                _ => {}
            }
            if let Some(c) = next
                .trees
                .get_mut(op.tree as usize)
                .and_then(Option::as_mut)
            {
                count(c);
            }
        }
        next
    }

    /// The put that records this manifest, for a write's journal record.
    pub(super) fn op(&self) -> Op {
        Op {
            tree: TreeId::Meta,
            key: KEY.to_vec(),
            value: Some(self.to_bytes().to_vec()),
        }
    }

    /// 24 bytes (generation, sessions, replies), then 9 per counted tree
    /// (its number, its records).
    fn to_bytes(self) -> Vec<u8> {
        let mut out = Vec::with_capacity(24 + 9 * TREES);
        out.extend_from_slice(&self.generation.to_be_bytes());
        out.extend_from_slice(&self.sessions.to_be_bytes());
        out.extend_from_slice(&self.replies.to_be_bytes());
        for (n, count) in self.trees.iter().enumerate() {
            if let Some(count) = count {
                out.push(n as u8);
                out.extend_from_slice(&count.to_be_bytes());
            }
        }
        out
    }

    fn from_bytes(v: &[u8]) -> Option<Manifest> {
        if v.len() < 24 || !(v.len() - 24).is_multiple_of(9) {
            return None;
        }
        let n = |b: &[u8]| u64::from_be_bytes(b.try_into().expect("8 bytes"));
        let mut trees = [None; TREES];
        for entry in v[24..].chunks_exact(9) {
            *trees.get_mut(usize::from(entry[0]))? = Some(n(&entry[1..]));
        }
        Some(Manifest {
            generation: n(&v[..8]),
            sessions: n(&v[8..16]),
            replies: n(&v[16..24]),
            trees,
        })
    }
}

impl Trees {
    /// Checks that the store holds what its manifest says (see the module
    /// doc) and answers the manifest. A store without one (made by an older
    /// build) gets one from what it holds, unless its witness shows it had one.
    pub(super) fn check_complete(&self, dir: &Path) -> Result<Manifest, StoreError> {
        let damaged = |detail: String| StoreError::Corrupt {
            path: dir.to_owned(),
            detail,
        };
        let counted = Manifest {
            generation: 0,
            sessions: self.summaries.len() as u64,
            replies: self.replies.len() as u64,
            trees: [None; TREES],
        };
        let witness = read_witness(dir);
        let Some(stored) = self.meta.get(KEY)? else {
            if witness.is_some_and(|g| g > 0) {
                return Err(damaged("its record of what it holds is missing".into()));
            }
            let counted = self.count_missing_trees(counted)?;
            // From its first open on, a store has a witness: one missing later is damage.
            if !dir.join(WITNESS).exists() {
                super::manifest::witness(dir, 0);
            }
            return Ok(counted);
        };
        let stored = Manifest::from_bytes(&stored)
            .ok_or_else(|| damaged("its record of what it holds is unreadable".into()))?;
        if (stored.sessions, stored.replies) != (counted.sessions, counted.replies) {
            return Err(damaged(format!(
                "it holds {} sessions and {} queued replies, its last write recorded {} and {}",
                counted.sessions, counted.replies, stored.sessions, stored.replies
            )));
        }
        // A tree deleted whole: empty where its last write recorded records.
        for (n, _, tree) in counted_trees(self) {
            if stored.trees[n].is_some_and(|c| c > 0) && tree.is_empty() {
                return Err(damaged(format!(
                    "its {} tree is empty, its last write recorded {} records in it",
                    String::from_utf8_lossy(&tree.name()),
                    stored.trees[n].unwrap_or_default()
                )));
            }
        }
        // Every flush after a write notes the witness (made and synced at the first open), so a store
        // with writes and no witness lost it: it could be missing any of them.
        if stored.generation > 0 && !dir.join(WITNESS).exists() {
            return Err(damaged(format!(
                "its note of the writes the disk confirmed ({WITNESS}) is missing"
            )));
        }
        if let Some(confirmed) = witness
            && confirmed > stored.generation
        {
            return Err(damaged(format!(
                "it lacks {} of the writes the disk confirmed",
                confirmed - stored.generation
            )));
        }
        self.count_missing_trees(stored)
    }

    /// `m` with every counted tree it has no count for counted now (a
    /// manifest of an older build, a tree added since), recorded if any was.
    fn count_missing_trees(&self, mut m: Manifest) -> Result<Manifest, StoreError> {
        let mut added = false;
        for (n, _, tree) in counted_trees(self) {
            if m.trees[n].is_none() {
                m.trees[n] = Some(tree.len() as u64);
                added = true;
            }
        }
        if added || self.meta.get(KEY)?.is_none() {
            self.meta.insert(KEY, m.to_bytes())?;
            self.db.flush()?;
        }
        Ok(m)
    }

    /// Records tree `id`'s count as it is now in the stored manifest, if there
    /// is one: for an upgrade that fills a tree outside the journal (schema
    /// version 3's files moved out of sled), so the count stays true.
    pub(super) fn recount(&self, id: TreeId) -> Result<(), StoreError> {
        let (Some(stored), Some(tree)) = (self.meta.get(KEY)?, self.tree(id)) else {
            return Ok(());
        };
        let Some(mut m) = Manifest::from_bytes(&stored) else {
            return Ok(());
        };
        m.trees[id as usize] = Some(tree.len() as u64);
        self.meta.insert(KEY, m.to_bytes())?;
        Ok(())
    }

    /// Counts the records of every counted tree against `m` (slow: reads
    /// every record), for `verify`.
    pub(super) fn check_trees(&self, m: &Manifest, dir: &Path) -> Result<(), StoreError> {
        for (n, _, tree) in counted_trees(self) {
            let Some(expected) = m.trees[n] else { continue };
            let mut found = 0u64;
            for kv in tree.iter() {
                kv?;
                found += 1;
            }
            if found != expected {
                return Err(StoreError::Corrupt {
                    path: dir.to_owned(),
                    detail: format!(
                        "its {} tree holds {found} records, its last write recorded {expected}",
                        String::from_utf8_lossy(&tree.name())
                    ),
                });
            }
        }
        Ok(())
    }
}

/// The witness of one store, kept open: noting a generation is one small
/// write at the file's start, no rename (a flush answers every reply).
#[derive(Debug)]
pub(super) struct Witness {
    path: std::path::PathBuf,
    file: std::sync::Mutex<Option<std::fs::File>>,
}

impl Witness {
    pub(super) fn new(dir: &Path) -> Witness {
        Witness {
            path: dir.join(WITNESS),
            file: std::sync::Mutex::new(None),
        }
    }

    /// Writes down that the disk confirmed every write up to `generation`;
    /// never newer than the store (it is written after sled's flush). The
    /// file's existence is synced when it is made (its absence is damage, see
    /// [`Trees::check_complete`]); a later note is not synced: a note lost to a
    /// power cut leaves an older generation, which the check allows, and one
    /// more fsync per flush would be paid by every reply. Torn by a power cut
    /// mid-write, its check fails and it is not checked.
    pub(super) fn note(&self, generation: u64) {
        use std::os::unix::fs::FileExt;
        let mut file = self.file.lock_unpoisoned();
        let written = match &*file {
            Some(f) => f.write_all_at(record(generation).as_bytes(), 0),
            None => std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(false)
                .open(&self.path)
                .and_then(|f| {
                    f.write_all_at(record(generation).as_bytes(), 0)?;
                    f.sync_all()?;
                    sync_folder(&self.path)?;
                    *file = Some(f);
                    Ok(())
                }),
        };
        if let Err(e) = written {
            tracing::warn!(error = %e, "could not note the store's confirmed writes");
        }
    }
}

/// A generation and its check, fixed width, so a rewrite in place covers
/// the old record whole.
fn record(generation: u64) -> String {
    format!("{generation:020} {:020}\n", generation ^ CHECK)
}

/// What a generation's check is XORed with.
const CHECK: u64 = 0x9e37_79b9_7f4a_7c15;

/// Writes the witness of a store copied elsewhere (a backup), whole.
pub(super) fn witness(dir: &Path, generation: u64) {
    let tmp = dir.join(format!("{WITNESS}.tmp"));
    let written = std::fs::File::create(&tmp)
        .and_then(|mut f| {
            std::io::Write::write_all(&mut f, record(generation).as_bytes())?;
            f.sync_all()
        })
        .and_then(|()| std::fs::rename(&tmp, dir.join(WITNESS)))
        .and_then(|()| sync_folder(&dir.join(WITNESS)));
    if let Err(e) = written {
        tracing::warn!(error = %e, "could not note the store's confirmed writes");
    }
}

/// Syncs the folder that holds `file`, so the file's name survives a power cut.
fn sync_folder(file: &Path) -> std::io::Result<()> {
    match file.parent() {
        Some(folder) => std::fs::File::open(folder)?.sync_all(),
        None => Ok(()),
    }
}

/// The generation the witness holds; `None` when there is none (a store of
/// an older build) or it cannot be read (torn by a power cut).
fn read_witness(dir: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(dir.join(WITNESS)).ok()?;
    let mut parts = text.split_whitespace().map(str::parse::<u64>);
    let generation = match (parts.next(), parts.next()) {
        (Some(Ok(g)), Some(Ok(check))) if g ^ CHECK == check => Some(g),
        _ => None,
    };
    if generation.is_none() {
        tracing::warn!("the store's note of its confirmed writes is unreadable; not checked");
    }
    generation
}
