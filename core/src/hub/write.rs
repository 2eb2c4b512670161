//! The one write path: every change of the hub's state — a session, its history,
//! bindings, queued replies, file records — goes through [`Hub::write`].
//!
//! Invariant: a change is decided under the session table's lock, applied to sled
//! as one atomic write, and only then swapped into the table, so memory never holds
//! a state the store lacks; who is told of it afterwards is part of the change
//! ([`Swapped`]), and its result is [`Unflushed`] until the store is on disk. This
//! module is the only caller of `Store::apply` in the hub (a test below keeps it so).

use super::*;

/// What a change does, decided under the table's lock.
#[expect(
    clippy::large_enum_variant,
    reason = "made once per change and moved straight into `Hub::write`: boxing would add an allocation to every write"
)]
pub(super) enum Change<R> {
    /// Nothing to write: the state already says it; `R` is the answer.
    Unchanged(R),
    /// `write` stored as one atomic write with `sessions` in it, then `sessions`
    /// swapped into the table and told; `answer` is the answer.
    Write {
        write: Write,
        sessions: Swapped,
        answer: R,
    },
}

/// The sessions a change swaps into the table, and so who is told of them.
pub(super) enum Swapped {
    /// Sessions this hub changed: their waiters are woken, the panel's stream
    /// and sync are told.
    Own(Vec<Session>),
    /// A session new to this hub from a `sessions.json`: only sync is told (no
    /// one waits on it yet, and an import of thousands would overrun the panel's
    /// stream).
    Imported(Session),
    /// A copy of another hub's session: its waiters and the panel are told; sync
    /// drops it from the push set (MongoDB is where it came from).
    Mirror(Session),
    /// No session: the change writes only records beside them (released files).
    None,
}

impl Swapped {
    fn sessions(&self) -> &[Session] {
        match self {
            Swapped::Own(sessions) => sessions,
            Swapped::Imported(s) | Swapped::Mirror(s) => std::slice::from_ref(s),
            Swapped::None => &[],
        }
    }
}

impl Hub {
    /// Decides a change with `decide` under the table's lock, stores it as one
    /// atomic write, swaps its sessions in and tells whom [`Swapped`] says.
    pub(super) fn write<R>(
        &self,
        decide: impl FnOnce(&mut SessionTable) -> Result<Change<R>>,
    ) -> Result<Unflushed<R>> {
        let (answer, swapped) = {
            let mut table = self.lock();
            let (mut write, swapped, answer) = match decide(&mut table)? {
                Change::Unchanged(answer) => return Ok(Unflushed::new(answer)),
                Change::Write {
                    write,
                    sessions,
                    answer,
                } => (write, sessions, answer),
            };
            for s in swapped.sessions() {
                write.session(s);
            }
            self.inner.store.apply(&write)?;
            for s in swapped.sessions() {
                table.insert(s.clone());
            }
            (answer, swapped)
        };
        self.tell(swapped);
        Ok(Unflushed::new(answer))
    }

    /// Runs `f` on a copy of the session this hub owns; if it succeeds, stores the
    /// copy (its `rev` one up) and `f`'s extra writes as one change of it.
    pub(super) fn commit<R>(
        &self,
        token: &Token,
        f: impl FnOnce(&Hub, &mut Session, &mut Write) -> Result<R>,
    ) -> Result<Unflushed<R>> {
        self.write(|table| {
            let current = table
                .get(token)?
                .ok_or_else(|| HubError::NotFound(token.clone()))?;
            if current.mirror {
                return Err(mirror_error(current));
            }
            let mut next = current.clone();
            let mut write = Write::new();
            let answer = f(self, &mut next, &mut write)?;
            next.rev += 1;
            Ok(Change::Write {
                write,
                sessions: Swapped::Own(vec![next]),
                answer,
            })
        })
    }

    /// Tells waiters, listeners and sync that sessions changed, as `swapped` says.
    fn tell(&self, swapped: Swapped) {
        match swapped {
            Swapped::Own(sessions) => {
                for s in sessions {
                    self.inner.waiters.wake(&s.token);
                    self.mark_unsynced(&s.token);
                    self.send_event(s);
                }
            }
            Swapped::Imported(s) => self.mark_unsynced(&s.token),
            Swapped::Mirror(s) => {
                self.forget_unsynced(&s.token);
                self.inner.waiters.wake(&s.token);
                self.send_event(s);
            }
            Swapped::None => {}
        }
    }

    /// Sends a changed session to the panel's stream (and sync's listeners).
    fn send_event(&self, session: Session) {
        // Counting the queue reads the store: only when a panel listens.
        if self.inner.events.receiver_count() == 0 {
            return;
        }
        let queued = self.queued_count(&session.token);
        let _ = self.inner.events.send(SessionInfo {
            session,
            queued_replies: queued,
        });
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    /// This module's folder (`hub/` of the crate that holds it), from the
    /// workspace root the compiler names files by.
    fn hub_dir() -> PathBuf {
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        workspace.join(file!()).parent().unwrap().to_path_buf()
    }

    /// Every change goes through one place: no file of the hub but this one
    /// applies a write to the store, and this one does it once.
    #[test]
    fn only_hub_write_applies_to_the_store() {
        let mut callers = Vec::new();
        for entry in std::fs::read_dir(hub_dir()).unwrap() {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            // This test's own text names the call too; count the code above it.
            let code = text.split("#[cfg(test)]\nmod tests").next().unwrap();
            for _ in code.matches(".apply(&") {
                callers.push(path.file_name().unwrap().to_string_lossy().into_owned());
            }
        }
        callers.sort();
        assert!(
            !callers.is_empty(),
            "the scan found no call at all: is {:?} the hub's folder?",
            hub_dir()
        );
        assert_eq!(
            callers,
            ["write.rs"],
            "`Store::apply` is called outside `Hub::write` (or more than once)"
        );
    }
}
