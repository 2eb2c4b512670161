//! What MongoDB sync reads and writes through the hub (see the `sync` module):
//! the set of changed sessions, snapshots, mirrors and adoption.

use super::*;

/// What MongoDB sync reads and writes through the hub; see `sync`.
impl Hub {
    pub(super) fn mark_unsynced(&self, token: &Token) {
        if let Some(set) = &self.inner.unsynced {
            set.lock_unpoisoned()
                .entry(token.clone())
                .or_insert_with(Instant::now);
        }
    }

    /// Takes a session off the changed set: MongoDB has it as this hub does.
    pub(super) fn forget_unsynced(&self, token: &Token) {
        if let Some(set) = &self.inner.unsynced {
            set.lock_unpoisoned().remove(token);
        }
    }

    /// Up to `max` changed sessions, oldest change first, taken off the set.
    pub fn take_unsynced(&self, max: usize) -> Vec<(Token, Instant)> {
        let Some(set) = &self.inner.unsynced else {
            return Vec::new();
        };
        let mut set = set.lock_unpoisoned();
        let mut all: Vec<(Token, Instant)> = set.iter().map(|(t, i)| (t.clone(), *i)).collect();
        all.sort_by_key(|(_, i)| *i);
        all.truncate(max);
        for (t, _) in &all {
            set.remove(t);
        }
        all
    }

    /// Puts sessions back after a failed push, keeping when they first changed.
    pub fn return_unsynced(&self, tokens: Vec<(Token, Instant)>) {
        if let Some(set) = &self.inner.unsynced {
            let mut set = set.lock_unpoisoned();
            for (t, at) in tokens {
                let e = set.entry(t).or_insert(at);
                *e = (*e).min(at);
            }
        }
    }

    /// `(pending sessions, age of the oldest unsynced change)`.
    pub fn sync_backlog(&self) -> (usize, Duration) {
        match &self.inner.unsynced {
            None => (0, Duration::ZERO),
            Some(set) => {
                let set = set.lock_unpoisoned();
                let oldest = set.values().min().map(|i| i.elapsed()).unwrap_or_default();
                (set.len(), oldest)
            }
        }
    }

    /// The session, the messages MongoDB lacks and the reply queue, if this
    /// hub owns the session.
    pub fn sync_snapshot(&self, token: &Token) -> Result<Option<SyncSnapshot>> {
        let Some(session) = self.lock().peek(token)?.map(Cow::into_owned) else {
            return Ok(None);
        };
        if session.mirror {
            return Ok(None);
        }
        let (_, synced_msgs) = self.inner.store.synced(token)?;
        let messages = self.inner.store.messages_from(token, synced_msgs)?;
        let replies = self.inner.store.queued_replies(token)?;
        Ok(Some(SyncSnapshot {
            session,
            messages,
            replies,
        }))
    }

    /// The bytes stored under attachment `id`, for the sync to copy.
    pub fn attachment_bytes(&self, id: &str) -> Result<Option<Vec<u8>>> {
        Ok(self.inner.store.attachment(id)?)
    }

    /// Notes how far MongoDB has the session (its `rev` and message count).
    pub fn mark_synced(&self, token: &Token, rev: u64, messages: u64) -> Result<Unflushed<()>> {
        self.inner.store.set_synced(token, rev, messages)?;
        Ok(Unflushed::new(()))
    }

    /// Stores a copy of another hub's session (read-only here). A session this
    /// hub owned becomes a copy: another hub adopted it.
    pub fn put_mirror(
        &self,
        mut session: Session,
        messages: Vec<(u64, Message)>,
        files: Vec<(String, Vec<u8>)>,
    ) -> Result<Unflushed<()>> {
        if session.hub == self.inner.name {
            return Ok(Unflushed::new(()));
        }
        session.mirror = true;
        let token = session.token.clone();
        let mut w = Write::new();
        // Pinned until the write that names them is applied.
        let _staged = self.stage_carried(&session, files, &mut w)?;
        self.write(|table| {
            let local = table.get(&token)?;
            if local.is_some_and(|l| l.mirror && l.rev >= session.rev) {
                return Ok(Change::Unchanged(()));
            }
            if let Some(l) = local
                && !l.mirror
            {
                tracing::info!(token = %token, owner = %session.hub, "session adopted by another hub; keeping a copy");
                for r in self.inner.store.queued_replies(&token)? {
                    w.dequeue(&token, &r.id);
                }
            }
            let have = local.map_or(0, |l| l.msg_count);
            for (seq, m) in messages.into_iter().filter(|(seq, _)| *seq >= have) {
                w.message(&token, seq, m);
            }
            Ok(Change::Write {
                write: w,
                sessions: Swapped::Mirror(session),
                answer: (),
            })
        })
    }

    /// The revision of this hub's read-only copy of a session, if it has one.
    pub fn mirror_rev(&self, token: &Token) -> Option<u64> {
        let mut map = self.lock();
        if !map.summary(token).is_some_and(|s| s.mirror) {
            return None;
        }
        map.get(token).ok().flatten().map(|s| s.rev)
    }

    /// Whether this hub owns the session (`None`: does not know it).
    pub fn owns(&self, token: &Token) -> Option<bool> {
        self.lock().summary(token).map(|s| !s.mirror)
    }

    /// Takes over a session from MongoDB: its history, its open wait and its
    /// queued replies, so an agent that failed over here waits on.
    pub fn adopt(
        &self,
        mut session: Session,
        messages: Vec<(u64, Message)>,
        replies: Vec<QueuedReply>,
        files: Vec<(String, Vec<u8>)>,
    ) -> Result<Unflushed<()>> {
        let token = session.token.clone();
        let previous = session.hub.clone();
        session.adoptions.push(holdline_store::session::Adoption {
            from: previous.clone(),
            to: self.inner.name.clone(),
            at: now_ms(),
        });
        session.hub = self.inner.name.clone();
        session.mirror = false;
        session.rev += 1;
        let wait = session.wait.as_ref().map(|w| w.wait_id.clone());
        let mut w = Write::new();
        // Pinned until the write that names them is applied.
        let _staged = self.stage_carried(&session, files, &mut w)?;
        let adopted = self.write(|table| {
            if table.summary(&token).is_some_and(|l| !l.mirror) {
                return Ok(Change::Unchanged(false));
            }
            let have = table.get(&token)?.map_or(0, |l| l.msg_count);
            for (seq, m) in messages.into_iter().filter(|(seq, _)| *seq >= have) {
                w.message(&token, seq, m);
            }
            for r in self.inner.store.queued_replies(&token)? {
                w.dequeue(&token, &r.id);
            }
            for r in replies {
                w.enqueue(&token, r);
            }
            if !session.status.is_closed() {
                let name = owned_name(session.owner.as_ref(), &session.binding_key);
                w.bind(BindingKind::Chat, &name, Some(&token));
            }
            Ok(Change::Write {
                write: w,
                sessions: Swapped::Own(vec![session]),
                answer: true,
            })
        })?;
        if *adopted.peek() {
            tracing::info!(token = %token, from = %previous, "adopted a session from MongoDB");
            if let Some(wait_id) = wait {
                self.arm_timed_reply(token, wait_id);
            }
        }
        Ok(adopted.map(|_| ()))
    }
}

/// What one sync push writes for a session.
#[derive(Debug, Clone)]
pub struct SyncSnapshot {
    pub session: Session,
    pub messages: Vec<(u64, Message)>,
    pub replies: Vec<QueuedReply>,
}
