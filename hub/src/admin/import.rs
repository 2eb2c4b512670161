//! `import FILE`: adds the sessions of a `sessions.json` file the hub does not have yet.

use std::path::Path;

use super::client::HubClient;
use super::{AdminError, Result, count, open_offline, said};
use holdline_core::config::Config;
use holdline_store::interchange::ExportFile;

/// Through the running hub, or into the store when none runs.
pub async fn import(config: &Config, path: &Path) -> Result<()> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| AdminError::Message(format!("cannot read {}: {e}", path.display())))?;
    let file: ExportFile = serde_json::from_str(&text).map_err(|e| {
        AdminError::Message(format!(
            "{} is not a sessions.json file: {e}",
            path.display()
        ))
    })?;
    let (imported, skipped) = match HubClient::running(config).await {
        Some(c) => {
            let r = c.import(&file).await?;
            (r.imported, r.skipped)
        }
        None => {
            let hub = open_offline(config)?;
            hub.import(file)
                .map_err(said)?
                .flushed(&hub)
                .await
                .map_err(said)?
        }
    };
    say!(
        "imported {}, skipped {skipped} already present",
        count(imported as u64, "session")
    );
    Ok(())
}
