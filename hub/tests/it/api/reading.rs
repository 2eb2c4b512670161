//! What the person reads: the list, search, history pages, templates, the event stream,
//! health and metrics, a session's own quick replies.

use super::*;

#[tokio::test]
async fn list_puts_waiting_first_and_searches_content() {
    let hub = TestHub::start().await;
    let a = hub.init("Alpha").await;
    let b = hub.init("Beta").await;
    let c = hub.init("Gamma").await;
    hub.register(&c, "Gamma", "the needle is here", "q1").await;
    // Waits are timed in milliseconds: make "c waited longer" true on a fast machine.
    tokio::time::sleep(Duration::from_millis(5)).await;
    hub.register(&a, "Alpha", "nothing", "q1").await;
    let (_, list) = hub.get("/api/sessions").await;
    let order: Vec<&str> = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["token"].as_str().unwrap())
        .collect();
    assert_eq!(order, vec![c.as_str(), a.as_str(), b.as_str()]);
    assert!(list["sessions"][0]["waitingSince"].is_i64());

    let (_, found) = hub.get("/api/sessions?q=NEEDLE").await;
    assert_eq!(found["sessions"].as_array().unwrap().len(), 1);
    assert_eq!(found["sessions"][0]["token"], c);
    let (_, found) = hub.get("/api/sessions?q=beta").await;
    assert_eq!(found["sessions"][0]["token"], b);

    let (_, page) = hub.get("/api/sessions?limit=2").await;
    assert_eq!(page["sessions"].as_array().unwrap().len(), 2);
    let cursor = page["nextCursor"].as_str().unwrap();
    let (_, rest) = hub
        .get(&format!("/api/sessions?limit=2&cursor={cursor}"))
        .await;
    assert_eq!(rest["sessions"][0]["token"], b);
    assert!(rest["nextCursor"].is_null());
}

#[tokio::test]
async fn find_answers_where_a_search_hit_in_a_session() {
    let hub = TestHub::start().await;
    let token = hub.init("t").await;
    let long = format!(
        "{} the Zebra-Quartz needle {}",
        "a".repeat(100),
        "b".repeat(100)
    );
    for text in ["zebra-quartz first", "nothing here", long.as_str()] {
        hub.ok("/api/reply", json!({"token": token, "text": text}))
            .await;
    }
    let (status, found) = hub
        .get(&format!("/api/sessions/{token}/find?q=ZEBRA-quartz"))
        .await;
    assert_eq!(status, StatusCode::OK);
    let hits = found["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 2, "{found}");
    assert_eq!(hits[0]["seq"], 2, "newest first");
    assert_eq!(hits[1]["seq"], 0);
    let snippet = hits[0]["snippet"].as_str().unwrap();
    assert!(snippet.contains("the Zebra-Quartz needle"), "{snippet}");
    assert!(
        snippet.starts_with('…') && snippet.ends_with('…'),
        "{snippet}"
    );
    assert!(snippet.chars().count() < 110, "{snippet}");
    let (_, one) = hub
        .get(&format!("/api/sessions/{token}/find?q=zebra&limit=1"))
        .await;
    assert_eq!(one["hits"].as_array().unwrap().len(), 1);
    let (status, body) = hub.get(&format!("/api/sessions/{token}/find?q=%20")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error_code(&body), "BAD_REQUEST");
    let (status, _) = hub
        .get("/api/sessions/ct_00000000000000000000000000000000/find?q=x")
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn history_pages_backwards() {
    let hub = TestHub::start().await;
    let token = hub.init("t").await;
    for i in 0..7 {
        hub.ok(
            "/api/reply",
            json!({"token": token, "text": format!("m{i}")}),
        )
        .await;
    }
    let (_, page) = hub.get(&format!("/api/sessions/{token}?limit=3")).await;
    let texts = |v: &Value| {
        v["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["content"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(texts(&page), vec!["m4", "m5", "m6"]);
    let before = page["nextBefore"].as_u64().unwrap();
    let (_, older) = hub
        .get(&format!("/api/sessions/{token}?limit=3&before={before}"))
        .await;
    assert_eq!(texts(&older), vec!["m1", "m2", "m3"]);
    let (_, oldest) = hub
        .get(&format!("/api/sessions/{token}?limit=3&before=1"))
        .await;
    assert_eq!(texts(&oldest), vec!["m0"]);
    assert!(oldest["nextBefore"].is_null());
}

#[tokio::test]
async fn templates_are_shared_and_editable() {
    let hub = TestHub::start().await;
    let (_, t) = hub.get("/api/templates").await;
    assert!(t["templates"].as_array().unwrap().len() >= 4);
    let res = hub
        .http
        .put(format!("{}/api/templates", hub.url))
        .bearer_auth(&hub.secret)
        .json(&json!({"templates": [{"label": "Go", "text": "Go on."}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let (_, t) = hub.get("/api/templates").await;
    assert_eq!(t, json!({"templates": [{"label": "Go", "text": "Go on."}]}));
}

#[tokio::test]
async fn events_stream_session_changes() {
    let hub = TestHub::start().await;
    let res = hub
        .http
        .get(format!("{}/api/events", hub.url))
        .bearer_auth(&hub.secret)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let mut body = res;
    let token = hub.init("Live").await;
    hub.register(&token, "Live", "m", "q1").await;
    let mut seen = String::new();
    let found = tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(chunk) = body.chunk().await.unwrap() {
            seen.push_str(&String::from_utf8_lossy(&chunk));
            if seen.contains("\"status\":\"waiting\"") {
                return true;
            }
        }
        false
    })
    .await
    .unwrap_or(false);
    assert!(found, "no waiting event in {seen}");
    assert!(seen.contains("event: session"));
}

#[tokio::test]
async fn health_and_metrics() {
    let hub = TestHub::start().await;
    hub.init("t").await;
    // Without a credential: only that the hub is up, no counts.
    let anonymous: Value =
        reqwest::get(format!("{}{}", hub.url, holdline_contract::routes::HEALTHZ))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
    assert_eq!(
        anonymous,
        json!({"ok": true, "version": env!("CARGO_PKG_VERSION")}),
        "{anonymous}"
    );
    let h = hub.health().await;
    assert_eq!(h["ok"], true);
    assert_eq!(h["sessions"], 1);
    assert_eq!(h["waiting"], 0);
    assert!(h["mongo"].is_null());
    let res = reqwest::get(format!("{}/metrics", hub.url)).await.unwrap();
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    let text = hub
        .http
        .get(format!("{}/metrics", hub.url))
        .bearer_auth(&hub.secret)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(text.contains("holdline_sessions 1"), "{text}");
}

#[tokio::test]
async fn a_sessions_own_quick_replies_are_kept_by_the_hub_and_travel_with_an_export() {
    let hub = TestHub::start().await;
    let token = hub.init("Release").await;
    let other = hub.init("Other").await;
    let own = json!([{"label": "Tag it", "text": "Tag v2 and push the tag."},
                     {"label": "回滚", "text": "回滚到上一个版本。", "lang": "zh"}]);
    let s = hub
        .ok(
            "/api/session/config",
            json!({"token": token, "quickReplies": own}),
        )
        .await;
    assert_eq!(s["quickReplies"], own, "{s}");
    assert_eq!(hub.session(&token).await["quickReplies"], own);
    assert!(hub.session(&other).await.get("quickReplies").is_none());

    // Outside the rule: 400, and the list kept is the one before.
    let too_many: Vec<Value> = (0..21)
        .map(|i| json!({"label": format!("q{i}"), "text": "x"}))
        .collect();
    for bad in [json!(too_many), json!([{"label": " ", "text": "x"}])] {
        let (status, v) = hub
            .post(
                "/api/session/config",
                json!({"token": token, "quickReplies": bad}),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{v}");
    }
    assert_eq!(hub.session(&token).await["quickReplies"], own);

    // An export carries them; an import into another hub gives them back.
    let (_, export) = hub.get("/api/export").await;
    assert_eq!(export[&token]["quickReplies"], own, "{export}");
    let fresh = TestHub::start().await;
    fresh.ok("/api/import", export).await;
    assert_eq!(fresh.session(&token).await["quickReplies"], own);

    // [] removes them.
    hub.ok(
        "/api/session/config",
        json!({"token": token, "quickReplies": []}),
    )
    .await;
    assert!(hub.session(&token).await.get("quickReplies").is_none());
}

/// The admin CLI reads the hub's answers with the handlers' own types: a session with a
/// question and a queued reply, the list, and `/healthz`, as the hub writes them, decode
/// into `api::dto`'s types with nothing lost.
#[tokio::test]
async fn the_admin_clients_types_read_what_the_hub_answers() {
    use holdline_hub::api::dto::{Health, SessionDetail, SessionList, StoreCondition};
    let hub = TestHub::start().await;
    let token = hub.init("t").await;
    let ask = json!({"token": token, "message": "Which one?", "cursorTitle": "t",
                     "workspace": "/w", "hostIp": "10.0.0.2", "requestId": "q1",
                     "options": [{"label": "A"}, {"label": "B"}]});
    hub.ok("/api/wait/register", ask).await;
    let get = |path: String| {
        let req = hub.http.get(format!("{}{path}", hub.url));
        req.bearer_auth(&hub.secret).send()
    };
    let detail: SessionDetail = get(format!("/api/sessions/{token}"))
        .await
        .unwrap()
        .json()
        .await
        .expect("a session decodes");
    assert_eq!(detail.session.head.token, token);
    let question = detail.messages.last().expect("the question");
    assert_eq!(question.message.content, "Which one?");
    assert_eq!(question.message.options.len(), 2);
    let list: SessionList = get("/api/sessions?status=all".into())
        .await
        .unwrap()
        .json()
        .await
        .expect("a list decodes");
    assert_eq!(list.sessions.len(), 1);
    assert!(list.sessions[0].waiting_since.is_some());
    let health: Health = get(holdline_contract::routes::HEALTHZ.into())
        .await
        .unwrap()
        .json()
        .await
        .expect("health decodes");
    assert_eq!((health.sessions, health.waiting), (1, 1));
    assert_eq!(health.store.state, StoreCondition::Ok);
    assert!(health.process.is_some() && health.mongo.is_none());
    // The panel's reply limit is the hub's, read from whoami (never a copy in the panel).
    let (_, me) = hub.get("/api/whoami").await;
    assert_eq!(
        me["replyLimit"],
        holdline_contract::routes::REPLY_LIMIT,
        "{me}"
    );
}
