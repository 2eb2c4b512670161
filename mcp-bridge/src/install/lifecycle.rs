//! The hook files of the clients whose lifecycle hooks holdline answers, read and written:
//! Claude Code's user settings (`~/.claude/settings.json`, the layer install already uses
//! for Claude Code, so the hook reaches every project) with the stop-block cap in its
//! `env`, Codex's user `hooks.json` beside its `config.toml` (`$CODEX_HOME`, the layer
//! of holdline's MCP entry) with the trust record Codex needs before it runs a hook, and
//! the user settings of Qwen Code (`~/.qwen/settings.json`, with its cap raised to the
//! most it takes) and Gemini CLI (`~/.gemini/settings.json`), where the entry is too, and
//! Cursor's user `~/.cursor/hooks.json` beside its `mcp.json`.
//!
//! Invariant: every change goes through `hooks` (what is holdline's) and `codex_trust`
//! (which records follow it); a file that cannot be read as the client reads it is left
//! untouched with an error that says what to fix.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::{
    InstallError, codex_trust,
    codex_trust::{Trust, TrustEdit},
    file::TextFile,
    hooks::{self, BlockCap, HookEvent, Outcome},
    report_backup,
};
use crate::hook::HookClient;

/// Variables install never writes into a hook's command line: a command is shown in
/// process lists while it runs. The hook reads the hub's secret from the hub's home as
/// the bridge does; an agent key must be in the client's own environment.
const SECRET_VARS: [&str; 2] = ["HOLDLINE_SECRET", "HOLDLINE_KEY"];
/// Variables of the entry that only the tool reads (the length of one wait call, the
/// workspace changes sent with each question): the hook's command line leaves them out.
const TOOL_ONLY_VARS: [&str; 2] = ["HOLDLINE_MAX_WAIT_SEC", "HOLDLINE_SHARE_CHANGES"];

/// One client's hook files.
#[derive(Debug, Clone)]
pub struct HookTarget {
    pub client: HookClient,
    /// The JSON file with the `hooks` object.
    pub file: PathBuf,
    /// Codex's `config.toml`, where its trust records live.
    pub trust: Option<PathBuf>,
    /// Claude Code, Qwen Code: the stop-block cap install raises, in the same file.
    pub block_cap: Option<BlockCap>,
}

impl HookTarget {
    /// The events of `events` this client has; the others are said once on stderr.
    fn events_of(&self, events: &[HookEvent]) -> Vec<HookEvent> {
        let (kept, missing): (Vec<HookEvent>, Vec<HookEvent>) =
            events.iter().partition(|e| e.exists_in(self.client));
        for event in missing {
            eprintln!(
                "note: {} has no {} hook event; holdline writes none for it",
                self.client.name(),
                event.key(self.client)
            );
        }
        kept
    }
}

/// The command line of holdline's hook: `command` with the entry's non-secret holdline
/// variables (`--hub`, `--env`) in front, so the hook reaches the hub the entry reaches.
pub fn command_line(client: HookClient, command: &str, env: &[(String, String)]) -> String {
    let vars: Vec<(String, String)> = env
        .iter()
        .filter(|(k, _)| {
            k.starts_with("HOLDLINE_")
                && !SECRET_VARS.contains(&k.as_str())
                && !TOOL_ONLY_VARS.contains(&k.as_str())
        })
        .cloned()
        .collect();
    hooks::hook_command(client, command, &vars)
}

fn read_settings(file: &TextFile, path: &Path) -> Result<Map<String, Value>, InstallError> {
    match file.text.as_deref().map(str::trim) {
        None | Some("") => Ok(Map::new()),
        Some(text) => match serde_json::from_str(text) {
            Ok(Value::Object(map)) => Ok(map),
            Ok(_) => Err(refused(path, "its top level is not an object")),
            Err(e) => Err(refused(path, &e.to_string())),
        },
    }
}

fn refused(path: &Path, why: &str) -> InstallError {
    InstallError::Refused(format!(
        "{} cannot hold holdline's hooks ({why}); nothing was changed there. Fix it, or add \
         the hooks `install --print` shows by hand",
        path.display()
    ))
}

fn write_settings(file: &TextFile, settings: &Map<String, Value>) -> Result<(), InstallError> {
    let text = format!(
        "{}\n",
        serde_json::to_string_pretty(&Value::Object(settings.clone())).expect("json")
    );
    report_backup(file.write(&text, false)?);
    Ok(())
}

/// Writes holdline's hook for each of `events` (and none for the others).
pub fn install(
    target: &HookTarget,
    command: &str,
    events: &[HookEvent],
) -> Result<(), InstallError> {
    let events = target.events_of(events);
    let file = TextFile::read(&target.file)?;
    let before = read_settings(&file, &target.file)?;
    let mut after = before.clone();
    let outcomes = hooks::apply(
        &mut after,
        target.client,
        &events,
        &hooks::client_hook(target.client, command),
    )
    .map_err(|why| refused(&target.file, &why))?;
    let cap_added = match target.block_cap {
        Some(cap) => {
            hooks::set_block_cap(&mut after, cap).map_err(|why| refused(&target.file, &why))?
        }
        None => false,
    };
    let name = file.describe();
    if after != before {
        write_settings(&file, &after)?;
    }
    for (event, outcome) in outcomes {
        let what = match outcome {
            Outcome::Added => "added",
            Outcome::Updated => "updated",
            Outcome::Unchanged => "unchanged",
            Outcome::Removed => "removed (not asked for; --permissions adds it)",
            Outcome::Absent => continue,
        };
        eprintln!(
            "{name}: holdline's {} hook {what}",
            event.key(target.client)
        );
    }
    if let Some(cap) = target.block_cap.filter(|_| cap_added) {
        eprintln!("{name}: {}", cap_said(cap));
    }
    if let Some(note) = limit_note(target.client).filter(|_| !events.is_empty()) {
        eprintln!("note: {note}");
    }
    if let Some(config) = &target.trust {
        update_trust(
            config,
            &TrustEdit::between(&target.file, target.client, &before, &after),
        )?;
    }
    Ok(())
}

/// Takes holdline's hooks (and the cap install set) out; whether anything changed.
pub fn uninstall(target: &HookTarget) -> Result<bool, InstallError> {
    let file = TextFile::read(&target.file)?;
    if file.text.is_none() {
        return Ok(false);
    }
    let before = read_settings(&file, &target.file)?;
    let mut after = before.clone();
    let removed =
        hooks::remove_all(&mut after, target.client).map_err(|why| refused(&target.file, &why))?;
    let cap_removed = target
        .block_cap
        .is_some_and(|cap| hooks::unset_block_cap(&mut after, cap));
    if after == before {
        return Ok(false);
    }
    write_settings(&file, &after)?;
    for (event, outcome) in removed {
        if outcome == Outcome::Removed {
            eprintln!(
                "{}: removed holdline's {} hook",
                file.describe(),
                event.key(target.client)
            );
        }
    }
    if let Some(cap) = target.block_cap.filter(|_| cap_removed) {
        eprintln!(
            "{}: removed {} (install's value)",
            file.describe(),
            cap.name_and_value().0
        );
    }
    if let Some(config) = &target.trust {
        update_trust(
            config,
            &TrustEdit::between(&target.file, target.client, &before, &after),
        )?;
    }
    Ok(true)
}

fn update_trust(config: &Path, edit: &TrustEdit) -> Result<(), InstallError> {
    if edit.is_empty() {
        return Ok(());
    }
    let file = TextFile::read(config)?;
    let text = file.text.clone().unwrap_or_default();
    let new_text = codex_trust::apply(&text, edit).map_err(|e| {
        InstallError::Refused(format!(
            "{} is not valid TOML ({}); holdline's hooks are written but not trusted: trust \
             them in Codex's /hooks",
            config.display(),
            e.0
        ))
    })?;
    if let Some(new_text) = new_text {
        report_backup(file.write(&new_text, false)?);
        eprintln!(
            "{}: trusted holdline's hooks (hooks.state), as Codex's /hooks review would",
            file.describe()
        );
    }
    Ok(())
}

/// How long the client lets a stop hook hold its turn, when that is less than the hook's
/// own timeout says.
fn limit_note(client: HookClient) -> Option<String> {
    if let Some(limit) = client.facts().stop_wait_limit_secs {
        let held = crate::hook::held_for(std::time::Duration::from_secs(limit)).as_secs();
        return Some(format!(
            "{} waits at most {limit} s for a {} hook: the hook asks for {held} s, then lets the turn end, and a later reply waits at the hub for the next stop or wait",
            client.display(),
            client.stop_event()
        ));
    }
    (client == HookClient::Cursor).then(|| {
        format!(
            "Cursor submits at most {} replies in a row through its stop hook (loop_limit), then ends the loop until your next message",
            hooks::CURSOR_LOOP_LIMIT
        )
    })
}

/// What install says when it raised the client's stop-block cap.
fn cap_said(cap: BlockCap) -> String {
    let (k, v) = cap.name_and_value();
    match cap {
        BlockCap::ClaudeCodeEnv => {
            format!("set {k}={v} in env (no cap on the stop blocks your replies make)")
        }
        BlockCap::QwenSetting => format!(
            "set {k}: {v}, the most Qwen Code takes (at the cap it ends the turn: the {v}th reply in a row through the hook within one prompt reaches no model turn)"
        ),
    }
}

/// `install --print`: the hooks and where they go, on stderr.
pub fn print(target: &HookTarget, command: &str, events: &[HookEvent]) {
    let events = target.events_of(events);
    let mut settings = Map::new();
    hooks::apply(
        &mut settings,
        target.client,
        &events,
        &hooks::client_hook(target.client, command),
    )
    .expect("an empty settings object takes holdline's hooks");
    if let Some(cap) = target.block_cap {
        hooks::set_block_cap(&mut settings, cap).expect("an empty settings object takes the cap");
    }
    eprintln!(
        "# and these hooks into {} (merged with yours):\n{}",
        target.file.display(),
        serde_json::to_string_pretty(&Value::Object(settings.clone())).expect("json")
    );
    if let Some(config) = &target.trust {
        let edit = TrustEdit::between(&target.file, target.client, &Map::new(), &settings);
        for (key, hash) in edit.trusts {
            eprintln!(
                "# and, in {} (or trust them in Codex's /hooks; the position counts):\n\
                 [hooks.state.\"{key}\"]\ntrusted_hash = \"{hash}\"",
                config.display()
            );
        }
    }
}

/// One line per event: whether holdline's hook is in place and will run.
pub fn status(target: &HookTarget) -> Vec<String> {
    let path = target.file.display();
    let settings = match TextFile::read(&target.file).and_then(|f| read_settings(&f, &target.file))
    {
        Ok(s) => s,
        Err(e) => return vec![format!("{path}: {e}")],
    };
    let config = target
        .trust
        .as_ref()
        .and_then(|c| std::fs::read_to_string(c).ok())
        .unwrap_or_default();
    let mut lines: Vec<String> = HookEvent::ALL
        .iter()
        .filter(|e| e.exists_in(target.client))
        .map(|&event| event_status(target, &settings, &config, event))
        .collect();
    if let Some(cap) = target.block_cap {
        let (k, _) = cap.name_and_value();
        lines.push(match cap.current(&settings) {
            Some(v) => format!("{path}: {k} = {v}"),
            None => format!("{path}: {k} not set: the client ends the turn after 8 replies in a row through the hook"),
        });
    }
    if let Some(note) = limit_note(target.client) {
        lines.push(format!("{path}: {note}"));
    }
    if target.client == HookClient::Gemini {
        lines.push(format!(
            "{path}: Gemini CLI runs settings hooks only in a trusted folder (install --trust)"
        ));
    }
    lines
}

fn event_status(
    target: &HookTarget,
    settings: &Map<String, Value>,
    config: &str,
    event: HookEvent,
) -> String {
    let path = target.file.display();
    let key = event.key(target.client);
    let Some((pos, hook)) = hooks::find_ours(settings, target.client, event) else {
        return format!("{path}: no {key} hook of holdline's");
    };
    let timeout = hook.get("timeout").and_then(Value::as_u64);
    let unit = hooks::timeout_unit(target.client);
    let timeout = timeout.map_or("the client's default timeout".to_owned(), |t| {
        format!("timeout {t} {unit}")
    });
    let trust = match target
        .trust
        .as_ref()
        .map(|_| codex_trust::trust_of(config, &target.file, event, pos, &hook))
    {
        None => "",
        Some(Trust::Trusted) => ", trusted: Codex runs it",
        Some(Trust::Untrusted) => {
            "; NOT trusted: Codex skips it until it is reviewed (/hooks) or install runs again"
        }
        Some(Trust::Modified) => {
            "; changed since it was trusted: Codex skips it until it is reviewed (/hooks) or install runs again"
        }
    };
    format!("{path}: {key} hook in place ({timeout}{trust})")
}
