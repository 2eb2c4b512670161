//! What the `holdline-hub` command line says when something is wrong: each bad input or
//! situation gets one clear sentence with what to do, and `serve` refuses a bad config
//! before it says "listening". Runs the real binary with temporary homes.

use std::{
    net::TcpListener,
    path::Path,
    process::{Command, Output},
    time::Duration,
};

fn hub(home: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_holdline-hub"));
    cmd.arg("--home")
        .arg(home)
        .args(args)
        .env_remove("HOLDLINE_LISTEN")
        .env_remove("HOLDLINE_MONGO_URI")
        .env_remove("HOLDLINE_HOME");
    // A hub that wrongly started would run forever: bound every run.
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn a_bad_mongo_uri_is_refused_before_listening() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        "listen = \"127.0.0.1:0\"\nmongo_uri = \"foo://alice:pw@db\"\n",
    )
    .unwrap();
    for args in [&["serve"][..], &["config"][..]] {
        let out = hub(home.path(), args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains("is not a MongoDB URI"), "{err}");
        assert!(err.contains("mongodb://HOST"), "{err}");
        assert!(!err.contains("listening"), "{err}");
        assert!(!err.contains("pw"), "the password is masked: {err}");
        assert!(!err.contains("labels:"), "no raw driver error: {err}");
    }
    assert!(!home.path().join("hub.addr").exists());
}

#[test]
fn listen_errors_say_what_to_do() {
    let home = tempfile::tempdir().unwrap();
    let out = hub(home.path(), &["serve", "--listen", "13458"]);
    let err = stderr(&out);
    assert!(!out.status.success());
    assert!(
        err.contains("HOST:PORT") && err.contains("0.0.0.0:13458"),
        "{err}"
    );

    // An address this machine does not have (os error 99): binding sends nothing.
    let out = hub(home.path(), &["serve", "--listen", "192.0.2.1:13458"]);
    let err = stderr(&out);
    assert!(err.contains("is not an address of this machine"), "{err}");
    assert!(!err.contains("another holdline-hub"), "{err}");

    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = hub(home.path(), &["serve", "--listen", &addr]);
    let err = stderr(&out);
    assert!(err.contains("the port is taken"), "{err}");

    std::fs::write(home.path().join("config.toml"), "listen = \"13458\"\n").unwrap();
    let out = hub(home.path(), &["config"]);
    let err = stderr(&out);
    assert!(err.contains("line 1") && err.contains("HOST:PORT"), "{err}");
}

#[test]
fn out_of_range_values_are_said() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.toml"), "poll_timeout_ms = 0\n").unwrap();
    let out = hub(home.path(), &["config"]);
    assert!(out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("warning: poll_timeout_ms = 0 in config.toml is out of range"),
        "{err}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("poll_timeout_ms = 1"));
}

#[test]
fn an_unusable_home_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("not-a-folder");
    std::fs::write(&file, "x").unwrap();
    let out = hub(&file.join("home"), &["sessions"]);
    let err = stderr(&out);
    assert!(err.contains("cannot open the holdline home"), "{err}");
    assert!(!err.contains("config.toml"), "{err}");
}

#[test]
fn admin_commands_against_a_stopped_hub_say_to_start_it() {
    let home = tempfile::tempdir().unwrap();
    let out = hub(home.path(), &["sessions"]);
    let err = stderr(&out);
    assert!(err.contains("holdline-hub serve"), "no secret yet: {err}");

    // A home a hub has used: the secret is there, nothing listens.
    std::fs::write(
        home.path().join("secret"),
        "0123456789abcdef0123456789abcdef\n",
    )
    .unwrap();
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    std::fs::write(
        home.path().join("config.toml"),
        format!("listen = \"127.0.0.1:{port}\"\n"),
    )
    .unwrap();
    for args in [
        &["sessions"][..],
        &["reply", "ct_00000000000000000000000000000000", "hi"][..],
        &["status"][..],
    ] {
        let out = hub(home.path(), args);
        let err = stderr(&out);
        assert!(!out.status.success(), "{args:?}");
        assert!(
            err.contains("no holdline-hub is running at") && err.contains("holdline-hub serve"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn reply_and_import_explain_their_arguments() {
    let home = tempfile::tempdir().unwrap();
    let help = String::from_utf8_lossy(&hub(home.path(), &["reply", "--help"]).stdout).into_owned();
    assert!(help.contains("The session's token"), "{help}");
    assert!(help.contains("The reply"), "{help}");
    let help =
        String::from_utf8_lossy(&hub(home.path(), &["import", "--help"]).stdout).into_owned();
    assert!(help.contains("The sessions.json to read"), "{help}");
}

/// `holdline-hub serve` on an ephemeral port in `home`, as `nohup` or a
/// bridge would start it (`started_by`: the bridge's mark, if any); waits
/// until it has written `hub.addr`.
/// `serve` on `home` at a free loopback port, with no listen address, MongoDB or home
/// from this test's environment.
fn serve_command(home: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_holdline-hub"));
    cmd.arg("--home")
        .arg(home)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env_remove("HOLDLINE_LISTEN")
        .env_remove("HOLDLINE_MONGO_URI")
        .env_remove("HOLDLINE_HOME");
    cmd
}

fn serve_by_hand(home: &Path, started_by: Option<&str>) -> std::process::Child {
    let mut cmd = serve_command(home);
    cmd.env_remove("INVOCATION_ID")
        .env_remove("XPC_SERVICE_NAME")
        .env_remove("HOLDLINE_STARTED_BY")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    if let Some(by) = started_by {
        cmd.env("HOLDLINE_STARTED_BY", by);
    }
    let child = cmd.spawn().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !home.join("hub.addr").exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the hub did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

#[test]
fn stop_ends_a_hub_started_by_hand_and_status_names_its_pid() {
    let home = tempfile::tempdir().unwrap();
    let mut child = serve_by_hand(home.path(), None);
    let pid = child.id();
    let out = hub(home.path(), &["status"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(&format!("Process: PID {pid}, started by hand")),
        "{said}{}",
        stderr(&out)
    );

    let out = hub(home.path(), &["stop"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{said}{}", stderr(&out));
    assert!(
        said.starts_with(&format!(
            "stopped holdline-hub (PID {pid}) at http://127.0.0.1:"
        )),
        "{said}"
    );
    // It exited by itself, cleanly (SIGTERM: requests finished, store flushed).
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the hub is still running"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}");
    assert!(!home.path().join("hub.addr").exists());

    let out = hub(home.path(), &["stop"]);
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("no holdline-hub is running at"),
        "{:?}",
        out
    );
}

#[test]
fn status_says_a_bridge_started_the_hub() {
    let home = tempfile::tempdir().unwrap();
    let mut child = serve_by_hand(home.path(), Some("bridge"));
    let out = hub(home.path(), &["status"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("started by a holdline-mcp bridge that found no hub"),
        "{said}"
    );
    assert!(hub(home.path(), &["stop"]).status.success());
    let _ = child.wait();
}

#[test]
fn panel_url_into_a_reader_that_stopped_reading_ends_quietly() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("secret"),
        "0123456789abcdef0123456789abcdef\n",
    )
    .unwrap();
    // `panel-url | head -0`: the reading end is closed before the first write.
    let mut child = Command::new(env!("CARGO_BIN_EXE_holdline-hub"))
        .arg("--home")
        .arg(home.path())
        .arg("panel-url")
        .env_remove("HOLDLINE_HOME")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{:?} {}", out.status, stderr(&out));
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
}

#[test]
fn serve_without_a_terminal_names_its_own_path_for_the_login_link() {
    use std::io::BufRead as _;
    let home = tempfile::tempdir().unwrap();
    let mut child = serve_command(home.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    // Quoted as a shell needs it when the checkout's path has a space.
    let bin = env!("CARGO_BIN_EXE_holdline-hub");
    let typed = if bin.contains(' ') {
        format!("'{bin}'")
    } else {
        bin.to_owned()
    };
    assert!(
        line.contains(&format!("(run `{typed} panel-url` for the login link)")),
        "{line}"
    );
    assert!(!line.contains("#key="), "the key went to a pipe: {line}");
}

/// "listening on" is what scripts wait for: by then `hub.addr` names the address, so an
/// admin command run at once reaches this hub (found by the real-client suite on a loaded
/// machine: `key create` right after the line found no `hub.addr`, fell back to opening
/// the store, and was refused because the running hub holds it).
#[test]
fn the_address_file_is_there_when_the_hub_says_it_listens() {
    use std::io::{BufRead, BufReader};
    let home = tempfile::tempdir().unwrap();
    let mut child = serve_command(home.path())
        .env("HOLDLINE_LOG", "warn")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let said = stderr.lines().map_while(Result::ok).find_map(|l| {
        l.strip_prefix("holdline-hub listening on http://")
            .map(str::to_owned)
    });
    // Read at once, before anything else: the file must already be in place.
    let file = std::fs::read_to_string(home.path().join("hub.addr"));
    let _ = child.kill();
    let _ = child.wait();
    let said = said.expect("the hub said where it listens");
    assert_eq!(file.ok().as_deref(), Some(said.as_str()));
}
