//! Tests that need both binaries, one test binary: the real bridge (`holdline-mcp`) against a
//! real hub (`holdline-hub`), both as cargo builds them (see `harness`), and the hub's `/mcp`
//! and MongoDB sync seen by real clients.

mod harness;
#[path = "../../../hub/tests/it/inproc.rs"]
mod inproc;

mod agent_key;
mod attachments;
mod bridge;
mod changes;
mod client_behaviour;
mod find_hub;
mod hook_harness;
mod hook_permission;
mod hooks;
mod hub_mcp;
mod hub_mcp_sessions;
mod mongo;
mod telegram;
