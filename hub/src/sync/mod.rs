//! The only code that knows MongoDB (behind the `sync` cargo feature, on by default):
//! optional background sync of sessions, messages and queued replies to database `holdline`, copies of other hubs'
//! sessions, and adoption of a session whose agent failed over to this hub.
//!
//! Invariant: nothing here is on a request's path except adoption. Pushes
//! run in one background task from the hub's set of changed sessions, so an
//! absent, failing or slow MongoDB never slows the hub; what it missed stays
//! in the set (and in the store's `synced` marks across restarts) until it
//! is back. Pushes are idempotent upserts keyed by token, `token:seq` and
//! reply id, so a retry never duplicates.
//!
//! Collections:
//! - `sessions`: `_id` token, `owner` (hub name), `rev`, `updatedAt`,
//!   readable `title`/`status`/`workspace`/`lastActiveAt`, and `state` (the
//!   full session record as JSON, what another hub restores from)
//! - `messages`: `_id` `token:seq`, `token`, `seq` and the message fields
//! - `replies`: `_id` reply id, `token`, `state` (queued reply as JSON)
//! - `attachments`: `_id` attachment id, `token`, `name`, `mimeType`, `size`,
//!   `data` (binary): a question's files, one document each (at most 5 MiB, under
//!   MongoDB's 16 MiB document limit), written before the message naming them

use serde::{Deserialize, Serialize};

#[cfg(feature = "sync")]
mod mongo;
#[cfg(feature = "sync")]
pub use mongo::Sync;

/// What `/healthz` shows of sync.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SyncState {
    /// `connecting`, `ok` or `failing`.
    pub state: std::borrow::Cow<'static, str>,
    pub pending: usize,
    pub lag_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error("MongoDB: {0}")]
    Mongo(String),
    #[error("a record from MongoDB is unreadable: {0}")]
    Decode(String),
    #[error("this holdline-hub was built without MongoDB sync (cargo feature `sync`)")]
    NotBuilt,
}

/// Why a `mongo_uri` cannot be used.
pub enum UriRefused {
    /// Not a MongoDB connection string: the driver's reason.
    Malformed(String),
    /// This hub was built without the `sync` feature.
    NotBuilt,
}

/// Whether `uri` is a MongoDB connection string this hub can sync with.
pub fn check_uri(uri: &str) -> Result<(), UriRefused> {
    #[cfg(feature = "sync")]
    return mongo::check_uri(uri).map_err(UriRefused::Malformed);
    #[cfg(not(feature = "sync"))]
    {
        let _ = uri;
        Err(UriRefused::NotBuilt)
    }
}

/// A hub built without the `sync` feature: no sync can exist, so no value of this type.
#[cfg(not(feature = "sync"))]
#[derive(Clone)]
pub enum Sync {}

#[cfg(not(feature = "sync"))]
impl Sync {
    pub async fn start(_hub: crate::hub::Hub, _uri: &str) -> Result<Sync, SyncError> {
        Err(SyncError::NotBuilt)
    }

    pub fn state(&self) -> SyncState {
        match *self {}
    }

    pub async fn adopt(&self, _token: &crate::session::Token) -> Result<bool, SyncError> {
        match *self {}
    }
}
