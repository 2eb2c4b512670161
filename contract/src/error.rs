//! How the hub says no: [`ErrorCode`], the `{"error":{"code","message"}}` body every
//! route answers with, and [`HubError`], a failed hub call as the tools see it.
//!
//! Invariant: a caller decides by the code, never by the message's words (messages are
//! for people and may change).

use serde::{Deserialize, Serialize};

/// Every `error.code` the hub answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    /// 400: the body, query or token is malformed.
    BadRequest,
    /// 401: no credential, or a wrong secret.
    Unauthorized,
    /// 401: the agent key sent is unknown or was revoked.
    KeyRefused,
    /// 403: the credential may not do this (an agent key on a person's route, a foreign
    /// Origin or Host).
    Forbidden,
    /// 405.
    MethodNotAllowed,
    /// 413: the body is over the route's limit.
    TooLarge,
    /// 429: too many failed logins.
    RateLimited,
    /// 404: no such route.
    NotFound,
    /// 404: no such session, or one another owner holds (the same answer).
    SessionNotFound,
    /// 403: the session is bound to another chat.
    BindingRejected,
    /// 409: the session is merged or archived.
    SessionClosed,
    /// 409: the reply answers an older question than the agent asks now.
    StaleQuestion,
    /// 409: the reply answers a permission request whose hook no longer waits (the person
    /// answered at the terminal, or the hook stopped); nothing was queued.
    PermissionOver,
    /// 409: an agent key of that name exists.
    KeyExists,
    /// 409: a hand-over would take a chat, plan or thread binding from another open
    /// session of the new owner; nothing changed.
    BindingTaken,
    /// 404: no agent key of that name.
    KeyNotFound,
    /// 503: `/mcp` holds as many sessions as it may.
    TooManySessions,
    /// 507: the question's files would pass the attachment quota of the credential or
    /// of the hub; nothing of the question was stored.
    AttachmentQuota,
    /// 503: the hub's store refuses writes (disk full, I/O error) or is being reopened;
    /// nothing was written, try again later.
    StoreFailing,
    /// 500: the hub could not do it (its store failed).
    Internal,
    /// A code this build does not know (a newer hub's).
    #[serde(other)]
    Other,
}

impl ErrorCode {
    /// The code as it is on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::BadRequest => "BAD_REQUEST",
            ErrorCode::Unauthorized => "UNAUTHORIZED",
            ErrorCode::KeyRefused => "KEY_REFUSED",
            ErrorCode::Forbidden => "FORBIDDEN",
            ErrorCode::MethodNotAllowed => "METHOD_NOT_ALLOWED",
            ErrorCode::TooLarge => "TOO_LARGE",
            ErrorCode::RateLimited => "RATE_LIMITED",
            ErrorCode::NotFound => "NOT_FOUND",
            ErrorCode::SessionNotFound => "SESSION_NOT_FOUND",
            ErrorCode::BindingRejected => "BINDING_REJECTED",
            ErrorCode::SessionClosed => "SESSION_CLOSED",
            ErrorCode::StaleQuestion => "STALE_QUESTION",
            ErrorCode::PermissionOver => "PERMISSION_OVER",
            ErrorCode::KeyExists => "KEY_EXISTS",
            ErrorCode::BindingTaken => "BINDING_TAKEN",
            ErrorCode::KeyNotFound => "KEY_NOT_FOUND",
            ErrorCode::TooManySessions => "TOO_MANY_SESSIONS",
            ErrorCode::AttachmentQuota => "ATTACHMENT_QUOTA",
            ErrorCode::StoreFailing => "STORE_FAILING",
            ErrorCode::Internal => "INTERNAL",
            ErrorCode::Other => "OTHER",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Every error answer: `{"error":{"code","message",…}}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

/// The error itself.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorDetail {
    pub code: ErrorCode,
    #[serde(default)]
    pub message: String,
    /// With `STALE_QUESTION`: the question the agent asks now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_question: Option<CurrentQuestion>,
}

/// The agent's newest message: its `seq` and its first characters.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CurrentQuestion {
    pub seq: u64,
    pub preview: String,
}

/// Why a hub call failed, in the terms the tools explain to the agent.
#[derive(Debug, Clone, thiserror::Error)]
pub enum HubError {
    /// No listed hub answered.
    #[error("no holdline hub answered (tried {})", tried.join(", "))]
    Unreachable {
        /// The hubs tried, in order.
        tried: Vec<String>,
    },
    /// A hub answered with an API error.
    #[error("hub {hub} answered {status} {code}: {message}")]
    Api {
        /// Which hub answered.
        hub: String,
        /// HTTP status.
        status: u16,
        code: ErrorCode,
        message: String,
    },
    /// The hub refused the agent key: it is wrong, or was revoked (also how a wait ends
    /// whose key was revoked).
    #[error("the hub refused this agent key: it is wrong or was revoked")]
    KeyRefused,
    /// There is no secret to send.
    #[error("no secret found in {0}")]
    NoSecret(String),
    /// The hub answered something that is not the documented JSON.
    #[error("hub {hub} answered unexpected data: {detail}")]
    BadAnswer {
        /// Which hub answered.
        hub: String,
        /// What was wrong.
        detail: String,
    },
}

impl HubError {
    /// Whether another attempt (same or next hub) may succeed: not a full attachment
    /// quota, which stays full until the person frees space.
    pub fn is_transient(&self) -> bool {
        match self {
            HubError::Unreachable { .. } => true,
            HubError::Api {
                code: ErrorCode::AttachmentQuota,
                ..
            } => false,
            HubError::Api { status, .. } => *status >= 500,
            _ => false,
        }
    }

    /// An error answer of `hub` with `status` and body `bytes`, read by the one rule
    /// every transport shares: the documented body when it is one, else the status
    /// alone. `sent_key`: the call carried an agent key, so a 401 can only mean that key
    /// (hubs before `KEY_REFUSED` answered `UNAUTHORIZED` for it).
    pub fn from_answer(hub: &str, status: u16, bytes: &[u8], sent_key: bool) -> HubError {
        let (code, message) = match serde_json::from_slice::<ErrorBody>(bytes) {
            Ok(b) => (b.error.code, b.error.message),
            Err(_) => (
                ErrorCode::Other,
                String::from_utf8_lossy(bytes).chars().take(200).collect(),
            ),
        };
        match code {
            ErrorCode::KeyRefused => HubError::KeyRefused,
            ErrorCode::Unauthorized if sent_key => HubError::KeyRefused,
            code => HubError::Api {
                hub: hub.to_owned(),
                status,
                code,
                message,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_body_is_read_by_its_code() {
        let e = HubError::from_answer(
            "h",
            403,
            br#"{"error":{"code":"BINDING_REJECTED","message":"no"}}"#,
            false,
        );
        assert!(matches!(
            e,
            HubError::Api {
                code: ErrorCode::BindingRejected,
                status: 403,
                ..
            }
        ));
        let e = HubError::from_answer("h", 502, b"bad gateway", false);
        assert!(e.is_transient());
        let full = br#"{"error":{"code":"ATTACHMENT_QUOTA","message":"full"}}"#;
        assert!(!HubError::from_answer("h", 507, full, false).is_transient());
        assert!(
            matches!(e, HubError::Api { code: ErrorCode::Other, ref message, .. } if message == "bad gateway")
        );
    }

    #[test]
    fn a_refused_key_is_known_by_its_code_or_by_a_401_to_a_key() {
        let body = br#"{"error":{"code":"KEY_REFUSED","message":"whatever words"}}"#;
        assert!(matches!(
            HubError::from_answer("h", 401, body, false),
            HubError::KeyRefused
        ));
        let older = br#"{"error":{"code":"UNAUTHORIZED","message":"x"}}"#;
        assert!(matches!(
            HubError::from_answer("h", 401, older, true),
            HubError::KeyRefused
        ));
        assert!(matches!(
            HubError::from_answer("h", 401, older, false),
            HubError::Api {
                code: ErrorCode::Unauthorized,
                ..
            }
        ));
    }

    #[test]
    fn every_code_round_trips_by_its_name() {
        for code in [
            ErrorCode::BadRequest,
            ErrorCode::KeyRefused,
            ErrorCode::SessionNotFound,
            ErrorCode::StaleQuestion,
            ErrorCode::PermissionOver,
            ErrorCode::TooManySessions,
        ] {
            let text = serde_json::to_string(&code).unwrap();
            assert_eq!(text, format!("\"{code}\""));
            assert_eq!(serde_json::from_str::<ErrorCode>(&text).unwrap(), code);
        }
        assert_eq!(
            serde_json::from_str::<ErrorCode>("\"SOMETHING_NEW\"").unwrap(),
            ErrorCode::Other
        );
    }
}
