//! The remote entry's inputs, `--url` and `--key`, checked before anything is written: the
//! URL is the hub's `/mcp` over http(s) with a host, the key is one header-safe word, and no
//! flag of the local entry comes with them. Also the warning about the key in the file,
//! (`holdline-hub key create --print-config CLIENT` prints the install command that runs these).

use reqwest::Url;

use super::{InstallArgs, InstallError, clients::Remote, file::TextFile};

/// The path the hub serves MCP on; a URL given with no path gets it.
pub use holdline_contract::routes::MCP as MCP_PATH;

/// What the person gave and what install made of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckedRemote {
    pub remote: Remote,
    /// `--url` had no path, so [`MCP_PATH`] was added.
    pub added_path: bool,
    /// The key does not look like an agent key (`hlk_…`), maybe the hub's master secret.
    pub not_an_agent_key: bool,
}

fn refused(why: String) -> InstallError {
    InstallError::Refused(why)
}

/// Checks `--url` and `--key` together: both or neither.
pub fn from_flags(
    url: Option<&str>,
    key: Option<&str>,
) -> Result<Option<CheckedRemote>, InstallError> {
    match (url, key) {
        (None, None) => Ok(None),
        (Some(_), None) => Err(refused(
            "--url needs --key: the hub's /mcp answers only a caller with an agent key. \
             Create one on the hub with `holdline-hub key create --name NAME` and pass it \
             with --key."
                .into(),
        )),
        (None, Some(_)) => Err(refused(
            "--key needs --url, the hub's MCP address (e.g. --url http://HUB:13458/mcp). \
             For the local (stdio) entry instead, pass --hub http://HUB:13458 --env \
             HOLDLINE_KEY=… (the bridge then sends the key to that hub)."
                .into(),
        )),
        (Some(url), Some(key)) => check(url, key).map(Some),
    }
}

/// Checks one URL and key.
pub fn check(url: &str, key: &str) -> Result<CheckedRemote, InstallError> {
    let (url, added_path) = check_url(url)?;
    let key = check_key(key)?;
    Ok(CheckedRemote {
        not_an_agent_key: !key.starts_with("hlk_"),
        remote: Remote { url, key },
        added_path,
    })
}

fn check_url(text: &str) -> Result<(String, bool), InstallError> {
    let example = "e.g. http://HUB:13458/mcp";
    let no_host = || {
        refused(format!(
            "--url '{text}' has no host; name the machine the hub runs on ({example})"
        ))
    };
    let mut url = Url::parse(text.trim()).map_err(|e| {
        if e.to_string() == "empty host" {
            return no_host();
        }
        refused(format!(
            "--url '{text}' is not a URL ({e}); give the hub's MCP address, {example}"
        ))
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(refused(format!(
            "--url '{text}' must start with http:// or https:// ({example})"
        )));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(no_host());
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(refused(format!(
            "--url '{text}' carries a user or password; leave them out and pass the key \
             with --key"
        )));
    }
    if url.fragment().is_some() {
        return Err(refused(format!(
            "--url '{text}' has a #fragment, which no request carries; leave it out"
        )));
    }
    let added_path = url.path() == "/";
    if added_path {
        url.set_path(MCP_PATH);
    }
    Ok((url.to_string(), added_path))
}

fn check_key(key: &str) -> Result<String, InstallError> {
    let key = key.trim();
    if key.is_empty() {
        return Err(refused(
            "--key is empty; pass the key `holdline-hub key create` printed".into(),
        ));
    }
    if key
        .get(..7)
        .is_some_and(|p| p.eq_ignore_ascii_case("bearer "))
    {
        return Err(refused(
            "--key takes the key alone, without 'Bearer '; install writes the header".into(),
        ));
    }
    if !key.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(refused(
            "--key has spaces or characters an HTTP header cannot carry; paste the key \
             exactly as `holdline-hub key create` printed it"
                .into(),
        ));
    }
    Ok(key.to_owned())
}

/// The flags that shape only the local entry, when set: a remote entry has none of them.
fn local_only_flags(args: &InstallArgs) -> Vec<&'static str> {
    let mut set = Vec::new();
    if args.hub.is_some() {
        set.push("--hub");
    }
    if args.command.is_some() {
        set.push("--command");
    }
    if !args.env.is_empty() {
        set.push("--env");
    }
    set
}

/// `--url` and `--key` checked, and what the person should know about them.
pub(super) fn from_args(args: &InstallArgs) -> Result<Option<Remote>, InstallError> {
    let Some(checked) = from_flags(args.url.as_deref(), args.key.as_deref())? else {
        return Ok(None);
    };
    if args.share_changes {
        return Err(refused(
            "--share-changes needs the local (stdio) entry: over --url the hub runs the tools \
             and cannot read this machine's workspace. Leave out --share-changes, or leave \
             out --url and --key."
                .into(),
        ));
    }
    let local_only = local_only_flags(args);
    if !local_only.is_empty() {
        return Err(InstallError::Refused(format!(
            "{} shape the local (stdio) entry, which runs holdline-mcp here; the remote \
             entry (--url) has none. Leave {} out, or leave out --url and --key.",
            local_only.join(", "),
            if local_only.len() == 1 { "it" } else { "them" }
        )));
    }
    if checked.added_path {
        eprintln!(
            "note: --url had no path; using {} (the hub serves MCP on {MCP_PATH})",
            checked.remote.url
        );
    }
    if checked.not_an_agent_key {
        eprintln!(
            "note: --key does not look like an agent key (hlk_…). If it is the hub's secret, \
             anyone who can read the config file can reply as you and read every session; \
             an agent key (`holdline-hub key create --name NAME`) can only wait, and can be \
             revoked."
        );
    }
    Ok(Some(checked.remote))
}

/// Says that the agent key sits in the file in plain text, which only its owner can read
/// (`install_config` made it so).
pub(super) fn warn_key_in_file(file: &TextFile) {
    let mode = file
        .mode()
        .map_or_else(String::new, |m| format!(" (mode {m:o})"));
    eprintln!(
        "note: the agent key is written in plain text into {}, which only you can read{mode}. \
         If the file leaks, `holdline-hub key revoke NAME` locks the key out.",
        file.target.display()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(url: Option<&str>, key: Option<&str>) -> String {
        match from_flags(url, key) {
            Err(InstallError::Refused(why)) => why,
            other => panic!("{url:?} {key:?} accepted: {other:?}"),
        }
    }

    #[test]
    fn a_good_url_and_key_pass_and_a_bare_host_gets_the_mcp_path() {
        let c = check("http://10.0.0.5:13458/mcp", "hlk_abc").unwrap();
        assert_eq!(c.remote.url, "http://10.0.0.5:13458/mcp");
        assert!(!c.added_path && !c.not_an_agent_key);
        let c = check(" https://hub.example ", "secret123").unwrap();
        assert_eq!(c.remote.url, "https://hub.example/mcp");
        assert!(c.added_path && c.not_an_agent_key);
    }

    #[test]
    fn each_bad_input_is_named() {
        let key = Some("hlk_abc");
        assert!(refusal(Some("http://h:1/mcp"), None).contains("--url needs --key"));
        assert!(refusal(None, key).contains("--key needs --url"));
        assert!(refusal(Some("hub:13458"), key).contains("http:// or https://"));
        assert!(refusal(Some("13458"), key).contains("is not a URL"));
        assert!(refusal(Some("ftp://hub/mcp"), key).contains("http:// or https://"));
        assert!(refusal(Some("http://"), key).contains("no host"));
        assert!(refusal(Some("https://:13458/mcp"), key).contains("no host"));
        assert!(refusal(Some("http://u:p@hub/mcp"), key).contains("user or password"));
        assert!(refusal(Some("http://hub/mcp#x"), key).contains("fragment"));
        let url = Some("http://hub/mcp");
        assert!(refusal(url, Some("  ")).contains("--key is empty"));
        assert!(refusal(url, Some("Bearer hlk_abc")).contains("without 'Bearer '"));
        assert!(refusal(url, Some("hlk_a b")).contains("cannot carry"));
        assert!(refusal(url, Some("hlk_a\u{e9}")).contains("cannot carry"));
    }
}
