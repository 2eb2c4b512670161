//! The hub's own transport: the connections it accepts and keeps ([`admission`]) and
//! the HTTP/1.1 it reads and writes itself ([`server`]), written by hand where the
//! libraries' would cost every waiting agent kilobytes. Invariant: every request, on
//! whichever path, reaches `api::Api::answer` with the same limits, and whatever the
//! hand path serves, hyper would have framed and answered the same way.
//!
//! # What it replaces, and why
//!
//! An agent waits for the person by holding a request open for minutes: a bridge's long
//! poll (`POST /api/wait/poll`), or a remote agent's `tools/call` on `/mcp`. With
//! 10,000 agents waiting, whatever one waiting request keeps is multiplied by 10,000.
//!
//! - **hyper's server path, for plain requests** ([`server`]): hyper keeps an 8 KiB read
//!   and an 8 KiB write buffer per connection, ~24 KiB per held long poll in all; 10,000
//!   waiting agents made that 236 MiB. Here a plain HTTP/1.1 request of known small
//!   length is parsed with `httparse` and, while it is answered, its connection keeps
//!   only its socket and a small task: no read buffer, no request head. Everything else
//!   (event streams, chunked or large bodies, `Expect`, upgrades, `HEAD`, HTTP/1.0 and 2,
//!   anything malformed) is handed to hyper with the bytes already read
//!   (`server/hyper_path.rs`), under the same head, body and time limits. The poll
//!   itself goes through the router like every route (front door, method, credential,
//!   body limit: one implementation each, in `api`); only its hold is kept apart from
//!   the router's state (`api::agent::PollToHold`).
//! - **rmcp's session layer for `/mcp`** (`LocalSessionManager`, which spawns per MCP
//!   session a worker and a service loop whose channels allocate 32 message slots each):
//!   replaced by the hub's own `SessionManager` (`mcp/sessions.rs`), rmcp's handshake on a loop that ends once it has answered
//!   (`mcp/handshake.rs`) and one rmcp service loop for every session's requests
//!   (`mcp/mux.rs`, over rmcp's `serve_directly_with_ct`). It stays in `mcp/` because it
//!   is made of MCP sessions and credentials, not of connections; its module docs point
//!   here. It leans on rmcp internals (`serve_directly_with_ct`, the `SessionManager`
//!   trait, `ServerSseMessage`): an rmcp upgrade is checked by the tests below first.
//!
//! # The benchmark that justifies it
//!
//! `holdline-bench hub` (docs/benchmarks.md, where each figure is dated and explained):
//!
//! - `--only load`: hub RSS with 10,000 sessions waiting, each holding its long poll,
//!   **59.2–60.4 MiB** (target 64; a held poll ~1.5 KiB; hyper's path alone made the
//!   held polls 236 MiB, docs/benchmarks-history.md).
//! - `--only remote`: `/mcp` memory per waiting remote agent, 200 waiting,
//!   **29.8–29.9 KiB** (target 32; ~117 KiB with rmcp's session layer), and 1,000 remote
//!   agents waiting at once in 38.2–39.9 MiB.
//!
//! Rerun them (`--only reply,load,remote`, old and new builds alternated) after any
//! change here or an upgrade of hyper or rmcp.
//!
//! # The tests that keep it honest
//!
//! Differential, the hand path against hyper's:
//! - `server::head::tests::this_path_and_hyper_agree_on_framing`: a proptest (2,048
//!   streams of methods, targets, versions, header lines, line ends and bodies) feeds
//!   the same bytes to this path's parser and to hyper as the hub configures it; whatever
//!   this path serves itself, hyper frames the same way (method, target, body).
//! - `hub/tests/it/connections.rs`: `the_long_poll_makes_every_check_the_other_routes_make`
//!   (every bad input, read here and by hyper — a chunked body — gets the same clear
//!   error), `requests_left_to_hyper_are_answered`,
//!   `a_reply_larger_than_the_small_body_limit_is_delivered_whole`, pipelining, pieces
//!   and `Connection: close`.
//! - `hub/tests/it/hardening.rs`: `a_head_past_16_kib_or_48_fields_is_refused_on_both_paths`,
//!   the slow and idle connections and the unauthenticated bodies on both paths.
//! - `api::tests::the_held_poll_refuses_as_every_other_agent_route_does`: the held poll's
//!   refusals (method, credential, `Host`, body size) equal another agent route's,
//!   headers and body included.
//!
//! What a waiting request keeps (each a `size_of` bound below its previous size):
//! `server::tests::a_connections_future_keeps_its_arguments_once`,
//! `api::tests::a_held_http_poll_keeps_little_besides_the_hubs_hold`,
//! `hub::tests::a_held_poll_keeps_its_future_small`.
//!
//! The `/mcp` session layer against what rmcp's would do: its unit tests (`mcp/mux.rs`:
//! a session's messages reach only it; `mcp/sessions.rs`: the idle end, the handshake's
//! close), and real clients over `/mcp` — the rmcp and Python SDK agents of
//! `holdline-bench`, the TypeScript SDK (`tests/sdk/`) and the real-client suite's
//! remote runs (`tests/clients/remote.test.mjs`).

pub mod admission;
pub mod server;
