//! holdline-store: what the hub keeps — the session model, key names, and the sled
//! records that hold them; the only crate that names sled.
//!
//! Code map (each module's first line says what it owns):
//! - [`session`]     the session model and status machine; no IO
//! - [`names`]       key names (interned) and binding keys; no IO
//! - [`store`]       sessions, replies, files and their journal in sled
//! - [`interchange`] the `sessions.json` export/import format
//! - [`lock`]        a mutex whose poisoning is ignored, and why
//!
//! Invariant: nothing here knows HTTP, waits or the hub's state; `session` and
//! `names` are leaves, and `store` reads and writes only what it is handed.

#![forbid(unsafe_code)]

pub mod interchange;
pub mod lock;
pub mod names;
pub mod session;
pub mod store;

pub use store::{Store, StoreError};
