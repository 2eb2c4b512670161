//! Looking after the store while the hub runs: reopening it after a failed
//! write once the disk takes writes again, and a backup a day.
//!
//! Invariant: after a reopen the session table is read again from the store,
//! so memory holds what is on disk (a write answered as failed may have been
//! finished from its journal record; one applied but never flushed may be
//! gone) — both are taken under the table's lock, so no commit runs between.

use std::time::Duration;

use super::Hub;
use crate::store::{BackupReport, StoreError, StoreState};
use crate::table::SessionTable;

/// How often a failing store tries to reopen.
const HEAL_EVERY: Duration = Duration::from_secs(2);
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
        // Not while the failed database is in use: the table's lock would be
        // held while waiting for it.
        let failing = matches!(self.store().state(), StoreState::Failing { .. });
        if !failing || self.store().in_use() {
            return;
        }
        let hub = self.clone();
        if let Ok(Err(e)) = tokio::task::spawn_blocking(move || hub.heal_store()).await {
            tracing::debug!(error = %e, "the store cannot be reopened yet");
        }
    }

    async fn backup_if_due(&self) {
        let due = self
            .store()
            .newest_backup_age()
            .is_none_or(|age| age >= BACKUP_EVERY);
        if !due {
            return;
        }
        let hub = self.clone();
        match tokio::task::spawn_blocking(move || hub.backup()).await {
            Ok(Ok(b)) => {
                tracing::info!(path = %b.path.display(), sessions = b.sessions, "daily backup taken")
            }
            Ok(Err(e)) => tracing::error!(error = %e, "the daily backup failed"),
            Err(_) => {}
        }
    }

    /// Reopens the store and reads the session table again from it. Blocking.
    pub fn heal_store(&self) -> Result<(), StoreError> {
        let mut table = self.lock();
        self.inner.store.reopen()?;
        // Not reloaded, memory could disagree with the store: keep failing and retry.
        *table = SessionTable::load(&self.inner.store).map_err(|e| {
            self.inner
                .store
                .write_failed(format!("reading the reopened store: {e}"))
        })?;
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
