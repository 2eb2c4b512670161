//! The front door: every request's `Host`/`Origin` checks (against DNS
//! rebinding and cross-site requests), its count and its log line, and the
//! rate limit on logging refusals.
//!
//! Invariant: every request, the held long poll's included, is a [`Visit`]
//! (`Api::answer` begins one before routing): begun by the checks, ended by counting
//! and logging (never bodies).

use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::extract::Request;
use axum::http::{HeaderMap, Method, Uri, header};
use axum::response::{IntoResponse, Response};

use crate::api::AppState;
use crate::api::error::ApiError;
use holdline_store::lock::Unpoisoned as _;

/// Refusals (4xx answers) logged per window at most; the rest are counted
/// and reported in one line, so a flood of bad requests cannot fill the log.
const REFUSALS_PER_WINDOW: u32 = 20;
const REFUSAL_WINDOW: Duration = Duration::from_secs(10);

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
        let mut w = self.window.lock_unpoisoned();
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
}
