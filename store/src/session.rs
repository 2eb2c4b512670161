//! The session model and its status machine; pure data, no IO.
//!
//! These types are also the store's record format (serde, camelCase, the
//! field names of the earlier Node hub's `sessions.json`), which is why they
//! derive `Serialize`; what the HTTP API sends lives in `api::dto`.

use serde::{Deserialize, Serialize};

use crate::names::KeyName;

/// Milliseconds since the Unix epoch, the time unit of every stored field.
pub type Millis = i64;

/// The wall clock in [`Millis`].
pub fn now_ms() -> Millis {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as Millis)
        .unwrap_or(0)
}

/// Default cap on consecutive automatic replies before a person must answer.
pub const DEFAULT_MAX_AUTO_STREAK: u32 = 20;
/// Default text of an automatic reply.
pub const DEFAULT_CONTINUE_PROMPT: &str = "Continue with the next step.";

/// A session token: `ct_` followed by 32 lowercase hex digits.
///
/// Held inline (no heap allocation): the hub keeps every session in memory and
/// each one names its token more than once.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Token([u8; TOKEN_LEN]);

const TOKEN_LEN: usize = 3 + 32;

impl Token {
    /// A fresh random token (from a v4 UUID).
    pub fn generate() -> Self {
        Token::parse(&format!("ct_{}", uuid::Uuid::new_v4().simple()))
            .expect("a v4 UUID in simple form is 32 lowercase hex digits")
    }

    /// Parses a token, accepting only the exact `ct_` + 32 lowercase hex form.
    pub fn parse(s: &str) -> Option<Self> {
        let hex = s.strip_prefix("ct_")?;
        let ok = hex.len() == 32
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        ok.then(|| Token(s.as_bytes().try_into().expect("checked length")))
    }

    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.0).expect("a token is ASCII, checked by parse")
    }

    /// The 16 bytes its 32 hex digits spell: the compact form the session
    /// table and the store's summaries key on.
    pub fn to_raw(&self) -> [u8; 16] {
        let mut raw = [0; 16];
        hex::decode_to_slice(&self.0[3..], &mut raw)
            .expect("a token's digits are hex, checked by parse");
        raw
    }

    pub fn from_raw(raw: [u8; 16]) -> Token {
        Token::parse(&format!("ct_{}", hex::encode(raw)))
            .expect("hex::encode writes 32 lowercase digits")
    }
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Token({:?})", self.as_str())
    }
}

impl std::fmt::Display for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A text that is not a session token.
#[derive(Debug, thiserror::Error)]
#[error("malformed token {0:?}")]
pub struct BadToken(pub String);

impl TryFrom<String> for Token {
    type Error = BadToken;
    fn try_from(s: String) -> Result<Self, BadToken> {
        Token::parse(&s).ok_or(BadToken(s))
    }
}

impl From<Token> for String {
    fn from(t: Token) -> String {
        t.as_str().to_owned()
    }
}

pub use holdline_contract::{
    Choice, ChoiceOption, QuestionOrigin, Status, WaitEnd, WorkspaceChanges,
};

/// Who wrote a message.
/// What the hub keeps in memory of every session, stored or not: what lists
/// filter and sort by. 24 bytes; the whole session is read when needed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Summary {
    pub last_active_at: Millis,
    /// When the open wait began; [`Summary::NO_WAIT`] when none is open.
    wait_since: Millis,
    pub status: Status,
    pub mirror: bool,
}

impl Summary {
    const NO_WAIT: Millis = Millis::MIN;

    pub fn new(
        status: Status,
        mirror: bool,
        wait_since: Option<Millis>,
        last_active_at: Millis,
    ) -> Summary {
        Summary {
            last_active_at,
            wait_since: wait_since.unwrap_or(Self::NO_WAIT),
            status,
            mirror,
        }
    }

    pub fn of(s: &Session) -> Summary {
        Summary::new(
            s.status,
            s.mirror,
            s.wait.as_ref().map(|w| w.since),
            s.last_active_at,
        )
    }

    /// When the open wait began, if one is open.
    pub fn wait_since(&self) -> Option<Millis> {
        (self.wait_since != Self::NO_WAIT).then_some(self.wait_since)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The person (or an automatic reply on their behalf).
    User,
    /// The agent.
    Assistant,
    System,
}

/// An image attached to a reply or message, base64 as MCP carries it (the contract's
/// type: the hub stores what the agent receives).
pub use holdline_contract::Image;

/// Image types the panel may attach and MCP clients can show.
pub const IMAGE_TYPES: &[&str] = &["image/png", "image/jpeg", "image/gif", "image/webp"];

/// The one rule for an image the hub stores (replies and imports alike): a type MCP
/// clients show and the panel renders as an image, valid base64.
pub fn check_image(image: &Image) -> Result<(), BadImage> {
    use base64::Engine as _;
    if !IMAGE_TYPES.contains(&image.mime_type.as_str()) {
        return Err(BadImage::Type(image.mime_type.clone()));
    }
    if base64::engine::general_purpose::STANDARD
        .decode(&image.data)
        .is_err()
    {
        return Err(BadImage::NotBase64);
    }
    Ok(())
}

/// Why an image is refused.
#[derive(Debug, thiserror::Error)]
pub enum BadImage {
    #[error("image type {0:?} is not supported (png, jpeg, gif, webp)")]
    Type(String),
    #[error("image data is not valid base64")]
    NotBase64,
}

/// A file an agent's message carries, as the message keeps it: its bytes are in the
/// store's files, named by `id`, never inline in the history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AttachmentRef {
    /// `at_` and 32 hex digits, unique in the hub.
    pub id: String,
    pub name: String,
    pub mime_type: String,
    /// Bytes.
    pub size: u64,
    /// Its bytes were released (retention, or freed by the person); set when read
    /// for the person, never stored.
    #[serde(skip)]
    pub released: bool,
}

impl AttachmentRef {
    /// A new id for a stored attachment.
    pub fn new_id() -> String {
        format!("at_{}", uuid::Uuid::new_v4().simple())
    }

    /// Whether `id` has the shape [`AttachmentRef::new_id`] gives.
    pub fn is_id(id: &str) -> bool {
        id.strip_prefix("at_")
            .is_some_and(|hex| hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
    }

    /// Whether the panel may show it inline with its own type: a raster image type the
    /// hub accepts in replies (never SVG or HTML, which could run script).
    pub fn is_safe_image(&self) -> bool {
        IMAGE_TYPES.contains(&self.mime_type.as_str())
    }
}

/// An agent's uploads checked (the contract's rules, a plain `type/subtype`) and
/// decoded, each with the record its message keeps; nothing is kept when one fails.
pub fn decode_uploads(
    uploads: &[holdline_contract::attachments::AttachmentUpload],
) -> Result<Vec<(AttachmentRef, Vec<u8>)>, String> {
    use base64::Engine as _;
    use holdline_contract::attachments::{AttachmentRefused, check_size, check_uploads};
    check_uploads(uploads).map_err(|e| e.to_string())?;
    let mut decoded = Vec::with_capacity(uploads.len());
    for upload in uploads {
        if !is_mime_type(&upload.mime_type) {
            return Err(format!(
                "attachment {:?} has no usable mimeType (type/subtype, e.g. image/png): {:?}",
                upload.name, upload.mime_type
            ));
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(&upload.data)
            .map_err(|_| AttachmentRefused::BadData(upload.name.clone()).to_string())?;
        check_size(&upload.name, bytes.len() as u64).map_err(|e| e.to_string())?;
        let record = AttachmentRef {
            id: AttachmentRef::new_id(),
            name: upload.name.clone(),
            mime_type: upload.mime_type.to_ascii_lowercase(),
            size: bytes.len() as u64,
            released: false,
        };
        decoded.push((record, bytes));
    }
    Ok(decoded)
}

/// `type/subtype` of token characters, as a `Content-Type` header may carry it.
fn is_mime_type(value: &str) -> bool {
    let token = |part: &str| {
        !part.is_empty()
            && part
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$&^_.+-".contains(&b))
    };
    value.len() <= 127
        && value
            .split_once('/')
            .is_some_and(|(t, s)| token(t) && token(s))
}

/// One entry of a session's history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    pub role: Role,
    pub content: String,
    pub at: Millis,
    #[serde(default)]
    pub auto: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<Image>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_id: Option<String>,
    /// Where a person's reply was written when not in the panel or CLI
    /// (`"telegram"`), for the panel to show.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
    /// An agent's question: the answers it offers for one tap.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<ChoiceOption>,
    /// An agent's question: whether several options may be picked.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub multi_select: bool,
    /// A person's reply: the options picked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<Choice>,
    /// An agent's question: the workspace's uncommitted changes when it asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes: Option<WorkspaceChanges>,
    /// An agent's question: the files it showed beside it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<AttachmentRef>,
    /// An agent's question: where it came from (absent: the agent asked).
    #[serde(default, skip_serializing_if = "QuestionOrigin::is_asked")]
    pub origin: QuestionOrigin,
}

impl Message {
    /// A message with only its role, words and time; the rest empty.
    pub fn new(role: Role, content: String, at: Millis) -> Self {
        Message {
            role,
            content,
            at,
            auto: false,
            images: Vec::new(),
            reply_id: None,
            via: None,
            options: Vec::new(),
            multi_select: false,
            choices: Vec::new(),
            changes: None,
            attachments: Vec::new(),
            origin: QuestionOrigin::Asked,
        }
    }

    /// The history's record of a reply (the person's, or an automatic one).
    pub fn of_reply(reply: &QueuedReply, via: Option<String>) -> Self {
        Message {
            auto: reply.auto,
            images: reply.images.clone(),
            reply_id: Some(reply.id.clone()),
            via,
            choices: reply.choices.clone(),
            ..Message::new(Role::User, reply.text.clone(), reply.at)
        }
    }
}

/// A reply waiting to be delivered to the session's agent, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueuedReply {
    pub id: String,
    pub text: String,
    #[serde(default)]
    pub images: Vec<Image>,
    pub auto: bool,
    pub at: Millis,
    /// The options of the question the person picked (never on an automatic reply).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<Choice>,
    /// A reply to a permission question: that question's `requestId`. Only the wait of
    /// that question takes it, and it is dropped once that wait ends without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub for_permission: Option<String>,
}

/// A queued reply as the agent receives it.
impl From<QueuedReply> for holdline_contract::Reply {
    fn from(r: QueuedReply) -> Self {
        holdline_contract::Reply {
            id: r.id,
            text: r.text,
            images: r.images,
            auto: r.auto,
            at: r.at,
            choices: r.choices,
        }
    }
}

impl QueuedReply {
    pub fn new(text: String, images: Vec<Image>, auto: bool) -> Self {
        QueuedReply {
            id: format!("r_{}", uuid::Uuid::new_v4().simple()),
            text,
            images,
            auto,
            at: now_ms(),
            choices: Vec::new(),
            for_permission: None,
        }
    }
}

/// What the agent said of its progress at its last wait.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Review {
    pub has_review: bool,
    pub completion_pct: Option<u8>,
    #[serde(default)]
    pub next_step: String,
    pub is_idle_next: bool,
}

impl Default for Review {
    fn default() -> Self {
        Review {
            has_review: false,
            completion_pct: None,
            next_step: String::new(),
            is_idle_next: true,
        }
    }
}

impl Review {
    pub fn from_wait(completion_pct: Option<u8>, next_step: Option<String>) -> Self {
        let next_step = next_step.unwrap_or_default();
        Review {
            has_review: completion_pct.is_some() || !next_step.is_empty(),
            completion_pct,
            is_idle_next: next_step.trim().is_empty(),
            next_step,
        }
    }
}

/// The agent's open `wait_for_user_input`; at most one per session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenWait {
    pub wait_id: String,
    pub request_id: String,
    pub since: Millis,
    /// The agent key it was registered with (`None`: the secret); revoking
    /// that key closes the wait.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<KeyName>,
    /// Where its question came from: a permission question's wait takes only the
    /// replies to it, never an automatic one.
    #[serde(default, skip_serializing_if = "QuestionOrigin::is_asked")]
    pub origin: QuestionOrigin,
}

impl OpenWait {
    /// The `requestId` whose replies this wait takes: its own for a permission question,
    /// none (the agent's ordinary replies) for any other.
    pub fn permission_request(&self) -> Option<&str> {
        (self.origin == QuestionOrigin::Permission).then_some(self.request_id.as_str())
    }
}

/// A recently closed wait, remembered so a late poll learns why it ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClosedWait {
    pub wait_id: String,
    pub reason: WaitEnd,
}

/// How many closed waits and acked reply ids a session remembers.
const RECENT: usize = 16;

/// Per-session keep-alive settings (`POST /api/session/config` in docs/api.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
///
/// Stores written before carry a `continueMode` that nothing read; it is
/// ignored when read and no longer written.
pub struct KeepAlive {
    pub continue_prompt: String,
    /// Idle auto-continue: when the agent waits while naming a next step, go on at once.
    pub session_auto_continue: bool,
    /// Timed reply: deliver `continue_prompt` after `timed_reply_interval_ms` without a real reply.
    pub timed_reply_enabled: bool,
    pub timed_reply_interval_ms: u64,
    pub max_auto_streak: u32,
}

impl Default for KeepAlive {
    fn default() -> Self {
        KeepAlive {
            continue_prompt: DEFAULT_CONTINUE_PROMPT.into(),
            session_auto_continue: false,
            timed_reply_enabled: false,
            timed_reply_interval_ms: 0,
            max_auto_streak: DEFAULT_MAX_AUTO_STREAK,
        }
    }
}

/// A quick-reply template shown in the panel, shared or a session's own; one
/// with a `lang` (`en`, `zh`) shows only in a conversation in that language.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Template {
    pub label: String,
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lang: Option<String>,
}

/// Most shared quick replies.
pub const MAX_SHARED_TEMPLATES: usize = 100;
/// Most quick replies of one session's own.
pub const MAX_SESSION_TEMPLATES: usize = 20;

/// The one rule for a list of quick replies: at most `max` of them, each a
/// label of 1 to 64 characters and a text of at most 8,192.
pub fn check_templates(templates: &[Template], max: usize) -> Result<(), String> {
    if templates.len() > max {
        return Err(format!("at most {max} quick replies"));
    }
    let bad = |t: &Template| {
        t.label.trim().is_empty() || t.label.chars().count() > 64 || t.text.chars().count() > 8192
    };
    if templates.iter().any(bad) {
        return Err(
            "each quick reply needs a label of 1 to 64 characters and a text of at most 8192"
                .into(),
        );
    }
    Ok(())
}

/// Longest machine name kept from a bridge's report, in characters.
pub const MAX_HOST_NAME: usize = 64;

/// A conversation between one IDE chat's agent and a person: its metadata.
/// Messages are stored apart (see `store`) and loaded on demand.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Session {
    pub token: Token,
    pub title: String,
    pub display_title: String,
    pub status: Status,
    pub workspace: String,
    pub host_ip: String,
    /// The agent's machine as its bridge names it ("" when it did not say): where the
    /// panel says the agent lives. Not part of the binding key.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub host_name: String,
    pub binding_key: String,
    /// The hub (`host:port`) that owns the session.
    pub hub: String,
    pub created_at: Millis,
    pub last_active_at: Millis,
    pub msg_count: u64,
    pub auto_streak: u32,
    pub binding_check_count: u64,
    /// Nested, not flattened: serde's flatten buffers every field and made
    /// decoding all sessions at start several times slower.
    pub keep_alive: KeepAlive,
    pub plan_name: Option<String>,
    pub thread_id: Option<String>,
    pub merged_into: Option<Token>,
    pub last_review: Review,
    /// The open wait, persisted so a session waiting before a restart waits after it.
    pub wait: Option<OpenWait>,
    /// The `requestId` of the last register, so a repeated call records nothing new.
    pub last_request_id: Option<String>,
    pub closed_waits: Vec<ClosedWait>,
    /// Reply ids already acknowledged, so a retried ack is answered `ok` again.
    pub acked_replies: Vec<String>,
    /// Text of the newest message, cut short, for lists.
    pub preview: String,
    /// Grows by one with every stored change; what sync compares.
    #[serde(default)]
    pub rev: u64,
    /// A read-only copy of a session another hub owns (seen through MongoDB).
    #[serde(default)]
    pub mirror: bool,
    /// Every move of the session from one hub to another.
    #[serde(default)]
    pub adoptions: Vec<Adoption>,
    /// Who the session belongs to: the agent key that made it, `None` for
    /// the secret (and for every session of a store older than owners, whose
    /// last binder `boundKey` is read as its owner). Only the person changes
    /// it (a hand-over); agent calls act only on their own sessions.
    #[serde(default, alias = "boundKey", skip_serializing_if = "Option::is_none")]
    pub owner: Option<KeyName>,
    /// The session's own quick replies, shown before the shared ones.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub quick_replies: Vec<Template>,
}

/// A hub taking over a session from another (multi-hub over MongoDB, docs/operations.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Adoption {
    pub from: String,
    pub to: String,
    pub at: Millis,
}

/// A name an agent sent (its chat's title), as the person reads it: without
/// the bidi controls and invisible characters that would make it read as
/// something else (`holdline_contract::visible`). Stripped rather than refused:
/// the title comes from the IDE, and refusing it would cost the agent its turn.
/// The binding keeps the title as sent, so the chat still finds its session.
pub fn visible_name(name: &str) -> String {
    name.chars()
        .filter(|&c| !holdline_contract::visible::is_hidden(c))
        .collect()
}

impl Session {
    pub fn new(token: Token, title: &str, workspace: &str, host_ip: &str, hub: &str) -> Self {
        let now = now_ms();
        Session {
            binding_key: crate::names::BindingKey::new(workspace, title, host_ip).into_string(),
            token,
            title: visible_name(title),
            display_title: String::new(),
            status: Status::Holding,
            workspace: workspace.to_owned(),
            host_ip: host_ip.to_owned(),
            host_name: String::new(),
            hub: hub.to_owned(),
            created_at: now,
            last_active_at: now,
            msg_count: 0,
            auto_streak: 0,
            binding_check_count: 0,
            keep_alive: KeepAlive::default(),
            plan_name: None,
            thread_id: None,
            merged_into: None,
            last_review: Review::default(),
            wait: None,
            last_request_id: None,
            closed_waits: Vec::new(),
            acked_replies: Vec::new(),
            preview: String::new(),
            rev: 1,
            mirror: false,
            adoptions: Vec::new(),
            owner: None,
            quick_replies: Vec::new(),
        }
    }

    /// Records a message's effect on the metadata and returns its sequence number.
    pub fn note_message(&mut self, message: &Message) -> u64 {
        let seq = self.msg_count;
        self.msg_count += 1;
        self.last_active_at = self.last_active_at.max(message.at);
        self.preview = preview_of(&message.content);
        seq
    }

    /// Keeps the machine name the agent's bridge reported (one line, at most
    /// [`MAX_HOST_NAME`] characters); an absent or blank one changes nothing.
    pub fn note_host_name(&mut self, reported: Option<&str>) {
        let Some(name) = reported.map(str::trim).filter(|n| !n.is_empty()) else {
            return;
        };
        let name: String = name
            .chars()
            .filter(|&c| !c.is_control() && !holdline_contract::visible::is_hidden(c))
            .take(MAX_HOST_NAME)
            .collect();
        if !name.is_empty() {
            self.host_name = name;
        }
    }

    /// Ends the open wait, if any, remembering why for its late polls.
    pub fn close_wait(&mut self, reason: WaitEnd) -> Option<OpenWait> {
        let wait = self.wait.take()?;
        self.closed_waits.push(ClosedWait {
            wait_id: wait.wait_id.clone(),
            reason,
        });
        trim_front(&mut self.closed_waits);
        Some(wait)
    }

    /// Why a wait that is not open ended, if this session remembers it.
    pub fn closed_reason(&self, wait_id: &str) -> Option<WaitEnd> {
        self.closed_waits
            .iter()
            .rev()
            .find(|c| c.wait_id == wait_id)
            .map(|c| c.reason)
    }

    /// Whether `wait_id` is this session's open wait.
    pub fn has_open_wait(&self, wait_id: &str) -> bool {
        self.wait.as_ref().is_some_and(|w| w.wait_id == wait_id)
    }

    /// The status while a wait is open: `replied` once a reply is queued for it.
    pub fn waiting_status(queued: bool) -> Status {
        if queued {
            Status::Replied
        } else {
            Status::Waiting
        }
    }

    /// Applies a delivered reply that ends the open wait: a real one resets
    /// the streak, an automatic one adds to it.
    pub fn reply_delivered(&mut self, reply: &QueuedReply) {
        self.count_delivery(reply);
        self.status = if reply.auto {
            Status::Running
        } else {
            Status::Holding
        };
        self.close_wait(WaitEnd::Finished);
    }

    /// Counts a delivery acked through an older wait; a newer open wait (the
    /// agent already called again) stays open.
    pub fn count_delivery(&mut self, reply: &QueuedReply) {
        if reply.auto {
            self.auto_streak += 1;
        } else {
            self.auto_streak = 0;
        }
        self.acked_replies.push(reply.id.clone());
        trim_front(&mut self.acked_replies);
        self.last_active_at = now_ms();
    }

    /// Whether the hub may send another automatic reply now.
    pub fn may_auto_reply(&self) -> bool {
        !self.status.is_closed() && self.auto_streak < self.keep_alive.max_auto_streak
    }

    /// The title the panel shows.
    pub fn shown_title(&self) -> &str {
        if self.display_title.is_empty() {
            &self.title
        } else {
            &self.display_title
        }
    }
}

fn trim_front<T>(v: &mut Vec<T>) {
    if v.len() > RECENT {
        let extra = v.len() - RECENT;
        v.drain(..extra);
    }
}

/// The first 160 characters of a message, on one line.
pub fn preview_of(content: &str) -> String {
    let mut out: String = content
        .chars()
        .take(160)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if content.chars().nth(160).is_some() {
        out.push('…');
    }
    // Collected char by char, the string has up to twice the room it needs,
    // and every session in memory keeps one.
    out.shrink_to_fit();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_stored_before_owners_belongs_to_its_last_binder_or_the_secret() {
        let mut stored =
            serde_json::to_value(Session::new(Token::generate(), "t", "/w", "h", "hub")).unwrap();
        assert!(
            stored.get("owner").is_none(),
            "the secret's owner is not written"
        );
        let secrets: Session = serde_json::from_value(stored.clone()).unwrap();
        assert_eq!(secrets.owner, None);
        stored["boundKey"] = serde_json::json!("laptop");
        let keys: Session = serde_json::from_value(stored).unwrap();
        assert_eq!(keys.owner.map(|k| k.to_string()).as_deref(), Some("laptop"));
    }

    #[test]
    fn tokens_parse_only_the_exact_form() {
        let t = Token::generate();
        assert!(Token::parse(t.as_str()).is_some());
        assert_eq!(t.as_str().len(), 35);
        for bad in [
            "",
            "ct_",
            "../x",
            "ct_0A1B2C3D4E5F60718293A4B5C6D7E8F9",
            "ct_0a1b2c3d4e5f60718293a4b5c6d7e8f",
            "ct_0a1b2c3d4e5f60718293a4b5c6d7e8f9a",
            "xx_0a1b2c3d4e5f60718293a4b5c6d7e8f9",
        ] {
            assert!(Token::parse(bad).is_none(), "{bad:?} accepted");
        }
        let raw = t.to_raw();
        assert_eq!(Token::from_raw(raw), t);
        assert_eq!(hex::encode(raw), t.as_str()[3..]);
    }

    #[test]
    fn real_reply_resets_streak_auto_reply_adds() {
        let mut s = Session::new(Token::generate(), "t", "/w", "10.0.0.1", "h");
        s.wait = Some(OpenWait {
            wait_id: "w1".into(),
            request_id: "q".into(),
            since: 0,
            key: None,
            origin: Default::default(),
        });
        s.reply_delivered(&QueuedReply::new("go".into(), vec![], true));
        assert_eq!((s.auto_streak, s.status), (1, Status::Running));
        assert_eq!(s.closed_reason("w1"), Some(WaitEnd::Finished));
        s.reply_delivered(&QueuedReply::new("go".into(), vec![], true));
        assert_eq!(s.auto_streak, 2);
        s.reply_delivered(&QueuedReply::new("stop".into(), vec![], false));
        assert_eq!((s.auto_streak, s.status), (0, Status::Holding));
    }

    #[test]
    fn streak_cap_stops_auto_replies() {
        let mut s = Session::new(Token::generate(), "t", "/w", "h", "h");
        s.keep_alive.max_auto_streak = 2;
        s.auto_streak = 2;
        assert!(!s.may_auto_reply());
        s.auto_streak = 1;
        assert!(s.may_auto_reply());
    }

    #[test]
    fn remembers_only_recent_closed_waits() {
        let mut s = Session::new(Token::generate(), "t", "/w", "h", "h");
        for i in 0..40 {
            s.wait = Some(OpenWait {
                wait_id: format!("w{i}"),
                request_id: String::new(),
                since: 0,
                key: None,
                origin: Default::default(),
            });
            s.close_wait(WaitEnd::Superseded);
        }
        assert_eq!(s.closed_waits.len(), RECENT);
        assert_eq!(s.closed_reason("w39"), Some(WaitEnd::Superseded));
        assert_eq!(s.closed_reason("w0"), None);
    }

    #[test]
    fn preview_is_short_and_single_line() {
        let p = preview_of(&"a\nb".repeat(200));
        assert!(!p.contains('\n'));
        assert!(p.ends_with('…'));
    }
}
