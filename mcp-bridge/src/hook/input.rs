//! What a client's hook hands `holdline-mcp hook` on stdin: one JSON object, read within a
//! size and time bound (Cursor's own shape is mapped onto it by [`super::shape`]), and —
//! when the payload does not carry the agent's last message — the last assistant text of
//! the client's transcript file.
//!
//! Invariant: reading never hangs and never holds more than [`MAX_PAYLOAD`] of stdin or
//! [`TRANSCRIPT_TAIL`] of a transcript; a payload that is not what the hook expects is an
//! [`InputError`] naming the rule, never a panic.

use std::{
    io::{Read, Seek, SeekFrom},
    path::Path,
    time::Duration,
};

use serde::Deserialize;
use serde_json::Value;

/// The largest hook payload read (Claude Code's carries the last message, not the
/// transcript).
pub const MAX_PAYLOAD: u64 = 8 * 1024 * 1024;
/// How long the client has to write the payload and close stdin.
pub const STDIN_LIMIT: Duration = Duration::from_secs(5);
/// How much of a transcript's end is read to find the last assistant text.
pub const TRANSCRIPT_TAIL: u64 = 4 * 1024 * 1024;

/// Why a payload cannot be answered.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("no hook payload arrived on stdin within {} s", STDIN_LIMIT.as_secs())]
    Slow,
    #[error("the hook payload is larger than {} MiB", MAX_PAYLOAD >> 20)]
    TooLarge,
    #[error("could not read the hook payload: {0}")]
    Read(#[from] std::io::Error),
    #[error(
        "the hook payload is not a JSON object with the fields this client's hook sends (hook_event_name and session_id and cwd; Cursor: conversation_id and workspace_roots): {0}"
    )]
    Malformed(#[from] serde_json::Error),
    #[error("the hook payload has an empty {0}")]
    Empty(&'static str),
}

/// The fields of a hook payload this command reads (Claude Code and Codex name them alike).
#[derive(Debug, Clone, Deserialize)]
pub struct HookInput {
    pub hook_event_name: String,
    pub session_id: String,
    pub cwd: String,
    #[serde(default)]
    pub transcript_path: Option<String>,
    /// Codex only: which turn is stopping.
    #[serde(default)]
    pub turn_id: Option<String>,
    #[serde(default)]
    pub last_assistant_message: Option<String>,
    /// `PermissionRequest`: the tool the agent wants to use.
    #[serde(default)]
    pub tool_name: Option<String>,
    /// `PermissionRequest`: the tool call's arguments.
    #[serde(default)]
    pub tool_input: Option<Value>,
    /// `PermissionRequest` (Claude Code): the rules the client's own dialog offers for
    /// "don't ask again".
    #[serde(default)]
    pub permission_suggestions: Option<Value>,
    /// Gemini CLI's `AfterAgent`: every answer of the model since the person's prompt.
    #[serde(default)]
    pub prompt_response: Option<String>,
    /// Cursor's `stop`: how the agent loop ended (the other clients' stop hooks fire only
    /// when the turn completed, and send none).
    #[serde(skip)]
    pub stop_status: Option<StopStatus>,
}

/// How Cursor's agent loop ended when its `stop` hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StopStatus {
    Completed,
    /// The person stopped the agent.
    Aborted,
    Error,
    /// A status this bridge does not know: treated like one that did not complete.
    #[serde(other)]
    Other,
}

impl HookInput {
    /// Checks one payload in the shape Claude Code, Codex, Qwen Code and Gemini CLI send.
    pub fn parse(bytes: &[u8]) -> Result<HookInput, InputError> {
        serde_json::from_slice::<HookInput>(bytes)?.checked()
    }

    /// The payload when its event, session and folder are not blank.
    pub fn checked(self) -> Result<HookInput, InputError> {
        for (name, value) in [
            ("hook_event_name", &self.hook_event_name),
            ("session_id", &self.session_id),
            ("cwd", &self.cwd),
        ] {
            if value.trim().is_empty() {
                return Err(InputError::Empty(name));
            }
        }
        Ok(self)
    }

    /// What the agent said last: the payload's message, else the transcript's last
    /// assistant text.
    pub fn last_message(&self) -> Option<String> {
        let given = self
            .last_assistant_message
            .as_deref()
            .map(str::trim)
            .filter(|m| !m.is_empty());
        match given {
            Some(m) => Some(m.to_owned()),
            None => self
                .transcript_path
                .as_deref()
                .and_then(|p| last_assistant_text(Path::new(p))),
        }
    }
}

/// stdin to its end, on a thread of its own: a client that never closes stdin costs
/// [`STDIN_LIMIT`], and the thread is left behind when the process ends.
pub fn read_stdin() -> Result<Vec<u8>, InputError> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let read = std::io::stdin()
            .lock()
            .take(MAX_PAYLOAD + 1)
            .read_to_end(&mut bytes);
        let _ = tx.send(read.map(|_| bytes));
    });
    let bytes = rx
        .recv_timeout(STDIN_LIMIT)
        .map_err(|_| InputError::Slow)??;
    if bytes.len() as u64 > MAX_PAYLOAD {
        return Err(InputError::TooLarge);
    }
    Ok(bytes)
}

/// The whole lines of a JSONL transcript's last [`TRANSCRIPT_TAIL`], oldest first.
pub fn transcript_tail(path: &Path) -> Option<Vec<String>> {
    let mut file = std::fs::File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    let start = len.saturating_sub(TRANSCRIPT_TAIL);
    file.seek(SeekFrom::Start(start)).ok()?;
    let mut tail = Vec::new();
    file.take(TRANSCRIPT_TAIL).read_to_end(&mut tail).ok()?;
    let text = String::from_utf8_lossy(&tail);
    let mut lines = text.lines();
    if start > 0 {
        // The first line was cut by the seek.
        lines.next();
    }
    Some(lines.map(str::to_owned).collect())
}

/// The last assistant text in a JSONL transcript (Claude Code's `message` records,
/// Codex's `payload` response items, Gemini CLI's `"type": "gemini"` records), read from
/// the file's last [`TRANSCRIPT_TAIL`].
pub fn last_assistant_text(path: &Path) -> Option<String> {
    transcript_tail(path)?.iter().rev().find_map(|line| {
        let record: Value = serde_json::from_str(line).ok()?;
        assistant_text(&record)
    })
}

/// The text of one transcript record when it is the assistant's.
fn assistant_text(record: &Value) -> Option<String> {
    let message = [&record["message"], &record["payload"], record]
        .into_iter()
        .find(|m| m["role"] == "assistant" || m["type"] == "gemini")?;
    let text = match &message["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => return None,
    };
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_payload_needs_its_event_session_and_folder() {
        let ok = HookInput::parse(
            br#"{"hook_event_name":"Stop","session_id":"s","cwd":"/w","stop_hook_active":true}"#,
        )
        .unwrap();
        assert_eq!(ok.session_id, "s");
        assert!(matches!(
            HookInput::parse(b"[1]"),
            Err(InputError::Malformed(_))
        ));
        assert!(matches!(
            HookInput::parse(br#"{"hook_event_name":"Stop","session_id":" ","cwd":"/w"}"#),
            Err(InputError::Empty("session_id"))
        ));
    }

    #[test]
    fn the_last_assistant_text_of_either_clients_transcript() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let lines = [
            json!({"type": "assistant", "message": {"role": "assistant", "content": "old"}}),
            json!({"type": "response_item", "payload": {"type": "message", "role": "assistant",
                   "content": [{"type": "output_text", "text": "codex says"}]}}),
            json!({"type": "user", "message": {"role": "user", "content": "hi"}}),
        ];
        let text: String = lines.iter().map(|l| format!("{l}\nnot json\n")).collect();
        std::fs::write(&path, text).unwrap();
        assert_eq!(last_assistant_text(&path).as_deref(), Some("codex says"));
        assert_eq!(last_assistant_text(&dir.path().join("missing")), None);
    }
}
