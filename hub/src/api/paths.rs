//! The person's routes (docs/api.md), one constant each: the router mounts them and the
//! admin CLI's client calls them. The agent routes and `/healthz` are the contract's
//! ([`holdline_contract::routes`]); a path with `{…}` is filled by the function beside it.

pub use holdline_contract::routes::HEALTHZ;

pub const LOGIN: &str = "/api/login";
pub const LOGOUT: &str = "/api/logout";
pub const LOGOUT_EVERYWHERE: &str = "/api/logout/everywhere";
pub const WHOAMI: &str = "/api/whoami";
pub const SESSION_CONFIG: &str = "/api/session/config";
pub const REPLY: &str = "/api/reply";
pub const SESSIONS: &str = "/api/sessions";
pub const SESSION: &str = "/api/sessions/{token}";
pub const SESSION_FIND: &str = "/api/sessions/{token}/find";
pub const SESSION_ATTACHMENT: &str = "/api/sessions/{token}/attachments/{id}";
pub const SESSION_ARCHIVE: &str = "/api/sessions/{token}/archive";
pub const SESSION_RESTORE: &str = "/api/sessions/{token}/restore";
pub const SESSION_MERGE: &str = "/api/sessions/{token}/merge";
pub const SESSION_OWNER: &str = "/api/sessions/{token}/owner";
pub const TEMPLATES: &str = "/api/templates";
pub const EXPORT: &str = "/api/export";
pub const IMPORT: &str = "/api/import";
pub const BACKUP: &str = "/api/backup";
pub const ATTACHMENTS: &str = "/api/attachments";
pub const ATTACHMENTS_FREE: &str = "/api/attachments/free";
pub const KEYS: &str = "/api/keys";
pub const KEY: &str = "/api/keys/{name}";
pub const PUSH_KEY: &str = "/api/push/key";
pub const PUSH_SUBSCRIPTIONS: &str = "/api/push/subscriptions";
pub const PUSH_TEST: &str = "/api/push/test";
pub const EVENTS: &str = "/api/events";
pub const METRICS: &str = "/metrics";
/// Every other `/api/…` path: answered `NOT_FOUND` in the API's error shape.
pub const ANY_API: &str = "/api/{*rest}";

/// [`SESSION`] of `token`.
pub fn session(token: &str) -> String {
    SESSION.replace("{token}", token)
}

/// [`SESSION_ATTACHMENT`]: one attachment's bytes.
pub fn attachment(token: &str, id: &str) -> String {
    SESSION_ATTACHMENT
        .replace("{token}", token)
        .replace("{id}", id)
}

/// [`KEY`] of `name`.
pub fn key(name: &str) -> String {
    KEY.replace("{name}", name)
}

#[cfg(test)]
mod tests {
    #[test]
    fn filled_paths_keep_the_template_around_the_value() {
        assert_eq!(super::session("ct_1"), "/api/sessions/ct_1");
        assert_eq!(
            super::attachment("ct_1", "f2"),
            "/api/sessions/ct_1/attachments/f2"
        );
        assert_eq!(super::key("laptop"), "/api/keys/laptop");
    }
}
