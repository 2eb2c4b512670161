//! The command line (clap): subcommands and `serve`'s flags; parsing only.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Parser, Subcommand};

use super::validate::parse_listen;

#[derive(Debug, Parser)]
#[command(
    name = "holdline-hub",
    version,
    about = "holdline hub: keeps IDE agents' turns alive while a person answers from a browser"
)]
pub struct Cli {
    /// The holdline home folder (config.toml, secret, db/, archive/, logs/).
    #[arg(long, global = true, env = "HOLDLINE_HOME", value_name = "DIR")]
    pub home: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the hub in the foreground (what the service runs).
    Serve(ServeArgs),
    /// Print the panel URL with the secret, and a QR code for phones.
    PanelUrl {
        /// Leave out the QR code.
        #[arg(long)]
        no_qr: bool,
    },
    /// Is the hub up? Sessions, waits, sync state, its PID and what started it.
    Status,
    /// What the agents' attachment files take, per owner and in all, against the
    /// quotas; with a flag, free space first.
    Attachments {
        /// Release now the files the retention rule releases (`[attachments] keep_sec`).
        #[arg(long)]
        prune: bool,
        /// Release every file of this agent key's sessions.
        #[arg(long, value_name = "NAME", conflicts_with = "prune")]
        free_key: Option<String>,
        /// Release every file of the hub secret's sessions.
        #[arg(long, conflicts_with_all = ["prune", "free_key"])]
        free_secret: bool,
        /// Release every file.
        #[arg(long, conflicts_with_all = ["prune", "free_key", "free_secret"])]
        free_all: bool,
    },
    /// Stop the running hub (SIGTERM; it finishes its requests and flushes),
    /// however it was started.
    Stop,
    /// List sessions, waiting first.
    Sessions {
        /// Include merged and archived sessions.
        #[arg(long)]
        all: bool,
    },
    /// Send a reply to a session, as the panel would.
    Reply {
        /// The session's token (`ct_` and 32 hex digits; `holdline-hub sessions` lists them).
        #[arg(value_name = "TOKEN")]
        token: String,
        /// The reply, as the person would type it (quote it in the shell); may be left
        /// out with --choose.
        #[arg(value_name = "TEXT", required_unless_present = "choose")]
        text: Option<String>,
        /// Pick the agent's offered options by number as listed (1 for the first;
        /// several comma separated when the question takes several).
        #[arg(long, value_name = "N[,M]", value_delimiter = ',', value_parser = clap::value_parser!(u32).range(0..=10))]
        choose: Vec<u32>,
        /// The `seq` of the agent's message this answers: if the agent has
        /// asked something newer since, nothing is sent and the command fails
        /// naming the current question.
        #[arg(long, value_name = "SEQ")]
        in_reply_to: Option<u64>,
    },
    /// Write every session in the sessions.json format.
    Export {
        /// Write here instead of standard output.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Read a sessions.json (from holdline or the earlier Node hub).
    Import {
        /// The sessions.json to read (`holdline-hub export` writes one); sessions the
        /// hub already has are skipped.
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
    /// Back the store up into `<home>/backups/` now (through the running hub, or
    /// directly when none runs); the newest 7 backups are kept.
    Backup,
    /// Check a store or a backup whole: that it opens, holds every session its
    /// last write recorded, and every record reads. Exits 1 when it does not.
    Verify {
        /// The store folder or backup to check (default: the home's store).
        #[arg(value_name = "PATH")]
        path: Option<PathBuf>,
    },
    /// Put a backup in place of the home's store (no hub may run); the store
    /// it replaces is kept beside it, renamed.
    Restore {
        /// A backup folder, such as `<home>/backups/store-20260101T030000Z`.
        #[arg(value_name = "BACKUP")]
        backup: PathBuf,
    },
    /// Print the effective configuration, secrets masked.
    Config,
    /// Notification channels (`[notify]` in config.toml).
    Notify {
        #[command(subcommand)]
        action: NotifyAction,
    },
    /// Agent keys: credentials for one agent machine that open the agent
    /// routes only, each revocable on its own.
    Key {
        #[command(subcommand)]
        action: KeyAction,
    },
}

#[derive(Debug, Subcommand)]
pub enum KeyAction {
    /// Make a key: prints it alone on the first line of standard output
    /// (shown this once; the hub keeps only its hash), how to use it on stderr.
    Create {
        /// The key's name, e.g. the machine it is for: 1 to 64 letters, digits, `.`, `_`, `-`.
        #[arg(long, value_name = "NAME")]
        name: String,
        /// Also print, after the key, the `holdline-mcp install --client CLIENT --url …
        /// --key …` command that writes this client's remote entry (the hub's `/mcp` URL
        /// and the key) on the agent's machine.
        #[arg(
            long,
            value_name = "CLIENT",
            value_parser = clap::builder::PossibleValuesParser::new(holdline_contract::clients::CLIENT_NAMES)
        )]
        print_config: Option<String>,
    },
    /// List the keys: name, when made, when last used.
    List,
    /// Revoke a key: refused from now on, its open waits end at once.
    Revoke {
        /// The key's name (`holdline-hub key list` shows them).
        #[arg(value_name = "NAME")]
        name: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum NotifyAction {
    /// Send a test notification to every channel and report each result.
    Test,
}

#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on, HOST:PORT: 127.0.0.1:13458 (this machine only, the
    /// default) or 0.0.0.0:13458 for the LAN.
    #[arg(long, env = "HOLDLINE_LISTEN", value_name = "HOST:PORT", value_parser = parse_listen)]
    pub listen: Option<SocketAddr>,
    /// MongoDB URI for optional sync (database `holdline`).
    #[arg(
        long,
        env = "HOLDLINE_MONGO_URI",
        value_name = "URI",
        hide_env_values = true
    )]
    pub mongo_uri: Option<String>,
}
