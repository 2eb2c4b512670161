//! How long one `wait_for_user_input` call may block in each MCP client, and what each
//! client does with a result, read from each client's measured facts in the contract's
//! client table (`holdline_contract::clients`; docs/clients-compatibility.md has the
//! measurements and how they were taken).
//!
//! Invariant: a wait answers "no reply yet" a margin before the client's own timer would
//! end the call; it blocks without limit only where that client's timer is reset by the
//! progress notifications the bridge sends (so only when the client gave a progress token).

use std::time::Duration;

use holdline_contract::clients::CLIENTS;
pub use holdline_contract::clients::{ClientLimit, Images};

/// The table entry for a client by its `clientInfo.name`, if it is known, and the needle
/// that matched (the first entry of [`CLIENTS`] that has one).
pub fn known_client(name: &str) -> Option<(&'static ClientLimit, &'static str)> {
    let name = name.to_lowercase();
    CLIENTS
        .iter()
        .filter_map(|c| c.limit.as_ref())
        .find_map(|c| {
            let needle = c.needles.iter().find(|n| {
                if c.exact {
                    name == **n
                } else {
                    name.contains(**n)
                }
            })?;
            Some((c, *needle))
        })
}

/// Whether a result with images may also carry `structuredContent` for this client.
pub fn images_beside_structure(client_name: Option<&str>) -> bool {
    client_name
        .and_then(known_client)
        .is_none_or(|(c, _)| c.images_beside_structure)
}

/// What this client does with image blocks; clients not in the table get them.
pub fn images(client_name: Option<&str>) -> Images {
    client_name
        .and_then(known_client)
        .map_or(Images::Blocks, |(c, _)| c.images)
}

/// The longest single wait the person set (`HOLDLINE_MAX_WAIT_SEC` for the stdio bridge,
/// the [`holdline_contract::routes::MAX_WAIT_HEADER`] of a remote entry for `/mcp`, since
/// the hub cannot read the client's environment).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MaxWait {
    /// Not set: the client's measured limit decides.
    #[default]
    ClientDefault,
    /// Set to 0: no limit of holdline's own (a task, where no client timer runs, too).
    Unlimited,
    /// At most this long.
    AtMost(Duration),
}

impl MaxWait {
    /// A setting in seconds (0: no limit); `None` when it is not a number.
    pub fn parse(value: &str) -> Option<MaxWait> {
        let secs = value.trim().parse::<u64>().ok()?;
        Some(match secs {
            0 => MaxWait::Unlimited,
            s => MaxWait::AtMost(Duration::from_secs(s)),
        })
    }
}

/// How the client reaches the tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Transport {
    /// A `holdline-mcp` process the client started.
    #[default]
    Stdio,
    /// The hub's `/mcp` over HTTP: some clients time HTTP calls differently.
    Http,
}

/// Clients not in the table: the MCP TypeScript SDK's 60 s default, minus a margin.
pub const UNKNOWN_CLIENT_WAIT: u64 = 50;

/// What the wait limit of one call was chosen from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LimitSource {
    /// The call's `timeoutSec`.
    Argument,
    /// `HOLDLINE_MAX_WAIT_SEC`.
    Environment,
    /// `MCP_TOOL_TIMEOUT` (Claude Code's setting) under the client's own limit.
    ToolTimeout,
    /// The table entry for this client; `progress` when its timer is reset by progress.
    Client {
        needle: &'static str,
        progress: bool,
    },
    /// A client not in the table.
    Unknown,
}

/// The inputs of [`choose`].
#[derive(Debug, Clone, Default)]
pub struct LimitInputs<'a> {
    pub client_name: Option<&'a str>,
    pub has_progress_token: bool,
    pub argument_secs: Option<u64>,
    /// The person's longest wait.
    pub max_wait: MaxWait,
    /// `MCP_TOOL_TIMEOUT`, in the bridge's environment.
    pub tool_timeout: Option<Duration>,
    pub transport: Transport,
}

/// How long one call may block before answering "no reply yet" (`None`: until a reply),
/// and why.
pub fn choose(inputs: &LimitInputs<'_>) -> (Option<Duration>, LimitSource) {
    if let Some(secs) = inputs.argument_secs.filter(|s| *s > 0) {
        return (Some(Duration::from_secs(secs)), LimitSource::Argument);
    }
    match inputs.max_wait {
        MaxWait::ClientDefault => {}
        MaxWait::Unlimited => return (None, LimitSource::Environment),
        MaxWait::AtMost(limit) => return (Some(limit), LimitSource::Environment),
    }
    let Some(name) = inputs.client_name.map(str::to_lowercase) else {
        return (
            Some(Duration::from_secs(UNKNOWN_CLIENT_WAIT)),
            LimitSource::Unknown,
        );
    };
    let Some((entry, needle)) = known_client(&name) else {
        return (
            Some(Duration::from_secs(UNKNOWN_CLIENT_WAIT)),
            LimitSource::Unknown,
        );
    };
    let progress = entry.progress_resets && inputs.has_progress_token;
    let mut limit = if progress {
        None
    } else {
        entry.wait_secs.map(Duration::from_secs)
    };
    let mut source = LimitSource::Client { needle, progress };
    if let Some(idle) = entry.http_idle_wait
        && inputs.transport == Transport::Http
        && !progress
    {
        limit = limit.map(|l| l.min(Duration::from_secs(idle)));
    }
    if entry.reads_tool_timeout
        && let Some(hard) = inputs.tool_timeout
    {
        // A hard limit that progress does not extend: end a margin before it.
        let capped = hard.saturating_sub(margin(hard));
        if limit.is_none_or(|l| capped < l) {
            limit = Some(capped.max(Duration::from_secs(1)));
            source = LimitSource::ToolTimeout;
        }
    }
    (limit, source)
}

/// How much earlier than a client's limit the bridge answers: a tenth, 2 to 30 seconds.
pub fn margin(limit: Duration) -> Duration {
    (limit / 10).clamp(Duration::from_secs(2), Duration::from_secs(30))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_code_over_http_without_progress_ends_under_its_300_s_idle_watchdog() {
        let over = |http: bool, progress: bool| {
            choose(&LimitInputs {
                client_name: Some("claude-code"),
                has_progress_token: progress,
                transport: if http {
                    Transport::Http
                } else {
                    Transport::Stdio
                },
                ..LimitInputs::default()
            })
            .0
            .map(|d| d.as_secs())
        };
        assert_eq!(over(true, false), Some(270));
        assert_eq!(over(false, false), Some(1740));
        assert_eq!(over(true, true), None);
    }

    fn limit(name: Option<&str>, progress: bool) -> Option<u64> {
        let inputs = LimitInputs {
            client_name: name,
            has_progress_token: progress,
            ..LimitInputs::default()
        };
        choose(&inputs).0.map(|d| d.as_secs())
    }

    #[test]
    fn measured_clients() {
        assert_eq!(limit(Some("codex-mcp-client"), true), Some(290));
        assert_eq!(limit(Some("gemini-cli-mcp-client"), true), Some(570));
        assert_eq!(
            limit(Some("qwen-cli-mcp-client-holdline"), false),
            Some(570)
        );
        assert_eq!(limit(Some("@cline/core"), false), Some(50));
        assert_eq!(limit(Some("continue-cli-client"), false), Some(50));
        // Progress resets these clients' timers: no limit, but only with a token.
        assert_eq!(limit(Some("opencode"), true), None);
        assert_eq!(limit(Some("opencode"), false), Some(50));
        assert_eq!(limit(Some("kilo"), true), None);
        assert_eq!(limit(Some("kilo"), false), Some(50));
        assert_eq!(limit(Some("factory-cli-mcp-client"), true), Some(170));
        assert_eq!(limit(Some("grok-cli"), true), Some(50));
        assert_eq!(limit(Some("copilot-cli"), true), None);
        assert_eq!(limit(Some("claude-code"), true), None);
        assert_eq!(limit(Some("claude-code"), false), Some(1740));
        assert_eq!(limit(Some("kimi-code"), true), Some(50));
    }

    #[test]
    fn public_reports_and_unknown_clients() {
        assert_eq!(limit(Some("cursor-vscode"), true), Some(540));
        assert_eq!(limit(Some("Visual Studio Code"), true), Some(270));
        assert_eq!(
            limit(Some("something-new"), true),
            Some(UNKNOWN_CLIENT_WAIT)
        );
        assert_eq!(limit(None, true), Some(UNKNOWN_CLIENT_WAIT));
        // `mcp` is a name of its own (Vibe's), not every name that contains it.
        assert_eq!(limit(Some("mcp"), true), Some(50));
        assert_eq!(limit(Some("my-mcp-thing"), true), Some(UNKNOWN_CLIENT_WAIT));
    }

    #[test]
    fn argument_then_environment_then_tool_timeout() {
        let mut inputs = LimitInputs {
            client_name: Some("claude-code"),
            has_progress_token: true,
            argument_secs: Some(7),
            max_wait: MaxWait::AtMost(Duration::from_secs(9)),
            tool_timeout: Some(Duration::from_secs(120)),
            transport: Transport::Stdio,
        };
        assert_eq!(
            choose(&inputs),
            (Some(Duration::from_secs(7)), LimitSource::Argument)
        );
        inputs.argument_secs = None;
        assert_eq!(choose(&inputs).1, LimitSource::Environment);
        inputs.max_wait = MaxWait::ClientDefault;
        assert_eq!(
            choose(&inputs),
            (Some(Duration::from_secs(108)), LimitSource::ToolTimeout)
        );
        inputs.client_name = Some("codex-mcp-client");
        assert_eq!(choose(&inputs).0, Some(Duration::from_secs(290)));
    }

    #[test]
    fn a_max_wait_of_zero_is_no_limit_and_text_is_no_setting() {
        assert_eq!(MaxWait::parse("0"), Some(MaxWait::Unlimited));
        assert_eq!(
            MaxWait::parse(" 30 "),
            Some(MaxWait::AtMost(Duration::from_secs(30)))
        );
        assert_eq!(MaxWait::parse("soon"), None);
        let inputs = LimitInputs {
            client_name: Some("codex-mcp-client"),
            max_wait: MaxWait::Unlimited,
            ..LimitInputs::default()
        };
        assert_eq!(choose(&inputs), (None, LimitSource::Environment));
    }

    #[test]
    fn only_codex_loses_images_beside_structured_content() {
        assert!(!images_beside_structure(Some("codex-mcp-client")));
        assert!(!images_beside_structure(Some("Codex")));
        assert!(images_beside_structure(Some("claude-code")));
        assert!(images_beside_structure(None));
    }

    #[test]
    fn cline_and_continue_turn_images_into_text_copilot_and_grok_drop_them() {
        assert_eq!(images(Some("@cline/core")), Images::AsText);
        assert_eq!(images(Some("cline")), Images::AsText);
        assert_eq!(images(Some("continue-cli-client")), Images::AsText);
        assert_eq!(images(Some("Continue")), Images::AsText);
        assert_eq!(images(Some("github-copilot-cli")), Images::Dropped);
        assert_eq!(images(Some("mcp")), Images::Dropped);
        assert_eq!(images(Some("kimi-code")), Images::Blocks);
        assert_eq!(images(Some("grok-cli")), Images::Dropped);
        assert_eq!(images(Some("claude-code")), Images::Blocks);
        assert_eq!(images(Some("codex-mcp-client")), Images::Blocks);
        assert_eq!(images(Some("something-new")), Images::Blocks);
        assert_eq!(images(None), Images::Blocks);
    }
}
