//! The names sessions are known by: an agent key's name ([`KeyName`],
//! interned) and a chat's binding key ([`BindingKey`]); pure data, no IO.
//!
//! Invariant: a `KeyName` is always a valid name (1 to [`MAX_NAME`] characters
//! of `[A-Za-z0-9._-]` when parsed from a person) and equal names share one
//! allocation for the life of the process.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use crate::lock::Unpoisoned as _;
use serde::{Deserialize, Serialize};

/// Key names: 1 to this many characters of `[A-Za-z0-9._-]`.
pub const MAX_NAME: usize = 64;

/// A name a person typed that is not a key name (shown cut to 80 characters).
#[derive(Debug, thiserror::Error)]
#[error(
    "{0:?} is not a key name: use 1 to {MAX_NAME} letters, digits, dots, dashes or underscores"
)]
pub struct BadKeyName(pub String);

/// `{workspace}::{cursorTitle}@{hostIp}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BindingKey(String);

impl BindingKey {
    pub fn new(workspace: &str, cursor_title: &str, host_ip: &str) -> Self {
        BindingKey(format!("{workspace}::{cursor_title}@{host_ip}"))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

/// A key's name. Interned and a thin pointer: every open wait and session
/// made with a key names it, and each pays 8 bytes (`Option<KeyName>` too),
/// sharing one allocation per name — the hub keeps 10,000 waiting sessions
/// in memory.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KeyName(Arc<String>);

/// The names seen in this process; they are few (one per key ever made).
static NAMES: LazyLock<Mutex<HashMap<String, KeyName>>> = LazyLock::new(Mutex::default);

impl KeyName {
    /// A name as the person typed it, checked.
    pub fn parse(s: &str) -> Result<KeyName, BadKeyName> {
        let ok = (1..=MAX_NAME).contains(&s.len())
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
        if ok {
            Ok(KeyName::intern(s))
        } else {
            let shown: String = s.chars().take(80).collect();
            Err(BadKeyName(shown))
        }
    }

    fn intern(s: &str) -> KeyName {
        let mut names = NAMES.lock_unpoisoned();
        if let Some(known) = names.get(s) {
            return known.clone();
        }
        let name = KeyName(Arc::new(s.to_owned()));
        names.insert(s.to_owned(), name.clone());
        name
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for KeyName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KeyName({:?})", self.as_str())
    }
}

impl std::fmt::Display for KeyName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for KeyName {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for KeyName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = std::borrow::Cow::<'de, str>::deserialize(d)?;
        Ok(KeyName::intern(&s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        for good in ["laptop", "a", "ci.runner-2_x", &"n".repeat(MAX_NAME)] {
            assert!(KeyName::parse(good).is_ok(), "{good:?} refused");
        }
        for bad in ["", "two words", "é", "a/b", &"n".repeat(MAX_NAME + 1)] {
            assert!(
                matches!(KeyName::parse(bad), Err(BadKeyName(_))),
                "{bad:?} accepted"
            );
        }
    }

    #[test]
    fn names_are_interned() {
        let a = KeyName::parse("shared-name").unwrap();
        let b: KeyName = serde_json::from_str("\"shared-name\"").unwrap();
        assert!(Arc::ptr_eq(&a.0, &b.0));
        assert_eq!(std::mem::size_of::<Option<KeyName>>(), 8);
    }
}
