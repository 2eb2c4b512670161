//! `restore BACKUP`: puts a verified copy of a backup in place of the home's store.

use std::path::Path;

use super::client::HubClient;
use super::{Result, count, fail, queued};
use holdline_core::config::Config;
use holdline_core::home::Home;

/// Restores `backup`, keeping the store it replaces beside it; refused while a hub runs.
pub async fn restore(config: &Config, backup: &Path) -> Result<()> {
    let home = Home::new(config.home.clone());
    let db = home.db_dir();
    if store_in_use(&db) || HubClient::running(config).await.is_some() {
        return fail(format!(
            "a hub runs on {}; stop it before restoring a backup",
            config.home.display()
        ));
    }
    let credentials = [holdline_core::keys::META, holdline_core::logins::META];
    let done = holdline_store::store::restore(backup, &db, &credentials)?;
    let v = &done.verified;
    say!(
        "restored {} from {}: {}, {}",
        count(v.sessions, "session"),
        backup.display(),
        count(v.messages, "message"),
        queued(v.replies)
    );
    match done.credentials {
        holdline_store::store::Credentials::Carried => say!(
            "agent keys and panel logins are those of the store it replaced (a key revoked or a login ended after the backup stays so)"
        ),
        holdline_store::store::Credentials::Dropped => say!(
            "agent keys and panel logins: none kept (the store it replaced could not be read to vouch for the backup's); make keys again with `holdline-hub key create` and log in with `holdline-hub panel-url`"
        ),
    }
    if let Some(aside) = done.aside {
        say!("the store it replaced is kept in {}", aside.display());
    }
    Ok(())
}

/// Whether a process holds the lock sled takes on its `db` file, tried
/// without opening sled (which would write to a damaged store).
fn store_in_use(db_dir: &Path) -> bool {
    use rustix::fs::{FlockOperation, flock};
    match std::fs::File::open(db_dir.join("db")) {
        Ok(f) => flock(&f, FlockOperation::NonBlockingLockExclusive).is_err(),
        Err(_) => false,
    }
}
