//! `holdline-mcp install`: each IDE's MCP config entry and rule file — written, merged,
//! backed up, idempotent — or only printed.

use std::{
    path::{Path, PathBuf},
    time::{SystemTime, UNIX_EPOCH},
};

use anyhow::{Context, bail};
use serde_json::{Map, Value, json};

/// The name of holdline's entry in every client's server list.
pub const SERVER_NAME: &str = "holdline";

const TOOLS: [&str; 4] = [
    "init_conversation",
    "select_conversation",
    "wait_for_user_input",
    "merge_conversation",
];

const BEGIN: &str = "<!-- holdline:begin -->";
const END: &str = "<!-- holdline:end -->";

/// What the rule file tells the agent.
pub const RULE: &str = "\
# holdline: keep the conversation going

- At the start of every task, call the MCP tool `init_conversation` with this chat's title as `cursorTitle`, and remember the token it returns.
- Never end your turn on your own. At the end of every step, call `wait_for_user_input` with your token and a short report of what you did and what you propose next; then do what the reply says and call it again.
- If `wait_for_user_input` answers \"no reply yet\", call it again at once with the same token and the same message.
- If a result gives you a new token (after a merge), use the new token from then on.
";

/// `holdline-mcp install` arguments.
#[derive(Debug, clap::Args)]
pub struct InstallArgs {
    /// The IDE or agent to set up.
    #[arg(long, value_enum)]
    pub client: Client,
    /// Print the config entry on stdout (and where it goes on stderr) without writing anything.
    #[arg(long)]
    pub print: bool,
    /// Hub URL list for HOLDLINE_HUB (comma separated, primary first); default: the local hub.
    #[arg(long)]
    pub hub: Option<String>,
    /// Project folder for clients whose rule file lives in the project (default: current folder).
    #[arg(long)]
    pub project: Option<PathBuf>,
}

/// The clients `install` knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Client {
    Cursor,
    ClaudeCode,
    Codex,
    Vscode,
    Windsurf,
    Trae,
    Cline,
    Gemini,
}

/// How a client's MCP config file is shaped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigFormat {
    /// JSON with servers under this top-level key.
    Json(&'static str),
    /// Codex's TOML: `[mcp_servers.NAME]`.
    CodexToml,
}

/// How the rule reaches the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuleKind {
    /// A file of holdline's own, replaced whole.
    OwnFile,
    /// A marked section inside a file the person also edits.
    Section,
}

/// Everything `install` does for one client.
#[derive(Debug, Clone)]
pub struct Plan {
    pub config_path: PathBuf,
    pub format: ConfigFormat,
    /// The value of `<servers key>.holdline` (JSON), or the fields of the TOML table.
    pub entry: Value,
    pub rule_path: PathBuf,
    pub rule_kind: RuleKind,
    pub rule_text: String,
}

/// Builds the plan for `client`, running `command`, pointing at `hub`.
pub fn plan(
    client: Client,
    command: &str,
    hub: Option<&str>,
    home: &Path,
    project: &Path,
    codex_home: Option<&Path>,
) -> Plan {
    let mut env = Map::new();
    if let Some(hub) = hub {
        env.insert("HOLDLINE_HUB".into(), json!(hub));
    }
    let mut env_with_wait = env.clone();
    // Where install raises the client's own tool timeout to 600 s, the bridge may wait
    // almost that long instead of its conservative default for that client.
    env_with_wait.insert("HOLDLINE_MAX_WAIT_SEC".into(), json!("570"));
    let rule_own = |front: &str| format!("{front}{RULE}");
    let app_dir = |name: &str| vscode_like_user_dir(home, name);
    match client {
        Client::Cursor => Plan {
            config_path: home.join(".cursor/mcp.json"),
            format: ConfigFormat::Json("mcpServers"),
            entry: json!({"command": command, "args": [], "env": env, "timeout": 600}),
            rule_path: project.join(".cursor/rules/holdline.mdc"),
            rule_kind: RuleKind::OwnFile,
            rule_text: rule_own(
                "---\ndescription: holdline — keep the conversation going with wait_for_user_input\nalwaysApply: true\n---\n\n",
            ),
        },
        Client::ClaudeCode => Plan {
            config_path: home.join(".claude.json"),
            format: ConfigFormat::Json("mcpServers"),
            entry: json!({"type": "stdio", "command": command, "args": [], "env": env}),
            rule_path: home.join(".claude/CLAUDE.md"),
            rule_kind: RuleKind::Section,
            rule_text: RULE.to_owned(),
        },
        Client::Codex => {
            let dir = codex_home.map_or_else(|| home.join(".codex"), Path::to_path_buf);
            Plan {
                config_path: dir.join("config.toml"),
                format: ConfigFormat::CodexToml,
                entry: json!({"command": command, "args": [], "env": env_with_wait, "tool_timeout_sec": 600}),
                rule_path: dir.join("AGENTS.md"),
                rule_kind: RuleKind::Section,
                rule_text: RULE.to_owned(),
            }
        }
        Client::Vscode => Plan {
            config_path: app_dir("Code").join("mcp.json"),
            format: ConfigFormat::Json("servers"),
            entry: json!({"type": "stdio", "command": command, "args": [], "env": env}),
            rule_path: project.join(".github/instructions/holdline.instructions.md"),
            rule_kind: RuleKind::OwnFile,
            rule_text: rule_own("---\napplyTo: \"**\"\n---\n\n"),
        },
        Client::Windsurf => Plan {
            config_path: home.join(".codeium/windsurf/mcp_config.json"),
            format: ConfigFormat::Json("mcpServers"),
            entry: json!({"command": command, "args": [], "env": env}),
            rule_path: home.join(".codeium/windsurf/memories/global_rules.md"),
            rule_kind: RuleKind::Section,
            rule_text: RULE.to_owned(),
        },
        Client::Trae => Plan {
            config_path: app_dir("Trae").join("mcp.json"),
            format: ConfigFormat::Json("mcpServers"),
            entry: json!({"command": command, "args": [], "env": env}),
            rule_path: project.join(".trae/rules/project_rules.md"),
            rule_kind: RuleKind::Section,
            rule_text: RULE.to_owned(),
        },
        Client::Cline => Plan {
            config_path: app_dir("Code")
                .join("globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json"),
            format: ConfigFormat::Json("mcpServers"),
            entry: json!({
                "command": command, "args": [], "env": env_with_wait,
                "disabled": false, "timeout": 600, "autoApprove": TOOLS,
            }),
            rule_path: project.join(".clinerules/holdline.md"),
            rule_kind: RuleKind::OwnFile,
            rule_text: RULE.to_owned(),
        },
        Client::Gemini => Plan {
            config_path: home.join(".gemini/settings.json"),
            format: ConfigFormat::Json("mcpServers"),
            entry: json!({"command": command, "args": [], "env": env, "timeout": 600000}),
            rule_path: home.join(".gemini/GEMINI.md"),
            rule_kind: RuleKind::Section,
            rule_text: RULE.to_owned(),
        },
    }
}

/// `Code/User` (VS Code) or `Trae/User` in the platform's application data folder.
fn vscode_like_user_dir(home: &Path, app: &str) -> PathBuf {
    if cfg!(target_os = "macos") {
        home.join("Library/Application Support")
            .join(app)
            .join("User")
    } else if cfg!(windows) {
        std::env::var_os("APPDATA")
            .map_or_else(|| home.join("AppData/Roaming"), PathBuf::from)
            .join(app)
            .join("User")
    } else {
        std::env::var_os("XDG_CONFIG_HOME")
            .map_or_else(|| home.join(".config"), PathBuf::from)
            .join(app)
            .join("User")
    }
}

/// The snippet a person pastes: valid JSON or TOML for the client.
pub fn snippet(plan: &Plan) -> String {
    match &plan.format {
        ConfigFormat::Json(key) => {
            let v = json!({ *key: { SERVER_NAME: plan.entry } });
            format!("{}\n", serde_json::to_string_pretty(&v).expect("json"))
        }
        ConfigFormat::CodexToml => {
            let mut doc = toml_edit::DocumentMut::new();
            set_codex_entry(&mut doc, &plan.entry);
            doc.to_string()
        }
    }
}

/// Runs `holdline-mcp install`.
pub fn run(args: &InstallArgs) -> anyhow::Result<()> {
    let home = std::env::var_os("HOME")
        .or_else(|| std::env::var_os("USERPROFILE"))
        .map(PathBuf::from)
        .context("HOME is not set")?;
    let project = match &args.project {
        Some(p) => p.clone(),
        None => std::env::current_dir().context("no current folder")?,
    };
    let exe = std::env::current_exe().context("cannot find holdline-mcp's own path")?;
    let exe = exe.canonicalize().unwrap_or(exe);
    let codex_home = std::env::var_os("CODEX_HOME").map(PathBuf::from);
    let plan = plan(
        args.client,
        &exe.display().to_string(),
        args.hub.as_deref(),
        &home,
        &project,
        codex_home.as_deref(),
    );
    if args.print {
        print!("{}", snippet(&plan));
        eprintln!(
            "# Put the entry above into {} and this rule into {}:\n\n{}",
            plan.config_path.display(),
            plan.rule_path.display(),
            plan.rule_text
        );
        return Ok(());
    }
    let config_changed = apply_config(&plan)?;
    let rule_changed = apply_rule(&plan)?;
    for (path, changed) in [
        (&plan.config_path, config_changed),
        (&plan.rule_path, rule_changed),
    ] {
        eprintln!(
            "{} {}",
            if changed { "wrote" } else { "unchanged" },
            path.display()
        );
    }
    eprintln!(
        "Restart (or reload the MCP servers of) the client; the agent then sees the holdline tools."
    );
    Ok(())
}

/// Merges the entry into the client's config; answers whether the file changed.
pub fn apply_config(plan: &Plan) -> anyhow::Result<bool> {
    let existing = read_optional(&plan.config_path)?;
    let new_text = match &plan.format {
        ConfigFormat::Json(key) => {
            let mut root: Value = match existing.as_deref().map(str::trim) {
                None | Some("") => json!({}),
                Some(text) => serde_json::from_str(text).with_context(|| {
                    format!(
                        "{} is not plain JSON (comments?); add this by hand:\n{}",
                        plan.config_path.display(),
                        snippet(plan)
                    )
                })?,
            };
            let Some(obj) = root.as_object_mut() else {
                bail!("{} does not hold a JSON object", plan.config_path.display());
            };
            let servers = obj.entry(*key).or_insert_with(|| json!({}));
            let Some(servers) = servers.as_object_mut() else {
                bail!(
                    "\"{key}\" in {} is not an object",
                    plan.config_path.display()
                );
            };
            if servers.get(SERVER_NAME) == Some(&plan.entry) {
                return Ok(false);
            }
            servers.insert(SERVER_NAME.to_owned(), plan.entry.clone());
            format!("{}\n", serde_json::to_string_pretty(&root)?)
        }
        ConfigFormat::CodexToml => {
            let mut doc: toml_edit::DocumentMut = existing
                .as_deref()
                .unwrap_or("")
                .parse()
                .with_context(|| format!("{} is not valid TOML", plan.config_path.display()))?;
            let mut wanted = toml_edit::DocumentMut::new();
            set_codex_entry(&mut wanted, &plan.entry);
            let current = doc
                .get("mcp_servers")
                .and_then(|t| t.get(SERVER_NAME))
                .map(item_to_json);
            let target = wanted
                .get("mcp_servers")
                .and_then(|t| t.get(SERVER_NAME))
                .map(item_to_json);
            if current.is_some() && current == target {
                return Ok(false);
            }
            set_codex_entry(&mut doc, &plan.entry);
            doc.to_string()
        }
    };
    write_with_backup(&plan.config_path, existing.as_deref(), &new_text)?;
    Ok(true)
}

/// Writes the rule file or section; answers whether the file changed.
pub fn apply_rule(plan: &Plan) -> anyhow::Result<bool> {
    let existing = read_optional(&plan.rule_path)?;
    let new_text = match plan.rule_kind {
        RuleKind::OwnFile => plan.rule_text.clone(),
        RuleKind::Section => {
            let section = format!("{BEGIN}\n{}{END}\n", plan.rule_text);
            match existing.as_deref() {
                None | Some("") => section,
                Some(text) => match (text.find(BEGIN), text.find(END)) {
                    (Some(b), Some(e)) if b < e => {
                        let after = text[e + END.len()..].trim_start_matches('\n');
                        format!("{}{section}{after}", &text[..b])
                    }
                    _ => {
                        let sep = if text.ends_with("\n\n") {
                            ""
                        } else if text.ends_with('\n') {
                            "\n"
                        } else {
                            "\n\n"
                        };
                        format!("{text}{sep}{section}")
                    }
                },
            }
        }
    };
    if existing.as_deref() == Some(new_text.as_str()) {
        return Ok(false);
    }
    write_with_backup(&plan.rule_path, existing.as_deref(), &new_text)?;
    Ok(true)
}

fn set_codex_entry(doc: &mut toml_edit::DocumentMut, entry: &Value) {
    use toml_edit::{Array, InlineTable, Item, Table, value};
    let servers = doc.entry("mcp_servers").or_insert_with(|| {
        let mut t = Table::new();
        t.set_implicit(true);
        Item::Table(t)
    });
    let mut table = Table::new();
    table["command"] = value(entry["command"].as_str().unwrap_or_default());
    let mut args = Array::new();
    for a in entry["args"].as_array().into_iter().flatten() {
        args.push(a.as_str().unwrap_or_default());
    }
    table["args"] = value(args);
    let mut env = InlineTable::new();
    for (k, v) in entry["env"].as_object().into_iter().flatten() {
        env.insert(k, v.as_str().unwrap_or_default().into());
    }
    table["env"] = value(env);
    if let Some(t) = entry["tool_timeout_sec"].as_i64() {
        table["tool_timeout_sec"] = value(t);
    }
    if let Some(servers) = servers.as_table_like_mut() {
        servers.insert(SERVER_NAME, Item::Table(table));
    }
}

/// A TOML item as JSON, to compare entries regardless of formatting.
fn item_to_json(item: &toml_edit::Item) -> Value {
    fn from_value(v: &toml_edit::Value) -> Value {
        match v {
            toml_edit::Value::String(s) => json!(s.value()),
            toml_edit::Value::Integer(i) => json!(i.value()),
            toml_edit::Value::Float(f) => json!(f.value()),
            toml_edit::Value::Boolean(b) => json!(b.value()),
            toml_edit::Value::Datetime(d) => json!(d.value().to_string()),
            toml_edit::Value::Array(a) => Value::Array(a.iter().map(from_value).collect()),
            toml_edit::Value::InlineTable(t) => Value::Object(
                t.iter()
                    .map(|(k, v)| (k.to_owned(), from_value(v)))
                    .collect(),
            ),
        }
    }
    match item {
        toml_edit::Item::Value(v) => from_value(v),
        toml_edit::Item::Table(t) => Value::Object(
            t.iter()
                .map(|(k, v)| (k.to_owned(), item_to_json(v)))
                .collect(),
        ),
        toml_edit::Item::ArrayOfTables(a) => Value::Array(
            a.iter()
                .map(|t| item_to_json(&toml_edit::Item::Table(t.clone())))
                .collect(),
        ),
        toml_edit::Item::None => Value::Null,
    }
}

fn read_optional(path: &Path) -> anyhow::Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// Copies an existing file to `NAME.holdline-backup-SECS` before replacing it.
fn write_with_backup(path: &Path, existing: Option<&str>, text: &str) -> anyhow::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    if existing.is_some() {
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let backup = path.with_file_name(format!("{name}.holdline-backup-{secs}"));
        std::fs::copy(path, &backup)
            .with_context(|| format!("cannot back up {}", path.display()))?;
        eprintln!("backed up {} to {}", path.display(), backup.display());
    }
    // Write beside, then rename: an IDE reading the file never sees half of it.
    let tmp = path.with_file_name(format!(
        ".{}.holdline-tmp",
        path.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    ));
    std::fs::write(&tmp, text).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot replace {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_plan(client: Client, dir: &Path) -> Plan {
        plan(
            client,
            "/opt/holdline/holdline-mcp",
            Some("http://10.0.0.2:13458"),
            &dir.join("home"),
            &dir.join("proj"),
            None,
        )
    }

    #[test]
    fn json_merge_keeps_other_servers_and_is_idempotent() {
        let dir = tempfile::tempdir().unwrap();
        let p = temp_plan(Client::Cursor, dir.path());
        std::fs::create_dir_all(p.config_path.parent().unwrap()).unwrap();
        std::fs::write(
            &p.config_path,
            r#"{"theme":"dark","mcpServers":{"other":{"command":"x"}}}"#,
        )
        .unwrap();
        assert!(apply_config(&p).unwrap());
        let v: Value =
            serde_json::from_str(&std::fs::read_to_string(&p.config_path).unwrap()).unwrap();
        assert_eq!(v["theme"], "dark");
        assert_eq!(v["mcpServers"]["other"]["command"], "x");
        assert_eq!(
            v["mcpServers"]["holdline"]["env"]["HOLDLINE_HUB"],
            "http://10.0.0.2:13458"
        );
        assert!(!apply_config(&p).unwrap(), "second run changes nothing");
        let backups = std::fs::read_dir(p.config_path.parent().unwrap())
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .contains("holdline-backup")
            })
            .count();
        assert_eq!(backups, 1);
    }

    #[test]
    fn codex_toml_merge_keeps_comments_and_is_idempotent() {
        let dir = tempfile::tempdir().unwrap();
        let p = temp_plan(Client::Codex, dir.path());
        std::fs::create_dir_all(p.config_path.parent().unwrap()).unwrap();
        std::fs::write(
            &p.config_path,
            "# my settings\nmodel = \"o3\"\n\n[mcp_servers.other]\ncommand = \"x\"\n",
        )
        .unwrap();
        assert!(apply_config(&p).unwrap());
        let text = std::fs::read_to_string(&p.config_path).unwrap();
        assert!(text.contains("# my settings"));
        let doc: toml_edit::DocumentMut = text.parse().unwrap();
        assert_eq!(doc["mcp_servers"]["other"]["command"].as_str(), Some("x"));
        assert_eq!(
            doc["mcp_servers"]["holdline"]["tool_timeout_sec"].as_integer(),
            Some(600)
        );
        assert!(!apply_config(&p).unwrap());
    }

    #[test]
    fn rule_section_is_replaced_not_duplicated() {
        let dir = tempfile::tempdir().unwrap();
        let p = temp_plan(Client::ClaudeCode, dir.path());
        std::fs::create_dir_all(p.rule_path.parent().unwrap()).unwrap();
        std::fs::write(&p.rule_path, "# Mine\n\nBe terse.\n").unwrap();
        assert!(apply_rule(&p).unwrap());
        assert!(!apply_rule(&p).unwrap());
        let text = std::fs::read_to_string(&p.rule_path).unwrap();
        assert!(text.starts_with("# Mine\n\nBe terse.\n"));
        assert_eq!(text.matches(BEGIN).count(), 1);
        let mut changed = p.clone();
        changed.rule_text = "new rule\n".into();
        assert!(apply_rule(&changed).unwrap());
        let text = std::fs::read_to_string(&p.rule_path).unwrap();
        assert_eq!(text.matches(BEGIN).count(), 1);
        assert!(text.contains("new rule") && !text.contains("Never end your turn"));
    }

    #[test]
    fn every_snippet_parses() {
        let dir = tempfile::tempdir().unwrap();
        for client in [
            Client::Cursor,
            Client::ClaudeCode,
            Client::Codex,
            Client::Vscode,
            Client::Windsurf,
            Client::Trae,
            Client::Cline,
            Client::Gemini,
        ] {
            let p = temp_plan(client, dir.path());
            let s = snippet(&p);
            match p.format {
                ConfigFormat::Json(key) => {
                    let v: Value = serde_json::from_str(&s).unwrap();
                    assert!(v[key][SERVER_NAME]["command"].is_string(), "{client:?}");
                }
                ConfigFormat::CodexToml => {
                    let doc: toml_edit::DocumentMut = s.parse().unwrap();
                    assert!(doc["mcp_servers"][SERVER_NAME]["command"].is_str());
                }
            }
        }
    }
}
