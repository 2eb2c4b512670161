//! Attachments at the hub: a question's files (`attachments` on `POST /api/wait/register`)
//! are checked before anything is written, kept once per request id, shown on the
//! person's view of the message as `{name, mimeType, size, url}`, served at `url` to the
//! person only (never an agent key) without ever running on the panel's origin, and
//! carried by export/import, a restart and a merge. Real hub binary, real HTTP, real sled.

use base64::Engine as _;
use reqwest::Method;
use serde_json::{Value, json};

use crate::realhub::{RealHub, call, create_key, free_addr};

const PNG: &[u8] = &[0x89, b'P', b'N', b'G', 13, 10, 26, 10, 0, 0, 0, 13];

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn upload(name: &str, mime: &str, bytes: &[u8]) -> Value {
    json!({"name": name, "mimeType": mime, "data": b64(bytes)})
}

fn register_body(token: &str, request: &str, attachments: Value) -> Value {
    json!({"token": token, "message": "Here is the page I built", "cursorTitle": "Site",
           "workspace": "/w", "hostIp": "10.0.0.9", "requestId": request,
           "attachments": attachments})
}

/// `POST /api/wait/register` with `body` as `bearer`.
async fn register(hub: &RealHub, bearer: &str, body: Value) -> (u16, Value) {
    call(hub, Method::POST, "/api/wait/register", bearer, Some(body)).await
}

async fn start() -> (tempfile::TempDir, RealHub) {
    let dir = tempfile::tempdir().unwrap();
    let hub = RealHub::start(&dir.path().join("home"), free_addr()).await;
    (dir, hub)
}

async fn init(hub: &RealHub, bearer: &str, title: &str) -> String {
    let (s, v) = call(
        hub,
        Method::POST,
        "/api/init",
        bearer,
        Some(json!({"cursorTitle": title, "workspace": "/w", "hostIp": "10.0.0.9"})),
    )
    .await;
    assert_eq!(s, 200, "{v}");
    v["token"].as_str().unwrap().to_owned()
}

async fn messages(hub: &RealHub, token: &str) -> Vec<Value> {
    let (s, v) = call(
        hub,
        Method::GET,
        &format!("/api/sessions/{token}"),
        &hub.api.secret,
        None,
    )
    .await;
    assert_eq!(s, 200, "{v}");
    v["messages"].as_array().unwrap().clone()
}

/// GET `path` with `bearer` (none: no credential): the raw answer.
async fn fetch(hub: &RealHub, path: &str, bearer: Option<&str>) -> reqwest::Response {
    let mut req = reqwest::Client::new().get(format!("http://{}{path}", hub.addr));
    if let Some(b) = bearer {
        req = req.bearer_auth(b);
    }
    req.send().await.unwrap()
}

fn header<'a>(res: &'a reqwest::Response, name: &str) -> &'a str {
    res.headers()
        .get(name)
        .map_or("", |v| v.to_str().unwrap_or(""))
}

#[tokio::test]
async fn files_are_kept_once_shown_to_the_person_and_served_without_running_on_the_panel() {
    let (_dir, mut hub) = start().await;
    let secret = hub.api.secret.clone();
    let token = init(&hub, &secret, "Site").await;
    let log = b"test result: ok. 12 passed\n".repeat(100_000); // 2.6 MB: past the JSON limit
    let files = json!([
        upload("shot.png", "image/png", PNG),
        upload("test.log", "text/plain", &log),
        upload("page.html", "text/html", b"<script>alert(1)</script>"),
    ]);
    let body = register_body(&token, "q1", files);
    let (s, v) = register(&hub, &secret, body.clone()).await;
    assert_eq!(s, 200, "{v}");
    // The same request again (a re-call after "no reply yet") stores nothing new.
    let (s, v) = register(&hub, &secret, body).await;
    assert_eq!(s, 200, "{v}");

    let shown = messages(&hub, &token).await;
    assert_eq!(shown.len(), 1, "{shown:?}");
    let attachments = shown[0]["attachments"].as_array().unwrap().clone();
    assert_eq!(attachments.len(), 3, "{attachments:?}");
    assert_eq!(attachments[0]["name"], "shot.png");
    assert_eq!(attachments[0]["mimeType"], "image/png");
    assert_eq!(attachments[0]["size"], PNG.len());
    assert_eq!(attachments[1]["size"], log.len());
    assert!(attachments[0].get("id").is_none(), "{attachments:?}");
    let url = |i: usize| attachments[i]["url"].as_str().unwrap().to_owned();
    assert!(url(0).starts_with(&format!("/api/sessions/{token}/attachments/at_")));

    let png = fetch(&hub, &url(0), Some(&secret)).await;
    assert_eq!(png.status(), 200);
    assert_eq!(header(&png, "content-type"), "image/png");
    assert!(header(&png, "content-disposition").starts_with("inline"));
    assert_eq!(header(&png, "x-content-type-options"), "nosniff");
    assert!(header(&png, "content-security-policy").contains("sandbox"));
    assert_eq!(png.bytes().await.unwrap().as_ref(), PNG);

    for i in [1, 2] {
        let file = fetch(&hub, &url(i), Some(&secret)).await;
        assert_eq!(file.status(), 200);
        assert_eq!(header(&file, "content-type"), "application/octet-stream");
        assert!(header(&file, "content-disposition").starts_with("attachment;"));
        assert!(header(&file, "content-security-policy").contains("sandbox"));
        assert_eq!(header(&file, "x-content-type-options"), "nosniff");
    }
    let got = fetch(&hub, &url(1), Some(&secret))
        .await
        .bytes()
        .await
        .unwrap();
    assert_eq!(got.as_ref(), log.as_slice());

    // kill -9 and a start keep the bytes (the answer came after the flush).
    hub.kill();
    hub.restart().await;
    let again = fetch(&hub, &url(0), Some(&secret)).await;
    assert_eq!(again.bytes().await.unwrap().as_ref(), PNG);
}

#[tokio::test]
async fn only_the_person_reads_a_file_and_only_through_its_session() {
    let (_dir, hub) = start().await;
    let secret = hub.api.secret.clone();
    let key = create_key(&hub.home, "laptop");
    // The key's own session, its question with a file.
    let token = init(&hub, &key, "Site").await;
    let body = register_body(&token, "q1", json!([upload("shot.png", "image/png", PNG)]));
    let (s, v) = register(&hub, &key, body).await;
    assert_eq!(s, 200, "{v}");
    let url = messages(&hub, &token).await[0]["attachments"][0]["url"]
        .as_str()
        .unwrap()
        .to_owned();

    assert_eq!(fetch(&hub, &url, Some(&key)).await.status(), 403);
    assert_eq!(fetch(&hub, &url, None).await.status(), 401);
    assert_eq!(fetch(&hub, &url, Some("wrong")).await.status(), 401);
    assert_eq!(fetch(&hub, &url, Some(&secret)).await.status(), 200);

    // Through another session, or with a made-up id, there is nothing.
    let other = init(&hub, &secret, "Other").await;
    let id = url.rsplit('/').next().unwrap();
    let elsewhere = format!("/api/sessions/{other}/attachments/{id}");
    assert_eq!(fetch(&hub, &elsewhere, Some(&secret)).await.status(), 404);
    let made_up = format!("/api/sessions/{token}/attachments/at_{}", "0".repeat(32));
    assert_eq!(fetch(&hub, &made_up, Some(&secret)).await.status(), 404);
    let bad = format!("/api/sessions/{token}/attachments/..%2F..%2Fsecret");
    assert_eq!(fetch(&hub, &bad, Some(&secret)).await.status(), 400);
}

#[tokio::test]
async fn a_question_breaking_a_rule_is_refused_whole_and_stores_nothing() {
    let (_dir, hub) = start().await;
    let secret = hub.api.secret.clone();
    let token = init(&hub, &secret, "Site").await;
    let png = || upload("shot.png", "image/png", PNG);
    let eleven: Vec<Value> = (0..11).map(|_| png()).collect();
    let six_mib = vec![7u8; 6 * 1024 * 1024];
    let refused = [
        (json!(eleven), "at most 10"),
        (
            json!([
                png(),
                upload("big.bin", "application/octet-stream", &six_mib)
            ]),
            "5 MiB",
        ),
        (
            json!([png(), {"name": "x.log", "mimeType": "text/plain", "data": "not base64!"}]),
            "base64",
        ),
        (
            json!([upload("../x.log", "text/plain", b"x")]),
            "no usable name",
        ),
        (json!([upload("x.log", "text plain", b"x")]), "mimeType"),
    ];
    for (n, (files, rule)) in refused.into_iter().enumerate() {
        let body = register_body(&token, &format!("bad{n}"), files);
        let (s, v) = register(&hub, &secret, body).await;
        assert_eq!(s, 400, "{rule}: {v}");
        let message = v["error"]["message"].as_str().unwrap();
        assert!(message.contains(rule), "{rule}: {v}");
    }
    assert!(messages(&hub, &token).await.is_empty());

    // Only register takes the larger body: another agent route still limits at 1 MiB.
    let mut big = json!({"cursorTitle": "Site", "workspace": "/w", "hostIp": "10.0.0.9"});
    big["threadId"] = json!("x".repeat(2 * 1024 * 1024));
    let (s, v) = call(&hub, Method::POST, "/api/init", &secret, Some(big)).await;
    assert_eq!(s, 413, "{v}");
}

#[tokio::test]
async fn export_import_and_merge_keep_the_files_reachable() {
    let (_dir, hub) = start().await;
    let secret = hub.api.secret.clone();
    let from = init(&hub, &secret, "Site").await;
    let to = init(&hub, &secret, "Other").await;
    let body = register_body(&from, "q1", json!([upload("shot.png", "image/png", PNG)]));
    let (s, v) = register(&hub, &secret, body).await;
    assert_eq!(s, 200, "{v}");

    let (s, export) = call(&hub, Method::GET, "/api/export", &secret, None).await;
    assert_eq!(s, 200);
    let carried = &export[&from]["messages"][0]["attachments"][0];
    assert_eq!(carried["name"], "shot.png", "{export}");
    assert_eq!(carried["data"], b64(PNG), "{export}");

    let (_dir2, fresh) = start().await;
    let fresh_secret = fresh.api.secret.clone();
    let (s, v) = call(
        &fresh,
        Method::POST,
        "/api/import",
        &fresh_secret,
        Some(export),
    )
    .await;
    assert_eq!(s, 200, "{v}");
    let url = messages(&fresh, &from).await[0]["attachments"][0]["url"]
        .as_str()
        .unwrap()
        .to_owned();
    let got = fetch(&fresh, &url, Some(&fresh_secret)).await;
    assert_eq!(got.bytes().await.unwrap().as_ref(), PNG);

    let (s, v) = call(
        &hub,
        Method::POST,
        &format!("/api/sessions/{from}/merge"),
        &secret,
        Some(json!({"toToken": to})),
    )
    .await;
    assert_eq!(s, 200, "{v}");
    let moved = messages(&hub, &to).await;
    let url = moved
        .iter()
        .find_map(|m| m["attachments"][0]["url"].as_str())
        .expect("the merged question keeps its file")
        .to_owned();
    assert!(url.starts_with(&format!("/api/sessions/{to}/")), "{url}");
    let got = fetch(&hub, &url, Some(&secret)).await;
    assert_eq!(got.bytes().await.unwrap().as_ref(), PNG);
}
