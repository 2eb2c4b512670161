//! Who may call: every API route needs the secret (or a login), the login's cookie and
//! its rate limit, foreign hosts and origins refused.

use super::*;

#[tokio::test]
async fn every_api_route_needs_the_secret() {
    let hub = TestHub::start().await;
    let token = hub.init("t").await;
    let plain = reqwest::Client::new();
    let posts = [
        "/api/init",
        "/api/select",
        "/api/wait/register",
        "/api/wait/poll",
        "/api/wait/ack",
        "/api/wait/cancel",
        "/api/merge",
        "/api/session/config",
        "/api/reply",
        "/api/import",
        "/api/logout",
        "/api/logout/everywhere",
    ];
    for path in posts {
        for auth in [None, Some("Bearer wrong-secret-wrong-secret")] {
            let mut req = plain.post(format!("{}{path}", hub.url)).json(&json!({}));
            if let Some(a) = auth {
                req = req.header("authorization", a);
            }
            let res = req.send().await.unwrap();
            assert_eq!(res.status(), StatusCode::UNAUTHORIZED, "{path}");
            let v: Value = res.json().await.unwrap();
            assert_eq!(error_code(&v), "UNAUTHORIZED");
        }
    }
    for path in [
        "/api/sessions".to_owned(),
        format!("/api/sessions/{token}"),
        "/api/events".into(),
        "/api/templates".into(),
        "/api/export".into(),
        "/api/whoami".into(),
    ] {
        let res = plain
            .get(format!("{}{path}", hub.url))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::UNAUTHORIZED, "{path}");
    }
    // The panel's files are public; the healthz is public.
    assert_eq!(
        plain
            .get(format!("{}/", hub.url))
            .send()
            .await
            .unwrap()
            .status(),
        StatusCode::OK
    );
    assert_eq!(
        plain
            .get(format!("{}{}", hub.url, holdline_contract::routes::HEALTHZ))
            .send()
            .await
            .unwrap()
            .status(),
        StatusCode::OK
    );
}

#[tokio::test]
async fn login_trades_the_key_for_a_strict_cookie_and_is_rate_limited() {
    let hub = TestHub::start().await;
    let plain = reqwest::Client::new();
    let res = plain
        .post(format!("{}/api/login", hub.url))
        .json(&json!({"key": hub.secret}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let cookie = res.headers()["set-cookie"].to_str().unwrap().to_owned();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    assert!(
        !cookie.contains(&hub.secret),
        "the cookie is not the secret itself"
    );
    let pair = cookie.split(';').next().unwrap();
    let res = plain
        .get(format!("{}/api/sessions", hub.url))
        .header("cookie", pair)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);

    for _ in 0..10 {
        let res = plain
            .post(format!("{}/api/login", hub.url))
            .json(&json!({"key": "nope"}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    }
    let res = plain
        .post(format!("{}/api/login", hub.url))
        .json(&json!({"key": "nope"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS);
    let v: Value = res.json().await.unwrap();
    assert_eq!(error_code(&v), "RATE_LIMITED");
    // The right key still gets in (finding L7 in docs/security.md): failures cannot lock the person out.
    let res = plain
        .post(format!("{}/api/login", hub.url))
        .json(&json!({"key": hub.secret}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
}

#[tokio::test]
async fn foreign_hosts_and_origins_are_refused() {
    let hub = TestHub::start().await;
    let port = hub.url.rsplit(':').next().unwrap().to_owned();
    let send = |host: Option<String>, origin: Option<String>| {
        let mut req = hub
            .http
            .get(format!("{}/api/sessions", hub.url))
            .bearer_auth(&hub.secret);
        if let Some(h) = host {
            req = req.header("host", h);
        }
        if let Some(o) = origin {
            req = req.header("origin", o);
        }
        req.send()
    };
    // DNS rebinding: a name that is not ours.
    let res = send(Some(format!("evil.example:{port}")), None)
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    let v: Value = res.json().await.unwrap();
    assert_eq!(error_code(&v), "FORBIDDEN");
    // A page on another origin.
    let res = send(None, Some("http://evil.example".into()))
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    // Our own origin, localhost and IP names are fine.
    let res = send(None, Some(hub.url.clone())).await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let res = send(Some(format!("localhost:{port}")), None).await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
}
