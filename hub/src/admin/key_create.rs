//! `key create --name NAME [--print-config CLIENT]`: a new agent key.

use std::io::Write as _;

use holdline_contract::clients;

use super::client::HubClient;
use super::{Result, mcp_url, offline_keys, said};
use crate::api::dto::KeyCreateBody;
use holdline_core::config::Config;

/// The key alone on stdout's first line, so `KEY=$(holdline-hub key create --name x |
/// head -1)` works, then, when asked, the `holdline-mcp install` command that writes the
/// client's remote entry on the agent's machine; how to use it on stderr.
pub async fn key_create(config: &Config, name: &str, print_config: Option<&str>) -> Result<()> {
    let name = holdline_core::keys::KeyName::parse(name).map_err(said)?;
    let key = match HubClient::running(config).await {
        Some(c) => {
            let body = KeyCreateBody {
                name: name.as_str().to_owned(),
            };
            c.create_key(&body).await?.key
        }
        None => {
            offline_keys(config)?
                .create(name.as_str())
                .await
                .map_err(said)?
                .1
        }
    };
    {
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "{key}");
        if let Some(client) = print_config {
            let command = clients::remote_install_command(client, &mcp_url(config), &key);
            let _ = writeln!(stdout, "{command}");
        }
        let _ = stdout.flush();
    }
    if let Some(client) = print_config {
        explain_config(client, &mcp_url(config));
    }
    eprintln!(
        "Agent key \"{name}\" created. It is shown only this once (the hub keeps its hash).\n\
         Give it to that machine's agent: HOLDLINE_KEY=<key> in the holdline-mcp entry's env,\n\
         or the header `Authorization: Bearer <key>` for the hub's /mcp URL.\n\
         It opens the agent routes only; `holdline-hub key revoke {name}` ends it at once."
    );
    Ok(())
}

/// What the printed install command does, on stderr (and that a loopback hub is out of
/// another machine's reach).
fn explain_config(client: &str, url: &str) {
    eprintln!(
        "Above, after the key: on the agent's machine, that command writes the {client} \
         entry for {url} (the hub's /mcp with this key) into the client's config; with \
         --print added it prints the entry instead, to paste where holdline-mcp is not."
    );
    if url.contains("://127.") || url.contains("://[::1]") || url.contains("://localhost") {
        eprintln!(
            "The hub listens on loopback only: another machine needs it started with \
             --listen 0.0.0.0:PORT (or `listen` in config.toml)."
        );
    }
}
