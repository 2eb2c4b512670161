//! holdline-mcp: the stdio MCP server each IDE runs — the shared tools of
//! `holdline-tools` over stdin/stdout, calling hubs over HTTP — and the installer that puts
//! it (or a remote entry for the hub's `/mcp`) into each client.
//!
//! Code map:
//! - `config`: environment → [`config::Config`] (hub list, secret, host id, wait limits).
//! - `hub_client`: the hubs over HTTP (failover, retry, auto-start of a local hub): the
//!   bridge's `HubApi`.
//! - `line_cap`: a client line over the limit is answered with an error, not dropped.
//! - `stdio`: stdin and stdout as non-blocking streams.
//! - `install`: writes or prints each IDE's MCP entry and rule file.
//! - `hook`: `holdline-mcp hook`, the bridge answering a client's lifecycle hook (`Stop`).

pub mod config;
pub mod hook;
pub mod hub_client;
pub mod install;
mod line_cap;
mod stdio;

use std::time::Duration;

use holdline_tools::{Hub, Tools, delivery};
use rmcp::{RoleServer, ServiceExt, transport::async_rw::AsyncRwTransport};
use tokio_util::sync::CancellationToken;

/// How long the bridge gives the hub to confirm its cancels when it stops.
const CANCEL_ON_EXIT: Duration = Duration::from_secs(3);

/// Serves MCP on stdin/stdout until the client closes stdin or the process is told to stop
/// (SIGINT, SIGTERM, SIGHUP), then cancels every open wait at the hub, so no session is
/// left showing an agent that is gone.
pub async fn serve_stdio(config: config::Config) -> anyhow::Result<()> {
    let hub = Hub::new(std::sync::Arc::new(hub_client::HubClient::new(&config)));
    let delivery = delivery::Delivery::new(hub.clone());
    let shutdown = CancellationToken::new();
    let stop_signal = stop_signals()?;
    let tools = Tools::new(
        &config.tool_settings(),
        hub.clone(),
        delivery.clone(),
        shutdown.clone(),
    )
    .with_protected(config.protected());
    let transport = delivery::AckingTransport::new(
        AsyncRwTransport::<RoleServer, _, _>::new_server(
            line_cap::LineCap::new(stdio::stdin(), line_cap::MAX_LINE),
            stdio::stdout(),
        ),
        delivery.clone(),
        shutdown.clone(),
    );
    tracing::info!(hubs = ?config.hubs, host = %config.host_ip, "holdline-mcp serving on stdio");
    let serving = async {
        let service = tools.serve(transport).await?;
        let reason = service.waiting().await;
        tracing::info!(?reason, "client closed the connection");
        anyhow::Ok(())
    };
    tokio::select! {
        served = serving => served?,
        signal = stop_signal => tracing::info!(signal, "stopping on a signal"),
    }
    shutdown.cancel();
    let mut cancels = tokio::task::JoinSet::new();
    for w in delivery.open_waits() {
        let hub = hub.clone();
        cancels.spawn(async move {
            match hub.cancel(&w.token, &w.wait_id).await {
                Ok(()) => tracing::info!(token = %w.token, "wait cancelled on exit"),
                Err(e) => {
                    tracing::warn!(error = %e, token = %w.token, "could not cancel wait on exit")
                }
            }
        });
    }
    // Calls still running (one whose register is on its way) see the shutdown and cancel
    // their own waits; the process ends when they have, or after the bound.
    let settled = async {
        cancels.join_all().await;
        delivery.calls_ended().await;
    };
    if tokio::time::timeout(CANCEL_ON_EXIT, settled).await.is_err() {
        tracing::warn!("stopping before every wait was cancelled at the hub");
    }
    Ok(())
}

/// Resolves with the signal's name when the process is asked to stop. Clients stop their
/// stdio servers with SIGINT (Claude Code), SIGTERM (opencode, Copilot CLI, Codex) or
/// SIGHUP (a closed terminal); a terminal's Ctrl-C sends SIGINT to the whole group.
#[cfg(unix)]
pub(crate) fn stop_signals() -> std::io::Result<impl std::future::Future<Output = &'static str>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut int = signal(SignalKind::interrupt())?;
    let mut term = signal(SignalKind::terminate())?;
    let mut hup = signal(SignalKind::hangup())?;
    Ok(async move {
        tokio::select! {
            _ = int.recv() => "SIGINT",
            _ = term.recv() => "SIGTERM",
            _ = hup.recv() => "SIGHUP",
        }
    })
}

#[cfg(not(unix))]
pub(crate) fn stop_signals() -> std::io::Result<impl std::future::Future<Output = &'static str>> {
    Ok(async {
        let _ = tokio::signal::ctrl_c().await;
        "Ctrl-C"
    })
}
