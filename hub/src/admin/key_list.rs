//! `key list`: the agent keys: name, when made, when last used.

use super::client::HubClient;
use super::{Result, offline_keys};
use crate::api::dto::KeyDto;
use holdline_core::config::Config;

/// From the running hub, or the store when none runs.
pub async fn key_list(config: &Config) -> Result<()> {
    let rows: Vec<KeyDto> = match HubClient::running(config).await {
        Some(c) => c.keys().await?.keys,
        None => offline_keys(config)?
            .list()
            .into_iter()
            .map(KeyDto::from)
            .collect(),
    };
    if rows.is_empty() {
        eprintln!("no agent keys yet; make one with `holdline-hub key create --name NAME`");
        return Ok(());
    }
    let width = rows.iter().map(|r| r.name.len()).max().unwrap_or(4).max(4);
    say!("{:<width$}  {:<20}  LAST USED", "NAME", "CREATED");
    for k in rows {
        say!(
            "{:<width$}  {:<20}  {}",
            k.name,
            when(Some(k.created_at)),
            when(k.last_used_at)
        );
    }
    Ok(())
}

/// A time for the list: `2026-12-03 19:53 UTC`, or `never`.
fn when(ms: Option<i64>) -> String {
    let Some(ms) = ms else {
        return "never".into();
    };
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .and_then(|t| {
            t.format(time::macros::format_description!(
                "[year]-[month]-[day] [hour]:[minute] UTC"
            ))
            .ok()
        })
        .unwrap_or_else(|| "?".into())
}

#[cfg(test)]
mod tests {
    #[test]
    fn times_are_shown_in_utc_or_never() {
        assert_eq!(super::when(None), "never");
        assert_eq!(super::when(Some(0)), "1970-01-01 00:00 UTC");
    }
}
