//! Wake-ups for long polls: one watch channel per session whose counter moves
//! on every change, so a poll that subscribed before looking never misses one.
//! No HTTP, no storage: what a poll answers is decided in `hub`.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::sync::watch;

use crate::session::Token;

#[derive(Default)]
pub struct Waiters {
    /// One sender per session that has had a poll. A std mutex: lookups and
    /// inserts only, never held across an `.await`.
    channels: Mutex<HashMap<Token, watch::Sender<u64>>>,
}

impl Waiters {
    /// A receiver that sees every change to the session after this call.
    pub fn subscribe(&self, token: &Token) -> watch::Receiver<u64> {
        let mut map = self.channels.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(token.clone())
            .or_insert_with(|| watch::channel(0).0)
            .subscribe()
    }

    /// Wakes every poll of the session. Channels nobody listens to are dropped.
    pub fn wake(&self, token: &Token) {
        let mut map = self.channels.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(tx) = map.get(token) {
            if tx.receiver_count() == 0 {
                map.remove(token);
            } else {
                tx.send_modify(|n| *n = n.wrapping_add(1));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_wake_after_subscribe_is_seen() {
        let w = Waiters::default();
        let t = Token::generate();
        let mut rx = w.subscribe(&t);
        rx.borrow_and_update();
        w.wake(&t);
        tokio::time::timeout(std::time::Duration::from_secs(1), rx.changed())
            .await
            .expect("woken")
            .unwrap();
    }

    #[test]
    fn channels_without_listeners_are_dropped() {
        let w = Waiters::default();
        let t = Token::generate();
        drop(w.subscribe(&t));
        w.wake(&t);
        assert!(w.channels.lock().unwrap().is_empty());
    }
}
