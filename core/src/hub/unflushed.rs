//! Flush before answering, as a type: every write of the [`Hub`] returns
//! [`Unflushed`], and only [`Unflushed::flushed`] — which flushes the store —
//! hands back what the write returned.
//!
//! Invariant: whoever answers a write's result (an HTTP handler, Telegram,
//! an admin command) holds it only after the store is on disk; dropping it
//! unflushed is a compiler warning (`#[must_use]`).

use super::{Hub, Result};

/// A write's result not yet on disk; see the module's first line.
#[must_use = "a write is on disk only after `.flushed(&hub).await`"]
#[derive(Debug)]
pub struct Unflushed<T>(T);

impl<T> Unflushed<T> {
    /// Only the hub's writes make one.
    pub(super) fn new(value: T) -> Self {
        Unflushed(value)
    }

    /// What the write returned, for the hub's own follow-up in memory (a
    /// timer to arm, a count to keep); answering it still takes [`Unflushed::flushed`].
    pub(super) fn peek(&self) -> &T {
        &self.0
    }

    /// The answer made from what the write returned, still to be flushed.
    pub(super) fn map<U>(self, f: impl FnOnce(T) -> U) -> Unflushed<U> {
        Unflushed(f(self.0))
    }

    /// Flushes the store, then hands back the write's result.
    pub async fn flushed(self, hub: &Hub) -> Result<T> {
        hub.flush().await?;
        Ok(self.0)
    }

    /// The result without flushing: only for tests of what a crash between
    /// the write and its flush leaves.
    #[cfg(test)]
    pub(crate) fn unflushed(self) -> T {
        self.0
    }
}
