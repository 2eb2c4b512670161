//! The `[notify]` table of `config.toml` → [`NotifyConfig`]: channels checked
//! and credentials read once, at start.
//!
//! Invariant: a bad key is refused with the line that holds it; a bot token
//! or a channel URL is never printed (`Debug` shows `***`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

/// When `after_sec` is not set.
pub const DEFAULT_AFTER_SEC: u64 = 60;
/// The Bot API when `api_base` is not set.
pub const TELEGRAM_API: &str = "https://api.telegram.org";

/// A `[notify]` value refused, with the line that holds it.
#[derive(Debug, thiserror::Error)]
#[error("line {line}: {problem}")]
pub struct NotifyError {
    pub line: usize,
    pub problem: NotifyProblem,
}

/// What is wrong with a `[notify]` value.
#[derive(Debug, thiserror::Error)]
pub enum NotifyProblem {
    /// `reason`: the URL parser's words.
    #[error("{field} is not a URL: {reason}")]
    NotAUrl { field: &'static str, reason: String },
    #[error("{field} must be an http:// or https:// URL")]
    NotHttp { field: &'static str },
    #[error("panel_url must not carry the panel key: notifications never hold a login link")]
    PanelKey,
    #[error("ntfy url needs a topic, like https://ntfy.sh/my-topic")]
    NtfyTopic,
    #[error("cannot read bot_token_file {}: {source}", path.display())]
    TokenFileUnreadable {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("bot_token_file {} is readable by others; run chmod 600 on it", path.display())]
    TokenFileOpen { path: PathBuf },
    #[error("[notify.telegram] takes bot_token or bot_token_file, not both")]
    BothTokens,
    #[error("[notify.telegram] needs bot_token or bot_token_file")]
    NoToken,
    #[error(
        "the Telegram bot token does not look like one (digits, a colon, then letters, digits, - or _)"
    )]
    NotABotToken,
    #[error("[notify.telegram] needs chat_ids: the chats that are told and may answer")]
    NoChats,
    #[error(
        "[notify.webpush] subject must be a mailto: or https:// URL (push services contact it)"
    )]
    PushSubject,
}

/// `[notify]` as written in the file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotifyFile {
    after_sec: Option<u64>,
    include_text: Option<bool>,
    panel_url: Option<Spanned<String>>,
    #[serde(default)]
    webhook: Vec<WebhookFile>,
    #[serde(default)]
    ntfy: Vec<NtfyFile>,
    telegram: Option<Spanned<TelegramFile>>,
    webpush: Option<WebPushFile>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WebPushFile {
    #[serde(default)]
    enabled: bool,
    subject: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WebhookFile {
    url: Spanned<String>,
    #[serde(default)]
    format: WebhookFormat,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NtfyFile {
    url: Spanned<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TelegramFile {
    bot_token: Option<Hidden>,
    bot_token_file: Option<Spanned<PathBuf>>,
    #[serde(default)]
    chat_ids: Vec<i64>,
    #[serde(default)]
    user_ids: Vec<i64>,
    api_base: Option<Spanned<String>>,
}

/// The body a webhook expects.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WebhookFormat {
    #[default]
    Json,
    Slack,
    Discord,
    Feishu,
    Wecom,
    Dingtalk,
}

impl WebhookFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            WebhookFormat::Json => "json",
            WebhookFormat::Slack => "slack",
            WebhookFormat::Discord => "discord",
            WebhookFormat::Feishu => "feishu",
            WebhookFormat::Wecom => "wecom",
            WebhookFormat::Dingtalk => "dingtalk",
        }
    }
}

/// A credential or a URL that carries one: shown as `***`.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct Hidden(pub String);

impl std::fmt::Debug for Hidden {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("***")
    }
}

/// What the hub notifies with; no channel means notifications are off.
#[derive(Debug, Clone, PartialEq)]
pub struct NotifyConfig {
    /// How long a wait goes without a reply before the person is told.
    pub after: Duration,
    /// False: title and link only, never the agent's message.
    pub include_text: bool,
    /// The link in notifications; `None`: the hub's advertised URL.
    pub panel_url: Option<String>,
    pub webhooks: Vec<Webhook>,
    pub ntfy: Vec<Ntfy>,
    pub telegram: Option<Telegram>,
    /// `[notify.webpush] enabled = true`: push to the browsers subscribed in the panel.
    pub webpush: Option<WebPush>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct WebPush {
    /// The VAPID `sub` claim (`mailto:` or https); `None`: `panel_url` when
    /// it is https, else [`DEFAULT_PUSH_SUBJECT`].
    pub subject: Option<String>,
}

/// The VAPID contact when neither `subject` nor an https `panel_url` is set.
pub const DEFAULT_PUSH_SUBJECT: &str = "mailto:holdline@localhost";

impl NotifyConfig {
    /// The VAPID `sub` claim pushes carry.
    pub fn push_subject(&self) -> String {
        self.webpush
            .as_ref()
            .and_then(|w| w.subject.clone())
            .or_else(|| self.panel_url.clone().filter(|u| u.starts_with("https://")))
            .unwrap_or_else(|| DEFAULT_PUSH_SUBJECT.to_owned())
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Webhook {
    pub url: Hidden,
    pub format: WebhookFormat,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Ntfy {
    pub url: Hidden,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Telegram {
    pub bot_token: Hidden,
    /// The chats told, and the only ones heard.
    pub chat_ids: Vec<i64>,
    /// When not empty, the only people whose answers (replies, buttons) are
    /// taken, in any of `chat_ids`; empty: anyone in those chats.
    pub user_ids: Vec<i64>,
    pub api_base: String,
}

impl Default for NotifyConfig {
    fn default() -> Self {
        NotifyConfig {
            after: Duration::from_secs(DEFAULT_AFTER_SEC),
            include_text: true,
            panel_url: None,
            webhooks: Vec::new(),
            ntfy: Vec::new(),
            telegram: None,
            webpush: None,
        }
    }
}

impl NotifyConfig {
    /// Whether any channel is configured.
    pub fn is_on(&self) -> bool {
        !self.webhooks.is_empty()
            || !self.ntfy.is_empty()
            || self.telegram.is_some()
            || self.webpush.is_some()
    }

    /// Checks the file's `[notify]` and reads the token file. `text` is the
    /// whole file, to name lines.
    pub fn from_file(file: NotifyFile, text: &str) -> Result<NotifyConfig, NotifyError> {
        let at = |span: std::ops::Range<usize>| {
            move |problem: NotifyProblem| NotifyError {
                line: text[..span.start.min(text.len())].matches('\n').count() + 1,
                problem,
            }
        };
        let panel_url = match file.panel_url {
            None => None,
            Some(u) => Some(panel_url(u.get_ref()).map_err(at(u.span()))?),
        };
        let mut webhooks = Vec::new();
        for w in file.webhook {
            let url = check_url("webhook url", w.url.get_ref()).map_err(at(w.url.span()))?;
            webhooks.push(Webhook {
                url: Hidden(url),
                format: w.format,
            });
        }
        let mut ntfy = Vec::new();
        for n in file.ntfy {
            let url = ntfy_url(n.url.get_ref()).map_err(at(n.url.span()))?;
            ntfy.push(Ntfy { url: Hidden(url) });
        }
        let telegram = match file.telegram {
            None => None,
            Some(t) => {
                let span = t.span();
                Some(Telegram::from_file(t.into_inner(), &at, span)?)
            }
        };
        let webpush = match file.webpush {
            Some(w) if w.enabled => Some(WebPush {
                subject: match w.subject {
                    None => None,
                    Some(s) => Some(push_subject(s.get_ref()).map_err(at(s.span()))?),
                },
            }),
            _ => None,
        };
        Ok(NotifyConfig {
            after: Duration::from_secs(file.after_sec.unwrap_or(DEFAULT_AFTER_SEC).min(86_400)),
            include_text: file.include_text.unwrap_or(true),
            panel_url,
            webhooks,
            ntfy,
            telegram,
            webpush,
        })
    }

    /// The `[notify]` lines of `holdline-hub config`, URLs and token masked.
    pub fn to_masked_toml(&self) -> String {
        if !self.is_on() {
            return "# [notify] has no channel: notifications are off\n".into();
        }
        let mut out = format!(
            "\n[notify]\nafter_sec = {}\ninclude_text = {}\n",
            self.after.as_secs(),
            self.include_text
        );
        if let Some(u) = &self.panel_url {
            out.push_str(&format!("panel_url = {}\n", toml::Value::String(u.clone())));
        }
        for w in &self.webhooks {
            out.push_str(&format!(
                "\n[[notify.webhook]]\nurl = \"***\"\nformat = \"{}\"\n",
                w.format.as_str()
            ));
        }
        for _ in &self.ntfy {
            out.push_str("\n[[notify.ntfy]]\nurl = \"***\"\n");
        }
        if let Some(t) = &self.telegram {
            out.push_str(&format!(
                "\n[notify.telegram]\nbot_token = \"***\"\nchat_ids = {:?}\nuser_ids = {:?}\napi_base = {}\n",
                t.chat_ids,
                t.user_ids,
                toml::Value::String(t.api_base.clone())
            ));
        }
        if let Some(w) = &self.webpush {
            out.push_str("\n[notify.webpush]\nenabled = true\n");
            if let Some(s) = &w.subject {
                out.push_str(&format!("subject = {}\n", toml::Value::String(s.clone())));
            }
        }
        out
    }
}

/// The VAPID contact: `mailto:` or an https URL.
fn push_subject(raw: &str) -> Result<String, NotifyProblem> {
    let s = raw.trim();
    let ok = match s.strip_prefix("mailto:") {
        Some(addr) => addr.contains('@'),
        None => url::Url::parse(s).is_ok_and(|u| u.scheme() == "https"),
    };
    if ok {
        Ok(s.to_owned())
    } else {
        Err(NotifyProblem::PushSubject)
    }
}

/// An absolute http(s) URL, or why not; `field` names it in the refusal.
fn check_url(field: &'static str, raw: &str) -> Result<String, NotifyProblem> {
    let url = url::Url::parse(raw.trim()).map_err(|e| NotifyProblem::NotAUrl {
        field,
        reason: e.to_string(),
    })?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(NotifyProblem::NotHttp { field });
    }
    Ok(raw.trim().to_owned())
}

/// `panel_url`: a URL without the panel key.
fn panel_url(raw: &str) -> Result<String, NotifyProblem> {
    let url = check_url("panel_url", raw)?;
    if url.contains("key=") {
        return Err(NotifyProblem::PanelKey);
    }
    Ok(url)
}

/// An ntfy URL: a URL whose path names a topic.
fn ntfy_url(raw: &str) -> Result<String, NotifyProblem> {
    let url = check_url("ntfy url", raw)?;
    let parsed = url::Url::parse(&url).expect("checked");
    if parsed
        .path_segments()
        .and_then(|mut s| s.next_back())
        .is_none_or(str::is_empty)
    {
        return Err(NotifyProblem::NtfyTopic);
    }
    Ok(url)
}

impl Telegram {
    /// `[notify.telegram]` checked, its token read; `at` names the line of a refusal.
    fn from_file<F: Fn(NotifyProblem) -> NotifyError>(
        t: TelegramFile,
        at: &impl Fn(std::ops::Range<usize>) -> F,
        span: std::ops::Range<usize>,
    ) -> Result<Telegram, NotifyError> {
        let token = match (t.bot_token, t.bot_token_file) {
            (Some(token), None) => token.0,
            (None, Some(path)) => read_token_file(path.get_ref()).map_err(at(path.span()))?,
            (Some(_), Some(_)) => return Err(at(span)(NotifyProblem::BothTokens)),
            (None, None) => return Err(at(span)(NotifyProblem::NoToken)),
        };
        let token = token.trim().to_owned();
        if !is_bot_token(&token) {
            return Err(at(span)(NotifyProblem::NotABotToken));
        }
        if t.chat_ids.is_empty() {
            return Err(at(span)(NotifyProblem::NoChats));
        }
        let api_base = match t.api_base {
            None => TELEGRAM_API.to_owned(),
            Some(b) => check_url("api_base", b.get_ref())
                .map_err(at(b.span()))?
                .trim_end_matches('/')
                .to_owned(),
        };
        Ok(Telegram {
            bot_token: Hidden(token),
            chat_ids: t.chat_ids,
            user_ids: t.user_ids,
            api_base,
        })
    }
}

fn is_bot_token(t: &str) -> bool {
    match t.split_once(':') {
        Some((id, key)) => {
            !id.is_empty()
                && id.bytes().all(|b| b.is_ascii_digit())
                && !key.is_empty()
                && key
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        }
        None => false,
    }
}

/// The token file must be the owner's alone (it is as good as the bot).
fn read_token_file(path: &Path) -> Result<String, NotifyProblem> {
    use std::os::unix::fs::PermissionsExt;
    let unreadable = |source| NotifyProblem::TokenFileUnreadable {
        path: path.to_owned(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(unreadable)?;
    if meta.permissions().mode() & 0o077 != 0 {
        return Err(NotifyProblem::TokenFileOpen {
            path: path.to_owned(),
        });
    }
    std::fs::read_to_string(path).map_err(unreadable)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<NotifyConfig, String> {
        #[derive(Deserialize)]
        struct F {
            notify: NotifyFile,
        }
        let f: F = toml::from_str(text).map_err(|e| e.to_string())?;
        NotifyConfig::from_file(f.notify, text).map_err(|e| e.to_string())
    }

    #[test]
    fn a_full_table_reads() {
        let c = parse(
            "[notify]\nafter_sec = 5\ninclude_text = false\npanel_url = \"http://10.0.0.2:13458/\"\n\
             [[notify.webhook]]\nurl = \"https://hooks.example/a\"\nformat = \"slack\"\n\
             [[notify.ntfy]]\nurl = \"https://ntfy.sh/t\"\n\
             [notify.telegram]\nbot_token = \"123:abc-_X\"\nchat_ids = [1, -100]\n",
        )
        .unwrap();
        assert_eq!(c.after, Duration::from_secs(5));
        assert!(!c.include_text && c.is_on());
        assert_eq!(c.webhooks[0].format, WebhookFormat::Slack);
        let t = c.telegram.as_ref().unwrap();
        assert_eq!(
            (t.chat_ids.as_slice(), t.api_base.as_str()),
            (&[1, -100][..], TELEGRAM_API)
        );
        let shown = format!("{c:?}{}", c.to_masked_toml());
        assert!(
            !shown.contains("123:abc") && !shown.contains("hooks.example"),
            "{shown}"
        );
    }

    #[test]
    fn bad_values_name_their_line() {
        for (text, line, word) in [
            (
                "[notify]\n[[notify.webhook]]\nurl = \"https://h/x\"\nformat = \"teams\"\n",
                4,
                "teams",
            ),
            (
                "[notify.telegram]\nbot_token = \"1:a\"\nchat_ids = [\"me\"]\n",
                3,
                "chat_ids",
            ),
            (
                "[notify.telegram]\nbot_token = \"1:a\"\nchat_ids = [1]\napi_base = \"ftp://x\"\n",
                4,
                "api_base",
            ),
            (
                "[notify]\n\n[[notify.ntfy]]\nurl = \"not a url\"\n",
                4,
                "ntfy url",
            ),
            (
                "[notify]\n[[notify.ntfy]]\nurl = \"https://ntfy.sh/\"\n",
                3,
                "topic",
            ),
            (
                "[notify.telegram]\nbot_token_file = \"/nonexistent/x\"\nchat_ids = [1]\n",
                2,
                "cannot read",
            ),
            ("[notify.telegram]\nchat_ids = [1]\n", 1, "bot_token"),
            (
                "[notify.telegram]\nbot_token = \"nope\"\nchat_ids = [1]\n",
                1,
                "does not look",
            ),
            ("[notify]\npanel_url = \"http://h/#key=abc\"\n", 2, "key"),
            (
                "[notify.webpush]\nenabled = true\nsubject = \"me@example.org\"\n",
                3,
                "mailto:",
            ),
        ] {
            let err = parse(text).unwrap_err();
            assert!(
                err.contains(&format!("line {line}")) && err.contains(word),
                "{text:?}: {err}"
            );
        }
    }

    #[test]
    fn webpush_is_a_channel_when_enabled_with_its_contact() {
        let c = parse("[notify.webpush]\nenabled = true\n").unwrap();
        assert!(c.is_on());
        assert_eq!(c.push_subject(), DEFAULT_PUSH_SUBJECT);
        assert!(c.to_masked_toml().contains("[notify.webpush]"));
        let c = parse(
            "[notify]\npanel_url = \"https://hub.example/\"\n[notify.webpush]\nenabled = true\n",
        )
        .unwrap();
        assert_eq!(c.push_subject(), "https://hub.example/");
        let c = parse("[notify.webpush]\nenabled = true\nsubject = \"mailto:me@example.org\"\n")
            .unwrap();
        assert_eq!(c.push_subject(), "mailto:me@example.org");
        assert!(
            !parse("[notify.webpush]\nenabled = false\n")
                .unwrap()
                .is_on()
        );
    }

    #[test]
    fn a_token_file_must_be_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "42:secretkey\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let text = format!(
            "[notify.telegram]\nbot_token_file = {}\nchat_ids = [1]\n",
            toml::Value::String(path.display().to_string())
        );
        assert!(parse(&text).unwrap_err().contains("chmod 600"));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let c = parse(&text).unwrap();
        assert_eq!(c.telegram.unwrap().bot_token.0, "42:secretkey");
    }
}
