//! Bad input gets a clear error and loses nothing: each test sends one kind of bad body,
//! token, size or call to a hub with a session waiting, and checks the error and that the
//! session is as it was. Then random bodies at every route decoder.

use super::*;

/// A hub with one session waiting on a question, and the session as it was before the
/// bad inputs.
struct Waiting {
    hub: TestHub,
    token: String,
    wait: String,
    before: Value,
}

impl Waiting {
    async fn start() -> Waiting {
        let hub = TestHub::start().await;
        let token = hub.init("t").await;
        let wait = hub.register(&token, "t", "m", "q1").await;
        let before = hub.session(&token).await;
        Waiting {
            hub,
            token,
            wait,
            before,
        }
    }

    /// Posts raw bytes as JSON with the secret.
    async fn raw(&self, path: &str, body: Vec<u8>) -> reqwest::Response {
        self.hub
            .http
            .post(format!("{}{path}", self.hub.url))
            .bearer_auth(&self.hub.secret)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap()
    }

    /// Nothing was lost or changed: same wait, same history.
    async fn assert_unchanged(&self) {
        let after = self.hub.session(&self.token).await;
        assert_eq!(after["msgCount"], self.before["msgCount"]);
        assert_eq!(after["messages"], self.before["messages"]);
        assert_eq!(after["status"], "waiting");
        assert_eq!(
            self.hub.poll(&self.token, &self.wait, 0).await["status"],
            "renewal"
        );
    }
}

/// The answer is `status` with error `code` and a message.
async fn expect_error(res: reqwest::Response, status: StatusCode, code: &str) {
    assert_eq!(res.status(), status);
    let v: Value = res.json().await.expect("a JSON error body");
    assert_eq!(error_code(&v), code, "{v}");
    assert!(!v["error"]["message"].as_str().unwrap().is_empty());
}

const BAD_REQUEST: StatusCode = StatusCode::BAD_REQUEST;

#[tokio::test]
async fn malformed_and_mistyped_bodies_are_refused() {
    let w = Waiting::start().await;
    // Malformed JSON, empty body, invalid UTF-8.
    for body in [
        b"{not json".to_vec(),
        b"".to_vec(),
        b"{\"token\": \"\xff\xfe\"}".to_vec(),
    ] {
        expect_error(w.raw("/api/reply", body).await, BAD_REQUEST, "BAD_REQUEST").await;
    }
    // Wrong types and missing fields.
    let token = &w.token;
    for body in [
        json!({"token": token, "text": 5}),
        json!({"token": token}),
        json!({"text": "x"}),
        json!([1, 2]),
    ] {
        let res = w.raw("/api/reply", body.to_string().into_bytes()).await;
        expect_error(res, BAD_REQUEST, "BAD_REQUEST").await;
    }
    w.assert_unchanged().await;
}

#[tokio::test]
async fn unknown_and_malformed_tokens_are_refused() {
    let w = Waiting::start().await;
    let hub = &w.hub;
    let long = "a".repeat(10 * 1024);
    for t in [
        "../x",
        "",
        long.as_str(),
        "ct_ZZZ",
        "CT_0a1b2c3d4e5f60718293a4b5c6d7e8f9",
    ] {
        let (status, v) = hub
            .post("/api/reply", json!({"token": t, "text": "x"}))
            .await;
        assert_eq!(
            (status, error_code(&v)),
            (BAD_REQUEST, "BAD_REQUEST"),
            "{t:.20}"
        );
    }
    let res = hub
        .http
        .get(format!("{}/api/sessions/..%2Fx", hub.url))
        .bearer_auth(&hub.secret)
        .send()
        .await
        .unwrap();
    expect_error(res, BAD_REQUEST, "BAD_REQUEST").await;
    let unknown = json!({"token": "ct_00000000000000000000000000000000", "text": "x"});
    let (status, v) = hub.post("/api/reply", unknown).await;
    assert_eq!(
        (status, error_code(&v)),
        (StatusCode::NOT_FOUND, "SESSION_NOT_FOUND")
    );
    w.assert_unchanged().await;
}

#[tokio::test]
async fn titles_and_bodies_past_their_limits_are_refused() {
    let w = Waiting::start().await;
    // Empty and 100 KB cursorTitle.
    for title in [String::new(), "   ".into(), "t".repeat(100 * 1024)] {
        let (status, v) = w
            .hub
            .post(
                "/api/init",
                json!({"cursorTitle": title, "workspace": "/w", "hostIp": "h"}),
            )
            .await;
        assert_eq!((status, error_code(&v)), (BAD_REQUEST, "BAD_REQUEST"));
    }
    // A 20 MB body.
    let huge = format!(
        "{{\"token\":\"{}\",\"text\":\"{}\"}}",
        w.token,
        "x".repeat(20 * 1024 * 1024)
    );
    let res = w.raw("/api/reply", huge.into_bytes()).await;
    expect_error(res, StatusCode::PAYLOAD_TOO_LARGE, "TOO_LARGE").await;
    // Over the 1 MiB cap of plain JSON routes.
    let big = json!({"token": w.token, "message": "x".repeat(2 * 1024 * 1024), "cursorTitle": "t", "workspace": "/w", "hostIp": "10.0.0.2", "requestId": "q9"});
    let res = w
        .raw("/api/wait/register", big.to_string().into_bytes())
        .await;
    expect_error(res, StatusCode::PAYLOAD_TOO_LARGE, "TOO_LARGE").await;
    w.assert_unchanged().await;
}

#[tokio::test]
async fn bad_polls_and_acks_are_refused() {
    let w = Waiting::start().await;
    let (hub, token, wait) = (&w.hub, &w.token, &w.wait);
    // timeoutMs of -1 and 10^12.
    for ms in [json!(-1), json!(1_000_000_000_000u64), json!("10")] {
        let (status, v) = hub
            .post(
                "/api/wait/poll",
                json!({"token": token, "waitId": wait, "timeoutMs": ms}),
            )
            .await;
        assert_eq!(
            (status, error_code(&v)),
            (BAD_REQUEST, "BAD_REQUEST"),
            "{ms}"
        );
    }
    // A poll for another session's waitId.
    let other = hub.init("other").await;
    let other_wait = hub.register(&other, "other", "m", "q1").await;
    let (status, v) = hub
        .post(
            "/api/wait/poll",
            json!({"token": token, "waitId": other_wait, "timeoutMs": 0}),
        )
        .await;
    assert_eq!(
        (status, error_code(&v)),
        (StatusCode::FORBIDDEN, "FORBIDDEN")
    );
    // Ack of an unknown replyId.
    let (status, v) = hub
        .post(
            "/api/wait/ack",
            json!({"token": token, "waitId": wait, "replyId": "r_nope"}),
        )
        .await;
    assert_eq!((status, error_code(&v)), (BAD_REQUEST, "BAD_REQUEST"));
    w.assert_unchanged().await;
}

#[tokio::test]
async fn out_of_range_settings_are_refused() {
    let w = Waiting::start().await;
    let (hub, token) = (&w.hub, &w.token);
    let (status, _) = hub
        .post(
            "/api/session/config",
            json!({"token": token, "timedReplyIntervalMs": 5}),
        )
        .await;
    assert_eq!(status, BAD_REQUEST);
    let (status, _) = hub.post("/api/wait/register", json!({"token": token, "message": "m", "cursorTitle": "t", "workspace": "/w", "hostIp": "10.0.0.2", "requestId": "q5", "completionPct": 101})).await;
    assert_eq!(status, BAD_REQUEST);
    let (status, v) = hub.get("/api/sessions?limit=0").await;
    assert_eq!((status, error_code(&v)), (BAD_REQUEST, "BAD_REQUEST"));
    let (status, v) = hub.get("/api/sessions?limit=abc").await;
    assert_eq!((status, error_code(&v)), (BAD_REQUEST, "BAD_REQUEST"));
    w.assert_unchanged().await;
}

// ---- random bodies at every route decoder ---------------------------------

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    const ROUTES: &[&str] = &[
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
        "/api/login",
        "/api/sessions/ct_00000000000000000000000000000000/merge",
    ];
    const FIELDS: &[&str] = &[
        "token",
        "cursorTitle",
        "workspace",
        "hostIp",
        "message",
        "requestId",
        "waitId",
        "timeoutMs",
        "replyId",
        "fromToken",
        "toToken",
        "text",
        "images",
        "newPlan",
        "planLabel",
        "threadId",
        "completionPct",
        "nextStep",
        "timedReplyIntervalMs",
        "maxAutoStreak",
        "displayTitle",
        "key",
    ];

    /// Values that mix valid pieces (a real token and wait) with hostile ones.
    fn value(token: String, wait: String) -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            prop_oneof![Just(0i64), Just(1), Just(-1), Just(100), Just(101)].prop_map(Value::from),
            any::<f64>()
                .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
            ".{0,40}".prop_map(Value::from),
            Just(Value::from(token)),
            Just(Value::from(wait)),
            Just(json!([{"mimeType": "image/png", "data": "AAAA"}])),
        ];
        leaf.prop_recursive(3, 24, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                proptest::collection::btree_map(
                    proptest::sample::select(FIELDS).prop_map(str::to_owned),
                    inner,
                    0..8
                )
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    fn bodies(token: String, wait: String) -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..512),
            value(token, wait).prop_map(|v| serde_json::to_vec(&v).unwrap()),
        ]
    }

    #[test]
    fn the_hub_answers_every_random_body_with_json_and_never_fails() {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let (hub, token, wait) = rt.block_on(async {
            let hub = TestHub::start().await;
            let token = hub.init("fuzz").await;
            let wait = hub.register(&token, "fuzz", "m", "q1").await;
            (hub, token, wait)
        });
        let config = ProptestConfig {
            cases: 400,
            failure_persistence: None,
            ..ProptestConfig::default()
        };
        proptest!(config, |(route in proptest::sample::select(ROUTES), body in bodies(token.clone(), wait.clone()))| {
            let (status, v) = rt.block_on(async {
                let res = hub.http.post(format!("{}{route}", hub.url)).bearer_auth(&hub.secret).body(body).send().await.unwrap();
                let status = res.status();
                (status, res.json::<Value>().await.unwrap_or(Value::Null))
            });
            prop_assert!(status.as_u16() < 500, "{route} answered {status}: {v}");
            if !status.is_success() {
                prop_assert!(v["error"]["code"].is_string(), "{route} {status}: {v}");
            }
        });
        rt.block_on(async {
            let h: Value =
                reqwest::get(format!("{}{}", hub.url, holdline_contract::routes::HEALTHZ))
                    .await
                    .unwrap()
                    .json()
                    .await
                    .unwrap();
            assert_eq!(h["ok"], true);
        });
    }
}
