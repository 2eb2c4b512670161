//! Flags and `HOLDLINE_*` over the file: `serve`'s flags (clap reads their
//! env), the same env for admin commands, and `HOLDLINE_WAIT_GRACE_SEC`.

use std::time::Duration;

use super::{Config, ConfigError, MAX_WAIT_GRACE_SEC, ServeArgs};

impl Config {
    /// Applies `serve`'s flags (or, for admin commands, the env `serve` would read).
    pub(super) fn apply_flags_and_env(
        &mut self,
        serve: Option<&ServeArgs>,
    ) -> Result<(), ConfigError> {
        let c = self;
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
        Ok(())
    }
}
