//! The bridge's HTTP client against a broken or hostile hub on loopback
//! (review findings M3, L10, L11 in docs/security.md): it follows no redirect, reads no answer
//! past its cap, and a call ends within its own time limit whatever the
//! hubs do.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use holdline_contract::{HubApi, HubError, InitRequest, RegisterRequest};
use holdline_mcp::config::{Config, SecretSource};
use holdline_mcp::hub_client::{HubClient, MAX_ANSWER};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the fake hub does with each request.
#[derive(Clone, Copy)]
enum Behaviour {
    /// Answers 307 to `Location`.
    Redirect(SocketAddr),
    /// Answers a valid init answer whose token is `n` bytes long, chunked.
    Huge(usize),
    /// Never answers.
    Stall,
    /// Answers a normal init answer.
    Fine,
}

/// Reads one request (head and its content-length body).
async fn read_request(s: &mut TcpStream) -> Option<()> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = s.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |v| v.trim().parse().unwrap());
            while buf.len() < end + 4 + len {
                let n = s.read(&mut chunk).await.ok()?;
                if n == 0 {
                    return None;
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            return Some(());
        }
    }
}

/// A fake hub on `ip`; counts the requests it read.
async fn fake_hub(ip: &str, behaviour: Behaviour) -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = TcpListener::bind((ip, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = hits.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = listener.accept().await else {
                return;
            };
            let hits = counted.clone();
            tokio::spawn(async move {
                while read_request(&mut s).await.is_some() {
                    hits.fetch_add(1, Ordering::SeqCst);
                    let written = match behaviour {
                        Behaviour::Redirect(to) => {
                            let answer = format!(
                                "HTTP/1.1 307 Temporary Redirect\r\nLocation: http://{to}/api/init\r\nContent-Length: 0\r\n\r\n"
                            );
                            s.write_all(answer.as_bytes()).await
                        }
                        Behaviour::Fine => {
                            let body = r#"{"token":"ct_1","status":"holding","created":true,"bindingKey":"k"}"#;
                            let answer = format!(
                                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                                body.len()
                            );
                            s.write_all(answer.as_bytes()).await
                        }
                        Behaviour::Huge(n) => huge_answer(&mut s, n).await,
                        Behaviour::Stall => {
                            tokio::time::sleep(Duration::from_secs(3600)).await;
                            Ok(())
                        }
                    };
                    if written.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (addr, hits)
}

async fn huge_answer(s: &mut TcpStream, n: usize) -> std::io::Result<()> {
    s.write_all(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
    )
    .await?;
    let chunk = |data: &[u8]| {
        let mut c = format!("{:x}\r\n", data.len()).into_bytes();
        c.extend_from_slice(data);
        c.extend_from_slice(b"\r\n");
        c
    };
    s.write_all(&chunk(br#"{"token":""#)).await?;
    let block = vec![b'a'; 1 << 20];
    for _ in 0..n >> 20 {
        s.write_all(&chunk(&block)).await?;
    }
    s.write_all(&chunk(
        br#"","status":"holding","created":true,"bindingKey":"k"}"#,
    ))
    .await?;
    s.write_all(b"0\r\n\r\n").await
}

fn client(hubs: &[SocketAddr], home: &std::path::Path) -> HubClient {
    HubClient::new(&Config {
        hubs: hubs.iter().map(|a| format!("http://{a}")).collect(),
        secret: SecretSource::Given("0123456789abcdef0123456789abcdef".into()),
        home: home.to_owned(),
        usual_home: home.to_owned(),
        host_ip: "127.0.0.1".into(),
        host_name: None,
        max_wait: Default::default(),
        tool_timeout: None,
        hub_bin: None,
        autostart: false,
        poll_hold: Duration::from_secs(1),
        share_changes: false,
    })
}

fn who() -> InitRequest {
    InitRequest {
        cursor_title: "t".into(),
        workspace: "/w".into(),
        host_ip: "127.0.0.1".into(),
        host_name: None,
        new_plan: false,
        plan_label: None,
        thread_id: None,
    }
}

#[tokio::test]
async fn a_redirect_is_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let (elsewhere, hits_elsewhere) = fake_hub("127.0.0.2", Behaviour::Fine).await;
    let (hub, hits) = fake_hub("127.0.0.1", Behaviour::Redirect(elsewhere)).await;
    let answer = client(&[hub], dir.path()).init(who()).await;
    assert!(
        matches!(answer, Err(HubError::Api { status: 307, .. })),
        "{answer:?}"
    );
    assert_eq!(hits.load(Ordering::SeqCst), 1);
    assert_eq!(
        hits_elsewhere.load(Ordering::SeqCst),
        0,
        "the agent's message went to the redirect's host"
    );
}

#[tokio::test]
async fn an_answer_past_the_cap_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (hub, _) = fake_hub("127.0.0.1", Behaviour::Huge(MAX_ANSWER + (8 << 20))).await;
    let answer = client(&[hub], dir.path()).init(who()).await;
    match answer {
        Err(HubError::BadAnswer { detail, .. }) => {
            assert!(detail.contains("larger than"), "{detail}")
        }
        other => panic!(
            "a {} MiB answer was read: {:?}",
            (MAX_ANSWER >> 20) + 8,
            other.map(|a| a.token.len())
        ),
    }
    // Within the cap: read.
    let (hub, _) = fake_hub("127.0.0.1", Behaviour::Huge(4 << 20)).await;
    let answer = client(&[hub], dir.path()).init(who()).await.unwrap();
    assert_eq!(answer.token.len(), 4 << 20);
}

#[tokio::test]
async fn a_call_ends_within_its_time_limit_across_every_hub() {
    let dir = tempfile::tempdir().unwrap();
    let (a, _) = fake_hub("127.0.0.1", Behaviour::Stall).await;
    let (b, _) = fake_hub("127.0.0.1", Behaviour::Stall).await;
    let limit = Duration::from_secs(3);
    let started = Instant::now();
    let request = RegisterRequest {
        token: "ct_0123456789abcdef0123456789abcdef".into(),
        message: "done".into(),
        cursor_title: "t".into(),
        workspace: "/w".into(),
        host_ip: "127.0.0.1".into(),
        request_id: "rq_1".into(),
        completion_pct: None,
        next_step: None,
        options: vec![],
        multi_select: false,
        host_name: None,
        attachments: vec![],
        changes: None,
        origin: Default::default(),
    };
    let answer = client(&[a, b], dir.path())
        .register(request, Some(limit))
        .await;
    let took = started.elapsed();
    assert!(
        matches!(answer, Err(HubError::Unreachable { .. })),
        "{answer:?}"
    );
    // Two stalled hubs: before, each got the whole limit (6 s).
    assert!(
        took < limit + Duration::from_secs(2),
        "the call took {took:?} with a {limit:?} limit"
    );
}
