//! Which address this machine shows to the LAN: the primary non-loopback
//! IPv4, used in panel URLs when the hub listens on every interface.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};

/// The address of the interface that routes to other hosts. Connecting a UDP
/// socket only picks a route; no packet is sent.
pub fn primary_ip() -> Option<IpAddr> {
    let socket = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).ok()?;
    socket.connect((Ipv4Addr::new(192, 0, 2, 1), 9)).ok()?;
    let ip = socket.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

/// `addr` as others should dial it: an unspecified listen address becomes
/// the primary LAN address (or loopback when there is none).
pub fn advertised(addr: SocketAddr) -> SocketAddr {
    if addr.ip().is_unspecified() {
        let ip = primary_ip().unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST));
        SocketAddr::new(ip, addr.port())
    } else {
        addr
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specific_addresses_are_kept() {
        let a: SocketAddr = "127.0.0.1:13458".parse().unwrap();
        assert_eq!(advertised(a), a);
        let any: SocketAddr = "0.0.0.0:13458".parse().unwrap();
        assert_eq!(advertised(any).port(), 13458);
        assert!(!advertised(any).ip().is_unspecified());
    }
}
