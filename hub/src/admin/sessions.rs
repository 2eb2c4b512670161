//! `sessions`: the sessions as a table, waiting first.

use super::Result;
use super::client::HubClient;
use crate::api::dto::SessionDto;
use holdline_core::config::Config;

/// The open sessions (with `all`, the archived too), one line each.
pub async fn sessions(config: &Config, all: bool) -> Result<()> {
    let c = HubClient::new(config)?;
    let status = if all { "all" } else { "" };
    let list = c.sessions(status, 200).await?;
    let now = holdline_store::session::now_ms();
    say!(
        "{:<36} {:<9} {:>8}  {:<16} {:<16} TITLE",
        "TOKEN",
        "STATUS",
        "WAITED",
        "MACHINE",
        "FOLDER"
    );
    for s in &list.sessions {
        let waited = s
            .waiting_since
            .map(|t| format!("{}s", (now - t).max(0) / 1000))
            .unwrap_or_default();
        say!(
            "{:<36} {:<9} {:>8}  {:<16} {:<16} {}",
            s.head.token,
            s.head.status.as_str(),
            waited,
            s.machine,
            folder(&s.head.workspace),
            title(s)
        );
    }
    Ok(())
}

/// The title the person gave, else the agent's.
fn title(s: &SessionDto) -> &str {
    if s.display_title.is_empty() {
        &s.head.title
    } else {
        &s.display_title
    }
}

/// A workspace's last folder name (`/a/b/` → `b`).
fn folder(workspace: &str) -> &str {
    workspace
        .trim_end_matches(['/', '\\'])
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or(workspace)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_workspace_shows_as_its_last_folder() {
        assert_eq!(super::folder("/home/a/proj/"), "proj");
        assert_eq!(super::folder(r"C:\work\app"), "app");
        assert_eq!(super::folder(""), "");
    }
}
