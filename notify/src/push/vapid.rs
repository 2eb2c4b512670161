//! The hub's VAPID key pair (RFC 8292): a P-256 key made once and kept in the
//! home (`vapid-key`, 0600, the private scalar base64url), and the
//! `Authorization: vapid t=JWT, k=KEY` header it signs for one push service.
//!
//! Invariant: the private key is read from and written to its file only, and
//! every JWT names the endpoint's origin as `aud` and expires within 24 h.

use std::path::Path;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use p256::ecdsa::signature::Signer as _;
use p256::ecdsa::{Signature, SigningKey};
use p256::elliptic_curve::sec1::ToEncodedPoint as _;

/// The longest a VAPID JWT may live (RFC 8292 §2).
pub const MAX_LIFETIME: Duration = Duration::from_secs(24 * 3600);

/// The hub's VAPID key pair.
pub struct VapidKey {
    secret: p256::SecretKey,
}

impl std::fmt::Debug for VapidKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "VapidKey({})", self.public_key())
    }
}

/// A new random P-256 scalar, base64url.
fn new_secret() -> String {
    loop {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).expect("the system's random source works");
        if p256::SecretKey::from_slice(&bytes).is_ok() {
            return URL_SAFE_NO_PAD.encode(bytes);
        }
    }
}

impl VapidKey {
    /// The key in `path`, made (0600) when missing; a file that holds no
    /// P-256 key is refused, saying what to do.
    pub fn load_or_make(path: &Path) -> std::io::Result<VapidKey> {
        let text = holdline_core::home::read_or_make_private(path, new_secret)?;
        Self::from_base64(text.trim()).ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "{} holds no VAPID key; move it aside and restart to make a new one \
                     (browsers subscribed with the old key must subscribe again)",
                    path.display()
                ),
            )
        })
    }

    /// A key from its private scalar, base64url.
    pub fn from_base64(text: &str) -> Option<VapidKey> {
        let bytes = URL_SAFE_NO_PAD.decode(text).ok()?;
        let secret = p256::SecretKey::from_slice(&bytes).ok()?;
        Some(VapidKey { secret })
    }

    /// The public key as browsers take it (`applicationServerKey`): the
    /// uncompressed point, base64url.
    pub fn public_key(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.secret.public_key().to_encoded_point(false).as_bytes())
    }

    /// `vapid t=JWT, k=KEY` for a push to `endpoint`, valid for `lifetime`
    /// (at most 24 h).
    pub fn authorization(
        &self,
        endpoint: &reqwest::Url,
        subject: &str,
        lifetime: Duration,
    ) -> String {
        let exp = time::OffsetDateTime::now_utc().unix_timestamp()
            + lifetime.min(MAX_LIFETIME).as_secs() as i64;
        let jwt = self.jwt(&origin(endpoint), subject, exp);
        format!("vapid t={jwt}, k={}", self.public_key())
    }

    /// An ES256 JWT with `aud`, `exp` and `sub`.
    pub fn jwt(&self, audience: &str, subject: &str, exp: i64) -> String {
        let header = URL_SAFE_NO_PAD.encode(br#"{"typ":"JWT","alg":"ES256"}"#);
        let claims = serde_json::json!({ "aud": audience, "exp": exp, "sub": subject });
        let claims = URL_SAFE_NO_PAD.encode(claims.to_string());
        let signing_input = format!("{header}.{claims}");
        let signature: Signature = SigningKey::from(&self.secret).sign(signing_input.as_bytes());
        format!(
            "{signing_input}.{}",
            URL_SAFE_NO_PAD.encode(signature.to_bytes())
        )
    }
}

/// `scheme://host[:port]` of a URL (the port only when not the default).
pub fn origin(url: &reqwest::Url) -> String {
    url.origin().ascii_serialization()
}
