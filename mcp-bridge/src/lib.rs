//! holdline-mcp: the stdio MCP server each IDE runs, forwarding four tools to the hub.
//!
//! Code map:
//! - `config`: environment → [`config::Config`] (hub list, secret, host id, wait limits).
//! - `hub_client`: the only HTTP code; ordered failover, retry, auto-start of a local hub.
//! - `delivery`: open waits, reply ids never returned twice, acks after the result is written.
//! - `tools`: the rmcp tool router, the binding fingerprint and the wait loop.
//! - `install`: writes or prints each IDE's MCP entry and rule file.

pub mod config;
pub mod delivery;
pub mod hub_client;
pub mod install;
mod stdio;
pub mod tools;

use std::time::Duration;

use rmcp::{RoleServer, ServiceExt, transport::async_rw::AsyncRwTransport};
use tokio_util::sync::CancellationToken;

/// Serves MCP on stdin/stdout until the client closes stdin, then cancels every open wait.
pub async fn serve_stdio(config: config::Config) -> anyhow::Result<()> {
    let hub = hub_client::HubClient::new(&config);
    let delivery = delivery::Delivery::new(hub.clone());
    let shutdown = CancellationToken::new();
    let bridge = tools::Bridge::new(&config, hub.clone(), delivery.clone(), shutdown.clone());
    let transport = delivery::AckingTransport::new(
        AsyncRwTransport::<RoleServer, _, _>::new_server(stdio::stdin(), stdio::stdout()),
        delivery.clone(),
        shutdown.clone(),
    );
    tracing::info!(hubs = ?config.hubs, host = %config.host_ip, "holdline-mcp serving on stdio");
    let service = bridge.serve(transport).await?;
    let reason = service.waiting().await;
    tracing::info!(?reason, "client closed the connection");
    shutdown.cancel();
    let mut cancels = tokio::task::JoinSet::new();
    for w in delivery.open_waits() {
        let hub = hub.clone();
        cancels.spawn(async move {
            if let Err(e) = hub.cancel(&w.token, &w.wait_id).await {
                tracing::warn!(error = %e, token = %w.token, "could not cancel wait on exit");
            }
        });
    }
    let _ = tokio::time::timeout(Duration::from_secs(5), cancels.join_all()).await;
    Ok(())
}
