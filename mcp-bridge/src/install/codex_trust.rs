//! Codex's trust records for holdline's hooks. Codex (0.171.0) runs a hook that is not
//! managed by an administrator only when the user's `config.toml` holds
//! `[hooks.state."<hooks.json path>:<event>:<group>:<hook>"] trusted_hash = "sha256:…"`
//! equal to the hash of the hook's definition, which its `/hooks` review writes when the
//! person trusts it; an untrusted hook is skipped, in `codex exec` too. Install writes
//! that record for holdline's own hooks, as the review would.
//!
//! Invariant: only records of holdline's hooks are written or removed; a person's record
//! whose hook moved because holdline's left its list moves with it (Codex keys the record
//! by position), so their hooks stay trusted.

use std::path::Path;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use toml_edit::{DocumentMut, Item, Table, value};

use super::codex_toml::{TomlError, parse};
use super::hooks::{HookEvent, Position, find_ours, layout};
use crate::hook::HookClient;

/// Codex's default command hook timeout, used in the hash when a hook gives none.
const DEFAULT_TIMEOUT_SEC: u64 = 600;

/// The record's key: the hooks file, the event's label and the hook's position.
pub fn key(hooks_file: &Path, event: HookEvent, (group, hook): Position) -> String {
    format!(
        "{}:{}:{group}:{hook}",
        hooks_file.display(),
        event.codex_label()
    )
}

/// The hash Codex gives a command hook without a matcher: SHA-256 of the JSON
/// `{"event_name", "hooks": [{"async", "command", "timeout", "type"}]}` with its keys sorted
/// and no spaces, as `sha256:HEX`.
pub fn hash(event: HookEvent, hook: &Value) -> String {
    let command = hook.get("command").and_then(Value::as_str).unwrap_or("");
    let timeout = hook
        .get("timeout")
        .and_then(Value::as_u64)
        .unwrap_or(DEFAULT_TIMEOUT_SEC)
        .max(1);
    let is_async = hook.get("async").and_then(Value::as_bool).unwrap_or(false);
    let text = format!(
        r#"{{"event_name":{},"hooks":[{{"async":{is_async},"command":{},"timeout":{timeout},"type":"command"}}]}}"#,
        Value::from(event.codex_label()),
        Value::from(command),
    );
    let digest = Sha256::digest(text.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// What the records need after holdline's hooks changed from `before` to `after`.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct TrustEdit {
    /// A person's hook that moved: its record goes with it.
    pub moves: Vec<(String, String)>,
    /// Where holdline's hooks stood: those records go.
    pub removes: Vec<String>,
    /// holdline's hooks now: the record and the hash it must hold.
    pub trusts: Vec<(String, String)>,
}

impl TrustEdit {
    /// The edit from the hooks file's settings `before` to `after`.
    pub fn between(
        hooks_file: &Path,
        client: HookClient,
        before: &Map<String, Value>,
        after: &Map<String, Value>,
    ) -> TrustEdit {
        let mut edit = TrustEdit::default();
        for event in HookEvent::ALL {
            let was = layout(before, client, event);
            let now = layout(after, client, event);
            let theirs = |l: &[(Position, bool)]| -> Vec<Position> {
                l.iter()
                    .filter(|(_, ours)| !ours)
                    .map(|(p, _)| *p)
                    .collect()
            };
            for (old, new) in theirs(&was).into_iter().zip(theirs(&now)) {
                if old != new {
                    edit.moves
                        .push((key(hooks_file, event, old), key(hooks_file, event, new)));
                }
            }
            let ours_before = was.iter().filter(|(_, ours)| *ours);
            edit.removes
                .extend(ours_before.map(|(p, _)| key(hooks_file, event, *p)));
            if let Some((pos, hook)) = find_ours(after, client, event) {
                edit.trusts
                    .push((key(hooks_file, event, pos), hash(event, &hook)));
            }
        }
        edit
    }

    pub fn is_empty(&self) -> bool {
        self.moves.is_empty() && self.removes.is_empty() && self.trusts.is_empty()
    }
}

/// `config_text` with `edit` applied to `[hooks.state]`; `None` when nothing changes.
pub fn apply(config_text: &str, edit: &TrustEdit) -> Result<Option<String>, TomlError> {
    let mut doc = parse(config_text)?;
    let before = doc.to_string();
    let state = state_table(&mut doc)?;
    let moved: Vec<(String, Item)> = edit
        .moves
        .iter()
        .filter_map(|(from, to)| state.get(from).map(|item| (to.clone(), item.clone())))
        .collect();
    for from in edit.moves.iter().map(|(from, _)| from).chain(&edit.removes) {
        state.remove(from);
    }
    for (to, item) in moved {
        state.insert(&to, item);
    }
    for (at, hash) in &edit.trusts {
        let record = state.entry(at).or_insert_with(|| Item::Table(Table::new()));
        let Some(record) = record.as_table_like_mut() else {
            return Err(TomlError(format!("hooks.state.\"{at}\" is not a table")));
        };
        if record.get("trusted_hash").and_then(Item::as_str) != Some(hash) {
            record.insert("trusted_hash", value(hash.as_str()));
        }
    }
    if state.is_empty() {
        drop_empty_state(&mut doc);
    }
    let after = doc.to_string();
    Ok((after != before).then_some(after))
}

/// `[hooks.state]`, created (as dotted headers only) when missing.
fn state_table(doc: &mut DocumentMut) -> Result<&mut Table, TomlError> {
    let implicit = || {
        let mut t = Table::new();
        t.set_implicit(true);
        Item::Table(t)
    };
    let hooks = doc.entry("hooks").or_insert_with(implicit);
    let Some(hooks) = hooks.as_table_mut() else {
        return Err(TomlError("`hooks` is not a table".into()));
    };
    let state = hooks.entry("state").or_insert_with(implicit);
    state
        .as_table_mut()
        .ok_or_else(|| TomlError("`hooks.state` is not a table".into()))
}

/// An emptied `[hooks.state]` goes, and `[hooks]` when it held nothing else.
fn drop_empty_state(doc: &mut DocumentMut) {
    let Some(hooks) = doc.get_mut("hooks").and_then(Item::as_table_mut) else {
        return;
    };
    hooks.remove("state");
    if hooks.is_empty() {
        doc.remove("hooks");
    }
}

/// Whether Codex will run holdline's hook of `event` at `pos`, by `config_text`'s record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trust {
    Trusted,
    /// No record: Codex asks for a review first and skips the hook until then.
    Untrusted,
    /// A record for another definition: Codex says "modified since last trusted".
    Modified,
}

pub fn trust_of(
    config_text: &str,
    hooks_file: &Path,
    event: HookEvent,
    pos: Position,
    hook: &Value,
) -> Trust {
    let Ok(doc) = parse(config_text) else {
        return Trust::Untrusted;
    };
    let record = doc
        .get("hooks")
        .and_then(|h| h.get("state"))
        .and_then(|s| s.get(key(hooks_file, event, pos)))
        .and_then(|r| r.get("trusted_hash"))
        .and_then(Item::as_str);
    match record {
        None => Trust::Untrusted,
        Some(h) if h == hash(event, hook) => Trust::Trusted,
        Some(_) => Trust::Modified,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::install::hooks::{apply as apply_hooks, remove_all, wanted_hook};

    /// Measured: Codex 0.171.0's app-server `hooks/list` gave this `currentHash` for this hook.
    #[test]
    fn the_hash_is_the_one_codex_computes() {
        let mut hook = wanted_hook("/usr/bin/holdline-mcp hook --client codex --timeout-sec 3600");
        hook["timeout"] = json!(3600);
        assert_eq!(
            hash(HookEvent::Stop, &hook),
            "sha256:91b5f606b989e9d6c814d6d5eda355d88b455a71c03faaeb7f564e6827108245"
        );
    }

    fn settings(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn install_trusts_holdlines_hook_and_uninstall_moves_the_persons_records_back() {
        let c = HookClient::Codex;
        let file = Path::new("/h/.codex/hooks.json");
        let mine = |cmd: &str| json!({"type": "command", "command": cmd});
        let person = settings(json!({"hooks": {"Stop": [{"hooks": [mine("a.sh")]}]}}));
        let ours = wanted_hook("holdline-mcp hook --client codex --timeout-sec 86400");
        let mut installed = person.clone();
        apply_hooks(&mut installed, c, &[HookEvent::Stop], &ours).unwrap();
        let edit = TrustEdit::between(file, c, &person, &installed);
        let at = "/h/.codex/hooks.json:stop:1:0".to_owned();
        assert_eq!(
            edit.trusts,
            vec![(at.clone(), hash(HookEvent::Stop, &ours))]
        );
        let config = "model = \"m\"\n\n[hooks.state.\"/h/.codex/hooks.json:stop:0:0\"]\ntrusted_hash = \"sha256:aa\"\n";
        let trusted = apply(config, &edit).unwrap().unwrap();
        assert!(
            trusted.starts_with(config),
            "the person's text stays: {trusted}"
        );
        assert_eq!(
            trust_of(&trusted, file, HookEvent::Stop, (1, 0), &ours),
            Trust::Trusted
        );
        assert_eq!(
            apply(
                &trusted,
                &TrustEdit::between(file, c, &installed, &installed)
            )
            .unwrap(),
            None,
            "a second install changes nothing"
        );

        // The person adds a hook after holdline's and trusts it; uninstall moves its record.
        let mut later = installed.clone();
        later["hooks"]["Stop"]
            .as_array_mut()
            .unwrap()
            .push(json!({"hooks": [mine("b.sh")]}));
        let config = format!(
            "{trusted}\n[hooks.state.\"/h/.codex/hooks.json:stop:2:0\"]\ntrusted_hash = \"sha256:bb\"\n"
        );
        let mut removed = later.clone();
        remove_all(&mut removed, c).unwrap();
        let edit = TrustEdit::between(file, c, &later, &removed);
        let after = apply(&config, &edit).unwrap().unwrap();
        assert_eq!(
            records(&after),
            [
                ("/h/.codex/hooks.json:stop:0:0", "sha256:aa"),
                ("/h/.codex/hooks.json:stop:1:0", "sha256:bb")
            ]
            .map(|(k, h)| (k.to_owned(), h.to_owned()))
        );
    }

    /// `[hooks.state]`'s records as (key, trusted_hash).
    fn records(config: &str) -> Vec<(String, String)> {
        let doc: toml::Table = toml::from_str(config).unwrap();
        doc["hooks"]["state"]
            .as_table()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v["trusted_hash"].as_str().unwrap().to_owned()))
            .collect()
    }

    #[test]
    fn an_emptied_state_leaves_no_tables_behind_and_a_wrong_record_is_modified() {
        let c = HookClient::Codex;
        let file = Path::new("/h/hooks.json");
        let ours = wanted_hook("holdline-mcp hook --client codex --timeout-sec 86400");
        let mut installed = Map::new();
        apply_hooks(&mut installed, c, &[HookEvent::Stop], &ours).unwrap();
        let config = "model = \"m\"\n";
        let trusted = apply(
            config,
            &TrustEdit::between(file, c, &Map::new(), &installed),
        )
        .unwrap()
        .unwrap();
        let wrong = trusted.replace("sha256:", "sha256:0");
        assert_eq!(
            trust_of(&wrong, file, HookEvent::Stop, (0, 0), &ours),
            Trust::Modified
        );
        assert_eq!(
            trust_of(config, file, HookEvent::Stop, (0, 0), &ours),
            Trust::Untrusted
        );
        let back = apply(
            &trusted,
            &TrustEdit::between(file, c, &installed, &Map::new()),
        )
        .unwrap()
        .unwrap();
        assert_eq!(back.trim_end(), config.trim_end());
    }
}
