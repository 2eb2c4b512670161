//! The panel's login sessions: each login gets a new random id (the cookie's
//! value), which the hub keeps — only its SHA-256, with an expiry — in the
//! store, so a restart keeps the person logged in; logout revokes that id,
//! "log out everywhere" every id.
//!
//! Invariant: a cookie authorizes exactly while its hash is in the table and
//! has not expired, and the table is on disk before a login or logout answers.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use holdline_store::lock::Unpoisoned as _;
use holdline_store::session::now_ms;
use holdline_store::store::{Store, StoreError};

/// How long a panel login lasts (from the login; then `holdline-hub
/// panel-url` again).
pub const LIFETIME: Duration = Duration::from_secs(30 * 24 * 3600);
/// Logins kept at most; past this the one expiring first is dropped.
pub const MAX_LOGINS: usize = 64;
/// The store's meta record holding the table (a restore carries it from
/// the store it replaces: see `store::restore`).
pub const META: &str = "panel_logins";

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
struct Login {
    created_ms: i64,
    expires_ms: i64,
}

/// The table of live logins, keyed by the hex SHA-256 of their id.
pub struct Logins {
    store: Store,
    /// A std mutex: map work and one store insert, never across `.await`.
    table: Mutex<HashMap<String, Login>>,
}

fn digest(id: &str) -> String {
    hex::encode(Sha256::digest(id.as_bytes()))
}

impl Logins {
    /// The logins the store holds (none on a new store).
    pub fn open(store: &Store) -> Result<Logins, StoreError> {
        let table: HashMap<String, Login> = store.meta_get(META)?.unwrap_or_default();
        Ok(Logins {
            store: store.clone(),
            table: Mutex::new(table),
        })
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Login>> {
        self.table.lock_unpoisoned()
    }

    /// A new login: its id, for the cookie. On disk when this returns.
    pub async fn begin(&self) -> Result<String, StoreError> {
        let id = crate::home::new_secret();
        let now = now_ms();
        {
            let mut table = self.lock();
            table.retain(|_, l| l.expires_ms > now);
            while table.len() >= MAX_LOGINS {
                let first = table
                    .iter()
                    .min_by_key(|(_, l)| l.expires_ms)
                    .map(|(k, _)| k.clone());
                match first {
                    Some(k) => table.remove(&k),
                    None => break,
                };
            }
            table.insert(
                digest(&id),
                Login {
                    created_ms: now,
                    expires_ms: now + LIFETIME.as_millis() as i64,
                },
            );
            self.store.meta_put(META, &*table)?;
        }
        self.store.flush().await?;
        Ok(id)
    }

    /// Whether `id` is a live login.
    pub fn is_live(&self, id: &str) -> bool {
        let now = now_ms();
        self.lock()
            .get(&digest(id))
            .is_some_and(|l| l.expires_ms > now)
    }

    /// Revokes one login (logout); unknown ids are ignored.
    pub async fn end(&self, id: &str) -> Result<(), StoreError> {
        {
            let mut table = self.lock();
            if table.remove(&digest(id)).is_none() {
                return Ok(());
            }
            self.store.meta_put(META, &*table)?;
        }
        self.store.flush().await
    }

    /// Revokes every login ("log out everywhere"); answers how many.
    pub async fn end_all(&self) -> Result<usize, StoreError> {
        let ended = {
            let mut table = self.lock();
            let n = table.len();
            table.clear();
            self.store.meta_put(META, &*table)?;
            n
        };
        self.store.flush().await?;
        Ok(ended)
    }

    /// Live logins now.
    pub fn count(&self) -> usize {
        let now = now_ms();
        self.lock().values().filter(|l| l.expires_ms > now).count()
    }
}
