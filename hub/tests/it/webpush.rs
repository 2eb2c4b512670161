//! Web Push (docs/operations.md "Web Push"): a browser subscribes through the
//! person's routes, and a wait that lasts `after_sec` reaches it once as a
//! push a FAKE PUSH SERVICE on loopback decrypts with the browser's own keys
//! (RFC 8291, by hand here, not with the hub's code) and whose VAPID header
//! (RFC 8292) verifies. Real hub, real HTTP.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aes_gcm::aead::{Aead, KeyInit};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use holdline_core::config::notify::{NotifyConfig, WebPush};
use p256::ecdsa::signature::Verifier as _;
use p256::elliptic_curve::sec1::ToEncodedPoint as _;
use serde_json::{Value, json};

use crate::inproc::{Options, TestHub};
use crate::notify::hold;

const WAIT: Duration = Duration::from_secs(10);

/// One push the fake service received.
#[derive(Debug, Clone)]
struct Push {
    path: String,
    header: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Push {
    fn header(&self, name: &str) -> &str {
        self.header
            .iter()
            .find(|(n, _)| n == name)
            .map_or("", |(_, v)| v.as_str())
    }
}

#[derive(Default)]
struct Inner {
    pushes: Vec<Push>,
    /// Statuses to answer next, per path (then 201).
    answers: Vec<(String, VecDeque<u16>)>,
}

/// A push service on loopback.
#[derive(Clone)]
struct PushService {
    url: String,
    inner: Arc<Mutex<Inner>>,
}

impl PushService {
    async fn start() -> PushService {
        let inner = Arc::new(Mutex::new(Inner::default()));
        let app = Router::new().fallback(take).with_state(inner.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        PushService { url, inner }
    }

    fn answer(&self, path: &str, statuses: &[u16]) {
        self.inner
            .lock()
            .unwrap()
            .answers
            .push((path.to_owned(), statuses.iter().copied().collect()));
    }

    fn pushes(&self, path: &str) -> Vec<Push> {
        let g = self.inner.lock().unwrap();
        g.pushes
            .iter()
            .filter(|p| p.path == path)
            .cloned()
            .collect()
    }

    async fn wait_for(&self, path: &str, n: usize, within: Duration) -> Vec<Push> {
        let until = Instant::now() + within;
        loop {
            let seen = self.pushes(path);
            if seen.len() >= n || Instant::now() > until {
                return seen;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

async fn take(State(inner): State<Arc<Mutex<Inner>>>, req: Request) -> axum::response::Response {
    let path = req.uri().path().to_owned();
    let header = req
        .headers()
        .iter()
        .map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
        .collect();
    let body: Bytes = axum::body::to_bytes(req.into_body(), 1 << 20)
        .await
        .unwrap_or_default();
    let mut g = inner.lock().unwrap();
    g.pushes.push(Push {
        path: path.clone(),
        header,
        body: body.to_vec(),
    });
    let status = g
        .answers
        .iter_mut()
        .find(|(p, q)| *p == path && !q.is_empty())
        .and_then(|(_, q)| q.pop_front())
        .unwrap_or(201);
    (StatusCode::from_u16(status).unwrap(), "").into_response()
}

/// A browser's side of a subscription: its own keys, able to read its pushes.
pub(crate) struct Browser {
    endpoint: String,
    secret: p256::SecretKey,
    auth: [u8; 16],
}

impl Browser {
    pub(crate) fn new(endpoint: String) -> Browser {
        let mut auth = [0u8; 16];
        getrandom::fill(&mut auth).unwrap();
        let mut scalar = [0u8; 32];
        let secret = loop {
            getrandom::fill(&mut scalar).unwrap();
            if let Ok(s) = p256::SecretKey::from_slice(&scalar) {
                break s;
            }
        };
        Browser {
            endpoint,
            secret,
            auth,
        }
    }

    fn public(&self) -> Vec<u8> {
        self.secret
            .public_key()
            .to_encoded_point(false)
            .as_bytes()
            .to_vec()
    }

    /// `PushSubscription.toJSON()`.
    pub(crate) fn json(&self) -> Value {
        json!({
            "endpoint": self.endpoint,
            "expirationTime": null,
            "keys": {"p256dh": URL_SAFE_NO_PAD.encode(self.public()), "auth": URL_SAFE_NO_PAD.encode(self.auth)},
        })
    }

    /// RFC 8291 §3.4 and RFC 8188 §2, from the receiving side.
    fn decrypt(&self, body: &[u8]) -> Vec<u8> {
        use hkdf::Hkdf;
        use sha2::Sha256;
        let salt = &body[..16];
        let rs = u32::from_be_bytes(body[16..20].try_into().unwrap());
        let idlen = body[20] as usize;
        let as_public = &body[21..21 + idlen];
        let ciphertext = &body[21 + idlen..];
        assert_eq!(idlen, 65, "the key id is the sender's P-256 point");
        assert!(ciphertext.len() <= rs as usize, "one record");
        assert!(body.len() <= 4096, "a push service takes 4096 bytes");
        let shared = p256::ecdh::diffie_hellman(
            self.secret.to_nonzero_scalar(),
            p256::PublicKey::from_sec1_bytes(as_public)
                .unwrap()
                .as_affine(),
        );
        let mut info = b"WebPush: info\0".to_vec();
        info.extend_from_slice(&self.public());
        info.extend_from_slice(as_public);
        let mut ikm = [0u8; 32];
        Hkdf::<Sha256>::new(Some(&self.auth), shared.raw_secret_bytes().as_slice())
            .expand(&info, &mut ikm)
            .unwrap();
        let prk = Hkdf::<Sha256>::new(Some(salt), &ikm);
        let (mut cek, mut nonce) = ([0u8; 16], [0u8; 12]);
        prk.expand(b"Content-Encoding: aes128gcm\0", &mut cek)
            .unwrap();
        prk.expand(b"Content-Encoding: nonce\0", &mut nonce)
            .unwrap();
        let mut plain = aes_gcm::Aes128Gcm::new_from_slice(&cek)
            .unwrap()
            .decrypt(aes_gcm::Nonce::from_slice(&nonce), ciphertext)
            .expect("the push decrypts with the browser's keys");
        while plain.last() == Some(&0) {
            plain.pop();
        }
        assert_eq!(plain.pop(), Some(2), "the last record's delimiter");
        plain
    }

    fn read(&self, push: &Push) -> Value {
        serde_json::from_slice(&self.decrypt(&push.body)).unwrap()
    }
}

/// Checks a push's VAPID header against the hub's public key and the
/// service's origin; answers its `sub`.
fn check_vapid(push: &Push, public_key: &str, origin: &str) -> String {
    let rest = push
        .header("authorization")
        .strip_prefix("vapid t=")
        .unwrap();
    let (jwt, k) = rest.split_once(", k=").unwrap();
    assert_eq!(k, public_key);
    let (input, sig) = jwt.rsplit_once('.').unwrap();
    let vk =
        p256::ecdsa::VerifyingKey::from_sec1_bytes(&URL_SAFE_NO_PAD.decode(k).unwrap()).unwrap();
    let sig = p256::ecdsa::Signature::from_slice(&URL_SAFE_NO_PAD.decode(sig).unwrap()).unwrap();
    vk.verify(input.as_bytes(), &sig)
        .expect("the VAPID JWT verifies");
    let claims: Value = serde_json::from_slice(
        &URL_SAFE_NO_PAD
            .decode(input.split_once('.').unwrap().1)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(claims["aud"], origin);
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let exp = claims["exp"].as_i64().unwrap();
    assert!(exp > now && exp <= now + 24 * 3600, "exp {exp}");
    claims["sub"].as_str().unwrap().to_owned()
}

async fn hub_with_push(after_sec: u64, include_text: bool) -> TestHub {
    TestHub::start_with(Options {
        notify: Some(NotifyConfig {
            after: Duration::from_secs(after_sec),
            include_text,
            webpush: Some(WebPush { subject: None }),
            ..NotifyConfig::default()
        }),
        ..Options::default()
    })
    .await
}

async fn subscribe(hub: &TestHub, browser: &Browser) {
    let (status, v) = hub.post("/api/push/subscriptions", browser.json()).await;
    assert_eq!(status, StatusCode::CREATED, "{v}");
}

#[tokio::test]
async fn a_waiting_question_is_pushed_once_after_after_sec_encrypted_and_signed() {
    let service = PushService::start().await;
    let hub = hub_with_push(1, true).await;
    let key = hub.get("/api/push/key").await.1;
    let public_key = key["publicKey"].as_str().unwrap().to_owned();
    assert_eq!(URL_SAFE_NO_PAD.decode(&public_key).unwrap().len(), 65);
    assert_eq!(key["enabled"], true);
    let phone = Browser::new(format!("{}/push/phone", service.url));
    subscribe(&hub, &phone).await;
    let asked = hub
        .get(&format!("/api/push/key?endpoint={}", phone.endpoint))
        .await
        .1;
    assert_eq!(asked["subscribed"], true, "{asked}");

    let token = hub.init("Refactor the parser").await;
    let started = Instant::now();
    let wait = hub
        .register(
            &token,
            "Refactor the parser",
            "Shall I **open a PR**?",
            "q1",
        )
        .await;
    let pushes = service.wait_for("/push/phone", 1, WAIT).await;
    assert_eq!(pushes.len(), 1);
    assert!(
        started.elapsed() >= Duration::from_millis(950),
        "pushed before after_sec: {:?}",
        started.elapsed()
    );
    hold(&hub, &token, &wait, Duration::from_millis(1500)).await;
    assert_eq!(service.pushes("/push/phone").len(), 1, "once per question");

    let push = &pushes[0];
    let payload = phone.read(push);
    assert_eq!(payload["token"], token.as_str());
    assert_eq!(payload["url"], format!("/#session={token}"));
    assert_eq!(payload["body"], "Shall I open a PR?");
    assert!(
        payload["title"]
            .as_str()
            .unwrap()
            .contains("Refactor the parser"),
        "{payload}"
    );
    assert_eq!(push.header("content-encoding"), "aes128gcm");
    assert_eq!(push.header("urgency"), "high");
    assert!(push.header("ttl").parse::<u64>().unwrap() > 0);
    let sub = check_vapid(push, &public_key, &service.url);
    assert!(sub.starts_with("mailto:"), "{sub}");

    let health = hub.health().await;
    let channel = &health["notify"][0];
    assert_eq!(channel["name"], "webpush", "{health}");
    assert_eq!(channel["state"], "ok", "{health}");
    assert_eq!(channel["sent"], 1, "{health}");
}

/// With no browser subscribed there is nobody to tell: the channel stays
/// idle, counts no failure and names no error (no "!" or "failing" in the panel).
#[tokio::test]
async fn with_nobody_subscribed_the_channel_is_idle_not_failing() {
    let hub = hub_with_push(0, true).await;
    let token = hub.init("Nobody listens").await;
    let wait = hub
        .register(&token, "Nobody listens", "Anyone there?", "q1")
        .await;
    // after_sec = 0: the watcher had this question to tell at once.
    hold(&hub, &token, &wait, Duration::from_millis(1500)).await;
    let health = hub.health().await;
    let channel = &health["notify"][0];
    assert_eq!(channel["name"], "webpush", "{health}");
    assert_eq!(channel["state"], "idle", "{health}");
    assert_eq!(channel["failed"], 0, "{health}");
    assert!(channel.get("lastError").is_none(), "{health}");
}

#[tokio::test]
async fn include_text_false_pushes_the_title_only() {
    let service = PushService::start().await;
    let hub = hub_with_push(0, false).await;
    let phone = Browser::new(format!("{}/push/quiet", service.url));
    subscribe(&hub, &phone).await;
    let token = hub.init("Secret project").await;
    hub.register(&token, "Secret project", "the launch code is 1234", "q1")
        .await;
    let pushes = service.wait_for("/push/quiet", 1, WAIT).await;
    assert_eq!(pushes.len(), 1);
    let payload = phone.read(&pushes[0]);
    assert!(payload.get("body").is_none(), "{payload}");
    assert!(!payload.to_string().contains("1234"), "{payload}");
    assert_eq!(payload["token"], token.as_str());
}

#[tokio::test]
async fn a_gone_subscription_is_dropped_and_a_failing_one_is_retried() {
    let service = PushService::start().await;
    let hub = hub_with_push(0, true).await;
    let gone = Browser::new(format!("{}/push/gone", service.url));
    let flaky = Browser::new(format!("{}/push/flaky", service.url));
    subscribe(&hub, &gone).await;
    subscribe(&hub, &flaky).await;
    service.answer("/push/gone", &[410]);
    service.answer("/push/flaky", &[500]);

    let first = hub.init("first").await;
    hub.register(&first, "first", "one?", "q1").await;
    let tries = service.wait_for("/push/flaky", 2, WAIT).await;
    assert_eq!(tries.len(), 2, "a 500 is tried again");
    assert_eq!(flaky.read(&tries[1])["body"], "one?");
    assert_eq!(
        service.pushes("/push/gone").len(),
        1,
        "a 410 is not retried, and the browser that took it is not pushed again"
    );
    let asked = hub
        .get(&format!("/api/push/key?endpoint={}", gone.endpoint))
        .await
        .1;
    assert_eq!(asked["subscribed"], false, "a 410 drops the subscription");
    assert_eq!(asked["subscriptions"], 1);

    let second = hub.init("second").await;
    hub.register(&second, "second", "two?", "q1").await;
    let pushed = service.wait_for("/push/flaky", 3, WAIT).await;
    assert_eq!(flaky.read(&pushed[2])["body"], "two?");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        service.pushes("/push/gone").len(),
        1,
        "nothing more to a dropped one"
    );
    // Dropped for good: a restarted hub does not know it either.
    let dir = hub.stop().await.unwrap();
    let again = TestHub::start_at(dir.path(), Options::default()).await;
    let asked = again
        .get(&format!("/api/push/key?endpoint={}", gone.endpoint))
        .await
        .1;
    assert_eq!(asked["subscribed"], false);
    assert_eq!(asked["subscriptions"], 1);
    drop(dir);
}

#[tokio::test]
async fn subscriptions_are_checked_and_only_the_person_may_change_them() {
    let hub = hub_with_push(60, true).await;
    let phone = Browser::new("https://push.example.net/wpush/v2/abc".into());

    let mut bad = Vec::new();
    let mut lan = phone.json();
    lan["endpoint"] = json!("http://10.0.0.9/push/x");
    bad.push((lan, "https"));
    let mut named = phone.json();
    named["endpoint"] = json!("http://push.example.net/x");
    bad.push((named, "https"));
    let mut short = phone.json();
    short["keys"]["p256dh"] = json!("BAAA");
    bad.push((short, "p256dh"));
    let mut auth = phone.json();
    auth["keys"]["auth"] = json!(URL_SAFE_NO_PAD.encode([1u8; 15]));
    bad.push((auth, "auth"));
    bad.push((json!({"endpoint": "https://h/x"}), "keys"));
    for (body, word) in bad {
        let (status, v) = hub.post("/api/push/subscriptions", body.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {v}");
        assert_eq!(v["error"]["code"], "BAD_REQUEST");
        assert!(
            v["error"]["message"].as_str().unwrap().contains(word),
            "{body}: {v}"
        );
    }
    assert_eq!(hub.get("/api/push/key").await.1["subscriptions"], 0);

    // An agent key reaches none of the push routes.
    let key = hub.ok("/api/keys", json!({"name": "laptop"})).await["key"]
        .as_str()
        .unwrap()
        .to_owned();
    let as_agent = |m: reqwest::Method, path: &str| {
        hub.http
            .request(m, format!("{}{path}", hub.url))
            .bearer_auth(&key)
            .json(&phone.json())
    };
    for (m, path) in [
        (reqwest::Method::GET, "/api/push/key"),
        (reqwest::Method::POST, "/api/push/subscriptions"),
        (reqwest::Method::DELETE, "/api/push/subscriptions"),
        (reqwest::Method::POST, "/api/push/test"),
    ] {
        let res = as_agent(m.clone(), path).send().await.unwrap();
        assert!(
            res.status() == StatusCode::FORBIDDEN,
            "{m} {path} with an agent key: {}",
            res.status()
        );
    }
    assert_eq!(hub.get("/api/push/key").await.1["subscriptions"], 0);

    // The person subscribes; the same endpoint again replaces; unsubscribing removes.
    subscribe(&hub, &phone).await;
    let renewed = Browser::new(phone.endpoint.clone());
    subscribe(&hub, &renewed).await;
    assert_eq!(hub.get("/api/push/key").await.1["subscriptions"], 1);
    let res = hub
        .http
        .delete(format!("{}/api/push/subscriptions", hub.url))
        .bearer_auth(&hub.secret)
        .json(&json!({"endpoint": phone.endpoint}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.json::<Value>().await.unwrap()["removed"], true);
    assert_eq!(hub.get("/api/push/key").await.1["subscriptions"], 0);
}

#[tokio::test]
async fn a_test_push_reaches_every_browser_or_says_none_is_subscribed() {
    let service = PushService::start().await;
    let hub = hub_with_push(60, true).await;
    let (_, none) = hub.post("/api/push/test", json!({})).await;
    assert_eq!(none["sent"], false);
    assert!(
        none["error"].as_str().unwrap().contains("no browser"),
        "{none}"
    );
    let phone = Browser::new(format!("{}/push/test", service.url));
    subscribe(&hub, &phone).await;
    let (status, v) = hub.post("/api/push/test", json!({})).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(v["sent"], true, "{v}");
    let pushes = service.wait_for("/push/test", 1, WAIT).await;
    let payload = phone.read(&pushes[0]);
    assert!(payload["body"].as_str().unwrap().contains("Web Push works"));
}

/// The fake browser's decryption is checked against the standard itself: it
/// reads RFC 8291's example body back to the example's plaintext.
#[test]
fn the_fake_browser_reads_the_rfc_8291_example() {
    let d = |s: &str| URL_SAFE_NO_PAD.decode(s).unwrap();
    let browser = Browser {
        endpoint: String::new(),
        secret: p256::SecretKey::from_slice(&d("q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94"))
            .unwrap(),
        auth: d("BTBZMqHH6r4Tts7J_aSIgg").try_into().unwrap(),
    };
    let body = d(
        "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN",
    );
    assert_eq!(
        browser.decrypt(&body),
        b"When I grow up, I want to be a watermelon"
    );
}

/// `holdline-hub notify test` asks the running hub for the Web Push test
/// (the subscriptions are in its store), and names the channel's result.
#[tokio::test]
async fn notify_test_sends_a_test_push_through_the_running_hub() {
    use crate::realhub::{RealHub, free_addr, run_cli};
    let service = PushService::start().await;
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join("config.toml"),
        "[notify.webpush]\nenabled = true\nsubject = \"mailto:ops@example.org\"\n",
    )
    .unwrap();
    let cli = |home: std::path::PathBuf| async move {
        let out = tokio::task::spawn_blocking(move || run_cli(&home, &["notify", "test"]))
            .await
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), text)
    };
    let hub = RealHub::start(&home, free_addr()).await;
    let (ok, text) = cli(home.clone()).await;
    assert!(
        !ok && text.contains("webpush: FAILED: no browser is subscribed"),
        "{text}"
    );

    let phone = Browser::new(format!("{}/push/cli", service.url));
    let (status, v) = hub
        .api
        .post("/api/push/subscriptions", &phone.json())
        .await
        .unwrap();
    assert_eq!(status, 201, "{v}");
    let (ok, text) = cli(home.clone()).await;
    assert!(ok && text.contains("webpush: sent"), "{text}");
    let pushes = service.wait_for("/push/cli", 1, WAIT).await;
    assert!(
        phone.read(&pushes[0])["body"]
            .as_str()
            .unwrap()
            .contains("Web Push works")
    );
    let (_, key) = hub.api.get("/api/push/key").await.unwrap();
    let sub = check_vapid(&pushes[0], key["publicKey"].as_str().unwrap(), &service.url);
    assert_eq!(sub, "mailto:ops@example.org");
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(home.join("vapid-key"))
            .unwrap()
            .permissions(),
    );
    assert_eq!(mode & 0o777, 0o600, "the VAPID key is the owner's alone");
    drop(hub);
}
