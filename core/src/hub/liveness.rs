//! Waits live only while an agent is behind them: the watch closes a wait
//! that nobody has polled for the configured grace period (the bridge was
//! killed, the machine went away, the client never called again), and a
//! revoked agent key's waits close at once.
//!
//! Invariant: a wait with a poll in flight is never closed; a closed wait
//! leaves the session `holding` with its queued replies still queued, so a
//! later reply answers `queued:true` and reaches the next wait.

use super::*;

impl Hub {
    /// Runs until shutdown, closing unattended waits. Sleeps while nothing
    /// waits; otherwise looks a few times per grace period.
    pub async fn watch_waits(self) {
        let grace = self.inner.config.wait_grace;
        if grace.is_zero() {
            return;
        }
        let tick = (grace / 3).clamp(Duration::from_millis(200), Duration::from_secs(10));
        let shutdown = self.inner.shutdown.clone();
        loop {
            let waiting = self.open_waits();
            // A set, so forgetting the sessions that stopped waiting is O(n), not O(n²):
            // the `seen` lock is held meanwhile and every poll takes it.
            let tokens: std::collections::HashSet<&Token> =
                waiting.iter().map(|(t, _)| t).collect();
            self.inner.waiters.retain_seen(|t| tokens.contains(t));
            let pause = async {
                if waiting.is_empty() {
                    self.inner.waiters.next_opened().await;
                }
                tokio::time::sleep(tick).await;
            };
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = pause => {}
            }
            let mut closed = 0usize;
            for (token, wait_id) in self.open_waits() {
                if !self.inner.waiters.unattended(&token, grace) {
                    continue;
                }
                match self.end_wait(&token, &wait_id, WaitEnd::Expired) {
                    Ok(true) => {
                        closed += 1;
                        tracing::info!(%token, "wait closed: no agent polled it within the grace period");
                    }
                    Ok(false) => {}
                    Err(e) => {
                        tracing::warn!(%token, error = %e, "closing an unattended wait failed")
                    }
                }
            }
            if closed > 0
                && let Err(e) = self.flush().await
            {
                tracing::error!(error = %e, "flushing closed waits failed");
            }
        }
    }

    /// Every open wait this hub owns, as (token, waitId).
    fn open_waits(&self) -> Vec<(Token, String)> {
        self.lock()
            .waiting()
            .filter(|s| !s.mirror)
            .filter_map(|s| Some((s.token.clone(), s.wait.as_ref()?.wait_id.clone())))
            .collect()
    }

    /// Closes every open wait registered with an agent key that `revoked`
    /// names (its agent must not hear a reply; later replies queue); answers
    /// how many. The caller flushes.
    pub fn close_waits_of_keys(&self, revoked: impl Fn(&KeyName) -> bool) -> Unflushed<usize> {
        let of_key: Vec<(Token, String)> = self
            .lock()
            .waiting()
            .filter(|s| !s.mirror)
            .filter_map(|s| {
                let w = s.wait.as_ref()?;
                revoked(w.key.as_ref()?).then(|| (s.token.clone(), w.wait_id.clone()))
            })
            .collect();
        let mut closed = 0;
        for (token, wait_id) in of_key {
            match self.end_wait(&token, &wait_id, WaitEnd::KeyRevoked) {
                Ok(true) => {
                    closed += 1;
                    tracing::info!(%token, "wait closed: its agent key was revoked");
                }
                Ok(false) => {}
                Err(e) => tracing::warn!(%token, error = %e, "closing a revoked key's wait failed"),
            }
        }
        Unflushed::new(closed)
    }

    /// Closes `wait_id` for `reason` if it is still the session's open wait. Not
    /// flushed: its callers close many and flush once for all (or hand that on
    /// as [`Unflushed`]).
    fn end_wait(&self, token: &Token, wait_id: &str, reason: WaitEnd) -> Result<bool> {
        let still_open = self
            .lock()
            .get(token)?
            .is_some_and(|s| s.has_open_wait(wait_id));
        if !still_open {
            return Ok(false);
        }
        self.commit(token, |_, s, _| {
            if !s.has_open_wait(wait_id) {
                return Ok(false);
            }
            s.close_wait(reason);
            s.status = Status::Holding;
            Ok(true)
        })
        .map(|closed| *closed.peek())
    }
}
