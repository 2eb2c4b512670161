//! Wake-ups for long polls: one bell (a `Notify`) per session that has a poll
//! waiting, rung on every change; a poll arms its wake-up before it looks, so
//! no change in between is missed. No HTTP, no storage: what a poll answers is
//! decided in `hub`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use crate::session::Token;

/// A session's bell. Smaller than a watch channel (a held poll per session
/// waiting, 10,000 of them at once, is the hub's main memory cost).
pub type Bell = Arc<Notify>;

#[derive(Default)]
pub struct Waiters {
    /// One bell per session that has had a poll. A std mutex: lookups and
    /// inserts only, never held across an `.await`.
    bells: Mutex<HashMap<Token, Bell>>,
}

impl Waiters {
    /// The session's bell. Arm `bell.notified()` (`Notified::enable`) before
    /// looking at the session, then wait on it.
    pub fn bell(&self, token: &Token) -> Bell {
        let mut map = self.bells.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(token.clone()).or_default().clone()
    }

    /// Wakes every poll of the session. Bells nobody holds are dropped.
    pub fn wake(&self, token: &Token) {
        let mut map = self.bells.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(bell) = map.get(token) {
            if Arc::strong_count(bell) == 1 {
                map.remove(token);
            } else {
                bell.notify_waiters();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_wake_after_arming_is_seen() {
        let w = Waiters::default();
        let t = Token::generate();
        let bell = w.bell(&t);
        let woken = bell.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        w.wake(&t);
        tokio::time::timeout(std::time::Duration::from_secs(1), woken)
            .await
            .expect("woken");
    }

    #[test]
    fn bells_nobody_holds_are_dropped() {
        let w = Waiters::default();
        let t = Token::generate();
        drop(w.bell(&t));
        w.wake(&t);
        assert!(w.bells.lock().unwrap().is_empty());
    }
}
