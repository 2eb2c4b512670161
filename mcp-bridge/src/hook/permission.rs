//! The `PermissionRequest` event: the tool call the agent wants to make becomes the
//! person's question (origin "permission") — the command, the file and its change, or the
//! call's arguments — with one-tap Allow / Deny (and "Allow for this session" where the
//! client applies it), answered in the client's shape
//! (`hookSpecificOutput.decision.behavior`). Words without a pick deny the call, with the
//! words as the message the model reads.
//!
//! Invariant: the hook decides only what the person picked or wrote; an automatic reply,
//! the end of the wait and every failure leave no decision (the client's own prompt).

use std::time::Duration;

use holdline_contract::{ChoiceOption, QuestionOrigin, Reply};
use serde_json::Value;

use super::{
    HookClient, HookError,
    input::{HookInput, InputError},
    wait::{Answered, HookWait, Question, write_answer},
};
use crate::config::Config;

/// The options of a permission question, in this order (their index is the pick).
pub const ALLOW: &str = "Allow";
pub const DENY: &str = "Deny";
pub const ALLOW_FOR_SESSION: &str = "Allow for this session";
/// The longest part of a command, file content or change the question shows.
const SHOWN_INPUT: usize = 4000;
/// What the model reads when the person tapped Deny without words.
const DENIED: &str = "The person denied this tool call through holdline.";

/// `hookSpecificOutput` of a `PermissionRequest` answer (Claude Code and Codex).
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct PermissionAnswer {
    hook_specific_output: SpecificOutput,
}

#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct SpecificOutput {
    hook_event_name: &'static str,
    decision: PermissionDecision,
}

/// The decision: `allow` (with the rules to keep for the session, Claude Code only) or
/// `deny` with the message the model reads.
#[derive(Debug, PartialEq, serde::Serialize)]
#[serde(tag = "behavior", rename_all = "lowercase")]
enum PermissionDecision {
    Allow {
        #[serde(rename = "updatedPermissions", skip_serializing_if = "Option::is_none")]
        updated_permissions: Option<Value>,
    },
    Deny {
        message: String,
    },
}

/// The tool call as the payload gives it.
struct ToolCall<'a> {
    name: &'a str,
    input: &'a Value,
}

/// Answers a `PermissionRequest`: asks the person, prints their decision.
pub(super) async fn answer_permission(
    client: HookClient,
    config: &Config,
    input: &HookInput,
    limit: Duration,
) -> Result<(), HookError> {
    let call = tool_call(input)?;
    let session_rules = session_rules(client, input);
    let mut options = vec![
        option(ALLOW, "Let this call run."),
        option(DENY, "Refuse it; words you add are the reason."),
    ];
    if session_rules.is_some() {
        options.push(option(
            ALLOW_FOR_SESSION,
            "Let it run, and calls like it until the agent's session ends.",
        ));
    }
    let question = Question {
        message: describe(client, &call, &input.cwd),
        options,
        changes: None,
        origin: QuestionOrigin::Permission,
        // Each request is its own question: the same command asked twice is asked twice.
        occasion: format!("permission:{}:{}", std::process::id(), now_nanos()),
    };
    let wait = HookWait::bind(client, config, input, question, limit).await?;
    wait.ask(|reply| match decide(reply, session_rules.as_ref()) {
        Some(decision) => write_answer(&PermissionAnswer {
            hook_specific_output: SpecificOutput {
                hook_event_name: "PermissionRequest",
                decision,
            },
        }),
        None => Ok(Answered::Declined),
    })
    .await
}

fn option(label: &str, description: &str) -> ChoiceOption {
    ChoiceOption {
        label: label.to_owned(),
        description: Some(description.to_owned()),
    }
}

fn now_nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// The payload's tool call: a permission request without one is malformed.
fn tool_call(input: &HookInput) -> Result<ToolCall<'_>, HookError> {
    let name = input
        .tool_name
        .as_deref()
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .ok_or(InputError::Empty("tool_name"))?;
    let input = input
        .tool_input
        .as_ref()
        .filter(|v| !v.is_null())
        .ok_or(InputError::Empty("tool_input"))?;
    Ok(ToolCall { name, input })
}

/// The rules "Allow for this session" keeps: Claude Code's own suggestions for the call,
/// each kept for the session only. Codex refuses `updatedPermissions` (it denies the call),
/// so it is never offered there.
fn session_rules(client: HookClient, input: &HookInput) -> Option<Value> {
    if client != HookClient::ClaudeCode {
        return None;
    }
    let suggested = input.permission_suggestions.as_ref()?.as_array()?;
    let rules: Vec<Value> = suggested
        .iter()
        .filter(|s| s["type"] == "addRules" && s["behavior"] == "allow")
        .map(|s| {
            let mut rule = s.clone();
            rule["destination"] = Value::from("session");
            rule
        })
        .collect();
    (!rules.is_empty()).then_some(Value::Array(rules))
}

/// The person's reply as a decision: a pick, else words (deny with them); `None` for an
/// automatic reply, which is not the person's.
fn decide(reply: &Reply, session_rules: Option<&Value>) -> Option<PermissionDecision> {
    if reply.auto {
        return None;
    }
    let words = reply.text.trim();
    let picked = reply.choices.first().map(|c| c.index);
    Some(match picked {
        Some(0) => PermissionDecision::Allow {
            updated_permissions: None,
        },
        Some(2) if session_rules.is_some() => PermissionDecision::Allow {
            updated_permissions: session_rules.cloned(),
        },
        _ if words.is_empty() => PermissionDecision::Deny {
            message: DENIED.to_owned(),
        },
        _ => PermissionDecision::Deny {
            message: format!("The person did not allow this tool call and said: {words}"),
        },
    })
}

/// The question's words: who asks to do what, then the call itself.
fn describe(client: HookClient, call: &ToolCall<'_>, cwd: &str) -> String {
    let who = client.display();
    let input = call.input;
    let body = match (call.name, text(input, "command")) {
        ("Bash", Some(command)) | ("Shell", Some(command)) => {
            let why = text(input, "description")
                .map(|d| format!("\n\n{d}"))
                .unwrap_or_default();
            format!(
                "**{who} asks to run a command**{why}\n\n{}",
                fenced("sh", command)
            )
        }
        ("apply_patch", Some(patch)) => {
            format!(
                "**{who} asks to change files**\n\n{}",
                fenced("diff", patch)
            )
        }
        _ => match file_change(call.name, input) {
            Some((path, diff)) => format!(
                "**{who} asks to {} `{}`**\n\n{}",
                if call.name == "Write" {
                    "write"
                } else {
                    "edit"
                },
                shown_path(path, cwd),
                fenced("diff", &diff)
            ),
            None => format!(
                "**{who} asks to use `{}`**\n\n{}",
                call.name,
                fenced(
                    "json",
                    &serde_json::to_string_pretty(input).unwrap_or_default()
                )
            ),
        },
    };
    format!(
        "{body}\n\nAllow or deny it here; words without a pick deny it, and the agent reads them."
    )
}

/// A non-empty string field of a tool's input.
fn text<'v>(input: &'v Value, key: &str) -> Option<&'v str> {
    input[key].as_str().filter(|s| !s.is_empty())
}

/// An edit or write as a diff of the lines it changes: `(file, diff)`.
fn file_change<'a>(tool: &str, input: &'a Value) -> Option<(&'a str, String)> {
    let path = input["file_path"].as_str()?;
    let edits: Vec<(&str, &str)> = match tool {
        "Edit" => vec![(input["old_string"].as_str()?, input["new_string"].as_str()?)],
        "MultiEdit" => input["edits"]
            .as_array()?
            .iter()
            .filter_map(|e| Some((e["old_string"].as_str()?, e["new_string"].as_str()?)))
            .collect(),
        "Write" => vec![("", input["content"].as_str()?)],
        _ => return None,
    };
    let diff = edits
        .iter()
        .map(|(old, new)| hunk(old, new))
        .collect::<Vec<_>>()
        .join("\n");
    Some((path, diff))
}

/// One replacement as a hunk: the old lines removed, the new ones added.
fn hunk(old: &str, new: &str) -> String {
    let mut out = String::from("@@");
    for line in old.lines() {
        out.push_str("\n-");
        out.push_str(line);
    }
    for line in new.lines() {
        out.push_str("\n+");
        out.push_str(line);
    }
    out
}

/// A path inside the agent's folder is shown relative to it.
fn shown_path<'a>(path: &'a str, cwd: &str) -> &'a str {
    path.strip_prefix(cwd)
        .and_then(|rest| rest.strip_prefix('/'))
        .filter(|rest| !rest.is_empty())
        .unwrap_or(path)
}

/// `text` in a fenced block (cut at [`SHOWN_INPUT`] with a line saying so), with a fence
/// longer than any backtick run inside.
fn fenced(lang: &str, text: &str) -> String {
    let mut shown: String = text.chars().take(SHOWN_INPUT).collect();
    if shown.len() < text.len() {
        shown.push_str("\n… (cut; the whole call is in the terminal)");
    }
    let longest = shown.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    format!("{fence}{lang}\n{shown}\n{fence}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reply(v: Value) -> Reply {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn picks_and_words_become_the_clients_decision() {
        let rules = json!([{"type": "addRules", "behavior": "allow", "destination": "session",
                            "rules": [{"toolName": "Bash", "ruleContent": "npm test:*"}]}]);
        let allow = decide(
            &reply(json!({"id": "r", "choices": [{"index": 0, "label": "Allow"}]})),
            Some(&rules),
        )
        .unwrap();
        let answer = |decision| {
            serde_json::to_value(PermissionAnswer {
                hook_specific_output: SpecificOutput {
                    hook_event_name: "PermissionRequest",
                    decision,
                },
            })
            .unwrap()
        };
        assert_eq!(
            answer(allow),
            json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                   "decision": {"behavior": "allow"}}})
        );
        let session = decide(
            &reply(json!({"id": "r", "choices": [{"index": 2, "label": ALLOW_FOR_SESSION}]})),
            Some(&rules),
        )
        .unwrap();
        assert_eq!(
            answer(session)["hookSpecificOutput"]["decision"],
            json!({"behavior": "allow", "updatedPermissions": rules})
        );
        let words = decide(&reply(json!({"id": "r", "text": " use yarn "})), None).unwrap();
        assert_eq!(
            words,
            PermissionDecision::Deny {
                message: "The person did not allow this tool call and said: use yarn".into()
            }
        );
        assert_eq!(
            decide(
                &reply(json!({"id": "r", "choices": [{"index": 1, "label": "Deny"}]})),
                None
            ),
            Some(PermissionDecision::Deny {
                message: DENIED.into()
            })
        );
        assert_eq!(
            decide(
                &reply(json!({"id": "r", "text": "go on", "auto": true})),
                None
            ),
            None
        );
    }

    #[test]
    fn a_command_an_edit_and_any_other_call_are_shown() {
        let bash = json!({"command": "npm test", "description": "Run the tests"});
        let asked = describe(
            HookClient::ClaudeCode,
            &ToolCall {
                name: "Bash",
                input: &bash,
            },
            "/w",
        );
        assert!(
            asked.starts_with(
                "**Claude Code asks to run a command**\n\nRun the tests\n\n```sh\nnpm test\n```"
            ),
            "{asked}"
        );
        let edit = json!({"file_path": "/w/src/a.rs", "old_string": "let x = 1;", "new_string": "let x = 2;"});
        let asked = describe(
            HookClient::ClaudeCode,
            &ToolCall {
                name: "Edit",
                input: &edit,
            },
            "/w",
        );
        assert!(asked.contains("asks to edit `src/a.rs`"), "{asked}");
        assert!(
            asked.contains("```diff\n@@\n-let x = 1;\n+let x = 2;\n```"),
            "{asked}"
        );
        let fetch = json!({"url": "https://example.com"});
        let asked = describe(
            HookClient::Codex,
            &ToolCall {
                name: "mcp__web__fetch",
                input: &fetch,
            },
            "/w",
        );
        assert!(
            asked.contains("Codex asks to use `mcp__web__fetch`"),
            "{asked}"
        );
        assert!(fenced("sh", "a ``` b").starts_with("````sh\n"));
    }

    #[test]
    fn allow_for_this_session_only_for_claude_code_and_only_its_allow_rules() {
        let mut input = HookInput::parse(
            br#"{"hook_event_name":"PermissionRequest","session_id":"s","cwd":"/w",
                 "tool_name":"Bash","tool_input":{"command":"ls"},
                 "permission_suggestions":[
                   {"type":"addRules","behavior":"allow","destination":"localSettings",
                    "rules":[{"toolName":"Bash","ruleContent":"ls:*"}]},
                   {"type":"setMode","mode":"acceptEdits","destination":"session"}]}"#,
        )
        .unwrap();
        let rules = session_rules(HookClient::ClaudeCode, &input).unwrap();
        assert_eq!(rules.as_array().unwrap().len(), 1);
        assert_eq!(rules[0]["destination"], "session");
        assert_eq!(session_rules(HookClient::Codex, &input), None);
        input.permission_suggestions = None;
        assert_eq!(session_rules(HookClient::ClaudeCode, &input), None);
    }
}
