//! `panel-url`: the login link and a QR code for a phone.

use super::{AdminError, Result, listening};
use holdline_core::config::Config;
use holdline_core::home::Home;

/// Prints the link (with the secret in its fragment) and, unless `no_qr`, its QR code.
pub fn panel_url(config: &Config, no_qr: bool) -> Result<()> {
    let home = Home::new(config.home.clone());
    let secret = home.read_secret().map_err(|e| {
        AdminError::Message(format!(
            "no secret yet in {} ({e}); start the hub once with `holdline-hub serve`",
            home.root.display()
        ))
    })?;
    let addr = listening(config);
    let url = format!("http://{}/#key={secret}", crate::net::advertised(addr));
    say!("{url}");
    if addr.ip().is_unspecified() && crate::net::primary_ip().is_none() {
        // A QR code of 127.0.0.1 would point a phone at itself.
        say!(
            "(the hub listens on every interface, but this machine has no route to a LAN, so its \
             address is unknown: on a phone open http://THIS-MACHINE'S-ADDRESS:{}/#key=… instead)",
            addr.port()
        );
        return Ok(());
    }
    if !no_qr {
        print_qr(&url, addr)?;
    }
    Ok(())
}

/// The link as a QR code, with a word when a phone cannot reach `addr`.
fn print_qr(url: &str, addr: std::net::SocketAddr) -> Result<()> {
    let code = qrcode::QrCode::new(url.as_bytes())
        .map_err(|e| AdminError::Message(format!("cannot draw a QR code: {e}")))?;
    let art = code
        .render::<qrcode::render::unicode::Dense1x2>()
        .quiet_zone(true)
        .build();
    say!("{art}");
    if addr.ip().is_loopback() {
        say!(
            "(the hub listens on loopback only: a phone needs --listen 0.0.0.0:{} or an SSH tunnel)",
            addr.port()
        );
    }
    Ok(())
}
