//! The session table: a 24-byte summary of every session in memory, whole
//! sessions read from the store when needed and kept while they are in use.
//!
//! A start reads only the summaries, so a hub with 100,000 stored sessions
//! starts and idles as light as the store under it. Lists filter and sort on
//! the summaries and read whole sessions for the page they return.
//!
//! Invariant: every session with an open wait is resident (loaded at start,
//! and a wait only opens through a session that was read), so questions about
//! open waits are answered from memory. Of the others, the most recently used
//! few thousand are kept and the rest dropped: the store has every one of them
//! as it is in memory (a change is stored before it is swapped in), so a
//! dropped session is read back unchanged when next needed.

use std::borrow::Cow;
use std::collections::HashMap;

use holdline_store::session::{Session, Summary, Token};
use holdline_store::store::{Store, StoreError};

/// Sessions without an open wait kept in memory after use, the most recently
/// used first (~1.2 KiB each): the panel's pages and the agents at work.
pub const IDLE_KEPT: usize = 2_048;

pub struct SessionTable {
    store: Store,
    /// Every session, keyed by the token's raw bytes (16, not 35).
    summaries: HashMap<[u8; 16], Summary>,
    /// Sessions read whole.
    resident: HashMap<Token, Resident>,
    /// Counts uses; a resident session remembers the count of its last use.
    uses: u64,
    /// Sessions without an open wait kept by `trim`.
    idle_kept: usize,
    /// `resident`'s size at which `trim` runs next.
    trim_at: usize,
}

struct Resident {
    /// Boxed: a spare slot in the map then costs a pointer.
    session: Box<Session>,
    last_used: u64,
}

impl SessionTable {
    /// Reads every summary, and the sessions with an open wait.
    pub fn load(store: &Store) -> Result<SessionTable, StoreError> {
        Self::load_keeping(store, IDLE_KEPT)
    }

    /// `load`, keeping `idle_kept` sessions without an open wait in memory.
    pub fn load_keeping(store: &Store, idle_kept: usize) -> Result<SessionTable, StoreError> {
        let summaries = store.load_summaries()?;
        let mut table = SessionTable {
            store: store.clone(),
            summaries,
            resident: HashMap::new(),
            uses: 0,
            idle_kept: idle_kept.max(1),
            // Nothing to drop while the waiting sessions are read.
            trim_at: usize::MAX,
        };
        let waiting: Vec<Token> = table
            .summaries
            .iter()
            .filter(|(_, s)| s.wait_since().is_some())
            .map(|(raw, _)| Token::from_raw(*raw))
            .collect();
        for token in waiting {
            table.get(&token)?;
        }
        table.trim_at = table.resident.len() + table.idle_kept * 2;
        Ok(table)
    }

    pub fn len(&self) -> usize {
        self.summaries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.summaries.is_empty()
    }

    pub fn contains_key(&self, token: &Token) -> bool {
        self.summaries.contains_key(&token.to_raw())
    }

    pub fn summary(&self, token: &Token) -> Option<&Summary> {
        self.summaries.get(&token.to_raw())
    }

    /// Every session's token as its 16 raw bytes (which sort as the tokens do)
    /// and its summary, in no order: for passes that make a `Token` only for
    /// the few sessions they keep.
    pub fn raw_entries(&self) -> impl Iterator<Item = ([u8; 16], &Summary)> {
        self.summaries.iter().map(|(raw, s)| (*raw, s))
    }

    /// Every session's token and summary, in no order.
    pub fn entries(&self) -> impl Iterator<Item = (Token, &Summary)> {
        self.summaries
            .iter()
            .map(|(raw, s)| (Token::from_raw(*raw), s))
    }

    /// The whole session, read from the store if it is not in memory, and kept.
    pub fn get(&mut self, token: &Token) -> Result<Option<&Session>, StoreError> {
        self.uses += 1;
        if let Some(r) = self.resident.get_mut(token) {
            r.last_used = self.uses;
        } else {
            if !self.contains_key(token) {
                return Ok(None);
            }
            let Some(session) = self.store.session(token)? else {
                return Err(missing(token));
            };
            self.keep(session);
        }
        Ok(self.resident.get(token).map(|r| &*r.session))
    }

    /// The whole session without keeping it: for passes over many sessions
    /// (search, export, sync's start) that must not fill memory.
    pub fn peek(&self, token: &Token) -> Result<Option<Cow<'_, Session>>, StoreError> {
        if let Some(r) = self.resident.get(token) {
            return Ok(Some(Cow::Borrowed(&*r.session)));
        }
        if !self.contains_key(token) {
            return Ok(None);
        }
        match self.store.session(token)? {
            Some(s) => Ok(Some(Cow::Owned(s))),
            None => Err(missing(token)),
        }
    }

    /// Puts a session the store already has (written by the caller) in memory.
    pub fn insert(&mut self, session: Session) {
        self.uses += 1;
        self.summaries
            .insert(session.token.to_raw(), Summary::of(&session));
        self.keep(session);
    }

    /// Sessions with an open wait (all resident, see the module's invariant).
    pub fn waiting(&self) -> impl Iterator<Item = &Session> {
        self.resident
            .values()
            .map(|r| &*r.session)
            .filter(|s| s.wait.is_some())
    }

    /// How many sessions are in memory now.
    pub fn resident_len(&self) -> usize {
        self.resident.len()
    }

    fn keep(&mut self, session: Session) {
        let last_used = self.uses;
        self.resident.insert(
            session.token.clone(),
            Resident {
                session: Box::new(session),
                last_used,
            },
        );
        if self.resident.len() >= self.trim_at {
            self.trim();
        }
    }

    /// Drops the least recently used sessions without an open wait, down to
    /// `idle_kept` of them. Runs once `idle_kept` more have come in since the
    /// last trim, so its scan costs O(1) a use on average.
    fn trim(&mut self) {
        let mut idle: Vec<(u64, Token)> = self
            .resident
            .iter()
            .filter(|(_, r)| r.session.wait.is_none())
            .map(|(t, r)| (r.last_used, t.clone()))
            .collect();
        if idle.len() > self.idle_kept {
            let drop = idle.len() - self.idle_kept;
            idle.select_nth_unstable(drop - 1);
            for (_, token) in &idle[..drop] {
                self.resident.remove(token);
            }
        }
        self.trim_at = self.resident.len() + self.idle_kept;
    }
}

/// A summary without its session: the store lost a record it wrote together.
fn missing(token: &Token) -> StoreError {
    StoreError::Decode(format!("session {token} has a summary but no record"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use holdline_store::session::OpenWait;
    use holdline_store::store::Write;

    /// `n` stored sessions; every fifth has an open wait.
    fn stored(store: &Store, n: usize) -> Vec<Token> {
        let mut w = Write::new();
        let tokens = (0..n)
            .map(|i| {
                let mut s = Session::new(Token::generate(), &format!("s{i}"), "/w", "h", "hub");
                if i % 5 == 0 {
                    s.wait = Some(OpenWait {
                        wait_id: format!("w{i}"),
                        request_id: format!("r{i}"),
                        since: 1_000 + i as i64,
                        key: None,
                        origin: Default::default(),
                    });
                }
                w.session(&s);
                s.token
            })
            .collect();
        store.apply(&w).unwrap();
        tokens
    }

    #[test]
    fn sessions_without_a_wait_are_dropped_least_recently_used_first_and_read_back_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        let tokens = stored(&store, 60);
        let waiting = 12;
        let mut table = SessionTable::load_keeping(&store, 4).unwrap();
        assert_eq!(
            table.resident_len(),
            waiting,
            "the waiting sessions, read at start"
        );

        // The panel pages through everything while one agent's session stays in use.
        let hot = &tokens[1];
        for (i, t) in tokens.iter().enumerate() {
            assert_eq!(table.get(t).unwrap().unwrap().title, format!("s{i}"));
            table.get(hot).unwrap();
            assert!(
                table.resident_len() <= waiting + 2 * 4,
                "{} resident after {i} reads",
                table.resident_len()
            );
        }
        assert_eq!(
            table.waiting().count(),
            waiting,
            "no waiting session is dropped"
        );
        assert!(
            table.resident.contains_key(hot),
            "the session in use is kept"
        );
        assert!(
            table.resident.contains_key(&tokens[59]),
            "the last read is kept"
        );
        assert!(
            !table.resident.contains_key(&tokens[2]),
            "an early read is dropped"
        );
        assert_eq!(table.len(), 60, "every summary stays");

        // A dropped session reads back as the store has it, and a change to
        // one (stored first, then swapped in) is what the next read sees.
        for t in &tokens {
            let back = table.peek(t).unwrap().unwrap().into_owned();
            assert_eq!(back, store.session(t).unwrap().unwrap());
            assert_eq!(table.get(t).unwrap(), Some(&back));
        }
        let mut changed = table.get(&tokens[3]).unwrap().unwrap().clone();
        changed.title = "renamed".into();
        let mut w = Write::new();
        w.session(&changed);
        store.apply(&w).unwrap();
        table.insert(changed);
        for t in &tokens[4..] {
            table.get(t).unwrap();
        }
        assert!(!table.resident.contains_key(&tokens[3]));
        assert_eq!(table.get(&tokens[3]).unwrap().unwrap().title, "renamed");
    }
}
