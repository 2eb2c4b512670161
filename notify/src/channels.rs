//! The one-way channels' wire formats: webhooks (json, slack, discord,
//! feishu, wecom, dingtalk) and ntfy; and how any channel's HTTP answer is
//! judged (retry or refused).
//!
//! Invariant: an error text never holds the URL (reqwest's errors are
//! stripped of it) nor any of the answer's body (a status, and a webhook's
//! numeric error code, are all that is kept: the body of a service the hub was
//! pointed at is never read back to the person, their panel or the log), and a
//! response body is read to a bound.

use serde_json::{Value, json};

use super::notice::{Outcome, cut};
use super::{Event, SendError};
use holdline_core::config::notify::{Ntfy, Webhook, WebhookFormat};

/// The most of a channel's answer that is read.
pub const MAX_ANSWER: usize = 1024 * 1024;

/// Posts `ev` to a webhook in its format.
pub async fn send_webhook(
    http: &reqwest::Client,
    hook: &Webhook,
    ev: &Event,
) -> Result<(), SendError> {
    let body = webhook_body(hook.format, ev);
    let answer = send(http.post(&hook.url.0).json(&body)).await?;
    // Feishu, WeCom and DingTalk answer 200 with an error code in the body.
    if let Ok(v) = serde_json::from_slice::<Value>(&answer) {
        for key in ["code", "errcode", "StatusCode"] {
            if let Some(code) = v.get(key).and_then(Value::as_i64)
                && code != 0
            {
                return Err(SendError::Refused(format!(
                    "the service answered with {key} {code}"
                )));
            }
        }
    }
    Ok(())
}

/// The body of one webhook post.
pub fn webhook_body(format: WebhookFormat, ev: &Event) -> Value {
    let text = match ev {
        Event::Waiting(n) => n.full(),
        Event::Ended { notice, outcome } => notice.follow_up(*outcome),
    };
    match format {
        WebhookFormat::Json => match ev {
            Event::Waiting(n) => json!({
                "event": if n.test { "test" } else { "waiting" },
                "token": n.token.as_str(),
                "title": n.title,
                "waitedSec": n.waited.as_secs(),
                "message": n.text,
                "completionPct": n.completion_pct,
                "nextStep": n.next_step,
                "options": n.options,
                "multiSelect": n.multi_select,
                // Named, never sent: the bytes stay with the hub (the person opens `url`).
                "attachments": n.files.iter().map(|f| json!({
                    "name": f.name, "mimeType": f.mime_type, "size": f.bytes.len(),
                })).collect::<Vec<_>>(),
                "url": n.link,
                "text": text,
            }),
            Event::Ended { notice, outcome } => json!({
                "event": "ended",
                "token": notice.token.as_str(),
                "title": notice.title,
                "outcome": outcome.as_str(),
                "url": notice.link,
                "text": text,
            }),
        },
        WebhookFormat::Slack => json!({ "text": text }),
        WebhookFormat::Discord => json!({ "content": cut(&text, 2000) }),
        WebhookFormat::Feishu => json!({ "msg_type": "text", "content": { "text": text } }),
        WebhookFormat::Wecom | WebhookFormat::Dingtalk => {
            json!({ "msgtype": "text", "text": { "content": text } })
        }
    }
}

/// Publishes `ev` to an ntfy topic (JSON publishing to the server root).
pub async fn send_ntfy(http: &reqwest::Client, n: &Ntfy, ev: &Event) -> Result<(), SendError> {
    let (root, topic) = split_topic(&n.url.0);
    let body = ntfy_body(&topic, ev);
    send(http.post(root).json(&body)).await.map(drop)
}

pub fn ntfy_body(topic: &str, ev: &Event) -> Value {
    match ev {
        Event::Waiting(n) => json!({
            "topic": topic,
            "title": n.headline(),
            "message": n.body(),
            "click": n.link,
            "tags": ["hourglass"],
        }),
        Event::Ended { notice, outcome } => json!({
            "topic": topic,
            "title": notice.title,
            "message": outcome.sentence(),
            "click": notice.link,
            "tags": [if *outcome == Outcome::Answered { "white_check_mark" } else { "zzz" }],
            "priority": 2,
        }),
    }
}

/// `https://ntfy.sh/a/topic` → (`https://ntfy.sh/a/`, `topic`).
fn split_topic(url: &str) -> (String, String) {
    let trimmed = url.trim_end_matches('/');
    match trimmed.rfind('/') {
        Some(i) => (trimmed[..=i].to_owned(), trimmed[i + 1..].to_owned()),
        None => (trimmed.to_owned(), String::new()),
    }
}

/// Sends a request: transport failures, 429 and 5xx are worth a retry;
/// other answers (4xx, a redirect, which is never followed) are refused with
/// their status alone. Returns the (bounded) body of a success.
pub async fn send(req: reqwest::RequestBuilder) -> Result<Vec<u8>, SendError> {
    let resp = req.send().await.map_err(transport)?;
    let status = resp.status();
    if status.is_success() {
        return read_bounded(resp, MAX_ANSWER).await;
    }
    Err(refusal(status, ""))
}

/// A failed answer as an error: its status only, never its body (see the
/// module's invariant); `what` names the call (`"push service "`, a Bot API
/// method). 5xx and 429 are worth a retry.
pub fn refusal(status: reqwest::StatusCode, what: &str) -> SendError {
    let said = if status.is_redirection() {
        format!("{what}{status} (redirects are not followed)")
    } else {
        format!("{what}{status}")
    };
    if status.is_server_error() || status.as_u16() == 429 {
        SendError::Retry(said)
    } else {
        SendError::Refused(said)
    }
}

/// Reads at most `cap` bytes of a body; more is an error carrying what was read.
pub async fn read_bounded(mut resp: reqwest::Response, cap: usize) -> Result<Vec<u8>, SendError> {
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(transport)? {
        if body.len() + chunk.len() > cap {
            body.extend_from_slice(&chunk[..cap - body.len()]);
            return Err(SendError::TooLarge(body));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// A reqwest error as text without its URL (which may hold a token).
pub fn transport(e: reqwest::Error) -> SendError {
    let e = e.without_url();
    let mut text = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    SendError::Retry(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ntfy_topics_split_off_the_url() {
        assert_eq!(
            split_topic("https://ntfy.sh/my-topic"),
            ("https://ntfy.sh/".into(), "my-topic".into())
        );
        assert_eq!(
            split_topic("http://127.0.0.1:9/ntfy/t/"),
            ("http://127.0.0.1:9/ntfy/".into(), "t".into())
        );
    }
}
