//! The lifecycle hooks `install` writes for Claude Code, Codex, Qwen Code, Gemini CLI and
//! Cursor, run as the real binary:
//! beside the person's own hooks (kept, in their order), once however often install runs,
//! `--permissions` and `--no-hooks`, Codex's trust record, `--print`, `status`, and
//! uninstall taking out exactly holdline's.

use serde_json::{Value, json};

use super::{COMMAND, Sandbox, read};

const STOP: &str = "/opt/holdline/bin/holdline-mcp hook --client claude-code --timeout-sec 86400";

fn json_file(sb: &Sandbox, rel: &str) -> Value {
    serde_json::from_str(&read(&sb.path(rel))).unwrap()
}

fn write(sb: &Sandbox, rel: &str, text: &str) {
    let path = sb.path(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn commands(doc: &Value, event: &str) -> Vec<String> {
    doc["hooks"][event]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|g| g["hooks"].as_array().cloned().unwrap_or_default())
        .map(|h| h["command"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn claude_code_gets_the_stop_hook_beside_the_persons_hooks_and_loses_only_holdlines() {
    let sb = Sandbox::new();
    let person = json!({
        "model": "opus",
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]},
        "env": {"FOO": "1"}
    });
    write(&sb, ".claude/settings.json", &person.to_string());
    let out = sb.install("claude-code", &["--hub", "http://127.0.0.1:9"]);
    assert!(out.contains("holdline's Stop hook added"), "{out}");
    let doc = json_file(&sb, ".claude/settings.json");
    let hub_stop = format!("HOLDLINE_HUB=http://127.0.0.1:9 {STOP}");
    assert_eq!(
        commands(&doc, "Stop"),
        ["notify-send done", hub_stop.as_str()]
    );
    assert_eq!(doc["hooks"]["Stop"][1]["hooks"][0]["timeout"], 86400);
    assert_eq!(
        doc["env"],
        json!({"FOO": "1", "CLAUDE_CODE_STOP_HOOK_BLOCK_CAP": "0"})
    );
    let keys: Vec<&String> = doc.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["model", "hooks", "env", "permissions"]);

    let again = sb.install("claude-code", &["--hub", "http://127.0.0.1:9"]);
    assert!(again.contains("holdline's Stop hook unchanged"), "{again}");
    assert_eq!(
        json_file(&sb, ".claude/settings.json"),
        doc,
        "a second install changes nothing"
    );

    // A new command (an upgrade moved the binary) updates the hook where it stands; the
    // entry's HOLDLINE_HUB stays in front of it, as it stays in the entry.
    let moved = [
        "install",
        "--client",
        "claude-code",
        "--command",
        "/new/holdline-mcp",
    ];
    sb.ok(&[&moved[..], &["--permissions"]].concat());
    let doc = json_file(&sb, ".claude/settings.json");
    let new_stop = hub_stop.replace(COMMAND, "/new/holdline-mcp");
    assert_eq!(
        commands(&doc, "Stop"),
        ["notify-send done", new_stop.as_str()],
        "updated in place"
    );
    assert_eq!(commands(&doc, "PermissionRequest"), [new_stop.as_str()]);
    sb.install("claude-code", &["--no-hooks"]);
    let doc = json_file(&sb, ".claude/settings.json");
    assert_eq!(commands(&doc, "Stop"), ["notify-send done"]);
    assert!(doc["hooks"].get("PermissionRequest").is_none());

    sb.install("claude-code", &["--permissions"]);
    sb.ok(&["uninstall", "--client", "claude-code"]);
    let doc = json_file(&sb, ".claude/settings.json");
    assert_eq!(doc["hooks"], person["hooks"]);
    assert_eq!(doc["env"], person["env"]);
}

#[test]
fn codex_gets_a_trusted_stop_hook_and_uninstall_gives_the_files_back() {
    let sb = Sandbox::new();
    let hooks_json =
        json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "a.sh"}]}]}});
    write(&sb, ".codex/hooks.json", &hooks_json.to_string());
    let config = "model = \"o\"\n\n[hooks.state.\"HOME/.codex/hooks.json:stop:0:0\"]\ntrusted_hash = \"sha256:aa\"\n"
        .replace("HOME", sb.path("").to_str().unwrap().trim_end_matches('/'));
    write(&sb, ".codex/config.toml", &config);
    let out = sb.install("codex", &[]);
    assert!(out.contains("trusted holdline's hooks"), "{out}");
    let doc = json_file(&sb, ".codex/hooks.json");
    let stop = STOP.replace("claude-code", "codex");
    assert_eq!(commands(&doc, "Stop"), ["a.sh", stop.as_str()]);
    let toml: toml::Table = toml::from_str(&read(&sb.path(".codex/config.toml"))).unwrap();
    let state = toml["hooks"]["state"].as_table().unwrap();
    let ours = format!("{}:stop:1:0", sb.path(".codex/hooks.json").display());
    assert!(
        state[&ours]["trusted_hash"]
            .as_str()
            .unwrap()
            .starts_with("sha256:"),
        "{state:?}"
    );
    assert_eq!(state.len(), 2, "the person's record stays: {state:?}");

    let status =
        String::from_utf8_lossy(&sb.run(&["status", "--client", "codex"]).stdout).into_owned();
    assert!(
        status.contains("Stop hook in place (timeout 86400 s, trusted: Codex runs it)"),
        "{status}"
    );
    // A record for another definition (the person edited the hook) is reported, and a
    // second install trusts holdline's hook again.
    let our_hash = state[&ours]["trusted_hash"].as_str().unwrap();
    let edited = read(&sb.path(".codex/config.toml")).replace(our_hash, "sha256:00");
    std::fs::write(sb.path(".codex/config.toml"), &edited).unwrap();
    let stale =
        String::from_utf8_lossy(&sb.run(&["status", "--client", "codex"]).stdout).into_owned();
    assert!(stale.contains("changed since it was trusted"), "{stale}");
    sb.install("codex", &[]);
    let before = read(&sb.path(".codex/config.toml"));
    sb.install("codex", &[]);
    assert_eq!(
        read(&sb.path(".codex/config.toml")),
        before,
        "a second install changes nothing"
    );

    sb.ok(&["uninstall", "--client", "codex"]);
    assert_eq!(json_file(&sb, ".codex/hooks.json"), hooks_json);
    assert_eq!(read(&sb.path(".codex/config.toml")), config);
    let status =
        String::from_utf8_lossy(&sb.run(&["status", "--client", "codex"]).stdout).into_owned();
    assert!(status.contains("no Stop hook of holdline's"), "{status}");
}

#[test]
fn print_shows_the_hooks_and_a_remote_entry_gets_none() {
    let sb = Sandbox::new();
    let out = sb.run(&[
        "install",
        "--client",
        "codex",
        "--command",
        COMMAND,
        "--print",
        "--permissions",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("\"PermissionRequest\""), "{stderr}");
    assert!(stderr.contains("trusted_hash = \"sha256:"), "{stderr}");
    assert!(
        !sb.path(".codex/hooks.json").exists(),
        "--print writes nothing"
    );

    let out = sb.ok(&[
        "install",
        "--client",
        "claude-code",
        "--url",
        "http://10.1.2.3:13458/mcp",
        "--key",
        "hlk_AAAAbbbbCCCCddddEEEEffffGGGGhhhhIIIIjjj0",
    ]);
    assert!(out.contains("no lifecycle hooks with --url"), "{out}");
    let doc = json_file(&sb, ".claude/settings.json");
    assert!(doc.get("hooks").is_none(), "{doc}");
}

#[test]
fn qwen_and_gemini_get_their_stop_hook_in_their_units_beside_the_entry_and_lose_only_holdlines() {
    let sb = Sandbox::new();
    let person = json!({
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "mine.sh"}]}]},
        "model": {"name": "x"}
    });
    write(&sb, ".qwen/settings.json", &person.to_string());
    let out = sb.install("qwen", &[]);
    assert!(out.contains("holdline's Stop hook added"), "{out}");
    assert!(out.contains("set stopHookBlockingCap: 100"), "{out}");
    let doc = json_file(&sb, ".qwen/settings.json");
    let stop = STOP.replace("claude-code", "qwen").replace("86400", "60");
    assert_eq!(commands(&doc, "Stop"), ["mine.sh", stop.as_str()]);
    assert_eq!(doc["hooks"]["Stop"][1]["hooks"][0]["timeout"], 60);
    assert_eq!(doc["stopHookBlockingCap"], 100);
    assert!(doc["mcpServers"].get("holdline").is_some(), "{doc}");
    let backups: Vec<_> = std::fs::read_dir(sb.path(".qwen"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains("holdline-backup"))
        .map(|e| read(&e.path()))
        .collect();
    assert!(
        backups.iter().any(|b| b == &person.to_string()),
        "the person's own file is kept as a backup: {backups:?}"
    );
    let status =
        String::from_utf8_lossy(&sb.run(&["status", "--client", "qwen"]).stdout).into_owned();
    assert!(
        status.contains("Stop hook in place (timeout 60 s)"),
        "{status}"
    );
    sb.ok(&["uninstall", "--client", "qwen"]);
    let doc = json_file(&sb, ".qwen/settings.json");
    assert_eq!(doc["hooks"], person["hooks"]);
    assert!(doc.get("stopHookBlockingCap").is_none(), "{doc}");

    let out = sb.install("gemini", &["--permissions", "--trust"]);
    assert!(out.contains("holdline's AfterAgent hook added"), "{out}");
    assert!(
        out.contains("gemini has no PermissionRequest hook event"),
        "{out}"
    );
    let doc = json_file(&sb, ".gemini/settings.json");
    let after_agent = STOP.replace("claude-code", "gemini");
    assert_eq!(commands(&doc, "AfterAgent"), [after_agent.as_str()]);
    assert_eq!(
        doc["hooks"]["AfterAgent"][0]["hooks"][0]["timeout"],
        86_400_000
    );
    assert!(doc["hooks"].get("PermissionRequest").is_none(), "{doc}");
    sb.ok(&["uninstall", "--client", "gemini"]);
    assert!(
        json_file(&sb, ".gemini/settings.json")
            .get("hooks")
            .is_none()
    );
}

#[test]
fn cursor_gets_a_flat_stop_hook_with_its_loop_limit_and_loses_only_holdlines() {
    let sb = Sandbox::new();
    let person = json!({
        "version": 1,
        "hooks": {
            "stop": [{"command": "./audit.sh", "loop_limit": 3}],
            "afterFileEdit": [{"command": "./format.sh"}]
        }
    });
    write(&sb, ".cursor/hooks.json", &person.to_string());
    let printed = sb.run(&[
        "install",
        "--client",
        "cursor",
        "--command",
        COMMAND,
        "--print",
    ]);
    let printed = String::from_utf8_lossy(&printed.stderr);
    assert!(printed.contains("\"loop_limit\": 1000"), "{printed}");
    assert_eq!(
        json_file(&sb, ".cursor/hooks.json"),
        person,
        "--print writes nothing"
    );

    let out = sb.install("cursor", &["--permissions"]);
    assert!(out.contains("holdline's stop hook added"), "{out}");
    assert!(
        out.contains("cursor has no PermissionRequest hook event"),
        "{out}"
    );
    let doc = json_file(&sb, ".cursor/hooks.json");
    let stop = STOP.replace("claude-code", "cursor");
    assert_eq!(
        doc["hooks"]["stop"],
        json!([
            {"command": "./audit.sh", "loop_limit": 3},
            {"command": stop, "timeout": 86400, "loop_limit": 1000}
        ])
    );
    assert_eq!(
        doc["hooks"]["afterFileEdit"],
        person["hooks"]["afterFileEdit"]
    );
    assert_eq!(doc["version"], 1);
    assert!(doc["hooks"].get("PermissionRequest").is_none(), "{doc}");
    let again = sb.install("cursor", &[]);
    assert!(again.contains("holdline's stop hook unchanged"), "{again}");
    assert_eq!(json_file(&sb, ".cursor/hooks.json"), doc);

    let status =
        String::from_utf8_lossy(&sb.run(&["status", "--client", "cursor"]).stdout).into_owned();
    assert!(
        status.contains("stop hook in place (timeout 86400 s)"),
        "{status}"
    );
    sb.ok(&["uninstall", "--client", "cursor"]);
    assert_eq!(json_file(&sb, ".cursor/hooks.json"), person);
}

#[test]
fn cursor_hooks_start_a_new_file_at_version_1() {
    let sb = Sandbox::new();
    sb.install("cursor", &[]);
    let doc = json_file(&sb, ".cursor/hooks.json");
    assert_eq!(doc["version"], 1);
    assert_eq!(doc["hooks"]["stop"].as_array().map(Vec::len), Some(1));
}
