//! A question's options away from the desk (docs/operations.md): webhooks and ntfy list them
//! as numbered lines; Telegram shows them as buttons — one tap sends the pick, multi-select
//! ticks and then Done — and every pick is judged by the hub, so a forged or stale tap
//! queues nothing. Real hub, real HTTP, the Bot API faked on loopback.

use serde_json::{Value, json};

use crate::inproc::TestHub;
use crate::notify::{
    BOT, CHAT, WAIT, answered_then_asks, bodies, hub_with, message_id_of, nothing_delivered,
    notification, one_way, said_in_reply, taken, telegram,
};
use crate::notifyfake::Fake;

/// Registers "Which database?" from the chat `title`, offering three options: the wait id.
async fn ask(hub: &TestHub, token: &str, title: &str, multi: bool, request: &str) -> String {
    let v = hub
        .ok(
            "/api/wait/register",
            json!({"token": token, "message": "Which database?", "cursorTitle": title,
                   "workspace": "/w", "hostIp": "10.0.0.2", "requestId": request,
                   "options": [{"label": "Postgres", "description": "the server we run"},
                               {"label": "SQLite"}, {"label": "MySQL"}],
                   "multiSelect": multi}),
        )
        .await;
    assert_eq!(v["status"], "waiting", "{v}");
    v["waitId"].as_str().unwrap().to_owned()
}

/// Taps the button with `data` under message `id`, as `from`; the tap's id is `cb`.
fn tap(fake: &Fake, id: i64, data: &str, cb: &str, from: i64) {
    fake.push_update(json!({"callback_query": {"id": cb, "data": data,
        "from": {"id": from}, "message": {"message_id": id, "chat": {"id": CHAT}}}}));
}

/// The bot's answer to the tap `cb` (its toast), once it came.
async fn toast(fake: &Fake, cb: &str) -> Value {
    let path = format!("/bot{BOT}/answerCallbackQuery");
    let until = tokio::time::Instant::now() + WAIT;
    loop {
        if let Some(s) = fake
            .seen(&path)
            .into_iter()
            .find(|s| s.body["callback_query_id"] == cb)
        {
            return s.body;
        }
        assert!(
            tokio::time::Instant::now() < until,
            "tap {cb} was not answered: {}",
            fake.all_text()
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Each row of a keyboard as its buttons' texts.
fn texts(keyboard: &Value) -> Vec<Vec<String>> {
    keyboard["inline_keyboard"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            row.as_array()
                .unwrap()
                .iter()
                .map(|b| b["text"].as_str().unwrap().to_owned())
                .collect()
        })
        .collect()
}

const LINES: &str = "1. Postgres — the server we run\n2. SQLite\n3. MySQL";

#[tokio::test]
async fn webhooks_and_ntfy_list_the_options_as_numbered_lines() {
    let fake = Fake::start().await;
    let hub = hub_with(one_way(&fake, 0)).await;
    let token = hub.init("Storage").await;
    ask(&hub, &token, "Storage", true, "q1").await;
    assert_eq!(fake.wait_for("/hook/", 6, WAIT).await.len(), 6);
    assert_eq!(fake.wait_for("/ntfy/", 1, WAIT).await.len(), 1);

    let lines = format!("Which database?\n\n{LINES}\n(pick one or more)");
    let json = &bodies(&fake, "/hook/json")[0];
    assert_eq!(
        json["options"],
        json!([{"label": "Postgres", "description": "the server we run"},
               {"label": "SQLite"}, {"label": "MySQL"}]),
        "{json}"
    );
    assert_eq!(json["multiSelect"], true, "{json}");
    for (name, text) in [
        ("json", &json["text"]),
        ("slack", &bodies(&fake, "/hook/slack")[0]["text"]),
        ("discord", &bodies(&fake, "/hook/discord")[0]["content"]),
        ("wecom", &bodies(&fake, "/hook/wecom")[0]["text"]["content"]),
        ("ntfy", &bodies(&fake, "/ntfy/")[0]["message"]),
    ] {
        let text = text.as_str().unwrap_or_else(|| panic!("{name}"));
        assert!(text.contains(&lines), "{name}: {text}");
    }
}

#[tokio::test]
async fn a_tap_on_an_option_sends_that_pick_and_the_bot_says_so() {
    let fake = Fake::start().await;
    let hub = hub_with(telegram(&fake)).await;
    let token = hub.init("Storage").await;
    let wait = ask(&hub, &token, "Storage", false, "q1").await;
    let note = notification(&fake, "Which database?").await;
    assert!(note["text"].as_str().unwrap().contains(LINES), "{note}");
    let keyboard = &note["reply_markup"];
    let rows = texts(keyboard);
    assert_eq!(rows[..3], [["Postgres"], ["SQLite"], ["MySQL"]], "{note}");
    assert_eq!(rows[3][0], "继续", "the quick replies follow: {note}");
    assert_eq!(keyboard["inline_keyboard"][1][0]["callback_data"], "o1");
    assert!(!keyboard.to_string().contains("done"), "no Done: {note}");
    let id = message_id_of(&fake, &note);

    tap(&fake, id, "o1", "cb1", CHAT);
    let v = hub.poll(&token, &wait, 5000).await;
    assert_eq!(v["status"], "replied", "{v}");
    assert_eq!(
        v["reply"]["choices"],
        json!([{"index": 1, "label": "SQLite"}]),
        "{v}"
    );
    assert_eq!(toast(&fake, "cb1").await["text"], "Sent: SQLite");
    let s = hub.session(&token).await;
    assert_eq!(s["messages"][1]["via"], "telegram", "{s}");
    hub.ok(
        "/api/wait/ack",
        json!({"token": token, "waitId": wait, "replyId": v["reply"]["id"]}),
    )
    .await;

    // A second tap on the same message sends nothing more.
    tap(&fake, id, "o0", "cb2", CHAT);
    let again = toast(&fake, "cb2").await;
    assert!(
        again["text"].as_str().unwrap().contains("Already sent"),
        "{again}"
    );
    assert_eq!(hub.session(&token).await["queuedReplies"], 0);
}

#[tokio::test]
async fn multi_select_taps_tick_and_done_sends_them_in_option_order() {
    let fake = Fake::start().await;
    let hub = hub_with(telegram(&fake)).await;
    let token = hub.init("Storage").await;
    let wait = ask(&hub, &token, "Storage", true, "q1").await;
    let note = notification(&fake, "Which database?").await;
    assert!(
        note["text"]
            .as_str()
            .unwrap()
            .contains("(pick one or more)")
    );
    assert_eq!(texts(&note["reply_markup"])[3], ["Done"], "{note}");
    let id = message_id_of(&fake, &note);

    // Done with nothing ticked sends nothing.
    tap(&fake, id, "done", "cb0", CHAT);
    let none = toast(&fake, "cb0").await;
    assert!(
        none["text"].as_str().unwrap().contains("Pick at least one"),
        "{none}"
    );
    nothing_delivered(&hub, &token, &wait).await;

    // MySQL, then Postgres, then SQLite ticked and unticked: each tap redraws the buttons.
    let edits = format!("/bot{BOT}/editMessageReplyMarkup");
    for (n, data) in ["o2", "o0", "o1", "o1"].into_iter().enumerate() {
        tap(&fake, id, data, &format!("t{n}"), CHAT);
        fake.wait_for(&edits, n + 1, WAIT).await;
    }
    let redrawn = fake.seen(&edits);
    assert_eq!(redrawn[2].body["message_id"], id);
    assert_eq!(
        texts(&redrawn[2].body["reply_markup"])[..4],
        [["✓ Postgres"], ["✓ SQLite"], ["✓ MySQL"], ["Done (3)"]]
    );
    assert_eq!(
        texts(&redrawn[3].body["reply_markup"])[..4],
        [["✓ Postgres"], ["SQLite"], ["✓ MySQL"], ["Done (2)"]]
    );
    nothing_delivered(&hub, &token, &wait).await;

    tap(&fake, id, "done", "cb1", CHAT);
    let v = hub.poll(&token, &wait, 5000).await;
    assert_eq!(
        v["reply"]["choices"],
        json!([{"index": 0, "label": "Postgres"}, {"index": 2, "label": "MySQL"}]),
        "{v}"
    );
    assert_eq!(v["reply"]["text"], "", "{v}");
    assert_eq!(toast(&fake, "cb1").await["text"], "Sent: Postgres, MySQL");
}

#[tokio::test]
async fn a_forged_or_foreign_tap_queues_nothing() {
    const ME: i64 = 4242;
    let fake = Fake::start().await;
    let mut notify = telegram(&fake);
    notify.telegram.as_mut().unwrap().user_ids = vec![ME];
    let hub = hub_with(notify).await;
    let token = hub.init("Storage").await;
    let wait = ask(&hub, &token, "Storage", false, "q1").await;
    let id = message_id_of(&fake, &notification(&fake, "Which database?").await);

    // An index past the options: the hub refuses it and the tap says why.
    tap(&fake, id, "o7", "cb1", ME);
    let refused = toast(&fake, "cb1").await;
    assert!(
        refused["text"].as_str().unwrap().contains("not an option"),
        "{refused}"
    );
    // Data that is no index, and a good tap from someone not in user_ids.
    tap(&fake, id, "oPostgres", "cb2", ME);
    tap(&fake, id, "o0", "cb3", 777);
    taken(&fake).await;
    nothing_delivered(&hub, &token, &wait).await;
    assert_eq!(hub.session(&token).await["msgCount"], 1);

    // A multi-select question: a forged tick is refused by the same rule.
    let multi = hub.init("Storage 2").await;
    let multi_wait = ask(&hub, &multi, "Storage 2", true, "q2").await;
    let multi_id = message_id_of(&fake, &notification(&fake, "Storage 2").await);
    tap(&fake, multi_id, "o3", "cb4", ME);
    let refused = toast(&fake, "cb4").await;
    assert!(
        refused["text"].as_str().unwrap().contains("not an option"),
        "{refused}"
    );
    tap(&fake, multi_id, "done", "cb5", ME);
    toast(&fake, "cb5").await;
    nothing_delivered(&hub, &multi, &multi_wait).await;
    assert!(
        fake.seen(&format!("/bot{BOT}/editMessageReplyMarkup"))
            .is_empty()
    );
}

#[tokio::test]
async fn a_tap_on_an_older_question_is_not_given_to_the_next_one() {
    let fake = Fake::start().await;
    let hub = hub_with(telegram(&fake)).await;
    let token = hub.init("Storage").await;
    let wait = ask(&hub, &token, "Storage", true, "q1").await;
    let q1 = message_id_of(&fake, &notification(&fake, "Which database?").await);
    tap(&fake, q1, "o0", "t0", CHAT);
    fake.wait_for(&format!("/bot{BOT}/editMessageReplyMarkup"), 1, WAIT)
        .await;

    // Answered in the panel; the agent asks something else.
    let wait = answered_then_asks(
        &hub,
        &token,
        &wait,
        "SQLite",
        ("Storage", "Migrate the data now?"),
    )
    .await;
    notification(&fake, "Migrate the data now?").await;

    tap(&fake, q1, "done", "cb1", CHAT);
    let told = toast(&fake, "cb1").await;
    assert!(
        told["text"].as_str().unwrap().contains("moved on"),
        "{told}"
    );
    let said = said_in_reply(&fake, q1, "moved on").await;
    assert!(
        said["text"]
            .as_str()
            .unwrap()
            .contains("Migrate the data now?"),
        "{said}"
    );
    nothing_delivered(&hub, &token, &wait).await;

    // A tick there changes nothing either: it says the agent moved on.
    tap(&fake, q1, "o1", "cb2", CHAT);
    let told = toast(&fake, "cb2").await;
    assert!(
        told["text"].as_str().unwrap().contains("moved on"),
        "{told}"
    );
    assert_eq!(
        fake.seen(&format!("/bot{BOT}/editMessageReplyMarkup"))
            .len(),
        1
    );
    nothing_delivered(&hub, &token, &wait).await;
}

#[tokio::test]
async fn the_moved_on_message_offers_the_newer_question_and_a_tap_there_answers_it() {
    let fake = Fake::start().await;
    let hub = hub_with(telegram(&fake)).await;
    let token = hub.init("Storage").await;
    let wait = ask(&hub, &token, "Storage", false, "q1").await;
    let q1 = message_id_of(&fake, &notification(&fake, "Which database?").await);

    // Answered in the panel; the agent asks a question with options again.
    hub.ok("/api/reply", json!({"token": token, "text": "not yet"}))
        .await;
    let v = hub.poll(&token, &wait, 2000).await;
    hub.ok(
        "/api/wait/ack",
        json!({"token": token, "waitId": wait, "replyId": v["reply"]["id"]}),
    )
    .await;
    let wait = ask(&hub, &token, "Storage", false, "q2").await;

    tap(&fake, q1, "o0", "cb1", CHAT);
    toast(&fake, "cb1").await;
    let said = said_in_reply(&fake, q1, "moved on").await;
    assert!(said["text"].as_str().unwrap().contains(LINES), "{said}");
    let rows = texts(&said["reply_markup"]);
    assert_eq!(rows, [["Postgres"], ["SQLite"], ["MySQL"]], "{said}");
    nothing_delivered(&hub, &token, &wait).await;

    let moved = message_id_of(&fake, &said);
    tap(&fake, moved, "o1", "cb2", CHAT);
    assert_eq!(toast(&fake, "cb2").await["text"], "Sent: SQLite");
    let v = hub.poll(&token, &wait, 5000).await;
    assert_eq!(
        v["reply"]["choices"],
        json!([{"index": 1, "label": "SQLite"}]),
        "{v}"
    );
}
