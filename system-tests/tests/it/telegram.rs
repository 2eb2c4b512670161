//! A Telegram reply end to end: an agent waits through the real `holdline-mcp`, the
//! real hub tells a (fake, loopback) Telegram Bot API, the person replies to
//! the notification there, and the agent's tool call returns that reply.

#![allow(deprecated)] // roots are deprecated for future protocols; IDEs still send them

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::harness::*;
use axum::extract::{Request, State};
use serde_json::{Value, json};
use tempfile::TempDir;

const BOT: &str = "4242:bridge-test_token";
const CHAT: i64 = 77;

/// Requests seen, updates to hand out.
#[derive(Default)]
struct Bot {
    seen: Vec<(String, Value)>,
    updates: Vec<Value>,
}

async fn bot_api(State(bot): State<Arc<Mutex<Bot>>>, req: Request) -> axum::Json<Value> {
    let path = req.uri().path().to_owned();
    let bytes = axum::body::to_bytes(req.into_body(), 1 << 20)
        .await
        .unwrap_or_default();
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let method = path.rsplit('/').next().unwrap_or("").to_owned();
    let mut b = bot.lock().unwrap();
    b.seen.push((method.clone(), body.clone()));
    let result = match method.as_str() {
        "getUpdates" => {
            let offset = body["offset"].as_i64().unwrap_or(0);
            b.updates
                .retain(|u| u["update_id"].as_i64().unwrap() >= offset);
            json!(b.updates)
        }
        "sendMessage" => json!({"message_id": 1000 + b.seen.len()}),
        _ => json!(true),
    };
    axum::Json(json!({"ok": true, "result": result}))
}

#[tokio::test]
async fn a_telegram_reply_to_the_notification_ends_the_agents_wait() -> anyhow::Result<()> {
    let bot = Arc::new(Mutex::new(Bot::default()));
    let app = axum::Router::new()
        .fallback(bot_api)
        .with_state(bot.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let api = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });

    let home = TempDir::new()?;
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[notify]\nafter_sec = 0\n\n[notify.telegram]\nbot_token = \"{BOT}\"\nchat_ids = [{CHAT}]\napi_base = \"{api}\"\n"
        ),
    )?;
    let hub = TestHub::start(home.path()).await?;
    let client = start_bridge(BridgeOptions::for_hub(&hub)).await?;
    let token = init(&client, "Release 2.1").await?;
    let handle = start_call(
        &client,
        "wait_for_user_input",
        json!({"token": token, "message": "Tag and publish 2.1?"}),
    )
    .await?;

    // The notification reaches the chat; the person replies to it.
    let until = Instant::now() + Duration::from_secs(15);
    let message_id = loop {
        let found = bot.lock().unwrap().seen.iter().find_map(|(m, b)| {
            let hit = m == "sendMessage"
                && b["chat_id"] == CHAT
                && b["text"]
                    .as_str()
                    .unwrap_or("")
                    .contains("Tag and publish 2.1?");
            hit.then_some(())
        });
        if found.is_some() {
            let b = bot.lock().unwrap();
            let i = b.seen.iter().position(|(m, _)| m == "sendMessage").unwrap();
            break 1000 + i as i64 + 1;
        }
        assert!(
            Instant::now() < until,
            "no notification: {:?}",
            bot.lock().unwrap().seen
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    bot.lock()
        .unwrap()
        .updates
        .push(json!({"update_id": 1, "message": {
        "message_id": 5, "chat": {"id": CHAT}, "text": "Yes, tag it",
        "reply_to_message": {"message_id": message_id}}}));

    let r = finish(handle).await?;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    assert!(text(&r).starts_with("Yes, tag it"), "{}", text(&r));
    assert_eq!(structured(&r)["reply"]["text"], "Yes, tag it");
    let s = hub.wait_status(&token, "holding").await?;
    assert_eq!(count_messages(&s, "Yes, tag it"), 1);

    // The notification is edited to say it was answered.
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let edited = bot.lock().unwrap().seen.iter().any(|(m, b)| {
            m == "editMessageText"
                && b["message_id"] == message_id
                && b["text"].as_str().unwrap_or("").contains("Answered")
        });
        if edited {
            break;
        }
        assert!(
            Instant::now() < until,
            "no edit: {:?}",
            bot.lock().unwrap().seen
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    client.cancel().await?;
    Ok(())
}
