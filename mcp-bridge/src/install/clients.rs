//! Where each client keeps its MCP servers and its rules, and the entry holdline puts
//! there: shape, per-server timeout and the matching `HOLDLINE_MAX_WAIT_SEC`.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::rule::{RULE, RuleKind};

/// The clients `install` knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Client {
    Cursor,
    ClaudeCode,
    Codex,
    Vscode,
    Windsurf,
    Trae,
    /// Cline CLI 3.x and the Cline VS Code extension (both files).
    Cline,
    Gemini,
    Qwen,
    /// GitHub Copilot CLI.
    Copilot,
    Opencode,
    /// Continue CLI (`cn`).
    Continue,
}

impl Client {
    /// Every client, for `uninstall --all`.
    pub const ALL: [Client; 12] = [
        Client::Cursor,
        Client::ClaudeCode,
        Client::Codex,
        Client::Vscode,
        Client::Windsurf,
        Client::Trae,
        Client::Cline,
        Client::Gemini,
        Client::Qwen,
        Client::Copilot,
        Client::Opencode,
        Client::Continue,
    ];
}

/// The per-server tool timeout `install` writes where a client has one: an hour, the
/// most Cline accepts. A long wait means few "no reply yet" round trips to the model.
pub const CLIENT_TIMEOUT_SEC: u64 = 3600;

/// `HOLDLINE_MAX_WAIT_SEC` beside that timeout: the bridge ends a wait 30 s before the
/// client would, which covers a poll in flight and a slow machine.
pub const BRIDGE_WAIT_SEC: u64 = CLIENT_TIMEOUT_SEC - 30;

/// The four tools, for clients that list the ones they may call without asking.
pub const TOOLS: [&str; 4] = [
    "init_conversation",
    "select_conversation",
    "wait_for_user_input",
    "merge_conversation",
];

/// How a client's MCP config file is shaped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// JSON (or JSONC) with servers in an object under this top-level key.
    Json(&'static str),
    /// Codex's TOML: `[mcp_servers.NAME]`.
    CodexToml,
    /// Continue's YAML: `mcpServers:` list of items with `name`.
    ContinueYaml,
}

/// One config file and holdline's entry in it.
#[derive(Debug, Clone)]
pub struct ConfigTarget {
    pub path: PathBuf,
    pub format: Format,
    /// The value of holdline's entry (for Continue, the list item with `name`).
    pub entry: Value,
    /// The key holding the server's environment (`env`, or `environment` for opencode).
    pub env_key: &'static str,
}

/// Where the rule goes.
#[derive(Debug, Clone)]
pub struct RuleTarget {
    pub path: PathBuf,
    pub kind: RuleKind,
    pub text: String,
}

/// Everything `install` does for one client.
#[derive(Debug, Clone)]
pub struct Plan {
    pub client: Client,
    pub configs: Vec<ConfigTarget>,
    pub rule: RuleTarget,
    /// The client's trusted-folders file, when it starts MCP servers only in trusted folders.
    pub trusted_folders: Option<PathBuf>,
}

/// What a plan is made from.
pub struct Setup<'a> {
    /// The command the entry runs (holdline-mcp's absolute path).
    pub command: String,
    /// `--hub`, written as `HOLDLINE_HUB`.
    pub hub: Option<String>,
    pub home: PathBuf,
    pub project: PathBuf,
    /// The environment (`CODEX_HOME`, `XDG_CONFIG_HOME`, `CLINE_*`, `APPDATA`).
    pub env: &'a dyn Fn(&str) -> Option<String>,
}

impl Setup<'_> {
    fn var(&self, name: &str) -> Option<PathBuf> {
        (self.env)(name)
            .filter(|v| !v.trim().is_empty())
            .map(PathBuf::from)
    }

    /// `~/.config` or `$XDG_CONFIG_HOME`.
    fn xdg_config(&self) -> PathBuf {
        self.var("XDG_CONFIG_HOME")
            .unwrap_or_else(|| self.home.join(".config"))
    }

    /// `Code/User` (VS Code) or `Trae/User` in the platform's application data folder.
    fn vscode_like_user_dir(&self, app: &str) -> PathBuf {
        let base = if cfg!(target_os = "macos") {
            self.home.join("Library/Application Support")
        } else if cfg!(windows) {
            self.var("APPDATA")
                .unwrap_or_else(|| self.home.join("AppData/Roaming"))
        } else {
            self.xdg_config()
        };
        base.join(app).join("User")
    }

    /// Cline CLI 3.x's settings file: `$CLINE_MCP_SETTINGS_PATH`, else under
    /// `$CLINE_DATA_DIR`, else under `$CLINE_DIR/data`, else `~/.cline/data`.
    fn cline_cli_settings(&self) -> PathBuf {
        if let Some(path) = self.var("CLINE_MCP_SETTINGS_PATH") {
            return path;
        }
        let data = self
            .var("CLINE_DATA_DIR")
            .or_else(|| self.var("CLINE_DIR").map(|d| d.join("data")))
            .unwrap_or_else(|| self.home.join(".cline/data"));
        data.join("settings/cline_mcp_settings.json")
    }
}

/// Builds the plan for `client`.
pub fn plan(client: Client, setup: &Setup) -> Plan {
    let command = setup.command.as_str();
    let mut env = Map::new();
    if let Some(hub) = &setup.hub {
        env.insert("HOLDLINE_HUB".into(), json!(hub));
    }
    // Where install raises the client's own timeout, the bridge may wait almost that long.
    let mut env_long = env.clone();
    env_long.insert(
        "HOLDLINE_MAX_WAIT_SEC".into(),
        json!(BRIDGE_WAIT_SEC.to_string()),
    );
    let home = &setup.home;
    let project = &setup.project;
    let json_target = |path: PathBuf, key: &'static str, entry: Value| ConfigTarget {
        path,
        format: Format::Json(key),
        entry,
        env_key: "env",
    };
    let section = |path: PathBuf| RuleTarget {
        path,
        kind: RuleKind::Section,
        text: RULE.to_owned(),
    };
    let own = |path: PathBuf, front: &str| RuleTarget {
        path,
        kind: RuleKind::OwnFile,
        text: format!("{front}{RULE}"),
    };
    let gemini_like = |dir: &str, rule_file: &str| Plan {
        client,
        configs: vec![json_target(
            home.join(dir).join("settings.json"),
            "mcpServers",
            json!({"command": command, "args": [], "env": env_long,
                   "timeout": CLIENT_TIMEOUT_SEC * 1000}),
        )],
        rule: section(home.join(dir).join(rule_file)),
        trusted_folders: Some(home.join(dir).join("trustedFolders.json")),
    };
    let simple = |configs: Vec<ConfigTarget>, rule: RuleTarget| Plan {
        client,
        configs,
        rule,
        trusted_folders: None,
    };
    match client {
        Client::Cursor => simple(
            vec![json_target(
                home.join(".cursor/mcp.json"),
                "mcpServers",
                json!({"command": command, "args": [], "env": env, "timeout": 600}),
            )],
            own(
                project.join(".cursor/rules/holdline.mdc"),
                "---\ndescription: holdline — keep the conversation going with wait_for_user_input\nalwaysApply: true\n---\n\n",
            ),
        ),
        Client::ClaudeCode => simple(
            vec![json_target(
                home.join(".claude.json"),
                "mcpServers",
                // No `timeout`: it would be a hard limit per call. Without one, Claude
                // Code's only limit a wait meets is its idle watchdog, which the bridge's
                // progress resets, so one call lasts until the person answers.
                json!({"type": "stdio", "command": command, "args": [], "env": env}),
            )],
            section(home.join(".claude/CLAUDE.md")),
        ),
        Client::Codex => {
            let dir = setup
                .var("CODEX_HOME")
                .unwrap_or_else(|| home.join(".codex"));
            simple(
                vec![ConfigTarget {
                    path: dir.join("config.toml"),
                    format: Format::CodexToml,
                    entry: json!({
                        "command": command, "args": [], "env": env_long,
                        "tool_timeout_sec": CLIENT_TIMEOUT_SEC,
                        // `codex exec` refuses MCP tools that need approval otherwise.
                        "default_tools_approval_mode": "approve",
                    }),
                    env_key: "env",
                }],
                section(dir.join("AGENTS.md")),
            )
        }
        Client::Vscode => simple(
            vec![json_target(
                setup.vscode_like_user_dir("Code").join("mcp.json"),
                "servers",
                json!({"type": "stdio", "command": command, "args": [], "env": env}),
            )],
            own(
                project.join(".github/instructions/holdline.instructions.md"),
                "---\napplyTo: \"**\"\n---\n\n",
            ),
        ),
        Client::Windsurf => simple(
            vec![json_target(
                home.join(".codeium/windsurf/mcp_config.json"),
                "mcpServers",
                json!({"command": command, "args": [], "env": env}),
            )],
            section(home.join(".codeium/windsurf/memories/global_rules.md")),
        ),
        Client::Trae => simple(
            vec![json_target(
                setup.vscode_like_user_dir("Trae").join("mcp.json"),
                "mcpServers",
                json!({"command": command, "args": [], "env": env}),
            )],
            section(project.join(".trae/rules/project_rules.md")),
        ),
        Client::Cline => {
            let entry = json!({
                "command": command, "args": [], "env": env_long,
                "disabled": false, "timeout": CLIENT_TIMEOUT_SEC, "autoApprove": TOOLS,
            });
            simple(
                vec![
                    json_target(setup.cline_cli_settings(), "mcpServers", entry.clone()),
                    json_target(
                        setup.vscode_like_user_dir("Code").join(
                            "globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json",
                        ),
                        "mcpServers",
                        entry,
                    ),
                ],
                own(project.join(".clinerules/holdline.md"), ""),
            )
        }
        Client::Gemini => gemini_like(".gemini", "GEMINI.md"),
        Client::Qwen => gemini_like(".qwen", "QWEN.md"),
        Client::Copilot => simple(
            vec![json_target(
                home.join(".copilot/mcp-config.json"),
                "mcpServers",
                json!({"type": "local", "command": command, "args": [], "env": env,
                       "tools": ["*"]}),
            )],
            section(home.join(".copilot/copilot-instructions.md")),
        ),
        Client::Opencode => {
            let dir = setup.xdg_config().join("opencode");
            simple(
                vec![ConfigTarget {
                    path: dir.join("opencode.json"),
                    format: Format::Json("mcp"),
                    entry: json!({"type": "local", "command": [command],
                                  "environment": env, "enabled": true}),
                    env_key: "environment",
                }],
                section(dir.join("AGENTS.md")),
            )
        }
        Client::Continue => simple(
            vec![ConfigTarget {
                path: home.join(".continue/config.yaml"),
                format: Format::ContinueYaml,
                entry: json!({"name": super::SERVER_NAME, "command": command, "args": [],
                              "env": env}),
                env_key: "env",
            }],
            own(
                project.join(".continue/rules/holdline.md"),
                "---\nname: holdline\nalwaysApply: true\n---\n\n",
            ),
        ),
    }
}

/// Whether `project` is trusted by a Gemini-style `trustedFolders.json`: it or a folder
/// above it is marked `TRUST_FOLDER`, or a sibling or child of its parent `TRUST_PARENT`.
pub fn is_trusted(trusted_folders: &Value, project: &Path) -> bool {
    let Some(map) = trusted_folders.as_object() else {
        return false;
    };
    map.iter().any(|(path, level)| {
        let path = Path::new(path);
        match level.as_str() {
            Some("TRUST_FOLDER") => project.starts_with(path),
            Some("TRUST_PARENT") => path.parent().is_some_and(|p| project.starts_with(p)),
            _ => false,
        }
    })
}
