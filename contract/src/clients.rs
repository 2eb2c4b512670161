//! Every MCP client holdline knows, one entry each in [`CLIENTS`]: the name `install
//! --client` takes, the name people read, how its MCP client names itself in `initialize`
//! and how a long tool call fares in it (measured; docs/clients-compatibility.md), what it
//! does with a result's images, and its lifecycle hooks. The tools (wait limits, images),
//! the installer and the hub (`key create --print-config CLIENT`) read this table; the
//! installer keeps beside it, keyed by [`ClientId`], only where each client's files are and
//! how they are shaped (it alone writes them, and the hub must not link it).
//!
//! Invariant: a client is one entry here; every other list of clients (`--client`'s
//! values, [`CLIENT_NAMES`], the wait limits) is read from it, in its order.

/// A client holdline knows: the key of its entry in [`CLIENTS`] (and of the installer's
/// entry beside it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClientId {
    Cursor,
    ClaudeCode,
    Codex,
    Vscode,
    Windsurf,
    Trae,
    Cline,
    Gemini,
    Qwen,
    Copilot,
    Opencode,
    Continue,
    Kilo,
    Droid,
    MistralVibe,
    KimiCode,
    Openhands,
    RooCode,
    Zed,
    GrokCli,
}

/// One client, all holdline knows of it outside its files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientFacts {
    pub id: ClientId,
    /// The client as the person reads it (a hook session's title).
    pub title: &'static str,
    /// Its `--client` name and help; `None`: holdline does not install into it.
    pub install: Option<Installable>,
    /// How it names itself and fares with a long tool call; `None`: not known.
    pub limit: Option<ClientLimit>,
    /// Its lifecycle hooks holdline answers; `None`: none.
    pub hooks: Option<HookFacts>,
}

/// How `install --client` names a client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Installable {
    pub name: &'static str,
    /// The line `--help` shows beside the name.
    pub help: Option<&'static str>,
}

/// One client's measured behaviour with a long tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientLimit {
    /// Matched against the lowercased `clientInfo.name`: contained in it, or equal to it
    /// when `exact` (a generic name such as the Python SDK's `mcp`).
    pub needles: &'static [&'static str],
    pub exact: bool,
    /// What the bridge waits at most, a margin under the client's limit; `None`: no limit.
    pub wait_secs: Option<u64>,
    /// Whether progress notifications reset the client's timer (then, with a progress
    /// token, the bridge waits without limit).
    pub progress_resets: bool,
    /// Whether the model still sees a result's images when it also has
    /// `structuredContent` (Codex hands the model only `structuredContent` when there is
    /// one, and drops the images).
    pub images_beside_structure: bool,
    /// What the client does with a result's image blocks.
    pub images: Images,
    /// Over HTTP, an idle watchdog that only progress resets: a wait without progress
    /// ends this many seconds in (Claude Code: 300 s, less a margin).
    pub http_idle_wait: Option<u64>,
    /// Whether the client's hard tool timeout is `MCP_TOOL_TIMEOUT` in its servers'
    /// environment (Claude Code's setting), which progress does not extend.
    pub reads_tool_timeout: bool,
}

/// What a client does with the image blocks of a tool result, as measured
/// (tests/clients: check 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Images {
    /// The model gets them as images.
    Blocks,
    /// The client serialises the result as JSON text: an image block reaches the model as
    /// base64 text (hundreds of KB of tokens), never as an image (Cline, Continue).
    AsText,
    /// The client drops image blocks; the model never sees them (Copilot CLI).
    Dropped,
}

/// The unit of a hook's `timeout` in the client's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeoutUnit {
    Seconds,
    Milliseconds,
}

/// A client's lifecycle hooks (docs/clients.md, "Lifecycle hooks").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HookFacts {
    /// The event that fires when the agent is about to end its turn.
    pub stop_event: &'static str,
    /// Whether it has a `PermissionRequest` hook.
    pub asks_permission: bool,
    /// A command hook's timeout when its entry gives none, in seconds.
    pub default_timeout_secs: u64,
    /// How long a permission question waits when `--permission-wait-sec` says nothing;
    /// `None`: the whole hook time.
    pub default_permission_wait_secs: Option<u64>,
    pub timeout_unit: TimeoutUnit,
    /// How long the client waits for a stop hook whatever its `timeout` says, when it
    /// does (then install gives the hook that timeout, so the hook ends the turn first).
    pub stop_wait_limit_secs: Option<u64>,
}

const fn measured(needles: &'static [&'static str], wait_secs: u64, progress: bool) -> ClientLimit {
    ClientLimit {
        needles,
        exact: false,
        wait_secs: Some(wait_secs),
        progress_resets: progress,
        images_beside_structure: true,
        images: Images::Blocks,
        http_idle_wait: None,
        reads_tool_timeout: false,
    }
}

const fn hooks(stop_event: &'static str, permission: bool, default_timeout: u64) -> HookFacts {
    HookFacts {
        stop_event,
        asks_permission: permission,
        default_timeout_secs: default_timeout,
        default_permission_wait_secs: None,
        timeout_unit: TimeoutUnit::Seconds,
        stop_wait_limit_secs: None,
    }
}

const fn client(id: ClientId, title: &'static str, name: &'static str) -> ClientFacts {
    ClientFacts {
        id,
        title,
        install: Some(Installable { name, help: None }),
        limit: None,
        hooks: None,
    }
}

const fn help(name: &'static str, help: &'static str) -> Option<Installable> {
    Some(Installable {
        name,
        help: Some(help),
    })
}

/// Mistral Vibe and OpenHands CLI both name themselves `mcp` (the Python SDK's default),
/// so one row serves both. Vibe: 60 s unless `tool_timeout_sec`, no progress token, no
/// cancel; its code mode hands the model a result's `structuredContent` (else its text),
/// never an image. OpenHands CLI 1.16.0 (fastmcp): 300 s per call (the SDK's hard limit), a
/// progress token that resets nothing; it hands the model a result's images only when
/// LiteLLM knows the model has vision, so a file path (which it can open) always works.
const PYTHON_SDK: ClientLimit = ClientLimit {
    exact: true,
    images: Images::Dropped,
    ..measured(&["mcp"], 50, false)
};

/// Every client, in `--client`'s order. A `clientInfo.name` that contains the needles of
/// two entries takes the first; no needle contains another's (tested). Limits are measured
/// (docs/clients-compatibility.md has the version); Cursor's, VS Code's, Windsurf's and
/// Trae's come from public reports.
pub const CLIENTS: &[ClientFacts] = &[
    ClientFacts {
        limit: Some(measured(&["cursor"], 540, false)),
        hooks: Some(hooks("stop", false, 60)),
        ..client(ClientId::Cursor, "Cursor", "cursor")
    },
    // Per-server `timeout` / MCP_TOOL_TIMEOUT, else 1e8 ms; an idle watchdog (1,800 s on
    // stdio, 300 s over HTTP) that progress resets.
    ClientFacts {
        limit: Some(ClientLimit {
            http_idle_wait: Some(270),
            reads_tool_timeout: true,
            ..measured(&["claude"], 1740, true)
        }),
        hooks: Some(hooks("Stop", true, 600)),
        ..client(ClientId::ClaudeCode, "Claude Code", "claude-code")
    },
    // 300 s (`tool_timeout_sec`), progress ignored; shows the model only
    // `structuredContent` when a result has one. Its hook timeout is not readable from its
    // binary, so Claude Code's; its prompt waits for the permission hook, so 60 s.
    ClientFacts {
        limit: Some(ClientLimit {
            images_beside_structure: false,
            ..measured(&["codex"], 290, false)
        }),
        hooks: Some(HookFacts {
            default_permission_wait_secs: Some(60),
            ..hooks("Stop", true, 600)
        }),
        ..client(ClientId::Codex, "Codex", "codex")
    },
    ClientFacts {
        limit: Some(measured(&["visual studio code", "vscode"], 270, false)),
        ..client(ClientId::Vscode, "VS Code", "vscode")
    },
    ClientFacts {
        limit: Some(measured(&["windsurf"], 50, false)),
        ..client(ClientId::Windsurf, "Windsurf", "windsurf")
    },
    ClientFacts {
        limit: Some(measured(&["trae"], 50, false)),
        ..client(ClientId::Trae, "Trae", "trae")
    },
    // CLI and extension: 60 s unless `timeout` (seconds), no progress token; hands the
    // model the whole result as JSON text.
    ClientFacts {
        install: help(
            "cline",
            "Cline CLI 3.x and the Cline VS Code extension (both files)",
        ),
        limit: Some(ClientLimit {
            images: Images::AsText,
            ..measured(&["cline"], 50, false)
        }),
        ..client(ClientId::Cline, "Cline", "cline")
    },
    // 600 s (`timeout` ms), progress not honoured.
    ClientFacts {
        limit: Some(measured(&["gemini"], 570, false)),
        hooks: Some(HookFacts {
            timeout_unit: TimeoutUnit::Milliseconds,
            ..hooks("AfterAgent", false, 60)
        }),
        ..client(ClientId::Gemini, "Gemini CLI", "gemini")
    },
    // 600 s; its name is `qwen-cli-mcp-client-<server>`. It waits for its `Stop` hooks
    // over its message bus with that bus's default of 60 s, whatever their `timeout`; past
    // it the turn fails ("Request timed out waiting for hook-execution-response").
    ClientFacts {
        limit: Some(measured(&["qwen"], 570, false)),
        hooks: Some(HookFacts {
            stop_wait_limit_secs: Some(60),
            ..hooks("Stop", true, 60)
        }),
        ..client(ClientId::Qwen, "Qwen Code", "qwen")
    },
    // No limit seen in 661 s while progress flows; drops image blocks.
    ClientFacts {
        install: help("copilot", "GitHub Copilot CLI"),
        limit: Some(ClientLimit {
            images: Images::Dropped,
            ..measured(&["copilot"], 50, true)
        }),
        ..client(ClientId::Copilot, "Copilot CLI", "copilot")
    },
    // The SDK's 60 s unless `timeout`, reset by progress (held 662 s).
    ClientFacts {
        limit: Some(measured(&["opencode"], 50, true)),
        ..client(ClientId::Opencode, "opencode", "opencode")
    },
    // The SDK's 60 s, no progress token; hands the model the content array as JSON text.
    ClientFacts {
        install: help("continue", "Continue CLI (`cn`)"),
        limit: Some(ClientLimit {
            images: Images::AsText,
            ..measured(&["continue"], 50, false)
        }),
        ..client(ClientId::Continue, "Continue", "continue")
    },
    // opencode's MCP client: a 130 s call held where the SDK's 60 s would have ended it.
    ClientFacts {
        install: help(
            "kilo",
            "Kilo Code CLI (`kilo`, an opencode fork: the same entry shapes, its own folder)",
        ),
        limit: Some(measured(&["kilo"], 50, true)),
        ..client(ClientId::Kilo, "Kilo Code CLI", "kilo")
    },
    // `factory-cli-mcp-client`: 180 s per call (a 330 s wait ended at 181 s with "MCP
    // error -32001: Request timed out"), not extended by progress.
    ClientFacts {
        install: help("droid", "Factory Droid CLI (`droid`)"),
        limit: Some(measured(&["factory-cli"], 170, false)),
        ..client(ClientId::Droid, "Droid", "droid")
    },
    ClientFacts {
        install: help("mistral-vibe", "Mistral Vibe (`vibe`, PyPI `mistral-vibe`)"),
        limit: Some(PYTHON_SDK),
        ..client(ClientId::MistralVibe, "Mistral Vibe", "mistral-vibe")
    },
    // The TypeScript SDK's 60 s unless `toolTimeoutMs`, no progress token, cancels on its
    // timeout.
    ClientFacts {
        install: help(
            "kimi-code",
            "Kimi Code CLI (`kimi`, npm `@moonshot-ai/kimi-code`)",
        ),
        limit: Some(measured(&["kimi-code"], 50, false)),
        ..client(ClientId::KimiCode, "Kimi Code", "kimi-code")
    },
    ClientFacts {
        install: help("openhands", "OpenHands CLI (`openhands`, PyPI `openhands`)"),
        limit: Some(PYTHON_SDK),
        ..client(ClientId::Openhands, "OpenHands", "openhands")
    },
    ClientFacts {
        install: help(
            "roo-code",
            "Roo Code (VS Code extension); from its public docs, not measured",
        ),
        ..client(ClientId::RooCode, "Roo Code", "roo-code")
    },
    ClientFacts {
        install: help("zed", "Zed's agent; from its public docs, not measured"),
        ..client(ClientId::Zed, "Zed", "zed")
    },
    // `grok-cli` (@vibe-kit/grok-cli 0.0.34): the SDK's 60 s, no progress token (a wait
    // with no limit ended at 60.0 s with "MCP error -32001: Request timed out"); hands the
    // model only the text blocks, an image block as the words `[object Object]`.
    ClientFacts {
        id: ClientId::GrokCli,
        title: "Grok CLI",
        install: None,
        limit: Some(ClientLimit {
            images: Images::Dropped,
            ..measured(&["grok-cli"], 50, false)
        }),
        hooks: None,
    },
];

impl ClientId {
    /// This client's entry in [`CLIENTS`].
    pub fn facts(self) -> &'static ClientFacts {
        CLIENTS
            .iter()
            .find(|c| c.id == self)
            .expect("every client has an entry")
    }

    /// Its `--client` name; `None` for a client holdline does not install into.
    pub fn name(self) -> Option<&'static str> {
        self.facts().install.map(|i| i.name)
    }

    /// The client whose `--client` name is `name`.
    pub fn from_name(name: &str) -> Option<ClientId> {
        INSTALLABLE.iter().copied().find(|c| c.name() == Some(name))
    }
}

const fn installable_count() -> usize {
    let mut count = 0;
    let mut i = 0;
    while i < CLIENTS.len() {
        if CLIENTS[i].install.is_some() {
            count += 1;
        }
        i += 1;
    }
    count
}

const COUNT: usize = installable_count();

const fn installable() -> ([ClientId; COUNT], [&'static str; COUNT]) {
    let mut ids = [ClientId::Cursor; COUNT];
    let mut names = [""; COUNT];
    let (mut i, mut n) = (0, 0);
    while i < CLIENTS.len() {
        if let Some(install) = CLIENTS[i].install {
            ids[n] = CLIENTS[i].id;
            names[n] = install.name;
            n += 1;
        }
        i += 1;
    }
    (ids, names)
}

/// The clients `install` writes entries for, in [`CLIENTS`]' order.
pub const INSTALLABLE: [ClientId; COUNT] = installable().0;

/// Every `--client` name, in [`CLIENTS`]' order.
pub const CLIENT_NAMES: [&str; COUNT] = installable().1;

/// The command that writes a remote entry (the hub's `/mcp` at `url`, with the agent key
/// `key`) into `client`'s config on the agent's machine.
pub fn remote_install_command(client: &str, url: &str, key: &str) -> String {
    format!("holdline-mcp install --client {client} --url {url} --key {key}")
}

#[cfg(feature = "clap")]
impl clap::ValueEnum for ClientId {
    fn value_variants<'a>() -> &'a [Self] {
        &INSTALLABLE
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        let install = self.facts().install?;
        let value = clap::builder::PossibleValue::new(install.name);
        Some(match install.help {
            Some(help) => value.help(help),
            None => value,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_client_has_one_entry_and_installable_names_are_unique() {
        for (i, c) in CLIENTS.iter().enumerate() {
            assert!(CLIENTS[..i].iter().all(|o| o.id != c.id), "{:?}", c.id);
        }
        for (i, name) in CLIENT_NAMES.iter().enumerate() {
            assert!(!name.is_empty());
            assert!(!CLIENT_NAMES[..i].contains(name), "{name}");
            assert_eq!(
                ClientId::from_name(name).and_then(ClientId::name),
                Some(*name)
            );
        }
        assert_eq!(ClientId::from_name("grok-cli"), None);
        assert_eq!(ClientId::GrokCli.name(), None);
    }

    /// The first entry whose needles match wins, so no needle may match another entry.
    #[test]
    fn no_needle_contains_another_clients_needle() {
        let rows: Vec<(ClientId, &ClientLimit)> = CLIENTS
            .iter()
            .filter_map(|c| c.limit.as_ref().map(|l| (c.id, l)))
            .collect();
        for (id, limit) in &rows {
            for needle in limit.needles {
                for (other, o) in &rows {
                    let hit = o.needles.iter().any(|n| {
                        if o.exact {
                            n == needle
                        } else {
                            needle.contains(n)
                        }
                    });
                    // Vibe and OpenHands share one row: one name, one behaviour.
                    let shared = *o == *limit;
                    assert!(!hit || other == id || shared, "{needle}: {id:?}, {other:?}");
                }
            }
        }
    }
}
