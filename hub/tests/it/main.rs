//! The hub's integration tests, one binary (one link per change of the hub): the hub in
//! process (`inproc`) or as its real binary (`realhub`), spoken to over real HTTP. Tests that
//! also need the bridge's binary live in `system-tests/`.

mod inproc;
mod mcpclient;
mod notifyfake;
mod realhub;

mod api;
mod attachment_quota;
mod attachments;
mod choices;
mod cli;
mod connections;
mod crash;
mod hardening;
mod in_reply_to;
mod keys;
mod liveness;
mod names;
mod notify;
mod notify_attachments;
mod notify_choices;
mod outbound;
mod owners;
mod panel_login;
mod roundtrip;
mod store_faults;
mod store_recovery;
mod webpush;
