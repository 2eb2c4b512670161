//! Looking after the store while the hub runs: reopening it after a failed
//! write once the disk takes writes again (or, when sled never lets go of
//! the failed database, stopping so the process starts again in place), and
//! a backup a day.
//!
//! Invariant: after a reopen the session table is read again from the store,
//! so memory holds what is on disk (a write answered as failed may have been
//! finished from its journal record; one applied but never flushed may be
//! gone) — the store refuses every write until the table is reloaded, so no
//! commit runs between; the table's lock is held only for the reload, never
//! while sled closes or opens.

use std::time::Duration;

use super::Hub;
use crate::table::SessionTable;
use holdline_store::store::{BackupReport, StoreError, StoreState};

/// How often a failing store tries to reopen.
const HEAL_EVERY: Duration = Duration::from_secs(2);
/// Reopens in a row that find room on the disk but sled still holding the
/// failed database (about 20 s) before the hub stops to start again in place.
const HELD_LIMIT: u32 = 5;
/// How often the age of the newest backup is looked at.
const BACKUP_CHECK_EVERY: Duration = Duration::from_secs(600);
/// How old the newest backup may grow before another is taken.
const BACKUP_EVERY: Duration = Duration::from_secs(24 * 3600);

impl Hub {
    /// Until shutdown: reopens a failing store (see [`Hub::heal_store`]) and
    /// takes a backup when the newest is a day old.
    pub async fn look_after_store(self) {
        let mut heal = tokio::time::interval(HEAL_EVERY);
        let mut backup = tokio::time::interval(BACKUP_CHECK_EVERY);
        // The first backup check waits a full period: not on every start.
        backup.tick().await;
        loop {
            tokio::select! {
                _ = self.inner.shutdown.cancelled() => return,
                _ = heal.tick() => self.heal_if_failing().await,
                _ = backup.tick() => self.backup_if_due().await,
            }
        }
    }

    async fn heal_if_failing(&self) {
        if !matches!(self.store().state(), StoreState::Failing { .. }) {
            return;
        }
        let hub = self.clone();
        if let Ok(Err(e)) = tokio::task::spawn_blocking(move || hub.heal_store()).await {
            tracing::debug!(error = %e, "the store cannot be reopened yet");
        }
        if self.needs_new_process() {
            tracing::error!(
                "the disk has room again but the failed store never let go of its files; \
                 stopping to start again in place (what was answered as written is on disk)"
            );
            self.inner.shutdown.cancel();
        }
    }

    /// Whether only a new process can open the store again: the disk has
    /// room, but sled 0.34 keeps the failed database (and its file lock) for
    /// the life of the process when its drop waits on a log write the full
    /// disk cut short. `run` then ends with [`crate::RunEnd::StartAgain`].
    pub fn needs_new_process(&self) -> bool {
        self.store().held_after_room() >= HELD_LIMIT
    }

    async fn backup_if_due(&self) {
        let due = self
            .store()
            .newest_daily_backup_age()
            .is_none_or(|age| age >= BACKUP_EVERY);
        if !due {
            return;
        }
        let hub = self.clone();
        match tokio::task::spawn_blocking(move || hub.inner.store.daily_backup()).await {
            Ok(Ok(b)) => {
                tracing::info!(path = %b.path.display(), sessions = b.sessions, "daily backup taken")
            }
            Ok(Err(e)) => tracing::error!(error = %e, "the daily backup failed"),
            Err(_) => {}
        }
    }

    /// Reopens the store and reads the session table again from it. Blocking,
    /// for a few seconds at most; requests go on meanwhile (writes refused).
    pub fn heal_store(&self) -> Result<(), StoreError> {
        self.inner.store.reopen()?;
        let mut table = self.lock();
        // Not reloaded, memory could disagree with the store: keep failing and retry.
        *table = SessionTable::load(&self.inner.store).map_err(|e| {
            self.inner
                .store
                .write_failed(format!("reading the reopened store: {e}"))
        })?;
        self.inner.store.healed();
        let waiting: Vec<_> = table.waiting().map(|s| s.token.clone()).collect();
        drop(table);
        // Polls re-read what they wait on.
        for token in waiting {
            self.inner.waiters.wake(&token);
        }
        Ok(())
    }

    /// Takes a backup of the store now. Blocking; writes wait meanwhile.
    pub fn backup(&self) -> Result<BackupReport, StoreError> {
        self.inner.store.backup()
    }
}
