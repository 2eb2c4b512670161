//! Crash points for the durability tests: a debug build stops dead at the point
//! `HOLDLINE_CRASH_POINT` names — no flush, no destructor, as after a SIGKILL — so a test
//! can stand between two writes that must read as one fact; or it lingers two seconds at
//! the point `HOLDLINE_SLOW_POINT` names, so a test can act between two steps. A release
//! build has neither.

/// A place between two steps where a test may stop or slow the hub.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashPoint {
    /// An MCP task's result is stored and flushed; its reply is not acked at the hub yet.
    TaskResultStored,
    /// An MCP task's wait has answered with a reply; the task has not stored it yet.
    TaskResultReady,
}

impl CrashPoint {
    /// The value of `HOLDLINE_CRASH_POINT` that names this point.
    pub fn name(self) -> &'static str {
        match self {
            CrashPoint::TaskResultStored => "task-result-stored",
            CrashPoint::TaskResultReady => "task-result-ready",
        }
    }

    /// Lingers here for two seconds when the environment names this point (debug builds
    /// only).
    pub async fn slowed(self) {
        #[cfg(debug_assertions)]
        if std::env::var("HOLDLINE_SLOW_POINT").is_ok_and(|v| v == self.name()) {
            tokio::time::sleep(std::time::Duration::from_secs(2)).await;
        }
    }

    /// Stops the process here when the environment names this point (debug builds only).
    pub fn reached(self) {
        #[cfg(debug_assertions)]
        if std::env::var("HOLDLINE_CRASH_POINT").is_ok_and(|v| v == self.name()) {
            eprintln!("crash point {} reached", self.name());
            std::process::abort();
        }
    }
}
