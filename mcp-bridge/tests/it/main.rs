//! The bridge's integration tests, one binary, none of which needs a hub: its HTTP client
//! against broken and hostile hubs, and the installer run as the real binary. Tests with a
//! real hub live in `system-tests/`.

mod hostile_hub;
mod install;
