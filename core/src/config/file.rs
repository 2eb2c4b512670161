//! `config.toml` → [`Config`]: every key optional, unknown keys refused with
//! their line, numbers out of range clamped with a warning.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use super::notify::{NotifyConfig, NotifyFile};
use super::validate::{LISTEN_FORM, parse_listen};
use super::{
    AttachmentLimits, DEFAULT_ATTACHMENT_KEEP_SEC, DEFAULT_ATTACHMENT_OWNER_QUOTA_MB,
    DEFAULT_ATTACHMENT_TOTAL_QUOTA_MB,
};
use super::{
    Config, ConfigError, DEFAULT_CACHE_MB, DEFAULT_LISTEN, DEFAULT_MCP_SESSIONS_PER_CREDENTIAL,
    DEFAULT_MCP_SESSIONS_TOTAL, DEFAULT_MCP_TASK_KEEP_SEC, DEFAULT_MCP_TASKS_PER_CREDENTIAL,
    DEFAULT_WAIT_GRACE_SEC, MAX_WAIT_GRACE_SEC, McpLimits, Template, default_templates,
};

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
    /// `[attachments]`: quotas and retention of the questions' files.
    pub attachments: Option<AttachmentsFile>,
}

/// `[attachments]` in `config.toml`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttachmentsFile {
    /// MiB of distinct files one owner (the secret, or one agent key) may hold.
    pub owner_quota_mb: Option<u64>,
    /// MiB of distinct files the hub holds in all.
    pub total_quota_mb: Option<u64>,
    /// Seconds a file is kept once its question was answered or superseded.
    pub keep_sec: Option<u64>,
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

impl Config {
    pub(super) fn from_file(home: PathBuf, f: FileConfig) -> Config {
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
            listen: f.listen.unwrap_or(DEFAULT_LISTEN),
            allowed_hosts: f.allowed_hosts,
            allowed_origins: f.allowed_origins,
            mongo_uri: f.mongo_uri,
            poll_timeout_ms,
            wait_grace: Duration::from_secs(wait_grace_sec),
            continue_prompt: f
                .continue_prompt
                .unwrap_or_else(|| holdline_store::session::DEFAULT_CONTINUE_PROMPT.into()),
            max_auto_streak: f
                .max_auto_streak
                .unwrap_or(holdline_store::session::DEFAULT_MAX_AUTO_STREAK),
            cache_bytes: cache_mb * 1024 * 1024,
            templates: f.templates.unwrap_or_else(default_templates),
            mcp: McpLimits::from_file(f.mcp.unwrap_or_default(), &mut clamp),
            attachments: AttachmentLimits::from_file(f.attachments.unwrap_or_default(), &mut clamp),
            warnings,
            notify: NotifyConfig::default(),
        }
    }
}

impl AttachmentLimits {
    pub(super) fn from_file(
        f: AttachmentsFile,
        clamp: &mut impl FnMut(&str, Option<u64>, u64, u64, u64) -> u64,
    ) -> AttachmentLimits {
        let total = clamp(
            "[attachments] total_quota_mb",
            f.total_quota_mb,
            DEFAULT_ATTACHMENT_TOTAL_QUOTA_MB,
            1,
            1 << 20,
        );
        let per_owner = clamp(
            "[attachments] owner_quota_mb",
            f.owner_quota_mb,
            DEFAULT_ATTACHMENT_OWNER_QUOTA_MB.min(total),
            1,
            total,
        );
        AttachmentLimits {
            quota: holdline_store::store::Quota {
                per_owner: per_owner << 20,
                total: total << 20,
            },
            keep: Duration::from_secs(clamp(
                "[attachments] keep_sec",
                f.keep_sec,
                DEFAULT_ATTACHMENT_KEEP_SEC,
                1,
                365 * 86_400,
            )),
        }
    }
}

impl McpLimits {
    pub(super) fn from_file(
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
}

pub(super) fn parse_file(path: &Path, text: &str) -> Result<FileConfig, ConfigError> {
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

fn listen_from_file<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<SocketAddr>, D::Error> {
    let s = String::deserialize(d)?;
    parse_listen(&s)
        .map(Some)
        .map_err(|_| serde::de::Error::custom(format!("listen = {s:?}: {LISTEN_FORM}")))
}
