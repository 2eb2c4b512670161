//! A question's files in the notifications: Telegram sends them after the text, as
//! replies to it (raster images with `sendPhoto`, the rest with `sendDocument`,
//! multipart, bytes intact); the JSON webhook names them `{name, mimeType, size}` without
//! bytes; with `include_text = false` no channel sends or names any. Real hub, real HTTP,
//! channels faked by servers on loopback.

use base64::Engine as _;
use holdline_core::config::notify::{Hidden, Webhook, WebhookFormat};
use serde_json::json;

use crate::inproc::TestHub;
use crate::notify::{BOT, CHAT, WAIT, bodies, hub_with, message_id_of, notification, telegram};
use crate::notifyfake::Fake;

const PNG: &[u8] = &[0x89, b'P', b'N', b'G', 13, 10, 26, 10, 1, 2, 3];
const LOG: &[u8] = b"test result: FAILED. 1 failed\n";

fn b64(b: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(b)
}

/// Telegram and a JSON webhook, both told at once.
fn channels(fake: &Fake, include_text: bool) -> holdline_core::config::notify::NotifyConfig {
    let mut cfg = telegram(fake);
    cfg.webhooks = vec![Webhook {
        url: Hidden(format!("{}/hook/json", fake.url)),
        format: WebhookFormat::Json,
    }];
    cfg.include_text = include_text;
    cfg
}

async fn ask_with_files(hub: &TestHub) -> String {
    let token = hub.init("Dashboard").await;
    hub.ok(
        "/api/wait/register",
        json!({"token": token, "message": "The SECRET chart is attached", "cursorTitle": "Dashboard",
               "workspace": "/w", "hostIp": "10.0.0.2", "requestId": "q1",
               "attachments": [
                   {"name": "chart.png", "mimeType": "image/png", "data": b64(PNG)},
                   {"name": "run.log", "mimeType": "text/plain", "data": b64(LOG)},
               ]}),
    )
    .await;
    token
}

#[tokio::test]
async fn telegram_sends_the_files_after_the_text_and_the_webhook_names_them() {
    let fake = Fake::start().await;
    let hub = hub_with(channels(&fake, true)).await;
    ask_with_files(&hub).await;
    let text = notification(&fake, "SECRET chart").await;
    let replied_to = message_id_of(&fake, &text).to_string();

    let photo = fake
        .wait_for(&format!("/bot{BOT}/sendPhoto"), 1, WAIT)
        .await;
    assert_eq!(photo.len(), 1, "{}", fake.all_text());
    let photo = &photo[0].body;
    assert_eq!(photo["chat_id"], CHAT.to_string());
    assert_eq!(photo["reply_to_message_id"], replied_to);
    assert_eq!(photo["photo"]["filename"], "chart.png");
    assert_eq!(photo["photo"]["contentType"], "image/png");
    assert_eq!(photo["photo"]["data"], b64(PNG));

    let doc = fake
        .wait_for(&format!("/bot{BOT}/sendDocument"), 1, WAIT)
        .await;
    assert_eq!(doc.len(), 1, "{}", fake.all_text());
    let doc = &doc[0].body;
    assert_eq!(doc["reply_to_message_id"], replied_to);
    assert_eq!(doc["document"]["filename"], "run.log");
    assert_eq!(doc["document"]["data"], b64(LOG));

    let hooks = fake.wait_for("/hook/json", 1, WAIT).await;
    assert_eq!(
        hooks[0].body["attachments"],
        json!([
            {"name": "chart.png", "mimeType": "image/png", "size": PNG.len()},
            {"name": "run.log", "mimeType": "text/plain", "size": LOG.len()},
        ])
    );
    assert!(
        !bodies(&fake, "/hook/json")[0]
            .to_string()
            .contains(&b64(PNG)),
        "the webhook carries no bytes"
    );
}

#[tokio::test]
async fn with_include_text_false_no_file_is_sent_or_named() {
    let fake = Fake::start().await;
    let hub = hub_with(channels(&fake, false)).await;
    ask_with_files(&hub).await;
    notification(&fake, "Dashboard").await;
    let hooks = fake.wait_for("/hook/json", 1, WAIT).await;
    assert_eq!(hooks[0].body["attachments"], json!([]));
    // Give a file that would follow the text its time to arrive.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert!(fake.seen(&format!("/bot{BOT}/sendPhoto")).is_empty());
    assert!(fake.seen(&format!("/bot{BOT}/sendDocument")).is_empty());
    let all = fake.all_text();
    assert!(
        !all.contains("chart.png") && !all.contains("SECRET"),
        "{all}"
    );
}
