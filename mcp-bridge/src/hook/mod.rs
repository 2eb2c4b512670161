//! `holdline-mcp hook --client NAME`: the bridge binary as a client's lifecycle hook, the
//! agent's second entry beside the MCP tools. It reads the hook's JSON on stdin and answers
//! in the client's shape on stdout: the end of a turn (`Stop` in Claude Code, Codex and Qwen
//! Code, `AfterAgent` in Gemini CLI, `stop` in Cursor; [`shape`] says which and how each
//! reads its payload and continues the turn): the agent's last message becomes the
//! person's question and their reply continues the turn ([`stop`]); and `PermissionRequest` (Claude
//! Code, Codex, Qwen Code): the tool call becomes a question with Allow / Deny
//! ([`permission`]).
//!
//! Invariants: the hook always exits 0 and lets the client go on (no decision) unless the
//! person's reply was written; whatever fails is one line on stderr, never a hang (stdin,
//! every hub call and the wait are bounded); a reply is acked only after its answer was
//! written, so a reply whose hook was killed stays at the hub for the next hook or wait
//! (a permission answer stays only for its own question's wait: the hub drops it after).

pub mod input;
mod permission;
mod shape;
mod stop;
mod turn;
mod wait;

use std::{process::ExitCode, time::Duration};

use holdline_contract::{
    HubError,
    clients::{ClientId, HookFacts},
};

use crate::config::Config;
use input::InputError;

/// How long before the client's hook timeout the hook gives up waiting and lets the turn
/// end: room to cancel its wait at the hub and exit before the client kills it.
const TIMEOUT_MARGIN: Duration = Duration::from_secs(30);
/// The shortest wait a hook holds, whatever timeout it is given.
const MIN_WAIT: Duration = Duration::from_secs(5);

/// `holdline-mcp hook`'s arguments.
#[derive(Debug, clap::Args)]
pub struct HookArgs {
    /// The client whose hook runs this command: its payload and answer shapes.
    #[arg(long, value_enum)]
    pub client: HookClient,
    /// The hook's timeout as the client's settings give it, in seconds (default: the
    /// client's own default); the hook stops waiting 30 s before it.
    #[arg(long, value_name = "SECONDS")]
    pub timeout_sec: Option<u64>,
    /// How long a `PermissionRequest` waits for the person at the hub before the client's
    /// own prompt takes over, in seconds (default: Claude Code, the whole hook time, as
    /// its dialog shows beside the hook; Codex, 60, as its prompt waits for the hook).
    #[arg(long, value_name = "SECONDS", env = "HOLDLINE_PERMISSION_WAIT_SEC")]
    pub permission_wait_sec: Option<u64>,
}

/// The clients whose hooks this command answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum HookClient {
    ClaudeCode,
    Codex,
    /// Qwen Code: Claude Code's events and answers in `~/.qwen/settings.json`.
    Qwen,
    /// Gemini CLI: `AfterAgent` in `~/.gemini/settings.json`.
    Gemini,
    /// Cursor: `stop` in `~/.cursor/hooks.json`, answered with `followup_message`.
    Cursor,
}

impl HookClient {
    /// The client's entry in the contract's table.
    pub fn id(self) -> ClientId {
        match self {
            HookClient::ClaudeCode => ClientId::ClaudeCode,
            HookClient::Codex => ClientId::Codex,
            HookClient::Qwen => ClientId::Qwen,
            HookClient::Gemini => ClientId::Gemini,
            HookClient::Cursor => ClientId::Cursor,
        }
    }

    /// The client's hook facts in the contract's table.
    pub fn facts(self) -> &'static HookFacts {
        self.id()
            .facts()
            .hooks
            .as_ref()
            .expect("a hook client's table entry has hooks")
    }

    /// The client's name as `--client` and the installer spell it.
    pub fn name(self) -> &'static str {
        self.id()
            .name()
            .expect("a hook client is one install takes")
    }

    /// The client as the person reads it in a session's title.
    pub(super) fn display(self) -> &'static str {
        self.id().facts().title
    }

    /// A command hook's timeout when its entry gives none: Claude Code's 600 s
    /// (docs/clients-compatibility.md, "Lifecycle hooks"); Codex's is not readable from
    /// its binary, so the same, and the installer writes an explicit one; Qwen Code's and
    /// Gemini CLI's are 60 s; Cursor documents none, so the shorter of the two, and the
    /// installer writes an explicit one.
    fn default_timeout(self) -> Duration {
        Duration::from_secs(self.facts().default_timeout_secs)
    }

    /// How long a permission question waits when `--permission-wait-sec` says nothing.
    /// Claude Code shows its dialog while the hook runs (the first answer wins), so the
    /// hook may wait its whole time; Codex shows its prompt only after the hook returned
    /// without a decision, so a person at the terminal waits this long
    /// (docs/clients.md, "Lifecycle hooks").
    /// Qwen Code's hook has 30 s in all (its 60 s limit), and Gemini CLI and Cursor ask none.
    fn default_permission_wait(self) -> Option<Duration> {
        self.facts()
            .default_permission_wait_secs
            .map(Duration::from_secs)
    }
}

/// Why the hook lets the client go on without a decision: said in one line on stderr.
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    #[error("{0}; the client goes on")]
    Input(#[from] InputError),
    #[error("the {0:?} event is not one this hook answers (only {1}); the client goes on")]
    UnknownEvent(String, &'static str),
    #[error("could not start: {0}; the client goes on")]
    Runtime(std::io::Error),
    #[error("{0}; the client goes on")]
    Hub(#[from] HubError),
    #[error(
        "no reply within {} s; the turn ends, and a later reply waits for the next stop or wait",
        .0.as_secs()
    )]
    NoReplyInTime(Duration),
    #[error(
        "stopped by {0} while waiting; the client goes on (a later reply to a stop waits for the next stop or wait)"
    )]
    Stopped(&'static str),
    #[error(
        "no answer within {} s; the client's own permission prompt decides",
        .0.as_secs()
    )]
    NoDecisionInTime(Duration),
    #[error(
        "could not write the answer ({0}); the reply is not consumed (a stop's reply waits for the next stop)"
    )]
    Write(std::io::Error),
}

/// How long a hook given `timeout` waits for the person before it lets the turn end.
pub fn held_for(timeout: Duration) -> Duration {
    timeout.saturating_sub(TIMEOUT_MARGIN).max(MIN_WAIT)
}

/// Answers one hook: always exit 0; a failure is one line on stderr.
pub fn run(args: &HookArgs) -> ExitCode {
    if let Err(why) = answer(args) {
        eprintln!("holdline-mcp hook: {why}");
    }
    ExitCode::SUCCESS
}

/// The events this command answers.
enum Event {
    Stop,
    PermissionRequest,
}

fn answer(args: &HookArgs) -> Result<(), HookError> {
    let input = args.client.read_input(&input::read_stdin()?)?;
    let event = match input.hook_event_name.as_str() {
        name if name == args.client.stop_event() => Event::Stop,
        "PermissionRequest" if args.client.asks_permission() => Event::PermissionRequest,
        _ => {
            return Err(HookError::UnknownEvent(
                input.hook_event_name,
                args.client.events(),
            ));
        }
    };
    let config = Config::from_env();
    let timeout = args
        .timeout_sec
        .map_or(args.client.default_timeout(), Duration::from_secs);
    let hook_time = held_for(timeout);
    // One thread: the hook holds one wait, as the bridge does.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(HookError::Runtime)?;
    let client = args.client;
    match event {
        Event::Stop => runtime.block_on(stop::answer_stop(client, &config, &input, hook_time)),
        Event::PermissionRequest => {
            let asked = args
                .permission_wait_sec
                .map(Duration::from_secs)
                .or(client.default_permission_wait());
            let wait = asked.map_or(hook_time, |a| a.min(hook_time));
            runtime.block_on(permission::answer_permission(client, &config, &input, wait))
        }
    }
}
