//! The session table: a 24-byte summary of every session in memory, whole
//! sessions read from the store the first time they are needed and kept.
//!
//! A start reads only the summaries, so a hub with 100,000 stored sessions
//! starts and idles as light as the store under it. Lists filter and sort on
//! the summaries and read whole sessions for the page they return.
//!
//! Invariant: every session with an open wait is resident (loaded at start,
//! and a wait only opens through a session that was read), so questions about
//! open waits are answered from memory.

use std::borrow::Cow;
use std::collections::HashMap;

use crate::session::{Session, Summary, Token};
use crate::store::{Store, StoreError};

pub struct SessionTable {
    store: Store,
    /// Every session, keyed by the token's raw bytes (16, not 35).
    summaries: HashMap<[u8; 16], Summary>,
    /// Sessions read whole. Boxed: a spare slot then costs a pointer.
    resident: HashMap<Token, Box<Session>>,
}

impl SessionTable {
    /// Reads every summary, and the sessions with an open wait.
    pub fn load(store: &Store) -> Result<SessionTable, StoreError> {
        let summaries = store.load_summaries()?;
        let mut table = SessionTable {
            store: store.clone(),
            summaries,
            resident: HashMap::new(),
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

    /// Every session's token and summary, in no order.
    pub fn entries(&self) -> impl Iterator<Item = (Token, &Summary)> {
        self.summaries
            .iter()
            .map(|(raw, s)| (Token::from_raw(*raw), s))
    }

    /// The whole session, read from the store (and kept) on first use.
    pub fn get(&mut self, token: &Token) -> Result<Option<&Session>, StoreError> {
        if !self.resident.contains_key(token) {
            if !self.contains_key(token) {
                return Ok(None);
            }
            let Some(session) = self.store.session(token)? else {
                return Err(missing(token));
            };
            self.resident.insert(token.clone(), Box::new(session));
        }
        Ok(self.resident.get(token).map(|s| &**s))
    }

    /// The whole session without keeping it: for passes over many sessions
    /// (search, export, sync's start) that must not fill memory.
    pub fn peek(&self, token: &Token) -> Result<Option<Cow<'_, Session>>, StoreError> {
        if let Some(s) = self.resident.get(token) {
            return Ok(Some(Cow::Borrowed(&**s)));
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
        self.summaries
            .insert(session.token.to_raw(), Summary::of(&session));
        self.resident
            .insert(session.token.clone(), Box::new(session));
    }

    /// Sessions with an open wait (all resident, see the module's invariant).
    pub fn waiting(&self) -> impl Iterator<Item = &Session> {
        self.resident
            .values()
            .map(|s| &**s)
            .filter(|s| s.wait.is_some())
    }
}

/// A summary without its session: the store lost a record it wrote together.
fn missing(token: &Token) -> StoreError {
    StoreError::Decode(format!("session {token} has a summary but no record"))
}
