//! The Web Push channel: a waiting question pushed to every browser
//! subscribed in the panel, as `{title, body?, token, url}` (RFC 8291
//! encrypted, RFC 8292 signed: see [`crate::push`]).
//!
//! Invariant: within one question's retries a browser that took the push is
//! not pushed again; a subscription its push service answers 404 or 410 for
//! is dropped from the store; an error text never holds an endpoint nor any
//! of the push service's answer but its status.

use std::collections::HashSet;
use std::sync::Mutex;

use serde::Serialize;

use super::channels::{refusal, transport};
use super::notice::{Notice, cut};
use super::{Event, SendError};
use crate::push::{MAX_PLAINTEXT, Subscription, TTL, WebPush};
use holdline_store::lock::Unpoisoned as _;

/// What the service worker is handed.
#[derive(Debug, Serialize)]
pub struct Payload {
    pub title: String,
    /// The question; absent with `include_text = false`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    pub token: String,
    /// The panel at that session, relative to the panel's own origin.
    pub url: String,
}

impl Payload {
    /// The push of `n`, its body cut so the JSON fits one push.
    pub fn of(n: &Notice) -> Payload {
        let mut body = String::new();
        if n.test {
            body.push_str("If you read this, Web Push works.");
        }
        if let Some(t) = &n.text {
            body.push_str(t);
        }
        if !n.options.is_empty() {
            body.push_str("\n\n");
            body.push_str(&holdline_contract::choices::numbered(&n.options));
        }
        let mut p = Payload {
            title: n.headline(),
            body: Some(body.trim().to_owned()).filter(|b| !b.is_empty()),
            token: n.token.to_string(),
            url: if n.test {
                "/".into()
            } else {
                format!("/#session={}", n.token)
            },
        };
        p.fit();
        p
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a payload serializes")
    }

    /// Cuts the body (then the title) until the JSON fits [`MAX_PLAINTEXT`].
    fn fit(&mut self) {
        loop {
            let over = self.to_bytes().len().saturating_sub(MAX_PLAINTEXT);
            if over == 0 {
                return;
            }
            let field = match &mut self.body {
                Some(b) if b.chars().count() > 1 => b,
                _ => &mut self.title,
            };
            // At least one character per byte over (a JSON escape may be up to 6 bytes).
            let keep = field
                .chars()
                .count()
                .saturating_sub(over.div_ceil(6).max(1) + 1);
            *field = cut(field, keep.max(1));
        }
    }
}

/// Pushes to the subscribed browsers.
pub struct WebPushChannel {
    push: WebPush,
    subject: String,
    /// The question being sent and the endpoints that took it.
    done: Mutex<(String, HashSet<String>)>,
}

/// How one browser's push went.
enum Sent {
    Taken,
    Gone,
    Failed(SendError),
}

impl WebPushChannel {
    pub fn new(push: WebPush, subject: String) -> WebPushChannel {
        WebPushChannel {
            push,
            subject,
            done: Mutex::new((String::new(), HashSet::new())),
        }
    }

    fn done(&self) -> std::sync::MutexGuard<'_, (String, HashSet<String>)> {
        self.done.lock_unpoisoned()
    }

    /// Pushes a waiting question to every browser that has not taken it yet.
    pub async fn deliver(&self, http: &reqwest::Client, ev: &Event) -> Result<(), SendError> {
        let Event::Waiting(n) = ev else {
            return Ok(());
        };
        let subs = self.push.subscriptions.all();
        if subs.is_empty() {
            return Err(SendError::Nobody(
                "no browser is subscribed: turn on \"Notify this device\" in the panel's notification settings".into(),
            ));
        }
        let question = format!("{}/{}", n.token, n.request_id);
        {
            let mut done = self.done();
            if done.0 != question {
                *done = (question.clone(), HashSet::new());
            }
        }
        let payload = Payload::of(n).to_bytes();
        let (mut retry, mut refused) = (None, None);
        for sub in subs {
            if self.done().1.contains(&sub.endpoint) {
                continue;
            }
            match self.send_one(http, &sub, &payload).await {
                Sent::Taken => {
                    self.done().1.insert(sub.endpoint);
                }
                Sent::Gone => {
                    tracing::info!("a push subscription is gone (404/410): dropped");
                    if let Err(e) = self.push.subscriptions.remove(&sub.endpoint).await {
                        tracing::warn!(error = %e, "could not drop a gone push subscription");
                    }
                }
                Sent::Failed(e @ SendError::Retry(_)) => retry = Some(e),
                Sent::Failed(e) => refused = Some(e),
            }
        }
        match (retry, refused) {
            (Some(e), _) | (None, Some(e)) => Err(e),
            (None, None) => Ok(()),
        }
    }

    async fn send_one(&self, http: &reqwest::Client, sub: &Subscription, payload: &[u8]) -> Sent {
        let p = match self.push.prepare(sub, payload, &self.subject) {
            Ok(p) => p,
            Err(e) => return Sent::Failed(SendError::Refused(e)),
        };
        let req = http
            .post(p.endpoint)
            .header("TTL", TTL.as_secs())
            .header("Urgency", "high")
            .header(reqwest::header::CONTENT_ENCODING, "aes128gcm")
            .header(reqwest::header::CONTENT_TYPE, "application/octet-stream")
            .header(reqwest::header::AUTHORIZATION, p.authorization)
            .body(p.body);
        let resp = match req.send().await {
            Ok(r) => r,
            Err(e) => return Sent::Failed(transport(e)),
        };
        let status = resp.status();
        if status.is_success() {
            return Sent::Taken;
        }
        if matches!(status.as_u16(), 404 | 410) {
            return Sent::Gone;
        }
        Sent::Failed(refusal(status, "push service "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use holdline_store::session::Token;
    use std::time::Duration;

    fn notice(text: Option<String>) -> Notice {
        Notice {
            token: Token::generate(),
            request_id: "r1".into(),
            question: Some(1),
            title: "build".into(),
            waited: Duration::from_secs(90),
            text,
            options: Vec::new(),
            multi_select: false,
            completion_pct: None,
            next_step: None,
            link: "http://h/#session=x".into(),
            quick_replies: Vec::new(),
            test: false,
            files: Vec::new(),
            origin: Default::default(),
        }
    }

    #[test]
    fn a_payload_names_the_session_and_its_panel_link() {
        let n = notice(Some("Ship it?".into()));
        let p = Payload::of(&n);
        assert_eq!(p.body.as_deref(), Some("Ship it?"));
        assert_eq!(p.url, format!("/#session={}", n.token));
        assert!(p.title.contains("build"));
        let none = Payload::of(&notice(None));
        assert!(
            !String::from_utf8(none.to_bytes())
                .unwrap()
                .contains("\"body\"")
        );
    }

    #[test]
    fn a_long_question_is_cut_to_fit_one_push() {
        for text in ["长".repeat(5000), "\"".repeat(5000), "a".repeat(9000)] {
            let p = Payload::of(&notice(Some(text)));
            let bytes = p.to_bytes().len();
            assert!(bytes <= MAX_PLAINTEXT, "{bytes}");
            assert!(
                bytes > MAX_PLAINTEXT - 64,
                "cut no more than needed: {bytes}"
            );
            assert!(p.body.unwrap().ends_with('…'));
        }
    }
}
