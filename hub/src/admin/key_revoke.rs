//! `key revoke NAME`: the key is refused from now on.

use super::client::HubClient;
use super::{Result, count, offline_keys, said};
use holdline_core::config::Config;

/// A running hub ends the key's open waits at once, a stopped one when it starts.
pub async fn key_revoke(config: &Config, name: &str) -> Result<()> {
    let name = holdline_store::names::KeyName::parse(name).map_err(said)?;
    match HubClient::running(config).await {
        Some(c) => {
            let r = c.revoke_key(name.as_str()).await?;
            say!(
                "revoked agent key \"{name}\"; {} ended",
                count(r.closed_waits as u64, "open wait")
            );
        }
        None => {
            offline_keys(config)?
                .revoke(name.as_str())
                .await
                .map_err(said)?;
            say!(
                "revoked agent key \"{name}\" (the hub is not running: it ends the key's open waits when it starts)"
            );
        }
    }
    Ok(())
}
