//! The JSON shapes of the HTTP API (docs/api.md): request bodies in, answers out.
//!
//! Invariant: each shape is written once, here (the agent routes' in the contract crate),
//! and both sides read it: the handlers and the admin CLI's client (`admin::client`).

use serde::{Deserialize, Serialize};

use holdline_core::config::Template;
use holdline_core::hub::SessionInfo;
use holdline_core::keys::Keys;
use holdline_store::session::{Image, Message, Millis, Review};

/// The agent routes' bodies and answers are the contract's: written once for the bridge
/// and the hub.
pub use holdline_contract::{
    AckRequest, CancelRequest, Done, InitAnswer, InitRequest, MergeAnswer, MergeRequest,
    PollAnswer, PollRequest, RegisterAnswer, RegisterRequest, Reply, SelectAnswer, SelectRequest,
    SessionHead,
};

/// `POST /api/sessions/{token}/owner`: the agent key to hand the session to,
/// `null` for the secret.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OwnerBody {
    pub key: Option<String>,
}

/// The panel's merge: the source is in the path.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PersonMergeBody {
    pub to_token: String,
}

/// `POST /api/session/config`: the session and the settings to change (a
/// `continueMode` from older panels is accepted and ignored).
#[derive(Debug, Deserialize)]
pub struct ConfigBody {
    pub token: String,
    #[serde(flatten)]
    pub settings: holdline_core::hub::SessionSettings,
}

/// `POST /api/reply`: the person's reply, from the panel or `holdline-hub reply`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplyBody {
    pub token: String,
    /// May be empty when `choices` picks something.
    #[serde(default)]
    pub text: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<Image>,
    /// Indexes (from 0) into the options of the agent's newest question.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<u32>,
    /// The `seq` of the agent's message this answers (the question on screen).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_reply_to: Option<u64>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplyAnswer {
    pub reply_id: String,
    pub queued: bool,
}

/// `GET /api/sessions`'s query.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct ListQuery {
    pub status: Option<String>,
    pub q: Option<String>,
    pub limit: Option<usize>,
    pub cursor: Option<String>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionList {
    pub sessions: Vec<SessionDto>,
    pub next_cursor: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct FindQuery {
    pub q: String,
    pub limit: Option<usize>,
}

/// A message that matched a search: where it is, and the words around the match.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FindHit {
    pub seq: u64,
    pub role: holdline_store::session::Role,
    pub at: Millis,
    pub snippet: String,
}

#[derive(Debug, Serialize)]
pub struct FindAnswer {
    pub hits: Vec<FindHit>,
}

/// `GET /api/sessions/{token}`'s query: the page of messages.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct HistoryQuery {
    pub before: Option<u64>,
    pub limit: Option<usize>,
}

#[derive(Debug, Deserialize)]
pub struct LoginBody {
    pub key: String,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct Templates {
    pub templates: Vec<Template>,
}

/// A session's metadata as the API shows it (the session's fields plus what lists need).
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionDto {
    /// Token, title, workspace, host and status: what an agent's tools read back.
    #[serde(flatten)]
    pub head: SessionHead,
    pub display_title: String,
    pub binding_key: String,
    pub hub: String,
    pub created_at: Millis,
    pub last_active_at: Millis,
    pub msg_count: u64,
    pub auto_streak: u32,
    pub binding_check_count: u64,
    pub continue_prompt: String,
    pub session_auto_continue: bool,
    pub timed_reply_enabled: bool,
    pub timed_reply_interval_ms: u64,
    pub max_auto_streak: u32,
    pub plan_name: Option<String>,
    pub thread_id: Option<String>,
    pub merged_into: Option<String>,
    pub last_review: Review,
    pub waiting_since: Option<Millis>,
    pub queued_replies: usize,
    pub preview: String,
    /// A copy of a session another hub owns (seen through MongoDB); read-only here.
    pub mirror: bool,
    /// The credential the session belongs to.
    pub owner: OwnerDto,
    /// The machine name the agent's bridge reported ("" when it did not say).
    pub host_name: String,
    /// Where the agent lives, in one word for cards and headers: the owning agent
    /// key's name, else the reported machine name, else the address the hub saw.
    pub machine: String,
    /// The session's own quick replies (left out when it has none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub quick_replies: Vec<Template>,
}

/// Whose a session is: `{"secret":true}` (the person's own agents) or
/// `{"key":NAME,"revoked":BOOL}` (an agent key; a revoked key's agent cannot
/// reach the session until it reconnects with a key of that name or the
/// person hands the session over).
#[derive(Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(untagged)]
pub enum OwnerDto {
    Secret { secret: bool },
    Key { key: String, revoked: bool },
}

impl SessionDto {
    /// The session as the API shows it; `keys` tells whether its owner key still lives.
    pub fn new(info: SessionInfo, keys: &Keys) -> Self {
        let owner = match &info.session.owner {
            None => OwnerDto::Secret { secret: true },
            Some(key) => OwnerDto::Key {
                key: key.to_string(),
                revoked: !keys.is_live(key),
            },
        };
        let s = info.session;
        let machine = match (&s.owner, s.host_name.is_empty()) {
            (Some(key), _) => key.to_string(),
            (None, false) => s.host_name.clone(),
            (None, true) => s.host_ip.clone(),
        };
        SessionDto {
            owner,
            machine,
            host_name: s.host_name,
            quick_replies: s.quick_replies,
            head: SessionHead {
                token: s.token.to_string(),
                status: s.status,
                title: s.title,
                workspace: s.workspace,
                host_ip: s.host_ip,
            },
            waiting_since: s.wait.as_ref().map(|w| w.since),
            display_title: s.display_title,
            binding_key: s.binding_key,
            hub: s.hub,
            created_at: s.created_at,
            last_active_at: s.last_active_at,
            msg_count: s.msg_count,
            auto_streak: s.auto_streak,
            binding_check_count: s.binding_check_count,
            continue_prompt: s.keep_alive.continue_prompt,
            session_auto_continue: s.keep_alive.session_auto_continue,
            timed_reply_enabled: s.keep_alive.timed_reply_enabled,
            timed_reply_interval_ms: s.keep_alive.timed_reply_interval_ms,
            max_auto_streak: s.keep_alive.max_auto_streak,
            plan_name: s.plan_name,
            thread_id: s.thread_id,
            merged_into: s.merged_into.map(|t| t.to_string()),
            last_review: s.last_review,
            queued_replies: info.queued_replies,
            preview: s.preview,
            mirror: s.mirror,
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageDto {
    pub seq: u64,
    #[serde(flatten)]
    pub message: Message,
    /// The files an agent's message carries, each with the person's route to its bytes
    /// (the stored ids stay inside the hub).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<holdline_contract::attachments::Attachment>,
}

impl MessageDto {
    /// Message `seq` of session `token` as the person's API shows it.
    pub fn new(token: &str, seq: u64, mut message: Message) -> Self {
        let attachments = std::mem::take(&mut message.attachments)
            .into_iter()
            .map(|a| holdline_contract::attachments::Attachment {
                url: attachment_url(token, &a.id),
                name: a.name,
                mime_type: a.mime_type,
                size: a.size,
                removed: a.released,
            })
            .collect();
        MessageDto {
            seq,
            message,
            attachments,
        }
    }
}

/// The person's route that serves one attachment's bytes.
pub fn attachment_url(token: &str, id: &str) -> String {
    super::paths::attachment(token, id)
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionDetail {
    #[serde(flatten)]
    pub session: SessionDto,
    pub messages: Vec<MessageDto>,
    pub next_before: Option<u64>,
}

/// `/healthz` without the person's credential: only that the hub is up.
#[derive(Debug, Serialize)]
pub struct Up {
    pub ok: bool,
    pub version: &'static str,
}

/// `/healthz` with the secret or a panel login.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Health {
    pub ok: bool,
    pub version: std::borrow::Cow<'static, str>,
    pub sessions: usize,
    pub waiting: usize,
    pub uptime_ms: u64,
    /// MongoDB sync, `null` while it is off.
    pub mongo: Option<holdline_sync::SyncState>,
    pub store: StoreHealth,
    /// Notification channels, when any is configured (for the panel: the admin CLI does
    /// not read them back).
    #[serde(skip_serializing_if = "Option::is_none", skip_deserializing)]
    pub notify: Option<Vec<holdline_notify::ChannelState>>,
    /// The hub's process and what started it (`holdline-hub status` and `stop`
    /// read them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub process: Option<crate::process::HubProcess>,
}

/// Whether the store takes writes: `state` is `ok` or `failing` (since a
/// write failed, until the hub reopened the store).
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoreHealth {
    pub state: StoreCondition,
    /// The failure's text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since: Option<i64>,
}

/// [`StoreHealth`]'s `state`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StoreCondition {
    Ok,
    Failing,
}

/// What `POST /api/backup` made.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BackupAnswer {
    pub path: String,
    pub sessions: u64,
    pub replies: u64,
}

/// `GET /api/whoami`: the person's credential is good; the hub's name and the limits
/// the panel checks before sending (read from here, never copied into the panel).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WhoAmI {
    pub ok: bool,
    pub version: &'static str,
    pub hub: String,
    /// The largest `POST /api/reply` body, in bytes.
    pub reply_limit: usize,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImportAnswer {
    pub imported: usize,
    pub skipped: usize,
}

/// `POST /api/keys`: a new agent key's name.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KeyCreateBody {
    pub name: String,
}

/// A new agent key: its text, shown this once.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyCreated {
    pub name: String,
    pub key: String,
}

/// An agent key as lists show it (never its text or hash).
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyDto {
    pub name: String,
    pub created_at: Millis,
    pub last_used_at: Option<Millis>,
}

impl From<holdline_core::keys::KeyInfo> for KeyDto {
    fn from(k: holdline_core::keys::KeyInfo) -> Self {
        KeyDto {
            name: k.name.to_string(),
            created_at: k.created_ms,
            last_used_at: k.last_used_ms,
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
pub struct KeyList {
    pub keys: Vec<KeyDto>,
}

/// `DELETE /api/keys/{name}`: the key is refused from now on; its open waits closed.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyRevoked {
    pub ok: bool,
    pub closed_waits: usize,
}

/// What one owner's (or every owner's) attachment files take.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct FileUsageDto {
    /// The agent key's name; absent for the hub secret (and for the total).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// Distinct files stored.
    pub files: u64,
    pub bytes: u64,
    /// The quota these bytes count against.
    pub quota: u64,
}

/// `GET /api/attachments`: the space the questions' files take, per owner and in all.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AttachmentsAnswer {
    pub owners: Vec<FileUsageDto>,
    pub total: FileUsageDto,
    /// How long a file is kept once its question was answered or superseded.
    pub keep_sec: u64,
}

impl AttachmentsAnswer {
    pub fn of(usage: holdline_core::hub::FileUsage) -> Self {
        let row = |key: Option<String>, u: holdline_store::store::Usage, quota: u64| FileUsageDto {
            key,
            files: u.files,
            bytes: u.bytes,
            quota,
        };
        AttachmentsAnswer {
            owners: usage
                .owners
                .into_iter()
                .map(|(key, u)| row(key, u, usage.quota.per_owner))
                .collect(),
            total: row(None, usage.total, usage.quota.total),
            keep_sec: usage.keep.as_secs(),
        }
    }
}

impl From<FreeBody> for holdline_core::hub::FreeScope {
    fn from(b: FreeBody) -> Self {
        use holdline_core::hub::FreeScope;
        match b {
            FreeBody::Expired => FreeScope::Expired,
            FreeBody::Secret => FreeScope::Owner(None),
            FreeBody::Key { key } => FreeScope::Owner(Some(key)),
            FreeBody::All => FreeScope::All,
        }
    }
}

/// `POST /api/attachments/free`: whose files to release now.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(tag = "scope", rename_all = "camelCase", deny_unknown_fields)]
pub enum FreeBody {
    /// Those the retention rule releases now.
    Expired,
    /// Every file of the hub secret's sessions.
    Secret,
    /// Every file of one agent key's sessions.
    Key { key: String },
    /// Every file.
    All,
}

/// What a free released.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FreeAnswer {
    /// Messages' files released.
    pub attachments: u64,
    /// Bytes deleted from disk.
    pub bytes: u64,
}

/// `POST /api/push/test`: whether the test push reached the browsers.
#[derive(Debug, Serialize, Deserialize)]
pub struct PushTestAnswer {
    pub sent: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `GET /api/export`'s header with how many sessions its streamed body holds.
pub const EXPORT_SESSIONS_HEADER: &str = "x-holdline-sessions";
