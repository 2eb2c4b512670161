//! `holdline-mcp install` / `uninstall`, run as the real binary against a temporary home
//! for every client: a fresh file, a file with other servers (0600, behind a symlink),
//! a re-run after the person edited holdline's entry, and uninstall giving the file back.
//! The remote entry (`--url`, `--key`) is tested in `install/remote.rs`, the lifecycle
//! hooks in `install/hooks.rs`.

mod hooks;
mod remote;

use std::{
    os::unix::fs::PermissionsExt,
    path::{Path, PathBuf},
    process::{Command, Output},
};

use anyhow::Context;
use holdline_contract::clients::CLIENT_NAMES;
use serde_json::{Value, json};
use tempfile::TempDir;

const COMMAND: &str = "/opt/holdline/bin/holdline-mcp";

#[derive(Clone, Copy, Debug, PartialEq)]
enum Fmt {
    Json(&'static str),
    Toml,
    Yaml,
    /// Mistral Vibe's `[[mcp_servers]]` tables, each with its `name`.
    VibeToml,
}

#[derive(Clone, Copy, Debug)]
struct ClientCase {
    name: &'static str,
    /// Config path: under the home, or under the project with a `proj:` prefix.
    config: &'static str,
    fmt: Fmt,
    rule: &'static str,
    /// The rule is a section of a file the person shares (else a file of holdline's own).
    rule_section: bool,
    /// The per-server timeout key and value install writes, if the client has one.
    timeout: Option<(&'static str, u64)>,
    /// The key of the server's environment.
    env_key: &'static str,
}

/// What install writes for each client of the contract's table, in its order: the list
/// is the table's (a client added there does not compile here until it has a case, and
/// [`the_cases_are_the_tables_clients`] checks the names); the paths and shapes are this
/// test's own, so the installer's entries are checked against them, not against themselves.
const CLIENTS: [ClientCase; CLIENT_NAMES.len()] = [
    ClientCase {
        name: "cursor",
        config: ".cursor/mcp.json",
        fmt: Fmt::Json("mcpServers"),
        rule: "proj:.cursor/rules/holdline.mdc",
        rule_section: false,
        timeout: Some(("timeout", 600)),
        env_key: "env",
    },
    ClientCase {
        name: "claude-code",
        config: ".claude.json",
        fmt: Fmt::Json("mcpServers"),
        rule: ".claude/CLAUDE.md",
        rule_section: true,
        // No timeout: progress keeps Claude Code's only other limit, its idle watchdog, away.
        timeout: None,
        env_key: "env",
    },
    ClientCase {
        name: "codex",
        config: ".codex/config.toml",
        fmt: Fmt::Toml,
        rule: ".codex/AGENTS.md",
        rule_section: true,
        timeout: Some(("tool_timeout_sec", 3600)),
        env_key: "env",
    },
    ClientCase {
        name: "vscode",
        config: ".config/Code/User/mcp.json",
        fmt: Fmt::Json("servers"),
        rule: "proj:.github/instructions/holdline.instructions.md",
        rule_section: false,
        timeout: None,
        env_key: "env",
    },
    ClientCase {
        name: "windsurf",
        config: ".codeium/windsurf/mcp_config.json",
        fmt: Fmt::Json("mcpServers"),
        rule: ".codeium/windsurf/memories/global_rules.md",
        rule_section: true,
        timeout: None,
        env_key: "env",
    },
    ClientCase {
        name: "trae",
        config: ".config/Trae/User/mcp.json",
        fmt: Fmt::Json("mcpServers"),
        rule: "proj:.trae/rules/project_rules.md",
        rule_section: true,
        timeout: None,
        env_key: "env",
    },
    ClientCase {
        name: "cline",
        config: ".cline/data/settings/cline_mcp_settings.json",
        fmt: Fmt::Json("mcpServers"),
        rule: "proj:.clinerules/holdline.md",
        rule_section: false,
        timeout: Some(("timeout", 3600)),
        env_key: "env",
    },
    ClientCase {
        name: "gemini",
        config: ".gemini/settings.json",
        fmt: Fmt::Json("mcpServers"),
        rule: ".gemini/GEMINI.md",
        rule_section: true,
        timeout: Some(("timeout", 3_600_000)),
        env_key: "env",
    },
    ClientCase {
        name: "qwen",
        config: ".qwen/settings.json",
        fmt: Fmt::Json("mcpServers"),
        rule: ".qwen/QWEN.md",
        rule_section: true,
        timeout: Some(("timeout", 3_600_000)),
        env_key: "env",
    },
    ClientCase {
        name: "copilot",
        config: ".copilot/mcp-config.json",
        fmt: Fmt::Json("mcpServers"),
        rule: ".copilot/copilot-instructions.md",
        rule_section: true,
        timeout: None,
        env_key: "env",
    },
    ClientCase {
        name: "opencode",
        config: ".config/opencode/opencode.json",
        fmt: Fmt::Json("mcp"),
        rule: ".config/opencode/AGENTS.md",
        rule_section: true,
        timeout: None,
        env_key: "environment",
    },
    ClientCase {
        name: "continue",
        config: ".continue/config.yaml",
        fmt: Fmt::Yaml,
        rule: "proj:.continue/rules/holdline.md",
        rule_section: false,
        timeout: None,
        env_key: "env",
    },
    ClientCase {
        name: "kilo",
        config: ".config/kilo/kilo.json",
        fmt: Fmt::Json("mcp"),
        rule: ".config/kilo/AGENTS.md",
        rule_section: true,
        timeout: None,
        env_key: "environment",
    },
    ClientCase {
        name: "droid",
        config: ".factory/mcp.json",
        fmt: Fmt::Json("mcpServers"),
        rule: ".factory/AGENTS.md",
        rule_section: true,
        timeout: None,
        env_key: "env",
    },
    ClientCase {
        name: "mistral-vibe",
        config: ".vibe/config.toml",
        fmt: Fmt::VibeToml,
        rule: ".vibe/AGENTS.md",
        rule_section: true,
        timeout: Some(("tool_timeout_sec", 3600)),
        env_key: "env",
    },
    ClientCase {
        name: "kimi-code",
        config: ".kimi-code/mcp.json",
        fmt: Fmt::Json("mcpServers"),
        rule: ".kimi-code/AGENTS.md",
        rule_section: true,
        timeout: Some(("toolTimeoutMs", 3_600_000)),
        env_key: "env",
    },
    ClientCase {
        name: "openhands",
        config: ".openhands/mcp.json",
        fmt: Fmt::Json("mcpServers"),
        rule: ".openhands/skills/holdline.md",
        rule_section: false,
        // The SDK ends every call at 300 s whatever the entry says.
        timeout: None,
        env_key: "env",
    },
    ClientCase {
        name: "roo-code",
        config: ".config/Code/User/globalStorage/rooveterinaryinc.roo-cline/settings/mcp_settings.json",
        fmt: Fmt::Json("mcpServers"),
        rule: "proj:.roo/rules/holdline.md",
        rule_section: false,
        timeout: Some(("timeout", 3600)),
        env_key: "env",
    },
    ClientCase {
        name: "zed",
        config: ".config/zed/settings.json",
        fmt: Fmt::Json("context_servers"),
        rule: "proj:AGENTS.md",
        rule_section: true,
        timeout: None,
        env_key: "env",
    },
];

#[test]
fn the_cases_are_the_tables_clients() {
    assert_eq!(CLIENTS.map(|c| c.name), CLIENT_NAMES);
}

/// A temporary home and project, and the bridge binary run inside them.
struct Sandbox {
    _dir: TempDir,
    home: PathBuf,
    project: PathBuf,
    elsewhere: PathBuf,
}

impl Sandbox {
    fn new() -> Sandbox {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let project = dir.path().join("project");
        let elsewhere = dir.path().join("dotfiles");
        for d in [&home, &project, &elsewhere] {
            std::fs::create_dir_all(d).unwrap();
        }
        Sandbox {
            _dir: dir,
            home,
            project,
            elsewhere,
        }
    }

    fn path(&self, rel: &str) -> PathBuf {
        match rel.strip_prefix("proj:") {
            Some(r) => self.project.join(r),
            None => self.home.join(rel),
        }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_holdline-mcp"));
        cmd.args(args)
            .current_dir(&self.project)
            .env("HOME", &self.home)
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("CODEX_HOME")
            .env_remove("APPDATA");
        for v in ["CLINE_MCP_SETTINGS_PATH", "CLINE_DATA_DIR", "CLINE_DIR"] {
            cmd.env_remove(v);
        }
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{args:?} failed: {stderr}");
        stderr
    }

    fn install(&self, client: &str, extra: &[&str]) -> String {
        let mut args = vec!["install", "--client", client, "--command", COMMAND];
        args.extend_from_slice(extra);
        self.ok(&args)
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The whole config file as JSON.
fn parse(fmt: Fmt, text: &str) -> Value {
    match fmt {
        Fmt::Json(_) => serde_json::from_str(text).unwrap(),
        Fmt::Toml | Fmt::VibeToml => {
            serde_json::to_value(toml::from_str::<toml::Value>(text).unwrap()).unwrap()
        }
        Fmt::Yaml => serde_yaml_ng::from_str(text).unwrap(),
    }
}

fn servers(fmt: Fmt, doc: &Value) -> Vec<(String, Value)> {
    let key = match fmt {
        Fmt::Json(key) => key,
        Fmt::Toml | Fmt::VibeToml => "mcp_servers",
        Fmt::Yaml => "mcpServers",
    };
    // A table of servers by name (JSON, Codex), or a list of servers with `name` (Vibe, Continue).
    if let Some(by_name) = doc[key].as_object() {
        return by_name
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
    }
    doc[key]
        .as_array()
        .map(|l| {
            l.iter()
                .map(|v| (v["name"].as_str().unwrap_or("").to_owned(), v.clone()))
                .collect()
        })
        .unwrap_or_default()
}

fn holdline(fmt: Fmt, text: &str) -> Option<Value> {
    servers(fmt, &parse(fmt, text))
        .into_iter()
        .find(|(n, _)| n == "holdline")
        .map(|(_, v)| v)
}

/// A config file as the client itself would have left it, with another server in it.
fn with_other_server(fmt: Fmt) -> String {
    match fmt {
        Fmt::Json(key) => {
            let v = json!({"theme": "dark", key: {"other": {"command": "x", "args": ["--flag"]}}, "zzz": [1, 2]});
            format!("{}\n", serde_json::to_string_pretty(&v).unwrap())
        }
        Fmt::Toml => "# my settings\nmodel = \"o3\"\n\n[mcp_servers.other]\ncommand = \"x\" # mine\nargs = [\"--flag\"]\n".into(),
        Fmt::Yaml => "name: mine\nversion: 1.0.0\nschema: v1\nmodels:\n  - name: m\n    provider: openai\nmcpServers:\n  - name: other\n    command: x # mine\n\nrules:\n  - be terse\n".into(),
        Fmt::VibeToml => "# my settings\nactive_model = \"devstral\"\n\n[[mcp_servers]]\nname = \"other\"\ntransport = \"stdio\"\ncommand = \"x\" # mine\n".into(),
    }
}

/// Holdline's `[[mcp_servers]]` table in Vibe's `config.toml`.
pub(crate) fn vibe_entry(doc: &mut toml_edit::DocumentMut) -> &mut toml_edit::Table {
    doc["mcp_servers"]
        .as_array_of_tables_mut()
        .unwrap()
        .iter_mut()
        .find(|t| t.get("name").and_then(|n| n.as_str()) == Some("holdline"))
        .unwrap()
}

/// The person's own edit of holdline's entry: a secret in its environment and a key of theirs.
fn edit_entry(case: &ClientCase, text: &str) -> String {
    match case.fmt {
        Fmt::Json(key) => {
            let mut v: Value = serde_json::from_str(text).unwrap();
            let e = &mut v[key]["holdline"];
            e[case.env_key]["HOLDLINE_SECRET"] = json!("s3cret");
            e["mine"] = json!(true);
            format!("{}\n", serde_json::to_string_pretty(&v).unwrap())
        }
        Fmt::Toml => {
            let mut doc: toml_edit::DocumentMut = text.parse().unwrap();
            let e = &mut doc["mcp_servers"]["holdline"];
            e["env"]["HOLDLINE_SECRET"] = toml_edit::value("s3cret");
            e["mine"] = toml_edit::value(true);
            doc.to_string()
        }
        Fmt::VibeToml => {
            let mut doc: toml_edit::DocumentMut = text.parse().unwrap();
            let e = vibe_entry(&mut doc);
            e["env"]["HOLDLINE_SECRET"] = toml_edit::value("s3cret");
            e["mine"] = toml_edit::value(true);
            doc.to_string()
        }
        Fmt::Yaml => {
            let mut v: Value = serde_yaml_ng::from_str(text).unwrap();
            let list = v["mcpServers"].as_array_mut().unwrap();
            let e = list.iter_mut().find(|e| e["name"] == "holdline").unwrap();
            e["env"]["HOLDLINE_SECRET"] = json!("s3cret");
            e["mine"] = json!(true);
            serde_yaml_ng::to_string(&v).unwrap()
        }
    }
}

fn entry_command(entry: &Value) -> String {
    match &entry["command"] {
        Value::Array(a) => a[0].as_str().unwrap().to_owned(),
        v => v.as_str().unwrap().to_owned(),
    }
}

fn owner(path: &Path) -> (u32, u32) {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).unwrap();
    (m.uid(), m.gid())
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn fresh_install_writes_each_client_s_own_shape() {
    for case in CLIENTS {
        let sb = Sandbox::new();
        let out = sb.install(case.name, &[]);
        let config = sb.path(case.config);
        let entry = holdline(case.fmt, &read(&config))
            .unwrap_or_else(|| panic!("{}: no holdline entry in {}", case.name, config.display()));
        assert_eq!(entry_command(&entry), COMMAND, "{}", case.name);
        assert!(
            out.contains("added holdline's entry"),
            "{}: {out}",
            case.name
        );
        match case.timeout {
            Some((key, value)) => assert_eq!(entry[key], json!(value), "{}: {entry}", case.name),
            None => assert!(entry.get("timeout").is_none(), "{}: {entry}", case.name),
        }
        let max_wait = entry[case.env_key]["HOLDLINE_MAX_WAIT_SEC"].as_str();
        let expected_wait = match case.timeout {
            Some((_, 3600 | 3_600_000)) => Some("3570"),
            _ => None,
        };
        assert_eq!(max_wait, expected_wait, "{}", case.name);
        let rule = read(&sb.path(case.rule));
        assert!(
            rule.contains(
                "the same token, the same message and the `resume` value the result gave"
            ),
            "{}: {rule}",
            case.name
        );
        assert_eq!(rule.contains("<!-- holdline:begin -->"), case.rule_section);
    }
}

#[test]
fn client_specific_keys() {
    let sb = Sandbox::new();
    sb.install("codex", &[]);
    let codex = holdline(Fmt::Toml, &read(&sb.path(".codex/config.toml"))).unwrap();
    assert_eq!(codex["default_tools_approval_mode"], "approve");
    sb.install("copilot", &[]);
    let copilot = holdline(
        Fmt::Json("mcpServers"),
        &read(&sb.path(".copilot/mcp-config.json")),
    )
    .unwrap();
    assert_eq!(copilot["type"], "local");
    assert_eq!(copilot["tools"], json!(["*"]));
    sb.install("opencode", &[]);
    let opencode = holdline(
        Fmt::Json("mcp"),
        &read(&sb.path(".config/opencode/opencode.json")),
    )
    .unwrap();
    assert_eq!(opencode["type"], "local");
    assert_eq!(opencode["command"], json!([COMMAND]));
    assert_eq!(opencode["enabled"], true);
    sb.install("cline", &[]);
    let ext = sb.path(
        ".config/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json",
    );
    let cline =
        holdline(Fmt::Json("mcpServers"), &read(&ext)).expect("the VS Code extension's file too");
    assert_eq!(cline["autoApprove"].as_array().unwrap().len(), 4);
    assert_eq!(cline["disabled"], false);
}

/// Droid: the server entry in `~/.factory/mcp.json` as `droid mcp add` writes it, and the
/// autonomy levels `droid exec` needs to run the tools in `~/.factory/settings.json`,
/// beside the person's own settings, which uninstall leaves as they were.
/// Mistral Vibe splits a string `command` as a shell would: found by the real-client suite
/// run from a clone under a folder with a space (`mcp_transport_failed`, no server).
#[test]
fn a_command_with_a_space_stays_one_word_where_the_client_splits_it() {
    let spaced = "/opt/hold line/holdline-mcp";
    for (client, fmt, config, written) in [
        (
            "mistral-vibe",
            Fmt::VibeToml,
            ".vibe/config.toml",
            "'/opt/hold line/holdline-mcp'",
        ),
        (
            "claude-code",
            Fmt::Json("mcpServers"),
            ".claude.json",
            spaced,
        ),
    ] {
        let sb = Sandbox::new();
        sb.ok(&["install", "--client", client, "--command", spaced]);
        let entry = holdline(fmt, &read(&sb.path(config))).unwrap();
        assert_eq!(entry_command(&entry), written, "{client}");
        if client == "mistral-vibe" {
            assert_eq!(shlex::split(written), Some(vec![spaced.to_owned()]));
            // A second run sees the same entry: nothing to change.
            let again = sb.ok(&["install", "--client", client, "--command", spaced]);
            assert!(again.contains("unchanged"), "{again}");
        }
    }
}

#[test]
fn droid_gets_its_entry_and_tool_levels_and_uninstall_keeps_its_settings() {
    let sb = Sandbox::new();
    let settings = sb.path(".factory/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    let own = "{\n  \"model\": \"custom:Mine-0\",\n  \"mcpAutonomyOverrides\": {\"linear\": {\"defaultLevel\": \"high\"}}\n}\n";
    std::fs::write(&settings, own).unwrap();
    sb.install("droid", &[]);
    let droid = holdline(
        Fmt::Json("mcpServers"),
        &read(&sb.path(".factory/mcp.json")),
    )
    .unwrap();
    assert_eq!(droid["type"], "stdio");
    assert_eq!(droid["disabled"], false);
    let levels = holdline(Fmt::Json("mcpAutonomyOverrides"), &read(&settings)).unwrap();
    assert_eq!(
        levels,
        json!({"tools": {"init_conversation": "low", "select_conversation": "low", "wait_for_user_input": "low"}})
    );
    let doc: Value = serde_json::from_str(&read(&settings)).unwrap();
    assert_eq!(doc["model"], "custom:Mine-0");
    assert_eq!(
        doc["mcpAutonomyOverrides"]["linear"]["defaultLevel"],
        "high"
    );
    // A remote entry: the key goes into mcp.json only.
    sb.ok(&[
        "install",
        "--client",
        "droid",
        "--url",
        "http://127.0.0.1:1/mcp",
        "--key",
        "hlk_AAAAbbbbCCCCddddEEEEffffGGGGhhhhIIIIjjj0",
    ]);
    assert!(!read(&settings).contains("hlk_"));
    sb.ok(&["uninstall", "--client", "droid"]);
    assert_eq!(read(&settings), own);
    assert!(
        !sb.path(".factory/mcp.json").exists()
            || holdline(
                Fmt::Json("mcpServers"),
                &read(&sb.path(".factory/mcp.json"))
            )
            .is_none()
    );
}

#[test]
fn client_folders_follow_their_environment_variables() {
    let sb = Sandbox::new();
    let elsewhere = sb.elsewhere.clone();
    let run = |client: &str, var: &str, value: &Path| {
        let out = sb
            .command(&["install", "--client", client, "--command", COMMAND])
            .env(var, value)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    run("cline", "CLINE_DIR", &elsewhere.join("cline"));
    assert!(
        elsewhere
            .join("cline/data/settings/cline_mcp_settings.json")
            .is_file()
    );
    run(
        "cline",
        "CLINE_MCP_SETTINGS_PATH",
        &elsewhere.join("mcp.json"),
    );
    assert!(elsewhere.join("mcp.json").is_file());
    run("codex", "CODEX_HOME", &elsewhere.join("codex"));
    assert!(elsewhere.join("codex/config.toml").is_file());
    assert!(elsewhere.join("codex/AGENTS.md").is_file());
    run("opencode", "XDG_CONFIG_HOME", &elsewhere.join("xdg"));
    assert!(elsewhere.join("xdg/opencode/opencode.json").is_file());
    // --config: the file given to `cn --config`.
    let cn = elsewhere.join("cn.yaml");
    sb.install("continue", &["--config", cn.to_str().unwrap()]);
    assert!(holdline(Fmt::Yaml, &read(&cn)).is_some());
}

/// Other servers kept, 0600 kept, a symlinked file written through, and uninstall
/// gives back the very bytes of the config and of a shared rule file.
#[test]
fn existing_private_symlinked_files_survive_install_and_uninstall() {
    for case in CLIENTS {
        let sb = Sandbox::new();
        let link = sb.path(case.config);
        let target = sb.elsewhere.join(format!("{}-config", case.name));
        let original = with_other_server(case.fmt);
        std::fs::write(&target, &original).unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).unwrap();
        // As root (CI), the file belongs to someone else: install must give it back to them.
        let as_root = owner(&target).0 == 0;
        if as_root {
            std::os::unix::fs::chown(&target, Some(4321), Some(4321)).unwrap();
        }
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let rule = sb.path(case.rule);
        let rule_original = "# Mine\n\nBe terse.\n";
        if case.rule_section {
            std::fs::create_dir_all(rule.parent().unwrap()).unwrap();
            std::fs::write(&rule, rule_original).unwrap();
        }

        sb.install(case.name, &[]);
        assert!(link.is_symlink(), "{}: the link was replaced", case.name);
        assert_eq!(mode(&target), 0o600, "{}: mode changed", case.name);
        if as_root {
            assert_eq!(owner(&target), (4321, 4321), "{}: owner changed", case.name);
        }
        let text = read(&target);
        let mut names: Vec<String> = servers(case.fmt, &parse(case.fmt, &text))
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        names.sort();
        assert_eq!(names, ["holdline", "other"], "{}", case.name);

        let out = sb.ok(&["uninstall", "--client", case.name]);
        assert!(
            out.contains("removed holdline's entry"),
            "{}: {out}",
            case.name
        );
        assert!(link.is_symlink(), "{}", case.name);
        assert_eq!(
            read(&target),
            original,
            "{}: uninstall changed other bytes",
            case.name
        );
        assert_eq!(mode(&target), 0o600, "{}", case.name);
        if case.rule_section {
            assert_eq!(read(&rule), rule_original, "{}", case.name);
        } else {
            assert!(!rule.exists(), "{}: the rule file stayed", case.name);
        }
        let again = sb.ok(&["uninstall", "--client", case.name]);
        assert!(again.contains("nothing changed"), "{}: {again}", case.name);
    }
}

/// A second run keeps what the person added to holdline's entry and changes only what
/// the flags say, printing each change.
#[test]
fn rerun_keeps_the_person_s_keys() {
    for case in CLIENTS {
        let sb = Sandbox::new();
        sb.install(case.name, &[]);
        let config = sb.path(case.config);
        std::fs::write(&config, edit_entry(&case, &read(&config))).unwrap();

        let out = sb.install(case.name, &["--hub", "http://127.0.0.1:1"]);
        let entry = holdline(case.fmt, &read(&config)).unwrap();
        assert_eq!(
            entry[case.env_key]["HOLDLINE_SECRET"], "s3cret",
            "{}",
            case.name
        );
        assert_eq!(entry["mine"], true, "{}", case.name);
        assert_eq!(
            entry[case.env_key]["HOLDLINE_HUB"], "http://127.0.0.1:1",
            "{}",
            case.name
        );
        assert!(
            out.contains(&format!("added {}.HOLDLINE_HUB", case.env_key)),
            "{}: {out}",
            case.name
        );

        let before = read(&config);
        let out = sb.install(case.name, &[]);
        assert!(out.contains("up to date"), "{}: {out}", case.name);
        assert_eq!(
            read(&config),
            before,
            "{}: a rerun rewrote the file",
            case.name
        );

        let out = sb.ok(&[
            "install",
            "--client",
            case.name,
            "--command",
            "/new/holdline-mcp",
        ]);
        assert!(out.contains("changed command"), "{}: {out}", case.name);
        let entry = holdline(case.fmt, &read(&config)).unwrap();
        assert_eq!(entry_command(&entry), "/new/holdline-mcp", "{}", case.name);
        assert_eq!(
            entry[case.env_key]["HOLDLINE_SECRET"], "s3cret",
            "{}",
            case.name
        );
    }
}

#[test]
fn print_writes_one_valid_document_and_no_file() {
    for case in CLIENTS {
        let sb = Sandbox::new();
        let out = sb
            .command(&[
                "install",
                "--client",
                case.name,
                "--command",
                COMMAND,
                "--print",
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", case.name);
        let stdout = String::from_utf8(out.stdout).unwrap();
        let entry =
            holdline(case.fmt, &stdout).unwrap_or_else(|| panic!("{}: {stdout}", case.name));
        assert_eq!(entry_command(&entry), COMMAND, "{}", case.name);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&sb.path(case.config).display().to_string()),
            "{}: {stderr}",
            case.name
        );
        assert_eq!(
            std::fs::read_dir(&sb.home).unwrap().count(),
            0,
            "{}",
            case.name
        );
    }
}

#[test]
fn env_flags_set_the_entry_s_environment() {
    let sb = Sandbox::new();
    sb.install(
        "codex",
        &["--env", "HOLDLINE_MAX_WAIT_SEC=8", "--env", "X=a=b"],
    );
    let config = sb.path(".codex/config.toml");
    let entry = holdline(Fmt::Toml, &read(&config)).unwrap();
    assert_eq!(entry["env"]["HOLDLINE_MAX_WAIT_SEC"], "8");
    assert_eq!(entry["env"]["X"], "a=b");
    // Without the flag a re-run keeps it; with it the value changes.
    sb.install("codex", &[]);
    assert_eq!(
        holdline(Fmt::Toml, &read(&config)).unwrap()["env"]["HOLDLINE_MAX_WAIT_SEC"],
        "8"
    );
    let out = sb.install("codex", &["--env", "HOLDLINE_MAX_WAIT_SEC=9"]);
    assert!(out.contains("changed env.HOLDLINE_MAX_WAIT_SEC"), "{out}");
    sb.install("opencode", &["--env", "A=1"]);
    let oc = holdline(
        Fmt::Json("mcp"),
        &read(&sb.path(".config/opencode/opencode.json")),
    )
    .unwrap();
    assert_eq!(oc["environment"]["A"], "1");
    let bad = sb.run(&["install", "--client", "codex", "--env", "novalue"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("KEY=VALUE"));
}

/// `--share-changes` turns on sharing the workspace's changes in every client's entry,
/// whatever its file format; without it a re-run leaves the person's choice alone.
#[test]
fn share_changes_sets_the_variable_in_every_client_s_entry() {
    for case in CLIENTS {
        let sb = Sandbox::new();
        sb.install(case.name, &["--share-changes"]);
        let config = sb.path(case.config);
        let entry = holdline(case.fmt, &read(&config)).unwrap();
        assert_eq!(
            entry[case.env_key]["HOLDLINE_SHARE_CHANGES"], "1",
            "{}: {entry}",
            case.name
        );
        sb.install(case.name, &[]);
        let entry = holdline(case.fmt, &read(&config)).unwrap();
        assert_eq!(
            entry[case.env_key]["HOLDLINE_SHARE_CHANGES"], "1",
            "{}",
            case.name
        );
    }
    let sb = Sandbox::new();
    sb.install("cursor", &[]);
    let entry = holdline(Fmt::Json("mcpServers"), &read(&sb.path(".cursor/mcp.json"))).unwrap();
    assert!(
        entry["env"].get("HOLDLINE_SHARE_CHANGES").is_none(),
        "off by default: {entry}"
    );
}

/// The command `install --print` writes for Claude Code when `--command` is not given.
fn default_entry_command(mut cmd: Command) -> String {
    let out = cmd
        .args(["install", "--client", "claude-code", "--print"])
        .env_remove("HOLDLINE_MCP_LAUNCHER")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    entry_command(&holdline(Fmt::Json("mcpServers"), &stdout).unwrap())
}

#[test]
fn the_default_command_is_the_path_that_survives_upgrades() {
    let sb = Sandbox::new();
    let own = Path::new(env!("CARGO_BIN_EXE_holdline-mcp"))
        .canonicalize()
        .unwrap();
    // Run by its own path: that path.
    assert_eq!(
        default_entry_command(sb.command(&[])),
        own.display().to_string()
    );
    // Run by name through a link on PATH (pipx's ~/.local/bin): the link, not the venv.
    let shims = sb.elsewhere.join("bin");
    std::fs::create_dir(&shims).unwrap();
    std::os::unix::fs::symlink(&own, shims.join("holdline-mcp")).unwrap();
    let mut by_name = Command::new("holdline-mcp");
    by_name
        .env("PATH", &shims)
        .env("HOME", &sb.home)
        .current_dir(&sb.project);
    assert_eq!(
        default_entry_command(by_name),
        shims.join("holdline-mcp").display().to_string()
    );
    // Run by the npm launcher: the launcher's path (npm's bin shim), when it exists.
    let launcher = sb.elsewhere.join("npm-bin-holdline-mcp");
    std::fs::write(&launcher, "#!/usr/bin/env node\n").unwrap();
    let mut via_npm = sb.command(&[]);
    via_npm.env("HOLDLINE_MCP_LAUNCHER", &launcher);
    let out = via_npm
        .args(["install", "--client", "claude-code", "--print"])
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let entry = holdline(Fmt::Json("mcpServers"), &stdout).unwrap();
    assert_eq!(entry_command(&entry), launcher.display().to_string());
    // A launcher path that is gone is not written.
    let mut stale = sb.command(&["install", "--client", "claude-code", "--print"]);
    stale.env("HOLDLINE_MCP_LAUNCHER", sb.elsewhere.join("gone"));
    let stdout = String::from_utf8(stale.output().unwrap().stdout).unwrap();
    let entry = holdline(Fmt::Json("mcpServers"), &stdout).unwrap();
    assert_eq!(entry_command(&entry), own.display().to_string());
}

#[test]
fn jsonc_in_holdline_s_entry_is_refused_cleanly() {
    let sb = Sandbox::new();
    let config = sb.path(".cursor/mcp.json");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    let text = "{\n  // mine\n  \"mcpServers\": {\n    \"holdline\": {\"command\": \"x\", /* old */}\n  }\n}\n";
    std::fs::write(&config, text).unwrap();
    let out = sb.run(&["install", "--client", "cursor", "--command", COMMAND]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("comments or trailing commas"), "{stderr}");
    assert!(
        stderr.trim_end().ends_with('}'),
        "ends with the entry to paste: {stderr}"
    );
    assert!(
        !stderr.contains("at line"),
        "no stray parser message: {stderr}"
    );
    assert_eq!(read(&config), text, "nothing changed");

    // Comments elsewhere are kept; holdline's entry goes in beside them.
    let text =
        "{\n  // mine\n  \"mcpServers\": {\n    \"other\": {\"command\": \"x\"}, // keep\n  }\n}\n";
    std::fs::write(&config, text).unwrap();
    sb.install("cursor", &[]);
    let installed = read(&config);
    assert!(
        installed.contains("// mine") && installed.contains("// keep"),
        "{installed}"
    );
    sb.ok(&["uninstall", "--client", "cursor"]);
    assert_eq!(read(&config), text);

    std::fs::write(&config, "{\n  \"mcpServers\": {\n    bad\n  }\n}\n").unwrap();
    let out = sb.run(&["install", "--client", "cursor", "--command", COMMAND]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("is not valid JSON (line 3, column 5"),
        "{stderr}"
    );
}

#[test]
fn gemini_trust_is_offered_and_given() {
    let sb = Sandbox::new();
    let out = sb.install("gemini", &[]);
    assert!(out.contains("--trust"), "{out}");
    assert!(!sb.path(".gemini/trustedFolders.json").exists());
    let out = sb.install("gemini", &["--trust"]);
    let trusted: Value =
        serde_json::from_str(&read(&sb.path(".gemini/trustedFolders.json"))).unwrap();
    let project = std::path::absolute(&sb.project).unwrap();
    assert_eq!(trusted[project.to_str().unwrap()], "TRUST_FOLDER", "{out}");
    let out = sb.install("gemini", &[]);
    assert!(!out.contains("--trust"), "already trusted: {out}");
}

#[test]
fn uninstall_all_removes_every_client_and_nothing_else() {
    let sb = Sandbox::new();
    let mine = sb.path(".claude/CLAUDE.md");
    std::fs::create_dir_all(mine.parent().unwrap()).unwrap();
    std::fs::write(&mine, "# Mine\n").unwrap();
    for case in CLIENTS {
        sb.install(case.name, &[]);
    }
    sb.ok(&["uninstall", "--all"]);
    for case in CLIENTS {
        let config = sb.path(case.config);
        assert_eq!(holdline(case.fmt, &read(&config)), None, "{}", case.name);
        if !case.rule_section {
            assert!(!sb.path(case.rule).exists(), "{}", case.name);
        }
    }
    assert_eq!(read(&mine), "# Mine\n");
    let out = sb.run(&["uninstall"]);
    assert!(!out.status.success(), "uninstall needs --client or --all");

    // A broken file is reported, and the others are still cleaned.
    for case in CLIENTS {
        sb.install(case.name, &[]);
    }
    let broken = sb.path(".cursor/mcp.json");
    std::fs::write(&broken, "{ not json").unwrap();
    let out = sb.run(&["uninstall", "--all"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("mcp.json is not valid JSON"), "{stderr}");
    assert_eq!(
        holdline(Fmt::Toml, &read(&sb.path(".codex/config.toml"))),
        None
    );
    assert_eq!(read(&broken), "{ not json");
}

#[test]
fn install_print_is_valid_for_every_client() -> anyhow::Result<()> {
    let home = TempDir::new()?;
    for client in [
        "cursor",
        "claude-code",
        "codex",
        "vscode",
        "windsurf",
        "trae",
        "cline",
        "gemini",
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_holdline-mcp"))
            .args([
                "install",
                "--client",
                client,
                "--print",
                "--hub",
                "http://10.1.2.3:13458",
            ])
            .env("HOME", home.path())
            .env_remove("CODEX_HOME")
            .output()?;
        assert!(
            out.status.success(),
            "{client}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8(out.stdout)?;
        let entry: Value = if client == "codex" {
            let t: toml::Table =
                toml::from_str(&stdout).with_context(|| format!("{client}: {stdout}"))?;
            serde_json::to_value(&t["mcp_servers"]["holdline"])?
        } else {
            let v: Value =
                serde_json::from_str(&stdout).with_context(|| format!("{client}: {stdout}"))?;
            let key = if client == "vscode" {
                "servers"
            } else {
                "mcpServers"
            };
            v[key]["holdline"].clone()
        };
        assert!(
            entry["command"].as_str().unwrap().ends_with("holdline-mcp"),
            "{client}: {entry}"
        );
        assert_eq!(
            entry["env"]["HOLDLINE_HUB"], "http://10.1.2.3:13458",
            "{client}"
        );
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("wait_for_user_input"),
            "{client}: the rule is shown"
        );
        // --print writes nothing.
        assert_eq!(std::fs::read_dir(home.path())?.count(), 0, "{client}");
    }
    Ok(())
}

#[test]
fn install_writes_merges_and_is_idempotent() -> anyhow::Result<()> {
    let home = TempDir::new()?;
    let project = TempDir::new()?;
    let cfg = home.path().join(".cursor/mcp.json");
    std::fs::create_dir_all(cfg.parent().unwrap())?;
    std::fs::write(&cfg, r#"{"mcpServers":{"other":{"command":"x"}}}"#)?;
    let run = || {
        Command::new(env!("CARGO_BIN_EXE_holdline-mcp"))
            .args(["install", "--client", "cursor", "--project"])
            .arg(project.path())
            .env("HOME", home.path())
            .output()
    };
    let first = run()?;
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let second = run()?;
    assert!(String::from_utf8_lossy(&second.stderr).contains("unchanged"));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&cfg)?)?;
    assert_eq!(v["mcpServers"]["other"]["command"], "x");
    assert!(v["mcpServers"]["holdline"]["command"].is_string());
    let rule = std::fs::read_to_string(project.path().join(".cursor/rules/holdline.mdc"))?;
    assert!(rule.contains("alwaysApply: true") && rule.contains("wait_for_user_input"));
    let backups = std::fs::read_dir(cfg.parent().unwrap())?
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.file_name().to_string_lossy().contains("holdline-backup"))
        })
        .count();
    assert_eq!(
        backups, 1,
        "one backup, from the one run that changed the file"
    );
    Ok(())
}

/// `~/.claude/settings.json`'s `permissions.allow`, as a list of strings.
fn claude_allow(sb: &Sandbox) -> Vec<String> {
    let doc: Value = serde_json::from_str(&read(&sb.path(".claude/settings.json"))).unwrap();
    serde_json::from_value(doc["permissions"]["allow"].clone()).unwrap()
}

/// Claude Code asks before every MCP tool it has no rule for (`claude -p` refuses them):
/// install allows holdline's own tools (`mcp__holdline`) in the user settings, keeping the
/// person's rules and keys, once however often it runs; uninstall takes out only that rule.
#[test]
fn claude_code_is_allowed_holdline_s_tools_and_uninstall_takes_only_that_rule() {
    let sb = Sandbox::new();
    let settings = sb.path(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(
        &settings,
        r#"{"model": "opus", "permissions": {"allow": ["Bash(ls:*)"], "deny": ["Read(./.env)"]}}"#,
    )
    .unwrap();
    let out = sb.install("claude-code", &[]);
    assert!(
        out.contains("mcp__holdline"),
        "install says what it allowed: {out}"
    );
    assert_eq!(claude_allow(&sb), ["Bash(ls:*)", "mcp__holdline"]);
    sb.install("claude-code", &[]);
    assert_eq!(
        claude_allow(&sb),
        ["Bash(ls:*)", "mcp__holdline"],
        "once only"
    );
    let doc: Value = serde_json::from_str(&read(&settings)).unwrap();
    assert_eq!(doc["model"], "opus");
    assert_eq!(doc["permissions"]["deny"], json!(["Read(./.env)"]));

    sb.ok(&["uninstall", "--client", "claude-code"]);
    assert_eq!(claude_allow(&sb), ["Bash(ls:*)"]);
    assert_eq!(
        serde_json::from_str::<Value>(&read(&settings)).unwrap()["model"],
        "opus"
    );

    // A fresh home gets a settings file with the one rule; a broken one is left alone
    // with a clear error.
    let fresh = Sandbox::new();
    fresh.install("claude-code", &[]);
    assert_eq!(claude_allow(&fresh), ["mcp__holdline"]);
    std::fs::write(&settings, "{ not json").unwrap();
    let out = sb.run(&["install", "--client", "claude-code", "--command", COMMAND]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("settings.json is not valid JSON"),
        "{stderr}"
    );
    assert_eq!(read(&settings), "{ not json");
}
