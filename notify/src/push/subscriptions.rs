//! The browsers subscribed to Web Push, kept in the store (meta record
//! `push_subscriptions`), keyed by endpoint.
//!
//! Invariant: every kept subscription passed [`super::check`], there are at
//! most [`MAX_SUBSCRIPTIONS`], and a change is on disk before it is answered.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use serde::{Deserialize, Serialize};

use super::{Refused, Subscription, SubscriptionKeys, check};
use holdline_store::lock::Unpoisoned as _;
use holdline_store::session::now_ms;
use holdline_store::store::{Store, StoreError};

/// Subscriptions kept at most (each is one browser on one device).
pub const MAX_SUBSCRIPTIONS: usize = 50;
/// The store's meta record holding the table.
const META: &str = "push_subscriptions";

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Kept {
    keys: SubscriptionKeys,
    created_ms: i64,
}

/// Why a change was not made.
#[derive(Debug, thiserror::Error)]
pub enum ChangeError {
    #[error(transparent)]
    Refused(#[from] Refused),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The table of subscriptions.
pub struct Subscriptions {
    store: Store,
    /// A std mutex: map work and one store insert, never across `.await`.
    table: Mutex<BTreeMap<String, Kept>>,
}

impl Subscriptions {
    /// The subscriptions the store holds (none on a new store).
    pub fn open(store: &Store) -> Result<Subscriptions, StoreError> {
        let table = store.meta_get(META)?.unwrap_or_default();
        Ok(Subscriptions {
            store: store.clone(),
            table: Mutex::new(table),
        })
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Kept>> {
        self.table.lock_unpoisoned()
    }

    /// Every subscription, oldest endpoint first (by name).
    pub fn all(&self) -> Vec<Subscription> {
        self.lock()
            .iter()
            .map(|(endpoint, k)| Subscription {
                endpoint: endpoint.clone(),
                keys: k.keys.clone(),
            })
            .collect()
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// Keeps `sub` (replacing one with the same endpoint); on disk when this returns.
    pub async fn add(&self, sub: Subscription) -> Result<(), ChangeError> {
        check(&sub)?;
        {
            let mut table = self.lock();
            if !table.contains_key(&sub.endpoint) && table.len() >= MAX_SUBSCRIPTIONS {
                return Err(Refused::TooMany(MAX_SUBSCRIPTIONS).into());
            }
            table.insert(
                sub.endpoint,
                Kept {
                    keys: sub.keys,
                    created_ms: now_ms(),
                },
            );
            self.store.meta_put(META, &*table)?;
        }
        Ok(self.store.flush().await?)
    }

    /// Drops the subscription of `endpoint`; answers whether there was one.
    /// On disk when this returns.
    pub async fn remove(&self, endpoint: &str) -> Result<bool, StoreError> {
        {
            let mut table = self.lock();
            if table.remove(endpoint).is_none() {
                return Ok(false);
            }
            self.store.meta_put(META, &*table)?;
        }
        self.store.flush().await?;
        Ok(true)
    }

    /// Whether `endpoint` is subscribed.
    pub fn has(&self, endpoint: &str) -> bool {
        self.lock().contains_key(endpoint)
    }
}
