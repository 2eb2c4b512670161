//! holdline-contract: the wire between an agent's tools and the hub, written once. Both
//! transports (the stdio bridge over HTTP, the hub's own `/mcp` in process) and the hub's
//! agent routes read every shape, status, reason and error code from here.
//!
//! Invariant: nothing here does I/O but reading the hub's home ([`local_hub`]); a field
//! the bridge and the hub both know is declared in this crate and nowhere else.
//!
//! Code map:
//! - [`wire`]: the agent routes' request bodies and answers, [`Status`], [`WaitEnd`].
//! - [`choices`]: the options a question offers and the person's pick, with their rules.
//! - [`attachments`]: the files an agent shows with its question, and their limits.
//! - [`changes`]: the workspace's uncommitted git changes sent with a question (opt-in).
//! - [`error`]: [`ErrorCode`], the error body every route answers, [`HubError`].
//! - [`routes`]: paths, headers and body limits.
//! - [`hub_api`]: [`HubApi`], the hub as the tools call it, whatever the transport.
//! - [`local_hub`]: where the hub on this machine listens.
//! - [`clients`]: every MCP client holdline knows, one entry each: its names, measured
//!   wait limit and image handling, lifecycle hooks (the installer keeps its files).
//! - [`visible`]: the rule that names and labels a person reads hide no characters.

pub mod attachments;
pub mod changes;
pub mod choices;
pub mod clients;
pub mod error;
pub mod hub_api;
pub mod local_hub;
pub mod routes;
pub mod visible;
pub mod wire;

pub use attachments::{Attachment, AttachmentUpload};
pub use changes::{ChangedFile, FileStatus, WorkspaceChanges};
pub use choices::{Choice, ChoiceOption};
pub use error::{CurrentQuestion, ErrorBody, ErrorCode, ErrorDetail, HubError};
pub use hub_api::{CALL_LIMIT, HubAnswer, HubApi, call_limit};
pub use wire::*;
