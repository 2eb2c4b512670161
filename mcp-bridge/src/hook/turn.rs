//! How the agent's turn ended, read from the client's transcript (Claude Code's JSONL,
//! Codex's rollout, Gemini CLI's chat JSONL): whether its last tool call was holdline's
//! `wait_for_user_input`.
//!
//! The rule: reading back from the transcript's end, text the model wrote and the
//! results of calls are passed over; the first tool call met decides — `wait_for_user_input`
//! means the model asked the person in this turn and only talked after their answer
//! ([`TurnEnd::Waited`]: the `Stop` hook stays out of the way), any other tool means it
//! acted after its last question and stopped without asking again ([`TurnEnd::Acted`]).
//! A prompt from the person before any call ends the search ([`TurnEnd::Talked`]).
//!
//! Invariant: reads at most the transcript's last [`input::TRANSCRIPT_TAIL`]; a missing
//! or unreadable transcript is [`TurnEnd::Unknown`], which asks (as a forgetful turn).

use std::path::Path;

use holdline_contract::WAIT_TOOL;
use serde_json::Value;

use super::input;

/// How a turn ended, as far as the transcript tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnEnd {
    /// The last tool call was `wait_for_user_input`; only text followed its answer.
    Waited,
    /// Another tool was called after the last `wait_for_user_input` (or none was).
    Acted,
    /// No tool was called since the person's last prompt.
    Talked,
    /// No transcript could be read.
    Unknown,
}

/// What one transcript record is, for the rule.
#[derive(Debug, PartialEq, Eq)]
enum Record {
    /// A tool call, by the tool's name as the model called it.
    Call(String),
    /// A prompt from the person (or the client's own start of a turn).
    Prompt,
    /// Text, a tool's result, bookkeeping: passed over.
    Other,
}

/// How the turn in the transcript at `path` ended.
pub fn how_it_ended(path: &Path) -> TurnEnd {
    let Some(lines) = input::transcript_tail(path) else {
        return TurnEnd::Unknown;
    };
    let records = lines
        .iter()
        .rev()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok());
    for record in records {
        match classify(&record) {
            Record::Call(name) if is_wait_tool(&name) => return TurnEnd::Waited,
            Record::Call(_) => return TurnEnd::Acted,
            Record::Prompt => return TurnEnd::Talked,
            Record::Other => {}
        }
    }
    TurnEnd::Talked
}

/// `mcp__holdline__wait_for_user_input` (Claude Code), `holdline__wait_for_user_input`
/// or the bare name (Codex, other servers' names for holdline), `mcp_holdline_…` (Gemini
/// CLI).
fn is_wait_tool(name: &str) -> bool {
    name == WAIT_TOOL || name.ends_with(&format!("_{WAIT_TOOL}"))
}

/// One record of either client's transcript.
fn classify(record: &Value) -> Record {
    // Codex: `{"type":"turn_context"}` opens each turn; `{"type":"response_item",
    // "payload":{…}}` carries messages and calls; `event_msg` records repeat them.
    if record["type"] == "turn_context" {
        return Record::Prompt;
    }
    if record["type"] == "response_item" {
        return codex_item(&record["payload"]);
    }
    // Gemini CLI: `{"type":"user"|"gemini","content":…}`, the model's calls in a
    // message's `toolCalls` (the message written again whole when they change), their
    // results in a `user` record of `functionResponse` parts.
    if record["type"] == "gemini" {
        return gemini_calls(record);
    }
    if record["type"] == "user" && record.get("message").is_none() {
        return gemini_user(&record["content"]);
    }
    // Claude Code: `{"type":"user"|"assistant","message":{"role","content"}}`.
    match record["type"].as_str() {
        Some("assistant") => claude_assistant(&record["message"]["content"]),
        Some("user") if record["isMeta"] != true => claude_user(&record["message"]["content"]),
        _ => Record::Other,
    }
}

fn codex_item(item: &Value) -> Record {
    match item["type"].as_str() {
        Some("function_call" | "custom_tool_call" | "local_shell_call") => {
            Record::Call(item["name"].as_str().unwrap_or("shell").to_owned())
        }
        Some("message") if item["role"] == "user" => Record::Prompt,
        _ => Record::Other,
    }
}

/// A Gemini CLI model message: its last tool call, else text.
fn gemini_calls(record: &Value) -> Record {
    let mut calls = record["toolCalls"].as_array().into_iter().flatten().rev();
    calls
        .find_map(|call| call["name"].as_str().map(|n| Record::Call(n.to_owned())))
        .unwrap_or(Record::Other)
}

/// A Gemini CLI user record: tools' results are passed over, anything else is a prompt.
fn gemini_user(content: &Value) -> Record {
    match content {
        Value::Array(parts) if parts.iter().all(|p| p.get("functionResponse").is_some()) => {
            Record::Other
        }
        _ => Record::Prompt,
    }
}

/// An assistant record: the last tool call among its blocks, else text.
fn claude_assistant(content: &Value) -> Record {
    let calls = content.as_array().into_iter().flatten().rev();
    calls
        .filter(|block| block["type"] == "tool_use")
        .find_map(|block| block["name"].as_str().map(|n| Record::Call(n.to_owned())))
        .unwrap_or(Record::Other)
}

/// A user record: a tool's result is passed over, anything else is the person's prompt.
fn claude_user(content: &Value) -> Record {
    match content {
        Value::String(_) => Record::Prompt,
        Value::Array(blocks) if blocks.iter().all(|b| b["type"] == "tool_result") => Record::Other,
        Value::Array(_) => Record::Prompt,
        _ => Record::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ended(records: &[Value]) -> TurnEnd {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let text: String = records.iter().map(|r| format!("{r}\n")).collect();
        std::fs::write(&path, text).unwrap();
        how_it_ended(&path)
    }

    fn claude_prompt(text: &str) -> Value {
        json!({"type": "user", "message": {"role": "user", "content": text}})
    }
    fn claude_text(text: &str) -> Value {
        json!({"type": "assistant", "message": {"role": "assistant",
               "content": [{"type": "text", "text": text}]}})
    }
    fn claude_call(name: &str) -> Value {
        json!({"type": "assistant", "message": {"role": "assistant",
               "content": [{"type": "tool_use", "id": "t1", "name": name, "input": {}}]}})
    }
    fn claude_result() -> Value {
        json!({"type": "user", "message": {"role": "user",
               "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}})
    }

    #[test]
    fn claude_code_a_wait_followed_only_by_text_stays_out_of_the_way() {
        let wait = "mcp__holdline__wait_for_user_input";
        assert_eq!(
            ended(&[
                claude_prompt("Fix it"),
                claude_call("Edit"),
                claude_result(),
                claude_call(wait),
                claude_result(),
                claude_text("Thanks, stopping here."),
            ]),
            TurnEnd::Waited
        );
        // Acted on the reply and stopped without asking again: the forgetful case.
        assert_eq!(
            ended(&[
                claude_prompt("Fix it"),
                claude_call(wait),
                claude_result(),
                claude_call("Bash"),
                claude_result(),
                claude_text("Done."),
            ]),
            TurnEnd::Acted
        );
        assert_eq!(
            ended(&[claude_prompt("Hi"), claude_text("Hello!")]),
            TurnEnd::Talked
        );
        // A call of an earlier turn does not count.
        assert_eq!(
            ended(&[
                claude_call(wait),
                claude_result(),
                claude_prompt("Next"),
                claude_text("Ok")
            ]),
            TurnEnd::Talked
        );
        assert_eq!(
            how_it_ended(Path::new("/nonexistent/t.jsonl")),
            TurnEnd::Unknown
        );
    }

    #[test]
    fn codex_rollout_calls_and_turns_are_read_alike() {
        let item =
            |payload: Value| json!({"timestamp": "t", "type": "response_item", "payload": payload});
        let call = |name: &str| {
            item(json!({"type": "function_call", "name": name, "arguments": "{}", "call_id": "c1"}))
        };
        let output = item(json!({"type": "function_call_output", "call_id": "c1", "output": "ok"}));
        let said = item(json!({"type": "message", "role": "assistant",
                               "content": [{"type": "output_text", "text": "Done."}]}));
        let event =
            json!({"type": "event_msg", "payload": {"type": "agent_message", "message": "Done."}});
        let turn = json!({"type": "turn_context", "payload": {"cwd": "/w"}});
        assert_eq!(
            ended(&[
                turn.clone(),
                call("mcp__holdline__wait_for_user_input"),
                output.clone(),
                said.clone(),
                event.clone()
            ]),
            TurnEnd::Waited
        );
        assert_eq!(
            ended(&[
                turn.clone(),
                call("holdline__wait_for_user_input"),
                output.clone(),
                call("shell"),
                output.clone(),
                said.clone()
            ]),
            TurnEnd::Acted
        );
        assert_eq!(ended(&[turn, said, event]), TurnEnd::Talked);
    }

    /// The records as Gemini CLI 0.61.0 writes them (tests/clients, run.test.mjs check 1).
    #[test]
    fn gemini_a_wait_followed_only_by_text_stays_out_and_another_call_is_asked() {
        let prompt = json!({"id": "1", "type": "user", "content": [{"text": "go"}]});
        let call = |id: &str, name: &str| json!({"id": id, "type": "gemini", "content": "", "toolCalls": [{"id": "c", "name": name}]});
        let result = |name: &str| json!({"id": "r", "type": "user", "content": [{"functionResponse": {"id": "c", "name": name}}]});
        let text = json!({"id": "9", "type": "gemini", "content": "Finished as asked."});
        let set = json!({"$set": {"lastUpdated": "now"}});
        let wait = "mcp_holdline_wait_for_user_input";
        let waited = [
            prompt.clone(),
            call("2", wait),
            result(wait),
            set.clone(),
            text.clone(),
            set,
        ];
        assert_eq!(ended(&waited), TurnEnd::Waited);
        let acted = [
            prompt.clone(),
            call("2", wait),
            result(wait),
            call("3", "replace"),
            result("replace"),
            text.clone(),
        ];
        assert_eq!(ended(&acted), TurnEnd::Acted);
        assert_eq!(
            ended(&[call("2", wait), result(wait), prompt, text]),
            TurnEnd::Talked
        );
    }
}
