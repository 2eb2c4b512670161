//! The admin subcommands, one file each (its parse of what `main` hands it, and its run):
//! they call the running hub through [`client::HubClient`] (found through `hub.addr` in the
//! home, else the configured listen address) and, for export, import, backup, attachments
//! and agent keys when no hub runs, open the store directly.
//!
//! Invariant: what a command prints goes through `say!`, so a reader that stops reading
//! (`panel-url | head`) ends the command quietly; every failure is one [`AdminError`]
//! sentence that says what to do.

use std::io::Write as _;

use holdline_contract::{local_hub, routes};

use holdline_core::config::Config;
use holdline_core::home::Home;

/// `println!` for what a command prints: when the reader stops reading
/// (`panel-url | head`), the command ends quietly, as every Unix tool does,
/// instead of panicking on the failed write.
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::admin::say_line(format_args!($($arg)*))
    };
}

mod attachments;
mod backup;
mod client;
mod export;
mod import;
mod key_create;
mod key_list;
mod key_revoke;
mod notify_test;
mod panel_url;
mod reply;
mod restore;
mod sessions;
mod status;
mod stop;
mod verify;

pub use attachments::attachments;
pub use backup::backup;
pub use export::export;
pub use import::import;
pub use key_create::key_create;
pub use key_list::key_list;
pub use key_revoke::key_revoke;
pub use notify_test::notify_test;
pub use panel_url::panel_url;
pub use reply::reply;
pub use restore::restore;
pub use sessions::sessions;
pub use status::status;
pub use stop::stop;
pub use verify::verify;

#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("{0}")]
    Message(String),
    #[error(transparent)]
    Store(#[from] holdline_store::store::StoreError),
}

type Result<T> = std::result::Result<T, AdminError>;

fn say_line(line: std::fmt::Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = writeln!(out, "{line}") {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("holdline-hub: cannot write to standard output: {e}");
        std::process::exit(1);
    }
}

fn fail<T>(msg: impl Into<String>) -> Result<T> {
    Err(AdminError::Message(msg.into()))
}

/// An error of the hub's own operations (run offline), as the command's sentence.
fn said(e: impl std::fmt::Display) -> AdminError {
    AdminError::Message(e.to_string())
}

/// `1 session`, `2 sessions`.
fn count(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

fn queued(n: u64) -> String {
    match n {
        1 => "1 reply queued".into(),
        n => format!("{n} replies queued"),
    }
}

/// The hub's `/mcp` URL as another machine reaches it (the address it listens on, or
/// this machine's primary address when it listens on all).
fn mcp_url(config: &Config) -> String {
    format!(
        "http://{}{}",
        crate::net::advertised(listening(config)),
        routes::MCP
    )
}

/// Where this hub listens: the address it wrote when it started, else its setting.
fn listening(config: &Config) -> std::net::SocketAddr {
    local_hub::running_addr(&config.home).unwrap_or(config.listen)
}

/// Where the running hub answers, as a base URL.
pub fn hub_url(config: &Config) -> String {
    format!("http://{}", local_hub::reachable(listening(config)))
}

/// Opens the store directly, for when no hub runs.
fn open_offline(config: &Config) -> Result<holdline_core::hub::Hub> {
    Home::new(config.home.clone()).prepare().map_err(|e| {
        AdminError::Message(format!("cannot prepare {}: {e}", config.home.display()))
    })?;
    Ok(holdline_core::hub::Hub::open(
        config.clone(),
        config.listen.to_string(),
        tokio_util::sync::CancellationToken::new(),
    )?)
}

/// The agent keys of a stopped hub, straight from its store (a running hub
/// holds the store's lock; then the commands go over HTTP).
fn offline_keys(config: &Config) -> Result<holdline_core::keys::Keys> {
    let home = Home::new(config.home.clone());
    home.prepare().map_err(|e| {
        AdminError::Message(format!("cannot prepare {}: {e}", config.home.display()))
    })?;
    let store = holdline_store::store::Store::open(&home.db_dir(), config.cache_bytes)?;
    Ok(holdline_core::keys::Keys::open(&store)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_agree_with_their_noun() {
        assert_eq!(count(0, "session"), "0 sessions");
        assert_eq!(count(1, "session"), "1 session");
        assert_eq!(count(2, "session"), "2 sessions");
        assert_eq!(queued(1), "1 reply queued");
        assert_eq!(queued(2), "2 replies queued");
    }
}
