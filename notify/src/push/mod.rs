//! Web Push (RFC 8030): the hub's VAPID key pair (`vapid`), the browsers'
//! subscriptions (`subscriptions`), and one push made ready to send —
//! encrypted per RFC 8291 (aes128gcm) and signed per RFC 8292.
//!
//! Invariant: a push goes only to a subscription that passed [`check`] (an
//! https endpoint, http only to loopback; a P-256 point and a 16-byte auth
//! secret), and its plaintext never exceeds [`MAX_PLAINTEXT`], so one
//! aes128gcm record of at most 4096 bytes carries it.

pub mod subscriptions;
pub mod vapid;

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};

pub use subscriptions::Subscriptions;
pub use vapid::VapidKey;

/// The most plaintext one push carries: a 4096-byte aes128gcm body less its
/// header (86 bytes with a P-256 key id), the padding delimiter and the tag.
pub const MAX_PLAINTEXT: usize = 4096 - 86 - 1 - 16;
/// The longest endpoint URL taken.
pub const MAX_ENDPOINT: usize = 2048;
/// How long a push service keeps a push for a device that is away.
pub const TTL: Duration = Duration::from_secs(24 * 3600);

/// A browser's `PushSubscription` as `JSON.stringify` gives it (its
/// `expirationTime` ignored).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subscription {
    pub endpoint: String,
    pub keys: SubscriptionKeys,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubscriptionKeys {
    /// The browser's P-256 public key, base64url (65 bytes uncompressed).
    pub p256dh: String,
    /// The browser's auth secret, base64url (16 bytes).
    pub auth: String,
}

/// Why a subscription is refused (a 400).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("endpoint is not a URL: {0}")]
    NotAUrl(String),
    #[error("endpoint is longer than {MAX_ENDPOINT} characters")]
    LongEndpoint,
    #[error(
        "endpoint must be https:// (http:// is taken only for a loopback address: 127.0.0.0/8, ::1, localhost)"
    )]
    NotHttps,
    #[error("keys.p256dh must be a base64url P-256 public key (65 bytes, uncompressed)")]
    BadP256dh,
    #[error("keys.auth must be a base64url 16-byte secret")]
    BadAuth,
    #[error(
        "this hub already keeps {0} push subscriptions; unsubscribe a browser you no longer use"
    )]
    TooMany(usize),
}

/// A subscription's keys, decoded.
pub struct Checked {
    pub endpoint: reqwest::Url,
    pub public: p256::PublicKey,
    pub auth: [u8; 16],
}

/// Base64url, with or without padding (browsers give it without).
fn b64(s: &str) -> Option<Vec<u8>> {
    URL_SAFE_NO_PAD.decode(s.trim().trim_end_matches('=')).ok()
}

/// Whether `url` may receive pushes: https, or http to a loopback host.
fn endpoint_ok(url: &reqwest::Url) -> bool {
    let Some(host) = url.host_str().filter(|h| !h.is_empty()) else {
        return false;
    };
    match url.scheme() {
        "https" => true,
        "http" => {
            let bare = host.trim_start_matches('[').trim_end_matches(']');
            host.eq_ignore_ascii_case("localhost")
                || bare
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        }
        _ => false,
    }
}

/// A subscription checked and decoded, or why it is refused.
pub fn check(s: &Subscription) -> Result<Checked, Refused> {
    if s.endpoint.len() > MAX_ENDPOINT {
        return Err(Refused::LongEndpoint);
    }
    let endpoint = reqwest::Url::parse(&s.endpoint).map_err(|e| Refused::NotAUrl(e.to_string()))?;
    if !endpoint_ok(&endpoint) {
        return Err(Refused::NotHttps);
    }
    let public = b64(&s.keys.p256dh)
        .filter(|k| k.len() == 65)
        .and_then(|k| p256::PublicKey::from_sec1_bytes(&k).ok())
        .ok_or(Refused::BadP256dh)?;
    let auth = b64(&s.keys.auth)
        .and_then(|a| <[u8; 16]>::try_from(a.as_slice()).ok())
        .ok_or(Refused::BadAuth)?;
    Ok(Checked {
        endpoint,
        public,
        auth,
    })
}

/// One push ready to send: where, its `Authorization`, its encrypted body.
pub struct Prepared {
    pub endpoint: reqwest::Url,
    pub authorization: String,
    pub body: Vec<u8>,
}

/// What Web Push needs at run time: the key and the subscriptions. Cheap to clone.
#[derive(Clone)]
pub struct WebPush {
    pub key: Arc<VapidKey>,
    pub subscriptions: Arc<Subscriptions>,
}

impl WebPush {
    /// Encrypts `plaintext` for `sub` and signs the request (`subject`: the
    /// VAPID `sub` claim).
    pub fn prepare(
        &self,
        sub: &Subscription,
        plaintext: &[u8],
        subject: &str,
    ) -> Result<Prepared, String> {
        let c = check(sub).map_err(|e| e.to_string())?;
        if plaintext.len() > MAX_PLAINTEXT {
            return Err(format!(
                "a push carries at most {MAX_PLAINTEXT} bytes; this one has {}",
                plaintext.len()
            ));
        }
        let auth = web_push_native::Auth::clone_from_slice(&c.auth);
        let body = web_push_native::encrypt(plaintext.to_vec(), &c.public, &auth)
            .map_err(|e| format!("could not encrypt the push: {e}"))?;
        let authorization = self.key.authorization(&c.endpoint, subject, TTL / 2);
        Ok(Prepared {
            endpoint: c.endpoint,
            authorization,
            body,
        })
    }
}

#[cfg(test)]
mod tests;
