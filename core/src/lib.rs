//! holdline-core: the hub's state without its transports — sessions in memory, their
//! bindings, the waits, the agent keys and panel logins, the settings, and the one
//! write path every change goes through; no HTTP, no notifications, no MongoDB.
//!
//! Code map (each module's first line says what it owns):
//! - [`config`]  CLI + env + `config.toml` → `Config` (`[notify]` included)
//! - [`home`]    the home folder, its permissions, the secret
//! - [`binding`] binding keys and the three check levels; no IO
//! - [`waits`]   wake-ups for long polls
//! - [`table`]   every session's summary in memory, whole sessions on demand
//! - [`hub`]     every operation over sessions, store and waits
//! - [`keys`]    agent keys: hashed, scoped to the agent routes, revocable
//! - [`logins`]  the panel's login sessions (revocable cookie ids)
//!
//! Invariant: this crate depends only on `holdline-store` (and the contract); the
//! transports above it call [`Hub`], never the store's writes.

#![forbid(unsafe_code)]

pub mod binding;
pub mod config;
pub mod home;
pub mod hub;
pub mod keys;
pub mod logins;
pub mod table;
pub mod waits;

pub use hub::Hub;
