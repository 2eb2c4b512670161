//! holdline-tools: the four MCP tools an agent calls (`init_conversation`,
//! `select_conversation`, `wait_for_user_input`, `merge_conversation`), their wait loop and
//! exactly-once delivery — one implementation for both transports: the stdio bridge
//! (`holdline-mcp`, calling hubs over HTTP) and the hub's `/mcp` (calling itself in process).
//!
//! Invariant: the tools reach a hub only through [`Hub`] (a [`HubApi`] of the transport's
//! choosing), so both transports apply the same wait rules to the same typed answers.
//!
//! Code map:
//! - [`server`]: the rmcp tool router ([`Tools`]) and binding fingerprint, the wait loop
//!   (`server/wait.rs`), the sentences the agent reads (`server/sentences.rs`), the schemas
//!   (`server/params.rs`).
//! - [`delivery`]: open waits, reply ids never returned twice, acks after the result is
//!   written.
//! - [`limits`]: how long one wait may block in each client, and what each client does
//!   with a result, from the measured facts of the contract's client table.
//! - [`hub`]: the clonable handle the tools call the hub through.
//! - [`client`]: who the MCP client of a call is.
//! - [`workspace_changes`]: the workspace's uncommitted git changes a question may carry.

pub mod client;
pub mod delivery;
pub mod hub;
pub mod limits;
pub mod server;
pub mod workspace_changes;

pub use client::Client;
pub use holdline_contract::HubApi;
pub use hub::Hub;
pub use server::{Protected, Roots, Settings, Tools, Transport, WorkspaceFallback};
