//! `stop`: ends the running hub with SIGTERM and waits until it has flushed and exited.

use std::time::Duration;

use super::client::HubClient;
use super::{AdminError, Result, fail};
use holdline_core::config::Config;
use holdline_core::home::Home;

/// How long `stop` waits for the hub to finish its requests, flush and exit
/// (its own shutdown gives requests 5 s).
const STOP_WAIT: Duration = Duration::from_secs(15);

/// Asks the running hub for its process id (with the secret, so only the hub itself
/// names the process) and sends it SIGTERM, then waits until it has flushed and exited.
/// No hub running is not an error.
pub async fn stop(config: &Config) -> Result<()> {
    let home = Home::new(config.home.clone());
    let Ok(c) = HubClient::new(config) else {
        say!(
            "no holdline-hub has run with the home {}",
            home.root.display()
        );
        return Ok(());
    };
    if !c.is_up().await {
        say!("no holdline-hub is running at {}", c.base);
        return Ok(());
    }
    let p = c.health().await?.process.ok_or_else(|| {
        AdminError::Message(format!(
            "the hub at {} did not say its process id (it is older than this command):              stop it with its service manager or `kill`",
            c.base
        ))
    })?;
    crate::process::terminate(p.pid)
        .map_err(|e| AdminError::Message(format!("cannot stop the hub (PID {}): {e}", p.pid)))?;
    wait_for_exit(&home, p.pid).await?;
    say!("stopped holdline-hub (PID {}) at {}", p.pid, c.base);
    if let Some(hint) = p.started_by.service_hint() {
        say!(
            "It ran as a service, which may start it again (at login or on its own); `{hint}` keeps it stopped."
        );
    }
    Ok(())
}

/// Waits until process `pid` has exited or removed `hub.addr` (which it does as it
/// exits, after its last flush), at most [`STOP_WAIT`].
async fn wait_for_exit(home: &Home, pid: u32) -> Result<()> {
    let deadline = std::time::Instant::now() + STOP_WAIT;
    while crate::process::is_alive(pid) && home.addr_file().exists() {
        if std::time::Instant::now() > deadline {
            return fail(format!(
                "sent the hub (PID {pid}) SIGTERM, but it is still running after {} s",
                STOP_WAIT.as_secs()
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}
