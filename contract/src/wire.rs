//! The agent routes' request bodies and answers, as both sides read and write them: the
//! bridge serializes what the hub deserializes and the reverse, from the same types.
//!
//! Invariant: every change here is wire-compatible with the previous release (new fields
//! optional with a default, no renames); `tests/compat` runs both directions.

use serde::{Deserialize, Serialize};

use crate::attachments::AttachmentUpload;
use crate::changes::WorkspaceChanges;
use crate::choices::{Choice, ChoiceOption};

/// Milliseconds since the Unix epoch.
pub type Millis = i64;

/// The MCP tool an agent waits in for the person's reply: the name clients call, the
/// hub's `/mcp` layer recognizes (to hold it, or run it as a task) and tests call.
pub const WAIT_TOOL: &str = "wait_for_user_input";

/// Where a session is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Init,
    /// The agent is working after a real reply (or has not waited yet).
    Holding,
    /// An agent is blocked in `wait_for_user_input`.
    Waiting,
    /// A reply is ready for the waiting agent but not yet acknowledged.
    Replied,
    /// The agent is working after an automatic reply.
    Running,
    Merged,
    Archived,
}

impl Status {
    /// Merged and archived sessions take no waits and no replies.
    pub fn is_closed(self) -> bool {
        matches!(self, Status::Merged | Status::Archived)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Init => "init",
            Status::Holding => "holding",
            Status::Waiting => "waiting",
            Status::Replied => "replied",
            Status::Running => "running",
            Status::Merged => "merged",
            Status::Archived => "archived",
        }
    }

    /// The status named `s` (as [`Status::as_str`] writes it).
    pub fn parse(s: &str) -> Option<Status> {
        Some(match s {
            "init" => Status::Init,
            "holding" => Status::Holding,
            "waiting" => Status::Waiting,
            "replied" => Status::Replied,
            "running" => Status::Running,
            "merged" => Status::Merged,
            "archived" => Status::Archived,
            _ => return None,
        })
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a wait ended, as its late polls are told (and as the hub stores it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitEnd {
    /// A newer wait on the same session took its place.
    Superseded,
    /// Its reply was acknowledged.
    Finished,
    /// The agent or the person cancelled it.
    Cancelled,
    /// Its session was merged into another (`mergedInto` names it).
    Merged,
    /// Its session was archived in the panel.
    Archived,
    /// Nobody polled it for the hub's grace period: the agent behind it is gone.
    Expired,
    /// The agent key it was registered with was revoked.
    KeyRevoked,
    /// The person handed the session to another owner.
    HandedOver,
    /// The hub does not know this wait (it restarted, or another hub owned the session).
    /// A reason a newer hub adds reads as this one to an older bridge.
    #[serde(other)]
    Unknown,
}

impl WaitEnd {
    pub fn as_str(self) -> &'static str {
        match self {
            WaitEnd::Superseded => "superseded",
            WaitEnd::Finished => "finished",
            WaitEnd::Cancelled => "cancelled",
            WaitEnd::Merged => "merged",
            WaitEnd::Archived => "archived",
            WaitEnd::Expired => "expired",
            WaitEnd::KeyRevoked => "key_revoked",
            WaitEnd::HandedOver => "handed_over",
            WaitEnd::Unknown => "unknown",
        }
    }
}

/// Where an agent's question came from: the agent asked (`wait_for_user_input`), or a
/// client's lifecycle hook asked for it — the agent stopped its turn, or it asks the
/// person's permission for a tool call. The panel and the messengers label a question with
/// it; a permission question is answered only by the hook that asked it (docs/api.md).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QuestionOrigin {
    /// The agent ended its turn and the client's `Stop` hook asks in its place.
    Stopped,
    /// The client's `PermissionRequest` hook asks whether a tool call may run.
    Permission,
    /// The agent called `wait_for_user_input` (the default: an older bridge sends none).
    /// An origin a newer bridge adds reads as this one.
    #[default]
    #[serde(other)]
    Asked,
}

impl QuestionOrigin {
    pub fn as_str(self) -> &'static str {
        match self {
            QuestionOrigin::Asked => "asked",
            QuestionOrigin::Stopped => "stopped",
            QuestionOrigin::Permission => "permission",
        }
    }

    /// Whether this is the default, which stays off the wire.
    pub fn is_asked(&self) -> bool {
        *self == QuestionOrigin::Asked
    }
}

/// An image of a reply: a type MCP clients show, base64 data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Image {
    pub mime_type: String,
    pub data: String,
}

/// `POST /api/init`: the chat asking for its session.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitRequest {
    pub cursor_title: String,
    pub workspace: String,
    pub host_ip: String,
    /// The name of the agent's machine, as the bridge knows it: the panel says where the
    /// agent lives. Data of the binding, never part of its key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_name: Option<String>,
    /// Start a new session even when the chat has one.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub new_plan: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_label: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
}

/// `POST /api/init` answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitAnswer {
    pub token: String,
    pub status: Status,
    pub created: bool,
    pub binding_key: String,
}

/// `POST /api/select`: bind the chat to the session `token`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SelectRequest {
    pub token: String,
    pub cursor_title: String,
    pub workspace: String,
    pub host_ip: String,
    /// As [`InitRequest::host_name`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_name: Option<String>,
}

/// `POST /api/select` answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SelectAnswer {
    pub token: String,
    pub status: Status,
}

/// `POST /api/wait/register`: the agent's message, and the wait for its answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RegisterRequest {
    pub token: String,
    pub message: String,
    pub cursor_title: String,
    pub workspace: String,
    pub host_ip: String,
    /// The same id (same token, message, last reply) is the same request: a re-call
    /// reattaches to the open wait and stores nothing twice.
    pub request_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_pct: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_step: Option<String>,
    /// Answers the person may pick with one tap ([`crate::choices::check_options`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<ChoiceOption>,
    /// Whether the person may pick several of `options`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub multi_select: bool,
    /// As [`InitRequest::host_name`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_name: Option<String>,
    /// Files shown with the question ([`crate::attachments::check_uploads`]); a re-call
    /// that reattaches to the open wait stores them no second time.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<AttachmentUpload>,
    /// The workspace's uncommitted changes, when the install shares them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes: Option<WorkspaceChanges>,
    /// Where the question came from; absent: the agent asked. An older hub ignores it.
    #[serde(default, skip_serializing_if = "QuestionOrigin::is_asked")]
    pub origin: QuestionOrigin,
}

/// `POST /api/wait/register` answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RegisterAnswer {
    pub wait_id: String,
    /// Always `waiting`.
    pub status: Status,
}

/// `POST /api/wait/poll`: hold until a reply or `timeout_ms`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PollRequest {
    pub token: String,
    pub wait_id: String,
    /// The hub's `poll_timeout_ms` when absent; at most [`crate::routes::MAX_POLL_MS`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

/// A reply as the agent receives it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Reply {
    pub id: String,
    #[serde(default)]
    pub text: String,
    #[serde(default)]
    pub images: Vec<Image>,
    /// Sent by the hub (auto-continue, timed reply), not typed by the person.
    #[serde(default)]
    pub auto: bool,
    #[serde(default)]
    pub at: Millis,
    /// The options of the question the person picked, in option order (never on an
    /// automatic reply).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<Choice>,
}

/// `POST /api/wait/poll` answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "camelCase")]
pub enum PollAnswer {
    /// A reply is pending; ack it once it reached the agent.
    Replied { reply: Reply },
    /// Nothing yet; poll again.
    Renewal,
    /// The wait is closed.
    Gone {
        reason: WaitEnd,
        #[serde(
            rename = "mergedInto",
            default,
            skip_serializing_if = "Option::is_none"
        )]
        merged_into: Option<String>,
    },
}

/// `POST /api/wait/ack`: the reply `reply_id` reached the agent.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AckRequest {
    pub token: String,
    pub wait_id: String,
    pub reply_id: String,
}

/// `POST /api/wait/cancel`: the agent stopped waiting.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelRequest {
    pub token: String,
    pub wait_id: String,
}

/// The answer of a call that has nothing more to say.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Done {
    pub ok: bool,
}

impl Done {
    pub const OK: Done = Done { ok: true };
}

/// `POST /api/merge`: `from_token`'s messages go to `to_token`, which the chat keeps.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MergeRequest {
    pub from_token: String,
    pub to_token: String,
    pub cursor_title: String,
    pub workspace: String,
    pub host_ip: String,
}

/// `POST /api/merge` answer: the session to use from now on.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MergeAnswer {
    pub token: String,
}

/// What every session answer starts with: the fields an agent's tools read back (the
/// chat and folder a restarted bridge binds with). The hub's session answers flatten it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionHead {
    pub token: String,
    pub title: String,
    pub workspace: String,
    pub host_ip: String,
    pub status: Status,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poll_answers_read_as_the_hub_writes_them() {
        let a: PollAnswer = serde_json::from_str(
            r#"{"status":"replied","reply":{"id":"r_1","text":"hi","images":[{"mimeType":"image/png","data":"AA=="}],"auto":false,"at":1}}"#,
        )
        .unwrap();
        assert!(matches!(a, PollAnswer::Replied { ref reply } if reply.images.len() == 1));
        let a: PollAnswer = serde_json::from_str(r#"{"status":"renewal"}"#).unwrap();
        assert!(matches!(a, PollAnswer::Renewal));
        let a: PollAnswer =
            serde_json::from_str(r#"{"status":"gone","reason":"merged","mergedInto":"ct_x"}"#)
                .unwrap();
        assert!(matches!(
            a,
            PollAnswer::Gone { reason: WaitEnd::Merged, ref merged_into } if merged_into.as_deref() == Some("ct_x")
        ));
    }

    #[test]
    fn every_wait_end_round_trips_by_its_name_and_a_new_one_reads_as_unknown() {
        for end in [
            WaitEnd::Superseded,
            WaitEnd::Finished,
            WaitEnd::Cancelled,
            WaitEnd::Merged,
            WaitEnd::Archived,
            WaitEnd::Expired,
            WaitEnd::KeyRevoked,
            WaitEnd::HandedOver,
            WaitEnd::Unknown,
        ] {
            let text = serde_json::to_string(&end).unwrap();
            assert_eq!(text, format!("\"{}\"", end.as_str()));
            assert_eq!(serde_json::from_str::<WaitEnd>(&text).unwrap(), end);
        }
        let later: WaitEnd = serde_json::from_str("\"moved_to_mars\"").unwrap();
        assert_eq!(later, WaitEnd::Unknown);
    }

    #[test]
    fn optional_request_fields_stay_off_the_wire_when_unset() {
        let init = InitRequest {
            cursor_title: "t".into(),
            workspace: "/w".into(),
            host_ip: "h".into(),
            host_name: None,
            new_plan: false,
            plan_label: None,
            thread_id: None,
        };
        assert_eq!(
            serde_json::to_value(&init).unwrap(),
            serde_json::json!({"cursorTitle": "t", "workspace": "/w", "hostIp": "h"})
        );
    }

    #[test]
    fn an_origin_is_absent_when_the_agent_asked_and_a_new_one_reads_as_asked() {
        for origin in [
            QuestionOrigin::Asked,
            QuestionOrigin::Stopped,
            QuestionOrigin::Permission,
        ] {
            let text = serde_json::to_string(&origin).unwrap();
            assert_eq!(text, format!("\"{}\"", origin.as_str()));
            assert_eq!(
                serde_json::from_str::<QuestionOrigin>(&text).unwrap(),
                origin
            );
        }
        let later: QuestionOrigin = serde_json::from_str("\"scheduled\"").unwrap();
        assert_eq!(later, QuestionOrigin::Asked);
        let register = |origin| RegisterRequest {
            token: "t".into(),
            message: "m".into(),
            cursor_title: "c".into(),
            workspace: "/w".into(),
            host_ip: "h".into(),
            request_id: "r".into(),
            completion_pct: None,
            next_step: None,
            options: Vec::new(),
            multi_select: false,
            host_name: None,
            attachments: Vec::new(),
            changes: None,
            origin,
        };
        let asked = serde_json::to_value(register(QuestionOrigin::Asked)).unwrap();
        assert!(asked.get("origin").is_none(), "{asked}");
        let stopped = serde_json::to_value(register(QuestionOrigin::Stopped)).unwrap();
        assert_eq!(stopped["origin"], "stopped");
        let older: RegisterRequest = serde_json::from_value(asked).unwrap();
        assert_eq!(older.origin, QuestionOrigin::Asked);
    }

    #[test]
    fn status_names_are_the_lowercase_words() {
        for s in [
            Status::Init,
            Status::Holding,
            Status::Waiting,
            Status::Replied,
            Status::Running,
            Status::Merged,
            Status::Archived,
        ] {
            assert_eq!(
                serde_json::to_string(&s).unwrap(),
                format!("\"{}\"", s.as_str())
            );
        }
    }
}
