//! Values checked before use: listen addresses, MongoDB URIs, and how a URI
//! is shown (its credentials masked).

use std::net::SocketAddr;

use super::{Config, ConfigError};
use crate::sync::UriRefused;

impl Config {
    /// Checks what `serve` would find out only later: a `mongo_uri` that is not one
    /// (before the hub says it is listening, so a service does not restart in a loop).
    pub fn validate(&self) -> Result<(), ConfigError> {
        let Some(uri) = &self.mongo_uri else {
            return Ok(());
        };
        crate::sync::check_uri(uri).map_err(|refused| match refused {
            UriRefused::Malformed(reason) => ConfigError::MongoUri {
                uri: mask_uri(uri),
                reason,
            },
            UriRefused::NotBuilt => ConfigError::SyncNotBuilt,
        })
    }
}

pub(super) const LISTEN_FORM: &str = "expected HOST:PORT with an IP address, e.g. 127.0.0.1:13458 (this machine only) or 0.0.0.0:13458 (the LAN)";

/// A listen address that is not one, said with the form expected.
#[derive(Debug, thiserror::Error)]
#[error("'{0}' is not an address to listen on: {LISTEN_FORM}")]
pub struct ListenError(pub String);

/// `--listen` / `HOLDLINE_LISTEN`: an IP address and a port; `localhost` means 127.0.0.1.
pub fn parse_listen(s: &str) -> Result<SocketAddr, ListenError> {
    let s = s.trim();
    if let Ok(addr) = s.parse() {
        return Ok(addr);
    }
    if let Some(port) = s.strip_prefix("localhost:")
        && let Ok(port) = port.parse::<u16>()
    {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    Err(ListenError(s.to_owned()))
}

/// Hides the password (and user) of a `scheme://user:pass@host/...` URI.
pub fn mask_uri(uri: &str) -> String {
    match (uri.find("://"), uri.rfind('@')) {
        (Some(s), Some(at)) if at > s => format!("{}://***@{}", &uri[..s], &uri[at + 1..]),
        _ => uri.to_owned(),
    }
}
