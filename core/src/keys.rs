//! Agent keys: named credentials (`hlk_` + 43 base64url characters, 32 random
//! bytes) that open the agent routes and nothing else, each revocable on its
//! own. The store keeps only each key's SHA-256, its name, when it was made
//! and when it was last used.
//!
//! Invariant: a key authorizes exactly while its hash is in the table; the
//! table is on disk before a create or a revoke answers; the key's text is
//! shown once, by [`Keys::create`], and never stored or logged.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard};

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use holdline_store::lock::Unpoisoned as _;
pub use holdline_store::names::{BadKeyName, KeyName, MAX_NAME};
use holdline_store::session::{Millis, now_ms};
use holdline_store::store::{Store, StoreError};

/// What every agent key starts with, so the guard tells a key from the secret.
pub const PREFIX: &str = "hlk_";
/// Keys kept at most (a bound on the table, far above any real use).
pub const MAX_KEYS: usize = 1024;
/// A key's last use reaches the store at most this often; between, only memory has it.
const LAST_USE_EVERY_MS: Millis = 60_000;
/// The store's meta record holding the table (a restore carries it from
/// the store it replaces: see `store::restore`).
pub const META: &str = "agent_keys";

/// Why a key operation was refused; each message is one sentence for a person.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error(transparent)]
    BadName(#[from] BadKeyName),
    #[error("there is already a key named {0:?}; revoke it first or choose another name")]
    Duplicate(String),
    #[error("there is no key named {0:?} (`holdline-hub key list` shows the keys)")]
    Unknown(String),
    #[error("the hub already has {MAX_KEYS} keys; revoke some first")]
    Full,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What `key list` and the panel show of a key (never the key).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyInfo {
    pub name: KeyName,
    pub created_ms: Millis,
    pub last_used_ms: Option<Millis>,
}

/// A key as the store keeps it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StoredKey {
    name: KeyName,
    /// Hex SHA-256 of the key's text.
    sha256: String,
    created_ms: Millis,
    last_used_ms: Option<Millis>,
}

#[derive(Default)]
struct Table {
    by_name: BTreeMap<KeyName, Entry>,
    by_hash: HashMap<[u8; 32], KeyName>,
}

struct Entry {
    sha256: [u8; 32],
    created_ms: Millis,
    last_used_ms: Option<Millis>,
    /// The last use the store has, so it is written at most once a minute.
    stored_last_used_ms: Option<Millis>,
}

impl Table {
    fn stored(&self) -> Vec<StoredKey> {
        self.by_name
            .iter()
            .map(|(name, e)| StoredKey {
                name: name.clone(),
                sha256: hex::encode(e.sha256),
                created_ms: e.created_ms,
                last_used_ms: e.last_used_ms,
            })
            .collect()
    }
}

fn digest(key: &str) -> [u8; 32] {
    Sha256::digest(key.as_bytes()).into()
}

/// A fresh key's text: [`PREFIX`] and 32 random bytes in base64url.
fn new_key_text() -> String {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("the operating system's random source works");
    format!(
        "{PREFIX}{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    )
}

/// Whether a bearer value is meant as an agent key (right or wrong).
pub fn looks_like_key(bearer: &str) -> bool {
    bearer.starts_with(PREFIX)
}

/// The table of agent keys. One per hub, shared by every request.
pub struct Keys {
    store: Store,
    /// A std mutex: map work and, at most once a minute per key or on a
    /// create or revoke, one store insert; never across `.await`.
    table: Mutex<Table>,
}

impl Keys {
    /// The keys the store holds (none on a new store).
    pub fn open(store: &Store) -> Result<Keys, StoreError> {
        let stored: Vec<StoredKey> = store.meta_get(META)?.unwrap_or_default();
        let mut table = Table::default();
        for k in stored {
            let mut sha256 = [0u8; 32];
            if hex::decode_to_slice(&k.sha256, &mut sha256).is_err() {
                tracing::warn!(key = %k.name, "an agent key's stored hash is unreadable; it is left out");
                continue;
            }
            table.by_hash.insert(sha256, k.name.clone());
            table.by_name.insert(
                k.name,
                Entry {
                    sha256,
                    created_ms: k.created_ms,
                    last_used_ms: k.last_used_ms,
                    stored_last_used_ms: k.last_used_ms,
                },
            );
        }
        Ok(Keys {
            store: store.clone(),
            table: Mutex::new(table),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        self.table.lock_unpoisoned()
    }

    /// Makes a key named `name`: answers its text (shown once, kept nowhere).
    /// On disk when this returns.
    pub async fn create(&self, name: &str) -> Result<(KeyName, String), KeyError> {
        let name = KeyName::parse(name)?;
        let text = new_key_text();
        {
            let mut table = self.lock();
            if table.by_name.contains_key(&name) {
                return Err(KeyError::Duplicate(name.to_string()));
            }
            if table.by_name.len() >= MAX_KEYS {
                return Err(KeyError::Full);
            }
            let sha256 = digest(&text);
            table.by_hash.insert(sha256, name.clone());
            table.by_name.insert(
                name.clone(),
                Entry {
                    sha256,
                    created_ms: now_ms(),
                    last_used_ms: None,
                    stored_last_used_ms: None,
                },
            );
            self.store.meta_put(META, &table.stored())?;
        }
        self.store.flush().await?;
        Ok((name, text))
    }

    /// Revokes the key named `name`: it stops working at once. On disk when
    /// this returns. (Its open waits are the hub's to close.)
    pub async fn revoke(&self, name: &str) -> Result<KeyName, KeyError> {
        let name = KeyName::parse(name)?;
        {
            let mut table = self.lock();
            let Some(entry) = table.by_name.remove(&name) else {
                return Err(KeyError::Unknown(name.to_string()));
            };
            table.by_hash.remove(&entry.sha256);
            self.store.meta_put(META, &table.stored())?;
        }
        self.store.flush().await?;
        Ok(name)
    }

    /// Every key, by name.
    pub fn list(&self) -> Vec<KeyInfo> {
        self.lock()
            .by_name
            .iter()
            .map(|(name, e)| KeyInfo {
                name: name.clone(),
                created_ms: e.created_ms,
                last_used_ms: e.last_used_ms,
            })
            .collect()
    }

    /// Whether a key named `name` exists now.
    pub fn is_live(&self, name: &KeyName) -> bool {
        self.lock().by_name.contains_key(name)
    }

    /// The name of the key whose text is `presented`, if it is a live key;
    /// notes the use (in the store at most once a minute per key).
    pub fn verify(&self, presented: &str) -> Option<KeyName> {
        if !looks_like_key(presented) {
            return None;
        }
        // A lookup by hash: timing can tell at most how a wrong key's hash
        // compares to a right one's, which says nothing about the key.
        let sha256 = digest(presented);
        let now = now_ms();
        let mut table = self.lock();
        let name = table.by_hash.get(&sha256)?.clone();
        let entry = table.by_name.get_mut(&name)?;
        entry.last_used_ms = Some(now);
        let due = entry
            .stored_last_used_ms
            .is_none_or(|t| now - t >= LAST_USE_EVERY_MS);
        if due {
            entry.stored_last_used_ms = Some(now);
            // Not flushed: a last use lost to a crash costs nothing.
            if let Err(e) = self.store.meta_put(META, &table.stored()) {
                tracing::warn!(error = %e, "could not record an agent key's last use");
            }
        }
        Some(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys() -> (tempfile::TempDir, Keys) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        let keys = Keys::open(&store).unwrap();
        (dir, keys)
    }

    #[test]
    fn key_text_has_the_agreed_form() {
        let k = new_key_text();
        assert_eq!(k.len(), PREFIX.len() + 43);
        assert!(
            k[PREFIX.len()..]
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        );
        assert_ne!(k, new_key_text());
    }

    #[tokio::test]
    async fn create_verify_revoke() {
        let (_dir, keys) = keys();
        let (name, text) = keys.create("laptop").await.unwrap();
        assert_eq!(keys.verify(&text), Some(name.clone()));
        assert_eq!(keys.verify(&format!("{text}x")), None);
        assert!(keys.list()[0].last_used_ms.is_some());
        assert!(matches!(
            keys.create("laptop").await,
            Err(KeyError::Duplicate(_))
        ));
        keys.revoke("laptop").await.unwrap();
        assert_eq!(keys.verify(&text), None);
        assert!(matches!(
            keys.revoke("laptop").await,
            Err(KeyError::Unknown(_))
        ));
    }

    #[tokio::test]
    async fn the_store_keeps_hashes_only_and_survives_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let text = {
            let store = Store::open(dir.path(), 1 << 20).unwrap();
            let keys = Keys::open(&store).unwrap();
            let (_, text) = keys.create("desk").await.unwrap();
            let raw: serde_json::Value = store.meta_get(META).unwrap().unwrap();
            assert!(!raw.to_string().contains(&text));
            text
        };
        let store = holdline_store::store::testing::reopen(dir.path()).unwrap();
        let keys = Keys::open(&store).unwrap();
        assert_eq!(keys.verify(&text).unwrap().as_str(), "desk");
    }
}
