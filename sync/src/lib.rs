//! holdline-sync: the only crate that knows MongoDB (its driver behind this crate's `mongo`
//! feature, which the hub's `sync` feature turns on; both on by default):
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

#![forbid(unsafe_code)]

use serde::{Deserialize, Serialize};

use holdline_core::config::{Config, ConfigError};

#[cfg(feature = "mongo")]
mod mongo;
#[cfg(feature = "mongo")]
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

/// Checks what `serve` would find out only later: a `mongo_uri` that is not one, or one a
/// hub built without sync cannot use (before the hub says it is listening, so a service
/// does not restart in a loop).
pub fn check_config(config: &Config) -> Result<(), ConfigError> {
    let Some(uri) = &config.mongo_uri else {
        return Ok(());
    };
    #[cfg(feature = "mongo")]
    return mongo::check_uri(uri).map_err(|reason| ConfigError::MongoUri {
        uri: holdline_core::config::mask_uri(uri),
        reason,
    });
    #[cfg(not(feature = "mongo"))]
    {
        let _ = uri;
        Err(ConfigError::SyncNotBuilt)
    }
}

/// A hub built without the `sync` feature: no sync can exist, so no value of this type.
#[cfg(not(feature = "mongo"))]
#[derive(Clone)]
pub enum Sync {}

#[cfg(not(feature = "mongo"))]
impl Sync {
    pub async fn start(_hub: holdline_core::hub::Hub, _uri: &str) -> Result<Sync, SyncError> {
        Err(SyncError::NotBuilt)
    }

    pub fn state(&self) -> SyncState {
        match *self {}
    }

    pub async fn adopt(&self, _token: &holdline_store::session::Token) -> Result<bool, SyncError> {
        match *self {}
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::check_config;
    use holdline_core::config::Config;

    fn config_with(uri: &str) -> Config {
        let mut c = Config::for_home(PathBuf::from("/h"), "127.0.0.1:1".parse().unwrap());
        c.mongo_uri = Some(uri.into());
        c
    }

    #[test]
    #[cfg(feature = "mongo")]
    fn a_bad_mongo_uri_is_said_with_its_credentials_masked() {
        let e = check_config(&config_with("foo://alice:pw@bar"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("mongodb://HOST") && e.contains("foo://***@bar"),
            "{e}"
        );
        assert!(!e.contains("pw") && !e.contains("labels"), "{e}");
        check_config(&config_with("mongodb://db:27017/")).unwrap();
    }

    /// Built without the `sync` feature, the hub refuses any `mongo_uri` before it listens
    /// and says how to get sync, without echoing the URI (it may hold a password).
    #[test]
    #[cfg(not(feature = "mongo"))]
    fn a_hub_built_without_sync_refuses_a_mongo_uri_and_says_why() {
        let e = check_config(&config_with("mongodb://alice:pw@db:27017/"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("without MongoDB sync") && e.contains("`sync`"),
            "{e}"
        );
        assert!(!e.contains("pw"), "{e}");
    }

    #[test]
    fn no_mongo_uri_is_no_sync_and_no_error() {
        let mut c = config_with("mongodb://db:27017/");
        c.mongo_uri = None;
        check_config(&c).unwrap();
    }
}
