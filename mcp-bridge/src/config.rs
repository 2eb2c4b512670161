//! Bridge configuration from the environment: hub list (or the local hub, found where it
//! really listens), the credential (an agent key, else the secret), host id, wait limits.

use std::{
    net::{IpAddr, Ipv4Addr, UdpSocket},
    path::PathBuf,
    time::Duration,
};

use holdline_contract::local_hub;
use holdline_tools::{
    Protected, Settings, Transport, WorkspaceFallback, limits::MaxWait, server::DEFAULT_POLL_HOLD,
};

/// Everything the bridge reads from its environment, resolved once at start.
#[derive(Debug, Clone)]
pub struct Config {
    /// Hub base URLs without a trailing slash, primary first.
    pub hubs: Vec<String>,
    /// Where the credential comes from: `HOLDLINE_KEY`, else the secret.
    pub secret: SecretSource,
    /// The holdline home (`HOLDLINE_HOME`, else `~/.holdline`).
    pub home: PathBuf,
    /// `~/.holdline`, the person's usual home, also when `HOLDLINE_HOME` names another:
    /// neither is ever attached.
    pub usual_home: PathBuf,
    /// This machine's identity in binding keys.
    pub host_ip: String,
    /// This machine's name as the panel shows it (`HOLDLINE_HOST_NAME`, else the system's
    /// host name): data of the binding, never its key.
    pub host_name: Option<String>,
    /// `HOLDLINE_MAX_WAIT_SEC`: overrides the per-client wait limit (0: no limit).
    pub max_wait: MaxWait,
    /// `MCP_TOOL_TIMEOUT` (milliseconds; Claude Code's hard limit per tool call), when the
    /// client's environment reaches the bridge.
    pub tool_timeout: Option<Duration>,
    /// `HOLDLINE_HUB_BIN`: the hub executable to auto-start, when set.
    pub hub_bin: Option<PathBuf>,
    /// `HOLDLINE_NO_AUTOSTART=1` turns off starting a local hub.
    pub autostart: bool,
    /// `HOLDLINE_POLL_MS`: how long one long poll is held, which is also the progress
    /// interval (default 10 s; 100 ms to 60 s).
    pub poll_hold: Duration,
    /// `HOLDLINE_SHARE_CHANGES=1` (or `true`): each question carries the workspace's
    /// uncommitted git changes. Off by default.
    pub share_changes: bool,
}

/// What the bridge sends as its Bearer: an agent key (`HOLDLINE_KEY`, made with
/// `holdline-hub key create`; opens the agent routes only), else the hub's secret, given or
/// read from the home folder; the file is re-read on demand because an auto-started hub
/// writes it after the bridge has started.
#[derive(Debug, Clone)]
pub enum SecretSource {
    /// `HOLDLINE_KEY`.
    Key(String),
    /// `HOLDLINE_SECRET`.
    Given(String),
    /// `<home>/secret`.
    File(PathBuf),
}

impl SecretSource {
    /// The secret now, or `None` when the file does not exist (yet) or is empty.
    pub fn read(&self) -> Option<String> {
        match self {
            SecretSource::Key(s) | SecretSource::Given(s) => Some(s.clone()),
            SecretSource::File(path) => std::fs::read_to_string(path)
                .ok()
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty()),
        }
    }

    /// Whether the credential is an agent key (a 401 then means the key was refused).
    pub fn is_key(&self) -> bool {
        matches!(self, SecretSource::Key(_))
    }

    /// Where the secret comes from, for error messages.
    pub fn describe(&self) -> String {
        match self {
            SecretSource::Key(_) => "HOLDLINE_KEY".to_owned(),
            SecretSource::Given(_) => "HOLDLINE_SECRET".to_owned(),
            SecretSource::File(path) => path.display().to_string(),
        }
    }
}

impl Config {
    /// How the tools wait and whom they name: from this environment, over stdio.
    pub fn tool_settings(&self) -> Settings {
        Settings {
            host_ip: self.host_ip.clone(),
            host_name: self.host_name.clone(),
            max_wait: self.max_wait,
            tool_timeout: self.tool_timeout,
            poll_hold: self.poll_hold,
            workspace_fallback: WorkspaceFallback::WorkingDirectory,
            transport: Transport::Stdio,
            share_changes: self.share_changes,
        }
    }

    /// What the tools never attach: the holdline homes and any file holding the
    /// credential this bridge sends.
    pub fn protected(&self) -> Protected {
        Protected {
            homes: vec![self.home.clone(), self.usual_home.clone()],
            credentials: self.secret.read().into_iter().collect(),
        }
    }

    /// Reads the process environment.
    pub fn from_env() -> Config {
        Config::from_lookup(|k| std::env::var(k).ok())
    }

    /// Reads configuration through `get`, so tests need not touch the process environment.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Config {
        let nonempty = |k: &str| {
            get(k)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        let usual_home = user_home(&get).join(".holdline");
        let home = nonempty("HOLDLINE_HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| usual_home.clone());
        let hubs = match nonempty("HOLDLINE_HUB") {
            Some(list) => parse_hub_list(&list),
            None => vec![local_hub::local_url(
                &home,
                nonempty("HOLDLINE_LISTEN").as_deref(),
            )],
        };
        let secret = match (nonempty("HOLDLINE_KEY"), nonempty("HOLDLINE_SECRET")) {
            (Some(k), _) => SecretSource::Key(k),
            (None, Some(s)) => SecretSource::Given(s),
            (None, None) => SecretSource::File(home.join("secret")),
        };
        let host_ip = nonempty("HOLDLINE_HOST_ID").unwrap_or_else(primary_ipv4);
        let host_name = nonempty("HOLDLINE_HOST_NAME").or_else(system_host_name);
        let max_wait = nonempty("HOLDLINE_MAX_WAIT_SEC")
            .and_then(|v| MaxWait::parse(&v))
            .unwrap_or_default();
        let tool_timeout = nonempty("MCP_TOOL_TIMEOUT")
            .and_then(|v| v.parse::<u64>().ok())
            .filter(|ms| *ms > 0)
            .map(Duration::from_millis);
        let hub_bin = nonempty("HOLDLINE_HUB_BIN").map(PathBuf::from);
        let autostart = !matches!(
            nonempty("HOLDLINE_NO_AUTOSTART").as_deref(),
            Some("1" | "true" | "yes")
        );
        let share_changes = nonempty("HOLDLINE_SHARE_CHANGES")
            .is_some_and(|v| v == "1" || v.eq_ignore_ascii_case("true"));
        let poll_hold = nonempty("HOLDLINE_POLL_MS")
            .and_then(|v| v.parse::<u64>().ok())
            .map_or(DEFAULT_POLL_HOLD, |ms| {
                Duration::from_millis(ms.clamp(100, 60_000))
            });
        Config {
            poll_hold,
            hubs,
            secret,
            home,
            usual_home,
            host_ip,
            host_name,
            max_wait,
            tool_timeout,
            hub_bin,
            autostart,
            share_changes,
        }
    }
}

/// The system's host name, when it has a readable one.
fn system_host_name() -> Option<String> {
    let name = gethostname::gethostname().into_string().ok()?;
    let name = name.trim();
    (!name.is_empty()).then(|| name.to_owned())
}

/// Splits `HOLDLINE_HUB`: comma separated, order kept, `http://` added when no scheme is given.
pub fn parse_hub_list(raw: &str) -> Vec<String> {
    let hubs: Vec<String> = raw
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            let s = s.trim_end_matches('/');
            if s.contains("://") {
                s.to_owned()
            } else {
                format!("http://{s}")
            }
        })
        .collect();
    if hubs.is_empty() {
        vec![format!("http://{}", local_hub::DEFAULT_LISTEN)]
    } else {
        hubs
    }
}

fn user_home(get: &impl Fn(&str) -> Option<String>) -> PathBuf {
    get("HOME")
        .or_else(|| get("USERPROFILE"))
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// The address this machine would use to reach the LAN: connecting a UDP socket sends
/// nothing, it only asks the kernel to pick a route and a source address.
pub fn primary_ipv4() -> String {
    let probe = |target: &str| -> Option<Ipv4Addr> {
        let socket = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).ok()?;
        socket.connect(target).ok()?;
        match socket.local_addr().ok()?.ip() {
            IpAddr::V4(ip) if !ip.is_loopback() && !ip.is_unspecified() => Some(ip),
            _ => None,
        }
    };
    probe("10.254.254.254:1")
        .or_else(|| probe("192.0.2.1:1"))
        .map(|ip| ip.to_string())
        .unwrap_or_else(|| Ipv4Addr::LOCALHOST.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    const DEFAULT_HUB: &str = "http://127.0.0.1:13458";

    fn config(vars: &[(&str, &str)]) -> Config {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_lookup(|k| map.get(k).cloned())
    }

    #[test]
    fn hub_list_keeps_order_and_adds_scheme() {
        assert_eq!(
            parse_hub_list(" http://a:1/ , b:2,,"),
            vec!["http://a:1", "http://b:2"]
        );
        assert_eq!(parse_hub_list(""), vec![DEFAULT_HUB]);
    }

    #[test]
    fn secret_env_wins_over_home_file() {
        let c = config(&[("HOLDLINE_SECRET", "s3"), ("HOLDLINE_HOME", "/x")]);
        assert!(matches!(c.secret, SecretSource::Given(ref s) if s == "s3"));
        let c = config(&[("HOLDLINE_HOME", "/x")]);
        assert!(matches!(c.secret, SecretSource::File(ref p) if p == &PathBuf::from("/x/secret")));
        let c = config(&[("HOME", "/home/u")]);
        assert_eq!(c.home, PathBuf::from("/home/u/.holdline"));
    }

    #[test]
    fn sharing_changes_is_off_unless_turned_on() {
        assert!(!config(&[]).share_changes);
        assert!(!config(&[("HOLDLINE_SHARE_CHANGES", "0")]).share_changes);
        assert!(!config(&[("HOLDLINE_SHARE_CHANGES", "yes please")]).share_changes);
        assert!(config(&[("HOLDLINE_SHARE_CHANGES", "1")]).share_changes);
        assert!(
            config(&[("HOLDLINE_SHARE_CHANGES", " TRUE ")])
                .tool_settings()
                .share_changes
        );
    }

    #[test]
    fn an_agent_key_is_sent_instead_of_the_secret() {
        let c = config(&[("HOLDLINE_KEY", " hlk_k "), ("HOLDLINE_SECRET", "s3")]);
        assert!(matches!(c.secret, SecretSource::Key(ref k) if k == "hlk_k"));
        assert!(c.secret.is_key());
        assert_eq!(c.secret.read().as_deref(), Some("hlk_k"));
        assert_eq!(c.secret.describe(), "HOLDLINE_KEY");
        let c = config(&[("HOLDLINE_KEY", " "), ("HOLDLINE_SECRET", "s3")]);
        assert!(!c.secret.is_key());
    }

    #[test]
    fn both_homes_and_the_credential_sent_are_never_attached() {
        let c = config(&[
            ("HOME", "/home/u"),
            ("HOLDLINE_HOME", "/srv/hl"),
            ("HOLDLINE_KEY", "hlk_k"),
        ]);
        let protected = c.protected();
        assert_eq!(
            protected.homes,
            [PathBuf::from("/srv/hl"), PathBuf::from("/home/u/.holdline")]
        );
        assert_eq!(protected.credentials, ["hlk_k"]);
    }

    #[test]
    fn host_id_and_max_wait_overrides() {
        let c = config(&[
            ("HOLDLINE_HOST_ID", "desk-1"),
            ("HOLDLINE_MAX_WAIT_SEC", "42"),
        ]);
        assert_eq!(c.host_ip, "desk-1");
        assert_eq!(c.max_wait, MaxWait::AtMost(Duration::from_secs(42)));
        let c = config(&[("HOLDLINE_MAX_WAIT_SEC", "0")]);
        assert_eq!(c.max_wait, MaxWait::Unlimited);
        let c = config(&[]);
        assert_eq!(c.max_wait, MaxWait::ClientDefault);
        assert!(c.autostart);
    }

    #[test]
    fn local_hub_is_found_where_it_listens() {
        let home = tempfile::tempdir().unwrap();
        let h = home.path().to_str().unwrap();
        let hubs = |vars: &[(&str, &str)]| {
            let mut v = vec![("HOLDLINE_HOME", h)];
            v.extend_from_slice(vars);
            config(&v).hubs
        };
        assert_eq!(hubs(&[]), vec![DEFAULT_HUB]);
        std::fs::write(
            home.path().join("config.toml"),
            "listen = \"0.0.0.0:14001\"\n",
        )
        .unwrap();
        assert_eq!(hubs(&[]), vec!["http://127.0.0.1:14001"]);
        assert_eq!(
            hubs(&[("HOLDLINE_LISTEN", "[::]:14002")]),
            vec!["http://[::1]:14002"]
        );
        std::fs::write(home.path().join("hub.addr"), "127.0.0.1:14003\n").unwrap();
        assert_eq!(
            hubs(&[]),
            vec!["http://127.0.0.1:14003"],
            "the running hub wins"
        );
        assert_eq!(
            hubs(&[("HOLDLINE_HUB", "http://10.0.0.2:1")]),
            vec!["http://10.0.0.2:1"],
            "HOLDLINE_HUB beats discovery"
        );
        std::fs::write(home.path().join("hub.addr"), "garbage").unwrap();
        std::fs::write(home.path().join("config.toml"), "listen = [\n").unwrap();
        assert_eq!(hubs(&[]), vec![DEFAULT_HUB], "unreadable files fall back");
    }

    #[test]
    fn primary_address_is_never_empty() {
        assert!(!primary_ipv4().is_empty());
    }
}
