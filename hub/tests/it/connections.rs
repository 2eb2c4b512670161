//! The hub's own HTTP/1.1 connection handling (`server`), spoken to with raw
//! bytes: keep-alive and pipelining, closing, and every request it leaves to
//! hyper (chunked, `Expect`, HTTP/1.0, large or malformed) still answered.

use std::time::Duration;

use crate::inproc::TestHub;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// One answer read off a raw connection.
#[derive(Debug)]
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("a JSON body")
    }
}

/// A raw client connection keeping what it read past the last answer.
struct Raw {
    stream: TcpStream,
    read: Vec<u8>,
}

impl Raw {
    async fn connect(hub: &TestHub) -> Raw {
        let addr = hub.url.trim_start_matches("http://");
        Raw {
            stream: TcpStream::connect(addr).await.unwrap(),
            read: Vec::new(),
        }
    }

    async fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).await.unwrap();
    }

    /// The next answer (skipping `100 Continue`), by its content-length.
    async fn answer(&mut self) -> Answer {
        tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                let mut headers = [httparse::EMPTY_HEADER; 32];
                let mut parsed = httparse::Response::new(&mut headers);
                if let httparse::Status::Complete(len) = parsed.parse(&self.read).unwrap() {
                    let status = parsed.code.unwrap();
                    let headers: Vec<(String, String)> = parsed
                        .headers
                        .iter()
                        .map(|h| {
                            let value = String::from_utf8_lossy(h.value).into_owned();
                            (h.name.to_owned(), value)
                        })
                        .collect();
                    if status == 100 {
                        self.read.drain(..len);
                        continue;
                    }
                    let body_len: usize = headers
                        .iter()
                        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
                        .map_or(0, |(_, v)| v.parse().unwrap());
                    if self.read.len() >= len + body_len {
                        let body = self.read[len..len + body_len].to_vec();
                        self.read.drain(..len + body_len);
                        return Answer {
                            status,
                            headers,
                            body,
                        };
                    }
                }
                let mut chunk = [0u8; 4096];
                let n = self.stream.read(&mut chunk).await.unwrap();
                assert!(n > 0, "the hub closed the connection before answering");
                self.read.extend_from_slice(&chunk[..n]);
            }
        })
        .await
        .expect("an answer within 10 s")
    }

    /// Whether the hub closes the connection (reads EOF) within 5 s.
    async fn closed(&mut self) -> bool {
        let mut chunk = [0u8; 64];
        matches!(
            tokio::time::timeout(Duration::from_secs(5), self.stream.read(&mut chunk)).await,
            Ok(Ok(0)) | Ok(Err(_))
        )
    }
}

fn post(hub: &TestHub, path: &str, body: &str, extra: &str) -> Vec<u8> {
    format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {secret}\r\n\
         Content-Type: application/json\r\nContent-Length: {len}\r\n{extra}\r\n{body}",
        host = hub.url.trim_start_matches("http://"),
        secret = hub.secret,
        len = body.len(),
    )
    .into_bytes()
}

/// The same POST with its body in one chunk: hyper reads this one.
fn post_chunked(hub: &TestHub, path: &str, body: &str) -> Vec<u8> {
    format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {secret}\r\n\
         Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n\
         {len:x}\r\n{body}\r\n0\r\n\r\n",
        host = hub.url.trim_start_matches("http://"),
        secret = hub.secret,
        len = body.len(),
    )
    .into_bytes()
}

fn get(hub: &TestHub, path: &str, version: &str, extra: &str) -> Vec<u8> {
    format!(
        "GET {path} HTTP/{version}\r\nHost: {host}\r\n{extra}\r\n",
        host = hub.url.trim_start_matches("http://"),
    )
    .into_bytes()
}

/// A raw connection whose long poll for `wait` the hub now holds.
async fn held_poll(hub: &TestHub, token: &str, wait: &str, ms: u64) -> Raw {
    let mut raw = Raw::connect(hub).await;
    let body = json!({"token": token, "waitId": wait, "timeoutMs": ms}).to_string();
    raw.send(&post(hub, "/api/wait/poll", &body, "")).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    raw
}

fn init_body(title: &str) -> String {
    json!({"cursorTitle": title, "workspace": "/w", "hostIp": "127.0.0.1"}).to_string()
}

#[tokio::test]
async fn requests_sent_together_are_answered_in_order_on_one_connection() {
    let hub = TestHub::start().await;
    let mut raw = Raw::connect(&hub).await;
    let mut both = get(&hub, holdline_contract::routes::HEALTHZ, "1.1", "");
    both.extend(post(&hub, "/api/init", &init_body("pipelined"), ""));
    raw.send(&both).await;
    let first = raw.answer().await;
    assert_eq!(first.status, 200);
    assert_eq!(first.json()["ok"], true, "{first:?}");
    let second = raw.answer().await;
    assert_eq!(second.status, 200, "{second:?}");
    assert!(second.json()["token"].as_str().unwrap().starts_with("ct_"));
    // Still open for a third.
    raw.send(&get(&hub, holdline_contract::routes::HEALTHZ, "1.1", ""))
        .await;
    assert_eq!(raw.answer().await.status, 200);
}

#[tokio::test]
async fn a_head_that_arrives_in_pieces_is_answered() {
    let hub = TestHub::start().await;
    let mut raw = Raw::connect(&hub).await;
    let request = post(&hub, "/api/init", &init_body("slow"), "");
    for piece in request.chunks(7) {
        raw.send(piece).await;
        raw.stream.flush().await.unwrap();
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let a = raw.answer().await;
    assert_eq!(a.status, 200, "{a:?}");
}

#[tokio::test]
async fn connection_close_is_honoured() {
    let hub = TestHub::start().await;
    let mut raw = Raw::connect(&hub).await;
    raw.send(&get(
        &hub,
        holdline_contract::routes::HEALTHZ,
        "1.1",
        "Connection: close\r\n",
    ))
    .await;
    let a = raw.answer().await;
    assert_eq!(a.status, 200);
    assert_eq!(a.header("connection"), Some("close"));
    assert!(raw.closed().await, "the hub keeps the connection open");
}

#[tokio::test]
async fn bad_inputs_get_clear_answers_and_the_connection_stays_usable() {
    let hub = TestHub::start().await;
    let mut raw = Raw::connect(&hub).await;
    // Not JSON.
    raw.send(&post(&hub, "/api/init", "{not json", "")).await;
    let a = raw.answer().await;
    assert_eq!(a.status, 400, "{a:?}");
    assert!(a.json()["error"].is_object() || a.json()["error"].is_string());
    // No secret.
    raw.send(
        format!(
            "POST /api/init HTTP/1.1\r\nHost: {}\r\nContent-Length: 2\r\n\r\n{{}}",
            hub.url.trim_start_matches("http://")
        )
        .as_bytes(),
    )
    .await;
    assert_eq!(raw.answer().await.status, 401);
    // No such route.
    raw.send(&post(&hub, "/api/nothing", "{}", "")).await;
    assert_eq!(raw.answer().await.status, 404);
    // And a good one after all of them.
    raw.send(&post(&hub, "/api/init", &init_body("after errors"), ""))
        .await;
    assert_eq!(raw.answer().await.status, 200);
}

#[tokio::test]
async fn a_malformed_request_line_is_refused() {
    let hub = TestHub::start().await;
    let mut raw = Raw::connect(&hub).await;
    raw.send(b"this is not http\r\n\r\n").await;
    let a = raw.answer().await;
    assert_eq!(a.status, 400, "{a:?}");
}

#[tokio::test]
async fn requests_left_to_hyper_are_answered() {
    let hub = TestHub::start().await;
    let host = hub.url.trim_start_matches("http://").to_owned();

    // HTTP/1.0.
    let mut raw = Raw::connect(&hub).await;
    raw.send(&get(&hub, holdline_contract::routes::HEALTHZ, "1.0", ""))
        .await;
    assert_eq!(raw.answer().await.status, 200);

    // A chunked body.
    let mut raw = Raw::connect(&hub).await;
    let body = init_body("chunked");
    raw.send(&post_chunked(&hub, "/api/init", &body)).await;
    let a = raw.answer().await;
    assert_eq!(a.status, 200, "{a:?}");
    assert!(a.json()["token"].as_str().unwrap().starts_with("ct_"));

    // Expect: 100-continue, the body sent after the interim answer.
    let mut raw = Raw::connect(&hub).await;
    let body = init_body("expecting");
    let mut head = post(&hub, "/api/init", &body, "Expect: 100-continue\r\n");
    head.truncate(head.len() - body.len());
    raw.send(&head).await;
    let mut interim = [0u8; 25];
    raw.stream.read_exact(&mut interim).await.unwrap();
    assert!(interim.starts_with(b"HTTP/1.1 100 Continue"));
    raw.send(body.as_bytes()).await;
    assert_eq!(raw.answer().await.status, 200);

    // HEAD.
    let mut raw = Raw::connect(&hub).await;
    raw.send(format!("HEAD /healthz HTTP/1.1\r\nHost: {host}\r\n\r\n").as_bytes())
        .await;
    let mut chunk = [0u8; 512];
    let n = raw.stream.read(&mut chunk).await.unwrap();
    assert!(chunk[..n].starts_with(b"HTTP/1.1 200"));
}

#[tokio::test]
async fn a_reply_larger_than_the_small_body_limit_is_delivered_whole() {
    let hub = TestHub::start().await;
    let token = hub.init("large reply").await;
    let wait = hub.register(&token, "large reply", "done?", "r1").await;
    let text = "x".repeat(200 * 1024);
    let mut raw = Raw::connect(&hub).await;
    raw.send(&post(
        &hub,
        "/api/reply",
        &json!({"token": token, "text": text}).to_string(),
        "",
    ))
    .await;
    let a = raw.answer().await;
    assert_eq!(a.status, 200, "{a:?}");
    let polled = hub.poll(&token, &wait, 2000).await;
    assert_eq!(
        polled["reply"]["text"].as_str().map(str::len),
        Some(text.len())
    );
}

#[tokio::test]
async fn a_held_poll_is_answered_on_its_own_connection_when_the_reply_comes() {
    let hub = TestHub::start().await;
    let token = hub.init("held").await;
    let wait = hub.register(&token, "held", "done?", "r1").await;
    let mut raw = held_poll(&hub, &token, &wait, 20_000).await;
    hub.ok("/api/reply", json!({"token": token, "text": "go on"}))
        .await;
    let a = raw.answer().await;
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(a.json()["reply"]["text"], "go on");
}

#[tokio::test]
async fn a_stopping_hub_answers_held_polls_and_closes_idle_connections() {
    let hub = TestHub::start().await;
    let token = hub.init("stopping").await;
    let wait = hub.register(&token, "stopping", "done?", "r1").await;
    let mut idle = Raw::connect(&hub).await;
    idle.send(&get(&hub, holdline_contract::routes::HEALTHZ, "1.1", ""))
        .await;
    assert_eq!(idle.answer().await.status, 200);
    let mut held = held_poll(&hub, &token, &wait, 60_000).await;
    let stopped = tokio::spawn(hub.stop());
    let a = held.answer().await;
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(a.json()["status"], "renewal", "{:?}", a.json());
    assert!(idle.closed().await, "an idle connection outlived the hub");
    tokio::time::timeout(Duration::from_secs(10), stopped)
        .await
        .expect("the hub stopped")
        .unwrap();
}

/// The long poll is held apart from the router (`api::agent::PollToHold`) but
/// admitted by it, so every check the router's layers make is made: each bad
/// input, read by the hub itself and by hyper, gets the same clear error.
#[tokio::test]
async fn the_long_poll_makes_every_check_the_other_routes_make() {
    let hub = TestHub::start().await;
    let token = hub.init("checked").await;
    let wait = hub.register(&token, "checked", "done?", "r1").await;
    let host = hub.url.trim_start_matches("http://").to_owned();
    let good = json!({"token": token, "waitId": wait, "timeoutMs": 0}).to_string();
    let mut raw = Raw::connect(&hub).await;
    let mut expect = async |request: Vec<u8>, status: u16, code: &str| {
        raw.send(&request).await;
        let a = raw.answer().await;
        assert_eq!(a.status, status, "{a:?}");
        assert_eq!(a.json()["error"]["code"], code, "{a:?}");
        assert!(
            a.json()["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty())
        );
    };
    let poll = |body: &str, extra: &str| post(&hub, "/api/wait/poll", body, extra);

    // No secret, a wrong one.
    let unauthed = format!(
        "POST /api/wait/poll HTTP/1.1\r\nHost: {host}\r\nContent-Length: {}\r\n\r\n{good}",
        good.len()
    );
    expect(unauthed.into_bytes(), 401, "UNAUTHORIZED").await;
    let wrong = String::from_utf8(poll(&good, ""))
        .unwrap()
        .replace(&hub.secret, "wrong-secret-wrong-secret-wrong-s");
    expect(wrong.into_bytes(), 401, "UNAUTHORIZED").await;
    // A foreign Host (DNS rebinding) and a foreign Origin.
    let foreign = String::from_utf8(poll(&good, ""))
        .unwrap()
        .replace(&format!("Host: {host}"), "Host: evil.example");
    expect(foreign.into_bytes(), 403, "FORBIDDEN").await;
    expect(
        poll(&good, "Origin: http://evil.example\r\n"),
        403,
        "FORBIDDEN",
    )
    .await;
    // Not POST.
    let get_poll = format!(
        "GET /api/wait/poll HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {}\r\n\r\n",
        hub.secret
    );
    expect(get_poll.into_bytes(), 405, "METHOD_NOT_ALLOWED").await;
    // As any route called with the wrong method is.
    let get_reply = format!(
        "GET /api/reply HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {}\r\n\r\n",
        hub.secret
    );
    expect(get_reply.into_bytes(), 405, "METHOD_NOT_ALLOWED").await;
    // Bodies: not UTF-8, empty, not JSON, wrong types, missing fields.
    let mut not_utf8 = poll("{\"token\": \"..\"}", "");
    let at = not_utf8.len() - 4;
    not_utf8.splice(at..at + 2, [0xff, 0xfe]);
    expect(not_utf8, 400, "BAD_REQUEST").await;
    for body in [
        "".to_owned(),
        "{not json".to_owned(),
        json!({"token": token, "waitId": 5}).to_string(),
        json!({"waitId": wait}).to_string(),
        json!([1, 2]).to_string(),
    ] {
        expect(poll(&body, ""), 400, "BAD_REQUEST").await;
    }
    // A malformed token, an unknown one, a time limit out of range.
    let malformed = json!({"token": "../x", "waitId": wait}).to_string();
    expect(poll(&malformed, ""), 400, "BAD_REQUEST").await;
    let unknown =
        json!({"token": "ct_00000000000000000000000000000000", "waitId": wait}).to_string();
    expect(poll(&unknown, ""), 404, "SESSION_NOT_FOUND").await;
    for ms in [json!(-1), json!(1_000_000_000_000u64), json!("10")] {
        let body = json!({"token": token, "waitId": wait, "timeoutMs": ms}).to_string();
        expect(poll(&body, ""), 400, "BAD_REQUEST").await;
    }
    // Over the 1 MiB JSON limit: this one hyper reads (it is over 64 KiB).
    let huge = json!({"token": token, "waitId": "x".repeat(2 << 20)}).to_string();
    let mut big = Raw::connect(&hub).await;
    big.send(&poll(&huge, "")).await;
    let a = big.answer().await;
    assert_eq!(
        (a.status, &a.json()["error"]["code"]),
        (413, &json!("TOO_LARGE"))
    );

    // After all of them the same connection polls, and so does hyper's path
    // (a chunked body): the wait is untouched, the poll renews.
    raw.send(&poll(&good, "")).await;
    let a = raw.answer().await;
    assert_eq!(
        (a.status, &a.json()["status"]),
        (200, &json!("renewal")),
        "{a:?}"
    );
    let mut chunked = Raw::connect(&hub).await;
    chunked
        .send(&post_chunked(&hub, "/api/wait/poll", &good))
        .await;
    let a = chunked.answer().await;
    assert_eq!(
        (a.status, &a.json()["status"]),
        (200, &json!("renewal")),
        "{a:?}"
    );
    let session = hub.session(&token).await;
    assert_eq!(session["status"], "waiting", "{session}");
}
