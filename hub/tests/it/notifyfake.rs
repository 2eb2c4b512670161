//! Servers on loopback that stand in for the channels: one records every
//! request (webhooks of each format, ntfy) and also speaks the Telegram Bot
//! API (`getUpdates`, `sendMessage`, `editMessageText`, `getFile`,
//! `answerCallbackQuery`, file downloads) for the token it is given.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// One request the fake received.
#[derive(Debug, Clone)]
pub struct Seen {
    pub path: String,
    pub body: Value,
}

#[derive(Default)]
struct Inner {
    seen: Vec<Seen>,
    /// Statuses to answer next, per path prefix (then 200).
    fail: Vec<(String, VecDeque<u16>)>,
    /// Telegram updates not yet taken by `getUpdates`.
    updates: Vec<Value>,
    next_update: i64,
    next_message: i64,
    /// The bytes a file download answers.
    file: Vec<u8>,
}

/// The fake, shut down with the test's runtime.
#[derive(Clone)]
pub struct Fake {
    pub url: String,
    inner: Arc<Mutex<Inner>>,
}

impl Fake {
    pub async fn start() -> Fake {
        let inner = Arc::new(Mutex::new(Inner {
            next_update: 100,
            next_message: 500,
            ..Inner::default()
        }));
        let app = Router::new().fallback(answer).with_state(inner.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Fake { url, inner }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap()
    }

    /// Answers the next requests under `prefix` with these statuses.
    pub fn fail(&self, prefix: &str, statuses: &[u16]) {
        self.lock()
            .fail
            .push((prefix.to_owned(), statuses.iter().copied().collect()));
    }

    pub fn set_file(&self, bytes: Vec<u8>) {
        self.lock().file = bytes;
    }

    /// Every request so far whose path starts with `prefix`.
    pub fn seen(&self, prefix: &str) -> Vec<Seen> {
        self.lock()
            .seen
            .iter()
            .filter(|s| s.path.starts_with(prefix))
            .cloned()
            .collect()
    }

    /// Every request seen, as text (to look for what must never be sent).
    pub fn all_text(&self) -> String {
        self.lock()
            .seen
            .iter()
            .map(|s| format!("{} {}\n", s.path, s.body))
            .collect()
    }

    /// Waits until `n` requests under `prefix` were seen (at most `within`).
    pub async fn wait_for(&self, prefix: &str, n: usize, within: Duration) -> Vec<Seen> {
        let until = tokio::time::Instant::now() + within;
        loop {
            let seen = self.seen(prefix);
            if seen.len() >= n || tokio::time::Instant::now() > until {
                return seen;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Queues a Telegram update (its `update_id` is filled in).
    pub fn push_update(&self, mut update: Value) {
        let mut g = self.lock();
        g.next_update += 1;
        update["update_id"] = json!(g.next_update);
        g.updates.push(update);
    }

    /// Updates not yet taken by the hub.
    pub fn untaken(&self) -> usize {
        self.lock().updates.len()
    }
}

/// A `multipart/form-data` body as JSON: each field's text, or for a file
/// `{filename, contentType, data}` (data base64).
fn form_fields(boundary: &str, body: &[u8]) -> Value {
    use base64::Engine as _;
    let mut fields = serde_json::Map::new();
    let delimiter = format!("--{boundary}");
    let text = body;
    let mut parts: Vec<&[u8]> = Vec::new();
    let mut rest = text;
    while let Some(at) = find(rest, delimiter.as_bytes()) {
        parts.push(&rest[..at]);
        rest = &rest[at + delimiter.len()..];
    }
    for part in parts.into_iter().skip(1) {
        let part = part.strip_prefix(b"\r\n").unwrap_or(part);
        let part = part.strip_suffix(b"\r\n").unwrap_or(part);
        let Some(split) = find(part, b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&part[..split]).to_string();
        let data = &part[split + 4..];
        let attr = |key: &str| {
            head.split(&format!("{key}=\""))
                .nth(1)
                .and_then(|r| r.split('"').next())
                .map(str::to_owned)
        };
        let Some(name) = attr("name") else { continue };
        let value = match attr("filename") {
            Some(filename) => json!({
                "filename": filename,
                "contentType": head.lines().find_map(|l| l.to_ascii_lowercase().strip_prefix("content-type: ").map(str::to_owned)),
                "data": base64::engine::general_purpose::STANDARD.encode(data),
            }),
            None => json!(String::from_utf8_lossy(data)),
        };
        fields.insert(name, value);
    }
    Value::Object(fields)
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

async fn answer(State(inner): State<Arc<Mutex<Inner>>>, req: Request) -> Response {
    let path = req.uri().path().to_owned();
    let boundary = req
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("multipart/form-data; boundary="))
        .map(str::to_owned);
    let bytes: Bytes = axum::body::to_bytes(req.into_body(), 16 << 20)
        .await
        .unwrap_or_default();
    let body: Value = match &boundary {
        Some(b) => form_fields(b, &bytes),
        None => serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    };
    let status = {
        let mut g = inner.lock().unwrap();
        g.seen.push(Seen {
            path: path.clone(),
            body: body.clone(),
        });
        g.fail
            .iter_mut()
            .find(|(p, q)| path.starts_with(p.as_str()) && !q.is_empty())
            .and_then(|(_, q)| q.pop_front())
    };
    if let Some(code) = status {
        let code = StatusCode::from_u16(code).unwrap();
        return (
            code,
            format!("{{\"ok\":false,\"description\":\"fake says {code}\"}}"),
        )
            .into_response();
    }
    if path.starts_with("/file/") {
        return inner.lock().unwrap().file.clone().into_response();
    }
    let Some(method) = path.strip_prefix("/bot").and_then(|r| r.split('/').nth(1)) else {
        return (StatusCode::OK, "{}").into_response();
    };
    let result = match method {
        "getUpdates" => {
            let offset = body["offset"].as_i64().unwrap_or(0);
            let until = tokio::time::Instant::now() + Duration::from_millis(300);
            loop {
                let ready: Vec<Value> = {
                    let mut g = inner.lock().unwrap();
                    g.updates
                        .retain(|u| u["update_id"].as_i64().unwrap_or(0) >= offset);
                    g.updates.clone()
                };
                if !ready.is_empty() || tokio::time::Instant::now() > until {
                    break json!(ready);
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        "sendMessage" | "sendPhoto" | "sendDocument" => {
            let mut g = inner.lock().unwrap();
            g.next_message += 1;
            json!({"message_id": g.next_message, "chat": {"id": body["chat_id"]}, "text": body["text"]})
        }
        "getFile" => json!({"file_id": body["file_id"], "file_path": "photos/file_1.jpg"}),
        _ => json!(true),
    };
    axum::Json(json!({"ok": true, "result": result})).into_response()
}
