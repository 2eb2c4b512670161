//! The hub's settings: command line, env and `config.toml` → [`Config`].
//!
//! Invariant: flags beat env, env beats the file; a bad file names its line,
//! a value out of range is clamped and said once.
//!
//! - `cli`      the command line (clap)
//! - `file`     `config.toml` read and clamped
//! - `env`      flags and `HOLDLINE_*` over the file
//! - `validate` listen addresses, MongoDB URIs, masking
//! - `notify`   the `[notify]` table

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

mod cli;
mod env;
mod file;
pub mod notify;
#[cfg(test)]
mod tests;
mod validate;

pub use cli::{Cli, Command, KeyAction, NotifyAction, ServeArgs};
pub use file::{AttachmentsFile, FileConfig, McpFile};
pub use validate::{ListenError, mask_uri, parse_listen};

use file::parse_file;
use notify::NotifyConfig;

/// Default listen address: loopback only (SPEC §8); the contract's, which the bridge
/// reads too.
pub use holdline_contract::local_hub::DEFAULT_LISTEN;

/// Quick-reply templates are session data too (a session may have its own).
pub use holdline_store::session::Template;

/// sled's page cache when `cache_mb` is not set. Every session's metadata is
/// in memory anyway; the cache serves history reads and writes, and each MiB
/// of it is resident (docs/benchmarks.md: 32 → 8 saved ~5 MiB at 10,000
/// waiting sessions with no measurable cost in reply latency).
pub const DEFAULT_CACHE_MB: u64 = 8;
/// A little longer than one poll hold (10 s) plus the time an agent takes to
/// call again after "no reply yet" (a model round trip).
pub const DEFAULT_WAIT_GRACE_SEC: u64 = 30;
pub const MAX_WAIT_GRACE_SEC: u64 = 86_400;

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
    /// Attachment quotas and retention (`[attachments]`).
    pub attachments: AttachmentLimits,
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
    #[error(
        "mongo_uri is set, but this holdline-hub was built without MongoDB sync (the `sync` \
         cargo feature, on by default): build it with the feature, or remove mongo_uri"
    )]
    SyncNotBuilt,
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
            c.notify = NotifyConfig::from_file(n, &text).map_err(|e| ConfigError::Parse {
                path,
                message: e.to_string(),
            })?;
        }
        c.apply_flags_and_env(serve)?;
        Ok(c)
    }

    /// A config for tests and benchmarks: defaults, the given home and listen address.
    pub fn for_home(home: PathBuf, listen: SocketAddr) -> Config {
        let mut c = Config::from_file(home, FileConfig::default());
        c.listen = listen;
        c
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
        out.push_str(&self.attachments.to_toml());
        out.push_str(&self.notify.to_masked_toml());
        out
    }
}

/// What `/mcp` keeps. Measured (docs/benchmarks.md, "Memory per remote agent" and "Idle
/// `/mcp` sessions"): an idle MCP session costs the hub 1.5–1.6 KiB, a waiting remote agent
/// ~30 KiB; so 64 per credential (far above the IDE windows one machine runs, each one
/// session) and 4,096 in all (~120 MiB even if every one waits) bound what one key, or all
/// of them, can make the hub hold. A task record is on
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

/// How much the questions' files may take and how long they are kept. A
/// question carries at most 10 × 5 MiB: 256 MiB per credential holds five
/// such questions of one agent, 1 GiB in all four busy keys; a file is kept a
/// week after its question was answered or superseded (see docs/operations.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttachmentLimits {
    /// Bytes of distinct files per owner (the secret, each agent key) and in all.
    pub quota: holdline_store::store::Quota,
    /// How long a file is kept once its question is no longer open.
    pub keep: Duration,
}

pub const DEFAULT_ATTACHMENT_OWNER_QUOTA_MB: u64 = 256;
pub const DEFAULT_ATTACHMENT_TOTAL_QUOTA_MB: u64 = 1024;
pub const DEFAULT_ATTACHMENT_KEEP_SEC: u64 = 7 * 86_400;

impl AttachmentLimits {
    fn to_toml(&self) -> String {
        format!(
            "\n[attachments]\nowner_quota_mb = {}\ntotal_quota_mb = {}\nkeep_sec = {}\n",
            self.quota.per_owner >> 20,
            self.quota.total >> 20,
            self.keep.as_secs()
        )
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
