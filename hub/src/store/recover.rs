//! A store whose writes failed (a full disk) and its way back without a
//! restart.
//!
//! sled 0.34 keeps the first IO error of its log as a global error and
//! answers every later write and flush with it until the database is opened
//! again (`Config::global_error`, reset only in `PageCache::start`). So after
//! a failed write the store reports itself failing, and [`Store::reopen`]
//! closes sled and opens it again once the disk takes a probe write: what
//! sled made durable is read back, a write cut short is finished from its
//! journal record, and the completeness check runs as at any start.
//!
//! Invariant: while failing, every write answers an error (none is lost that
//! was answered as done: those were flushed before); after a reopen the store
//! holds exactly what is on disk, and the caller reloads what it keeps in
//! memory from it.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::{Manifest, Store, StoreError, Trees, open};
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
}

/// How much room the disk must take before sled is opened again: a log
/// segment and then some.
const PROBE_BYTES: usize = 1 << 20;
/// How long a reopen waits for the last request using the old database
/// (writes wait meanwhile).
const HANDLES_LIMIT: Duration = Duration::from_secs(1);

impl Store {
    /// The open database, or an error while it is being reopened.
    pub(super) fn t(&self) -> Result<Arc<Trees>, StoreError> {
        self.open
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .ok_or_else(|| {
                StoreError::Io("the store is being reopened after a failed write".into())
            })
    }

    /// The generation of the last write that ended.
    pub(super) fn generation(&self) -> u64 {
        self.writing
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .generation
    }

    /// Notes a failed write (the store is failing from now on) and answers it as an error.
    pub(crate) fn write_failed(&self, e: impl std::fmt::Display) -> StoreError {
        let text = e.to_string();
        let mut failing = self
            .health
            .failing
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if failing.is_none() {
            tracing::error!(error = %text, "a store write failed; writes are refused until the disk takes them again");
        }
        let since = failing.as_ref().map_or_else(now_ms, |(_, since)| *since);
        *failing = Some((text.clone(), since));
        StoreError::Io(text)
    }

    pub fn state(&self) -> StoreState {
        match &*self
            .health
            .failing
            .lock()
            .unwrap_or_else(|p| p.into_inner())
        {
            None => StoreState::Ok,
            Some((last_error, since)) => StoreState::Failing {
                last_error: last_error.clone(),
                since: *since,
            },
        }
    }

    /// Whether something besides the store holds the open database now (a
    /// read in progress, or a flush the failed disk never answered): a
    /// reopen would have to wait for it, so try later.
    pub fn in_use(&self) -> bool {
        self.open
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .is_some_and(|t| Arc::strong_count(t) > 1)
    }

    /// Closes sled and opens it again, if the disk takes a probe write; no
    /// write runs meanwhile. On success the store is no longer failing: the
    /// caller must reload whatever it keeps from the store (a write answered
    /// as failed may be on disk after all, finished from its journal record).
    pub fn reopen(&self) -> Result<(), StoreError> {
        let mut manifest = self.writing.lock().unwrap_or_else(|p| p.into_inner());
        probe_room(&self.dir).map_err(|e| self.write_failed(e))?;
        let old = self.open.write().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(old) = old {
            // sled lets go of its file lock when its last handle is dropped.
            let until = Instant::now() + HANDLES_LIMIT;
            while Arc::strong_count(&old) > 1 && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(20));
            }
            if Arc::strong_count(&old) > 1 {
                *self.open.write().unwrap_or_else(|p| p.into_inner()) = Some(old);
                return Err(self.write_failed("the failed store is still in use; not reopened"));
            }
        }
        let (trees, checked) = open_retrying(&self.dir, self.cache_bytes)?;
        let checked = checked.expect("a store opened to serve is at this schema version");
        // The disk takes writes again: one of sled's own, made durable.
        trees
            .meta
            .insert("reopened_at", &now_ms().to_be_bytes())
            .and_then(|_| trees.db.flush())
            .map_err(|e| self.write_failed(e))?;
        *manifest = checked;
        self.journal_seq.store(0, Ordering::Relaxed);
        let begun = self.begun.load(Ordering::Acquire);
        *self.open.write().unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(trees));
        // Whatever began before is on disk now or gone: nothing left to flush.
        self.durable.fetch_max(begun, Ordering::AcqRel);
        *self
            .health
            .failing
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = None;
        tracing::info!("the store takes writes again");
        Ok(())
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
            Err(StoreError::Locked { .. }) if tries < 100 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(50));
            }
            other => return other,
        }
    }
}
