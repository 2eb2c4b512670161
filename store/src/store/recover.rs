//! A store whose writes failed (a full disk) and its way back without a
//! restart.
//!
//! sled 0.34 keeps the first IO error of its log as a global error and
//! answers every later write and flush with it until the database is opened
//! again (`Config::global_error`, reset only in `PageCache::start`), and its
//! flush and its drop may then wait forever. So after a failed write the
//! store reports itself failing and refuses every write and flush without
//! asking sled, and [`Store::reopen`] lets go of the failed database on a
//! thread of its own and opens it again once the disk takes a probe write
//! and sled has let go: what sled made durable is read back, a write cut
//! short is finished from its journal record, and the completeness check
//! runs as at any start.
//!
//! Invariant: while failing, every write answers an error at once (none is
//! lost that was answered as done: those were flushed before); no request
//! and no lock a request takes ever waits on sled's drop; after a reopen the
//! store holds exactly what is on disk, and it takes writes again only once
//! the caller reloaded what it keeps in memory ([`Store::healed`]).

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::{Manifest, Store, StoreError, Trees, open};
use crate::lock::{Unpoisoned as _, UnpoisonedRw as _};
use crate::session::now_ms;

/// How the store's writes are going, for `/healthz`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreState {
    Ok,
    /// A write failed at `since` (ms since the epoch) and the store has not
    /// been reopened since.
    Failing {
        last_error: String,
        since: i64,
    },
}

/// The last write failure, until a reopen clears it.
#[derive(Debug, Default)]
pub(super) struct Health {
    failing: std::sync::Mutex<Option<(String, i64)>>,
    /// Reopens in a row that found room on the disk but sled still holding
    /// the failed database (see [`Store::held_after_room`]).
    held_with_room: std::sync::atomic::AtomicU32,
}

/// How much room the disk must take before sled is opened again: a log
/// segment and then some.
const PROBE_BYTES: usize = 1 << 20;
/// How long one reopen waits for sled to let go of the failed database
/// (no request waits on it: writes are refused meanwhile).
const LET_GO_LIMIT: Duration = Duration::from_secs(2);

impl Store {
    /// The open database, or an error while it is being reopened.
    pub(super) fn t(&self) -> Result<Arc<Trees>, StoreError> {
        self.open.read_unpoisoned().clone().ok_or_else(|| {
            StoreError::Io("the store is being reopened after a failed write".into())
        })
    }

    /// The generation of the last write that ended.
    pub(super) fn generation(&self) -> u64 {
        self.writing.lock_unpoisoned().generation
    }

    /// Notes a failed write (the store is failing from now on) and answers it as an error.
    pub fn write_failed(&self, e: impl std::fmt::Display) -> StoreError {
        let text = e.to_string();
        let mut failing = self.health.failing.lock_unpoisoned();
        if failing.is_none() {
            tracing::error!(error = %text, "a store write failed; writes are refused until the disk takes them again");
        }
        let since = failing.as_ref().map_or_else(now_ms, |(_, since)| *since);
        *failing = Some((text.clone(), since));
        StoreError::Io(text)
    }

    pub fn state(&self) -> StoreState {
        match &*self.health.failing.lock_unpoisoned() {
            None => StoreState::Ok,
            Some((last_error, since)) => StoreState::Failing {
                last_error: last_error.clone(),
                since: *since,
            },
        }
    }

    /// The error a write answers while the store is failing, without
    /// touching sled (whose writes and flushes may then wait forever).
    pub(super) fn refuse_while_failing(&self) -> Result<(), StoreError> {
        match &*self.health.failing.lock_unpoisoned() {
            None => Ok(()),
            Some((last_error, _)) => Err(StoreError::Io(format!(
                "{last_error} (the store refuses writes until the disk takes them again)"
            ))),
        }
    }

    /// Closes sled and opens it again, if the disk takes a probe write.
    /// Never waits long: the failed database is dropped on a thread of its
    /// own (sled's drop may wait forever on a failed disk), and a reopen
    /// waits at most [`LET_GO_LIMIT`] for it, then answers an error and the
    /// next call looks again. Writes are refused meanwhile (the store stays
    /// failing) and reads answer an error while no database is open.
    ///
    /// On success the store holds what is on disk but still refuses writes:
    /// the caller reloads whatever it keeps from the store (a write answered
    /// as failed may be on disk after all, finished from its journal record),
    /// then calls [`Store::healed`].
    pub fn reopen(&self) -> Result<(), StoreError> {
        probe_room(&self.dir).map_err(|e| self.write_failed(e))?;
        let mut manifest = self.writing.lock_unpoisoned();
        self.let_go_of_failed()?;
        let (trees, checked) = open_retrying(&self.dir, self.cache_bytes)?;
        let checked = checked.expect("a store opened to serve is at this schema version");
        // The disk takes writes again: one of sled's own, made durable.
        let taken = trees
            .meta
            .insert("reopened_at", &now_ms().to_be_bytes())
            .and_then(|_| trees.db.flush());
        if let Err(e) = taken {
            self.letting_go(Arc::new(trees));
            return Err(self.write_failed(e));
        }
        *manifest = checked;
        self.journal_seq.store(0, Ordering::Relaxed);
        let begun = self.begun.load(Ordering::Acquire);
        *self.open.write_unpoisoned() = Some(Arc::new(trees));
        // Whatever began before is on disk now or gone: nothing left to flush.
        self.durable.fetch_max(begun, Ordering::AcqRel);
        Ok(())
    }

    /// How many reopens in a row found room on the disk, then gave up
    /// waiting for sled to let go of the failed database: past a few, only a
    /// new process opens the store again.
    pub fn held_after_room(&self) -> u32 {
        self.health.held_with_room.load(Ordering::Relaxed)
    }

    /// Ends the failing state after a [`Store::reopen`]: writes are taken again.
    pub fn healed(&self) {
        *self.health.failing.lock_unpoisoned() = None;
        tracing::info!("the store takes writes again");
    }

    /// Takes the failed database out of use and waits, at most
    /// [`LET_GO_LIMIT`], until sled has let go of it (its file lock with it).
    fn let_go_of_failed(&self) -> Result<(), StoreError> {
        if let Some(old) = self.open.write_unpoisoned().take() {
            self.letting_go(old);
        }
        let mut dropping = self.dropping.lock_unpoisoned();
        let Some(thread) = dropping.take() else {
            return Ok(());
        };
        let until = Instant::now() + LET_GO_LIMIT;
        while !thread.is_finished() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        if thread.is_finished() {
            let _ = thread.join();
            self.health.held_with_room.store(0, Ordering::Relaxed);
            return Ok(());
        }
        *dropping = Some(thread);
        self.health.held_with_room.fetch_add(1, Ordering::Relaxed);
        // sled 0.34 can wait forever for a log write the full disk cut short;
        // then only a new process opens the store again.
        Err(self.write_failed(
            "the failed store has not let go of its files; the hub starts itself again in place if this lasts (what was answered as written is on disk)",
        ))
    }

    /// Drops `old` on a thread of its own once nothing else holds it (a
    /// read in progress, a flush the failed disk never answered).
    fn letting_go(&self, old: Arc<Trees>) {
        let mut dropping = self.dropping.lock_unpoisoned();
        let before = dropping.take();
        let spawned = std::thread::Builder::new()
            .name("holdline-store-drop".into())
            .spawn(move || {
                // An earlier failed database goes first: sled opens once both let go.
                if let Some(before) = before {
                    let _ = before.join();
                }
                let mut old = old;
                loop {
                    match Arc::try_unwrap(old) {
                        Ok(trees) => return drop(trees),
                        Err(held) => old = held,
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
            });
        match spawned {
            Ok(thread) => *dropping = Some(thread),
            Err(e) => {
                tracing::error!(error = %e, "cannot start a thread to close the failed store")
            }
        }
    }

    /// Closes the database for good (at shutdown, after the last flush),
    /// waiting at most `limit` for sled to let go: answers whether it did. A
    /// store whose disk failed may never let go; the process may exit anyway,
    /// what was flushed is on disk.
    pub fn close(&self, limit: Duration) -> bool {
        if let Some(open) = self.open.write_unpoisoned().take() {
            self.letting_go(open);
        }
        let Some(thread) = self.dropping.lock_unpoisoned().take() else {
            return true;
        };
        let until = Instant::now() + limit;
        while !thread.is_finished() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        thread.is_finished()
    }
}

/// Writes and syncs `PROBE_BYTES` in the store's folder, then removes them.
fn probe_room(dir: &Path) -> std::io::Result<()> {
    use std::io::Write;
    let path = dir.join("room-probe");
    let written = std::fs::File::create(&path).and_then(|mut f| {
        f.write_all(&vec![0; PROBE_BYTES])?;
        f.sync_all()
    });
    let _ = std::fs::remove_file(&path);
    written
}

/// Opens the store again; sled may hold its lock a moment after the last handle went.
fn open_retrying(dir: &Path, cache_bytes: u64) -> Result<(Trees, Option<Manifest>), StoreError> {
    let mut tries = 0;
    loop {
        match open::open_trees(dir, cache_bytes) {
            Err(StoreError::Locked { .. }) if tries < 20 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(50));
            }
            other => return other,
        }
    }
}
