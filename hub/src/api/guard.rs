//! Who may talk to the hub (SPEC §8): `Host`/`Origin` checks against DNS
//! rebinding and cross-site requests, the secret (Bearer) or a live panel
//! login (cookie, see [`crate::logins`]) on every `/api` route, an agent key
//! (see [`crate::keys`]) on the agent routes only, and the login rate limit.
//!
//! Invariant: every authenticated route goes through [`admit`], which tells
//! the person from an agent ([`Caller`]) and refuses a key on a route that
//! [`audience`] does not call an agent route.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::AppState;
use super::error::ApiError;
use crate::keys::Keys;
use crate::logins::{self, Logins};
use crate::names::KeyName;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, Method, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

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
/// Refusals (4xx answers) logged per window at most; the rest are counted
/// and reported in one line, so a flood of bad requests cannot fill the log.
const REFUSALS_PER_WINDOW: u32 = 20;
const REFUSAL_WINDOW: Duration = Duration::from_secs(10);

/// The credentials the hub accepts: the secret, the panel logins made with
/// it, and the agent keys.
pub struct Secret {
    value: String,
    logins: Logins,
    keys: Keys,
}

impl Secret {
    pub fn new(value: String, logins: Logins, keys: Keys) -> Self {
        Secret {
            value,
            logins,
            keys,
        }
    }

    pub fn keys(&self) -> &Keys {
        &self.keys
    }

    /// Compares in constant time, so timing does not leak the secret.
    pub fn matches(&self, candidate: &str) -> bool {
        constant_time_eq(self.value.as_bytes(), candidate.as_bytes())
    }

    /// The secret itself, for the hub's own in-process calls (`crate::mcp`).
    pub(crate) fn value(&self) -> &str {
        &self.value
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
        let mut map = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        let Some(recent) = map.get_mut(&ip) else {
            return false;
        };
        recent.retain(|t| now.duration_since(*t) < LOGIN_WINDOW);
        recent.len() >= LOGIN_FAILURES
    }

    pub fn failed(&self, ip: IpAddr) {
        let mut map = self.failures.lock().unwrap_or_else(|p| p.into_inner());
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
        self.failures
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .len()
    }
}

/// Rate limit on logging refusals: see [`REFUSALS_PER_WINDOW`].
#[derive(Default)]
pub struct RefusalLog {
    /// A std mutex: a few integer updates per refused request.
    window: Mutex<RefusalWindow>,
}

#[derive(Default)]
struct RefusalWindow {
    started: Option<Instant>,
    logged: u32,
    unlogged: u64,
}

impl RefusalLog {
    /// Whether to log this refusal; when a new window starts, first logs how
    /// many the last one left out.
    pub fn may_log(&self) -> bool {
        let mut w = self.window.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        if w.started
            .is_none_or(|s| now.duration_since(s) >= REFUSAL_WINDOW)
        {
            if w.unlogged > 0 {
                tracing::warn!(
                    unlogged = w.unlogged,
                    "more refused requests than the log takes; these were not logged one by one"
                );
            }
            *w = RefusalWindow {
                started: Some(now),
                ..RefusalWindow::default()
            };
        }
        if w.logged < REFUSALS_PER_WINDOW {
            w.logged += 1;
            true
        } else {
            w.unlogged += 1;
            false
        }
    }
}

/// The `Host` check (and the authority of an absolute-form target, which
/// takes the place of `Host`), then the `Origin` check: exactly the hub's
/// own origin (`http://` or `https://` and the Host) or one listed.
fn origin_allowed(app: &AppState, uri: &Uri, headers: &HeaderMap) -> Result<(), ApiError> {
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .ok_or_else(|| ApiError::forbidden("the request has no Host header"))?;
    let config = app.hub.config();
    let allowed = |host: &str| {
        let name = host_name(host);
        name.eq_ignore_ascii_case("localhost")
            || name.parse::<IpAddr>().is_ok()
            || config
                .allowed_hosts
                .iter()
                .any(|h| h.eq_ignore_ascii_case(name))
    };
    let target = uri.authority().map(|a| a.as_str());
    for host in std::iter::once(host).chain(target) {
        if !allowed(host) {
            return Err(ApiError::forbidden(format!(
                "Host {host:?} is not allowed; add it to allowed_hosts in config.toml to use this name"
            )));
        }
    }
    if let Some(target) = target
        && !target.eq_ignore_ascii_case(host)
    {
        return Err(ApiError::forbidden(format!(
            "the request's target names {target:?} but its Host is {host:?}"
        )));
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin
            .to_str()
            .map_err(|_| ApiError::forbidden("unreadable Origin header"))?;
        // Its own origin: a web scheme and exactly the Host (`https://`
        // when a TLS reverse proxy in front passes the Host through).
        let same = ["http://", "https://"].iter().any(|scheme| {
            origin
                .strip_prefix(scheme)
                .is_some_and(|rest| rest.eq_ignore_ascii_case(host))
        });
        let listed = config
            .allowed_origins
            .iter()
            .any(|o| o.trim_end_matches('/').eq_ignore_ascii_case(origin));
        if !same && !listed {
            return Err(ApiError::forbidden(format!(
                "cross-origin request from {origin:?} refused"
            )));
        }
    }
    Ok(())
}

/// The name part of a `Host` value: `[::1]:80` → `::1`, `a:80` → `a`.
fn host_name(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
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

/// Whom a route serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Audience {
    /// Agents: the secret or an agent key.
    Agent,
    /// The person: the secret or a panel login; an agent key is refused (403).
    Person,
}

/// The routes an agent key may call, exactly; every other route is the person's.
const AGENT_ROUTES: &[&str] = &[
    "/mcp",
    "/api/init",
    "/api/select",
    "/api/wait/register",
    "/api/wait/poll",
    "/api/wait/ack",
    "/api/wait/cancel",
    "/api/merge",
];

/// The one table of who may call what: [`AGENT_ROUTES`], and
/// `GET /api/sessions/{token}` (the handler answers a key only for a session
/// it bound).
pub fn audience(method: &Method, path: &str) -> Audience {
    let session_read = *method == Method::GET
        && path
            .strip_prefix("/api/sessions/")
            .is_some_and(|t| !t.is_empty() && !t.contains('/'));
    if session_read || AGENT_ROUTES.contains(&path) {
        Audience::Agent
    } else {
        Audience::Person
    }
}

/// Requires a credential the route takes, and tells the handler who called
/// (a [`Caller`] extension).
pub async fn require_caller(State(app): State<AppState>, mut req: Request, next: Next) -> Response {
    match admit(&app.secret, req.method(), req.uri().path(), req.headers()) {
        Ok(caller) => {
            req.extensions_mut().insert(caller);
            next.run(req).await
        }
        Err(e) => e.into_response(),
    }
}

/// The credential check of every authenticated route, as a plain call (the
/// long poll is answered beside the router and calls it itself; so can any
/// other entry that answers agents): who called, or why not — 401 for a
/// missing, wrong or revoked credential, 403 for an agent key on a person's
/// route.
pub fn admit(
    secret: &Secret,
    method: &Method,
    path: &str,
    headers: &HeaderMap,
) -> Result<Caller, ApiError> {
    let caller = authenticate(secret, headers)?;
    if matches!(caller, Caller::Agent { .. }) && audience(method, path) == Audience::Person {
        return Err(ApiError::forbidden(
            "an agent key can only call the agent routes; use the hub's secret or the panel for this one",
        ));
    }
    Ok(caller)
}

/// Who the request's credential names, whatever the route.
pub fn authenticate(secret: &Secret, headers: &HeaderMap) -> Result<Caller, ApiError> {
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    if let Some(b) = bearer {
        if crate::keys::looks_like_key(b) {
            return match secret.keys.verify(b) {
                Some(key) => Ok(Caller::Agent { key }),
                None => Err(ApiError::unauthorized(
                    "the hub refused this agent key: it is wrong or was revoked (`holdline-hub key list` shows the live keys)",
                )),
            };
        }
        if secret.matches(b) {
            return Ok(Caller::Person);
        }
    }
    if login_ids(headers).any(|id| secret.logins.is_live(id)) {
        return Ok(Caller::Person);
    }
    Err(ApiError::unauthorized(
        "missing or wrong secret: send Authorization: Bearer <the hub's secret> or log in to the panel",
    ))
}

/// Whether the request carries any credential the hub accepts (connections
/// that show one keep their room, see `admission`).
pub fn is_authorized(secret: &Secret, headers: &HeaderMap) -> bool {
    authenticate(secret, headers).is_ok()
}

/// The client's address, for the login limit.
pub fn client_ip(conn: Option<&ConnectInfo<SocketAddr>>) -> IpAddr {
    conn.map(|c| c.0.ip())
        .unwrap_or(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED))
}

/// Every request's front door, in one layer (each layer costs every request,
/// held long polls included, its own boxed state): see [`Visit`].
pub async fn front_door(State(app): State<AppState>, req: Request, next: Next) -> Response {
    match Visit::begin(&app, &req) {
        Ok(visit) => {
            let res = next.run(req).await;
            visit.end(&app, res)
        }
        Err(refused) => *refused,
    }
}

/// One request seen at the front door: begun by checking `Host` and `Origin`,
/// ended by counting it and logging its metadata (never bodies).
pub struct Visit {
    method: Method,
    path: String,
    started: Instant,
}

impl Visit {
    /// Starts the visit, or answers the refusal (already logged and counted).
    pub fn begin(app: &AppState, req: &Request) -> Result<Visit, Box<Response>> {
        let visit = Visit {
            method: req.method().clone(),
            path: req.uri().path().to_owned(),
            started: Instant::now(),
        };
        match origin_allowed(app, req.uri(), req.headers()) {
            Ok(()) => Ok(visit),
            Err(e) => {
                if app.refusals.may_log() {
                    tracing::info!(path = visit.path, "refused: {}", e.message);
                }
                Err(Box::new(visit.end(app, e.into_response())))
            }
        }
    }

    /// Counts and logs the answer, and passes it on.
    pub fn end(self, app: &AppState, res: Response) -> Response {
        app.hub
            .counters()
            .http_requests
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let Visit {
            method,
            path,
            started,
        } = self;
        let status = res.status().as_u16();
        let ms = started.elapsed().as_millis() as u64;
        if status >= 500 {
            tracing::warn!(%method, path, status, ms, "request");
        } else if status >= 400 {
            if app.refusals.may_log() {
                tracing::info!(%method, path, status, ms, "request");
            }
        } else {
            tracing::debug!(%method, path, status, ms, "request");
        }
        res
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_are_split_from_ports() {
        assert_eq!(host_name("localhost:13458"), "localhost");
        assert_eq!(host_name("[::1]:13458"), "::1");
        assert_eq!(host_name("192.168.1.2"), "192.168.1.2");
        assert_eq!(host_name("evil.example:80"), "evil.example");
    }

    /// A secret `0123456789abcdef0123456789abcdef` with its logins and keys in `dir`.
    fn test_secret(dir: &std::path::Path) -> Secret {
        let store = crate::store::Store::open(dir, 1 << 20).unwrap();
        Secret::new(
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

    #[test]
    fn agent_routes_are_exactly_the_table_and_one_session_read() {
        for path in AGENT_ROUTES {
            assert_eq!(audience(&Method::POST, path), Audience::Agent, "{path}");
        }
        let t = "/api/sessions/ct_0123456789abcdef0123456789abcdef";
        assert_eq!(audience(&Method::GET, t), Audience::Agent);
        for (method, path) in [
            (Method::POST, t.to_owned()),
            (Method::GET, format!("{t}/find")),
            (Method::POST, format!("{t}/archive")),
            (Method::GET, "/api/sessions".to_owned()),
            (Method::GET, "/api/sessions/".to_owned()),
            (Method::POST, "/api/reply".to_owned()),
            (Method::GET, "/api/keys".to_owned()),
            (Method::GET, "/api/events".to_owned()),
            (Method::GET, "/metrics".to_owned()),
            (Method::POST, "/api/init/".to_owned()),
        ] {
            assert_eq!(
                audience(&method, &path),
                Audience::Person,
                "{method} {path}"
            );
        }
    }

    #[tokio::test]
    async fn an_agent_key_is_an_agent_and_only_on_agent_routes() {
        let dir = tempfile::tempdir().unwrap();
        let s = test_secret(dir.path());
        let (name, key) = s.keys().create("laptop").await.unwrap();
        let mut h = HeaderMap::new();
        h.insert(
            header::AUTHORIZATION,
            format!("Bearer {key}").parse().unwrap(),
        );
        let agent = admit(&s, &Method::POST, "/api/init", &h).unwrap();
        assert_eq!(agent, Caller::Agent { key: name });
        let refused = admit(&s, &Method::POST, "/api/reply", &h).unwrap_err();
        assert_eq!(refused.status, axum::http::StatusCode::FORBIDDEN);
        s.keys().revoke("laptop").await.unwrap();
        let revoked = admit(&s, &Method::POST, "/api/init", &h).unwrap_err();
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
