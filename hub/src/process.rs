//! The hub as an operating-system process: its PID and what started it, as
//! `/healthz` tells the person (with the secret), and the stop that
//! `holdline-hub stop` sends.
//!
//! Invariant: `stop` signals only a PID that the running hub itself reported
//! over an authenticated request, never one read from a file that could be
//! stale.

use serde::{Deserialize, Serialize};

/// Set by `holdline-mcp` on the hub it auto-starts.
pub const STARTED_BY_ENV: &str = "HOLDLINE_STARTED_BY";

/// What started the hub.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StartedBy {
    /// A systemd unit (`INVOCATION_ID` is set).
    Systemd,
    /// A LaunchAgent (`XPC_SERVICE_NAME` names a service).
    Launchd,
    /// A bridge that found no hub answering and started one.
    Bridge,
    /// By hand: a terminal, `nohup`, cron.
    Shell,
}

impl StartedBy {
    /// Read from the process environment.
    pub fn detect() -> StartedBy {
        let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty() && v != "0");
        if std::env::var(STARTED_BY_ENV).as_deref() == Ok("bridge") {
            StartedBy::Bridge
        } else if set("INVOCATION_ID") {
            StartedBy::Systemd
        } else if set("XPC_SERVICE_NAME") {
            StartedBy::Launchd
        } else {
            StartedBy::Shell
        }
    }

    /// How to stop it for good, for a service whose manager would start it again.
    pub fn service_hint(self) -> Option<&'static str> {
        match self {
            StartedBy::Systemd => Some("systemctl --user stop holdline-hub"),
            StartedBy::Launchd => Some("launchctl bootout gui/$(id -u)/dev.holdline.hub"),
            StartedBy::Bridge | StartedBy::Shell => None,
        }
    }
}

/// This process, as `/healthz` shows it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HubProcess {
    pub pid: u32,
    pub started_by: StartedBy,
}

impl HubProcess {
    pub fn this() -> HubProcess {
        HubProcess {
            pid: std::process::id(),
            started_by: StartedBy::detect(),
        }
    }
}

/// Sends SIGTERM to `pid` (the hub then finishes its requests, flushes and
/// exits); `Err` when there is no such process or it may not be signalled.
pub fn terminate(pid: u32) -> std::io::Result<()> {
    let pid = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
        .ok_or_else(|| std::io::Error::other(format!("{pid} is not a process id")))?;
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).map_err(Into::into)
}

/// Whether a process `pid` exists now.
pub fn is_alive(pid: u32) -> bool {
    let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return false;
    };
    // Signal 0: the existence check, nothing is sent.
    rustix::process::test_kill_process(pid).is_ok()
}
