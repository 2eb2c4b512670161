//! Where each client keeps its MCP servers and its rules, and the entry holdline puts
//! there: the local (stdio) one that runs `holdline-mcp`, or the remote one that reaches the
//! hub's `/mcp` by URL with an agent key; its shape, per-server timeout and the matching
//! wait limit (`HOLDLINE_MAX_WAIT_SEC`, or the `Holdline-Max-Wait-Sec` header remotely).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::lifecycle::HookTarget;
use super::rule::{RULE, RuleKind};
use holdline_contract::routes::MAX_WAIT_HEADER;

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
    /// Kilo Code CLI (`kilo`, an opencode fork: the same entry shapes, its own folder).
    Kilo,
    /// Factory Droid CLI (`droid`).
    Droid,
    /// Mistral Vibe (`vibe`, PyPI `mistral-vibe`).
    MistralVibe,
    /// Kimi Code CLI (`kimi`, npm `@moonshot-ai/kimi-code`).
    KimiCode,
    /// OpenHands CLI (`openhands`, PyPI `openhands`).
    Openhands,
    /// Roo Code (VS Code extension); from its public docs, not measured.
    RooCode,
    /// Zed's agent; from its public docs, not measured.
    Zed,
}

impl Client {
    /// Every client, for `uninstall --all`.
    pub const ALL: [Client; 19] = [
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
        Client::Kilo,
        Client::Droid,
        Client::MistralVibe,
        Client::KimiCode,
        Client::Openhands,
        Client::RooCode,
        Client::Zed,
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
    /// Mistral Vibe's TOML: `[[mcp_servers]]` tables with `name`.
    VibeToml,
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
    /// The dotted paths this command decides, replaced whatever the person set there:
    /// `command` for a local entry; `type`, the URL and the `Authorization` header for a
    /// remote one.
    pub decided: Vec<String>,
    /// Top-level keys only the other transport's entry has (`command`, `env` … for a remote
    /// entry; `url`, `headers` … for a local one): an entry switching transport loses them.
    pub other_transport: Vec<String>,
    /// Whether the entry carries the agent key (a remote server entry): the file is then
    /// made private.
    pub holds_key: bool,
}

/// `--url` and `--key`: the hub's MCP address and the agent key the entry sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remote {
    pub url: String,
    pub key: String,
}

impl Remote {
    fn bearer(&self) -> String {
        format!("Bearer {}", self.key)
    }
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
    /// The client's settings file whose `permissions.allow` gets holdline's tools, when the
    /// client keeps that list apart from the server entry (Claude Code).
    pub permissions: Option<PathBuf>,
    /// The client's lifecycle hook files, when holdline answers its hooks.
    pub hooks: Option<HookTarget>,
}

/// What a plan is made from.
pub struct Setup<'a> {
    /// The command the entry runs (holdline-mcp's absolute path).
    pub command: String,
    /// `--hub`, written as `HOLDLINE_HUB`.
    pub hub: Option<String>,
    /// `--url` and `--key`: write the remote entry instead of the local one.
    pub remote: Option<Remote>,
    pub home: PathBuf,
    pub project: PathBuf,
    /// The environment (`CODEX_HOME`, `XDG_CONFIG_HOME`, `CLINE_*`, `APPDATA`, `VIBE_HOME`,
    /// `KIMI_CODE_HOME`, `OPENHANDS_PERSISTENCE_DIR`).
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

    /// Zed's `settings.json`: `%APPDATA%/Zed` on Windows, else `~/.config/zed`.
    fn zed_settings(&self) -> PathBuf {
        let dir = if cfg!(windows) {
            self.var("APPDATA")
                .unwrap_or_else(|| self.home.join("AppData/Roaming"))
                .join("Zed")
        } else {
            self.xdg_config().join("zed")
        };
        dir.join("settings.json")
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

impl Client {
    /// How the client's MCP config file is shaped.
    pub fn format(self) -> Format {
        match self {
            Client::Codex => Format::CodexToml,
            Client::Continue => Format::ContinueYaml,
            Client::MistralVibe => Format::VibeToml,
            Client::Vscode => Format::Json("servers"),
            Client::Opencode | Client::Kilo => Format::Json("mcp"),
            Client::Zed => Format::Json("context_servers"),
            _ => Format::Json("mcpServers"),
        }
    }

    /// The key holding a local entry's environment.
    fn env_key(self) -> &'static str {
        if matches!(self, Client::Opencode | Client::Kilo) {
            "environment"
        } else {
            "env"
        }
    }
}

/// `command` as one shell word: unchanged when it needs no quoting, else quoted.
fn shell_word(command: &str) -> String {
    // A path cannot hold NUL, the one thing `try_quote` refuses.
    shlex::try_quote(command).map_or_else(|_| command.to_owned(), |quoted| quoted.into_owned())
}

/// holdline's local entry: the client runs `command` (this `holdline-mcp`) over stdio,
/// with `HOLDLINE_HUB` set when `hub` is given.
fn local_entry(client: Client, command: &str, hub: Option<&str>) -> Value {
    let mut env = Map::new();
    if let Some(hub) = hub {
        env.insert("HOLDLINE_HUB".into(), json!(hub));
    }
    // Where install raises the client's own timeout, the bridge may wait almost that long.
    let mut env_long = env.clone();
    env_long.insert(
        "HOLDLINE_MAX_WAIT_SEC".into(),
        json!(BRIDGE_WAIT_SEC.to_string()),
    );
    match client {
        Client::Cursor => json!({"command": command, "args": [], "env": env, "timeout": 600}),
        // No `timeout`: it would be a hard limit per call. Without one, Claude Code's only
        // limit a wait meets is its idle watchdog, which the bridge's progress resets, so
        // one call lasts until the person answers.
        Client::ClaudeCode | Client::Vscode => {
            json!({"type": "stdio", "command": command, "args": [], "env": env})
        }
        Client::Codex => json!({
            "command": command, "args": [], "env": env_long,
            "tool_timeout_sec": CLIENT_TIMEOUT_SEC,
            // Codex never asks before a holdline tool (`codex exec` refuses tools that need
            // approval; init and wait need none by their annotations, merge would).
            "default_tools_approval_mode": "approve",
        }),
        Client::Windsurf | Client::Trae => json!({"command": command, "args": [], "env": env}),
        Client::Cline => json!({
            "command": command, "args": [], "env": env_long,
            "disabled": false, "timeout": CLIENT_TIMEOUT_SEC, "autoApprove": TOOLS,
        }),
        Client::Gemini | Client::Qwen => json!({
            "command": command, "args": [], "env": env_long,
            "timeout": CLIENT_TIMEOUT_SEC * 1000,
        }),
        Client::Copilot => json!({
            "type": "local", "command": command, "args": [], "env": env, "tools": ["*"],
        }),
        Client::Opencode | Client::Kilo => json!({
            "type": "local", "command": [command], "environment": env, "enabled": true,
        }),
        // The shape `droid mcp add NAME CMD --env K=V` writes.
        Client::Droid => json!({
            "type": "stdio", "command": command, "args": [], "env": env, "disabled": false,
        }),
        Client::Continue => json!({
            "name": super::SERVER_NAME, "command": command, "args": [], "env": env,
        }),
        // Vibe splits a string `command` as a shell would (shlex): a path with a space is
        // quoted, or Vibe runs its first word and the server never connects.
        Client::MistralVibe => json!({
            "name": super::SERVER_NAME, "transport": "stdio", "command": shell_word(command), "args": [],
            "env": env_long, "tool_timeout_sec": CLIENT_TIMEOUT_SEC,
        }),
        Client::KimiCode => json!({
            "transport": "stdio", "command": command, "args": [], "env": env_long,
            "toolTimeoutMs": CLIENT_TIMEOUT_SEC * 1000,
        }),
        // fastmcp's `StdioMCPServer`. No `timeout`: the SDK ends every tool call at 300 s
        // whatever the entry says; the bridge's limit for it comes from `limits.rs`.
        Client::Openhands => json!({"command": command, "args": [], "env": env}),
        // Cline's fork: the same keys (`alwaysAllow` for Cline's `autoApprove`).
        Client::RooCode => json!({
            "command": command, "args": [], "env": env_long,
            "disabled": false, "timeout": CLIENT_TIMEOUT_SEC, "alwaysAllow": TOOLS,
        }),
        Client::Zed => json!({"command": command, "args": [], "env": env}),
    }
}

/// holdline's remote entry: the client speaks Streamable HTTP to the hub's `/mcp` and
/// sends the agent key as `Authorization: Bearer`. Each shape is the one the client's own
/// `mcp add` writes, or its config schema reads (docs/clients.md says which, per client).
/// The per-server timeout and approval keys are the local entry's; beside a raised
/// timeout goes the [`MAX_WAIT_HEADER`] in place of `HOLDLINE_MAX_WAIT_SEC`.
pub fn remote_entry(client: Client, remote: &Remote) -> Value {
    let url = remote.url.as_str();
    let headers = json!({"Authorization": remote.bearer()});
    let mut headers_long = headers.clone();
    headers_long[MAX_WAIT_HEADER] = json!(BRIDGE_WAIT_SEC.to_string());
    match client {
        Client::Cursor => json!({"url": url, "headers": headers, "timeout": 600}),
        Client::ClaudeCode | Client::Vscode => {
            json!({"type": "http", "url": url, "headers": headers})
        }
        Client::Codex => json!({
            "url": url, "http_headers": headers_long,
            "tool_timeout_sec": CLIENT_TIMEOUT_SEC,
            "default_tools_approval_mode": "approve",
        }),
        Client::Windsurf => json!({"serverUrl": url, "headers": headers}),
        Client::Trae => json!({"url": url, "headers": headers}),
        Client::Cline => json!({
            "type": "streamableHttp", "url": url, "headers": headers_long,
            "disabled": false, "timeout": CLIENT_TIMEOUT_SEC, "autoApprove": TOOLS,
        }),
        Client::Gemini => json!({
            "type": "http", "url": url, "headers": headers_long,
            "timeout": CLIENT_TIMEOUT_SEC * 1000,
        }),
        Client::Qwen => json!({
            "httpUrl": url, "headers": headers_long, "timeout": CLIENT_TIMEOUT_SEC * 1000,
        }),
        Client::Copilot => json!({"type": "http", "url": url, "headers": headers, "tools": ["*"]}),
        // `oauth: false`: a refused key is an error to show, not a sign-in to start.
        Client::Opencode | Client::Kilo => json!({
            "type": "remote", "url": url, "headers": headers, "oauth": false, "enabled": true,
        }),
        // The shape `droid mcp add --type http NAME URL --header … --no-oauth` writes: a
        // refused key is an error to show, not a sign-in to start.
        Client::Droid => json!({
            "type": "http", "url": url, "headers": headers, "oauth": false, "disabled": false,
        }),
        Client::Continue => json!({
            "name": super::SERVER_NAME, "type": "streamable-http", "url": url,
            "requestOptions": {"headers": headers},
        }),
        // `auth.type = "static"`: Vibe's own `mcp add --header` writes headers there.
        Client::MistralVibe => json!({
            "name": super::SERVER_NAME, "transport": "streamable-http", "url": url,
            "auth": {"type": "static", "headers": headers_long},
            "tool_timeout_sec": CLIENT_TIMEOUT_SEC,
        }),
        Client::KimiCode => json!({
            "transport": "http", "url": url, "headers": headers_long,
            "toolTimeoutMs": CLIENT_TIMEOUT_SEC * 1000,
        }),
        // fastmcp's `RemoteMCPServer`; the SDK's 300 s per call stays, so no long header.
        Client::Openhands => json!({"url": url, "transport": "http", "headers": headers}),
        Client::RooCode => json!({
            "type": "streamable-http", "url": url, "headers": headers_long,
            "disabled": false, "timeout": CLIENT_TIMEOUT_SEC, "alwaysAllow": TOOLS,
        }),
        Client::Zed => json!({"url": url, "headers": headers}),
    }
}

/// The dotted path of the first member named `key` in `value`, depth first.
fn path_of(value: &Value, key: &str) -> Option<String> {
    let obj = value.as_object()?;
    if obj.contains_key(key) {
        return Some(key.to_owned());
    }
    obj.iter()
        .find_map(|(k, v)| path_of(v, key).map(|p| format!("{k}.{p}")))
}

fn top_keys(value: &Value) -> Vec<String> {
    value
        .as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default()
}

/// The entry `setup` asks for, the paths it decides, and the other transport's keys.
fn wanted_entry(client: Client, setup: &Setup) -> (Value, Vec<String>, Vec<String>) {
    let command = setup.command.as_str();
    let (entry, other, decided) = match &setup.remote {
        Some(remote) => {
            let entry = remote_entry(client, remote);
            // The transport is holdline's to decide: the hub serves Streamable HTTP only.
            let decided = [
                "type",
                "transport",
                "url",
                "httpUrl",
                "serverUrl",
                "Authorization",
            ]
            .iter()
            .filter_map(|k| path_of(&entry, k))
            .collect();
            (entry, local_entry(client, command, None), decided)
        }
        None => {
            let placeholder = Remote {
                url: String::new(),
                key: String::new(),
            };
            (
                local_entry(client, command, setup.hub.as_deref()),
                remote_entry(client, &placeholder),
                vec!["command".to_owned()],
            )
        }
    };
    let mine = top_keys(&entry);
    let other_transport = top_keys(&other)
        .into_iter()
        .filter(|k| !mine.contains(k))
        .collect();
    (entry, decided, other_transport)
}

/// Builds the plan for `client`.
pub fn plan(client: Client, setup: &Setup) -> Plan {
    let home = &setup.home;
    let project = &setup.project;
    let (entry, decided, other_transport) = wanted_entry(client, setup);
    let target = |path: PathBuf| ConfigTarget {
        path,
        format: client.format(),
        entry: entry.clone(),
        env_key: client.env_key(),
        decided: decided.clone(),
        other_transport: other_transport.clone(),
        holds_key: setup.remote.is_some(),
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
    // The user settings hold the entry and the hooks.
    let gemini_like = |dir: &str, rule_file: &str, hooks: HookTarget| Plan {
        client,
        configs: vec![target(home.join(dir).join("settings.json"))],
        rule: section(home.join(dir).join(rule_file)),
        trusted_folders: Some(home.join(dir).join("trustedFolders.json")),
        permissions: None,
        hooks: Some(hooks),
    };
    let simple = |configs: Vec<ConfigTarget>, rule: RuleTarget| Plan {
        client,
        configs,
        rule,
        trusted_folders: None,
        permissions: None,
        hooks: None,
    };
    match client {
        // User scope: `~/.cursor/mcp.json` and `~/.cursor/hooks.json` reach every project.
        Client::Cursor => Plan {
            hooks: Some(HookTarget::cursor(home)),
            ..simple(
                vec![target(home.join(".cursor/mcp.json"))],
                own(
                    project.join(".cursor/rules/holdline.mdc"),
                    "---\ndescription: holdline — keep the conversation going with wait_for_user_input\nalwaysApply: true\n---\n\n",
                ),
            )
        },
        // User scope: `~/.claude.json`'s `mcpServers` and `~/.claude/CLAUDE.md` reach every
        // project; `~/.claude/settings.json` allows holdline's tools in each of them and
        // holds its hooks.
        Client::ClaudeCode => Plan {
            permissions: Some(home.join(".claude/settings.json")),
            hooks: Some(HookTarget::claude_code(home)),
            ..simple(
                vec![target(home.join(".claude.json"))],
                section(home.join(".claude/CLAUDE.md")),
            )
        },
        Client::Codex => {
            let dir = setup
                .var("CODEX_HOME")
                .unwrap_or_else(|| home.join(".codex"));
            Plan {
                hooks: Some(HookTarget::codex(&dir)),
                ..simple(
                    vec![target(dir.join("config.toml"))],
                    section(dir.join("AGENTS.md")),
                )
            }
        }
        Client::Vscode => simple(
            vec![target(setup.vscode_like_user_dir("Code").join("mcp.json"))],
            own(
                project.join(".github/instructions/holdline.instructions.md"),
                "---\napplyTo: \"**\"\n---\n\n",
            ),
        ),
        Client::Windsurf => simple(
            vec![target(home.join(".codeium/windsurf/mcp_config.json"))],
            section(home.join(".codeium/windsurf/memories/global_rules.md")),
        ),
        Client::Trae => simple(
            vec![target(setup.vscode_like_user_dir("Trae").join("mcp.json"))],
            section(project.join(".trae/rules/project_rules.md")),
        ),
        Client::Cline => {
            simple(
                vec![
                    target(setup.cline_cli_settings()),
                    target(setup.vscode_like_user_dir("Code").join(
                        "globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json",
                    )),
                ],
                own(project.join(".clinerules/holdline.md"), ""),
            )
        }
        Client::Gemini => gemini_like(".gemini", "GEMINI.md", HookTarget::gemini(home)),
        Client::Qwen => gemini_like(".qwen", "QWEN.md", HookTarget::qwen(home)),
        Client::Copilot => simple(
            vec![target(home.join(".copilot/mcp-config.json"))],
            section(home.join(".copilot/copilot-instructions.md")),
        ),
        Client::Opencode => {
            let dir = setup.xdg_config().join("opencode");
            simple(
                vec![target(dir.join("opencode.json"))],
                section(dir.join("AGENTS.md")),
            )
        }
        Client::Kilo => {
            let dir = setup.xdg_config().join("kilo");
            simple(
                vec![target(dir.join("kilo.json"))],
                section(dir.join("AGENTS.md")),
            )
        }
        Client::Droid => simple(
            vec![
                target(home.join(".factory/mcp.json")),
                droid_autonomy(home.join(".factory/settings.json")),
            ],
            section(home.join(".factory/AGENTS.md")),
        ),
        Client::Continue => simple(
            vec![target(home.join(".continue/config.yaml"))],
            own(
                project.join(".continue/rules/holdline.md"),
                "---\nname: holdline\nalwaysApply: true\n---\n\n",
            ),
        ),
        Client::MistralVibe => {
            let dir = setup.var("VIBE_HOME").unwrap_or_else(|| home.join(".vibe"));
            simple(
                vec![target(dir.join("config.toml"))],
                section(dir.join("AGENTS.md")),
            )
        }
        Client::KimiCode => {
            let dir = setup
                .var("KIMI_CODE_HOME")
                .unwrap_or_else(|| home.join(".kimi-code"));
            simple(
                vec![target(dir.join("mcp.json"))],
                section(dir.join("AGENTS.md")),
            )
        }
        // `~/.openhands/skills/*.md` without triggers is always in the system prompt.
        Client::Openhands => {
            let dir = setup
                .var("OPENHANDS_PERSISTENCE_DIR")
                .unwrap_or_else(|| home.join(".openhands"));
            simple(
                vec![target(dir.join("mcp.json"))],
                own(
                    home.join(".openhands/skills/holdline.md"),
                    "---\nname: holdline\n---\n\n",
                ),
            )
        }
        Client::RooCode => simple(
            vec![target(setup.vscode_like_user_dir("Code").join(
                "globalStorage/rooveterinaryinc.roo-cline/settings/mcp_settings.json",
            ))],
            own(project.join(".roo/rules/holdline.md"), ""),
        ),
        // Zed reads the first of `.rules`, `AGENTS.md`, `CLAUDE.md` … in the project.
        Client::Zed => simple(
            vec![target(setup.zed_settings())],
            section(project.join("AGENTS.md")),
        ),
    }
}

/// The tools Droid may run without asking: every one but `merge_conversation`, which
/// changes which conversation the agent is in (its annotations say so).
const DROID_UNASKED: [&str; 3] = [
    "init_conversation",
    "select_conversation",
    "wait_for_user_input",
];

/// Droid's `mcpAutonomyOverrides.holdline` in `~/.factory/settings.json`: `droid exec`
/// runs read-only by default and refuses an MCP tool of the default level ("insufficient
/// permission … --auto high"); at level `low` it runs them in every mode. The person's own
/// levels are kept (nothing here is `decided`).
fn droid_autonomy(path: PathBuf) -> ConfigTarget {
    let tools: Map<String, Value> = DROID_UNASKED
        .iter()
        .map(|t| ((*t).to_owned(), json!("low")))
        .collect();
    ConfigTarget {
        path,
        format: Format::Json("mcpAutonomyOverrides"),
        entry: json!({ "tools": tools }),
        env_key: "env",
        decided: Vec::new(),
        other_transport: Vec::new(),
        holds_key: false,
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
