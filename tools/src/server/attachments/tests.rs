//! Each rule on an attachment, named in its refusal: outside the workspace or the
//! client's folders, a system file, a hard link, the holdline home, a credential inside,
//! a pipe, too large (and read no further than the limit and one byte).

use super::*;

/// A workspace with an image and a log, beside a file outside it.
fn workspace() -> (tempfile::TempDir, PathBuf) {
    let base = tempfile::tempdir().unwrap();
    let ws = base.path().join("ws");
    fs::create_dir_all(ws.join("logs")).unwrap();
    fs::write(ws.join("shot.png"), [0x89, b'P', b'N', b'G']).unwrap();
    fs::write(ws.join("logs/test.log"), "ok\n").unwrap();
    fs::write(base.path().join("secret.txt"), "no").unwrap();
    (base, ws)
}

/// Reads `paths` in `ws` over stdio, the client having opened `folders`.
fn read_in(
    paths: &[&str],
    ws: &Path,
    folders: &[PathBuf],
    protected: &Protected,
) -> Result<Vec<AttachmentUpload>, Refused> {
    let paths: Vec<String> = paths.iter().map(|p| p.to_string()).collect();
    let scope = Scope {
        transport: Transport::Stdio,
        client_folders: folders,
        protected,
    };
    read_attachments(&paths, ws.to_str().unwrap(), &scope)
}

/// The refusal's sentence for `paths` in `ws`, the client having opened `ws`.
fn refused(paths: &[&str], ws: &Path) -> String {
    read_in(paths, ws, &[ws.to_owned()], &Protected::default())
        .unwrap_err()
        .sentence()
}

#[test]
fn files_inside_are_read_with_their_type() {
    let (_base, ws) = workspace();
    let log = ws.join("logs/test.log").display().to_string();
    let got = read_in(
        &["shot.png", &log],
        &ws,
        std::slice::from_ref(&ws),
        &Protected::default(),
    )
    .unwrap();
    assert_eq!(got[0].name, "shot.png");
    assert_eq!(got[0].mime_type, "image/png");
    assert_eq!(got[1].name, "test.log");
    assert_eq!(got[1].data, "b2sK");
}

#[test]
fn each_rule_is_named() {
    let (base, ws) = workspace();
    assert!(refused(&["../secret.txt"], &ws).contains("outside the workspace"));
    std::os::unix::fs::symlink(base.path().join("secret.txt"), ws.join("link.txt")).unwrap();
    assert!(refused(&["link.txt"], &ws).contains("outside the workspace"));
    assert!(refused(&["gone.png"], &ws).contains("does not exist"));
    assert!(refused(&["logs"], &ws).contains("not a regular file"));
    assert!(refused(&["shot.png"; 11], &ws).contains("at most 10"));
    fs::write(ws.join("big.bin"), vec![0u8; 6 * 1024 * 1024]).unwrap();
    assert!(refused(&["big.bin"], &ws).contains("5 MiB"));
    let sentence = refused(&["gone.png"], &ws);
    assert!(
        sentence.ends_with(
            "exist. Nothing was sent; call again with only files that follow the rule, or none."
        ),
        "{sentence}"
    );
}

#[test]
fn over_mcp_the_sentence_says_to_call_without_attachments() {
    let (_base, ws) = workspace();
    let scope = Scope {
        transport: Transport::Http,
        client_folders: &[],
        protected: &Protected::default(),
    };
    let e = read_attachments(&["shot.png".into()], ws.to_str().unwrap(), &scope).unwrap_err();
    assert_eq!(e, Refused::Remote);
    let sentence = e.sentence();
    assert!(sentence.contains("stdio bridge"), "{sentence}");
    assert!(
        sentence.contains("call again without attachments"),
        "{sentence}"
    );
    assert!(!sentence.contains(".."), "{sentence}");
}

#[test]
fn a_workspace_outside_the_client_s_folders_is_refused() {
    let (base, ws) = workspace();
    let other = base.path().join("other");
    fs::create_dir(&other).unwrap();
    let e = read_in(&["shot.png"], &ws, &[other], &Protected::default()).unwrap_err();
    assert!(
        e.sentence()
            .contains("outside the folders this client opened"),
        "{e:?}"
    );
    // A workspace inside a folder the client opened narrows it.
    let inner = read_in(
        &["test.log"],
        &ws.join("logs"),
        &[base.path().to_owned()],
        &Protected::default(),
    );
    assert_eq!(inner.unwrap()[0].name, "test.log");
    let none = read_in(&["shot.png"], &ws, &[], &Protected::default()).unwrap_err();
    assert!(none.sentence().contains("(none)"), "{none:?}");
}

#[test]
fn the_kernel_s_and_devices_files_are_never_read_whatever_the_workspace() {
    let root = [PathBuf::from("/")];
    let none = Protected::default();
    for (ws, path) in [
        ("/proc/self", "pagemap"),
        ("/proc/self", "status"),
        ("/", "proc/self/environ"),
        ("/sys", "kernel/address_bits"),
        ("/dev", "zero"),
    ] {
        let e = read_in(&[path], Path::new(ws), &root, &none).unwrap_err();
        let sentence = e.sentence();
        assert!(
            sentence.contains("system file") || sentence.contains("not a regular file"),
            "{ws} {path}: {sentence}"
        );
    }
}

#[test]
fn a_hard_link_to_a_file_outside_is_refused() {
    let (base, ws) = workspace();
    fs::hard_link(base.path().join("secret.txt"), ws.join("linked.txt")).unwrap();
    assert!(refused(&["linked.txt"], &ws).contains("2 hard links"));
}

#[test]
fn a_pipe_is_refused_without_blocking() {
    let (_base, ws) = workspace();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        ws.join("fifo"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    assert!(refused(&["fifo"], &ws).contains("not a regular file"));
}

#[test]
fn the_holdline_home_and_a_file_holding_a_credential_are_never_attached() {
    let (base, ws) = workspace();
    let home = ws.join(".holdline");
    fs::create_dir(&home).unwrap();
    fs::write(home.join("secret"), "0123456789abcdef0123456789abcdef\n").unwrap();
    fs::write(home.join("config.toml"), "port = 1\n").unwrap();
    let protected = Protected {
        homes: vec![home.clone()],
        credentials: vec!["hlk_abcdefghijklmnopqrstuvwxyz".into()],
    };
    let folders = [base.path().to_owned()];
    for (path, at) in [
        ("secret", &home),
        ("config.toml", &home),
        (".holdline/secret", &ws),
    ] {
        let e = read_in(&[path], at, &folders, &protected).unwrap_err();
        assert!(e.sentence().contains("holdline home"), "{path}: {e:?}");
    }
    // A copy of the secret, or a client's config holding the key, anywhere.
    fs::write(ws.join("copy.txt"), "0123456789abcdef0123456789abcdef").unwrap();
    fs::write(
        ws.join("mcp.json"),
        r#"{"env": {"HOLDLINE_KEY": "hlk_abcdefghijklmnopqrstuvwxyz"}}"#,
    )
    .unwrap();
    for path in ["copy.txt", "mcp.json"] {
        let e = read_in(&[path], &ws, &folders, &protected).unwrap_err();
        assert!(
            e.sentence().contains("holds a holdline credential"),
            "{path}: {e:?}"
        );
    }
    assert!(read_in(&["shot.png"], &ws, &folders, &protected).is_ok());
}

#[test]
fn a_file_that_grew_past_the_limit_is_read_no_further_than_one_byte_past_it() {
    let (_base, ws) = workspace();
    let path = ws.join("growing.log");
    fs::write(&path, "small").unwrap();
    let checked = check_path(&ws, "growing.log", &Protected::default()).unwrap();
    fs::write(&path, vec![b'x'; 8 * 1024 * 1024]).unwrap();
    let e = read_checked(&checked, &[]).unwrap_err();
    assert!(
        e.contains(&format!("is {} bytes", MAX_ATTACHMENT_BYTES + 1)),
        "{e}"
    );
}
