//! CLI + env + `config.toml` → [`Config`]; flags beat env, env beats the file.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Parser, Subcommand};
use serde::{Deserialize, Serialize};

use crate::notify::config::{NotifyConfig, NotifyFile};

/// Default listen address: loopback only; the LAN is opted into (docs/security.md).
pub const DEFAULT_LISTEN: &str = "127.0.0.1:13458";

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
        /// The reply, as the person would type it (quote it in the shell).
        #[arg(value_name = "TEXT")]
        text: String,
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

/// A quick-reply template shown in the panel; one with a `lang` (`en`,
/// `zh`) shows only when the panel speaks that language.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Template {
    pub label: String,
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lang: Option<String>,
}

/// sled's page cache when `cache_mb` is not set. Every session's metadata is
/// in memory anyway; the cache serves history reads and writes, and each MiB
/// of it is resident (docs/benchmarks-history.md: 32 → 8 saved ~5 MiB at 10,000
/// waiting sessions with no measurable cost in reply latency).
pub const DEFAULT_CACHE_MB: u64 = 8;
/// A little longer than one poll hold (10 s) plus the time an agent takes to
/// call again after "no reply yet" (a model round trip).
pub const DEFAULT_WAIT_GRACE_SEC: u64 = 30;
pub const MAX_WAIT_GRACE_SEC: u64 = 86_400;

/// `config.toml`, every key optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    #[serde(default, deserialize_with = "listen_from_file")]
    pub listen: Option<SocketAddr>,
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    #[serde(default)]
    pub allowed_origins: Vec<String>,
    pub mongo_uri: Option<String>,
    pub poll_timeout_ms: Option<u64>,
    pub wait_grace_sec: Option<u64>,
    pub continue_prompt: Option<String>,
    pub max_auto_streak: Option<u32>,
    pub cache_mb: Option<u64>,
    pub templates: Option<Vec<Template>>,
    /// Checked by [`NotifyConfig::from_file`], which needs the text to name lines.
    pub notify: Option<NotifyFile>,
    /// `[mcp]`: what `/mcp` keeps per credential.
    pub mcp: Option<McpFile>,
}

/// Everything the hub runs with.
#[derive(Debug, Clone)]
pub struct Config {
    pub home: PathBuf,
    pub listen: SocketAddr,
    /// Host names (besides localhost and IP literals) the hub answers to.
    pub allowed_hosts: Vec<String>,
    /// Origins (besides the hub's own) allowed to call the API from a browser.
    pub allowed_origins: Vec<String>,
    pub mongo_uri: Option<String>,
    /// Default hold of a poll without `timeoutMs`.
    pub poll_timeout_ms: u64,
    /// How long an open wait may go without a poll before the hub closes it
    /// (the agent behind it is gone); zero keeps waits open for good.
    pub wait_grace: Duration,
    /// Continue prompt of new sessions.
    pub continue_prompt: String,
    /// Max auto streak of new sessions.
    pub max_auto_streak: u32,
    /// sled page cache.
    pub cache_bytes: u64,
    pub templates: Vec<Template>,
    /// Values out of range that were clamped, said once at start (`serve`, `config`).
    pub warnings: Vec<String>,
    /// Where and when the person is told of a wait (`[notify]`).
    pub notify: NotifyConfig,
    /// What `/mcp` keeps per credential and in all (`[mcp]`).
    pub mcp: McpLimits,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("no home folder: set HOLDLINE_HOME or HOME")]
    NoHome,
    #[error(
        "cannot open the holdline home {path}: {source}; it must be a folder you can read \
         and write (check `ls -ld {path}`), or pass --home DIR"
    )]
    HomeUnreadable {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "mongo_uri {uri} is not a MongoDB URI: {reason}. Expected mongodb://HOST[:PORT]/ or \
         mongodb+srv://HOST/; fix it (config.toml, --mongo-uri or HOLDLINE_MONGO_URI), or \
         remove it to turn sync off"
    )]
    MongoUri { uri: String, reason: String },
    #[error("{name}={value:?} is not valid: {expected}")]
    Env {
        name: &'static str,
        value: String,
        expected: &'static str,
    },
}

/// The home folder: `--home`/`HOLDLINE_HOME`, else `~/.holdline`.
pub fn home_dir(flag: Option<&Path>) -> Result<PathBuf, ConfigError> {
    if let Some(h) = flag {
        return Ok(h.to_owned());
    }
    let home = std::env::var_os("HOME").ok_or(ConfigError::NoHome)?;
    Ok(PathBuf::from(home).join(".holdline"))
}

impl Config {
    /// Reads `HOME/config.toml` (absent is fine) and applies `serve`'s flags and env.
    pub fn load(home: PathBuf, serve: Option<&ServeArgs>) -> Result<Config, ConfigError> {
        let path = home.join("config.toml");
        let (mut file, text) = match std::fs::read_to_string(&path) {
            Ok(text) => (parse_file(&path, &text)?, text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                (FileConfig::default(), String::new())
            }
            Err(source) => {
                // When the home itself cannot be opened, say so, not "cannot read config.toml".
                if let Err(home_error) = std::fs::read_dir(&home)
                    && home_error.kind() != std::io::ErrorKind::NotFound
                {
                    return Err(ConfigError::HomeUnreadable {
                        path: home,
                        source: home_error,
                    });
                }
                return Err(ConfigError::Read { path, source });
            }
        };
        let notify = file.notify.take();
        let mut c = Config::from_file(home, file);
        if let Some(n) = notify {
            c.notify = NotifyConfig::from_file(n, &text)
                .map_err(|message| ConfigError::Parse { path, message })?;
        }
        if let Some(args) = serve {
            if let Some(l) = args.listen {
                c.listen = l;
            }
            if args.mongo_uri.is_some() {
                c.mongo_uri = args.mongo_uri.clone();
            }
        } else {
            // Admin commands read the same env as `serve` would.
            if let Some(l) = std::env::var("HOLDLINE_LISTEN")
                .ok()
                .and_then(|v| v.parse().ok())
            {
                c.listen = l;
            }
            if let Ok(uri) = std::env::var("HOLDLINE_MONGO_URI") {
                c.mongo_uri = Some(uri);
            }
        }
        if let Ok(value) = std::env::var("HOLDLINE_WAIT_GRACE_SEC") {
            let secs = value
                .trim()
                .parse::<u64>()
                .ok()
                .filter(|s| *s <= MAX_WAIT_GRACE_SEC)
                .ok_or(ConfigError::Env {
                    name: "HOLDLINE_WAIT_GRACE_SEC",
                    value,
                    expected: "whole seconds, 0 (never close an unpolled wait) to 86400",
                })?;
            c.wait_grace = Duration::from_secs(secs);
        }
        Ok(c)
    }

    /// A config for tests and benchmarks: defaults, the given home and listen address.
    pub fn for_home(home: PathBuf, listen: SocketAddr) -> Config {
        let mut c = Config::from_file(home, FileConfig::default());
        c.listen = listen;
        c
    }

    /// Checks what `serve` would find out only later: a `mongo_uri` that is not one
    /// (before the hub says it is listening, so a service does not restart in a loop).
    pub fn validate(&self) -> Result<(), ConfigError> {
        let Some(uri) = &self.mongo_uri else {
            return Ok(());
        };
        mongodb::options::ConnectionString::parse(uri)
            .map(|_| ())
            .map_err(|e| ConfigError::MongoUri {
                uri: mask_uri(uri),
                reason: match *e.kind {
                    mongodb::error::ErrorKind::InvalidArgument { message, .. } => message,
                    other => other.to_string(),
                },
            })
    }

    fn from_file(home: PathBuf, f: FileConfig) -> Config {
        let mut warnings = Vec::new();
        let mut clamp = |name: &str, value: Option<u64>, default: u64, lo: u64, hi: u64| {
            let v = value.unwrap_or(default);
            let c = v.clamp(lo, hi);
            if c != v {
                warnings.push(format!(
                    "{name} = {v} in config.toml is out of range ({lo} to {hi}); using {c}"
                ));
            }
            c
        };
        let poll_timeout_ms = clamp("poll_timeout_ms", f.poll_timeout_ms, 10_000, 1, 60_000);
        let wait_grace_sec = clamp(
            "wait_grace_sec",
            f.wait_grace_sec,
            DEFAULT_WAIT_GRACE_SEC,
            0,
            MAX_WAIT_GRACE_SEC,
        );
        let cache_mb = clamp("cache_mb", f.cache_mb, DEFAULT_CACHE_MB, 4, 4096);
        Config {
            home,
            listen: f
                .listen
                .unwrap_or_else(|| DEFAULT_LISTEN.parse().expect("default listen address")),
            allowed_hosts: f.allowed_hosts,
            allowed_origins: f.allowed_origins,
            mongo_uri: f.mongo_uri,
            poll_timeout_ms,
            wait_grace: Duration::from_secs(wait_grace_sec),
            continue_prompt: f
                .continue_prompt
                .unwrap_or_else(|| crate::session::DEFAULT_CONTINUE_PROMPT.into()),
            max_auto_streak: f
                .max_auto_streak
                .unwrap_or(crate::session::DEFAULT_MAX_AUTO_STREAK),
            cache_bytes: cache_mb * 1024 * 1024,
            templates: f.templates.unwrap_or_else(default_templates),
            mcp: McpLimits::from_file(f.mcp.unwrap_or_default(), &mut clamp),
            warnings,
            notify: NotifyConfig::default(),
        }
    }

    /// The effective configuration as TOML, with credentials masked.
    pub fn to_masked_toml(&self) -> String {
        let mut out = String::new();
        let q = |s: &str| toml::Value::String(s.to_owned()).to_string();
        let list = |v: &[String]| {
            toml::Value::Array(v.iter().map(|s| toml::Value::String(s.clone())).collect())
                .to_string()
        };
        out.push_str(&format!(
            "# home = {}\n",
            q(&self.home.display().to_string())
        ));
        out.push_str(&format!("listen = {}\n", q(&self.listen.to_string())));
        out.push_str(&format!("allowed_hosts = {}\n", list(&self.allowed_hosts)));
        out.push_str(&format!(
            "allowed_origins = {}\n",
            list(&self.allowed_origins)
        ));
        match &self.mongo_uri {
            Some(uri) => out.push_str(&format!("mongo_uri = {}\n", q(&mask_uri(uri)))),
            None => out.push_str("# mongo_uri is not set: MongoDB sync is off\n"),
        }
        out.push_str(&format!("poll_timeout_ms = {}\n", self.poll_timeout_ms));
        out.push_str(&format!("wait_grace_sec = {}\n", self.wait_grace.as_secs()));
        out.push_str(&format!("continue_prompt = {}\n", q(&self.continue_prompt)));
        out.push_str(&format!("max_auto_streak = {}\n", self.max_auto_streak));
        out.push_str(&format!("cache_mb = {}\n", self.cache_bytes / 1024 / 1024));
        out.push_str("# secret = (in the secret file, not shown)\n");
        for t in &self.templates {
            out.push_str(&format!(
                "\n[[templates]]\nlabel = {}\ntext = {}\n",
                q(&t.label),
                q(&t.text)
            ));
        }
        out.push_str(&self.mcp.to_toml());
        out.push_str(&self.notify.to_masked_toml());
        out
    }
}

/// `[mcp]` in `config.toml`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpFile {
    pub sessions_per_credential: Option<u64>,
    pub sessions_total: Option<u64>,
    pub tasks_per_credential: Option<u64>,
    pub task_keep_sec: Option<u64>,
}

/// What `/mcp` keeps. Measured: an idle MCP session costs the hub ~70 KiB (rmcp's
/// per-session channels), a waiting one ~115 KiB (docs/benchmarks.md); so 64 per credential (far above the IDE windows one
/// machine runs, each one session) and 4,096 in all (under ~0.5 GiB even if every one
/// waits) bound what one key, or all of them, can make the hub hold. A task record is on
/// disk, a few KiB: 256 live ones per credential is far above the waits one agent machine
/// has open, and a day keeps a finished result for a client that comes back tomorrow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpLimits {
    /// Open MCP sessions one credential (the secret, or one agent key) may hold.
    pub sessions_per_credential: usize,
    /// Open MCP sessions the hub holds in all.
    pub sessions_total: usize,
    /// Task records one credential may have.
    pub tasks_per_credential: usize,
    /// How long a finished task, or a working one nobody polls, is kept.
    pub task_keep: Duration,
}

pub const DEFAULT_MCP_SESSIONS_PER_CREDENTIAL: u64 = 64;
pub const DEFAULT_MCP_SESSIONS_TOTAL: u64 = 4096;
pub const DEFAULT_MCP_TASKS_PER_CREDENTIAL: u64 = 256;
pub const DEFAULT_MCP_TASK_KEEP_SEC: u64 = 86_400;

impl McpLimits {
    fn from_file(
        f: McpFile,
        clamp: &mut impl FnMut(&str, Option<u64>, u64, u64, u64) -> u64,
    ) -> McpLimits {
        let total = clamp(
            "[mcp] sessions_total",
            f.sessions_total,
            DEFAULT_MCP_SESSIONS_TOTAL,
            1,
            65_536,
        );
        McpLimits {
            sessions_per_credential: clamp(
                "[mcp] sessions_per_credential",
                f.sessions_per_credential,
                DEFAULT_MCP_SESSIONS_PER_CREDENTIAL.min(total),
                1,
                total,
            ) as usize,
            sessions_total: total as usize,
            tasks_per_credential: clamp(
                "[mcp] tasks_per_credential",
                f.tasks_per_credential,
                DEFAULT_MCP_TASKS_PER_CREDENTIAL,
                1,
                65_536,
            ) as usize,
            task_keep: Duration::from_secs(clamp(
                "[mcp] task_keep_sec",
                f.task_keep_sec,
                DEFAULT_MCP_TASK_KEEP_SEC,
                1,
                30 * 86_400,
            )),
        }
    }

    fn to_toml(&self) -> String {
        format!(
            "\n[mcp]\nsessions_per_credential = {}\nsessions_total = {}\ntasks_per_credential = {}\ntask_keep_sec = {}\n",
            self.sessions_per_credential,
            self.sessions_total,
            self.tasks_per_credential,
            self.task_keep.as_secs()
        )
    }
}

fn parse_file(path: &Path, text: &str) -> Result<FileConfig, ConfigError> {
    toml::from_str(text).map_err(|e| {
        let line = e
            .span()
            .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
        let what = e.message().to_owned();
        ConfigError::Parse {
            path: path.to_owned(),
            message: match line {
                Some(l) => format!("line {l}: {what}"),
                None => what,
            },
        }
    })
}

const LISTEN_FORM: &str = "expected HOST:PORT with an IP address, e.g. 127.0.0.1:13458 (this machine only) or 0.0.0.0:13458 (the LAN)";

/// `--listen` / `HOLDLINE_LISTEN`: an IP address and a port; `localhost` means 127.0.0.1.
pub fn parse_listen(s: &str) -> Result<SocketAddr, String> {
    let s = s.trim();
    if let Ok(addr) = s.parse() {
        return Ok(addr);
    }
    if let Some(port) = s.strip_prefix("localhost:")
        && let Ok(port) = port.parse::<u16>()
    {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    Err(format!(
        "'{s}' is not an address to listen on: {LISTEN_FORM}"
    ))
}

fn listen_from_file<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<SocketAddr>, D::Error> {
    let s = String::deserialize(d)?;
    parse_listen(&s)
        .map(Some)
        .map_err(|_| serde::de::Error::custom(format!("listen = {s:?}: {LISTEN_FORM}")))
}

/// Hides the password (and user) of a `scheme://user:pass@host/...` URI.
pub fn mask_uri(uri: &str) -> String {
    match (uri.find("://"), uri.rfind('@')) {
        (Some(s), Some(at)) if at > s => format!("{}://***@{}", &uri[..s], &uri[at + 1..]),
        _ => uri.to_owned(),
    }
}

/// Quick replies every new panel starts with: each in Chinese and in
/// English, tagged so the panel shows the ones in its language.
pub fn default_templates() -> Vec<Template> {
    [
        ("zh", "继续", "继续"),
        ("en", "Continue", "Continue."),
        ("zh", "先写测试", "先补测试，再继续。"),
        (
            "en",
            "Run the tests",
            "Run the tests and show me the result.",
        ),
        ("zh", "提交", "可以，提交吧。"),
        ("en", "Looks good, commit", "Looks good. Commit it."),
        ("zh", "停", "先停下，等我看一下。"),
        (
            "en",
            "Stop and explain",
            "Stop here and explain what you changed.",
        ),
    ]
    .into_iter()
    .map(|(lang, l, t)| Template {
        label: l.into(),
        text: t.into(),
        lang: Some(lang.into()),
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_errors_name_the_line() {
        let err = parse_file(
            Path::new("c.toml"),
            "listen = \"127.0.0.1:1\"\nmax_auto_streak = \"x\"\n",
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("line 2"), "{err}");
        let err = parse_file(Path::new("c.toml"), "\n\nlistn = 1\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 3") && err.contains("listn"), "{err}");
    }

    #[test]
    fn listen_errors_show_the_expected_form() {
        let e = parse_listen("13458").unwrap_err();
        assert!(
            e.contains("HOST:PORT") && e.contains("127.0.0.1:13458"),
            "{e}"
        );
        assert_eq!(
            parse_listen("localhost:9").unwrap(),
            "127.0.0.1:9".parse().unwrap()
        );
        let e = parse_file(Path::new("c.toml"), "listen = \"13458\"\n").unwrap_err();
        assert!(e.to_string().contains("HOST:PORT"), "{e}");
        assert_eq!(
            parse_file(Path::new("c.toml"), "listen = \"0.0.0.0:1\"\n")
                .unwrap()
                .listen,
            Some("0.0.0.0:1".parse().unwrap())
        );
    }

    #[test]
    fn bad_mongo_uri_and_out_of_range_values_are_said() {
        let mut c = Config::for_home(PathBuf::from("/h"), "127.0.0.1:1".parse().unwrap());
        c.mongo_uri = Some("foo://alice:pw@bar".into());
        let e = c.validate().unwrap_err().to_string();
        assert!(
            e.contains("mongodb://HOST") && e.contains("foo://***@bar"),
            "{e}"
        );
        assert!(!e.contains("pw") && !e.contains("labels"), "{e}");
        c.mongo_uri = Some("mongodb://db:27017/".into());
        c.validate().unwrap();
        let f = parse_file(Path::new("c.toml"), "poll_timeout_ms = 0\ncache_mb = 1\n").unwrap();
        let c = Config::from_file(PathBuf::from("/h"), f);
        assert_eq!(c.poll_timeout_ms, 1);
        assert_eq!(c.warnings.len(), 2, "{:?}", c.warnings);
        assert!(
            c.warnings[0].contains("poll_timeout_ms = 0"),
            "{:?}",
            c.warnings
        );
    }

    #[test]
    fn mcp_limits_default_clamp_and_print_back() {
        let c = Config::from_file(PathBuf::from("/h"), FileConfig::default());
        assert_eq!(c.mcp.sessions_per_credential, 64);
        assert_eq!(c.mcp.sessions_total, 4096);
        let text = "[mcp]\nsessions_per_credential = 10\nsessions_total = 5\ntask_keep_sec = 0\n";
        let c = Config::from_file(
            PathBuf::from("/h"),
            parse_file(Path::new("c"), text).unwrap(),
        );
        assert_eq!(c.mcp.sessions_total, 5);
        assert_eq!(c.mcp.sessions_per_credential, 5, "never above the total");
        assert_eq!(c.mcp.task_keep, Duration::from_secs(1));
        assert_eq!(c.warnings.len(), 2, "{:?}", c.warnings);
        assert!(parse_file(Path::new("c"), "[mcp]\nsessions = 1\n").is_err());
        // What `config` prints reads back the same.
        let printed = c.to_masked_toml();
        let again = Config::from_file(
            PathBuf::from("/h"),
            parse_file(Path::new("c"), &printed).unwrap(),
        );
        assert_eq!(again.mcp, c.mcp);
    }

    #[test]
    fn an_unusable_home_is_named_as_such() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a-file");
        std::fs::write(&file, "x").unwrap();
        let e = Config::load(file.join("home"), None)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("cannot open the holdline home"), "{e}");
    }

    #[test]
    fn mongo_credentials_are_masked() {
        assert_eq!(
            mask_uri("mongodb://alice:s3cret@db:27017/x?tls=true"),
            "mongodb://***@db:27017/x?tls=true"
        );
        assert_eq!(mask_uri("mongodb://db:27017"), "mongodb://db:27017");
    }
}
