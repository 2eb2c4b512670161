//! `holdline-mcp install` and `uninstall`: holdline's MCP server entry in each client's
//! config, local (stdio, runs this binary) or remote (`--url` + `--key`: the hub's `/mcp`
//! with an agent key), merged into what the person has (their keys survive; only what the
//! flags say changes), and the rule that keeps the agent waiting. Uninstall takes out
//! exactly those.
//!
//! - `clients`: the installer's entry of each client (`INSTALL`, keyed by the contract's
//!   `ClientId`): where it keeps what, and holdline's entries for it.
//! - `command`: the command an entry runs by default (a path that survives upgrades).
//! - `remote`: `--url` and `--key` checked; the remote entry's text for the hub's CLI.
//! - `entry`: the merge policy, format-free.
//! - `json_doc`, `codex_toml`, `vibe_toml`, `continue_yaml`: in-place edits of each file format.
//! - `permissions`: the client's own allow-list (Claude Code's `permissions.allow`).
//! - `hooks`, `codex_trust`, `lifecycle`: holdline's lifecycle hooks (Claude Code, Codex,
//!   Qwen Code, Gemini CLI):
//!   what is holdline's in a hooks object, Codex's trust records, the files.
//! - `rule`: the rule text, its own file or its marked section.
//! - `file`: symlinks followed, mode and owner kept, backups, atomic replace.

mod clients;
mod codex_toml;
mod codex_trust;
mod command;
mod continue_yaml;
mod entry;
mod file;
mod hooks;
mod json_doc;
mod lifecycle;
mod permissions;
mod remote;
mod rule;
mod vibe_toml;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

pub use clients::{
    BRIDGE_WAIT_SEC, CLIENT_TIMEOUT_SEC, Client, ConfigTarget, Format, Plan, Remote, RuleTarget,
    Setup, plan, remote_entry,
};
pub use entry::{Change, Overwrite};
pub use hooks::{HOOK_TIMEOUT_SEC, HookEvent};
pub use lifecycle::HookTarget;
pub use remote::MCP_PATH;
pub use rule::{BEGIN, END, RULE, RuleKind};

use file::TextFile;
use json_doc::{DocError, JsonDoc};

/// The name of holdline's entry in every client's server list.
pub const SERVER_NAME: &str = "holdline";

/// What stops `install` or `uninstall`; each says what to do next.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error("{action} {}: {error}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{0}")]
    Refused(String),
}

impl InstallError {
    fn io(action: &'static str, path: &Path, error: std::io::Error) -> InstallError {
        InstallError::Io {
            action,
            path: path.to_owned(),
            error,
        }
    }
}

/// `holdline-mcp install` arguments.
#[derive(Debug, clap::Args)]
pub struct InstallArgs {
    /// The IDE or agent to set up.
    #[arg(long, value_enum)]
    pub client: Client,
    /// Print the config entry on stdout (and where it goes on stderr) without writing anything.
    #[arg(long)]
    pub print: bool,
    /// Hub URL list for HOLDLINE_HUB (comma separated, primary first); default: the local
    /// hub, found where it listens.
    #[arg(long, value_name = "URLS")]
    pub hub: Option<String>,
    /// Write the remote entry instead: the client reaches the hub's MCP endpoint at this
    /// URL (e.g. http://HUB:13458/mcp) itself, no holdline-mcp on this machine. Needs --key.
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// The agent key the remote entry sends as `Authorization: Bearer KEY` (from
    /// `holdline-hub key create`). Written into the client's config file.
    #[arg(long, value_name = "KEY")]
    pub key: Option<String>,
    /// Project folder for clients whose rule file lives in the project (default: current folder).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// The command the entry runs (default: the path this holdline-mcp was started by: the
    /// npm launcher, the PATH entry, or its own absolute path).
    #[arg(long, value_name = "PATH")]
    pub command: Option<String>,
    /// Write into this config file instead of the client's default one (e.g. the
    /// config.yaml given to `cn --config`, or a project's opencode.json).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Put every key holdline writes back to holdline's value (keys you added still stay).
    #[arg(long)]
    pub reset: bool,
    /// Gemini CLI / Qwen Code: mark the project folder trusted, so they start holdline.
    #[arg(long)]
    pub trust: bool,
    /// Set a variable in the entry's environment, e.g. HOLDLINE_MAX_WAIT_SEC=8 or
    /// HOLDLINE_SECRET=… (repeatable; replaces the value already there).
    #[arg(long = "env", value_name = "KEY=VALUE", value_parser = parse_env_pair)]
    pub env: Vec<(String, String)>,
    /// Send the workspace's uncommitted git changes (files, +/- counts, the diff up to
    /// 256 KiB) with each question, for the person to see beside it: writes
    /// HOLDLINE_SHARE_CHANGES=1 into the entry. Local (stdio) entries only.
    #[arg(long)]
    pub share_changes: bool,
    /// Claude Code, Codex, Qwen Code: also answer the client's permission prompts from the
    /// hub (a `PermissionRequest` hook beside the `Stop` hook install always writes).
    #[arg(long, conflicts_with = "no_hooks")]
    pub permissions: bool,
    /// Claude Code, Codex, Qwen Code, Gemini CLI, Cursor: no lifecycle hooks (and take out
    /// holdline's, if there are any):
    /// a turn the model ends without calling holdline then reaches nobody.
    #[arg(long)]
    pub no_hooks: bool,
}

/// The variable that turns on sharing the workspace's changes, and its value.
pub const SHARE_CHANGES_ENV: (&str, &str) = ("HOLDLINE_SHARE_CHANGES", "1");

impl InstallArgs {
    /// The variables the flags set in the entry's environment (`--env`, `--share-changes`).
    fn env_pairs(&self) -> Vec<(String, String)> {
        let mut pairs = self.env.clone();
        if self.share_changes {
            let (k, v) = SHARE_CHANGES_ENV;
            pairs.push((k.to_owned(), v.to_owned()));
        }
        pairs
    }

    /// The hook events the flags ask for.
    fn hook_events(&self) -> Vec<HookEvent> {
        match (self.no_hooks, self.permissions) {
            (true, _) => Vec::new(),
            (false, false) => vec![HookEvent::Stop],
            (false, true) => vec![HookEvent::Stop, HookEvent::PermissionRequest],
        }
    }

    /// The variables the hook's command line carries: `--hub` and `--env`.
    fn hook_env(&self) -> Vec<(String, String)> {
        let mut pairs = self.env_pairs();
        if let Some(hub) = &self.hub {
            pairs.retain(|(k, _)| k != "HOLDLINE_HUB");
            pairs.insert(0, ("HOLDLINE_HUB".to_owned(), hub.clone()));
        }
        pairs
    }
}

fn parse_env_pair(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_owned(), v.to_owned())),
        _ => Err(format!("'{s}' is not KEY=VALUE")),
    }
}

/// `holdline-mcp uninstall` arguments.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("which").required(true).args(["client", "all"])))]
pub struct UninstallArgs {
    /// The IDE or agent to remove holdline from.
    #[arg(long, value_enum)]
    pub client: Option<Client>,
    /// Every client install knows.
    #[arg(long)]
    pub all: bool,
    /// Project folder for clients whose rule file lives in the project (default: current folder).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// Remove holdline from this config file instead of the client's default one.
    #[arg(long, value_name = "FILE", conflicts_with = "all")]
    pub config: Option<PathBuf>,
}

/// `holdline-mcp status` arguments.
#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// Only this client (default: the clients whose lifecycle hooks holdline answers).
    #[arg(long, value_enum)]
    pub client: Option<Client>,
    /// Project folder for clients whose files live in the project (default: current folder).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
}

fn home_dir() -> Result<PathBuf, InstallError> {
    std::env::var_os("HOME")
        .or_else(|| std::env::var_os("USERPROFILE"))
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .ok_or_else(|| InstallError::Refused("HOME is not set".into()))
}

fn project_dir(flag: Option<&Path>) -> Result<PathBuf, InstallError> {
    let dir = match flag {
        Some(p) => p.to_owned(),
        None => std::env::current_dir()
            .map_err(|e| InstallError::io("cannot read", Path::new("the current folder"), e))?,
    };
    Ok(std::path::absolute(&dir).unwrap_or(dir))
}

fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

fn plan_for(
    client: Client,
    command: String,
    hub: Option<String>,
    remote: Option<Remote>,
    project: PathBuf,
    config: Option<&Path>,
) -> Result<Plan, InstallError> {
    let setup = Setup {
        command,
        hub,
        remote,
        home: home_dir()?,
        project,
        env: &env_var,
    };
    let mut plan = plan(client, &setup);
    if let Some(path) = config {
        plan.configs.truncate(1);
        plan.configs[0].path = std::path::absolute(path).unwrap_or(path.to_owned());
    }
    Ok(plan)
}

/// Runs `holdline-mcp install`.
pub fn run(args: &InstallArgs) -> Result<(), InstallError> {
    let remote = remote::from_args(args)?;
    let command = match &args.command {
        Some(c) => c.clone(),
        None => {
            let exe = std::env::current_exe().map_err(|e| {
                InstallError::io("cannot find", Path::new("holdline-mcp's own path"), e)
            })?;
            command::default_command(&exe)
        }
    };
    let project = project_dir(args.project.as_deref())?;
    let mut plan = plan_for(
        args.client,
        command.clone(),
        args.hub.clone(),
        remote.clone(),
        project.clone(),
        args.config.as_deref(),
    )?;
    for target in &mut plan.configs {
        if let Some(env) = target
            .entry
            .get_mut(target.env_key)
            .and_then(Value::as_object_mut)
        {
            for (k, v) in &args.env_pairs() {
                env.insert(k.clone(), json!(v));
            }
        }
    }
    if args.print {
        print_plan(args, &plan, &command, remote.is_some());
        return Ok(());
    }
    let entry_env = install_configs(args, &plan)?;
    install_rule(&plan.rule)?;
    if let Some(settings) = &plan.permissions {
        permissions::allow(settings)?;
    }
    if let Some(trusted) = &plan.trusted_folders {
        trust_project(args.client, trusted, &project, args.trust)?;
    }
    if let Some(target) = &plan.hooks {
        install_hooks(args, target, &command, &entry_env, remote.is_some())?;
    } else if args.permissions {
        eprintln!(
            "note: --permissions: holdline answers the permission prompts of Claude Code, Codex and Qwen Code only; nothing was added for this client."
        );
    }
    eprintln!(
        "Restart (or reload the MCP servers of) the client; the agent then sees the holdline tools."
    );
    Ok(())
}

/// The client's lifecycle hooks as the flags ask: the `Stop` hook (and `PermissionRequest`
/// with `--permissions`), or none with `--no-hooks`. A remote entry gets none: the hook is
/// this binary, which a remote install does not need on the machine.
fn install_hooks(
    args: &InstallArgs,
    target: &HookTarget,
    command: &str,
    entry_env: &[(String, String)],
    remote: bool,
) -> Result<(), InstallError> {
    if args.no_hooks {
        if !lifecycle::uninstall(target)? {
            eprintln!(
                "{}: no hooks of holdline's (--no-hooks)",
                target.file.display()
            );
        }
        return Ok(());
    }
    if remote {
        eprintln!(
            "note: no lifecycle hooks with --url: they run holdline-mcp on this machine. A turn \
             the model ends without calling holdline reaches nobody; install the local entry \
             for the hooks."
        );
        return Ok(());
    }
    let line = lifecycle::command_line(target.client, command, entry_env);
    lifecycle::install(target, &line, &args.hook_events())
}

/// `install --print`: the entry on stdout, where it goes and the rest on stderr.
fn print_plan(args: &InstallArgs, plan: &Plan, command: &str, remote: bool) {
    // One document on stdout, so it parses; every file it goes into on stderr (Cline's
    // CLI and extension files take the same entry).
    print!("{}", snippet(&plan.configs[0]));
    for target in &plan.configs {
        eprintln!("# Put the entry above into {}", target.path.display());
    }
    eprintln!(
        "# and this rule into {}:\n\n{}",
        plan.rule.path.display(),
        plan.rule.text
    );
    if let Some(settings) = &plan.permissions {
        eprintln!(
            "# and \"{}\" into permissions.allow of {}",
            permissions::allow_rule(),
            settings.display()
        );
    }
    if let Some(target) = plan.hooks.as_ref().filter(|_| !remote && !args.no_hooks) {
        let line = lifecycle::command_line(target.client, command, &args.hook_env());
        lifecycle::print(target, &line, &args.hook_events());
    }
}

/// Runs `holdline-mcp uninstall`.
pub fn uninstall(args: &UninstallArgs) -> Result<(), InstallError> {
    let clients: Vec<Client> = match args.client {
        Some(c) if !args.all => vec![c],
        _ => clients::INSTALLABLE.to_vec(),
    };
    let project = project_dir(args.project.as_deref())?;
    let mut removed = 0;
    let mut failed = 0;
    // One file that cannot be changed does not stop the others.
    let mut tally = |result: Result<bool, InstallError>| match result {
        Ok(changed) => removed += usize::from(changed),
        Err(e) => {
            eprintln!("{e}");
            failed += 1;
        }
    };
    for client in clients {
        let plan = plan_for(
            client,
            String::new(),
            None,
            None,
            project.clone(),
            args.config.as_deref(),
        )?;
        for target in &plan.configs {
            tally(uninstall_config(target));
        }
        tally(uninstall_rule(&plan.rule));
        if let Some(settings) = &plan.permissions {
            tally(permissions::disallow(settings));
        }
        if let Some(target) = &plan.hooks {
            tally(lifecycle::uninstall(target));
        }
    }
    if failed > 0 {
        return Err(InstallError::Refused(format!(
            "{failed} file(s) still have holdline in them (see above); the rest is done"
        )));
    }
    if removed == 0 {
        eprintln!("holdline was not installed there; nothing changed.");
    }
    Ok(())
}

/// Runs `holdline-mcp status`: per client, whether holdline's entry and its lifecycle
/// hooks are in place, and for Codex whether they are trusted (else Codex skips them).
pub fn status(args: &StatusArgs) -> Result<(), InstallError> {
    let clients = match args.client {
        Some(c) => vec![c],
        // The clients whose hooks holdline answers, in `hook --client`'s order.
        None => <crate::hook::HookClient as clap::ValueEnum>::value_variants()
            .iter()
            .map(|h| h.id())
            .collect(),
    };
    let project = project_dir(args.project.as_deref())?;
    for client in clients {
        let plan = plan_for(client, String::new(), None, None, project.clone(), None)?;
        let name = clap::ValueEnum::to_possible_value(&client)
            .map_or_else(String::new, |v| v.get_name().to_owned());
        println!("{name}:");
        for target in &plan.configs {
            println!("  {}", entry_status(target));
        }
        match &plan.hooks {
            Some(hooks) => lifecycle::status(hooks)
                .iter()
                .for_each(|line| println!("  {line}")),
            None => println!(
                "  no lifecycle hooks (holdline answers Claude Code's, Codex's, Qwen Code's, Gemini CLI's and Cursor's)"
            ),
        }
    }
    Ok(())
}

/// Whether `target`'s file holds holdline's entry, in one line.
fn entry_status(target: &ConfigTarget) -> String {
    let path = target.path.display();
    let text = match TextFile::read(&target.path) {
        Ok(file) => file.text.unwrap_or_default(),
        Err(e) => return format!("{path}: {e}"),
    };
    match current_entry(target, &text) {
        Ok(Some(_)) => format!("{path}: holdline's entry in place"),
        Ok(None) => format!("{path}: no holdline entry"),
        Err(e) => e.to_string().lines().next().unwrap_or_default().to_owned(),
    }
}

/// The entry as a person pastes it: valid JSON, TOML or YAML for the client.
pub fn snippet(target: &ConfigTarget) -> String {
    entry_text(target.format, &target.entry)
}

/// `entry` under holdline's name, as a file of `format` holds it.
fn entry_text(format: Format, entry: &Value) -> String {
    let text = match format {
        Format::Json(key) => Ok(format!(
            "{}\n",
            serde_json::to_string_pretty(&json!({ key: { SERVER_NAME: entry } })).expect("json")
        )),
        Format::CodexToml => codex_toml::with_entry("", entry).map_err(|e| e.0),
        Format::VibeToml => vibe_toml::with_entry("", entry).map_err(|e| e.0),
        Format::ContinueYaml => {
            continue_yaml::with_entry("mcpServers: []\n", entry).map_err(|e| e.0)
        }
    };
    text.expect("holdline's own entry always renders")
}

/// A refusal that ends with the entry to paste by hand.
fn refuse(target: &ConfigTarget, why: &str) -> InstallError {
    InstallError::Refused(format!(
        "{} {why}. Nothing was changed; add holdline's entry by hand:\n{}",
        target.path.display(),
        snippet(target).trim_end()
    ))
}

fn doc_error(target: &ConfigTarget, e: DocError) -> InstallError {
    match e {
        DocError::Syntax(e) => refuse(target, &format!("is not valid JSON ({e})")),
        DocError::NotAnObject(key) => {
            refuse(target, &format!("has \"{key}\" that is not an object"))
        }
        DocError::EntryNotPlainJson => refuse(
            target,
            "has comments or trailing commas inside holdline's entry, which install would lose",
        ),
    }
}

fn current_entry(target: &ConfigTarget, text: &str) -> Result<Option<Value>, InstallError> {
    match target.format {
        Format::Json(key) => JsonDoc::parse(text)
            .and_then(|d| d.entry(key, SERVER_NAME))
            .map_err(|e| doc_error(target, e)),
        Format::CodexToml => codex_toml::entry(text)
            .map_err(|e| refuse(target, &format!("is not valid TOML ({})", e.0))),
        Format::VibeToml => vibe_toml::entry(text)
            .map_err(|e| refuse(target, &format!("cannot be edited: {}", e.0))),
        Format::ContinueYaml => continue_yaml::entry(text)
            .map_err(|e| refuse(target, &format!("cannot be edited: {}", e.0))),
    }
}

fn text_with_entry(
    target: &ConfigTarget,
    text: &str,
    value: &Value,
) -> Result<String, InstallError> {
    match target.format {
        Format::Json(key) => JsonDoc::parse(text)
            .and_then(|d| d.with_entry(key, SERVER_NAME, value))
            .map_err(|e| doc_error(target, e)),
        Format::CodexToml => codex_toml::with_entry(text, value)
            .map_err(|e| refuse(target, &format!("cannot be edited: {}", e.0))),
        Format::VibeToml => vibe_toml::with_entry(text, value)
            .map_err(|e| refuse(target, &format!("cannot be edited: {}", e.0))),
        Format::ContinueYaml => continue_yaml::with_entry(text, value)
            .map_err(|e| refuse(target, &format!("cannot be edited: {}", e.0))),
    }
}

fn text_without_entry(target: &ConfigTarget, text: &str) -> Result<Option<String>, InstallError> {
    let fail = |why: String| {
        InstallError::Refused(format!(
            "{} {why}; remove holdline's entry by hand. Nothing was changed.",
            target.path.display()
        ))
    };
    match target.format {
        Format::Json(key) => JsonDoc::parse(text)
            .and_then(|d| d.without_entry(key, SERVER_NAME))
            .map_err(|e| match e {
                DocError::Syntax(e) => fail(format!("is not valid JSON ({e})")),
                DocError::NotAnObject(k) => fail(format!("has \"{k}\" that is not an object")),
                DocError::EntryNotPlainJson => fail("cannot be read".into()),
            }),
        Format::CodexToml => codex_toml::without_entry(text)
            .map_err(|e| fail(format!("is not valid TOML ({})", e.0))),
        Format::VibeToml => {
            vibe_toml::without_entry(text).map_err(|e| fail(format!("cannot be edited: {}", e.0)))
        }
        Format::ContinueYaml => continue_yaml::without_entry(text)
            .map_err(|e| fail(format!("cannot be edited: {}", e.0))),
    }
}

/// An uninstall deletes the installer's backups of a file it changed: they hold
/// holdline's entry, and maybe an agent key.
fn report_deleted_backups(file: &TextFile) -> Result<(), InstallError> {
    for b in file.delete_backups()? {
        eprintln!("  (deleted the installer's backup {})", b.display());
    }
    Ok(())
}

fn report_backup(backup: Option<PathBuf>) {
    if let Some(b) = backup {
        eprintln!("  (the old file is saved as {})", b.display());
    }
}

/// Merges holdline's entry into each of the plan's config files; the environment the
/// first one holds now (what the person kept there and what the flags set).
fn install_configs(args: &InstallArgs, plan: &Plan) -> Result<Vec<(String, String)>, InstallError> {
    let env_pairs = args.env_pairs();
    let mut flagged_env: Vec<&str> = env_pairs.iter().map(|(k, _)| k.as_str()).collect();
    if args.hub.is_some() {
        flagged_env.push("HOLDLINE_HUB");
    }
    let mut entry_env = None;
    for target in &plan.configs {
        let mut overwrite = Overwrite {
            paths: target.decided.clone(),
            all: args.reset,
            other_transport: target.other_transport.clone(),
        };
        for key in &flagged_env {
            overwrite.paths.push(format!("{}.{key}", target.env_key));
        }
        let merged = install_config(target, &overwrite, target.holds_key)?;
        if entry_env.is_none() {
            entry_env = Some(env_of(&merged, target.env_key));
        }
    }
    Ok(entry_env.unwrap_or_default())
}

/// The string variables of an entry's environment.
fn env_of(entry: &Value, env_key: &str) -> Vec<(String, String)> {
    entry
        .get(env_key)
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
        .collect()
}

/// Merges holdline's entry into the file; one that holds a key (`holds_key`) is made
/// `0600` (created so, or others' bits taken off), and the person is told where their key
/// now is.
fn install_config(
    target: &ConfigTarget,
    overwrite: &Overwrite,
    holds_key: bool,
) -> Result<Value, InstallError> {
    let file = TextFile::read(&target.path)?;
    let mode_before = file.mode();
    let text = file.text.clone().unwrap_or_default();
    let existing = current_entry(target, &text)?;
    let (merged, changes) = entry::merge(existing.as_ref(), &target.entry, overwrite);
    let name = file.describe();
    if existing.is_some() && changes.is_empty() {
        eprintln!("{name}: unchanged (holdline's entry is up to date)");
        if holds_key {
            file.make_private()?;
            report_made_private(mode_before, file.mode());
        }
        return Ok(merged);
    }
    let new_text = text_with_entry(target, &text, &merged)?;
    let backup = file.write(&new_text, holds_key)?;
    if existing.is_none() {
        eprintln!("{name}: added holdline's entry");
    } else {
        eprintln!("{name}: updated holdline's entry:");
        for change in &changes {
            eprintln!("  {change}");
        }
    }
    report_backup(backup);
    if holds_key {
        report_made_private(mode_before, file.mode());
        remote::warn_key_in_file(&file);
    }
    Ok(merged)
}

/// Says so in one line when a file that now holds a key lost its group and other bits.
fn report_made_private(before: Option<u32>, after: Option<u32>) {
    if let (Some(before), Some(after)) = (before, after)
        && before != after
    {
        eprintln!(
            "  (mode {before:o} -> {after:o}: the file holds the agent key, so only you may read it)"
        );
    }
}

fn install_rule(target: &RuleTarget) -> Result<(), InstallError> {
    let file = TextFile::read(&target.path)?;
    let new_text = rule::with_rule(target.kind, file.text.as_deref(), &target.text);
    let name = file.describe();
    if file.text.as_deref() == Some(new_text.as_str()) {
        eprintln!("{name}: unchanged (the holdline rule is up to date)");
        return Ok(());
    }
    let backup = file.write(&new_text, false)?;
    eprintln!("{name}: wrote the holdline rule");
    report_backup(backup);
    Ok(())
}

fn uninstall_config(target: &ConfigTarget) -> Result<bool, InstallError> {
    let file = TextFile::read(&target.path)?;
    let Some(text) = &file.text else {
        return Ok(false);
    };
    let Some(new_text) = text_without_entry(target, text)? else {
        return Ok(false);
    };
    file.write_unsaved(&new_text)?;
    eprintln!("{}: removed holdline's entry", file.describe());
    report_deleted_backups(&file)?;
    Ok(true)
}

fn uninstall_rule(target: &RuleTarget) -> Result<bool, InstallError> {
    let file = TextFile::read(&target.path)?;
    let Some(text) = &file.text else {
        return Ok(false);
    };
    let name = file.describe();
    match target.kind {
        RuleKind::OwnFile => {
            if !text.contains(rule::RULE_TITLE) {
                return Ok(false);
            }
            file.delete()?;
            eprintln!("{}: removed the holdline rule file", target.path.display());
        }
        RuleKind::Section => match rule::without_section(text) {
            None => return Ok(false),
            Some(None) => {
                file.delete()?;
                eprintln!("{name}: removed the holdline rule (the file held nothing else)");
            }
            Some(Some(rest)) => {
                let backup = file.write(&rest, false)?;
                eprintln!("{name}: removed the holdline rule section");
                report_backup(backup);
            }
        },
    }
    Ok(true)
}

/// Gemini CLI and Qwen Code start MCP servers only in trusted folders: trust the project
/// with `--trust`, else say how.
fn trust_project(
    client: Client,
    trusted_folders: &Path,
    project: &Path,
    trust: bool,
) -> Result<(), InstallError> {
    let file = TextFile::read(trusted_folders)?;
    let current: Value = match file.text.as_deref().map(str::trim) {
        None | Some("") => json!({}),
        Some(text) => serde_json::from_str(text).map_err(|e| {
            InstallError::Refused(format!(
                "{} is not valid JSON ({e}); fix it, or trust {} from inside the client",
                trusted_folders.display(),
                project.display()
            ))
        })?,
    };
    if clients::is_trusted(&current, project) {
        return Ok(());
    }
    let (name, what) = if client == Client::Qwen {
        ("Qwen Code", "starts MCP servers such as holdline")
    } else {
        (
            "Gemini CLI",
            "starts MCP servers such as holdline, and runs hooks,",
        )
    };
    if !trust {
        eprintln!(
            "note: {name} {what} only in folders it trusts. \
             Trust {} by running {} there and choosing \"Trust folder\", or run this again \
             with --trust.",
            project.display(),
            if client == Client::Qwen {
                "qwen"
            } else {
                "gemini"
            }
        );
        return Ok(());
    }
    let mut map = current.as_object().cloned().unwrap_or_default();
    map.insert(project.display().to_string(), json!("TRUST_FOLDER"));
    let text = format!(
        "{}\n",
        serde_json::to_string_pretty(&Value::Object(map)).expect("json")
    );
    let backup = file.write(&text, false)?;
    eprintln!("{}: trusted {}", file.describe(), project.display());
    report_backup(backup);
    Ok(())
}
