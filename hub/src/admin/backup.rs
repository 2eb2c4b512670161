//! `backup`: a backup of the store now.

use super::client::HubClient;
use super::{Result, count};
use holdline_core::config::Config;
use holdline_core::home::Home;

/// Made by the running hub, or from the store when none runs.
pub async fn backup(config: &Config) -> Result<()> {
    let (path, sessions) = match HubClient::running(config).await {
        Some(c) => {
            let made = c.backup().await?;
            (made.path, made.sessions)
        }
        None => {
            let home = Home::new(config.home.clone());
            let store = holdline_store::store::Store::open(&home.db_dir(), config.cache_bytes)?;
            let made = store.backup()?;
            (made.path.display().to_string(), made.sessions)
        }
    };
    say!("backed up {} to {path}", count(sessions, "session"));
    Ok(())
}
