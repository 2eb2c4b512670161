//! `status`: is the hub up, and what it holds.

use super::client::HubClient;
use super::{Result, count};
use crate::api::dto::StoreCondition;
use crate::process::StartedBy;
use holdline_core::config::Config;

/// One line of what the hub holds, then its process, its store and MongoDB sync.
pub async fn status(config: &Config) -> Result<()> {
    let c = HubClient::new(config)?;
    let h = c.health().await?;
    say!(
        "holdline-hub {} at {}: {}, {} waiting, up {}s",
        h.version,
        c.base,
        count(h.sessions as u64, "session"),
        h.waiting,
        h.uptime_ms / 1000
    );
    if let Some(p) = &h.process {
        say!("Process: PID {}, {}", p.pid, started_by_text(p.started_by));
    }
    if h.store.state == StoreCondition::Failing {
        say!(
            "Store: FAILING since {} ms: {} (writes answer errors; the hub retries by itself)",
            h.store.since.map_or("null".to_owned(), |s| s.to_string()),
            h.store.last_error.as_deref().unwrap_or("no details")
        );
    }
    match &h.mongo {
        None => say!("MongoDB sync: off"),
        Some(m) => say!(
            "MongoDB sync: {} (pending {}, lag {} ms)",
            m.state,
            m.pending,
            m.lag_ms
        ),
    }
    Ok(())
}

/// How `status` says what started the hub.
fn started_by_text(by: StartedBy) -> &'static str {
    match by {
        StartedBy::Systemd => "started by systemd (the holdline-hub service)",
        StartedBy::Launchd => "started by launchd (the dev.holdline.hub LaunchAgent)",
        StartedBy::Bridge => "started by a holdline-mcp bridge that found no hub",
        StartedBy::Shell => "started by hand (a shell, nohup or cron)",
    }
}
