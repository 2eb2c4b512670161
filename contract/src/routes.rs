//! The paths, headers and body limits of the hub's agent surface, one constant each.

/// `POST`: start or resume the session bound to a chat.
pub const INIT: &str = "/api/init";
/// `POST`: bind a chat to an existing session.
pub const SELECT: &str = "/api/select";
/// `POST`: record the agent's message and open a wait.
pub const REGISTER: &str = "/api/wait/register";
/// `POST`: the long poll for the person's reply.
pub const POLL: &str = "/api/wait/poll";
/// `POST`: the reply reached the agent.
pub const ACK: &str = "/api/wait/ack";
/// `POST`: the agent stopped waiting.
pub const CANCEL: &str = "/api/wait/cancel";
/// `POST`: merge one session into another.
pub const MERGE: &str = "/api/merge";
/// `GET`: liveness, open to anyone.
pub const HEALTHZ: &str = "/healthz";
/// The MCP endpoint (Streamable HTTP); a remote entry's URL given with no path gets it.
pub const MCP: &str = "/mcp";

/// `GET` one session with its newest message: the title and workspace a restarted
/// bridge binds with.
pub fn session_head(token: &str) -> String {
    format!("/api/sessions/{token}?limit=1")
}

/// The header that names an MCP session.
pub const MCP_SESSION_ID: &str = "mcp-session-id";
/// A remote entry's longest wait, where a client has no environment for its server
/// (`HOLDLINE_MAX_WAIT_SEC` of a stdio entry).
pub const MAX_WAIT_HEADER: &str = "Holdline-Max-Wait-Sec";

/// The hub's JSON body limit: an agent's message must fit it.
pub const JSON_LIMIT: usize = 1024 * 1024;
/// A person's reply with images may be this large.
pub const REPLY_LIMIT: usize = 10 * 1024 * 1024;
/// The longest a poll may be held at the hub, in milliseconds.
pub const MAX_POLL_MS: u64 = 60_000;
/// A register with its attachments (base64, 4/3 of their bytes) and changes may be this
/// large: ten files at the limit, the diff, and a message at [`JSON_LIMIT`].
pub const REGISTER_LIMIT: usize =
    (crate::attachments::MAX_ATTACHMENTS * crate::attachments::MAX_ATTACHMENT_BYTES as usize) / 3
        * 4
        + crate::changes::MAX_DIFF_BYTES
        + JSON_LIMIT
        + 64 * 1024;
