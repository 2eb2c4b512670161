//! `verify [PATH]`: checks a store or a backup whole.

use std::path::Path;

use super::{Result, count, queued};
use holdline_core::config::Config;
use holdline_core::home::Home;

/// Reads every record of `path` (the home's store by default) and says what it holds.
pub fn verify(config: &Config, path: Option<&Path>) -> Result<()> {
    let dir = path.map_or_else(|| Home::new(config.home.clone()).db_dir(), Path::to_owned);
    let v = holdline_store::store::verify(&dir)?;
    let what = match v.older_schema {
        None => "complete".to_owned(),
        Some(n) => format!("readable, schema version {n} (a hub upgrades it when it starts on it)"),
    };
    say!(
        "{}: {what}, {}, {}, {}",
        dir.display(),
        count(v.sessions, "session"),
        count(v.messages, "message"),
        queued(v.replies)
    );
    Ok(())
}
