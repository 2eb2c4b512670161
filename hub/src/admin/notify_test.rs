//! `notify test`: a test notification to every configured channel, each result on a line.

use super::client::HubClient;
use super::{Result, fail, listening};
use holdline_core::config::Config;

/// Sends the tests; fails when any channel failed.
pub async fn notify_test(config: &Config) -> Result<()> {
    let n = &config.notify;
    if !n.is_on() {
        return fail(format!(
            "no notification channel is configured: add [notify] to {}",
            config.home.join("config.toml").display()
        ));
    }
    let link = match &n.panel_url {
        Some(u) => u.clone(),
        None => format!("http://{}/", crate::net::advertised(listening(config))),
    };
    let mut failed = 0;
    for (name, result) in holdline_notify::test(n, &link, None).await {
        match result {
            Ok(()) => say!("{name}: sent"),
            Err(e) => {
                failed += 1;
                say!("{name}: FAILED: {e}");
            }
        }
    }
    if n.webpush.is_some() {
        match push_test(config).await {
            Ok(()) => say!("webpush: sent"),
            Err(e) => {
                failed += 1;
                say!("webpush: FAILED: {e}");
            }
        }
    }
    if failed > 0 {
        return fail(format!("{failed} channel(s) failed"));
    }
    Ok(())
}

/// Web Push's test: the subscriptions live in the running hub's store, so
/// the hub sends it (`POST /api/push/test`).
async fn push_test(config: &Config) -> Result<()> {
    let answer = HubClient::new(config)?.push_test().await?;
    match answer.error {
        None if answer.sent => Ok(()),
        e => fail(e.unwrap_or_else(|| "the hub did not say".to_owned())),
    }
}
