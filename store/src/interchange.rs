//! The `sessions.json` interchange format (token → session with messages), as
//! the earlier Node hub wrote it; read leniently, written with every field.

use std::collections::BTreeMap;
use std::path::PathBuf;

use base64::Engine as _;
use holdline_contract::attachments::AttachmentUpload;
use serde::{Deserialize, Serialize};

use crate::names::BindingKey;
use crate::session::{
    BadImage, Choice, ChoiceOption, Image, KeepAlive, Message, Millis, QuestionOrigin, Review,
    Role, Session, Status, Template, Token, WorkspaceChanges, now_ms, preview_of,
};

/// A message's files as an export carries them: where each file's bytes are
/// (`file` finds them by id), read only when the export is written.
fn export_files(
    token: &Token,
    records: &[crate::session::AttachmentRef],
    file: &impl Fn(&str) -> Option<PathBuf>,
) -> Vec<ExportedFile> {
    records
        .iter()
        .filter_map(|a| {
            let Some(path) = file(&a.id) else {
                tracing::info!(%token, attachment = %a.id, "an attachment's bytes were released; left out of the export");
                return None;
            };
            Some(ExportedFile {
                name: a.name.clone(),
                mime_type: a.mime_type.clone(),
                data: FileData::OnDisk(path),
            })
        })
        .collect()
}

/// One file of a message in `sessions.json`: the bridge's upload shape
/// (`{name, mimeType, data}`, data base64).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExportedFile {
    pub name: String,
    pub mime_type: String,
    pub data: FileData,
}

/// A file's bytes: base64 as read from a file, or the stored file, read and
/// encoded only while the export is written (one file in memory at a time).
#[derive(Debug, Clone)]
pub enum FileData {
    Base64(String),
    OnDisk(PathBuf),
}

impl Serialize for FileData {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            FileData::Base64(b) => s.serialize_str(b),
            FileData::OnDisk(path) => {
                let bytes = std::fs::read(path).map_err(|e| {
                    serde::ser::Error::custom(format!("cannot read {}: {e}", path.display()))
                })?;
                s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(bytes))
            }
        }
    }
}

impl<'de> Deserialize<'de> for FileData {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(FileData::Base64)
    }
}

/// What the Node hub writes as `continueMode` (a setting nothing reads).
pub const NODE_CONTINUE_MODE: &str = "optimize";

/// Why an entry of a file is refused (the whole file is then).
#[derive(Debug, thiserror::Error)]
pub enum BadEntry {
    #[error("{0:?} is not a session token (ct_ + 32 hex)")]
    NotAToken(String),
    #[error("entry {key:?} holds token {token:?}")]
    OtherToken { key: String, token: String },
    #[error("{token}: unknown status {status:?}")]
    Status { token: Token, status: String },
    #[error("{token}: unknown message role {role:?}")]
    Role { token: Token, role: String },
    #[error("{token}: {source}")]
    Image { token: Token, source: BadImage },
    #[error("{token}: {detail}")]
    Attachment { token: Token, detail: String },
}

/// An imported session's files: new attachment id → bytes, stored with its messages.
pub type ImportedFiles = Vec<(String, Vec<u8>)>;

/// A whole file: token → session.
pub type ExportFile = BTreeMap<String, ExportSession>;

/// One session as `sessions.json` holds it. Every field but the token may be
/// missing in files from the Node hub; defaults fill them.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExportSession {
    #[serde(default)]
    pub token: Option<String>,
    #[serde(default)]
    pub title: String,
    #[serde(default)]
    pub display_title: String,
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub workspace: String,
    #[serde(default)]
    pub created_at: Option<Millis>,
    #[serde(default)]
    pub last_active_at: Option<Millis>,
    #[serde(default)]
    pub msg_count: Option<u64>,
    #[serde(default)]
    pub auto_streak: u32,
    #[serde(default)]
    pub binding_key: Option<String>,
    #[serde(default)]
    pub host_ip: String,
    /// The agent's machine name as its bridge reported it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub host_name: String,
    /// The session's own quick replies.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub quick_replies: Vec<Template>,
    #[serde(default)]
    pub hub: String,
    #[serde(default)]
    pub binding_check_count: u64,
    /// The Node hub's format carries it; this hub neither reads nor keeps it,
    /// and exports the Node hub's default ([`NODE_CONTINUE_MODE`]).
    #[serde(default)]
    pub continue_mode: Option<String>,
    #[serde(default)]
    pub continue_prompt: Option<String>,
    #[serde(default)]
    pub session_auto_continue: bool,
    #[serde(default)]
    pub timed_reply_enabled: bool,
    #[serde(default)]
    pub timed_reply_interval_ms: u64,
    #[serde(default)]
    pub max_auto_streak: Option<u32>,
    #[serde(default)]
    pub plan_name: Option<String>,
    #[serde(default)]
    pub thread_id: Option<String>,
    #[serde(default)]
    pub merged_into: Option<String>,
    #[serde(default)]
    pub last_review: Option<ExportReview>,
    #[serde(default)]
    pub messages: Vec<ExportMessage>,
    /// The agent key the session belongs to; absent: the secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExportReview {
    #[serde(default)]
    pub has_review: bool,
    /// Written as an integer; read from any JSON number (the Node hub's may be fractional).
    #[serde(default, deserialize_with = "lenient_pct")]
    pub completion_pct: Option<u8>,
    #[serde(default)]
    pub next_step: Option<String>,
    #[serde(default)]
    pub is_idle_next: Option<bool>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExportMessage {
    pub role: String,
    #[serde(default)]
    pub content: String,
    #[serde(default)]
    pub at: Millis,
    #[serde(default)]
    pub auto: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<Image>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_id: Option<String>,
    /// Where a reply was written, when not in the panel (`"telegram"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
    /// The answers an agent's question offered.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<ChoiceOption>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub multi_select: bool,
    /// The options a person's reply picked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<Choice>,
    /// The workspace's changes an agent's question carried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes: Option<WorkspaceChanges>,
    /// Where an agent's question came from (absent: the agent asked).
    #[serde(default, skip_serializing_if = "QuestionOrigin::is_asked")]
    pub origin: QuestionOrigin,
    /// The files an agent's question showed, with their bytes (base64, as the bridge
    /// sends them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<ExportedFile>,
}

fn lenient_pct<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u8>, D::Error> {
    let n: Option<f64> = Option::deserialize(d)?;
    Ok(n.map(|p| p.round().clamp(0.0, 100.0) as u8))
}

impl ExportSession {
    /// `s` with its messages; `file` finds an attachment's file by id (one whose
    /// bytes were released is left out of the export).
    pub fn from_session(
        s: &Session,
        messages: impl Iterator<Item = Message>,
        file: impl Fn(&str) -> Option<PathBuf>,
    ) -> Self {
        ExportSession {
            token: Some(s.token.to_string()),
            title: s.title.clone(),
            display_title: s.display_title.clone(),
            status: Some(s.status.as_str().to_owned()),
            workspace: s.workspace.clone(),
            created_at: Some(s.created_at),
            last_active_at: Some(s.last_active_at),
            msg_count: Some(s.msg_count),
            auto_streak: s.auto_streak,
            binding_key: Some(s.binding_key.clone()),
            host_ip: s.host_ip.clone(),
            host_name: s.host_name.clone(),
            quick_replies: s.quick_replies.clone(),
            hub: s.hub.clone(),
            binding_check_count: s.binding_check_count,
            continue_mode: Some(NODE_CONTINUE_MODE.to_owned()),
            continue_prompt: Some(s.keep_alive.continue_prompt.clone()),
            session_auto_continue: s.keep_alive.session_auto_continue,
            timed_reply_enabled: s.keep_alive.timed_reply_enabled,
            timed_reply_interval_ms: s.keep_alive.timed_reply_interval_ms,
            max_auto_streak: Some(s.keep_alive.max_auto_streak),
            plan_name: s.plan_name.clone(),
            thread_id: s.thread_id.clone(),
            merged_into: s.merged_into.as_ref().map(|t| t.to_string()),
            owner: s.owner.as_ref().map(|k| k.to_string()),
            last_review: Some(ExportReview {
                has_review: s.last_review.has_review,
                completion_pct: s.last_review.completion_pct,
                next_step: Some(s.last_review.next_step.clone()),
                is_idle_next: Some(s.last_review.is_idle_next),
            }),
            messages: messages
                .map(|m| ExportMessage {
                    role: match m.role {
                        Role::User => "user",
                        Role::Assistant => "assistant",
                        Role::System => "system",
                    }
                    .into(),
                    content: m.content,
                    at: m.at,
                    auto: m.auto,
                    images: m.images,
                    reply_id: m.reply_id,
                    via: m.via,
                    options: m.options,
                    multi_select: m.multi_select,
                    choices: m.choices,
                    changes: m.changes,
                    origin: m.origin,
                    attachments: export_files(&s.token, &m.attachments, &file),
                })
                .collect(),
        }
    }

    /// Turns an entry into a session and its messages. Waits do not survive
    /// an export, so `waiting`/`replied` come back as `holding`.
    pub fn into_session(
        mut self,
        key: &str,
        hub: &str,
    ) -> Result<(Session, Vec<Message>, ImportedFiles), BadEntry> {
        let token = self.checked_token(key)?;
        let status = self.imported_status(&token)?;
        let keep_alive = self.take_keep_alive();
        let title = if self.title.is_empty() {
            "untitled".to_owned()
        } else {
            self.title
        };
        let mut s = Session::new(
            token,
            &title,
            &self.workspace,
            &self.host_ip,
            if self.hub.is_empty() { hub } else { &self.hub },
        );
        s.display_title = self.display_title;
        s.note_host_name(Some(&self.host_name));
        // Quick replies outside the rule are left behind, not the session.
        if crate::session::check_templates(
            &self.quick_replies,
            crate::session::MAX_SESSION_TEMPLATES,
        )
        .is_ok()
        {
            s.quick_replies = self.quick_replies;
        }
        s.status = status;
        s.created_at = self.created_at.unwrap_or_else(now_ms);
        s.last_active_at = self.last_active_at.unwrap_or(s.created_at);
        s.auto_streak = self.auto_streak;
        s.binding_key = self
            .binding_key
            .unwrap_or_else(|| BindingKey::new(&s.workspace, &s.title, &s.host_ip).into_string());
        s.binding_check_count = self.binding_check_count;
        s.keep_alive = keep_alive;
        s.plan_name = self.plan_name;
        s.thread_id = self.thread_id;
        s.merged_into = self.merged_into.as_deref().and_then(Token::parse);
        // A name that is no key name makes the session the secret's.
        s.owner = self
            .owner
            .as_deref()
            .and_then(|k| crate::names::KeyName::parse(k).ok());
        if let Some(r) = self.last_review {
            s.last_review = r.into_review();
        }
        let (messages, files) = ExportMessage::into_messages(self.messages, &s.token)?;
        if let Some(last) = messages.last() {
            s.preview = preview_of(&last.content);
        }
        Ok((s, messages, files))
    }

    /// The entry's token: its own field, else the file's key for it; the two must agree.
    fn checked_token(&self, key: &str) -> Result<Token, BadEntry> {
        let token_text = self.token.as_deref().unwrap_or(key);
        let token =
            Token::parse(token_text).ok_or_else(|| BadEntry::NotAToken(token_text.to_owned()))?;
        if self.token.as_deref().is_some_and(|t| t != key) {
            return Err(BadEntry::OtherToken {
                key: key.to_owned(),
                token: token_text.to_owned(),
            });
        }
        Ok(token)
    }

    /// The status the imported session gets: a wait does not survive an export, so
    /// `waiting`/`replied` (and none) become `holding`; an unknown one refuses the entry.
    fn imported_status(&self, token: &Token) -> Result<Status, BadEntry> {
        match self.status.as_deref().map(Status::parse) {
            None | Some(Some(Status::Waiting | Status::Replied)) => Ok(Status::Holding),
            Some(Some(s)) => Ok(s),
            Some(None) => Err(BadEntry::Status {
                token: token.clone(),
                status: self.status.clone().unwrap_or_default(),
            }),
        }
    }

    /// The entry's keep-alive settings; a missing or blank prompt and a missing streak
    /// limit take the defaults.
    fn take_keep_alive(&mut self) -> KeepAlive {
        let defaults = KeepAlive::default();
        KeepAlive {
            continue_prompt: self
                .continue_prompt
                .take()
                .filter(|p| !p.trim().is_empty())
                .unwrap_or(defaults.continue_prompt),
            session_auto_continue: self.session_auto_continue,
            timed_reply_enabled: self.timed_reply_enabled,
            timed_reply_interval_ms: self.timed_reply_interval_ms,
            max_auto_streak: self.max_auto_streak.unwrap_or(defaults.max_auto_streak),
        }
    }
}

impl ExportReview {
    /// The stored review; without an answer on idleness, an empty next step means idle.
    fn into_review(self) -> Review {
        let next_step = self.next_step.unwrap_or_default();
        Review {
            has_review: self.has_review,
            completion_pct: self.completion_pct,
            is_idle_next: self.is_idle_next.unwrap_or(next_step.is_empty()),
            next_step,
        }
    }
}

impl ExportMessage {
    /// The stored messages of a session's exported ones, with their decoded files; the
    /// first bad message refuses the entry.
    fn into_messages(
        exported: Vec<Self>,
        token: &Token,
    ) -> Result<(Vec<Message>, ImportedFiles), BadEntry> {
        let mut messages = Vec::with_capacity(exported.len());
        let mut files = ImportedFiles::new();
        for m in exported {
            messages.push(m.into_message(token, &mut files)?);
        }
        Ok((messages, files))
    }

    /// The stored message of an exported one, its files decoded into `files` with new
    /// ids; `token` names the session in an error.
    fn into_message(self, token: &Token, files: &mut ImportedFiles) -> Result<Message, BadEntry> {
        let role = match self.role.as_str() {
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "system" => Role::System,
            other => {
                return Err(BadEntry::Role {
                    token: token.clone(),
                    role: other.to_owned(),
                });
            }
        };
        // Imported images obey the reply rule: nothing the panel would
        // not show as an image (SVG or HTML could carry script).
        for image in &self.images {
            crate::session::check_image(image).map_err(|source| BadEntry::Image {
                token: token.clone(),
                source,
            })?;
        }
        // Imported files obey the register rule, with new ids.
        let uploads: Vec<AttachmentUpload> = self
            .attachments
            .into_iter()
            .map(|f| AttachmentUpload {
                name: f.name,
                mime_type: f.mime_type,
                data: match f.data {
                    FileData::Base64(b) => b,
                    // Only an export being written holds a path.
                    FileData::OnDisk(_) => String::new(),
                },
            })
            .collect();
        let decoded =
            crate::session::decode_uploads(&uploads).map_err(|detail| BadEntry::Attachment {
                token: token.clone(),
                detail,
            })?;
        let mut attachments = Vec::with_capacity(decoded.len());
        for (record, bytes) in decoded {
            files.push((record.id.clone(), bytes));
            attachments.push(record);
        }
        Ok(Message {
            role,
            content: self.content,
            at: self.at,
            auto: self.auto,
            images: self.images,
            reply_id: self.reply_id,
            via: self.via,
            options: self.options,
            multi_select: self.multi_select,
            choices: self.choices,
            changes: self.changes,
            attachments,
            origin: self.origin,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NODE_FILE: &str = include_str!("../tests/data/node-hub-sessions.json");

    #[test]
    fn reads_the_node_hub_file() {
        let file: ExportFile = serde_json::from_str(NODE_FILE).unwrap();
        assert_eq!(file.len(), 2);
        let (key, entry) = file
            .into_iter()
            .find(|(k, _)| k.starts_with("ct_9f2c"))
            .unwrap();
        let (s, msgs, _) = entry.into_session(&key, "here:1").unwrap();
        assert_eq!(s.title, "重构登录模块");
        assert_eq!(s.display_title, "登录重构");
        assert_eq!(
            s.binding_key,
            "/Users/dev/work/webapp::重构登录模块@192.168.1.20"
        );
        assert_eq!(s.hub, "192.168.1.20:13458");
        assert_eq!(s.last_review.completion_pct, Some(80));
        assert_eq!(msgs.len(), 4);
        assert!(msgs[3].auto);
    }

    #[test]
    fn rejects_bad_tokens_and_roles() {
        let bad: ExportFile =
            serde_json::from_str(r#"{"../x": {"title": "t", "messages": []}}"#).unwrap();
        let (k, e) = bad.into_iter().next().unwrap();
        assert!(e.into_session(&k, "h").is_err());
        let bad: ExportFile = serde_json::from_str(
            r#"{"ct_0a1b2c3d4e5f60718293a4b5c6d7e8f9": {"messages": [{"role": "robot", "content": ""}]}}"#,
        )
        .unwrap();
        let (k, e) = bad.into_iter().next().unwrap();
        assert!(
            e.into_session(&k, "h")
                .unwrap_err()
                .to_string()
                .contains("robot")
        );
    }
}
