//! holdline's lifecycle hooks in a client's own hook settings (Claude Code's
//! `~/.claude/settings.json`, Codex's `$CODEX_HOME/hooks.json`, Qwen Code's
//! `~/.qwen/settings.json`, Gemini CLI's `~/.gemini/settings.json`, all
//! `{"hooks": {"Stop": [{"hooks": [{"type": "command", …}]}]}}`, Gemini's event named
//! `AfterAgent`; Cursor's `~/.cursor/hooks.json`, `{"version": 1, "hooks": {"stop":
//! [{"command": …, "loop_limit": N}]}}`, a flat list with no matcher groups): one command
//! hook per event that runs
//! `holdline-mcp hook --client X --timeout-sec T`, so a turn the model ends without calling
//! holdline still reaches the person.
//!
//! Invariant: after install exactly one hook of holdline's (recognised by its command, not
//! by its place) is in each event asked for and none in the others; uninstall removes
//! exactly holdline's hooks and the lists they leave empty; the person's own hooks, every
//! other key and their order stay. A hook already in place is updated where it stands, so
//! the position Codex keys its trust by does not move on a second install.

use serde_json::{Map, Value, json};

use crate::hook::HookClient;
use holdline_contract::clients::TimeoutUnit;

/// The hook timeout install writes: a day. The hook ends its wait 30 s before it and lets
/// the turn end; a later reply waits at the hub for the next stop or wait. Claude Code,
/// Qwen Code and Gemini CLI turn `timeout` into a JavaScript timer in ms, which fires at
/// once beyond 2^31 - 1 ms (about 24.8 days), so a timeout must stay under that; a day
/// keeps an away person's reply reaching the same turn overnight.
pub const HOOK_TIMEOUT_SEC: u64 = 86_400;

/// Claude Code's cap on consecutive stop blocks, and the value install gives it: `0`
/// turns the cap off. Each block is a reply the person wrote; at the cap Claude Code ends
/// the turn instead, and a reply already acked would be lost.
pub const BLOCK_CAP_ENV: (&str, &str) = ("CLAUDE_CODE_STOP_HOOK_BLOCK_CAP", "0");

/// Qwen Code's cap setting (top level of its settings) and the highest value it takes:
/// larger values are read as 100, and 0 or less as its default 8. At the cap Qwen ends
/// the turn ("Stop hook blocked continuation 100 consecutive times"): the 100th reply in a
/// row within one prompt reaches no model turn.
pub const QWEN_BLOCK_CAP: (&str, u64) = ("stopHookBlockingCap", 100);

/// The `loop_limit` install gives Cursor's `stop` hook: how many follow-up messages in a
/// row Cursor lets the hook submit (its default is 5, and it documents no maximum; a
/// number far above the replies one person types in a sitting). Past it Cursor submits no
/// further follow-up and the agent stays stopped until the person types in Cursor again;
/// whether Cursor still runs the hook there is not measured (Cursor is not driven here),
/// and a reply such a hook took would not reach the agent.
pub const CURSOR_LOOP_LIMIT: u64 = 1000;

/// The version Cursor's `hooks.json` must declare.
const CURSOR_HOOKS_VERSION: u64 = 1;

/// Where a client keeps its cap on consecutive stop blocks, as install raises it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockCap {
    /// Claude Code: [`BLOCK_CAP_ENV`] in the settings' `env`.
    ClaudeCodeEnv,
    /// Qwen Code: [`QWEN_BLOCK_CAP`] at the settings' top level.
    QwenSetting,
}

/// The hook's time in seconds (`--timeout-sec`): a day, but the client's own limit on a
/// stop hook's wait where it has one (Qwen Code's 60 s).
pub fn hook_timeout_sec(client: HookClient) -> u64 {
    client
        .facts()
        .stop_wait_limit_secs
        .unwrap_or(HOOK_TIMEOUT_SEC)
}

/// A hook's `timeout` as the client reads it: seconds for Claude Code, Codex, Cursor and
/// Qwen Code (which reads a value below 1000 as seconds and one of 1000 or more as
/// milliseconds); milliseconds for Gemini CLI.
pub fn client_timeout(client: HookClient) -> u64 {
    match client.facts().timeout_unit {
        TimeoutUnit::Seconds => hook_timeout_sec(client),
        TimeoutUnit::Milliseconds => hook_timeout_sec(client) * 1000,
    }
}

/// The unit of [`client_timeout`], as `status` says it.
pub fn timeout_unit(client: HookClient) -> &'static str {
    match client.facts().timeout_unit {
        TimeoutUnit::Seconds => "s",
        TimeoutUnit::Milliseconds => "ms",
    }
}

/// The hook events holdline answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookEvent {
    /// The agent is about to end its turn: the person decides whether it goes on.
    Stop,
    /// The client would show its permission prompt (`install --permissions`).
    PermissionRequest,
}

impl HookEvent {
    pub const ALL: [HookEvent; 2] = [HookEvent::Stop, HookEvent::PermissionRequest];

    /// The event's key in `client`'s `hooks` object.
    pub fn key(self, client: HookClient) -> &'static str {
        match self {
            HookEvent::Stop => client.stop_event(),
            HookEvent::PermissionRequest => "PermissionRequest",
        }
    }

    /// Whether `client` has this event (Gemini CLI and Cursor have no permission event).
    pub fn exists_in(self, client: HookClient) -> bool {
        self == HookEvent::Stop || client.asks_permission()
    }

    /// The event's label in Codex's trust keys and hashes.
    pub fn codex_label(self) -> &'static str {
        match self {
            HookEvent::Stop => "stop",
            HookEvent::PermissionRequest => "permission_request",
        }
    }
}

/// Where a hook stands in its event's list: (matcher group, hook inside it).
pub type Position = (usize, usize);

/// What an edit did to one event's hook of holdline's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Added,
    Updated,
    Unchanged,
    Removed,
    /// Not there before, not asked for.
    Absent,
}

/// The hook command for `client`: the variables first (`NAME=value` words a POSIX shell
/// sets for the command alone), then `command hook --client NAME --timeout-sec T`.
pub fn hook_command(client: HookClient, command: &str, env: &[(String, String)]) -> String {
    let mut words: Vec<String> = env
        .iter()
        .map(|(k, v)| format!("{k}={}", quote(v)))
        .collect();
    words.push(quote(command));
    words.extend(
        [
            "hook",
            "--client",
            client.name(),
            "--timeout-sec",
            &hook_timeout_sec(client).to_string(),
        ]
        .map(str::to_owned),
    );
    words.join(" ")
}

fn quote(word: &str) -> String {
    shlex::try_quote(word).map_or_else(|_| word.to_owned(), |q| q.into_owned())
}

/// The hook entry holdline writes for Claude Code and Codex (timeout in seconds).
#[cfg(test)]
pub fn wanted_hook(command: &str) -> Value {
    client_hook(HookClient::Codex, command)
}

/// The hook entry holdline writes for `client`: the same shape, the timeout in its unit;
/// Cursor's carries its [`CURSOR_LOOP_LIMIT`] (its entries are command hooks unless they
/// say otherwise).
pub fn client_hook(client: HookClient, command: &str) -> Value {
    match client {
        HookClient::Cursor => json!({
            "command": command,
            "timeout": client_timeout(client),
            "loop_limit": CURSOR_LOOP_LIMIT,
        }),
        HookClient::ClaudeCode | HookClient::Codex | HookClient::Qwen | HookClient::Gemini => {
            json!({"type": "command", "command": command, "timeout": client_timeout(client)})
        }
    }
}

/// Whether `client`'s event lists hold the hooks themselves (Cursor) rather than matcher
/// groups with a `hooks` list each. A flat entry stands at (its index, 0).
fn flat(client: HookClient) -> bool {
    client == HookClient::Cursor
}

/// The hooks of one entry of an event's list: the group's `hooks`, or the entry itself.
fn entry_hooks(client: HookClient, entry: &Value) -> Vec<&Value> {
    if flat(client) {
        return vec![entry];
    }
    entry
        .get("hooks")
        .and_then(Value::as_array)
        .map(|h| h.iter().collect())
        .unwrap_or_default()
}

/// Whether `hook` is holdline's for `client`: a command hook whose words, after any
/// `NAME=value` assignments and the program, are `hook --client NAME` (and the timeout).
pub fn is_ours(client: HookClient, hook: &Value) -> bool {
    let Some(command) = hook.get("command").and_then(Value::as_str) else {
        return false;
    };
    let Some(words) = shlex::split(command) else {
        return false;
    };
    let args: Vec<&str> = words
        .iter()
        .map(String::as_str)
        .skip_while(|w| is_assignment(w))
        .skip(1)
        .collect();
    match args.as_slice() {
        ["hook", "--client", name] => *name == client.name(),
        ["hook", "--client", name, "--timeout-sec", secs] => {
            *name == client.name() && secs.parse::<u64>().is_ok()
        }
        _ => false,
    }
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit())
    })
}

/// Every command hook of `event` with its position and whether it is holdline's.
pub fn layout(
    settings: &Map<String, Value>,
    client: HookClient,
    event: HookEvent,
) -> Vec<(Position, bool)> {
    let Some(groups) = settings
        .get("hooks")
        .and_then(|h| h.get(event.key(client)))
        .and_then(Value::as_array)
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (g, group) in groups.iter().enumerate() {
        for (h, hook) in entry_hooks(client, group).into_iter().enumerate() {
            out.push(((g, h), is_ours(client, hook)));
        }
    }
    out
}

/// holdline's hook of `event`, with its position, when there is one.
pub fn find_ours(
    settings: &Map<String, Value>,
    client: HookClient,
    event: HookEvent,
) -> Option<(Position, Value)> {
    let (pos, _) = layout(settings, client, event)
        .into_iter()
        .find(|(_, ours)| *ours)?;
    let entry = &settings["hooks"][event.key(client)][pos.0];
    let hook = match flat(client) {
        true => entry.clone(),
        false => entry["hooks"][pos.1].clone(),
    };
    Some((pos, hook))
}

/// Makes `settings` hold `hook` as holdline's only hook of each event in `events` and none
/// of the others. Refuses (nothing changed) when `hooks` or an event's list is not the
/// shape the client reads.
pub fn apply(
    settings: &mut Map<String, Value>,
    client: HookClient,
    events: &[HookEvent],
    hook: &Value,
) -> Result<Vec<(HookEvent, Outcome)>, String> {
    check_shape(settings, client)?;
    if flat(client) && !events.is_empty() && !settings.contains_key("version") {
        settings.insert("version".into(), json!(CURSOR_HOOKS_VERSION));
    }
    let mut outcomes = Vec::new();
    for event in HookEvent::ALL {
        let outcome = if events.contains(&event) {
            ensure(settings, client, event, hook)
        } else {
            remove(settings, client, event)
        };
        outcomes.push((event, outcome));
    }
    drop_empty_hooks(settings, client);
    Ok(outcomes)
}

/// Takes every hook of holdline's out of `settings`; what each event lost.
pub fn remove_all(
    settings: &mut Map<String, Value>,
    client: HookClient,
) -> Result<Vec<(HookEvent, Outcome)>, String> {
    check_shape(settings, client)?;
    let outcomes = HookEvent::ALL
        .map(|event| (event, remove(settings, client, event)))
        .to_vec();
    drop_empty_hooks(settings, client);
    Ok(outcomes)
}

fn check_shape(settings: &Map<String, Value>, client: HookClient) -> Result<(), String> {
    let Some(hooks) = settings.get("hooks") else {
        return Ok(());
    };
    let Some(hooks) = hooks.as_object() else {
        return Err("\"hooks\" is not an object".into());
    };
    for event in HookEvent::ALL {
        if hooks.get(event.key(client)).is_some_and(|l| !l.is_array()) {
            return Err(format!("\"hooks.{}\" is not a list", event.key(client)));
        }
    }
    Ok(())
}

fn event_list(
    settings: &mut Map<String, Value>,
    client: HookClient,
    event: HookEvent,
) -> &mut Vec<Value> {
    let hooks = settings.entry("hooks").or_insert_with(|| json!({}));
    hooks
        .as_object_mut()
        .expect("checked: hooks is an object")
        .entry(event.key(client))
        .or_insert_with(|| json!([]))
        .as_array_mut()
        .expect("checked: the event's hooks are a list")
}

fn ensure(
    settings: &mut Map<String, Value>,
    client: HookClient,
    event: HookEvent,
    hook: &Value,
) -> Outcome {
    let Some(((g, h), current)) = find_ours(settings, client, event) else {
        let entry = match flat(client) {
            true => hook.clone(),
            false => json!({"hooks": [hook]}),
        };
        event_list(settings, client, event).push(entry);
        return Outcome::Added;
    };
    let list = event_list(settings, client, event);
    match flat(client) {
        true => list[g] = hook.clone(),
        false => list[g]["hooks"][h] = hook.clone(),
    }
    strip_ours(list, client, Some((g, h)));
    if current == *hook {
        Outcome::Unchanged
    } else {
        Outcome::Updated
    }
}

fn remove(settings: &mut Map<String, Value>, client: HookClient, event: HookEvent) -> Outcome {
    if find_ours(settings, client, event).is_none() {
        return Outcome::Absent;
    }
    strip_ours(event_list(settings, client, event), client, None);
    Outcome::Removed
}

/// Takes holdline's hooks but the one at `keep` out of `list`; a group left with no hook
/// goes too, a group that had none stays as the person wrote it.
fn strip_ours(list: &mut Vec<Value>, client: HookClient, keep: Option<Position>) {
    if flat(client) {
        let mut g = 0;
        list.retain(|entry| {
            g += 1;
            keep == Some((g - 1, 0)) || !is_ours(client, entry)
        });
        return;
    }
    let mut g = 0;
    list.retain_mut(|group| {
        let this = g;
        g += 1;
        let Some(hooks) = group.get_mut("hooks").and_then(Value::as_array_mut) else {
            return true;
        };
        let before = hooks.len();
        let mut h = 0;
        hooks.retain(|hook| {
            let at = (this, h);
            h += 1;
            keep == Some(at) || !is_ours(client, hook)
        });
        before == hooks.len() || !hooks.is_empty()
    });
}

/// Event lists left empty go, and `hooks` itself when nothing is left in it.
fn drop_empty_hooks(settings: &mut Map<String, Value>, client: HookClient) {
    let Some(hooks) = settings.get_mut("hooks").and_then(Value::as_object_mut) else {
        return;
    };
    for event in HookEvent::ALL {
        if hooks
            .get(event.key(client))
            .and_then(Value::as_array)
            .is_some_and(Vec::is_empty)
        {
            hooks.remove(event.key(client));
        }
    }
    if hooks.is_empty() {
        settings.remove("hooks");
    }
}

impl BlockCap {
    /// The cap's name and install's value, as the settings hold them.
    pub fn name_and_value(self) -> (&'static str, Value) {
        match self {
            BlockCap::ClaudeCodeEnv => (BLOCK_CAP_ENV.0, json!(BLOCK_CAP_ENV.1)),
            BlockCap::QwenSetting => (QWEN_BLOCK_CAP.0, json!(QWEN_BLOCK_CAP.1)),
        }
    }

    /// The object that holds the cap: the settings' `env`, or the settings themselves.
    fn holder(self, settings: &mut Map<String, Value>) -> Result<&mut Map<String, Value>, String> {
        match self {
            BlockCap::QwenSetting => Ok(settings),
            BlockCap::ClaudeCodeEnv => settings
                .entry("env")
                .or_insert_with(|| json!({}))
                .as_object_mut()
                .ok_or_else(|| "\"env\" is not an object".to_owned()),
        }
    }

    /// The cap's value in `settings`, when set.
    pub fn current(self, settings: &Map<String, Value>) -> Option<&Value> {
        let (name, _) = self.name_and_value();
        match self {
            BlockCap::QwenSetting => settings.get(name),
            BlockCap::ClaudeCodeEnv => settings.get("env")?.get(name),
        }
    }
}

/// Sets the client's stop-block cap unless the person set it; whether it was added.
pub fn set_block_cap(settings: &mut Map<String, Value>, cap: BlockCap) -> Result<bool, String> {
    let (name, value) = cap.name_and_value();
    let holder = cap.holder(settings)?;
    if holder.contains_key(name) {
        return Ok(false);
    }
    holder.insert(name.to_owned(), value);
    Ok(true)
}

/// Takes the cap out when it holds install's value; whether it did.
pub fn unset_block_cap(settings: &mut Map<String, Value>, cap: BlockCap) -> bool {
    let (name, value) = cap.name_and_value();
    if cap.current(settings) != Some(&value) {
        return false;
    }
    let Ok(holder) = cap.holder(settings) else {
        return false;
    };
    holder.remove(name);
    if cap == BlockCap::ClaudeCodeEnv && holder.is_empty() {
        settings.remove("env");
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    const CMD: &str = "/opt/hl/holdline-mcp";

    fn ours(client: HookClient) -> Value {
        wanted_hook(&hook_command(client, CMD, &[]))
    }

    fn person() -> Map<String, Value> {
        let v = json!({
            "model": "opus",
            "hooks": {
                "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "audit.sh"}]}],
                "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]
            },
            "theme": "dark"
        });
        v.as_object().unwrap().clone()
    }

    #[test]
    fn the_command_is_recognised_by_its_words_not_its_path() {
        let c = HookClient::ClaudeCode;
        let env = [("HOLDLINE_HUB".to_owned(), "http://127.0.0.1:1".to_owned())];
        let with_env = hook_command(c, "/a dir/holdline-mcp", &env);
        assert_eq!(
            with_env,
            "HOLDLINE_HUB=http://127.0.0.1:1 '/a dir/holdline-mcp' hook --client claude-code --timeout-sec 86400"
        );
        assert!(is_ours(c, &json!({"command": with_env})));
        assert!(is_ours(
            c,
            &json!({"command": "holdline-mcp hook --client claude-code"})
        ));
        assert!(!is_ours(HookClient::Codex, &json!({"command": with_env})));
        assert!(!is_ours(c, &json!({"command": "notify-send done"})));
        assert!(!is_ours(
            c,
            &json!({"command": "x hook --client claude-code --verbose"})
        ));
        assert!(!is_ours(
            c,
            &json!({"command": "hook --client claude-code"})
        ));
        assert!(!is_ours(c, &json!({"type": "command"})));
    }

    #[test]
    fn install_appends_holdline_after_the_persons_hooks_and_keeps_their_order() {
        let c = HookClient::ClaudeCode;
        let mut s = person();
        let got = apply(&mut s, c, &[HookEvent::Stop], &ours(c)).unwrap();
        assert_eq!(
            got,
            vec![
                (HookEvent::Stop, Outcome::Added),
                (HookEvent::PermissionRequest, Outcome::Absent)
            ]
        );
        assert_eq!(s.keys().collect::<Vec<_>>(), ["model", "hooks", "theme"]);
        let stop = s["hooks"]["Stop"].as_array().unwrap();
        assert_eq!(stop.len(), 2);
        assert_eq!(stop[0]["hooks"][0]["command"], "notify-send done");
        assert_eq!(stop[1], json!({"hooks": [ours(c)]}));
        assert_eq!(s["hooks"]["PreToolUse"], person()["hooks"]["PreToolUse"]);
        assert!(s["hooks"].get("PermissionRequest").is_none());
    }

    #[test]
    fn a_second_install_changes_nothing_and_an_update_keeps_the_place() {
        let c = HookClient::Codex;
        let mut s = person();
        apply(&mut s, c, &[HookEvent::Stop], &ours(c)).unwrap();
        let once = s.clone();
        let got = apply(&mut s, c, &[HookEvent::Stop], &ours(c)).unwrap();
        assert_eq!(got[0], (HookEvent::Stop, Outcome::Unchanged));
        assert_eq!(s, once);
        // The person added a hook after holdline's; a new command updates holdline's in place.
        s["hooks"]["Stop"]
            .as_array_mut()
            .unwrap()
            .push(json!({"hooks": [{"type": "command", "command": "late.sh"}]}));
        let moved = wanted_hook(&hook_command(c, "/new/holdline-mcp", &[]));
        let got = apply(&mut s, c, &[HookEvent::Stop], &moved).unwrap();
        assert_eq!(got[0], (HookEvent::Stop, Outcome::Updated));
        assert_eq!(find_ours(&s, c, HookEvent::Stop), Some(((1, 0), moved)));
        assert_eq!(s["hooks"]["Stop"][2]["hooks"][0]["command"], "late.sh");
    }

    #[test]
    fn permissions_add_a_hook_and_an_install_without_them_takes_it_out() {
        let c = HookClient::ClaudeCode;
        let mut s = person();
        let both = [HookEvent::Stop, HookEvent::PermissionRequest];
        let got = apply(&mut s, c, &both, &ours(c)).unwrap();
        assert_eq!(got[1], (HookEvent::PermissionRequest, Outcome::Added));
        assert_eq!(
            s["hooks"]["PermissionRequest"],
            json!([{"hooks": [ours(c)]}])
        );
        let got = apply(&mut s, c, &[HookEvent::Stop], &ours(c)).unwrap();
        assert_eq!(got[1], (HookEvent::PermissionRequest, Outcome::Removed));
        assert!(s["hooks"].get("PermissionRequest").is_none());
    }

    #[test]
    fn uninstall_removes_only_holdlines_hooks_and_gives_the_settings_back() {
        let c = HookClient::ClaudeCode;
        let mut s = person();
        apply(
            &mut s,
            c,
            &[HookEvent::Stop, HookEvent::PermissionRequest],
            &ours(c),
        )
        .unwrap();
        // A group the person shares with holdline's hook keeps the person's hook.
        s["hooks"]["Stop"][1]["hooks"]
            .as_array_mut()
            .unwrap()
            .push(json!({"type": "command", "command": "mine.sh"}));
        let got = remove_all(&mut s, c).unwrap();
        assert_eq!(
            got,
            vec![
                (HookEvent::Stop, Outcome::Removed),
                (HookEvent::PermissionRequest, Outcome::Removed)
            ]
        );
        assert_eq!(
            s["hooks"]["Stop"][1],
            json!({"hooks": [{"type": "command", "command": "mine.sh"}]})
        );
        s["hooks"]["Stop"].as_array_mut().unwrap().pop();
        assert_eq!(s, person());
        let mut empty = Map::new();
        apply(&mut empty, c, &[HookEvent::Stop], &ours(c)).unwrap();
        remove_all(&mut empty, c).unwrap();
        assert_eq!(empty, Map::new(), "an emptied hooks object goes");
        assert_eq!(
            remove_all(&mut empty, c).unwrap()[0],
            (HookEvent::Stop, Outcome::Absent)
        );
    }

    #[test]
    fn duplicates_of_holdlines_hook_collapse_into_the_first() {
        let c = HookClient::ClaudeCode;
        let mut s = Map::new();
        s.insert(
            "hooks".into(),
            json!({"Stop": [{"hooks": [ours(c)]}, {"hooks": [ours(c)]}]}),
        );
        apply(&mut s, c, &[HookEvent::Stop], &ours(c)).unwrap();
        assert_eq!(s["hooks"]["Stop"], json!([{"hooks": [ours(c)]}]));
    }

    #[test]
    fn a_shape_the_client_would_not_read_is_refused_untouched() {
        let c = HookClient::ClaudeCode;
        for bad in [json!({"hooks": []}), json!({"hooks": {"Stop": {}}})] {
            let mut s = bad.as_object().unwrap().clone();
            assert!(apply(&mut s, c, &[HookEvent::Stop], &ours(c)).is_err());
            assert_eq!(Value::Object(s), bad);
        }
    }

    #[test]
    fn gemini_gets_after_agent_and_its_timeout_in_ms() {
        let g = HookClient::Gemini;
        let mut s = person();
        let ours = client_hook(g, &hook_command(g, CMD, &[]));
        assert_eq!(ours["timeout"], 86_400_000);
        let got = apply(&mut s, g, &[HookEvent::Stop], &ours).unwrap();
        assert_eq!(got[0], (HookEvent::Stop, Outcome::Added));
        assert_eq!(s["hooks"]["AfterAgent"], json!([{"hooks": [ours]}]));
        assert_eq!(
            s["hooks"]["Stop"],
            person()["hooks"]["Stop"],
            "Gemini has no Stop: the person's stays"
        );
        remove_all(&mut s, g).unwrap();
        assert_eq!(s, person());
        assert!(!HookEvent::PermissionRequest.exists_in(g));
        assert_eq!(client_hook(HookClient::Qwen, "x")["timeout"], 60);
        assert!(hook_command(HookClient::Qwen, CMD, &[]).ends_with("--timeout-sec 60"));
        assert_eq!(client_hook(HookClient::ClaudeCode, "x")["timeout"], 86_400);
    }

    #[test]
    fn cursors_flat_list_takes_holdlines_entry_in_place_and_gives_it_back() {
        let c = HookClient::Cursor;
        let ours = client_hook(c, &hook_command(c, CMD, &[]));
        assert_eq!(ours["loop_limit"], CURSOR_LOOP_LIMIT);
        let person = json!({"version": 1, "hooks": {"stop": [{"command": "./a.sh"}]}});
        let mut s = person.as_object().unwrap().clone();
        let got = apply(&mut s, c, &[HookEvent::Stop], &ours).unwrap();
        assert_eq!(got[0], (HookEvent::Stop, Outcome::Added));
        assert_eq!(s["hooks"]["stop"], json!([{"command": "./a.sh"}, ours]));
        // A duplicate and a person's hook after holdline's: a new command updates the first
        // of holdline's where it stands, the duplicate goes, the person's stays.
        let list = s["hooks"]["stop"].as_array_mut().unwrap();
        list.push(json!({"command": "./late.sh"}));
        list.push(ours.clone());
        let moved = client_hook(c, &hook_command(c, "/new/holdline-mcp", &[]));
        let got = apply(&mut s, c, &[HookEvent::Stop], &moved).unwrap();
        assert_eq!(got[0], (HookEvent::Stop, Outcome::Updated));
        assert_eq!(
            find_ours(&s, c, HookEvent::Stop),
            Some(((1, 0), moved.clone()))
        );
        assert_eq!(
            s["hooks"]["stop"],
            json!([{"command": "./a.sh"}, moved, {"command": "./late.sh"}])
        );
        s["hooks"]["stop"].as_array_mut().unwrap().pop();
        remove_all(&mut s, c).unwrap();
        assert_eq!(Value::Object(s), person);
        let mut fresh = Map::new();
        apply(&mut fresh, c, &[HookEvent::Stop], &ours).unwrap();
        assert_eq!(
            Value::Object(fresh),
            json!({"version": 1, "hooks": {"stop": [ours]}})
        );
    }

    #[test]
    fn qwens_cap_is_raised_to_its_maximum_at_the_top_level_unless_the_person_set_it() {
        let q = BlockCap::QwenSetting;
        let mut s = person();
        assert!(set_block_cap(&mut s, q).unwrap());
        assert_eq!(s["stopHookBlockingCap"], 100);
        assert!(!set_block_cap(&mut s, q).unwrap());
        assert!(unset_block_cap(&mut s, q));
        assert_eq!(s, person());
        let mut own = person();
        own.insert("stopHookBlockingCap".into(), json!(20));
        assert!(!set_block_cap(&mut own, q).unwrap());
        assert!(!unset_block_cap(&mut own, q));
        assert_eq!(own["stopHookBlockingCap"], 20);
    }

    #[test]
    fn the_block_cap_is_set_only_where_the_person_did_not_set_it() {
        let mut s = person();
        let cc = BlockCap::ClaudeCodeEnv;
        assert!(set_block_cap(&mut s, cc).unwrap());
        assert_eq!(s["env"]["CLAUDE_CODE_STOP_HOOK_BLOCK_CAP"], "0");
        assert!(!set_block_cap(&mut s, cc).unwrap());
        assert!(unset_block_cap(&mut s, cc));
        assert_eq!(s, person());
        let mut own = person();
        own.insert(
            "env".into(),
            json!({"CLAUDE_CODE_STOP_HOOK_BLOCK_CAP": "20"}),
        );
        assert!(!set_block_cap(&mut own, cc).unwrap());
        assert!(!unset_block_cap(&mut own, cc));
        assert_eq!(own["env"]["CLAUDE_CODE_STOP_HOOK_BLOCK_CAP"], "20");
    }
}
