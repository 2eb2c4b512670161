//! Wake-ups for long polls and who is behind each open wait: one bell (a
//! `Notify`) per session that has a poll waiting, rung on every change, and
//! when an agent last showed it is there. A poll arms its wake-up before it
//! looks, so no change in between is missed; a wait whose session has a poll
//! in flight is always attended. No HTTP, no storage: what a poll answers and
//! when a wait is closed are decided in `hub`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use holdline_store::lock::Unpoisoned as _;
use holdline_store::session::Token;

/// A session's bell. Smaller than a watch channel (a held poll per session
/// waiting, 10,000 of them at once, is the hub's main memory cost).
pub type Bell = Arc<Notify>;

#[derive(Default)]
pub struct Waiters {
    /// One bell per session that has had a poll. A std mutex: lookups and
    /// inserts only, never held across an `.await`.
    bells: Mutex<HashMap<Token, Bell>>,
    /// When an agent last showed it is behind a session's wait (a register,
    /// a poll's end, an ack). A std mutex: inserts and lookups only.
    seen: Mutex<HashMap<Token, Instant>>,
    /// Rung when a wait opens, so the hub's watch over waits sleeps while
    /// nothing waits.
    opened: Notify,
}

impl Waiters {
    /// The session's bell. Arm `bell.notified()` (`Notified::enable`) before
    /// looking at the session, then wait on it.
    pub fn bell(&self, token: &Token) -> Bell {
        let mut map = self.bells.lock_unpoisoned();
        map.entry(token.clone()).or_default().clone()
    }

    /// Notes that an agent is behind the session's wait now.
    pub fn saw(&self, token: &Token) {
        let mut seen = self.seen.lock_unpoisoned();
        seen.insert(token.clone(), Instant::now());
    }

    /// Notes a newly opened wait (an agent is behind it now) and wakes the watch.
    pub fn opened(&self, token: &Token) {
        self.saw(token);
        self.opened.notify_one();
    }

    /// Resolves once a wait opens after this call (or a permit was left by one).
    pub async fn next_opened(&self) {
        self.opened.notified().await;
    }

    /// Whether nobody has attended the session's wait for `grace`: no poll in
    /// flight and none ended within it. A session never seen (waiting since
    /// before a restart) is seen now, so its agent gets the whole grace period
    /// to come back.
    pub fn unattended(&self, token: &Token, grace: Duration) -> bool {
        if self.polling(token) {
            return false;
        }
        let mut seen = self.seen.lock_unpoisoned();
        let last = *seen.entry(token.clone()).or_insert_with(Instant::now);
        last.elapsed() > grace
    }

    /// Forgets sessions that no longer wait (keeps the map as small as the waiting set).
    pub fn retain_seen(&self, mut waiting: impl FnMut(&Token) -> bool) {
        let mut seen = self.seen.lock_unpoisoned();
        seen.retain(|t, _| waiting(t));
    }

    /// Whether a poll of the session is held right now (it holds the bell).
    fn polling(&self, token: &Token) -> bool {
        let map = self.bells.lock_unpoisoned();
        map.get(token).is_some_and(|b| Arc::strong_count(b) > 1)
    }

    /// Wakes every poll of the session. Bells nobody holds are dropped.
    pub fn wake(&self, token: &Token) {
        let mut map = self.bells.lock_unpoisoned();
        if let Some(bell) = map.get(token) {
            if Arc::strong_count(bell) == 1 {
                map.remove(token);
            } else {
                bell.notify_waiters();
            }
        }
    }

    /// Wakes every poll of every session (the hub is stopping).
    pub fn wake_all(&self) {
        let map = self.bells.lock_unpoisoned();
        for bell in map.values() {
            bell.notify_waiters();
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
    fn a_wait_with_a_poll_in_flight_is_attended_whatever_the_time() {
        let w = Waiters::default();
        let t = Token::generate();
        w.saw(&t);
        let held = w.bell(&t);
        std::thread::sleep(Duration::from_millis(20));
        assert!(!w.unattended(&t, Duration::from_millis(5)));
        drop(held);
        assert!(w.unattended(&t, Duration::from_millis(5)));
        w.saw(&t);
        assert!(!w.unattended(&t, Duration::from_secs(60)));
    }

    #[test]
    fn a_wait_never_seen_gets_the_whole_grace_period() {
        let w = Waiters::default();
        let t = Token::generate();
        assert!(!w.unattended(&t, Duration::from_millis(50)));
        w.retain_seen(|_| false);
        assert!(w.seen.lock().unwrap().is_empty());
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
