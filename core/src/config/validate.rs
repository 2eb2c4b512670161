//! Values checked before use: listen addresses, and how a URI is shown (its credentials
//! masked). A `mongo_uri` is checked by `sync::check_config`, which knows MongoDB.

use std::net::SocketAddr;

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
