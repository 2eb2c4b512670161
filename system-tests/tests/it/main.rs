//! Tests that need both binaries, one test binary: the real bridge (`hl-mcp`) against a real
//! hub (`hl-hub`), both built by this package from the real mains (see its Cargo.toml), and
//! the hub's `/mcp` and MongoDB sync seen by real clients.

mod harness;
#[path = "../../../hub/tests/it/inproc.rs"]
mod inproc;

mod agent_key;
mod attachments;
mod bridge;
mod changes;
mod client_behaviour;
mod find_hub;
mod hook_permission;
mod hooks;
mod hub_mcp;
mod hub_mcp_sessions;
mod mongo;
mod telegram;
