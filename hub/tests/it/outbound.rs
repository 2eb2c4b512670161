//! Outbound requests (SPEC §8): a webhook or a browser's push service that
//! answers with a redirect is not followed (the address it names is never
//! reached), and what a service answers in its body reaches none of what the
//! person's API, `/healthz` or the hub's log show. The real `holdline-hub`
//! binary, real HTTP, local services that answer as a hostile one would.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use serde_json::json;

use crate::realhub::{RealHub, free_addr};
use crate::webpush::Browser;

/// What the hostile services answer in their bodies: it must be read back nowhere.
const MARKER: &str = "INTERNAL-SECRET-7f3a9c";

/// A local service answering every request with `status`, `location` and a body
/// holding [`MARKER`]; counts what it was sent.
async fn service(status: u16, location: Option<String>) -> (String, Arc<AtomicUsize>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = hits.clone();
    let app = Router::new().fallback(move || {
        let hits = counted.clone();
        let location = location.clone();
        async move {
            hits.fetch_add(1, Ordering::SeqCst);
            let mut res = (
                StatusCode::from_u16(status).unwrap(),
                format!("{{\"admin\":\"{MARKER}\",\"description\":\"{MARKER}\",\"errmsg\":\"{MARKER}\",\"code\":93000}}"),
            )
                .into_response();
            if let Some(l) = location {
                res.headers_mut()
                    .insert(header::LOCATION, l.parse().unwrap());
            }
            res
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, hits)
}

/// Until `f` holds or `within` passes.
async fn until(within: Duration, mut f: impl AsyncFnMut() -> bool) -> bool {
    let end = Instant::now() + within;
    loop {
        if f().await {
            return true;
        }
        if Instant::now() > end {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn redirects_are_not_followed_and_no_answer_body_is_read_back() {
    // The address a redirect names: an internal service the hub must never reach.
    let (inside, inside_hits) = service(200, None).await;
    let (redirect, redirect_hits) = service(302, Some(format!("{inside}/admin"))).await;
    let (refusing, refusing_hits) = service(400, None).await;
    let (coded, _) = service(200, None).await;

    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join("config.toml"),
        format!(
            "[notify]\nafter_sec = 0\n\n[[notify.webhook]]\nurl = \"{redirect}/hook\"\nformat = \"json\"\n\n\
             [[notify.webhook]]\nurl = \"{refusing}/hook\"\nformat = \"json\"\n\n\
             [[notify.webhook]]\nurl = \"{coded}/hook\"\nformat = \"wecom\"\n\n[notify.webpush]\nenabled = true\n"
        ),
    )
    .unwrap();
    let hub = RealHub::start_logging(&home, free_addr()).await;

    // Two browsers whose push services redirect and refuse with a body.
    for endpoint in [format!("{redirect}/push/a"), format!("{refusing}/push/b")] {
        let (s, v) = hub
            .api
            .post("/api/push/subscriptions", &Browser::new(endpoint).json())
            .await
            .unwrap();
        assert_eq!(s, 201, "{v}");
    }
    let (s, test) = hub.api.post("/api/push/test", &json!({})).await.unwrap();
    assert_eq!(s, 200, "{test}");
    assert_eq!(test["sent"], false, "{test}");
    let said = test["error"].as_str().unwrap_or_default();
    assert!(!said.contains(MARKER), "the push service's body: {test}");
    assert!(said.contains("400") || said.contains("302"), "{test}");

    // A waiting question goes to every channel.
    let t = hub
        .api
        .ok(
            "/api/init",
            &json!({"cursorTitle": "c", "workspace": "/w", "hostIp": "10.0.0.1"}),
        )
        .await["token"]
        .as_str()
        .unwrap()
        .to_owned();
    hub.api
        .ok(
            "/api/wait/register",
            &json!({"token": t, "message": "ship?", "cursorTitle": "c", "workspace": "/w",
                    "hostIp": "10.0.0.1", "requestId": "q1"}),
        )
        .await;
    let all_failed = until(Duration::from_secs(10), async || {
        let (_, h) = hub
            .api
            .get(holdline_contract::routes::HEALTHZ)
            .await
            .unwrap();
        h["notify"].as_array().is_some_and(|c| {
            c.iter()
                .filter(|c| c["name"] != "webpush")
                .all(|c| c["state"] == "failing")
        })
    })
    .await;
    let (_, health) = hub
        .api
        .get(holdline_contract::routes::HEALTHZ)
        .await
        .unwrap();
    assert!(all_failed, "every webhook refused: {health}");
    assert!(redirect_hits.load(Ordering::SeqCst) >= 2);
    assert!(refusing_hits.load(Ordering::SeqCst) >= 2);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        inside_hits.load(Ordering::SeqCst),
        0,
        "a redirect was followed to the address it named"
    );
    assert!(!health.to_string().contains(MARKER), "{health}");
    let (_, bytes) = hub.api.get_bytes("/api/sessions").await.unwrap();
    assert!(!String::from_utf8_lossy(&bytes).contains(MARKER));
    let log = hub.stderr()
        + &std::fs::read_to_string(home.join("logs").join("hub.log")).unwrap_or_default();
    assert!(!log.contains(MARKER), "the log quotes a service's body");
    drop(hub);
}
