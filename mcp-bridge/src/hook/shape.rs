//! Where the clients' stop hooks differ: the event that ends a turn and where the agent's
//! last message is in its payload. The answer that continues the turn is the same for all
//! (`{"decision":"block","reason":…}`, which Gemini CLI reads like its `deny`).
//!
//! Invariant: each client's payload is read by exactly one rule here; a client whose
//! payload holds no message falls back to its transcript, never to a guess.

use super::{HookClient, input::HookInput};

impl HookClient {
    /// The hook event that fires when the agent is about to end its turn.
    pub fn stop_event(self) -> &'static str {
        match self {
            HookClient::ClaudeCode | HookClient::Codex | HookClient::Qwen => "Stop",
            HookClient::Gemini => "AfterAgent",
        }
    }

    /// Whether the client has a `PermissionRequest` hook (Gemini CLI has none).
    pub fn asks_permission(self) -> bool {
        self != HookClient::Gemini
    }

    /// The events this command answers for the client, as an error names them.
    pub fn events(self) -> &'static str {
        match self {
            HookClient::ClaudeCode | HookClient::Codex | HookClient::Qwen => {
                "Stop, PermissionRequest"
            }
            HookClient::Gemini => "AfterAgent",
        }
    }

    /// What the agent said last. Claude Code, Codex and Qwen Code hand it over as
    /// `last_assistant_message` (else the transcript has it). Gemini CLI's
    /// `prompt_response` joins every answer since the person's prompt, the earlier ones
    /// already asked, so its transcript's last `gemini` record comes first.
    pub fn last_message(self, input: &HookInput) -> Option<String> {
        match self {
            HookClient::ClaudeCode | HookClient::Codex | HookClient::Qwen => input.last_message(),
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
