//! Who the MCP client of a call is — its name and capabilities — as the tools read them:
//! the request's own `_meta` first (a 2026-07-28 request says it there), then the session's
//! `initialize` where the transport put it in the call's extensions (the hub's `/mcp`
//! serves every session on one loop that has no peer of its own), then the peer's.
//!
//! Invariant: a transport that serves many sessions on one loop puts each call's
//! [`Client`] in its extensions, shared by the session's calls, never copied into `_meta`.

use std::sync::Arc;

use rmcp::{
    model::{ClientCapabilities, Implementation},
    service::{RequestContext, RoleServer},
};

/// What a session's `initialize` said of its client.
#[derive(Clone, Debug)]
pub struct Client {
    pub info: Implementation,
    pub capabilities: ClientCapabilities,
}

/// The client's name and version for the call of `ctx`.
pub fn client_info(ctx: &RequestContext<RoleServer>) -> Option<Implementation> {
    ctx.meta
        .client_info()
        .or_else(|| session_client(ctx).map(|c| c.info.clone()))
        .or_else(|| ctx.client_info())
}

/// The client's capabilities for the call of `ctx`.
pub fn client_capabilities(ctx: &RequestContext<RoleServer>) -> Option<ClientCapabilities> {
    ctx.meta
        .client_capabilities()
        .or_else(|| session_client(ctx).map(|c| c.capabilities.clone()))
        .or_else(|| ctx.client_capabilities())
}

fn session_client(ctx: &RequestContext<RoleServer>) -> Option<&Client> {
    ctx.extensions.get::<Arc<Client>>().map(|c| &**c)
}
