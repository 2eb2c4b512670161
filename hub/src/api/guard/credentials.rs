//! Credentials: the secret (Bearer), the panel's logins (cookies, see
//! [`holdline_core::logins`]), agent keys (see [`holdline_core::keys`]), who called
//! ([`Caller`]) and the login rate limit.
//!
//! Invariant: every authenticated route is behind one router's auth layer
//! ([`Audience::layer`]); the agent router's takes an agent key, the person
//! router's refuses one (403), and both tell the handler who called.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::{HeaderMap, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::api::AppState;
use crate::api::error::ApiError;
use holdline_core::keys::Keys;
use holdline_core::logins::{self, Logins};
use holdline_store::lock::Unpoisoned as _;
use holdline_store::names::KeyName;

/// The panel's cookie name over plain HTTP. Browsers send a host's cookies
/// to every port of it, so the value is a revocable login id, never derived
/// from the secret (docs/security.md).
pub const COOKIE: &str = "holdline_session";
/// The name a TLS mode will use: `__Host-` makes the browser require
/// `Secure`, `Path=/` and no `Domain`, which [`login_cookie`] already sets
/// but `Secure`. Read already, so switching needs no second login code.
pub const TLS_COOKIE: &str = "__Host-holdline_session";
/// Failed logins allowed per address per window.
const LOGIN_FAILURES: usize = 10;
const LOGIN_WINDOW: Duration = Duration::from_secs(60);
/// Addresses the login limiter remembers at most.
const LIMITER_ADDRESSES: usize = 10_000;
/// The credentials the hub accepts: the secret, the panel logins made with
/// it, and the agent keys.
pub struct Credentials {
    secret: String,
    logins: Logins,
    keys: Keys,
}

impl Credentials {
    pub fn new(secret: String, logins: Logins, keys: Keys) -> Self {
        Credentials {
            secret,
            logins,
            keys,
        }
    }

    pub fn keys(&self) -> &Keys {
        &self.keys
    }

    /// Compares in constant time, so timing does not leak the secret.
    pub fn is_secret(&self, candidate: &str) -> bool {
        constant_time_eq(self.secret.as_bytes(), candidate.as_bytes())
    }

    pub fn logins(&self) -> &Logins {
        &self.logins
    }
}

/// The `Set-Cookie` value for a new panel login `id`.
pub fn login_cookie(id: &str) -> String {
    format!(
        "{COOKIE}={id}; HttpOnly; SameSite=Strict; Path=/; Max-Age={}",
        logins::LIFETIME.as_secs()
    )
}

pub fn logout_cookie() -> String {
    format!("{COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0")
}

/// The panel login ids a request's cookies carry.
pub fn login_ids(headers: &HeaderMap) -> impl Iterator<Item = &str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().split_once('='))
        .filter(|(k, _)| *k == COOKIE || *k == TLS_COOKIE)
        .map(|(_, v)| v)
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Failed logins per client address.
#[derive(Default)]
pub struct LoginLimiter {
    /// A std mutex: a short vector update per login, never across `.await`.
    failures: Mutex<HashMap<IpAddr, Vec<Instant>>>,
}

impl LoginLimiter {
    pub fn is_limited(&self, ip: IpAddr) -> bool {
        let mut map = self.failures.lock_unpoisoned();
        let now = Instant::now();
        let Some(recent) = map.get_mut(&ip) else {
            return false;
        };
        recent.retain(|t| now.duration_since(*t) < LOGIN_WINDOW);
        recent.len() >= LOGIN_FAILURES
    }

    pub fn failed(&self, ip: IpAddr) {
        let mut map = self.failures.lock_unpoisoned();
        let now = Instant::now();
        if map.len() >= LIMITER_ADDRESSES && !map.contains_key(&ip) {
            // Bounded memory under a spray of addresses: forget the addresses
            // whose failures are past the window, else the one quietest longest
            // (never everyone at once).
            map.retain(|_, r| {
                r.last()
                    .is_some_and(|t| now.duration_since(*t) < LOGIN_WINDOW)
            });
            if map.len() >= LIMITER_ADDRESSES
                && let Some(quietest) = map
                    .iter()
                    .min_by_key(|(_, r)| r.last().copied())
                    .map(|(ip, _)| *ip)
            {
                map.remove(&quietest);
            }
        }
        let recent = map.entry(ip).or_default();
        recent.retain(|t| now.duration_since(*t) < LOGIN_WINDOW);
        if recent.len() < LOGIN_FAILURES {
            recent.push(now);
        }
    }

    /// Addresses remembered now.
    pub fn addresses(&self) -> usize {
        self.failures.lock_unpoisoned().len()
    }
}

/// Who made a request: the guard puts it in every authenticated request's
/// extensions, for handlers that answer agents and the person differently.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    /// The secret (Bearer) or a panel login (cookie).
    Person,
    /// An agent key, by name.
    Agent { key: KeyName },
}

impl Caller {
    /// The agent key, `None` for the person.
    pub fn agent_key(&self) -> Option<&KeyName> {
        match self {
            Caller::Person => None,
            Caller::Agent { key } => Some(key),
        }
    }
}

/// Whom a router serves; each router's auth layer is [`Audience::layer`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Audience {
    /// Agents: the secret, a panel login or an agent key.
    Agent,
    /// The person: the secret or a panel login; an agent key is refused (403).
    Person,
}

impl Audience {
    /// The credential check of every authenticated route, as a plain call (any
    /// entry that answers agents beside the router calls it): who called, or why not — 401 for a
    /// missing, wrong or revoked credential, 403 for an agent key on a person's
    /// route.
    pub fn admit(self, credentials: &Credentials, headers: &HeaderMap) -> Result<Caller, ApiError> {
        let caller = authenticate(credentials, headers)?;
        if matches!(caller, Caller::Agent { .. }) && self == Audience::Person {
            return Err(ApiError::forbidden(
                "an agent key can only call the agent routes; use the hub's secret or the panel for this one",
            ));
        }
        Ok(caller)
    }

    /// The router's auth layer: requires a credential this audience takes, and
    /// tells the handler who called (a [`Caller`] extension).
    pub async fn layer(
        self,
        State(app): State<AppState>,
        mut req: Request,
        next: Next,
    ) -> Response {
        match self.admit(&app.credentials, req.headers()) {
            Ok(caller) => {
                req.extensions_mut().insert(caller);
                next.run(req).await
            }
            Err(e) => e.into_response(),
        }
    }
}

/// Who the request's credential names, whatever the route.
pub fn authenticate(credentials: &Credentials, headers: &HeaderMap) -> Result<Caller, ApiError> {
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    if let Some(b) = bearer {
        if holdline_core::keys::looks_like_key(b) {
            return match credentials.keys.verify(b) {
                Some(key) => Ok(Caller::Agent { key }),
                None => Err(ApiError::key_refused()),
            };
        }
        if credentials.is_secret(b) {
            return Ok(Caller::Person);
        }
    }
    if login_ids(headers).any(|id| credentials.logins.is_live(id)) {
        return Ok(Caller::Person);
    }
    Err(ApiError::unauthorized(
        "missing or wrong secret: send Authorization: Bearer <the hub's secret> or log in to the panel",
    ))
}

/// Whether the request carries any credential the hub accepts (connections
/// that show one keep their room, see `transport::admission`).
pub fn is_authorized(credentials: &Credentials, headers: &HeaderMap) -> bool {
    authenticate(credentials, headers).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A secret `0123456789abcdef0123456789abcdef` with its logins and keys in `dir`.
    fn test_secret(dir: &std::path::Path) -> Credentials {
        let store = holdline_store::store::Store::open(dir, 1 << 20).unwrap();
        Credentials::new(
            "0123456789abcdef0123456789abcdef".into(),
            Logins::open(&store).unwrap(),
            Keys::open(&store).unwrap(),
        )
    }

    #[tokio::test]
    async fn cookie_and_bearer_both_authorize() {
        let dir = tempfile::tempdir().unwrap();
        let s = test_secret(dir.path());
        let mut h = HeaderMap::new();
        assert!(!is_authorized(&s, &h));
        h.insert(header::AUTHORIZATION, "Bearer wrong".parse().unwrap());
        assert!(!is_authorized(&s, &h));
        h.insert(
            header::AUTHORIZATION,
            "Bearer 0123456789abcdef0123456789abcdef".parse().unwrap(),
        );
        assert!(is_authorized(&s, &h));
        let mut h = HeaderMap::new();
        let cookie = login_cookie(&s.logins().begin().await.unwrap());
        let pair = cookie.split(';').next().unwrap();
        h.insert(header::COOKIE, format!("other=1; {pair}").parse().unwrap());
        assert!(is_authorized(&s, &h));
        h.insert(header::COOKIE, format!("{COOKIE}=forged").parse().unwrap());
        assert!(!is_authorized(&s, &h));
    }

    #[tokio::test]
    async fn an_agent_key_is_an_agent_and_only_for_the_agent_audience() {
        let dir = tempfile::tempdir().unwrap();
        let s = test_secret(dir.path());
        let (name, key) = s.keys().create("laptop").await.unwrap();
        let mut h = HeaderMap::new();
        h.insert(
            header::AUTHORIZATION,
            format!("Bearer {key}").parse().unwrap(),
        );
        let agent = Audience::Agent.admit(&s, &h).unwrap();
        assert_eq!(agent, Caller::Agent { key: name });
        let refused = Audience::Person.admit(&s, &h).unwrap_err();
        assert_eq!(refused.status, axum::http::StatusCode::FORBIDDEN);
        s.keys().revoke("laptop").await.unwrap();
        let revoked = Audience::Agent.admit(&s, &h).unwrap_err();
        assert_eq!(revoked.status, axum::http::StatusCode::UNAUTHORIZED);
        assert!(revoked.message.contains("wrong or was revoked"));
    }

    #[test]
    fn the_limiter_forgets_one_address_at_a_time() {
        let l = LoginLimiter::default();
        let first: IpAddr = "10.0.0.1".parse().unwrap();
        for _ in 0..LOGIN_FAILURES {
            l.failed(first);
        }
        for i in 0..LIMITER_ADDRESSES as u32 + 50 {
            l.failed(IpAddr::from((0x0b00_0000 + i).to_be_bytes()));
        }
        assert_eq!(l.addresses(), LIMITER_ADDRESSES);
        let last = IpAddr::from((0x0b00_0000 + LIMITER_ADDRESSES as u32 + 49).to_be_bytes());
        assert!(l.failures.lock().unwrap().contains_key(&last));
    }

    #[test]
    fn login_limit_trips_after_ten_failures() {
        let l = LoginLimiter::default();
        let ip: IpAddr = "10.0.0.1".parse().unwrap();
        for _ in 0..LOGIN_FAILURES {
            assert!(!l.is_limited(ip));
            l.failed(ip);
        }
        assert!(l.is_limited(ip));
        assert!(!l.is_limited("10.0.0.2".parse().unwrap()));
    }
}
