//! Attachments through the real bridge against a real hub: files in a workspace made here
//! reach the person's history with their bytes intact, a re-call stores them once, and
//! each refused case (a path escaping through `..` or a symbolic link, 11 files, a 6 MiB
//! file, a missing file, a folder, a workspace outside the client's roots, a system file,
//! a hard link, the holdline home, a file holding the secret, any file over `/mcp`) is a
//! tool error naming the rule that stores nothing.

use std::path::Path;

use crate::harness::*;
use serde_json::{Value, json};
use tempfile::TempDir;

const PNG: &[u8] = &[
    0x89, b'P', b'N', b'G', 13, 10, 26, 10, 0, 0, 0, 13, b'I', b'H',
];

/// A workspace with an image, a log and a folder, beside a file outside it.
fn workspace(base: &Path) -> std::path::PathBuf {
    let ws = base.join("project");
    std::fs::create_dir_all(ws.join("logs")).unwrap();
    std::fs::write(ws.join("shot.png"), PNG).unwrap();
    std::fs::write(ws.join("logs/test.log"), "test result: ok. 12 passed\n").unwrap();
    std::fs::write(base.join("secret.txt"), "not yours").unwrap();
    ws
}

/// The `file://` root naming `ws`, as an IDE sends it.
fn root_of(ws: &Path) -> String {
    format!("file://{}", ws.display())
}

async fn init_in(client: &Client, title: &str, ws: &Path) -> anyhow::Result<String> {
    let r = call(
        client,
        "init_conversation",
        json!({"cursorTitle": title, "workspace": ws.to_str().unwrap()}),
    )
    .await?;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    Ok(structured(&r)["token"].as_str().unwrap().to_owned())
}

/// The bytes the person's route serves at `url`.
async fn served(hub: &TestHub, url: &str) -> anyhow::Result<Vec<u8>> {
    let r = hub
        .http
        .get(format!("{}{url}", hub.url()))
        .bearer_auth(&hub.secret)
        .send()
        .await?
        .error_for_status()?;
    Ok(r.bytes().await?.to_vec())
}

fn messages(s: &Value) -> &Vec<Value> {
    s["messages"].as_array().expect("messages")
}

#[tokio::test]
async fn an_image_and_a_log_reach_the_person_once_with_their_bytes() -> anyhow::Result<()> {
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let base = TempDir::new()?;
    let ws = workspace(base.path());
    let root = root_of(&ws);
    let client = start_bridge(BridgeOptions {
        root: Some(&root),
        ..BridgeOptions::for_hub(&hub)
    })
    .await?;
    let tools = client.list_all_tools().await?;
    let wait = tools.iter().find(|t| t.name == "wait_for_user_input");
    assert!(wait.unwrap().input_schema["properties"]["attachments"].is_object());
    let token = init_in(&client, "Screenshot", &ws).await?;
    let log_abs = ws.join("logs/test.log").display().to_string();
    let ask = json!({"token": token, "message": "The page is built: see the screenshot",
                     "attachments": ["shot.png", log_abs], "timeoutSec": 2});

    // No reply within 2 s, then the re-call the result asks for: one message, two files.
    let first = call(&client, "wait_for_user_input", ask.clone()).await?;
    assert_ne!(first.is_error, Some(true), "{}", text(&first));
    let mut again = ask.clone();
    again["resume"] = json!(resume_of(&first));
    again["timeoutSec"] = json!(30);
    let handle = start_call(&client, "wait_for_user_input", again).await?;
    hub.wait_status(&token, "waiting").await?;

    let s = hub.session(&token).await?;
    assert_eq!(messages(&s).len(), 1, "{s}");
    let files = messages(&s)[0]["attachments"].as_array().unwrap().clone();
    assert_eq!(files.len(), 2, "{s}");
    assert_eq!(files[0]["name"], "shot.png");
    assert_eq!(files[0]["mimeType"], "image/png");
    assert_eq!(files[0]["size"], PNG.len());
    assert_eq!(files[1]["name"], "test.log");
    assert!(
        files[1]["mimeType"].as_str().unwrap().starts_with("text/"),
        "{s}"
    );
    assert_eq!(served(&hub, files[0]["url"].as_str().unwrap()).await?, PNG);
    assert_eq!(
        served(&hub, files[1]["url"].as_str().unwrap()).await?,
        std::fs::read(ws.join("logs/test.log"))?
    );

    hub.reply(&token, "Looks good", json!([])).await?;
    let r = finish(handle).await?;
    assert!(text(&r).starts_with("Looks good"), "{}", text(&r));
    client.cancel().await?;
    Ok(())
}

#[tokio::test]
async fn each_refused_case_is_a_tool_error_naming_its_rule_and_stores_nothing() -> anyhow::Result<()>
{
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let base = TempDir::new()?;
    let ws = workspace(base.path());
    let root = root_of(&ws);
    let client = start_bridge(BridgeOptions {
        root: Some(&root),
        ..BridgeOptions::for_hub(&hub)
    })
    .await?;
    std::os::unix::fs::symlink(base.path().join("secret.txt"), ws.join("notes.txt"))?;
    std::fs::write(ws.join("big.bin"), vec![1u8; 6 * 1024 * 1024])?;
    let token = init_in(&client, "Refusals", &ws).await?;
    let eleven: Vec<&str> = vec!["shot.png"; 11];
    let cases = [
        (
            json!(["shot.png", "../secret.txt"]),
            "outside the workspace",
        ),
        (json!(["notes.txt"]), "outside the workspace"),
        (json!(eleven), "at most 10"),
        (json!(["shot.png", "big.bin"]), "5 MiB"),
        (json!(["gone.png"]), "does not exist"),
        (json!(["logs"]), "not a regular file"),
    ];
    for (paths, rule) in cases {
        let r = call(
            &client,
            "wait_for_user_input",
            json!({"token": token, "message": format!("try {paths}"), "attachments": paths}),
        )
        .await?;
        assert_eq!(r.is_error, Some(true), "{rule}: {}", text(&r));
        assert!(text(&r).contains(rule), "{rule}: {}", text(&r));
        assert!(text(&r).contains("Nothing was sent"), "{}", text(&r));
    }
    let s = hub.session(&token).await?;
    assert!(messages(&s).is_empty(), "{s}");
    assert_eq!(s["status"], "holding", "{s}");
    client.cancel().await?;
    Ok(())
}

#[tokio::test]
async fn over_mcp_attachments_are_refused_because_the_hub_cannot_read_them() -> anyhow::Result<()> {
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let client = start_remote(&hub, &hub.secret, "remote-test").await?;
    let base = TempDir::new()?;
    let ws = workspace(base.path());
    // The schema over `/mcp` does not offer them; a call that passes them anyway is told.
    let tools = client.list_all_tools().await?;
    let wait = tools
        .iter()
        .find(|t| t.name == "wait_for_user_input")
        .expect("the wait tool");
    let properties = wait.input_schema["properties"].as_object().unwrap();
    assert!(!properties.contains_key("attachments"), "{properties:?}");
    let token = init_in(&client, "Remote", &ws).await?;
    let r = call(
        &client,
        "wait_for_user_input",
        json!({"token": token, "message": "see this", "attachments": ["shot.png"]}),
    )
    .await?;
    assert_eq!(r.is_error, Some(true), "{}", text(&r));
    assert!(
        text(&r).contains("Attachments need the stdio bridge"),
        "{}",
        text(&r)
    );
    assert!(
        text(&r).contains("call again without attachments"),
        "{}",
        text(&r)
    );
    assert!(!text(&r).contains(".."), "{}", text(&r));
    let s = hub.session(&token).await?;
    assert!(messages(&s).is_empty(), "{s}");
    client.cancel().await?;
    Ok(())
}

/// One call attaching `paths` with `workspace`, refused naming `rule`.
async fn refused_naming(
    client: &Client,
    token: &str,
    workspace: &Path,
    paths: Value,
    rule: &str,
) -> anyhow::Result<()> {
    let r = call(
        client,
        "wait_for_user_input",
        json!({"token": token, "message": format!("try {paths}"), "workspace": workspace,
               "attachments": paths}),
    )
    .await?;
    assert_eq!(r.is_error, Some(true), "{rule}: {}", text(&r));
    assert!(text(&r).contains(rule), "{rule}: {}", text(&r));
    assert!(text(&r).contains("Nothing was sent"), "{}", text(&r));
    Ok(())
}

#[tokio::test]
async fn the_bridge_never_attaches_system_files_its_home_a_hard_link_out_or_the_secret()
-> anyhow::Result<()> {
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let base = TempDir::new()?;
    let ws = workspace(base.path());
    std::fs::hard_link(base.path().join("secret.txt"), ws.join("linked.txt"))?;
    std::fs::write(ws.join("pasted.txt"), format!("key: {}\n", hub.secret))?;
    // A client that opened the whole disk: the workspace argument may then name anything.
    let client = start_bridge(BridgeOptions {
        root: Some("file:///"),
        ..BridgeOptions::for_hub(&hub)
    })
    .await?;
    let token = init_in(&client, "Hostile paths", &ws).await?;
    let proc_self = Path::new("/proc/self");
    refused_naming(
        &client,
        &token,
        proc_self,
        json!(["pagemap"]),
        "system file",
    )
    .await?;
    refused_naming(
        &client,
        &token,
        proc_self,
        json!(["environ"]),
        "system file",
    )
    .await?;
    refused_naming(&client, &token, &ws, json!(["linked.txt"]), "hard links").await?;
    refused_naming(
        &client,
        &token,
        &hub.home,
        json!(["secret"]),
        "holdline home",
    )
    .await?;
    refused_naming(
        &client,
        &token,
        &ws,
        json!(["pasted.txt"]),
        "holdline credential",
    )
    .await?;
    let s = hub.session(&token).await?;
    assert!(messages(&s).is_empty(), "{s}");
    client.cancel().await?;

    // A client whose roots are the project: a workspace outside them attaches nothing.
    let root = root_of(&ws.join("logs"));
    let client = start_bridge(BridgeOptions {
        root: Some(&root),
        ..BridgeOptions::for_hub(&hub)
    })
    .await?;
    refused_naming(
        &client,
        &token,
        &ws,
        json!(["shot.png"]),
        "outside the folders this client opened",
    )
    .await?;
    client.cancel().await?;
    Ok(())
}

#[tokio::test]
async fn a_name_or_label_that_reads_as_another_is_refused_by_the_tools_and_the_hub()
-> anyhow::Result<()> {
    let home = TempDir::new()?;
    let hub = TestHub::start(home.path()).await?;
    let base = TempDir::new()?;
    let ws = workspace(base.path());
    std::fs::write(ws.join("invoice\u{202E}gpj.exe"), "MZ")?;
    let root = root_of(&ws);
    let client = start_bridge(BridgeOptions {
        root: Some(&root),
        ..BridgeOptions::for_hub(&hub)
    })
    .await?;
    let token = init_in(&client, "Look-alikes", &ws).await?;
    let r = call(
        &client,
        "wait_for_user_input",
        json!({"token": token, "message": "see", "attachments": ["invoice\u{202E}gpj.exe"]}),
    )
    .await?;
    assert_eq!(r.is_error, Some(true), "{}", text(&r));
    assert!(text(&r).contains("U+202E"), "{}", text(&r));
    let r = call(
        &client,
        "wait_for_user_input",
        json!({"token": token, "message": "deploy?",
               "options": [{"label": "Yes"}, {"label": "Ye\u{200B}s"}]}),
    )
    .await?;
    assert_eq!(r.is_error, Some(true), "{}", text(&r));
    assert!(text(&r).contains("U+200B"), "{}", text(&r));
    client.cancel().await?;

    // The hub's own route refuses the same, whoever calls it.
    let register = |body: Value| {
        hub.http
            .post(format!("{}/api/wait/register", hub.url()))
            .bearer_auth(&hub.secret)
            .json(&body)
            .send()
    };
    let base_body = json!({"token": token, "message": "deploy?", "cursorTitle": "Look-alikes",
        "workspace": ws, "hostIp": "test-host", "requestId": "r1"});
    let mut with_options = base_body.clone();
    with_options["options"] = json!([{"label": "Yes"}, {"label": "Ye\u{200B}s"}]);
    let mut with_file = base_body.clone();
    with_file["attachments"] =
        json!([{"name": "invoice\u{202E}gpj.exe", "mimeType": "text/plain", "data": "TVo="}]);
    for (body, character) in [(with_options, "U+200B"), (with_file, "U+202E")] {
        let answer = register(body).await?;
        assert_eq!(answer.status(), 400);
        let said: Value = answer.json().await?;
        assert_eq!(said["error"]["code"], "BAD_REQUEST", "{said}");
        let message = said["error"]["message"].as_str().unwrap();
        assert!(message.contains(character), "{said}");
    }
    let s = hub.session(&token).await?;
    assert!(messages(&s).is_empty(), "{s}");
    Ok(())
}
