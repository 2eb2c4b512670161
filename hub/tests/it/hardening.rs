//! The real hub under the resource attacks of docs/security.md's review, spoken to with raw
//! sockets: idle and slow connections are closed and capped, unauthenticated
//! bodies stay small, the reply round trip and `/healthz` keep answering, and
//! SIGTERM ends the hub in bounded time whatever its clients do. Every test
//! is bounded in connections and time and stops by itself.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::realhub::{Api, RealHub, free_addr};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Opens `n` raw connections (each retried briefly: the hub may be busy).
async fn connect_many(addr: SocketAddr, n: usize) -> Vec<TcpStream> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        if let Ok(Ok(s)) =
            tokio::time::timeout(Duration::from_secs(2), TcpStream::connect(addr)).await
        {
            out.push(s);
        }
    }
    out
}

/// Whether the peer has closed `s` (EOF or reset) within `limit`.
async fn closed_within(s: &mut TcpStream, limit: Duration) -> bool {
    let mut chunk = [0u8; 4096];
    let until = tokio::time::Instant::now() + limit;
    loop {
        match tokio::time::timeout_at(until, s.read(&mut chunk)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => continue,
            Err(_) => return false,
        }
    }
}

/// A whole agent/person exchange: the agent registers and waits, the person
/// replies, the agent's poll gets it.
async fn reply_round_trip(api: &Api, n: u32) {
    let who = json!({"cursorTitle": format!("chat {n}"), "workspace": "/w", "hostIp": "10.9.9.9"});
    let token = api.ok("/api/init", &who).await["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut reg = who.clone();
    reg["token"] = json!(token);
    reg["message"] = json!("done, next?");
    reg["requestId"] = json!(format!("r{n}"));
    let wait = api.ok("/api/wait/register", &reg).await["waitId"]
        .as_str()
        .unwrap()
        .to_owned();
    let poller = api.clone();
    let poll = json!({"token": token, "waitId": wait, "timeoutMs": 8000});
    let polled = tokio::spawn(async move { poller.ok("/api/wait/poll", &poll).await });
    api.ok("/api/reply", &json!({"token": token, "text": "go on"}))
        .await;
    let got = polled.await.unwrap();
    assert_eq!(got["status"], "replied", "{got}");
    assert_eq!(got["reply"]["text"], "go on", "{got}");
}

async fn healthy(api: &Api) -> bool {
    api.health().await.is_some()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_and_slow_connections_neither_exhaust_nor_outlive_their_limits() {
    let dir = tempfile::tempdir().unwrap();
    // 256 descriptors: well under what the attack opens.
    let hub = RealHub::start_with_nofile(&dir.path().join("h"), free_addr(), 256).await;

    // Slow heads from another address: a header line every 200 ms, never
    // finishing. The head limit closes them all the same.
    let slow_peer: SocketAddr = "127.0.0.2:0".parse().unwrap();
    let mut slow = Vec::new();
    for _ in 0..20 {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(slow_peer).unwrap();
        let mut s = socket.connect(hub.addr).await.unwrap();
        s.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n")
            .await
            .unwrap();
        slow.push(s);
    }
    let trickle_started = Instant::now();
    let mut open = slow.len();
    let mut closed = vec![false; slow.len()];
    while open > 0 && trickle_started.elapsed() < Duration::from_secs(14) {
        for (s, closed) in slow.iter_mut().zip(&mut closed) {
            if !*closed
                && (s.write_all(b"X-Slow: 1\r\n").await.is_err()
                    || closed_within(s, Duration::from_millis(10)).await)
            {
                *closed = true;
                open -= 1;
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    eprintln!(
        "{} of {} slow heads closed after {:?}",
        slow.len() - open,
        slow.len(),
        trickle_started.elapsed()
    );
    assert_eq!(open, 0, "every slow head is closed within 14 s");
    assert!(healthy(&hub.api).await);

    // An agent already waiting when the flood starts.
    let who = json!({"cursorTitle": "flooded", "workspace": "/w", "hostIp": "10.9.9.9"});
    let token = hub.api.ok("/api/init", &who).await["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut reg = who.clone();
    reg["token"] = json!(token);
    reg["message"] = json!("done, next?");
    reg["requestId"] = json!("before-flood");
    let wait = hub.api.ok("/api/wait/register", &reg).await["waitId"]
        .as_str()
        .unwrap()
        .to_owned();
    let agent = Api::new(hub.addr, hub.api.secret.clone());
    let poll = json!({"token": token, "waitId": wait, "timeoutMs": 20000});
    let polled = tokio::spawn(async move { agent.ok("/api/wait/poll", &poll).await });
    tokio::time::sleep(Duration::from_millis(300)).await;

    // More idle connections than the hub has descriptors.
    let flood_started = Instant::now();
    let mut idle = connect_many(hub.addr, 400).await;
    assert!(idle.len() >= 300, "only {} connections opened", idle.len());

    // The person and the agents still get through, at once.
    assert!(healthy(&hub.api).await, "/healthz answers under the flood");
    hub.api
        .ok("/api/reply", &json!({"token": token, "text": "go on"}))
        .await;
    let got = polled.await.unwrap();
    assert_eq!(
        got["reply"]["text"], "go on",
        "the waiting agent got the reply: {got}"
    );
    reply_round_trip(&hub.api, 1).await;

    // Idle connections that never showed the secret are closed (evicted at
    // once past the caps, or after the idle limit).
    let mut idle_closed = 0;
    for s in &mut idle {
        let left = Duration::from_secs(20).saturating_sub(flood_started.elapsed());
        if closed_within(s, left).await {
            idle_closed += 1;
        }
    }
    eprintln!(
        "{idle_closed} of {} idle connections closed after {:?}",
        idle.len(),
        flood_started.elapsed()
    );
    assert_eq!(
        idle_closed,
        idle.len(),
        "every idle connection is closed within 20 s"
    );
    assert!(healthy(&hub.api).await);
    reply_round_trip(&hub.api, 2).await;
}

/// Starts `n` unfinished unauthenticated login bodies: chunked ones of
/// `chunked_bytes` each, or plain ones one byte short of 64 KiB.
async fn unfinished_logins(addr: SocketAddr, n: usize, chunked: bool) -> Vec<TcpStream> {
    let mut out = Vec::new();
    for mut s in connect_many(addr, n).await {
        let sent = if chunked {
            let mut req = format!(
                "POST /api/login HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
                 Transfer-Encoding: chunked\r\n\r\n"
            )
            .into_bytes();
            let chunk = vec![b' '; 64 * 1024];
            for _ in 0..15 {
                req.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
                req.extend_from_slice(&chunk);
                req.extend_from_slice(b"\r\n");
            }
            req
        } else {
            let mut req = format!(
                "POST /api/login HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
                 Content-Length: 65535\r\n\r\n"
            )
            .into_bytes();
            req.extend(std::iter::repeat_n(b' ', 65534));
            req
        };
        // The hub may refuse and close early: that is the point.
        let _ = tokio::time::timeout(Duration::from_secs(2), s.write_all(&sent)).await;
        out.push(s);
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unauthenticated_bodies_do_not_grow_the_hub() {
    let dir = tempfile::tempdir().unwrap();
    let hub = RealHub::start_logging(&dir.path().join("h"), free_addr()).await;
    reply_round_trip(&hub.api, 0).await;
    let before = hub.rss_kib();
    // 60 chunked bodies of ~1 MiB (the JSON limit) that never end.
    let chunked = unfinished_logins(hub.addr, 60, true).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after_chunked = hub.rss_kib();
    drop(chunked);
    // 60 plain bodies one byte short of what the plain path reads itself.
    let plain = unfinished_logins(hub.addr, 60, false).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after_plain = hub.rss_kib();
    assert!(healthy(&hub.api).await);
    reply_round_trip(&hub.api, 1).await;
    drop(plain);
    eprintln!("RSS KiB: before {before}, after chunked {after_chunked}, after plain {after_plain}");
    let grown = after_chunked.max(after_plain).saturating_sub(before);
    assert!(
        grown < 16 * 1024,
        "120 unfinished unauthenticated bodies grew the hub by {grown} KiB"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_ends_the_hub_in_bounded_time_with_unfinished_requests() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("h");
    let mut hub = RealHub::start(&home, free_addr()).await;
    let api = hub.api.clone();
    let who = json!({"cursorTitle": "kept", "workspace": "/w", "hostIp": "10.9.9.9"});
    let token = api.ok("/api/init", &who).await["token"]
        .as_str()
        .unwrap()
        .to_owned();
    // An authenticated plain request whose body never finishes, and one that
    // hyper reads (chunked), likewise.
    let mut plain = TcpStream::connect(hub.addr).await.unwrap();
    let head = format!(
        "POST /api/session/config HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"token\"",
        api.secret
    );
    plain.write_all(head.as_bytes()).await.unwrap();
    let mut chunked = TcpStream::connect(hub.addr).await.unwrap();
    let head = format!(
        "POST /api/session/config HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n{{\"to\r\n",
        api.secret
    );
    chunked.write_all(head.as_bytes()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = Instant::now();
    let status = tokio::task::block_in_place(|| hub.terminate_within(Duration::from_secs(15)));
    let status = status.unwrap_or_else(|| {
        panic!(
            "the hub did not exit within 15 s of SIGTERM; stderr:\n{}",
            hub.stderr()
        )
    });
    assert!(status.success(), "exit {status}; stderr:\n{}", hub.stderr());
    eprintln!("exited {:?} after SIGTERM", started.elapsed());
    drop((plain, chunked));
    hub.restart().await;
    let (code, session) = hub
        .api
        .get(&format!("/api/sessions/{token}"))
        .await
        .unwrap();
    assert_eq!(code, 200, "{session}");
}

/// The status line of the hub's answer to `request` on a new connection.
async fn status_of(addr: SocketAddr, request: &[u8]) -> String {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let _ = s.write_all(request).await;
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out)
        .lines()
        .next()
        .unwrap_or("")
        .to_owned()
}

#[tokio::test]
async fn a_head_past_16_kib_or_48_fields_is_refused_on_both_paths() {
    let dir = tempfile::tempdir().unwrap();
    let hub = RealHub::start(&dir.path().join("h"), free_addr()).await;
    let big = "x".repeat(1000);
    // 300 KiB of header lines: past this path's 16 KiB, so hyper's (chunked:
    // hyper's from the start).
    for first in [
        "GET /healthz HTTP/1.1\r\nHost: localhost\r\n",
        "POST /api/login HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n",
    ] {
        let mut req = first.to_owned();
        for i in 0..300 {
            req.push_str(&format!("X-Pad-{i}: {big}\r\n"));
        }
        req.push_str("\r\n");
        let status = status_of(hub.addr, req.as_bytes()).await;
        assert!(status.contains(" 431 "), "{first:?} with 300 KiB: {status}");
    }
    // 60 short fields: past 48.
    let mut req = "GET /healthz HTTP/1.1\r\nHost: localhost\r\n".to_owned();
    for i in 0..60 {
        req.push_str(&format!("X-F{i}: 1\r\n"));
    }
    req.push_str("\r\n");
    let status = status_of(hub.addr, req.as_bytes()).await;
    assert!(status.contains(" 431 "), "60 fields: {status}");
    // Within both limits: answered.
    let ok = status_of(
        hub.addr,
        b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(ok.contains(" 200 "), "{ok}");
}

#[tokio::test]
async fn a_flood_of_refused_requests_does_not_fill_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("h");
    let hub = RealHub::start_logging(&home, free_addr()).await;
    let log = home.join("logs").join("hub.log");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = std::fs::metadata(&log).unwrap().len();
    let http = reqwest::Client::new();
    for i in 0..500 {
        let res = http
            .get(format!("http://{}/api/sessions?n={i}", hub.addr))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 401);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let grown = std::fs::metadata(&log).unwrap().len() - before;
    eprintln!("500 refused requests grew hub.log by {grown} bytes");
    assert!(
        grown < 8 * 1024,
        "500 refused requests grew hub.log by {grown} bytes"
    );
}

#[tokio::test]
async fn healthz_shows_the_sync_error_only_with_the_secret() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("h");
    std::fs::create_dir_all(&home).unwrap();
    // Nothing listens on port 1: sync stays down with a driver error.
    std::fs::write(
        home.join("config.toml"),
        "mongo_uri = \"mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=300\"\n",
    )
    .unwrap();
    let hub = RealHub::start(&home, free_addr()).await;
    let until = Instant::now() + Duration::from_secs(20);
    let authed = loop {
        let (_, h) = hub
            .api
            .get(holdline_contract::routes::HEALTHZ)
            .await
            .unwrap();
        if h["mongo"]["lastError"].is_string() || Instant::now() > until {
            break h;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(authed["mongo"]["lastError"].is_string(), "{authed}");
    assert!(authed["mongo"]["state"].is_string(), "{authed}");
    let public: serde_json::Value = reqwest::get(format!("http://{}/healthz", hub.addr))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(public.get("mongo").is_none(), "{public}");
    assert!(!public.to_string().contains("127.0.0.1:1"), "{public}");
}

#[tokio::test]
async fn host_and_origin_checks_are_exact() {
    let dir = tempfile::tempdir().unwrap();
    let hub = RealHub::start(&dir.path().join("h"), free_addr()).await;
    let secret = &hub.api.secret;
    let host = hub.addr.to_string();
    let ask = |target: String, extra: String| {
        format!(
            "GET {target} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {secret}\r\n{extra}Connection: close\r\n\r\n"
        )
    };
    // The authority of an absolute-form target is checked like Host.
    let rebound = ask("http://evil.example/api/whoami".into(), String::new());
    let status = status_of(hub.addr, rebound.as_bytes()).await;
    assert!(
        status.contains(" 403 "),
        "absolute-form to evil.example: {status}"
    );
    let own = ask(format!("http://{host}/api/whoami"), String::new());
    let status = status_of(hub.addr, own.as_bytes()).await;
    assert!(
        status.contains(" 200 "),
        "absolute-form to the hub itself: {status}"
    );
    // Origin must be the hub's own, scheme included.
    for (origin, expected) in [
        (format!("http://{host}"), " 200 "),
        // Behind a TLS reverse proxy that passes the Host through.
        (format!("https://{host}"), " 200 "),
        (format!("ftp://{host}"), " 403 "),
        (format!("chrome-extension://{host}"), " 403 "),
        (format!("http://{host}.evil.example"), " 403 "),
    ] {
        let req = ask("/api/whoami".into(), format!("Origin: {origin}\r\n"));
        let status = status_of(hub.addr, req.as_bytes()).await;
        assert!(status.contains(expected), "Origin {origin}: {status}");
    }
}

#[tokio::test]
async fn an_import_with_a_script_carrying_image_type_is_refused_whole() {
    let dir = tempfile::tempdir().unwrap();
    let hub = RealHub::start(&dir.path().join("h"), free_addr()).await;
    let session = |token: &str, mime: &str| {
        json!({
            "token": token, "title": "imported", "status": "holding", "workspace": "/w",
            "createdAt": 1782448693854u64, "lastActiveAt": 1782449356228u64,
            "bindingKey": format!("/w::{token}@10.0.0.1"), "hostIp": "10.0.0.1",
            "messages": [{"role": "user", "content": "see", "at": 1782448800000u64,
                          "auto": false, "images": [{"mimeType": mime, "data": "PHN2Zy8+"}]}],
        })
    };
    let good = "ct_00000000000000000000000000000001";
    for mime in ["image/svg+xml", "text/html"] {
        let bad = "ct_00000000000000000000000000000002";
        let file = json!({ good: session(good, "image/png"), bad: session(bad, mime) });
        let (status, body) = hub.api.post("/api/import", &file).await.unwrap();
        assert_eq!(status, 400, "{mime}: {body}");
        assert!(body.to_string().contains("not supported"), "{body}");
    }
    let (status, _) = hub.api.get(&format!("/api/sessions/{good}")).await.unwrap();
    assert_eq!(status, 404, "a refused file imports nothing");
}
