//! Names a person reads that the hub takes directly (SPEC §8): a chat's title
//! and a machine name the agent sends are shown without bidi controls and
//! invisible characters (stripped: refusing them would cost the agent its turn,
//! and the chat still finds its session); a name the person or the admin gives
//! (a session's `displayTitle`, an agent key's name) is refused with one
//! sentence naming the character. Real hub, real HTTP.

use reqwest::StatusCode;
use serde_json::json;

use crate::inproc::TestHub;
use crate::realhub::{self, RealHub, free_addr};

const REVERSED: &str = "invoice\u{202E}gpj.exe";

#[tokio::test]
async fn an_agents_title_and_machine_name_are_shown_without_hidden_characters() {
    let hub = TestHub::start().await;
    let body = json!({"cursorTitle": REVERSED, "workspace": "/w", "hostIp": "10.0.0.2",
                      "hostName": "lap\u{200B}top\u{2066}"});
    let token = hub.ok("/api/init", body.clone()).await["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let s = hub.session(&token).await;
    assert_eq!(s["title"], "invoicegpj.exe", "{s}");
    assert_eq!(s["hostName"], "laptop", "{s}");
    assert_eq!(s["machine"], "laptop", "{s}");
    // The chat, title as sent, still finds its session.
    let again = hub.ok("/api/init", body).await;
    assert_eq!(
        (again["token"].as_str(), again["created"].as_bool()),
        (Some(token.as_str()), Some(false))
    );
    // A title that changes on a wait is shown cleaned too.
    hub.register(&token, "Ye\u{200B}s\u{200D}", "ok?", "q1")
        .await;
    let s = hub.session(&token).await;
    assert_eq!(s["title"], "Yes", "{s}");
    // The list shows the same (the binding keeps the title as sent; no page shows it).
    let (_, list) = hub.get("/api/sessions").await;
    assert_eq!(list["sessions"][0]["title"], "Yes", "{list}");
}

#[tokio::test]
async fn a_display_title_with_a_hidden_character_is_refused_and_nothing_changes() {
    let hub = TestHub::start().await;
    let token = hub.init("build").await;
    for bad in [REVERSED, "Ye\u{200B}s", "\u{FEFF}title"] {
        let (status, v) = hub
            .post(
                "/api/session/config",
                json!({"token": token, "displayTitle": bad}),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad:?}: {v}");
        let said = v["error"]["message"].as_str().unwrap();
        assert!(
            said.contains("displayTitle") && said.contains("U+"),
            "{said}"
        );
    }
    assert_eq!(hub.session(&token).await["displayTitle"], "");
    // Plain names of every script pass.
    let v = hub
        .ok(
            "/api/session/config",
            json!({"token": token, "displayTitle": "重构 · naïve ✅"}),
        )
        .await;
    assert_eq!(v["displayTitle"], "重构 · naïve ✅", "{v}");
}

#[tokio::test]
async fn a_key_name_with_a_hidden_character_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let hub = RealHub::start(&dir.path().join("home"), free_addr()).await;
    for bad in ["al\u{202E}pha", "lap\u{200B}top"] {
        let out = realhub::run_cli(&hub.home, &["key", "create", "--name", bad]);
        assert!(!out.status.success(), "{bad:?} was made");
        let (s, v) = hub
            .api
            .post("/api/keys", &json!({"name": bad}))
            .await
            .unwrap();
        assert_eq!(s, 400, "{bad:?}: {v}");
        assert!(!v.to_string().contains(bad), "the name is echoed raw: {v}");
    }
    let (_, keys) = hub.api.get("/api/keys").await.unwrap();
    assert_eq!(keys.to_string().matches("\"name\"").count(), 0, "{keys}");
}
