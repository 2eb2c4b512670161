//! The panel's login, spoken to over real HTTP against the real hub (review
//! findings M1 and L7 in docs/security.md): each login is its own random, revocable id that
//! survives a restart; logout and "log out everywhere" revoke, also across
//! restarts; the right key always gets in; login bodies are small.

use std::time::Duration;

use crate::realhub::{RealHub, free_addr};
use reqwest::header::{COOKIE, SET_COOKIE};
use serde_json::json;

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
}

fn base(hub: &RealHub) -> String {
    format!("http://{}", hub.addr)
}

/// Logs in with `key`: the status and the whole `Set-Cookie` value.
async fn login(hub: &RealHub, key: &str) -> (u16, Option<String>) {
    let res = client()
        .post(format!("{}/api/login", base(hub)))
        .json(&json!({ "key": key }))
        .send()
        .await
        .unwrap();
    let cookie = res
        .headers()
        .get(SET_COOKIE)
        .map(|v| v.to_str().unwrap().to_owned());
    (res.status().as_u16(), cookie)
}

/// The `name=value` pair of a `Set-Cookie` value.
fn pair(set_cookie: &str) -> String {
    set_cookie.split(';').next().unwrap().to_owned()
}

/// The status of `whoami` with this cookie pair.
async fn whoami(hub: &RealHub, pair: &str) -> u16 {
    client()
        .get(format!("{}/api/whoami", base(hub)))
        .header(COOKIE, pair)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

async fn post_with_cookie(hub: &RealHub, path: &str, pair: &str) -> u16 {
    client()
        .post(format!("{}{path}", base(hub)))
        .header(COOKIE, pair)
        .json(&json!({}))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test]
async fn each_login_is_a_revocable_id_that_outlives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("h");
    let mut hub = RealHub::start(&home, free_addr()).await;
    let secret = hub.api.secret.clone();

    let (status, laptop) = login(&hub, &secret).await;
    assert_eq!(status, 200);
    let laptop = laptop.expect("a login sets the cookie");
    let (_, phone) = login(&hub, &secret).await;
    let phone = phone.unwrap();
    assert!(laptop.starts_with("holdline_session="), "{laptop}");
    assert!(laptop.contains("HttpOnly") && laptop.contains("SameSite=Strict"));
    assert!(laptop.contains("Path=/") && !laptop.contains("Domain"));
    assert!(laptop.contains("Max-Age=2592000"), "30 days: {laptop}");
    let (laptop, phone) = (pair(&laptop), pair(&phone));
    assert_ne!(laptop, phone, "every login gets its own id");
    assert!(!laptop.contains(&secret));
    assert_eq!(whoami(&hub, &laptop).await, 200);
    assert_eq!(whoami(&hub, "holdline_session=0000").await, 401);

    // A restart keeps both logged in.
    hub.stop();
    hub.restart().await;
    assert_eq!(whoami(&hub, &laptop).await, 200);
    assert_eq!(whoami(&hub, &phone).await, 200);

    // Logging in again from a browser replaces its login: the old id ends.
    let again = client()
        .post(format!("{}/api/login", base(&hub)))
        .header(COOKIE, &laptop)
        .json(&json!({ "key": secret }))
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 200);
    let renewed = pair(again.headers()[SET_COOKIE].to_str().unwrap());
    assert_eq!(whoami(&hub, &laptop).await, 401, "the replaced id is dead");
    assert_eq!(whoami(&hub, &renewed).await, 200);
    let laptop = renewed;

    // Logout revokes that login, not the other.
    assert_eq!(post_with_cookie(&hub, "/api/logout", &laptop).await, 200);
    assert_eq!(
        whoami(&hub, &laptop).await,
        401,
        "a logged-out cookie is dead"
    );
    assert_eq!(whoami(&hub, &phone).await, 200);

    // Logging out everywhere ends every login, for good.
    let (_, tablet) = login(&hub, &secret).await;
    let tablet = pair(&tablet.unwrap());
    assert_eq!(
        post_with_cookie(&hub, "/api/logout/everywhere", &phone).await,
        200
    );
    assert_eq!(whoami(&hub, &phone).await, 401);
    assert_eq!(whoami(&hub, &tablet).await, 401);
    hub.kill();
    hub.restart().await;
    assert_eq!(
        whoami(&hub, &phone).await,
        401,
        "revocation survives a restart"
    );
    assert_eq!(whoami(&hub, &tablet).await, 401);
    assert_eq!(whoami(&hub, &laptop).await, 401);
}

#[tokio::test]
async fn the_right_key_gets_in_after_failed_logins() {
    let dir = tempfile::tempdir().unwrap();
    let hub = RealHub::start(&dir.path().join("h"), free_addr()).await;
    for _ in 0..12 {
        login(&hub, "wrong-key-wrong-key").await;
    }
    assert_eq!(login(&hub, "wrong-key-wrong-key").await.0, 429);
    let (status, cookie) = login(&hub, &hub.api.secret).await;
    assert_eq!(status, 200, "the person is not locked out");
    assert_eq!(whoami(&hub, &pair(&cookie.unwrap())).await, 200);
    assert_eq!(
        login(&hub, "wrong-key-wrong-key").await.0,
        429,
        "failures stay limited"
    );
}

#[tokio::test]
async fn a_login_body_is_a_few_kib() {
    let dir = tempfile::tempdir().unwrap();
    let hub = RealHub::start(&dir.path().join("h"), free_addr()).await;
    let (status, _) = login(&hub, &"k".repeat(8 * 1024)).await;
    assert_eq!(status, 413);
}
