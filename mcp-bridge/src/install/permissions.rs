//! The client's own permission list, where it has one that is not part of holdline's
//! server entry: Claude Code's `permissions.allow` in `~/.claude/settings.json`. Without
//! a rule Claude Code asks before every holdline tool, and `claude -p` refuses them.
//! Invariant: install adds exactly one rule (`mcp__holdline`, every tool of holdline's
//! server) once, uninstall removes exactly that rule; every other key and rule stays.

use std::path::Path;

use serde_json::{Map, Value, json};

use super::{InstallError, SERVER_NAME, file::TextFile, report_backup};

/// The rule that allows every tool of holdline's server (Claude Code's `mcp__SERVER`).
pub fn allow_rule() -> String {
    format!("mcp__{SERVER_NAME}")
}

/// The settings file as a JSON object (empty when it is missing or blank).
fn read_settings(file: &TextFile, path: &Path) -> Result<Map<String, Value>, InstallError> {
    let text = match file.text.as_deref().map(str::trim) {
        None | Some("") => return Ok(Map::new()),
        Some(text) => text,
    };
    match serde_json::from_str(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(not_json(path, "its top level is not an object")),
        Err(e) => Err(not_json(path, &e.to_string())),
    }
}

fn not_json(path: &Path, why: &str) -> InstallError {
    InstallError::Refused(format!(
        "{} is not valid JSON for settings ({why}); fix it, or add \"{}\" to its permissions.allow yourself",
        path.display(),
        allow_rule()
    ))
}

/// `permissions.allow` of `settings`, created when missing; `None` when it is not a list.
fn allow_list(settings: &mut Map<String, Value>) -> Option<&mut Vec<Value>> {
    let permissions = settings
        .entry("permissions")
        .or_insert_with(|| json!({}))
        .as_object_mut()?;
    permissions
        .entry("allow")
        .or_insert_with(|| json!([]))
        .as_array_mut()
}

fn write_settings(file: &TextFile, settings: Map<String, Value>) -> Result<(), InstallError> {
    let text = format!(
        "{}\n",
        serde_json::to_string_pretty(&Value::Object(settings)).expect("json")
    );
    report_backup(file.write(&text, false)?);
    Ok(())
}

/// Adds holdline's rule to `path`'s `permissions.allow` unless it is there.
pub fn allow(path: &Path) -> Result<(), InstallError> {
    let file = TextFile::read(path)?;
    let mut settings = read_settings(&file, path)?;
    let rule = allow_rule();
    let list = allow_list(&mut settings)
        .ok_or_else(|| not_json(path, "permissions.allow is not a list"))?;
    if list.iter().any(|r| r.as_str() == Some(&rule)) {
        return Ok(());
    }
    list.push(json!(rule));
    write_settings(&file, settings)?;
    eprintln!(
        "{}: allowed holdline's tools ({rule} in permissions.allow)",
        file.describe()
    );
    Ok(())
}

/// Takes holdline's rule out of `path`'s `permissions.allow`; whether it was there.
pub fn disallow(path: &Path) -> Result<bool, InstallError> {
    let file = TextFile::read(path)?;
    if file.text.is_none() {
        return Ok(false);
    }
    let mut settings = read_settings(&file, path)?;
    let rule = allow_rule();
    let Some(list) = settings
        .get_mut("permissions")
        .and_then(|p| p.get_mut("allow"))
        .and_then(Value::as_array_mut)
    else {
        return Ok(false);
    };
    let before = list.len();
    list.retain(|r| r.as_str() != Some(&rule));
    if list.len() == before {
        return Ok(false);
    }
    write_settings(&file, settings)?;
    eprintln!("{}: removed {rule} from permissions.allow", file.describe());
    Ok(true)
}
