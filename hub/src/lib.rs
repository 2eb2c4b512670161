//! holdline-hub: the LAN service that owns every session, its binding to the
//! IDE chat that owns it, the long-poll waits and the queued replies.
//!
//! The top floor: the crates below own the state ([`holdline_core`] over
//! [`holdline_store`]), the notifications ([`holdline_notify`]) and MongoDB sync
//! ([`holdline_sync`]); this crate serves them over the network and the command line.
//!
//! Code map (each module's first line says what it owns):
//! - [`api`]         the only code that knows HTTP routes and JSON; agent and person
//!   routers, each agent route one function both HTTP and `/mcp` run
//! - [`mcp`]         `/mcp`: the shared tools (`holdline-tools`) over Streamable
//!   HTTP, calling the agent routes' functions in process
//! - [`transport`]   the hub's own HTTP/1.1 path and connection caps, written for
//!   the memory of waiting agents (its doc: what it replaces, why, its checks)
//! - [`panel`]       the panel's files, compiled in
//! - [`admin`]       the admin subcommands (`status`, `reply`, `export`, …)
//! - [`net`], [`process`], [`log_file`], [`crash_point`]: the address the hub
//!   advertises, its process, its log file, and the crash points tests pull
//!
//! The module graph has no cycles (the `module_graph` test keeps it so, in each
//! crate): `transport` never depends on `api`, `api` never on `mcp` — `/mcp` is
//! composed in [`run`].
//!
//! Entry point: [`run`] takes a bound listener and a shutdown future, so
//! tests bind `127.0.0.1:0` and never sleep to wait for start.

#![forbid(unsafe_code)]

pub mod admin;
pub mod api;
pub mod crash_point;
pub mod log_file;
pub mod mcp;
#[cfg(test)]
mod module_graph;
pub mod net;
pub mod panel;
pub mod process;
pub mod transport;

use std::future::Future;
use std::io::IsTerminal;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use holdline_core::config::Config;
use holdline_core::home::{self, Home};
use holdline_core::{hub, keys, logins};
use holdline_notify::{self as notify, push};
use holdline_store::store;
use holdline_sync as sync;

/// How long a stopping hub waits for sled to close its files.
const CLOSE_LIMIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Why the hub could not start or stopped badly; each says what to do.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("cannot prepare the holdline home {path}: {source}")]
    Home {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Store(#[from] store::StoreError),
    #[error("{0}")]
    Sync(#[from] sync::SyncError),
    #[error("the HTTP server failed: {0}")]
    Serve(std::io::Error),
    #[error("could not make the store durable: {0}")]
    Flush(hub::HubError),
}

/// Runs the hub on `listener` until `shutdown` completes, then finishes the
/// open requests (long polls answer `renewal`, event streams end) and flushes
/// the store.
pub async fn run(
    listener: tokio::net::TcpListener,
    config: Config,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<RunEnd, RunError> {
    let home = Home::new(config.home.clone());
    let home_err = |source| RunError::Home {
        path: home.root.clone(),
        source,
    };
    home.prepare().map_err(home_err)?;
    let secret = home.read_secret().map_err(home_err)?;
    let addr = listener.local_addr().map_err(RunError::Serve)?;
    let name = net::advertised(addr).to_string();

    let stop = CancellationToken::new();
    let mongo_uri = config.mongo_uri.clone();
    let hub = hub::Hub::open(config, name.clone(), stop.clone())?;
    start_background_tasks(&hub);
    let web_push = push::WebPush {
        key: Arc::new(push::VapidKey::load_or_make(&home.vapid_key_file()).map_err(home_err)?),
        subscriptions: Arc::new(push::Subscriptions::open(hub.store())?),
    };
    let notify = notify::Notifier::start(&hub, Some(&web_push));
    // `hub.addr` before the line scripts wait for: an admin command run on seeing it
    // must find this hub, not fall back to opening the store this hub holds.
    home::write_private(&home.addr_file(), addr.to_string().as_bytes()).map_err(home_err)?;
    let (sessions, waiting) = hub.counts();
    tracing::info!(%addr, sessions, waiting, "holdline-hub listening");
    eprintln!("holdline-hub listening on http://{addr}");
    announce(&name, &secret);

    let sync = match &mongo_uri {
        Some(uri) => Some(sync::Sync::start(hub.clone(), uri).await?),
        None => None,
    };
    let keys = keys::Keys::open(hub.store())?;
    close_waits_of_revoked_keys(&hub, &keys).await?;
    let mcp_sessions = Arc::new(mcp::Sessions::for_hub(&hub.config().mcp));
    let state = api::AppState {
        sync,
        hub: hub.clone(),
        credentials: Arc::new(api::guard::Credentials::new(
            secret,
            logins::Logins::open(hub.store())?,
            keys,
        )),
        logins: Arc::default(),
        refusals: Arc::default(),
        notify,
        push: web_push,
        key_holder: mcp_sessions.clone(),
    };
    // `/mcp` is composed here: its tools call the API's agent routes in process, and the
    // API serves it without knowing what it is.
    let mcp = mcp::McpEndpoint::new(state.clone(), mcp_sessions, stop.clone()).await;
    let signal = stop.clone();
    tokio::spawn(async move {
        shutdown.await;
        signal.cancel();
    });
    let api = api::Api::new(state, Some(mcp.clone().route()));
    transport::server::serve(listener, api, stop.clone()).await;
    stop.cancel();
    mcp.stopped().await;
    let end = close(&hub).await;
    let _ = std::fs::remove_file(home.addr_file());
    tracing::info!("holdline-hub stopped");
    end
}

/// The hub's own tasks: waits resumed and watched, the store looked after, polls
/// answered at shutdown, files released by the retention rule.
fn start_background_tasks(hub: &hub::Hub) {
    hub.resume_waits();
    tokio::spawn(hub.clone().watch_waits());
    tokio::spawn(hub.clone().look_after_store());
    tokio::spawn(hub.clone().answer_polls_at_shutdown());
    tokio::spawn(hub.clone().release_files_by_rule());
}

/// A key revoked while the hub was stopped (`key revoke` opens the store then) still
/// had open waits on disk: they are closed before anyone polls.
async fn close_waits_of_revoked_keys(hub: &hub::Hub, keys: &keys::Keys) -> Result<(), RunError> {
    hub.close_waits_of_keys(|k| !keys.is_live(k))
        .flushed(hub)
        .await
        .map(|_| ())
        .map_err(|e| match e {
            hub::HubError::Store(s) => RunError::Store(s),
            other => RunError::Flush(other),
        })
}

/// The last steps of [`run`]: the last flush, then the store closed within
/// [`CLOSE_LIMIT`] (sled's drop may wait forever on a failed disk; what was
/// flushed is on disk whatever it does), and how the hub ended.
async fn close(hub: &hub::Hub) -> Result<RunEnd, RunError> {
    let flushed = hub.flush().await;
    let store = hub.store().clone();
    let closed = tokio::task::spawn_blocking(move || store.close(CLOSE_LIMIT))
        .await
        .unwrap_or(false);
    if !closed {
        tracing::warn!(
            "the store did not close within {} s; exiting anyway",
            CLOSE_LIMIT.as_secs()
        );
    }
    if hub.needs_new_process() {
        // The last flush failed with the store: everything answered as
        // written was flushed before it was answered.
        return Ok(RunEnd::StartAgain);
    }
    flushed.map(|()| RunEnd::Stopped).map_err(|e| match e {
        hub::HubError::Store(s) => RunError::Store(s),
        other => RunError::Flush(other),
    })
}

/// How [`run`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunEnd {
    /// Its shutdown future completed (SIGTERM, SIGINT, a test's stop).
    Stopped,
    /// The store failed and, once the disk had room again, sled would not
    /// let go of the failed database: the caller starts the hub again in a
    /// new process image (`holdline-hub serve` execs itself), which opens the
    /// store with everything answered as written.
    StartAgain,
}

/// Prints where the panel is. The key goes to a terminal only, never into a
/// service's captured output.
fn announce(name: &str, secret: &str) {
    if std::io::stdout().is_terminal() {
        println!("Panel: http://{name}/#key={secret}");
    } else {
        println!(
            "Panel: http://{name}/  (run `{} panel-url` for the login link)",
            own_command()
        );
    }
}

/// This binary as a person would type it: its own path (a checkout's
/// `target/release/holdline-hub` is not on PATH), quoted when it needs it.
fn own_command() -> String {
    let path = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "holdline-hub".into());
    if path.contains(|c: char| c.is_whitespace() || "'\"$&;|<>()`*?".contains(c)) {
        format!("'{}'", path.replace('\'', r"'\''"))
    } else {
        path
    }
}
