//! Where the clients' stop hooks differ: the event that ends a turn, how the payload names
//! the chat and its folder, where the agent's last message is in it, and the answer that
//! continues the turn (`{"decision":"block","reason":…}` for Claude Code, Codex, Qwen Code
//! and Gemini CLI, which reads it like its `deny`; `{"followup_message":…}` for Cursor,
//! which submits it as the person's next message).
//!
//! Invariant: each client's payload is read and each client's answer written by exactly
//! one rule here; a client whose payload holds no message falls back to its transcript,
//! never to a guess.

use serde::{Deserialize, Serialize};

use super::{
    HookClient,
    input::{HookInput, InputError, StopStatus},
};

/// A stop hook's answer that continues the turn with `reason` as the model's next
/// instruction, in the client's shape.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Continuation {
    /// Claude Code, Codex, Qwen Code, Gemini CLI: the stop is refused with a reason.
    Block { decision: Decision, reason: String },
    /// Cursor: the turn ends and the message is submitted as the person's next one.
    Followup { followup_message: String },
}

/// A stop hook's decision; only `block` is ever written (no answer lets the turn end).
#[derive(Debug, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    Block,
}

/// Cursor's `stop` payload: its chat is `conversation_id`, its turn `generation_id`, its
/// folders `workspace_roots`; it carries no last message.
#[derive(Debug, Deserialize)]
struct CursorStop {
    hook_event_name: String,
    conversation_id: String,
    #[serde(default)]
    generation_id: Option<String>,
    #[serde(default)]
    workspace_roots: Vec<String>,
    #[serde(default)]
    transcript_path: Option<String>,
    status: StopStatus,
}

impl CursorStop {
    fn into_input(self) -> Result<HookInput, InputError> {
        let cwd = self
            .workspace_roots
            .into_iter()
            .find(|r| !r.trim().is_empty())
            .ok_or(InputError::Empty("workspace_roots"))?;
        HookInput {
            hook_event_name: self.hook_event_name,
            session_id: self.conversation_id,
            cwd,
            transcript_path: self.transcript_path,
            turn_id: self.generation_id,
            last_assistant_message: None,
            tool_name: None,
            tool_input: None,
            permission_suggestions: None,
            prompt_response: None,
            stop_status: Some(self.status),
        }
        .checked()
    }
}

impl HookClient {
    /// The hook event that fires when the agent is about to end its turn.
    pub fn stop_event(self) -> &'static str {
        self.facts().stop_event
    }

    /// Whether the client has a `PermissionRequest` hook (Gemini CLI and Cursor have none).
    pub fn asks_permission(self) -> bool {
        self.facts().asks_permission
    }

    /// The events this command answers for the client, as an error names them.
    pub fn events(self) -> &'static str {
        match self {
            HookClient::ClaudeCode | HookClient::Codex | HookClient::Qwen => {
                "Stop, PermissionRequest"
            }
            HookClient::Gemini => "AfterAgent",
            HookClient::Cursor => "stop",
        }
    }

    /// Reads one payload as the client sends it.
    pub fn read_input(self, bytes: &[u8]) -> Result<HookInput, InputError> {
        match self {
            HookClient::ClaudeCode | HookClient::Codex | HookClient::Qwen | HookClient::Gemini => {
                HookInput::parse(bytes)
            }
            HookClient::Cursor => serde_json::from_slice::<CursorStop>(bytes)?.into_input(),
        }
    }

    /// The answer that continues the turn with `reason`.
    pub fn continuation(self, reason: String) -> Continuation {
        match self {
            HookClient::ClaudeCode | HookClient::Codex | HookClient::Qwen | HookClient::Gemini => {
                Continuation::Block {
                    decision: Decision::Block,
                    reason,
                }
            }
            HookClient::Cursor => Continuation::Followup {
                followup_message: reason,
            },
        }
    }

    /// What the agent said last. Claude Code, Codex and Qwen Code hand it over as
    /// `last_assistant_message` (else the transcript has it). Gemini CLI's
    /// `prompt_response` joins every answer since the person's prompt, the earlier ones
    /// already asked, so its transcript's last `gemini` record comes first.
    /// Cursor's payload has no message, so its transcript (when given) says it.
    pub fn last_message(self, input: &HookInput) -> Option<String> {
        match self {
            HookClient::ClaudeCode | HookClient::Codex | HookClient::Qwen | HookClient::Cursor => {
                input.last_message()
            }
            HookClient::Gemini => input
                .transcript_path
                .as_deref()
                .and_then(|p| super::input::last_assistant_text(std::path::Path::new(p)))
                .or_else(|| {
                    let all = input.prompt_response.as_deref()?.trim();
                    (!all.is_empty()).then(|| all.to_owned())
                }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn payload(v: serde_json::Value) -> HookInput {
        HookInput::parse(v.to_string().as_bytes()).unwrap()
    }

    #[test]
    fn gemini_reads_its_transcripts_last_answer_not_the_whole_prompt_response() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("session.jsonl");
        let lines = [
            json!({"sessionId": "s", "kind": "main"}),
            json!({"id": "1", "type": "user", "content": [{"text": "go"}]}),
            json!({"id": "2", "type": "gemini", "content": "Turn 1 done."}),
            json!({"id": "3", "type": "user", "content": [{"text": "reply"}]}),
            json!({"id": "4", "type": "gemini", "content": "Turn 2 done."}),
            json!({"$set": {"lastUpdated": "now"}}),
        ];
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(&path, text).unwrap();
        let both = "Turn 1 done.\nTurn 2 done.";
        let input = payload(json!({
            "hook_event_name": "AfterAgent", "session_id": "s", "cwd": "/w",
            "transcript_path": path, "prompt_response": both,
        }));
        assert_eq!(
            HookClient::Gemini.last_message(&input).as_deref(),
            Some("Turn 2 done.")
        );
        let no_file = payload(json!({
            "hook_event_name": "AfterAgent", "session_id": "s", "cwd": "/w",
            "transcript_path": dir.path().join("gone.jsonl"), "prompt_response": both,
        }));
        assert_eq!(
            HookClient::Gemini.last_message(&no_file).as_deref(),
            Some(both)
        );
    }

    #[test]
    fn cursors_stop_payload_names_the_chat_its_first_folder_and_the_turn() {
        let stop = json!({
            "hook_event_name": "stop", "conversation_id": "c-1", "generation_id": "g-7",
            "workspace_roots": ["/w/app", "/w/lib"], "model": "m", "cursor_version": "2.0.77",
            "status": "completed", "loop_count": 0,
        });
        let input = HookClient::Cursor
            .read_input(stop.to_string().as_bytes())
            .unwrap();
        assert_eq!(input.hook_event_name, HookClient::Cursor.stop_event());
        assert_eq!(
            (input.session_id.as_str(), input.cwd.as_str()),
            ("c-1", "/w/app")
        );
        assert_eq!(input.turn_id.as_deref(), Some("g-7"));
        assert_eq!(input.stop_status, Some(StopStatus::Completed));
        assert_eq!(HookClient::Cursor.last_message(&input), None);
        let aborted = json!({"hook_event_name": "stop", "conversation_id": "c",
            "workspace_roots": ["/w"], "status": "aborted"});
        let input = HookClient::Cursor
            .read_input(aborted.to_string().as_bytes())
            .unwrap();
        assert_eq!(input.stop_status, Some(StopStatus::Aborted));
        let odd = json!({"hook_event_name": "stop", "conversation_id": "c",
            "workspace_roots": ["/w"], "status": "paused"});
        let input = HookClient::Cursor
            .read_input(odd.to_string().as_bytes())
            .unwrap();
        assert_eq!(input.stop_status, Some(StopStatus::Other));
    }

    #[test]
    fn a_cursor_payload_without_a_folder_or_chat_is_refused() {
        let read = |v: serde_json::Value| HookClient::Cursor.read_input(v.to_string().as_bytes());
        assert!(matches!(
            read(json!({"hook_event_name": "stop", "conversation_id": "c",
                "workspace_roots": [], "status": "completed"})),
            Err(InputError::Empty("workspace_roots"))
        ));
        assert!(matches!(
            read(json!({"hook_event_name": "stop", "conversation_id": " ",
                "workspace_roots": ["/w"], "status": "completed"})),
            Err(InputError::Empty("session_id"))
        ));
        // A Claude Code payload is not Cursor's.
        assert!(matches!(
            read(json!({"hook_event_name": "Stop", "session_id": "s", "cwd": "/w"})),
            Err(InputError::Malformed(_))
        ));
    }

    #[test]
    fn cursor_continues_with_a_followup_message_the_others_with_a_block() {
        let cursor = serde_json::to_value(HookClient::Cursor.continuation("go on".into())).unwrap();
        assert_eq!(cursor, json!({"followup_message": "go on"}));
        for client in [
            HookClient::ClaudeCode,
            HookClient::Codex,
            HookClient::Qwen,
            HookClient::Gemini,
        ] {
            let block = serde_json::to_value(client.continuation("go on".into())).unwrap();
            assert_eq!(block, json!({"decision": "block", "reason": "go on"}));
        }
    }

    #[test]
    fn each_client_names_its_own_end_of_turn() {
        assert_eq!(HookClient::Qwen.stop_event(), "Stop");
        assert_eq!(HookClient::Gemini.stop_event(), "AfterAgent");
        let qwen = payload(json!({
            "hook_event_name": "Stop", "session_id": "s", "cwd": "/w",
            "last_assistant_message": " Done. ", "prompt_response": "ignored",
        }));
        assert_eq!(
            HookClient::Qwen.last_message(&qwen).as_deref(),
            Some("Done.")
        );
    }
}
