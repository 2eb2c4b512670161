//! Away from the desk (docs/operations.md): a wait that lasts `after_sec` without a
//! reply is told once to every channel (webhooks of each format, ntfy,
//! Telegram), and a Telegram reply answers it. Real hub, real HTTP, channels
//! faked by servers on loopback.

use crate::realhub;

use std::time::{Duration, Instant};

use crate::inproc::{Options, TestHub};
use crate::notifyfake::Fake;
use base64::Engine as _;
use holdline_core::config::notify::{Hidden, NotifyConfig, Ntfy, Telegram, Webhook, WebhookFormat};
use serde_json::{Value, json};

const FORMATS: [(WebhookFormat, &str); 6] = [
    (WebhookFormat::Json, "json"),
    (WebhookFormat::Slack, "slack"),
    (WebhookFormat::Discord, "discord"),
    (WebhookFormat::Feishu, "feishu"),
    (WebhookFormat::Wecom, "wecom"),
    (WebhookFormat::Dingtalk, "dingtalk"),
];
pub(crate) const BOT: &str = "123456:TEST-token_abc";
pub(crate) const CHAT: i64 = 111;
pub(crate) const WAIT: Duration = Duration::from_secs(10);

fn webhooks(fake: &Fake) -> Vec<Webhook> {
    FORMATS
        .iter()
        .map(|(format, name)| Webhook {
            url: Hidden(format!("{}/hook/{name}", fake.url)),
            format: *format,
        })
        .collect()
}

pub(crate) fn one_way(fake: &Fake, after_sec: u64) -> NotifyConfig {
    NotifyConfig {
        after: Duration::from_secs(after_sec),
        webhooks: webhooks(fake),
        ntfy: vec![Ntfy {
            url: Hidden(format!("{}/ntfy/phone-topic", fake.url)),
        }],
        ..NotifyConfig::default()
    }
}

pub(crate) fn telegram(fake: &Fake) -> NotifyConfig {
    NotifyConfig {
        after: Duration::ZERO,
        telegram: Some(Telegram {
            bot_token: Hidden(BOT.into()),
            chat_ids: vec![CHAT],
            user_ids: vec![],
            api_base: fake.url.clone(),
        }),
        ..NotifyConfig::default()
    }
}

pub(crate) async fn hub_with(notify: NotifyConfig) -> TestHub {
    TestHub::start_with(Options {
        notify: Some(notify),
        ..Options::default()
    })
    .await
}

/// Bodies of the requests under `prefix`.
pub(crate) fn bodies(fake: &Fake, prefix: &str) -> Vec<Value> {
    fake.seen(prefix).into_iter().map(|s| s.body).collect()
}

/// Keeps the agent's wait attended (renewals) for `d`.
pub(crate) async fn hold(hub: &TestHub, token: &str, wait: &str, d: Duration) {
    let until = Instant::now() + d;
    while Instant::now() < until {
        let v = hub.poll(token, wait, 300).await;
        assert_eq!(v["status"], "renewal", "{v}");
    }
}

#[tokio::test]
async fn a_wait_is_told_once_after_after_sec_in_every_format_and_its_end_follows() {
    let fake = Fake::start().await;
    let hub = hub_with(one_way(&fake, 1)).await;
    let token = hub.init("Refactor the parser").await;
    let started = Instant::now();
    let message = "## Done\n\nI split **parser.rs** in two. Shall I [open a PR](http://git/pr)?";
    let wait = hub
        .register(&token, "Refactor the parser", message, "q1")
        .await;

    let seen = fake.wait_for("/hook/", 6, WAIT).await;
    assert_eq!(seen.len(), 6, "every webhook is told");
    assert!(
        started.elapsed() >= Duration::from_millis(950),
        "told before after_sec: {:?}",
        started.elapsed()
    );
    assert_eq!(fake.wait_for("/ntfy/", 1, WAIT).await.len(), 1);

    // Renewals and a re-call of the same question tell nobody again.
    hold(&hub, &token, &wait, Duration::from_millis(1500)).await;
    let again = hub
        .register(&token, "Refactor the parser", message, "q1")
        .await;
    assert_eq!(again, wait);
    hold(&hub, &token, &wait, Duration::from_millis(1500)).await;
    assert_eq!(fake.seen("/hook/").len(), 6, "{}", fake.all_text());
    assert_eq!(fake.seen("/ntfy/").len(), 1);

    let plain = "Done\n\nI split parser.rs in two. Shall I open a PR (http://git/pr)?";
    let link = format!("http://{}/#session={token}", hub.name());
    let json = &bodies(&fake, "/hook/json")[0];
    assert_eq!(json["event"], "waiting");
    assert_eq!(json["token"], token.as_str());
    assert_eq!(json["title"], "Refactor the parser");
    assert_eq!(json["message"], plain);
    assert_eq!(json["url"], link);
    assert!(json["waitedSec"].as_u64().unwrap() >= 1);
    let text_of = |name: &str, pick: &dyn Fn(&Value) -> &Value| {
        let b = &bodies(&fake, &format!("/hook/{name}"))[0];
        pick(b)
            .as_str()
            .unwrap_or_else(|| panic!("{name}: {b}"))
            .to_owned()
    };
    for (name, text) in [
        ("slack", text_of("slack", &|b| &b["text"])),
        ("discord", text_of("discord", &|b| &b["content"])),
        ("feishu", text_of("feishu", &|b| &b["content"]["text"])),
        ("wecom", text_of("wecom", &|b| &b["text"]["content"])),
        ("dingtalk", text_of("dingtalk", &|b| &b["text"]["content"])),
    ] {
        assert!(
            text.contains("Refactor the parser is waiting"),
            "{name}: {text}"
        );
        assert!(text.contains(plain), "{name}: {text}");
        assert!(text.contains(&link), "{name}: {text}");
    }
    assert_eq!(bodies(&fake, "/hook/feishu")[0]["msg_type"], "text");
    assert_eq!(bodies(&fake, "/hook/wecom")[0]["msgtype"], "text");
    let ntfy = &fake.seen("/ntfy/")[0];
    assert_eq!(
        ntfy.path, "/ntfy/",
        "JSON publishing goes to the server root"
    );
    assert_eq!(ntfy.body["topic"], "phone-topic");
    assert!(
        ntfy.body["title"]
            .as_str()
            .unwrap()
            .contains("Refactor the parser")
    );
    assert_eq!(
        ntfy.body["message"].as_str().unwrap(),
        format!("{plain}\n\nOpen: {link}")
    );
    assert_eq!(ntfy.body["click"], link);

    // The person answers in the panel: every channel hears that it ended.
    hub.ok("/api/reply", json!({"token": token, "text": "yes"}))
        .await;
    let seen = fake.wait_for("/hook/", 12, WAIT).await;
    assert_eq!(seen.len(), 12);
    let ended = &bodies(&fake, "/hook/json")[1];
    assert_eq!(
        (&ended["event"], &ended["outcome"]),
        (&json!("ended"), &json!("answered"))
    );
    assert!(
        bodies(&fake, "/hook/slack")[1]["text"]
            .as_str()
            .unwrap()
            .contains("Answered")
    );
    assert_eq!(fake.wait_for("/ntfy/", 2, WAIT).await.len(), 2);
    assert!(
        !fake.all_text().contains(&hub.secret),
        "the secret went out"
    );
}

#[tokio::test]
async fn a_wait_answered_sooner_than_after_sec_is_never_told() {
    let fake = Fake::start().await;
    let hub = hub_with(one_way(&fake, 2)).await;
    let token = hub.init("quick").await;
    let wait = hub.register(&token, "quick", "ok?", "q1").await;
    hub.ok("/api/reply", json!({"token": token, "text": "yes"}))
        .await;
    let v = hub.poll(&token, &wait, 1000).await;
    assert_eq!(v["status"], "replied");
    hub.ok(
        "/api/wait/ack",
        json!({"token": token, "waitId": wait, "replyId": v["reply"]["id"]}),
    )
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        fake.all_text(),
        "",
        "nothing is sent for a wait answered in time"
    );
}

#[tokio::test]
async fn include_text_false_sends_title_and_link_but_no_word_of_the_agent() {
    let fake = Fake::start().await;
    let mut cfg = one_way(&fake, 0);
    cfg.include_text = false;
    cfg.panel_url = Some("http://192.168.1.20:13458/".into());
    let hub = hub_with(cfg).await;
    let token = hub.init("Billing service").await;
    let v = hub
        .ok(
            "/api/wait/register",
            json!({"token": token, "message": "the PRIVATE customer list is in dump.sql",
                   "cursorTitle": "Billing service", "workspace": "/w", "hostIp": "10.0.0.2",
                   "requestId": "q1", "completionPct": 80, "nextStep": "drop the PRIVATE table",
                   "options": [{"label": "PRIVATE rows", "description": "the PRIVATE ones"}]}),
        )
        .await;
    assert_eq!(v["status"], "waiting");
    assert_eq!(fake.wait_for("/hook/", 6, WAIT).await.len(), 6);
    assert_eq!(fake.wait_for("/ntfy/", 1, WAIT).await.len(), 1);
    let all = fake.all_text();
    assert!(!all.contains("PRIVATE"), "{all}");
    assert!(all.contains("Billing service"), "{all}");
    assert!(
        all.contains(&format!("http://192.168.1.20:13458/#session={token}")),
        "{all}"
    );
    assert_eq!(bodies(&fake, "/hook/json")[0]["message"], Value::Null);
    assert_eq!(bodies(&fake, "/hook/json")[0]["options"], json!([]));
}

#[tokio::test]
async fn a_refusing_channel_is_reported_once_a_failing_one_is_retried_and_healthz_shows_both() {
    let fake = Fake::start().await;
    fake.fail("/hook/json", &[400]);
    fake.fail("/hook/slack", &[503, 502]);
    let mut cfg = one_way(&fake, 0);
    cfg.webhooks.truncate(2);
    cfg.ntfy.clear();
    let hub = hub_with(cfg).await;
    let token = hub.init("t").await;
    hub.register(&token, "t", "?", "q1").await;

    // 1 s and 2 s of backoff, then the third try goes through.
    assert_eq!(fake.wait_for("/hook/slack", 3, WAIT).await.len(), 3);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(fake.seen("/hook/json").len(), 1, "a 4xx is not retried");

    let (_, health) = hub.get(holdline_contract::routes::HEALTHZ).await;
    let channels = health["notify"]
        .as_array()
        .expect("notify state with the secret");
    assert_eq!(channels[0]["name"], "webhook 1 (json)");
    assert_eq!(channels[0]["state"], "failing");
    assert!(
        channels[0]["lastError"].as_str().unwrap().contains("400"),
        "{health}"
    );
    assert_eq!(
        channels[0]["lastErrorHint"]["kind"], "badRequest",
        "{health}"
    );
    assert_eq!(channels[1]["state"], "ok");
    assert_eq!(channels[1]["sent"], 1);
    assert!(
        !health.to_string().contains(&fake.url),
        "a URL in /healthz: {health}"
    );

    let anonymous: Value = reqwest::get(format!("{}/healthz", hub.url))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(anonymous.get("notify").is_none(), "{anonymous}");
}

#[tokio::test]
async fn a_channel_nothing_listens_at_shows_what_to_fix_in_healthz() {
    let closed = realhub::free_addr();
    let hub = hub_with(NotifyConfig {
        after: Duration::ZERO,
        webhooks: vec![Webhook {
            url: Hidden(format!("http://{closed}/hook")),
            format: WebhookFormat::Json,
        }],
        ..NotifyConfig::default()
    })
    .await;
    let token = hub.init("t").await;
    hub.register(&token, "t", "?", "q1").await;
    let until = Instant::now() + WAIT;
    let channel = loop {
        let (_, health) = hub.get(holdline_contract::routes::HEALTHZ).await;
        let channel = health["notify"][0].clone();
        if channel.get("lastError").is_some() || Instant::now() > until {
            break channel;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let error = channel["lastError"].as_str().unwrap_or_default();
    assert!(error.contains("onnection refused"), "{channel}");
    assert_eq!(channel["lastErrorHint"]["kind"], "refused", "{channel}");
    let hint = channel["lastErrorHint"]["text"].as_str().unwrap();
    assert!(hint.contains("Nothing listens"), "{hint}");
    assert!(
        !hint.contains(&closed.to_string()),
        "a hint repeats no URL: {hint}"
    );
}

/// Waits until the fake has seen a `sendMessage` to `CHAT` carrying `needle`.
pub(crate) async fn notification(fake: &Fake, needle: &str) -> Value {
    let until = Instant::now() + WAIT;
    loop {
        let found = fake
            .seen(&format!("/bot{BOT}/sendMessage"))
            .into_iter()
            .find(|s| {
                s.body["chat_id"] == CHAT && s.body["text"].as_str().unwrap_or("").contains(needle)
            });
        if let Some(s) = found {
            return s.body;
        }
        assert!(
            Instant::now() < until,
            "no notification with {needle:?}: {}",
            fake.all_text()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The message id the fake gave the `n`th sendMessage (from 501).
pub(crate) fn message_id_of(fake: &Fake, body: &Value) -> i64 {
    let sends = fake.seen(&format!("/bot{BOT}/sendMessage"));
    let i = sends.iter().position(|s| &s.body == body).unwrap();
    501 + i as i64
}

pub(crate) async fn taken(fake: &Fake) {
    let until = Instant::now() + WAIT;
    while fake.untaken() > 0 {
        assert!(Instant::now() < until, "the hub does not take updates");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Taken means fetched; give the hub a moment to act on it.
    tokio::time::sleep(Duration::from_millis(200)).await;
}

#[tokio::test]
async fn a_telegram_reply_to_the_notification_answers_the_wait_and_others_are_ignored() {
    let fake = Fake::start().await;
    let hub = hub_with(telegram(&fake)).await;
    let token = hub.init("Deploy script").await;
    let wait = hub
        .register(&token, "Deploy script", "Deploy to staging now?", "q1")
        .await;
    let note = notification(&fake, "Deploy to staging now?").await;
    let buttons = &note["reply_markup"]["inline_keyboard"];
    assert_eq!(buttons[0][0]["text"], "继续", "{note}");
    let id = message_id_of(&fake, &note);

    // Another chat, a reply to an unknown message, and a plain message are ignored.
    fake.push_update(json!({"message": {"message_id": 9, "chat": {"id": 999},
        "text": "ship it", "reply_to_message": {"message_id": id}}}));
    fake.push_update(json!({"message": {"message_id": 10, "chat": {"id": CHAT},
        "text": "forged", "reply_to_message": {"message_id": 77777}}}));
    taken(&fake).await;
    assert_eq!(hub.session(&token).await["status"], "waiting");
    let sends = fake.seen(&format!("/bot{BOT}/sendMessage"));
    assert!(
        sends.iter().all(|s| s.body["chat_id"] != 999),
        "the other chat was answered"
    );

    // An update too large to read (5 MiB) is skipped, not retried forever.
    fake.push_update(json!({"message": {"message_id": 11, "chat": {"id": CHAT},
        "text": "y".repeat(5 << 20), "reply_to_message": {"message_id": id}}}));
    fake.push_update(json!({"message": {"message_id": 12, "chat": {"id": CHAT},
        "text": "yes, go", "reply_to_message": {"message_id": id}}}));
    let v = hub.poll(&token, &wait, 5000).await;
    assert_eq!(
        (v["status"].as_str(), v["reply"]["text"].as_str()),
        (Some("replied"), Some("yes, go")),
        "{v}"
    );

    // The panel shows where the reply was written.
    let session = hub.session(&token).await;
    let sent = session["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["content"] == "yes, go")
        .cloned()
        .unwrap();
    assert_eq!(sent["via"], "telegram", "{sent}");

    // The notification is edited: the phone shows no stale question.
    let edits = fake
        .wait_for(&format!("/bot{BOT}/editMessageText"), 1, WAIT)
        .await;
    assert_eq!(edits[0].body["message_id"], id);
    assert!(edits[0].body["text"].as_str().unwrap().contains("Answered"));
    hub.ok(
        "/api/wait/ack",
        json!({"token": token, "waitId": wait, "replyId": v["reply"]["id"]}),
    )
    .await;

    // A reply to that notification now, with no wait open: queued, and the person is told.
    fake.push_update(json!({"message": {"message_id": 13, "chat": {"id": CHAT},
        "text": "also: bump the version", "reply_to_message": {"message_id": id}}}));
    notification(&fake, "Queued").await;
    assert_eq!(hub.session(&token).await["queuedReplies"], 1);
    assert!(!fake.all_text().contains(&hub.secret));
}

#[tokio::test]
async fn a_telegram_photo_reply_reaches_the_agent_as_an_image_and_a_button_as_its_template() {
    let fake = Fake::start().await;
    let jpeg = [&[0xFF, 0xD8, 0xFF, 0xE0][..], &[7u8; 300][..]].concat();
    fake.set_file(jpeg.clone());
    let hub = hub_with(telegram(&fake)).await;
    let token = hub.init("UI work").await;
    let wait = hub
        .register(&token, "UI work", "Does the header look right?", "q1")
        .await;
    let note = notification(&fake, "header look right").await;
    let id = message_id_of(&fake, &note);
    fake.push_update(json!({"message": {"message_id": 20, "chat": {"id": CHAT},
        "caption": "too much padding", "reply_to_message": {"message_id": id},
        "photo": [
            {"file_id": "small", "width": 90, "height": 60, "file_size": 1000},
            {"file_id": "big", "width": 1280, "height": 853, "file_size": 300}]}}));
    let v = hub.poll(&token, &wait, 5000).await;
    assert_eq!(v["status"], "replied", "{v}");
    assert_eq!(v["reply"]["text"], "too much padding");
    assert_eq!(v["reply"]["images"][0]["mimeType"], "image/jpeg");
    let data = base64::engine::general_purpose::STANDARD
        .decode(v["reply"]["images"][0]["data"].as_str().unwrap())
        .unwrap();
    assert_eq!(data, jpeg);
    let files = fake.seen(&format!("/bot{BOT}/getFile"));
    assert_eq!(files[0].body["file_id"], "big");
    hub.ok(
        "/api/wait/ack",
        json!({"token": token, "waitId": wait, "replyId": v["reply"]["id"]}),
    )
    .await;

    // A quick-reply button answers with its template's text.
    let wait = hub
        .register(&token, "UI work", "And the footer?", "q2")
        .await;
    let note = notification(&fake, "And the footer?").await;
    let id = message_id_of(&fake, &note);
    fake.push_update(json!({"callback_query": {"id": "cb1", "data": "q1",
        "from": {"id": CHAT}, "message": {"message_id": id, "chat": {"id": CHAT}}}}));
    let v = hub.poll(&token, &wait, 5000).await;
    assert_eq!(
        (v["status"].as_str(), v["reply"]["text"].as_str()),
        (Some("replied"), Some("Continue.")),
        "{v}"
    );
}

#[tokio::test]
async fn a_channel_that_hangs_does_not_slow_replies() {
    // A channel that accepts connections and never answers.
    let blackhole = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let dead = format!("http://{}", blackhole.local_addr().unwrap());
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = blackhole.accept().await {
            held.push(s);
        }
    });
    let quiet = TestHub::start().await;
    let hanging = hub_with(NotifyConfig {
        after: Duration::ZERO,
        webhooks: vec![Webhook {
            url: Hidden(format!("{dead}/hook")),
            format: WebhookFormat::Json,
        }],
        ntfy: vec![Ntfy {
            url: Hidden(format!("{dead}/topic")),
        }],
        telegram: Some(Telegram {
            bot_token: Hidden(BOT.into()),
            chat_ids: vec![CHAT],
            user_ids: vec![],
            api_base: dead.clone(),
        }),
        ..NotifyConfig::default()
    })
    .await;
    let mut medians = Vec::new();
    for hub in [&quiet, &hanging] {
        let token = hub.init("latency").await;
        let mut times = Vec::new();
        for i in 0..15 {
            let wait = hub
                .register(&token, "latency", "next?", &format!("q{i}"))
                .await;
            let started = Instant::now();
            let (reply, poll) = tokio::join!(
                hub.ok("/api/reply", json!({"token": token, "text": "go"})),
                hub.poll(&token, &wait, 5000)
            );
            times.push(started.elapsed());
            assert_eq!(poll["status"], "replied");
            hub.ok(
                "/api/wait/ack",
                json!({"token": token, "waitId": wait, "replyId": reply["replyId"]}),
            )
            .await;
        }
        times.sort();
        medians.push(times[times.len() / 2]);
    }
    eprintln!(
        "reply latency, median of 15: without notifications {:?}, with every channel hanging {:?}",
        medians[0], medians[1]
    );
    // Generous: a channel on the request path would add its 20 s timeout.
    assert!(
        medians[1] < medians[0] * 5 + Duration::from_millis(200),
        "{medians:?}"
    );
}

/// `config.toml` with every channel at the fake (`after_sec = 0`).
fn config_toml(fake: &Fake) -> String {
    let mut t = String::from("[notify]\nafter_sec = 0\n");
    for (_, name) in FORMATS {
        t.push_str(&format!(
            "\n[[notify.webhook]]\nurl = \"{}/hook/{name}\"\nformat = \"{name}\"\n",
            fake.url
        ));
    }
    t.push_str(&format!(
        "\n[[notify.ntfy]]\nurl = \"{}/ntfy/phone-topic\"\n\n[notify.telegram]\nbot_token = \"{BOT}\"\nchat_ids = [{CHAT}]\napi_base = \"{}\"\n",
        fake.url, fake.url
    ));
    t
}

async fn cli(home: &std::path::Path, args: &'static [&'static str]) -> std::process::Output {
    let home = home.to_owned();
    tokio::task::spawn_blocking(move || realhub::run_cli(&home, args))
        .await
        .unwrap()
}

#[tokio::test]
async fn the_real_hub_notifies_and_its_logs_hold_no_token_or_channel_url() {
    let fake = Fake::start().await;
    // Failures make the hub log about each channel.
    fake.fail("/hook/json", &[500, 400]);
    fake.fail(&format!("/bot{BOT}/editMessageText"), &[400]);
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(home.join("config.toml"), config_toml(&fake)).unwrap();
    let mut hub = realhub::RealHub::start_logging(&home, realhub::free_addr()).await;
    let token = hub
        .api
        .ok(
            "/api/init",
            &json!({"cursorTitle": "t", "workspace": "/w", "hostIp": "10.0.0.2"}),
        )
        .await["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let wait = hub
        .api
        .ok(
            "/api/wait/register",
            &json!({"token": token, "message": "go on?",
        "cursorTitle": "t", "workspace": "/w", "hostIp": "10.0.0.2", "requestId": "q1"}),
        )
        .await["waitId"]
        .as_str()
        .unwrap()
        .to_owned();
    let note = notification(&fake, "go on?").await;
    let id = message_id_of(&fake, &note);
    fake.push_update(
        json!({"message": {"message_id": 9, "chat": {"id": 999}, "text": "x",
        "reply_to_message": {"message_id": id}}}),
    );
    fake.push_update(
        json!({"message": {"message_id": 10, "chat": {"id": CHAT}, "text": "yes",
        "reply_to_message": {"message_id": id}}}),
    );
    let (_, v) = hub
        .api
        .post(
            "/api/wait/poll",
            &json!({"token": token, "waitId": wait, "timeoutMs": 5000}),
        )
        .await
        .unwrap();
    assert_eq!(v["reply"]["text"], "yes", "{v}");
    // The edit is refused (400): the hub follows up instead.
    notification(&fake, "Answered").await;
    assert_eq!(
        fake.wait_for("/hook/json", 3, WAIT).await.len(),
        3,
        "500 retried, then 400 given up"
    );
    hub.stop();

    let logs = format!(
        "{}\n{}",
        hub.stderr(),
        std::fs::read_to_string(home.join("logs/hub.log")).unwrap()
    );
    assert!(logs.contains("notification given up"), "{logs}");
    assert!(logs.contains("not in chat_ids"), "{logs}");
    let fake_addr = fake.url.trim_start_matches("http://");
    for secret in [BOT, "TEST-token", fake_addr, "/hook/", "phone-topic"] {
        assert!(!logs.contains(secret), "{secret:?} in the logs:\n{logs}");
    }
    let shown = cli(&home, &["config"]).await;
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(
        shown.contains("[notify.telegram]") && shown.contains("format = \"wecom\""),
        "{shown}"
    );
    assert!(
        !shown.contains(BOT) && !shown.contains("/hook/") && !shown.contains("phone-topic"),
        "{shown}"
    );
}

#[tokio::test]
async fn notify_test_reports_each_channel_and_a_bad_table_is_refused_with_its_line() {
    let fake = Fake::start().await;
    fake.fail("/hook/discord", &[404]);
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(home.join("config.toml"), config_toml(&fake)).unwrap();
    let out = cli(&home, &["notify", "test"]).await;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !out.status.success(),
        "a failed channel fails the command: {text}"
    );
    for line in [
        "webhook 1 (json): sent",
        "webhook 3 (discord): FAILED: 404",
        "ntfy 1: sent",
        "telegram: sent",
    ] {
        assert!(text.contains(line), "{line:?} missing:\n{text}");
    }
    assert!(!text.contains(BOT) && !text.contains(&fake.url), "{text}");
    assert_eq!(fake.seen("/ntfy/").len(), 1);
    let tg = fake.seen(&format!("/bot{BOT}/sendMessage"));
    assert_eq!(tg[0].body["chat_id"], CHAT);
    assert!(
        tg[0].body["text"]
            .as_str()
            .unwrap()
            .contains("test notification")
    );

    for (bad, line) in [
        (
            "[notify]\nafter_sec = 1\n\n[[notify.webhook]]\nurl = \"http://127.0.0.1:9/h\"\nformat = \"teams\"\n",
            "line 6",
        ),
        (
            "[notify.telegram]\nbot_token = \"1:a\"\nchat_ids = [1, \"me\"]\n",
            "line 3",
        ),
        (
            "[notify.telegram]\nbot_token_file = \"/nonexistent/token\"\nchat_ids = [1]\n",
            "line 2",
        ),
    ] {
        std::fs::write(home.join("config.toml"), bad).unwrap();
        let out = cli(&home, &["serve", "--listen", "127.0.0.1:0"]).await;
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{bad}");
        assert!(
            err.contains("config.toml") && err.contains(line),
            "{bad:?}: {err}"
        );
    }
}

/// Waits until the fake has seen a `sendMessage` to `CHAT` that replies to
/// `message` and carries `needle`.
pub(crate) async fn said_in_reply(fake: &Fake, message: i64, needle: &str) -> Value {
    let until = Instant::now() + WAIT;
    loop {
        let found = fake
            .seen(&format!("/bot{BOT}/sendMessage"))
            .into_iter()
            .find(|s| {
                s.body["reply_to_message_id"] == message
                    && s.body["text"].as_str().unwrap_or("").contains(needle)
            });
        if let Some(s) = found {
            return s.body;
        }
        assert!(
            Instant::now() < until,
            "nothing in reply to {message} with {needle:?}: {}",
            fake.all_text()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The agent's wait gets nothing: no reply queued, its poll renews.
pub(crate) async fn nothing_delivered(hub: &TestHub, token: &str, wait: &str) {
    let s = hub.session(token).await;
    assert_eq!(s["queuedReplies"], 0, "{s}");
    let v = hub.poll(token, wait, 300).await;
    assert_eq!(v["status"], "renewal", "{v}");
}

/// A late reply to an older question: the agent asks Q1 (notified), the person answers it
/// in the panel, the agent asks Q2 ("Deploy to prod now?"), and a reply to
/// Q1's notification comes in from Telegram. `(token, Q2's wait, what the bot
/// said back)`.
/// The person answers `wait` with `text` in the panel, the agent receives it and asks
/// `question` in the chat `title`: the new wait.
pub(crate) async fn answered_then_asks(
    hub: &TestHub,
    token: &str,
    wait: &str,
    text: &str,
    (title, question): (&str, &str),
) -> String {
    hub.ok("/api/reply", json!({"token": token, "text": text}))
        .await;
    let v = hub.poll(token, wait, 2000).await;
    hub.ok(
        "/api/wait/ack",
        json!({"token": token, "waitId": wait, "replyId": v["reply"]["id"]}),
    )
    .await;
    hub.register(token, title, question, "q2").await
}

async fn late_reply(fake: &Fake, hub: &TestHub) -> (String, String, Value) {
    let token = hub.init("Release").await;
    let wait = hub
        .register(&token, "Release", "Is the changelog right?", "q1")
        .await;
    let q1 = message_id_of(fake, &notification(fake, "Release").await);
    let wait = answered_then_asks(
        hub,
        &token,
        &wait,
        "yes",
        ("Release", "Deploy to prod now?"),
    )
    .await;
    let sends = fake.seen(&format!("/bot{BOT}/sendMessage")).len();
    fake.wait_for(&format!("/bot{BOT}/sendMessage"), sends + 1, WAIT)
        .await;
    fake.push_update(json!({"message": {"message_id": 30, "chat": {"id": CHAT},
        "from": {"id": CHAT}, "text": "yes go ahead",
        "reply_to_message": {"message_id": q1}}}));
    let told = said_in_reply(fake, 30, "moved on").await;
    nothing_delivered(hub, &token, &wait).await;
    let s = hub.session(&token).await;
    assert!(
        s["messages"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["content"] != "yes go ahead"),
        "{s}"
    );
    (token, wait, told)
}

#[tokio::test]
async fn a_late_telegram_reply_to_an_answered_question_is_not_given_to_the_next_one() {
    let fake = Fake::start().await;
    let hub = hub_with(telegram(&fake)).await;
    let (token, wait, told) = late_reply(&fake, &hub).await;
    assert!(
        told["text"]
            .as_str()
            .unwrap()
            .contains("Deploy to prod now?"),
        "{told}"
    );

    // The bot's message shows Q2, and a reply to it answers Q2.
    let moved_on = message_id_of(&fake, &told);
    fake.push_update(json!({"message": {"message_id": 31, "chat": {"id": CHAT},
        "from": {"id": CHAT}, "text": "not before 5pm",
        "reply_to_message": {"message_id": moved_on}}}));
    let v = hub.poll(&token, &wait, 5000).await;
    assert_eq!(
        (v["status"].as_str(), v["reply"]["text"].as_str()),
        (Some("replied"), Some("not before 5pm")),
        "{v}"
    );
}

#[tokio::test]
async fn with_include_text_false_the_moved_on_message_holds_no_word_of_the_agent() {
    let fake = Fake::start().await;
    let mut notify = telegram(&fake);
    notify.include_text = false;
    let hub = hub_with(notify).await;
    let (_, _, told) = late_reply(&fake, &hub).await;
    let text = told["text"].as_str().unwrap();
    assert!(!text.contains("Deploy") && !text.contains("prod"), "{told}");
    assert!(!fake.all_text().contains("Deploy to prod now?"));
}

#[tokio::test]
async fn with_user_ids_only_those_people_answer_from_an_allowed_chat() {
    const ME: i64 = 4242;
    const OTHER: i64 = 777;
    let fake = Fake::start().await;
    let mut notify = telegram(&fake);
    notify.telegram.as_mut().unwrap().user_ids = vec![ME];
    let hub = hub_with(notify).await;
    let token = hub.init("Group chat").await;
    let wait = hub
        .register(&token, "Group chat", "Merge the branch?", "q1")
        .await;
    let id = message_id_of(&fake, &notification(&fake, "Merge the branch?").await);

    // Someone else in the group: a reply, a button, and one with no sender.
    fake.push_update(json!({"message": {"message_id": 40, "chat": {"id": CHAT},
        "from": {"id": OTHER}, "text": "merge it",
        "reply_to_message": {"message_id": id}}}));
    fake.push_update(json!({"callback_query": {"id": "cb9", "data": "q0",
        "from": {"id": OTHER}, "message": {"message_id": id, "chat": {"id": CHAT}}}}));
    fake.push_update(json!({"message": {"message_id": 41, "chat": {"id": CHAT},
        "text": "anonymous", "reply_to_message": {"message_id": id}}}));
    taken(&fake).await;
    nothing_delivered(&hub, &token, &wait).await;
    assert_eq!(hub.session(&token).await["status"], "waiting");

    fake.push_update(json!({"message": {"message_id": 42, "chat": {"id": CHAT},
        "from": {"id": ME}, "text": "not yet", "reply_to_message": {"message_id": id}}}));
    let v = hub.poll(&token, &wait, 5000).await;
    assert_eq!(v["reply"]["text"], "not yet", "{v}");
}

#[tokio::test]
async fn a_button_sends_the_template_shown_with_its_message_after_the_templates_change() {
    let fake = Fake::start().await;
    let hub = hub_with(telegram(&fake)).await;
    let put = |templates: Value| {
        hub.http
            .put(format!("{}/api/templates", hub.url))
            .bearer_auth(&hub.secret)
            .json(&json!({ "templates": templates }))
            .send()
    };
    let r = put(json!([{"label": "Ship", "text": "Ship it to staging."},
                       {"label": "Hold", "text": "Hold on."}]))
    .await
    .unwrap();
    assert!(r.status().is_success());
    let token = hub.init("Buttons").await;
    let wait = hub
        .register(&token, "Buttons", "Where should it go?", "q1")
        .await;
    let note = notification(&fake, "Where should it go?").await;
    assert_eq!(
        note["reply_markup"]["inline_keyboard"][0][0]["text"],
        "Ship"
    );
    let id = message_id_of(&fake, &note);

    // The templates change after the message was sent.
    let r = put(json!([{"label": "Prod", "text": "Ship it to production."},
                       {"label": "Hold", "text": "Hold on."}]))
    .await
    .unwrap();
    assert!(r.status().is_success());
    fake.push_update(json!({"callback_query": {"id": "cb1", "data": "q0",
        "from": {"id": CHAT}, "message": {"message_id": id, "chat": {"id": CHAT}}}}));
    let v = hub.poll(&token, &wait, 5000).await;
    assert_eq!(
        (v["status"].as_str(), v["reply"]["text"].as_str()),
        (Some("replied"), Some("Ship it to staging.")),
        "{v}"
    );
}
