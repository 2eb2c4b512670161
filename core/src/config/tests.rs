//! The settings' unit tests: file parsing, clamps, listen forms, masking.

use std::path::{Path, PathBuf};

use super::file::parse_file;
use super::*;

#[test]
fn parse_errors_name_the_line() {
    let err = parse_file(
        Path::new("c.toml"),
        "listen = \"127.0.0.1:1\"\nmax_auto_streak = \"x\"\n",
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("line 2"), "{err}");
    let err = parse_file(Path::new("c.toml"), "\n\nlistn = 1\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("line 3") && err.contains("listn"), "{err}");
}

#[test]
fn listen_errors_show_the_expected_form() {
    let e = parse_listen("13458").unwrap_err().to_string();
    assert!(
        e.contains("HOST:PORT") && e.contains("127.0.0.1:13458"),
        "{e}"
    );
    assert_eq!(
        parse_listen("localhost:9").unwrap(),
        "127.0.0.1:9".parse().unwrap()
    );
    let e = parse_file(Path::new("c.toml"), "listen = \"13458\"\n").unwrap_err();
    assert!(e.to_string().contains("HOST:PORT"), "{e}");
    assert_eq!(
        parse_file(Path::new("c.toml"), "listen = \"0.0.0.0:1\"\n")
            .unwrap()
            .listen,
        Some("0.0.0.0:1".parse().unwrap())
    );
}

#[test]
fn out_of_range_values_are_said() {
    let f = parse_file(Path::new("c.toml"), "poll_timeout_ms = 0\ncache_mb = 1\n").unwrap();
    let c = Config::from_file(PathBuf::from("/h"), f);
    assert_eq!(c.poll_timeout_ms, 1);
    assert_eq!(c.warnings.len(), 2, "{:?}", c.warnings);
    assert!(
        c.warnings[0].contains("poll_timeout_ms = 0"),
        "{:?}",
        c.warnings
    );
}

#[test]
fn mcp_limits_default_clamp_and_print_back() {
    let c = Config::from_file(PathBuf::from("/h"), FileConfig::default());
    assert_eq!(c.mcp.sessions_per_credential, 64);
    assert_eq!(c.mcp.sessions_total, 4096);
    let text = "[mcp]\nsessions_per_credential = 10\nsessions_total = 5\ntask_keep_sec = 0\n";
    let c = Config::from_file(
        PathBuf::from("/h"),
        parse_file(Path::new("c"), text).unwrap(),
    );
    assert_eq!(c.mcp.sessions_total, 5);
    assert_eq!(c.mcp.sessions_per_credential, 5, "never above the total");
    assert_eq!(c.mcp.task_keep, Duration::from_secs(1));
    assert_eq!(c.warnings.len(), 2, "{:?}", c.warnings);
    assert!(parse_file(Path::new("c"), "[mcp]\nsessions = 1\n").is_err());
    // What `config` prints reads back the same.
    let printed = c.to_masked_toml();
    let again = Config::from_file(
        PathBuf::from("/h"),
        parse_file(Path::new("c"), &printed).unwrap(),
    );
    assert_eq!(again.mcp, c.mcp);
}

#[test]
fn an_unusable_home_is_named_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let e = Config::load(file.join("home"), None)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("cannot open the holdline home"), "{e}");
}

#[test]
fn mongo_credentials_are_masked() {
    assert_eq!(
        mask_uri("mongodb://alice:s3cret@db:27017/x?tls=true"),
        "mongodb://***@db:27017/x?tls=true"
    );
    assert_eq!(mask_uri("mongodb://db:27017"), "mongodb://db:27017");
}
