//! Merging holdline's server entry into the one a person already has: every key they added
//! stays, keys holdline writes are added when missing, and only the keys the command's
//! flags decide (`command`, `HOLDLINE_HUB` with `--hub`, the URL and key with `--url`,
//! everything with `--reset`) are overwritten. An entry switching between local (stdio)
//! and remote loses the other transport's keys and takes the new `type`.
//! Format-free: entries are JSON values here, whatever file they live in.

use serde_json::{Map, Value};

/// One difference `install` made to an entry, for the report.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    Added {
        path: String,
        value: Value,
    },
    Changed {
        path: String,
        from: Value,
        to: Value,
    },
    /// A key of the other transport, taken out when the entry switches.
    Removed {
        path: String,
        value: Value,
    },
}

impl Change {
    /// The dotted key path, e.g. `env.HOLDLINE_HUB`.
    pub fn path(&self) -> &str {
        match self {
            Change::Added { path, .. }
            | Change::Changed { path, .. }
            | Change::Removed { path, .. } => path,
        }
    }
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Change::Added { path, value } => write!(f, "added {path} = {}", shown(path, value)),
            Change::Changed { path, from, to } => write!(
                f,
                "changed {path}: {} -> {}",
                shown(path, from),
                shown(path, to)
            ),
            Change::Removed { path, value } => {
                write!(f, "removed {path} (was {})", shown(path, value))
            }
        }
    }
}

/// Whether a key holds a credential: an `Authorization` header, a secret, a key, a token.
fn is_secret_name(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    ["authorization", "secret", "key", "token", "password"]
        .iter()
        .any(|w| name.contains(w))
}

/// `value` as the report prints it: credentials (by their key's name) as `"<hidden>"`, so
/// the terminal and its scrollback never hold them.
fn shown(path: &str, value: &Value) -> Value {
    let last = path.rsplit('.').next().unwrap_or(path);
    if is_secret_name(last) && !value.is_object() {
        return Value::String("<hidden>".into());
    }
    match value {
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), shown(k, v))).collect())
        }
        other => other.clone(),
    }
}

/// Which of holdline's keys replace a value the person already has.
#[derive(Debug, Clone, Default)]
pub struct Overwrite {
    /// Dotted paths the flags decide (`command`, `env.HOLDLINE_HUB`, `url`, …).
    pub paths: Vec<String>,
    /// `--reset`: every key holdline writes.
    pub all: bool,
    /// Top-level keys of the other transport: an entry holding any of them switches
    /// transport, so they go and `type` takes holdline's value.
    pub other_transport: Vec<String>,
}

impl Overwrite {
    fn covers(&self, path: &str) -> bool {
        self.all || self.paths.iter().any(|p| p == path)
    }
}

/// The merged entry and what changed; `existing == None` means there was no entry.
pub fn merge(
    existing: Option<&Value>,
    wanted: &Value,
    overwrite: &Overwrite,
) -> (Value, Vec<Change>) {
    let Some(existing) = existing else {
        let changes = match wanted.as_object() {
            Some(obj) => obj
                .iter()
                .map(|(k, v)| Change::Added {
                    path: k.clone(),
                    value: v.clone(),
                })
                .collect(),
            None => Vec::new(),
        };
        return (wanted.clone(), changes);
    };
    let mut changes = Vec::new();
    let mut existing = existing.clone();
    let mut overwrite = overwrite.clone();
    if let Some(have) = existing.as_object_mut() {
        for key in &overwrite.other_transport {
            if let Some(value) = have.shift_remove(key) {
                changes.push(Change::Removed {
                    path: key.clone(),
                    value,
                });
            }
        }
        if !changes.is_empty() {
            overwrite.paths.push("type".into());
        }
    }
    let merged = merge_value(&existing, wanted, "", &overwrite, &mut changes);
    (merged, changes)
}

fn merge_value(
    existing: &Value,
    wanted: &Value,
    path: &str,
    overwrite: &Overwrite,
    changes: &mut Vec<Change>,
) -> Value {
    match (existing, wanted) {
        (Value::Object(have), Value::Object(want)) => {
            let mut out: Map<String, Value> = have.clone();
            for (key, want_v) in want {
                let sub = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                match have.get(key) {
                    None => {
                        changes.push(Change::Added {
                            path: sub,
                            value: want_v.clone(),
                        });
                        out.insert(key.clone(), want_v.clone());
                    }
                    Some(have_v) => {
                        let v = merge_value(have_v, want_v, &sub, overwrite, changes);
                        out.insert(key.clone(), v);
                    }
                }
            }
            Value::Object(out)
        }
        (have, want) if have != want && overwrite.covers(path) => {
            changes.push(Change::Changed {
                path: path.to_owned(),
                from: have.clone(),
                to: want.clone(),
            });
            want.clone()
        }
        (have, _) => have.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn person_keys_survive_and_only_flagged_keys_change() {
        let have = json!({
            "command": "/old/holdline-mcp", "args": ["-v"],
            "env": {"HOLDLINE_SECRET": "s", "HOLDLINE_MAX_WAIT_SEC": "100"},
            "timeout": 120, "mine": true,
        });
        let want = json!({
            "command": "/new/holdline-mcp", "args": [],
            "env": {"HOLDLINE_HUB": "http://h:1", "HOLDLINE_MAX_WAIT_SEC": "3570"},
            "timeout": 3600,
        });
        let overwrite = Overwrite {
            paths: vec!["command".into(), "env.HOLDLINE_HUB".into()],
            ..Overwrite::default()
        };
        let (merged, changes) = merge(Some(&have), &want, &overwrite);
        assert_eq!(
            merged,
            json!({
                "command": "/new/holdline-mcp", "args": ["-v"],
                "env": {"HOLDLINE_SECRET": "s", "HOLDLINE_MAX_WAIT_SEC": "100", "HOLDLINE_HUB": "http://h:1"},
                "timeout": 120, "mine": true,
            })
        );
        let paths: Vec<&str> = changes.iter().map(Change::path).collect();
        assert_eq!(paths, ["command", "env.HOLDLINE_HUB"]);

        let (again, changes) = merge(Some(&merged), &want, &overwrite);
        assert_eq!(again, merged);
        assert!(changes.is_empty(), "a second run changes nothing");

        let reset = Overwrite {
            all: true,
            ..Overwrite::default()
        };
        let (reset_v, _) = merge(Some(&merged), &want, &reset);
        assert_eq!(reset_v["timeout"], 3600);
        assert_eq!(
            reset_v["mine"], true,
            "--reset keeps keys holdline does not write"
        );
        assert_eq!(reset_v["env"]["HOLDLINE_SECRET"], "s");
    }

    #[test]
    fn switching_transport_drops_the_other_keys_and_takes_the_new_type() {
        let local = json!({
            "type": "stdio", "command": "/x/holdline-mcp", "args": [],
            "env": {"HOLDLINE_SECRET": "s"}, "mine": 1,
        });
        let remote = json!({
            "type": "http", "url": "http://hub:13458/mcp",
            "headers": {"Authorization": "Bearer hlk_k"},
        });
        let to_remote = Overwrite {
            paths: vec!["url".into(), "headers.Authorization".into()],
            other_transport: vec!["command".into(), "args".into(), "env".into()],
            ..Overwrite::default()
        };
        let (merged, changes) = merge(Some(&local), &remote, &to_remote);
        assert_eq!(
            merged,
            json!({"type": "http", "mine": 1, "url": "http://hub:13458/mcp",
                   "headers": {"Authorization": "Bearer hlk_k"}})
        );
        let report: Vec<String> = changes.iter().map(ToString::to_string).collect();
        assert_eq!(
            report,
            [
                "removed command (was \"/x/holdline-mcp\")",
                "removed args (was [])",
                "removed env (was {\"HOLDLINE_SECRET\":\"<hidden>\"})",
                "changed type: \"stdio\" -> \"http\"",
                "added url = \"http://hub:13458/mcp\"",
                "added headers = {\"Authorization\":\"<hidden>\"}",
            ]
        );
        // Re-run: nothing of the other transport is left, nothing changes.
        let (again, changes) = merge(Some(&merged), &remote, &to_remote);
        assert_eq!(again, merged);
        assert!(changes.is_empty(), "{changes:?}");
        // Without a switch, the person's `type` stays.
        let theirs = json!({"type": "streamable-http", "url": "http://hub:13458/mcp"});
        let (kept, _) = merge(Some(&theirs), &remote, &to_remote);
        assert_eq!(kept["type"], "streamable-http");
    }
}
