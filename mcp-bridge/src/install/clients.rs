//! The installer's half of each client's entry, keyed by the contract's `ClientId`
//! ([`INSTALL`], one [`ClientFiles`] per client `install --client` takes): where the
//! client keeps its MCP servers, its rules and its hook files, how its config file is
//! shaped, and the entry holdline puts there: the local (stdio) one that runs
//! `holdline-mcp`, or the remote one that reaches the hub's `/mcp` by URL with an agent
//! key; its per-server timeout and the matching wait limit (`HOLDLINE_MAX_WAIT_SEC`, or the
//! `Holdline-Max-Wait-Sec` header remotely). The facts the tools and the hub read too
//! (names, limits, images, hook events) are the contract's entry of the same client
//! (`holdline_contract::clients`); these stay here because only the installer writes
//! files, and the hub must not link it.
//!
//! Invariant: every client of [`INSTALLABLE`] has exactly one entry here (tested), and
//! [`plan`] reads only that entry.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::hooks::BlockCap;
use super::lifecycle::HookTarget;
use super::rule::{RULE, RuleKind};
use crate::hook::HookClient;
use holdline_contract::routes::MAX_WAIT_HEADER;

/// The clients `install` knows: the contract's client ids, `--client` parsing them by
/// their table names.
pub use holdline_contract::clients::{ClientId as Client, INSTALLABLE};

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

    /// `$CODEX_HOME`, else `~/.codex`.
    fn codex_home(&self) -> PathBuf {
        self.var("CODEX_HOME")
            .unwrap_or_else(|| self.home.join(".codex"))
    }

    /// `$VIBE_HOME`, else `~/.vibe`.
    fn vibe_home(&self) -> PathBuf {
        self.var("VIBE_HOME")
            .unwrap_or_else(|| self.home.join(".vibe"))
    }

    /// `$KIMI_CODE_HOME`, else `~/.kimi-code`.
    fn kimi_home(&self) -> PathBuf {
        self.var("KIMI_CODE_HOME")
            .unwrap_or_else(|| self.home.join(".kimi-code"))
    }

    /// `$OPENHANDS_PERSISTENCE_DIR`, else `~/.openhands`.
    fn openhands_dir(&self) -> PathBuf {
        self.var("OPENHANDS_PERSISTENCE_DIR")
            .unwrap_or_else(|| self.home.join(".openhands"))
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

/// The inputs of a client's local entry: the command, and the entry's environment without
/// and with `HOLDLINE_MAX_WAIT_SEC` (where install raises the client's own timeout, the
/// bridge may wait almost that long).
pub struct Local<'a> {
    pub command: &'a str,
    pub env: Map<String, Value>,
    pub env_long: Map<String, Value>,
}

/// The inputs of a client's remote entry: the URL, and the headers without and with the
/// [`MAX_WAIT_HEADER`] (the hub's stand-in for `HOLDLINE_MAX_WAIT_SEC`).
pub struct RemoteParts<'a> {
    pub url: &'a str,
    pub headers: Value,
    pub headers_long: Value,
}

/// Where one client keeps what install writes, and the shape of holdline's entries.
pub struct ClientFiles {
    pub id: Client,
    /// How its MCP config file is shaped.
    pub format: Format,
    /// The key holding a local entry's environment.
    pub env_key: &'static str,
    /// Its MCP config files (Cline: the CLI's and the VS Code extension's).
    pub configs: fn(&Setup) -> Vec<PathBuf>,
    /// A settings file beside them with an entry of its own (Droid's tool levels).
    pub settings: Option<fn(&Setup) -> ConfigTarget>,
    pub rule: fn(&Setup) -> RuleTarget,
    /// Its trusted-folders file, when it starts MCP servers only in trusted folders.
    pub trusted_folders: Option<fn(&Setup) -> PathBuf>,
    /// Its settings file whose `permissions.allow` gets holdline's tools.
    pub permissions: Option<fn(&Setup) -> PathBuf>,
    /// Its hook files, when holdline answers its hooks.
    pub hooks: Option<fn(&Setup) -> HookTarget>,
    /// holdline's local entry: the client runs the command over stdio.
    pub local: fn(&Local) -> Value,
    /// holdline's remote entry: the client speaks Streamable HTTP to the hub's `/mcp` and
    /// sends the agent key as `Authorization: Bearer`. Each shape is the one the client's
    /// own `mcp add` writes, or its config schema reads (docs/clients.md says which). The
    /// per-server timeout and approval keys are the local entry's; beside a raised timeout
    /// goes the long headers.
    pub remote: fn(&RemoteParts) -> Value,
}

const fn files(
    id: Client,
    format: Format,
    configs: fn(&Setup) -> Vec<PathBuf>,
    rule: fn(&Setup) -> RuleTarget,
    local: fn(&Local) -> Value,
    remote: fn(&RemoteParts) -> Value,
) -> ClientFiles {
    ClientFiles {
        id,
        format,
        env_key: "env",
        configs,
        settings: None,
        rule,
        trusted_folders: None,
        permissions: None,
        hooks: None,
        local,
        remote,
    }
}

/// The rule as a marked section of a file the person shares.
fn section(path: PathBuf) -> RuleTarget {
    RuleTarget {
        path,
        kind: RuleKind::Section,
        text: RULE.to_owned(),
    }
}

/// The rule as a file of holdline's own, `front` matter first.
fn own(path: PathBuf, front: &str) -> RuleTarget {
    RuleTarget {
        path,
        kind: RuleKind::OwnFile,
        text: format!("{front}{RULE}"),
    }
}

fn hook_target(client: HookClient, file: PathBuf) -> HookTarget {
    HookTarget {
        client,
        file,
        trust: None,
        block_cap: None,
    }
}

const JSON: Format = Format::Json("mcpServers");

const CURSOR_FRONT: &str = "---\ndescription: holdline — keep the conversation going with wait_for_user_input\nalwaysApply: true\n---\n\n";

/// Every client `install --client` takes, in the contract's order: one entry each.
pub const INSTALL: &[ClientFiles] = &[
    // User scope: `~/.cursor/mcp.json` and `~/.cursor/hooks.json` reach every project.
    ClientFiles {
        hooks: Some(|s| hook_target(HookClient::Cursor, s.home.join(".cursor/hooks.json"))),
        ..files(
            Client::Cursor,
            JSON,
            |s| vec![s.home.join(".cursor/mcp.json")],
            |s| own(s.project.join(".cursor/rules/holdline.mdc"), CURSOR_FRONT),
            |l| json!({"command": l.command, "args": [], "env": l.env, "timeout": 600}),
            |r| json!({"url": r.url, "headers": r.headers, "timeout": 600}),
        )
    },
    // User scope: `~/.claude.json`'s `mcpServers` and `~/.claude/CLAUDE.md` reach every
    // project; `~/.claude/settings.json` allows holdline's tools in each of them and holds
    // its hooks, with the stop-block cap in its `env`.
    ClientFiles {
        permissions: Some(|s| s.home.join(".claude/settings.json")),
        hooks: Some(|s| HookTarget {
            block_cap: Some(BlockCap::ClaudeCodeEnv),
            ..hook_target(HookClient::ClaudeCode, s.home.join(".claude/settings.json"))
        }),
        ..files(
            Client::ClaudeCode,
            JSON,
            |s| vec![s.home.join(".claude.json")],
            |s| section(s.home.join(".claude/CLAUDE.md")),
            // No `timeout`: it would be a hard limit per call. Without one, Claude Code's
            // only limit a wait meets is its idle watchdog, which the bridge's progress
            // resets, so one call lasts until the person answers.
            |l| json!({"type": "stdio", "command": l.command, "args": [], "env": l.env}),
            |r| json!({"type": "http", "url": r.url, "headers": r.headers}),
        )
    },
    // `$CODEX_HOME`: the entry, the rule, and the hooks with their trust records.
    ClientFiles {
        hooks: Some(|s| HookTarget {
            trust: Some(s.codex_home().join("config.toml")),
            ..hook_target(HookClient::Codex, s.codex_home().join("hooks.json"))
        }),
        ..files(
            Client::Codex,
            Format::CodexToml,
            |s| vec![s.codex_home().join("config.toml")],
            |s| section(s.codex_home().join("AGENTS.md")),
            |l| {
                json!({
                    "command": l.command, "args": [], "env": l.env_long,
                    "tool_timeout_sec": CLIENT_TIMEOUT_SEC,
                    // Codex never asks before a holdline tool (`codex exec` refuses tools
                    // that need approval; init and wait need none by their annotations,
                    // merge would).
                    "default_tools_approval_mode": "approve",
                })
            },
            |r| {
                json!({
                    "url": r.url, "http_headers": r.headers_long,
                    "tool_timeout_sec": CLIENT_TIMEOUT_SEC,
                    "default_tools_approval_mode": "approve",
                })
            },
        )
    },
    files(
        Client::Vscode,
        Format::Json("servers"),
        |s| vec![s.vscode_like_user_dir("Code").join("mcp.json")],
        |s| {
            own(
                s.project
                    .join(".github/instructions/holdline.instructions.md"),
                "---\napplyTo: \"**\"\n---\n\n",
            )
        },
        |l| json!({"type": "stdio", "command": l.command, "args": [], "env": l.env}),
        |r| json!({"type": "http", "url": r.url, "headers": r.headers}),
    ),
    files(
        Client::Windsurf,
        JSON,
        |s| vec![s.home.join(".codeium/windsurf/mcp_config.json")],
        |s| section(s.home.join(".codeium/windsurf/memories/global_rules.md")),
        |l| json!({"command": l.command, "args": [], "env": l.env}),
        |r| json!({"serverUrl": r.url, "headers": r.headers}),
    ),
    files(
        Client::Trae,
        JSON,
        |s| vec![s.vscode_like_user_dir("Trae").join("mcp.json")],
        |s| section(s.project.join(".trae/rules/project_rules.md")),
        |l| json!({"command": l.command, "args": [], "env": l.env}),
        |r| json!({"url": r.url, "headers": r.headers}),
    ),
    files(
        Client::Cline,
        JSON,
        |s| {
            vec![
                s.cline_cli_settings(),
                s.vscode_like_user_dir("Code")
                    .join("globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json"),
            ]
        },
        |s| own(s.project.join(".clinerules/holdline.md"), ""),
        |l| {
            json!({
                "command": l.command, "args": [], "env": l.env_long,
                "disabled": false, "timeout": CLIENT_TIMEOUT_SEC, "autoApprove": TOOLS,
            })
        },
        |r| {
            json!({
                "type": "streamableHttp", "url": r.url, "headers": r.headers_long,
                "disabled": false, "timeout": CLIENT_TIMEOUT_SEC, "autoApprove": TOOLS,
            })
        },
    ),
    // The user settings hold the entry and the hooks; servers start only in trusted folders.
    ClientFiles {
        trusted_folders: Some(|s| s.home.join(".gemini/trustedFolders.json")),
        hooks: Some(|s| hook_target(HookClient::Gemini, s.home.join(".gemini/settings.json"))),
        ..files(
            Client::Gemini,
            JSON,
            |s| vec![s.home.join(".gemini/settings.json")],
            |s| section(s.home.join(".gemini/GEMINI.md")),
            long_timeout_ms,
            |r| {
                json!({
                    "type": "http", "url": r.url, "headers": r.headers_long,
                    "timeout": CLIENT_TIMEOUT_SEC * 1000,
                })
            },
        )
    },
    // As Gemini CLI, with the stop-block cap raised to the most it takes.
    ClientFiles {
        trusted_folders: Some(|s| s.home.join(".qwen/trustedFolders.json")),
        hooks: Some(|s| HookTarget {
            block_cap: Some(BlockCap::QwenSetting),
            ..hook_target(HookClient::Qwen, s.home.join(".qwen/settings.json"))
        }),
        ..files(
            Client::Qwen,
            JSON,
            |s| vec![s.home.join(".qwen/settings.json")],
            |s| section(s.home.join(".qwen/QWEN.md")),
            long_timeout_ms,
            |r| {
                json!({
                    "httpUrl": r.url, "headers": r.headers_long,
                    "timeout": CLIENT_TIMEOUT_SEC * 1000,
                })
            },
        )
    },
    files(
        Client::Copilot,
        JSON,
        |s| vec![s.home.join(".copilot/mcp-config.json")],
        |s| section(s.home.join(".copilot/copilot-instructions.md")),
        |l| {
            json!({
                "type": "local", "command": l.command, "args": [], "env": l.env, "tools": ["*"],
            })
        },
        |r| json!({"type": "http", "url": r.url, "headers": r.headers, "tools": ["*"]}),
    ),
    ClientFiles {
        env_key: "environment",
        ..files(
            Client::Opencode,
            Format::Json("mcp"),
            |s| vec![s.xdg_config().join("opencode/opencode.json")],
            |s| section(s.xdg_config().join("opencode/AGENTS.md")),
            opencode_local,
            opencode_remote,
        )
    },
    files(
        Client::Continue,
        Format::ContinueYaml,
        |s| vec![s.home.join(".continue/config.yaml")],
        |s| {
            own(
                s.project.join(".continue/rules/holdline.md"),
                "---\nname: holdline\nalwaysApply: true\n---\n\n",
            )
        },
        |l| {
            json!({
                "name": super::SERVER_NAME, "command": l.command, "args": [], "env": l.env,
            })
        },
        |r| {
            json!({
                "name": super::SERVER_NAME, "type": "streamable-http", "url": r.url,
                "requestOptions": {"headers": r.headers},
            })
        },
    ),
    // opencode's fork: the same entry shapes, its own folder.
    ClientFiles {
        env_key: "environment",
        ..files(
            Client::Kilo,
            Format::Json("mcp"),
            |s| vec![s.xdg_config().join("kilo/kilo.json")],
            |s| section(s.xdg_config().join("kilo/AGENTS.md")),
            opencode_local,
            opencode_remote,
        )
    },
    ClientFiles {
        settings: Some(|s| droid_autonomy(s.home.join(".factory/settings.json"))),
        ..files(
            Client::Droid,
            JSON,
            |s| vec![s.home.join(".factory/mcp.json")],
            |s| section(s.home.join(".factory/AGENTS.md")),
            // The shape `droid mcp add NAME CMD --env K=V` writes.
            |l| {
                json!({
                    "type": "stdio", "command": l.command, "args": [], "env": l.env,
                    "disabled": false,
                })
            },
            // The shape `droid mcp add --type http NAME URL --header … --no-oauth` writes:
            // a refused key is an error to show, not a sign-in to start.
            |r| {
                json!({
                    "type": "http", "url": r.url, "headers": r.headers, "oauth": false,
                    "disabled": false,
                })
            },
        )
    },
    files(
        Client::MistralVibe,
        Format::VibeToml,
        |s| vec![s.vibe_home().join("config.toml")],
        |s| section(s.vibe_home().join("AGENTS.md")),
        // Vibe splits a string `command` as a shell would (shlex): a path with a space is
        // quoted, or Vibe runs its first word and the server never connects.
        |l| {
            json!({
                "name": super::SERVER_NAME, "transport": "stdio",
                "command": shell_word(l.command), "args": [],
                "env": l.env_long, "tool_timeout_sec": CLIENT_TIMEOUT_SEC,
            })
        },
        // `auth.type = "static"`: Vibe's own `mcp add --header` writes headers there.
        |r| {
            json!({
                "name": super::SERVER_NAME, "transport": "streamable-http", "url": r.url,
                "auth": {"type": "static", "headers": r.headers_long},
                "tool_timeout_sec": CLIENT_TIMEOUT_SEC,
            })
        },
    ),
    files(
        Client::KimiCode,
        JSON,
        |s| vec![s.kimi_home().join("mcp.json")],
        |s| section(s.kimi_home().join("AGENTS.md")),
        |l| {
            json!({
                "transport": "stdio", "command": l.command, "args": [], "env": l.env_long,
                "toolTimeoutMs": CLIENT_TIMEOUT_SEC * 1000,
            })
        },
        |r| {
            json!({
                "transport": "http", "url": r.url, "headers": r.headers_long,
                "toolTimeoutMs": CLIENT_TIMEOUT_SEC * 1000,
            })
        },
    ),
    // fastmcp's `StdioMCPServer` and `RemoteMCPServer`. No `timeout` and no long header:
    // the SDK ends every tool call at 300 s whatever the entry says; the bridge's limit
    // for it comes from the contract's table. `~/.openhands/skills/*.md` without triggers
    // is always in the system prompt.
    files(
        Client::Openhands,
        JSON,
        |s| vec![s.openhands_dir().join("mcp.json")],
        |s| {
            own(
                s.home.join(".openhands/skills/holdline.md"),
                "---\nname: holdline\n---\n\n",
            )
        },
        |l| json!({"command": l.command, "args": [], "env": l.env}),
        |r| json!({"url": r.url, "transport": "http", "headers": r.headers}),
    ),
    // Cline's fork: the same keys (`alwaysAllow` for Cline's `autoApprove`).
    files(
        Client::RooCode,
        JSON,
        |s| {
            vec![
                s.vscode_like_user_dir("Code")
                    .join("globalStorage/rooveterinaryinc.roo-cline/settings/mcp_settings.json"),
            ]
        },
        |s| own(s.project.join(".roo/rules/holdline.md"), ""),
        |l| {
            json!({
                "command": l.command, "args": [], "env": l.env_long,
                "disabled": false, "timeout": CLIENT_TIMEOUT_SEC, "alwaysAllow": TOOLS,
            })
        },
        |r| {
            json!({
                "type": "streamable-http", "url": r.url, "headers": r.headers_long,
                "disabled": false, "timeout": CLIENT_TIMEOUT_SEC, "alwaysAllow": TOOLS,
            })
        },
    ),
    // Zed reads the first of `.rules`, `AGENTS.md`, `CLAUDE.md` … in the project.
    files(
        Client::Zed,
        Format::Json("context_servers"),
        |s| vec![s.zed_settings()],
        |s| section(s.project.join("AGENTS.md")),
        |l| json!({"command": l.command, "args": [], "env": l.env}),
        |r| json!({"url": r.url, "headers": r.headers}),
    ),
];

/// Gemini CLI's and Qwen Code's local entry: the timeout in milliseconds.
fn long_timeout_ms(l: &Local) -> Value {
    json!({
        "command": l.command, "args": [], "env": l.env_long,
        "timeout": CLIENT_TIMEOUT_SEC * 1000,
    })
}

/// opencode's and Kilo's local entry.
fn opencode_local(l: &Local) -> Value {
    json!({"type": "local", "command": [l.command], "environment": l.env, "enabled": true})
}

/// opencode's and Kilo's remote entry. `oauth: false`: a refused key is an error to show,
/// not a sign-in to start.
fn opencode_remote(r: &RemoteParts) -> Value {
    json!({
        "type": "remote", "url": r.url, "headers": r.headers, "oauth": false, "enabled": true,
    })
}

/// `client`'s entry of [`INSTALL`].
pub fn files_of(client: Client) -> &'static ClientFiles {
    INSTALL
        .iter()
        .find(|f| f.id == client)
        .expect("every installable client has an install entry")
}

/// `command` as one shell word: unchanged when it needs no quoting, else quoted.
fn shell_word(command: &str) -> String {
    // A path cannot hold NUL, the one thing `try_quote` refuses.
    shlex::try_quote(command).map_or_else(|_| command.to_owned(), |quoted| quoted.into_owned())
}

/// holdline's local entry for `client`: it runs `command` (this `holdline-mcp`) over
/// stdio, with `HOLDLINE_HUB` set when `hub` is given.
fn local_entry(client: Client, command: &str, hub: Option<&str>) -> Value {
    let mut env = Map::new();
    if let Some(hub) = hub {
        env.insert("HOLDLINE_HUB".into(), json!(hub));
    }
    let mut env_long = env.clone();
    env_long.insert(
        "HOLDLINE_MAX_WAIT_SEC".into(),
        json!(BRIDGE_WAIT_SEC.to_string()),
    );
    (files_of(client).local)(&Local {
        command,
        env,
        env_long,
    })
}

/// holdline's remote entry for `client` (see `ClientFiles::remote`).
pub fn remote_entry(client: Client, remote: &Remote) -> Value {
    let headers = json!({"Authorization": remote.bearer()});
    let mut headers_long = headers.clone();
    headers_long[MAX_WAIT_HEADER] = json!(BRIDGE_WAIT_SEC.to_string());
    (files_of(client).remote)(&RemoteParts {
        url: remote.url.as_str(),
        headers,
        headers_long,
    })
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

/// Builds the plan for `client` from its entry of `INSTALL`.
pub fn plan(client: Client, setup: &Setup) -> Plan {
    let files = files_of(client);
    let (entry, decided, other_transport) = wanted_entry(client, setup);
    let mut configs: Vec<ConfigTarget> = (files.configs)(setup)
        .into_iter()
        .map(|path| ConfigTarget {
            path,
            format: files.format,
            entry: entry.clone(),
            env_key: files.env_key,
            decided: decided.clone(),
            other_transport: other_transport.clone(),
            holds_key: setup.remote.is_some(),
        })
        .collect();
    configs.extend(files.settings.map(|settings| settings(setup)));
    Plan {
        client,
        configs,
        rule: (files.rule)(setup),
        trusted_folders: files.trusted_folders.map(|f| f(setup)),
        permissions: files.permissions.map(|f| f(setup)),
        hooks: files.hooks.map(|f| f(setup)),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_installable_client_has_one_install_entry_in_the_tables_order() {
        let ids: Vec<Client> = INSTALL.iter().map(|f| f.id).collect();
        assert_eq!(ids, INSTALLABLE.to_vec());
    }

    /// A client has hook files here exactly when `hook --client` answers it, and then the
    /// contract's entry has its hook facts.
    #[test]
    fn hook_files_hook_facts_and_hook_clients_agree() {
        let hook_clients: Vec<Client> = <HookClient as clap::ValueEnum>::value_variants()
            .iter()
            .map(|h| h.id())
            .collect();
        for files in INSTALL {
            let answered = hook_clients.contains(&files.id);
            assert_eq!(files.hooks.is_some(), answered, "{:?}", files.id);
            assert_eq!(files.id.facts().hooks.is_some(), answered, "{:?}", files.id);
        }
    }
}
