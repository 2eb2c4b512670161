//! What each tool takes and answers, as JSON Schemas the clients read: argument structs
//! whose `///` docs become the descriptions the model sees, and the shape of each
//! `structuredContent`.
//!
//! Invariant: every schema is portable — no `format` keywords (Ajv with default options
//! refuses unknown ones such as `uint8`) and no multi-type `type` arrays (optional fields
//! are simply not required).

use std::sync::Arc;

use holdline_contract::ChoiceOption;

use rmcp::{handler::server::common::schema_for_output, model::JsonObject};
use schemars::{JsonSchema, Schema};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `init_conversation` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = portable)]
pub struct InitParams {
    /// The title of this IDE chat, exactly as the IDE shows it (it binds the session to this chat).
    pub cursor_title: String,
    /// Absolute path of the project folder; leave out to use the IDE's workspace.
    #[serde(default)]
    pub workspace: Option<String>,
    /// true to start a new session even if this chat already has one.
    #[serde(default)]
    pub new_plan: Option<bool>,
    /// A plan label to find or bind a session by, across chats.
    #[serde(default)]
    pub plan_label: Option<String>,
    /// The IDE's thread or conversation id, if you know it.
    #[serde(default)]
    pub thread_id: Option<String>,
}

/// `select_conversation` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = portable)]
pub struct SelectParams {
    /// The session token (ct_ followed by 32 hex digits).
    pub token: String,
    /// The title of this IDE chat.
    pub cursor_title: String,
    /// Absolute path of the project folder; leave out to use the IDE's workspace.
    #[serde(default)]
    pub workspace: Option<String>,
}

/// `wait_for_user_input` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = portable)]
pub struct WaitParams {
    /// Your session token from init_conversation.
    pub token: String,
    /// What you did in this step and what you propose next, for the person to read. When
    /// calling again after a "no reply yet" result, send the same message.
    pub message: String,
    /// The `resume` value of the last wait_for_user_input result you received (it is new
    /// every time). Leave it out only on your first call.
    #[serde(default)]
    pub resume: Option<String>,
    /// The title of this IDE chat, if it changed or you know it.
    #[serde(default)]
    pub cursor_title: Option<String>,
    /// How far the whole task is, 0 to 100.
    #[serde(default)]
    #[schemars(range(min = 0, max = 100))]
    pub completion_pct: Option<u8>,
    /// The next step you would take without further instructions.
    #[serde(default)]
    pub next_step: Option<String>,
    /// Absolute path of the project folder, if you gave one to init_conversation.
    #[serde(default)]
    pub workspace: Option<String>,
    /// Longest time to wait in seconds before returning "no reply yet"; leave out to use the
    /// safe limit known for this IDE.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub timeout_sec: Option<u64>,
    /// When you ask the person to choose (A or B, which of these), offer the answers here
    /// (1 to 10), each `{"label": "…", "description": "…"}` (label up to 100 characters;
    /// description optional): they pick with one tap and may add words. The result says
    /// what they chose.
    #[serde(default)]
    #[schemars(length(min = 1, max = 10))]
    pub options: Option<Vec<ChoiceOption>>,
    /// true when the person may pick several of `options`.
    #[serde(default)]
    pub multi_select: Option<bool>,
    /// Files inside the workspace to show the person beside your message: a screenshot, a
    /// log; up to 10, 5 MiB each. Paths absolute or relative to the workspace.
    #[serde(default)]
    #[schemars(length(max = 10))]
    pub attachments: Option<Vec<String>>,
}

/// `merge_conversation` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = portable)]
pub struct MergeParams {
    /// The token of the session to merge away (it becomes read-only).
    pub from_token: String,
    /// The token of the session that receives the messages and continues.
    pub to_token: String,
    /// The title of this IDE chat.
    pub cursor_title: String,
}

/// `init_conversation`'s structured result.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = portable)]
pub struct InitOutput {
    /// The session token to pass to every other holdline tool.
    pub token: String,
    /// The session's status.
    pub status: String,
    /// Whether a new session was made (false: this chat's session was resumed).
    pub created: bool,
    /// Which chat on which machine owns the session.
    pub binding_key: String,
    /// Pass it as `resume` on your next wait_for_user_input call.
    pub resume: String,
    /// What to do next.
    pub instruction: String,
}

/// `select_conversation`'s structured result.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = portable)]
pub struct SelectOutput {
    /// The session token to use from now on.
    pub token: String,
    /// The session's status.
    pub status: String,
    /// Pass it as `resume` on your next wait_for_user_input call.
    pub resume: String,
    /// What to do next.
    pub instruction: String,
}

/// `merge_conversation`'s structured result.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = portable)]
pub struct MergeOutput {
    /// The token that continues (the target).
    pub token: String,
    /// The token that was merged away.
    pub merged_from: String,
    /// Always "merged".
    pub status: String,
    /// Pass it as `resume` on your next wait_for_user_input call.
    pub resume: String,
    /// What to do next.
    pub instruction: String,
}

/// The output schema of `T`, made portable.
pub fn output_schema<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    schema_for_output::<T>()
}

/// Removes what portable validators refuse: `format` keywords, and `type` arrays (an
/// `Option<T>` field's `["T", "null"]` becomes `"T"`; leaving it out is how it is optional).
pub fn portable(schema: &mut Schema) {
    if let Some(object) = schema.as_object_mut() {
        for value in object.values_mut() {
            make_portable(value);
        }
        object.remove("format");
        narrow_type(object);
    }
}

fn make_portable(value: &mut Value) {
    match value {
        Value::Object(object) => {
            object.remove("format");
            // An optional field's `"default": null` would contradict its narrowed type.
            if object.get("default") == Some(&Value::Null) {
                object.remove("default");
            }
            narrow_type(object);
            for v in object.values_mut() {
                make_portable(v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(make_portable),
        _ => {}
    }
}

fn narrow_type(object: &mut serde_json::Map<String, Value>) {
    if let Some(Value::Array(types)) = object.get("type") {
        let concrete: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        if concrete.len() == 1 {
            object.insert("type".into(), concrete[0].clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn has_key(value: &Value, key: &str) -> bool {
        match value {
            Value::Object(o) => o.contains_key(key) || o.values().any(|v| has_key(v, key)),
            Value::Array(a) => a.iter().any(|v| has_key(v, key)),
            _ => false,
        }
    }

    fn has_type_array(value: &Value) -> bool {
        match value {
            Value::Object(o) => {
                matches!(o.get("type"), Some(Value::Array(_))) || o.values().any(has_type_array)
            }
            Value::Array(a) => a.iter().any(has_type_array),
            _ => false,
        }
    }

    #[test]
    fn schemas_have_no_formats_and_no_type_arrays() {
        let schemas = [
            serde_json::to_value(schemars::schema_for!(WaitParams)).unwrap(),
            serde_json::to_value(schemars::schema_for!(InitParams)).unwrap(),
            Value::Object((*output_schema::<InitOutput>()).clone()),
            Value::Object((*output_schema::<MergeOutput>()).clone()),
        ];
        for s in &schemas {
            assert!(!has_key(s, "format"), "{s}");
            assert!(!has_type_array(s), "{s}");
        }
        let wait = &schemas[0]["properties"];
        assert_eq!(wait["completionPct"]["type"], "integer");
        assert_eq!(wait["completionPct"]["maximum"], 100);
        assert_eq!(wait["resume"]["type"], "string");
        // Options are inline (some clients do not follow `$ref`), each a label and maybe a
        // description.
        assert_eq!(wait["options"]["type"], "array");
        assert_eq!(wait["options"]["maxItems"], 10);
        assert_eq!(wait["options"]["items"]["required"], json!(["label"]));
        assert!(!has_key(&schemas[0], "$ref"), "{}", schemas[0]);
        assert!(wait["options"].get("default").is_none(), "{}", schemas[0]);
        assert_eq!(
            wait["options"]["items"]["description"],
            "One answer the person can pick with one tap."
        );
    }
}
