//! `install --url URL --key KEY`: the remote entry in every client's own shape, merged and
//! switched to and from the local one, its key kept out of the report and in a `0600` file
//! (created so, or an existing one tightened), and each bad input refused before anything
//! is written.

use std::os::unix::fs::PermissionsExt;

use serde_json::{Value, json};

use super::{
    CLIENTS, ClientCase, Fmt, Sandbox, edit_entry, holdline, mode, read, with_other_server,
};

const URL: &str = "http://10.1.2.3:13458/mcp";
const KEY: &str = "hlk_AAAAbbbbCCCCddddEEEEffffGGGGhhhhIIIIjjj0";

/// Where a client's remote entry keeps the URL and the headers, and its `type`.
fn shape(client: &str) -> (&'static str, &'static [&'static str], Option<&'static str>) {
    match client {
        "cursor" | "trae" => ("url", &["headers"], None),
        "claude-code" | "vscode" | "gemini" | "copilot" => ("url", &["headers"], Some("http")),
        "codex" => ("url", &["http_headers"], None),
        "windsurf" => ("serverUrl", &["headers"], None),
        "cline" => ("url", &["headers"], Some("streamableHttp")),
        "qwen" => ("httpUrl", &["headers"], None),
        "opencode" | "kilo" => ("url", &["headers"], Some("remote")),
        "droid" => ("url", &["headers"], Some("http")),
        "continue" => (
            "url",
            &["requestOptions", "headers"],
            Some("streamable-http"),
        ),
        "mistral-vibe" => ("url", &["auth", "headers"], None),
        "kimi-code" | "zed" | "openhands" => ("url", &["headers"], None),
        "roo-code" => ("url", &["headers"], Some("streamable-http")),
        other => panic!("no remote shape for {other}"),
    }
}

fn headers<'a>(client: &str, entry: &'a Value) -> &'a Value {
    shape(client).1.iter().fold(entry, |v, k| &v[k])
}

/// Checks `entry` is `case`'s remote entry for URL and `key`, with its timeout kept.
fn assert_remote(case: &ClientCase, entry: &Value, key: &str) {
    let (url_key, _, kind) = shape(case.name);
    assert_eq!(entry[url_key], URL, "{}: {entry}", case.name);
    let h = headers(case.name, entry);
    assert_eq!(
        h["Authorization"],
        format!("Bearer {key}"),
        "{}: {entry}",
        case.name
    );
    assert_eq!(
        entry.get("type").and_then(Value::as_str),
        kind,
        "{}",
        case.name
    );
    for local in ["command", "args", "env", "environment"] {
        assert!(
            entry.get(local).is_none(),
            "{}: {local} left: {entry}",
            case.name
        );
    }
    match case.timeout {
        Some((k, v)) => assert_eq!(entry[k], json!(v), "{}: {entry}", case.name),
        None => assert!(entry.get("timeout").is_none(), "{}: {entry}", case.name),
    }
    // The hub's stand-in for HOLDLINE_MAX_WAIT_SEC, beside a timeout install raised.
    let wait = h["Holdline-Max-Wait-Sec"].as_str();
    let raised = matches!(case.timeout, Some((_, 3600 | 3_600_000)));
    assert_eq!(wait, raised.then_some("3570"), "{}: {entry}", case.name);
}

fn remote(sb: &Sandbox, client: &str, key: &str) -> String {
    let args = ["install", "--client", client, "--url", URL, "--key", key];
    let stderr = sb.ok(&args);
    assert!(
        !stderr.contains(key),
        "{client}: the key was printed: {stderr}"
    );
    stderr
}

#[test]
fn fresh_remote_install_writes_each_client_s_http_entry_in_a_0600_file() {
    for case in CLIENTS {
        let sb = Sandbox::new();
        let out = remote(&sb, case.name, KEY);
        let config = sb.path(case.config);
        let entry = holdline(case.fmt, &read(&config))
            .unwrap_or_else(|| panic!("{}: no holdline entry", case.name));
        assert_remote(&case, &entry, KEY);
        assert_eq!(mode(&config), 0o600, "{}", case.name);
        assert!(
            out.contains("written in plain text") && out.contains("mode 600"),
            "{}: {out}",
            case.name
        );
        // The rule is the same for a remote entry.
        assert!(read(&sb.path(case.rule)).contains("wait_for_user_input"));
        // A re-run changes nothing.
        let before = read(&config);
        let out = remote(&sb, case.name, KEY);
        assert!(out.contains("up to date"), "{}: {out}", case.name);
        assert_eq!(read(&config), before, "{}", case.name);
    }
}

/// Local → remote → local in a file the person shares, with their own keys in holdline's
/// entry: each switch reports what changed, keeps their keys, and uninstall gives back
/// the original bytes.
#[test]
fn switching_local_remote_local_keeps_the_person_s_keys_and_uninstall_restores_bytes() {
    for case in CLIENTS {
        let sb = Sandbox::new();
        let (config, original) = seed_with_other_server(&sb, &case, 0o644);
        // Untouched by the person: after local → remote → local, uninstall gives back
        // the very bytes.
        sb.install(case.name, &[]);
        remote(&sb, case.name, KEY);
        sb.install(case.name, &[]);
        sb.ok(&["uninstall", "--client", case.name]);
        assert_eq!(
            read(&config),
            original,
            "{}: uninstall left other bytes",
            case.name
        );

        // The person's own keys in holdline's entry (their editor rewrote the file).
        sb.install(case.name, &[]);
        std::fs::write(&config, edit_entry(&case, &read(&config))).unwrap();
        // The key went in before, so the file is 0600 now; the person loosened it again.
        assert_eq!(mode(&config), 0o600, "{}", case.name);
        std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o644)).unwrap();

        let out = remote(&sb, case.name, KEY);
        assert!(
            !out.contains("s3cret"),
            "{}: a secret was printed: {out}",
            case.name
        );
        let (url_key, _, _) = shape(case.name);
        for line in ["removed command", &format!("added {url_key} = \"{URL}\"")] {
            assert!(out.contains(line), "{}: no '{line}' in {out}", case.name);
        }
        assert!(
            out.contains("mode 644 -> 600") && !out.contains("chmod 600"),
            "{}: a 0644 file holds the key: {out}",
            case.name
        );
        assert_eq!(
            mode(&config),
            0o600,
            "{}: a file holding the key stayed readable by others",
            case.name
        );
        let entry = holdline(case.fmt, &read(&config)).unwrap();
        assert_remote(&case, &entry, KEY);
        assert_eq!(entry["mine"], true, "{}: the person's key went", case.name);

        // A new key replaces the old one and a wrong `type` is put right; the person's
        // extra header stays.
        let mut v = super::parse(case.fmt, &read(&config));
        let text = match case.fmt {
            Fmt::Json(_) | Fmt::Yaml => {
                let e = find_entry(case.fmt, &mut v);
                if e.get("type").is_some() {
                    e["type"] = json!("sse");
                }
                let h = shape(case.name).1.iter().fold(e, |v, k| &mut v[k]);
                h["X-Mine"] = json!("1");
                match case.fmt {
                    Fmt::Yaml => serde_yaml_ng::to_string(&v).unwrap(),
                    _ => format!("{}\n", serde_json::to_string_pretty(&v).unwrap()),
                }
            }
            Fmt::Toml => {
                let mut doc: toml_edit::DocumentMut = read(&config).parse().unwrap();
                doc["mcp_servers"]["holdline"]["http_headers"]["X-Mine"] = toml_edit::value("1");
                doc.to_string()
            }
            Fmt::VibeToml => {
                let mut doc: toml_edit::DocumentMut = read(&config).parse().unwrap();
                super::vibe_entry(&mut doc)["auth"]["headers"]["X-Mine"] = toml_edit::value("1");
                doc.to_string()
            }
        };
        std::fs::write(&config, text).unwrap();
        let out = remote(&sb, case.name, "hlk_second");
        assert!(out.contains("changed"), "{}: {out}", case.name);
        assert!(
            out.contains("Authorization: \"<hidden>\" -> \"<hidden>\""),
            "{}: {out}",
            case.name
        );
        let entry = holdline(case.fmt, &read(&config)).unwrap();
        assert_remote(&case, &entry, "hlk_second");
        assert_eq!(headers(case.name, &entry)["X-Mine"], "1", "{}", case.name);

        // Back to local: the remote keys go, the person's key stays.
        let out = sb.install(case.name, &[]);
        assert!(!out.contains("hlk_second"), "{}: {out}", case.name);
        assert!(
            out.contains(&format!("removed {url_key}")),
            "{}: {out}",
            case.name
        );
        assert!(out.contains("added command"), "{}: {out}", case.name);
        let entry = holdline(case.fmt, &read(&config)).unwrap();
        assert_eq!(
            super::entry_command(&entry),
            super::COMMAND,
            "{}",
            case.name
        );
        assert_eq!(entry["mine"], true, "{}", case.name);
        for k in [
            url_key,
            "headers",
            "http_headers",
            "requestOptions",
            "oauth",
        ] {
            assert!(entry.get(k).is_none(), "{}: {k} left: {entry}", case.name);
        }
        if let Some(kind) = entry.get("type") {
            assert!(
                ["stdio", "local"].contains(&kind.as_str().unwrap()),
                "{}",
                case.name
            );
        }

        sb.ok(&["uninstall", "--client", case.name]);
        assert_eq!(
            super::parse(case.fmt, &read(&config)),
            super::parse(case.fmt, &original),
            "{}: uninstall left something",
            case.name
        );
    }
}

fn find_entry(fmt: Fmt, doc: &mut Value) -> &mut Value {
    match fmt {
        Fmt::Json(key) => &mut doc[key]["holdline"],
        Fmt::Yaml => doc["mcpServers"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .find(|e| e["name"] == "holdline")
            .unwrap(),
        Fmt::Toml | Fmt::VibeToml => unreachable!("TOML is edited with toml_edit"),
    }
}

#[test]
fn uninstall_of_a_remote_entry_gives_back_the_same_bytes() {
    for case in CLIENTS {
        let sb = Sandbox::new();
        let (config, original) = seed_with_other_server(&sb, &case, 0o600);
        let out = remote(&sb, case.name, KEY);
        assert!(out.contains("mode 600"), "{}: {out}", case.name);
        sb.ok(&["uninstall", "--client", case.name]);
        assert_eq!(read(&config), original, "{}", case.name);
        assert_eq!(mode(&config), 0o600, "{}", case.name);
    }
}

#[test]
fn print_shows_the_remote_entry_and_the_library_gives_the_same_text() {
    for case in CLIENTS {
        let sb = Sandbox::new();
        let out = sb
            .command(&[
                "install", "--client", case.name, "--url", URL, "--key", KEY, "--print",
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", case.name);
        let stdout = String::from_utf8(out.stdout).unwrap();
        let entry = holdline(case.fmt, &stdout).unwrap_or_else(|| panic!("{stdout}"));
        assert_remote(&case, &entry, KEY);
        assert_eq!(
            std::fs::read_dir(&sb.home).unwrap().count(),
            0,
            "{}",
            case.name
        );
    }
}

/// `holdline-hub key create --print-config CLIENT` takes the client names of the contract
/// (the hub does not link the installer): they are exactly the names `--client` takes.
#[test]
fn the_hubs_client_names_are_the_installers() {
    let installer: Vec<String> =
        <holdline_mcp::install::Client as clap::ValueEnum>::value_variants()
            .iter()
            .map(|c| {
                clap::ValueEnum::to_possible_value(c)
                    .unwrap()
                    .get_name()
                    .to_owned()
            })
            .collect();
    assert_eq!(installer, holdline_contract::clients::CLIENT_NAMES);
}

/// Each bad input exits non-zero with its own sentence and writes nothing.
#[test]
fn bad_remote_inputs_are_refused_before_anything_is_written() {
    let sb = Sandbox::new();
    let cases: [(&[&str], &str); 10] = [
        (&["--url", URL], "--url needs --key"),
        (&["--key", KEY], "--key needs --url"),
        (
            &["--url", "ftp://hub/mcp", "--key", KEY],
            "http:// or https://",
        ),
        (
            &["--url", "hub:13458/mcp", "--key", KEY],
            "http:// or https://",
        ),
        (&["--url", "http://", "--key", KEY], "has no host"),
        (
            &["--url", "http://u:p@hub/mcp", "--key", KEY],
            "user or password",
        ),
        (&["--url", URL, "--key", "Bearer x"], "without 'Bearer '"),
        (&["--url", URL, "--key", "a b"], "cannot carry"),
        (
            &["--url", URL, "--key", KEY, "--hub", "http://h:1"],
            "--hub shape the local",
        ),
        (
            &["--url", URL, "--key", KEY, "--share-changes"],
            "--share-changes needs the local (stdio) entry",
        ),
    ];
    for (flags, says) in cases {
        let mut args = vec!["install", "--client", "claude-code"];
        args.extend_from_slice(flags);
        let out = sb.run(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{flags:?} was accepted");
        assert!(stderr.contains(says), "{flags:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "one sentence: {stderr}");
        assert_eq!(
            std::fs::read_dir(&sb.home).unwrap().count(),
            0,
            "{flags:?} wrote"
        );
    }
    // A key that is not an agent key still works, with a warning.
    let stderr = remote(&sb, "codex", "0123456789abcdef");
    assert!(
        stderr.contains("does not look like an agent key"),
        "{stderr}"
    );
}

/// Codex's `config.toml` is `0644` as Codex makes it: the key going in makes it `0600`,
/// says so in one line, and leaves the rest of the file as it was; a re-run with the entry
/// up to date tightens a file loosened meanwhile.
#[test]
fn a_remote_install_into_a_0644_codex_config_makes_it_0600_and_keeps_the_rest() {
    let sb = Sandbox::new();
    let codex = CLIENTS.iter().find(|c| c.name == "codex").unwrap();
    let config = sb.path(codex.config);
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    let mine = "model = \"o3\"  # mine\n\n[mcp_servers.other]\ncommand = \"other-mcp\"\n";
    std::fs::write(&config, mine).unwrap();
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o644)).unwrap();

    let out = remote(&sb, "codex", KEY);
    assert_eq!(mode(&config), 0o600, "{out}");
    assert_eq!(
        out.matches("mode 644 -> 600").count(),
        1,
        "one line says so: {out}"
    );
    let text = read(&config);
    assert!(
        text.starts_with(mine),
        "the rest of the file changed: {text}"
    );
    assert_remote(codex, &holdline(codex.fmt, &text).unwrap(), KEY);
    // The backup holds the old text; it is the person's alone too.
    let backup = std::fs::read_dir(config.parent().unwrap())
        .unwrap()
        .flatten()
        .find(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("config.toml.holdline-backup-")
        })
        .expect("a backup");
    assert_eq!(mode(&backup.path()), 0o600);

    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = remote(&sb, "codex", KEY);
    assert!(
        out.contains("up to date") && out.contains("mode 644 -> 600"),
        "{out}"
    );
    assert_eq!(mode(&config), 0o600);
    assert!(read(&config).starts_with(mine));

    // A local entry holds no key: the mode the person chose stays.
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = sb.install("codex", &[]);
    assert_eq!(mode(&config), 0o644, "{out}");
}

/// `case`'s config file holding another server only, with `mode`: its path and bytes.
fn seed_with_other_server(
    sb: &Sandbox,
    case: &ClientCase,
    mode: u32,
) -> (std::path::PathBuf, String) {
    let config = sb.path(case.config);
    let original = with_other_server(case.fmt);
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, &original).unwrap();
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(mode)).unwrap();
    (config, original)
}

#[test]
fn uninstall_leaves_no_backup_holding_the_key() {
    for case in CLIENTS {
        let sb = Sandbox::new();
        let (config, original) = seed_with_other_server(&sb, &case, 0o600);
        // Installed twice (a new key): each write backs the old file up.
        remote(&sb, case.name, KEY);
        remote(&sb, case.name, &KEY.replace("AAAA", "ZZZZ"));
        let backups = || -> Vec<std::path::PathBuf> {
            let prefix = format!(
                "{}.holdline-backup-",
                config.file_name().unwrap().to_string_lossy()
            );
            std::fs::read_dir(config.parent().unwrap())
                .unwrap()
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
                .map(|e| e.path())
                .collect()
        };
        assert!(!backups().is_empty(), "{}: no backup was made", case.name);
        let said = sb.ok(&["uninstall", "--client", case.name]);
        assert_eq!(read(&config), original, "{}", case.name);
        assert_eq!(backups(), Vec::<std::path::PathBuf>::new(), "{}", case.name);
        assert!(
            said.contains("deleted the installer's backup"),
            "{}: {said}",
            case.name
        );
        for entry in std::fs::read_dir(config.parent().unwrap())
            .unwrap()
            .flatten()
        {
            let text = std::fs::read(entry.path()).unwrap_or_default();
            assert!(
                !String::from_utf8_lossy(&text).contains("hlk_"),
                "{}: {} still holds a key",
                case.name,
                entry.path().display()
            );
        }
    }
}
