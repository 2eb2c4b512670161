//! Where the hub on this machine listens, decided once for every reader (the bridge's
//! hub list and auto-start, the hub's own command line): the address a running hub wrote
//! to `<home>/hub.addr`, else `HOLDLINE_LISTEN`, else `listen` in `<home>/config.toml`,
//! else the default.
//!
//! Invariant: an address to connect to is never unspecified: a hub listening on every
//! interface (`0.0.0.0`, `::`) is reached on loopback.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};

/// The file a serving hub writes its bound address to, in its home.
pub const ADDR_FILE: &str = "hub.addr";
/// Where a hub listens when nothing says otherwise.
pub const DEFAULT_LISTEN: SocketAddr =
    SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), DEFAULT_PORT);
/// The hub's port when nothing says otherwise.
pub const DEFAULT_PORT: u16 = 13458;

/// `<home>/hub.addr`.
pub fn addr_file(home: &Path) -> PathBuf {
    home.join(ADDR_FILE)
}

/// The address a running hub wrote to its home, when the file holds one.
pub fn running_addr(home: &Path) -> Option<SocketAddr> {
    std::fs::read_to_string(addr_file(home))
        .ok()
        .and_then(|s| s.trim().parse().ok())
}

/// `listen` in the hub's `config.toml`, when the file has a valid one.
pub fn configured_listen(home: &Path) -> Option<SocketAddr> {
    let text = std::fs::read_to_string(home.join("config.toml")).ok()?;
    let doc: toml::Table = text.parse().ok()?;
    doc.get("listen")?.as_str()?.trim().parse().ok()
}

/// The address to connect to for the hub of `home`: running, else `listen_env`
/// (`HOLDLINE_LISTEN`), else configured, else the default — reachable from here.
pub fn local_addr(home: &Path, listen_env: Option<&str>) -> SocketAddr {
    let listen = running_addr(home)
        .or_else(|| listen_env.and_then(|v| v.trim().parse().ok()))
        .or_else(|| configured_listen(home))
        .unwrap_or(DEFAULT_LISTEN);
    reachable(listen)
}

/// [`local_addr`] as the base URL calls go to.
pub fn local_url(home: &Path, listen_env: Option<&str>) -> String {
    format!("http://{}", local_addr(home, listen_env))
}

/// Where to connect to reach a hub bound to `addr`.
pub fn reachable(addr: SocketAddr) -> SocketAddr {
    match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => {
            SocketAddr::new(Ipv4Addr::LOCALHOST.into(), addr.port())
        }
        IpAddr::V6(ip) if ip.is_unspecified() => {
            SocketAddr::new(Ipv6Addr::LOCALHOST.into(), addr.port())
        }
        _ => addr,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn home() -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "holdline-contract-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_running_hub_wins_then_the_environment_then_the_file_then_the_default() {
        let h = home();
        assert_eq!(local_url(&h, None), "http://127.0.0.1:13458");
        std::fs::write(h.join("config.toml"), "listen = \"0.0.0.0:14001\"\n").unwrap();
        assert_eq!(local_url(&h, None), "http://127.0.0.1:14001");
        assert_eq!(local_url(&h, Some("[::]:14002")), "http://[::1]:14002");
        std::fs::write(addr_file(&h), "127.0.0.1:14003\n").unwrap();
        assert_eq!(local_url(&h, Some("[::]:14002")), "http://127.0.0.1:14003");
        std::fs::write(addr_file(&h), "garbage").unwrap();
        assert_eq!(local_url(&h, None), "http://127.0.0.1:14001");
        let _ = std::fs::remove_dir_all(&h);
    }
}
