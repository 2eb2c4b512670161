//! The tools served by the hub itself at `/mcp` (Streamable HTTP), driven by rmcp's HTTP
//! client against a real hub process: the same results as over stdio, the binding's host
//! is the address the hub saw, and refusals are JSON-RPC errors with one sentence.

#![allow(deprecated)] // the harness answers roots/list, deprecated by SEP-2577

use std::time::Duration;

use crate::harness::*;
use serde_json::{Value, json};

#[tokio::test]
async fn a_remote_agent_waits_and_gets_the_reply_once_bound_to_the_address_the_hub_saw() {
    let home = tempfile::tempdir().unwrap();
    let hub = TestHub::start(home.path()).await.unwrap();
    let client = start_remote(&hub, &hub.secret, "holdline-test")
        .await
        .unwrap();
    round_trip(&hub, &client).await;
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_stateless_2026_07_28_client_gets_the_same_tools_and_reply() {
    let home = tempfile::tempdir().unwrap();
    let hub = TestHub::start(home.path()).await.unwrap();
    let client = start_remote_stateless(&hub, &hub.secret, TestClient::named("holdline-test"))
        .await
        .unwrap();
    assert_eq!(
        client.peer_info().unwrap().protocol_version,
        rmcp::model::ProtocolVersion::V_2026_07_28
    );
    round_trip(&hub, &client).await;
    client.cancel().await.unwrap();
}

/// The four tools are there; init binds to the address the hub saw; a wait gets the
/// reply once, and the next wait does not get it again.
async fn round_trip(hub: &TestHub, client: &Client) {
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<_> = tools.iter().map(|t| t.name.to_string()).collect();
    for tool in [
        "init_conversation",
        "select_conversation",
        "wait_for_user_input",
        "merge_conversation",
    ] {
        assert!(
            names.iter().any(|n| n == tool),
            "{tool} missing from {names:?}"
        );
    }

    let token = init(client, "remote work").await.unwrap();
    let session = hub.session(&token).await.unwrap();
    assert_eq!(session["hostIp"], "127.0.0.1", "binding host: {session}");

    let wait = start_call(
        client,
        "wait_for_user_input",
        json!({"token": token, "message": "step one done"}),
    )
    .await
    .unwrap();
    hub.wait_status(&token, "waiting").await.unwrap();
    hub.reply(&token, "go on with step two", json!([]))
        .await
        .unwrap();
    let result = finish(wait).await.unwrap();
    assert_ne!(result.is_error, Some(true), "{}", text(&result));
    assert!(
        text(&result).contains("go on with step two"),
        "{}",
        text(&result)
    );
    assert_eq!(structured(&result)["status"], "replied");

    // Delivered once: the next wait does not get it again.
    let resume = structured(&result)["resume"].as_str().unwrap().to_owned();
    let again = tokio::time::timeout(
        Duration::from_secs(30),
        call(
            client,
            "wait_for_user_input",
            json!({"token": token, "message": "step two done", "resume": resume, "timeoutSec": 2}),
        ),
    )
    .await
    .expect("a short wait ends")
    .unwrap();
    assert!(
        !text(&again).contains("go on with step two"),
        "{}",
        text(&again)
    );
    let session = hub.session(&token).await.unwrap();
    assert_eq!(count_messages(&session, "step one done"), 1, "{session}");
    assert_eq!(
        count_messages(&session, "go on with step two"),
        1,
        "{session}"
    );
}

#[tokio::test]
async fn over_mcp_a_client_that_cannot_show_images_is_told_so_without_the_data() {
    let home = tempfile::tempdir().unwrap();
    let hub = TestHub::start(home.path()).await.unwrap();
    let client = start_remote(&hub, &hub.secret, "cline").await.unwrap();
    let token = init(&client, "remote images").await.unwrap();
    let wait = start_call(
        &client,
        "wait_for_user_input",
        json!({"token": token, "message": "which one?"}),
    )
    .await
    .unwrap();
    hub.wait_status(&token, "waiting").await.unwrap();
    hub.reply(
        &token,
        "this one",
        json!([{"mimeType": "image/png", "data": PNG_1PX}]),
    )
    .await
    .unwrap();
    let r = finish(wait).await.unwrap();
    assert!(r.content.iter().all(|c| c.as_image().is_none()));
    let all = serde_json::to_string(&r).unwrap();
    assert!(
        !all.contains("iVBORw0KGgo"),
        "image data in the result: {all}"
    );
    let t = text(&r);
    assert!(
        t.starts_with("this one\nThe person attached 1 image that this client cannot show you; if it matters, ask the person to describe it."),
        "{t}"
    );
    assert!(structured(&r)["reply"].get("imageFiles").is_none());
    assert_eq!(structured(&r)["reply"]["images"], 1);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_wrong_credential_gets_a_json_rpc_401_with_one_sentence() {
    let home = tempfile::tempdir().unwrap();
    let hub = TestHub::start(home.path()).await.unwrap();
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}});
    for bearer in [Some("not-the-secret"), None] {
        let mut request = hub
            .http
            .post(format!("{}/mcp", hub.url()))
            .header("Accept", "application/json, text/event-stream")
            .json(&initialize);
        if let Some(b) = bearer {
            request = request.bearer_auth(b);
        }
        let answer = request.send().await.unwrap();
        assert_eq!(answer.status(), 401);
        let body: Value = answer.json().await.unwrap();
        assert_eq!(body["jsonrpc"], "2.0", "{body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("secret") || message.contains("key"),
            "{message}"
        );
    }
}

#[tokio::test]
async fn an_oversized_request_is_refused_as_too_large_and_the_session_keeps_working() {
    let home = tempfile::tempdir().unwrap();
    let hub = TestHub::start(home.path()).await.unwrap();
    let client = start_remote(&hub, &hub.secret, "holdline-test")
        .await
        .unwrap();
    let token = init(&client, "big").await.unwrap();

    let huge = "x".repeat(2 * 1024 * 1024);
    // Its own connection: the hub closes one whose body it refused to read.
    let answer = reqwest::Client::new()
        .post(format!("{}/mcp", hub.url()))
        .bearer_auth(&hub.secret)
        .header("Accept", "application/json, text/event-stream")
        .json(
            &json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {
            "name": "wait_for_user_input", "arguments": {"token": token, "message": huge}}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 413);
    let body: Value = answer.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("TOO_LARGE"),
        "{body}"
    );

    // Nothing stored, and the agent's next call works.
    let session = hub.session(&token).await.unwrap();
    assert_eq!(count_messages(&session, &huge), 0);
    let r = call(
        &client,
        "wait_for_user_input",
        json!({"token": token, "message": "short", "timeoutSec": 1}),
    )
    .await
    .unwrap();
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
}

/// The wait is called without rmcp's tool router over `/mcp`: arguments that do not
/// parse are the same tool error the router gives, nothing is stored, the session goes on.
#[tokio::test]
async fn wait_arguments_that_do_not_parse_are_a_tool_error_and_nothing_is_stored() {
    let home = tempfile::tempdir().unwrap();
    let hub = TestHub::start(home.path()).await.unwrap();
    let client = start_remote(&hub, &hub.secret, "holdline-test")
        .await
        .unwrap();
    let token = init(&client, "bad arguments").await.unwrap();

    for arguments in [
        json!({"message": "no token"}),
        json!({"token": token, "message": 42}),
    ] {
        let r = call(&client, "wait_for_user_input", arguments.clone())
            .await
            .unwrap();
        assert_eq!(r.is_error, Some(true), "{arguments}: {}", text(&r));
        assert!(
            text(&r).starts_with("failed to deserialize parameters:"),
            "{arguments}: {}",
            text(&r)
        );
    }
    let session = hub.session(&token).await.unwrap();
    assert_ne!(session["status"], "waiting", "{session}");
    assert_eq!(count_messages(&session, "no token"), 0);

    let r = call(
        &client,
        "wait_for_user_input",
        json!({"token": token, "message": "good", "timeoutSec": 1}),
    )
    .await
    .unwrap();
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    client.cancel().await.unwrap();
}

/// A client of `/mcp` that declares the MCP Tasks extension.
async fn tasks_client(hub: &TestHub) -> Client {
    tasks_client_with(hub, &hub.secret).await
}

async fn tasks_client_with(hub: &TestHub, bearer: &str) -> Client {
    let client = TestClient {
        tasks: true,
        ..TestClient::named("holdline-test")
    };
    start_remote_as(hub, bearer, client).await.unwrap()
}

/// Starts `wait_for_user_input` as a task; answers its id.
async fn start_task(client: &Client, token: &str, message: &str) -> String {
    let answer = client
        .call_tool_once(
            rmcp::model::CallToolRequestParams::new("wait_for_user_input")
                .with_arguments(args(json!({"token": token, "message": message}))),
        )
        .await
        .unwrap();
    match answer {
        rmcp::model::CallToolResponse::Task(t) => {
            assert_eq!(t.task.status, rmcp::model::TaskStatus::Working);
            t.task.task_id
        }
        other => panic!("expected a task, got {other:?}"),
    }
}

async fn get_task(client: &Client, id: &str) -> rmcp::model::GetTaskResult {
    client
        .get_task(rmcp::model::GetTaskParams::new(id))
        .await
        .unwrap()
}

/// Polls the task as a client does until it leaves `working`.
async fn task_outcome(client: &Client, id: &str) -> rmcp::model::DetailedTask {
    let started = std::time::Instant::now();
    loop {
        let t = get_task(client, id).await.task;
        if t.status() != rmcp::model::TaskStatus::Working {
            return t;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "task still working"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn completed_text(t: &rmcp::model::DetailedTask) -> String {
    match &t.payload {
        rmcp::model::TaskPayload::Completed { result } => {
            result.get("content").unwrap().to_string()
        }
        other => panic!("expected completed, got {other:?}"),
    }
}

#[tokio::test]
async fn a_task_reports_working_then_completes_once_with_the_reply() {
    let home = tempfile::tempdir().unwrap();
    let hub = TestHub::start(home.path()).await.unwrap();
    let client = tasks_client(&hub).await;
    let info = client.peer_info().unwrap();
    assert!(
        info.capabilities.supports_tasks(),
        "tasks extension not advertised"
    );
    let token = init(&client, "task work").await.unwrap();

    let id = start_task(&client, &token, "ready for review").await;
    hub.wait_status(&token, "waiting").await.unwrap();
    let working = get_task(&client, &id).await.task;
    assert_eq!(working.status(), rmcp::model::TaskStatus::Working);
    let message = working.task.status_message.clone().unwrap_or_default();
    assert!(message.contains("waiting for the person"), "{message}");

    hub.reply(&token, "looks good, ship it", json!([]))
        .await
        .unwrap();
    let done = task_outcome(&client, &id).await;
    assert!(completed_text(&done).contains("looks good, ship it"));
    // The same result on every later poll, and the reply consumed once.
    let again = get_task(&client, &id).await.task;
    assert_eq!(completed_text(&again), completed_text(&done));
    let session = hub.session(&token).await.unwrap();
    assert_eq!(count_messages(&session, "ready for review"), 1, "{session}");
    assert_eq!(
        count_messages(&session, "looks good, ship it"),
        1,
        "{session}"
    );
    assert_ne!(session["status"], "waiting", "{session}");

    // The next wait is a new task that does not get that reply again.
    let next = start_task(&client, &token, "shipped").await;
    hub.wait_status(&token, "waiting").await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        get_task(&client, &next).await.task.status(),
        rmcp::model::TaskStatus::Working
    );
}

#[tokio::test]
async fn a_task_whose_client_stops_polling_leaves_no_waiting_session_until_it_polls_again() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.toml"), "wait_grace_sec = 3\n").unwrap();
    let hub = TestHub::start(home.path()).await.unwrap();
    let client = tasks_client(&hub).await;
    let token = init(&client, "ghost").await.unwrap();
    let id = start_task(&client, &token, "are you there").await;
    hub.wait_status(&token, "waiting").await.unwrap();

    // The client goes quiet: within the grace (and a poll interval) the session is not
    // waiting, and the person's reply queues.
    hub.wait_status(&token, "holding").await.unwrap();
    let answered = hub.reply(&token, "here now", json!([])).await.unwrap();
    assert_eq!(answered["queued"], true, "{answered}");

    // It polls again: the wait opens again and completes with the queued reply.
    let done = task_outcome(&client, &id).await;
    assert!(completed_text(&done).contains("here now"));
    let session = hub.session(&token).await.unwrap();
    assert_eq!(count_messages(&session, "are you there"), 1, "{session}");
}

#[tokio::test]
async fn a_task_survives_a_hub_restart_and_completes_with_a_reply_given_meanwhile() {
    let home = tempfile::tempdir().unwrap();
    let mut hub = TestHub::start(home.path()).await.unwrap();
    let client = tasks_client(&hub).await;
    let token = init(&client, "restart").await.unwrap();
    let id = start_task(&client, &token, "long job finished").await;
    hub.wait_status(&token, "waiting").await.unwrap();

    hub.kill();
    let addr = hub.addr.clone();
    let hub = TestHub::start_on(home.path(), &addr).await.unwrap();
    // The person answers while no agent polls (the hub keeps the wait open for the grace).
    hub.reply(&token, "thanks, next step", json!([]))
        .await
        .unwrap();

    // The agent's client reconnects and polls its task: it completes with that reply.
    let client = tasks_client(&hub).await;
    let done = task_outcome(&client, &id).await;
    assert!(completed_text(&done).contains("thanks, next step"));
    let session = hub.session(&token).await.unwrap();
    assert_eq!(
        count_messages(&session, "long job finished"),
        1,
        "{session}"
    );
    assert_eq!(
        count_messages(&session, "thanks, next step"),
        1,
        "{session}"
    );
}

/// A hub that dies after a task stored its result and before the task's reply was acked:
/// after the restart the reply is the task's alone — acked, not queued — and the agent's
/// next wait (a new task) does not complete with it again.
#[tokio::test]
async fn a_crash_between_a_task_result_and_its_ack_does_not_deliver_the_reply_twice() {
    let home = tempfile::tempdir().unwrap();
    let crash_point = [("HOLDLINE_CRASH_POINT", "task-result-stored")];
    let mut hub = TestHub::start_with_env(home.path(), "127.0.0.1:0", &crash_point)
        .await
        .unwrap();
    let client = tasks_client(&hub).await;
    let token = init(&client, "crash between").await.unwrap();
    let id = start_task(&client, &token, "first question").await;
    hub.wait_status(&token, "waiting").await.unwrap();
    // Its answer may not make it out before the hub dies; the reply is stored first.
    let _ = hub.reply(&token, "the one answer", json!([])).await;
    hub.died().await.unwrap();

    let hub = TestHub::start(home.path()).await.unwrap();
    let client = tasks_client(&hub).await;
    let done = task_outcome(&client, &id).await;
    assert!(completed_text(&done).contains("the one answer"));

    let next = start_task(&client, &token, "second question").await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let t = get_task(&client, &next).await.task;
    assert_eq!(
        t.status(),
        rmcp::model::TaskStatus::Working,
        "the next task got the reply again: {t:?}"
    );
    let session = hub.session(&token).await.unwrap();
    assert_eq!(session["queuedReplies"], 0, "{session}");
    assert_eq!(count_messages(&session, "the one answer"), 1, "{session}");
}

/// A plain `/mcp` call whose result reached the agent, and then the hub died before the
/// reply's ack (stood in for here by taking the reply at the agent routes without an ack):
/// the agent's next call passes the `resume` that result gave, which names the reply, so
/// the restarted hub acks it instead of returning it a second time.
#[tokio::test]
async fn a_reply_whose_ack_a_restart_lost_is_not_returned_to_an_agent_whose_resume_names_it() {
    let home = tempfile::tempdir().unwrap();
    let hub = TestHub::start(home.path()).await.unwrap();
    let client = start_remote(&hub, &hub.secret, "holdline-test")
        .await
        .unwrap();
    let r = call(
        &client,
        "init_conversation",
        json!({"cursorTitle": "lost ack", "workspace": "/w"}),
    )
    .await
    .unwrap();
    let token = structured(&r)["token"].as_str().unwrap().to_owned();
    let agent_route = |path: &str, body: Value| {
        hub.http
            .post(format!("{}{path}", hub.url()))
            .bearer_auth(&hub.secret)
            .json(&body)
            .send()
    };
    let registered: Value = agent_route(
        "/api/wait/register",
        json!({"token": token, "message": "step one", "cursorTitle": "lost ack",
               "workspace": "/w", "hostIp": "127.0.0.1", "requestId": "q-1"}),
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    let wait_id = registered["waitId"].as_str().expect("a wait id").to_owned();
    let sent = hub.reply(&token, "the answer", json!([])).await.unwrap();
    let reply_id = sent["replyId"].as_str().unwrap().to_owned();
    let polled: Value = agent_route(
        "/api/wait/poll",
        json!({"token": token, "waitId": wait_id, "timeoutMs": 0}),
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    assert_eq!(polled["reply"]["id"], reply_id.as_str(), "{polled}");

    // The result that carried the reply gave this resume value; the agent passes it on.
    let resume = holdline_tools::delivery::resume_naming(&reply_id);
    let r = call(
        &client,
        "wait_for_user_input",
        json!({"token": token, "message": "step two", "resume": resume, "timeoutSec": 2}),
    )
    .await
    .unwrap();
    assert_eq!(
        structured(&r)["status"],
        "no_reply_yet",
        "the reply came back: {}",
        text(&r)
    );
    let session = hub.session(&token).await.unwrap();
    assert_eq!(session["queuedReplies"], 0, "{session}");
    assert_eq!(count_messages(&session, "the answer"), 1, "{session}");
}

/// A cancel that lands while the task's wait is returning a reply: the task reads
/// `cancelled`, so nobody reads that result — the reply is not acked and the agent's next
/// wait gets it.
#[tokio::test]
async fn a_reply_caught_by_a_cancelled_task_goes_to_the_next_wait() {
    let home = tempfile::tempdir().unwrap();
    let slow_point = [("HOLDLINE_SLOW_POINT", "task-result-ready")];
    let hub = TestHub::start_with_env(home.path(), "127.0.0.1:0", &slow_point)
        .await
        .unwrap();
    let client = tasks_client(&hub).await;
    let token = init(&client, "cancel race").await.unwrap();
    let id = start_task(&client, &token, "first question").await;
    hub.wait_status(&token, "waiting").await.unwrap();
    hub.reply(&token, "caught in the middle", json!([]))
        .await
        .unwrap();
    // The task's wait has the reply and lingers two seconds before storing it.
    tokio::time::sleep(Duration::from_millis(500)).await;
    client
        .cancel_task(rmcp::model::CancelTaskParams::new(id.clone()))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let t = get_task(&client, &id).await.task;
    assert_eq!(t.status(), rmcp::model::TaskStatus::Cancelled);
    let session = hub.session(&token).await.unwrap();
    assert_eq!(
        session["queuedReplies"], 1,
        "the reply was consumed by a task nobody reads: {session}"
    );

    let next = start_task(&client, &token, "second question").await;
    let done = task_outcome(&client, &next).await;
    assert!(completed_text(&done).contains("caught in the middle"));
}

#[tokio::test]
async fn cancelling_a_task_ends_the_wait_and_a_later_reply_queues() {
    let home = tempfile::tempdir().unwrap();
    let hub = TestHub::start(home.path()).await.unwrap();
    let client = tasks_client(&hub).await;
    let token = init(&client, "cancel").await.unwrap();
    let id = start_task(&client, &token, "waiting on you").await;
    hub.wait_status(&token, "waiting").await.unwrap();

    client
        .cancel_task(rmcp::model::CancelTaskParams::new(id.clone()))
        .await
        .unwrap();
    hub.wait_status(&token, "holding").await.unwrap();
    let answered = hub.reply(&token, "too late", json!([])).await.unwrap();
    assert_eq!(answered["queued"], true, "{answered}");
    let t = get_task(&client, &id).await.task;
    assert_eq!(t.status(), rmcp::model::TaskStatus::Cancelled);

    let unknown = client
        .get_task(rmcp::model::GetTaskParams::new(
            "task_00000000000000000000000000000000",
        ))
        .await;
    let e = unknown
        .expect_err("an unknown task is not found")
        .to_string();
    assert!(e.contains("no task"), "{e}");
}

#[tokio::test]
async fn a_client_that_drops_the_stream_mid_wait_stops_waiting_and_gets_the_reply_on_its_next_call()
{
    let home = tempfile::tempdir().unwrap();
    let hub = TestHub::start(home.path()).await.unwrap();
    let client = start_remote(&hub, &hub.secret, "holdline-test")
        .await
        .unwrap();
    let r = call(&client, "init_conversation", json!({"cursorTitle": "drop"}))
        .await
        .unwrap();
    let token = structured(&r)["token"].as_str().unwrap().to_owned();
    let resume = structured(&r)["resume"].as_str().unwrap().to_owned();

    // The same agent's wait, on a stream that is then dropped (a network blip, a client
    // restart): raw HTTP, so the drop is real.
    let http = reqwest::Client::new();
    let post = |body: Value, session: Option<String>| {
        let mut request = http
            .post(format!("{}/mcp", hub.url()))
            .bearer_auth(&hub.secret)
            .header("Accept", "application/json, text/event-stream")
            .json(&body);
        if let Some(s) = session {
            request = request.header("Mcp-Session-Id", s);
        }
        request.send()
    };
    let opened = post(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "holdline-test", "version": "1"}}}),
        None,
    )
    .await
    .unwrap();
    let session = opened.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    // Every event carries a JSON message: no empty priming event (Gemini CLI's SDK parses
    // each `data:` as JSON and disconnects on an empty one).
    let events = opened.text().await.unwrap();
    let data: Vec<&str> = events
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .collect();
    assert!(!data.is_empty(), "{events}");
    for d in data {
        serde_json::from_str::<Value>(d.trim()).unwrap_or_else(|e| panic!("{e}: {events:?}"));
    }
    post(
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        Some(session.clone()),
    )
    .await
    .unwrap();
    let waiting = post(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "wait_for_user_input",
            "arguments": {"token": token, "message": "built it", "resume": resume}}}),
        Some(session),
    )
    .await
    .unwrap();
    assert_eq!(waiting.status(), 200);
    hub.wait_status(&token, "waiting").await.unwrap();
    drop(waiting);
    drop(http);

    // Closing the stream is how some clients stop (Ctrl-C): the wait ends now, not at
    // the call's 50 s limit, and the person's reply queues.
    hub.wait_status(&token, "holding").await.unwrap();
    let answered = hub.reply(&token, "now test it", json!([])).await.unwrap();
    assert_eq!(answered["queued"], true, "{answered}");
    // The agent calls again, showing the last result it saw: it gets the reply.
    let again = call(
        &client,
        "wait_for_user_input",
        json!({"token": token, "message": "built it", "resume": resume, "timeoutSec": 10}),
    )
    .await
    .unwrap();
    assert!(text(&again).contains("now test it"), "{}", text(&again));
    let session = hub.session(&token).await.unwrap();
    assert_eq!(count_messages(&session, "built it"), 1, "{session}");
    assert_eq!(count_messages(&session, "now test it"), 1, "{session}");
}

#[tokio::test]
async fn the_installed_entrys_max_wait_header_sets_how_long_one_wait_blocks() {
    let home = tempfile::tempdir().unwrap();
    let hub = TestHub::start(home.path()).await.unwrap();
    // An unknown client waits 50 s; the header `install` writes says 2.
    let client = start_remote_with_header(
        &hub,
        &hub.secret,
        "holdline-test",
        ("holdline-max-wait-sec", "2"),
    )
    .await
    .unwrap();
    let token = init(&client, "limits").await.unwrap();
    let r = tokio::time::timeout(
        Duration::from_secs(20),
        call(
            &client,
            "wait_for_user_input",
            json!({"token": token, "message": "m"}),
        ),
    )
    .await
    .expect("the header's 2 s limit, not the unknown client's 50 s")
    .unwrap();
    assert_eq!(structured(&r)["status"], "no_reply_yet", "{}", text(&r));
}

#[tokio::test]
async fn an_agent_key_waits_over_mcp_and_a_revoke_ends_its_wait_at_once() {
    let home = tempfile::tempdir().unwrap();
    let hub = TestHub::start(home.path()).await.unwrap();
    let key = make_key(&hub, "laptop").await;
    let client = start_remote(&hub, &key, "holdline-test").await.unwrap();
    let token = init(&client, "keyed").await.unwrap();
    let wait = start_call(
        &client,
        "wait_for_user_input",
        json!({"token": token, "message": "on it", "timeoutSec": 40}),
    )
    .await
    .unwrap();
    hub.wait_status(&token, "waiting").await.unwrap();

    let revoked = hub
        .http
        .delete(format!("{}/api/keys/laptop", hub.url()))
        .bearer_auth(&hub.secret)
        .send()
        .await
        .unwrap();
    assert_eq!(revoked.status(), 200);
    let ended = tokio::time::timeout(Duration::from_secs(10), finish(wait))
        .await
        .expect("the wait ends at once, not at its 40 s limit")
        .unwrap();
    assert_eq!(ended.is_error, Some(true), "{}", text(&ended));
    assert!(text(&ended).contains("revoked"), "{}", text(&ended));
    hub.wait_status(&token, "holding").await.unwrap();

    // Locked out: the next request is a 401 with one sentence.
    let answer = hub
        .http
        .post(format!("{}/mcp", hub.url()))
        .bearer_auth(&key)
        .header("Accept", "application/json, text/event-stream")
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 401);
    let body: Value = answer.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("revoked"),
        "{body}"
    );
}

#[tokio::test]
async fn another_keys_task_is_not_found_and_cannot_be_cancelled() {
    let home = tempfile::tempdir().unwrap();
    let hub = TestHub::start(home.path()).await.unwrap();
    let (laptop, desktop) = (
        make_key(&hub, "laptop").await,
        make_key(&hub, "desktop").await,
    );
    let owner = tasks_client_with(&hub, &laptop).await;
    let token = init(&owner, "mine").await.unwrap();
    let id = start_task(&owner, &token, "mine to wait on").await;
    hub.wait_status(&token, "waiting").await.unwrap();

    let other = tasks_client_with(&hub, &desktop).await;
    let read = other
        .get_task(rmcp::model::GetTaskParams::new(id.clone()))
        .await;
    assert!(read.expect_err("not found").to_string().contains("no task"));
    let cancel = other
        .cancel_task(rmcp::model::CancelTaskParams::new(id.clone()))
        .await;
    assert!(
        cancel
            .expect_err("not found")
            .to_string()
            .contains("no task")
    );
    assert_eq!(
        get_task(&owner, &id).await.task.status(),
        rmcp::model::TaskStatus::Working
    );
    assert_eq!(hub.session(&token).await.unwrap()["status"], "waiting");
}

/// Starts `wait_for_user_input` as a task and expects a refusal; answers its text.
async fn refused_task(client: &Client, token: &str) -> String {
    let answer = client
        .call_tool_once(
            rmcp::model::CallToolRequestParams::new("wait_for_user_input")
                .with_arguments(args(json!({"token": token, "message": "one more"}))),
        )
        .await;
    answer.expect_err("refused").to_string()
}

#[tokio::test]
async fn a_credentials_tasks_are_bounded_its_oldest_finished_first_then_refused() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        "[mcp]\ntasks_per_credential = 2\n",
    )
    .unwrap();
    let hub = TestHub::start(home.path()).await.unwrap();
    let key = make_key(&hub, "laptop").await;
    let client = tasks_client_with(&hub, &key).await;
    let mut tokens = Vec::new();
    for title in ["one", "two", "three"] {
        tokens.push(init(&client, title).await.unwrap());
    }

    let finished = start_task(&client, &tokens[0], "first").await;
    hub.wait_status(&tokens[0], "waiting").await.unwrap();
    hub.reply(&tokens[0], "done with one", json!([]))
        .await
        .unwrap();
    task_outcome(&client, &finished).await;
    let working = start_task(&client, &tokens[1], "second").await;
    hub.wait_status(&tokens[1], "waiting").await.unwrap();

    // The third makes room by dropping the finished one, never the working one.
    let third = start_task(&client, &tokens[2], "third").await;
    let gone = client
        .get_task(rmcp::model::GetTaskParams::new(finished.clone()))
        .await;
    assert!(gone.expect_err("dropped").to_string().contains("no task"));
    for id in [&working, &third] {
        assert_eq!(
            get_task(&client, id).await.task.status(),
            rmcp::model::TaskStatus::Working
        );
    }

    // Both working: the next is refused with one sentence, and nothing else changes.
    let refusal = refused_task(&client, &tokens[0]).await;
    assert!(refusal.contains("TOO_MANY_TASKS"), "{refusal}");
    assert_eq!(
        get_task(&client, &working).await.task.status(),
        rmcp::model::TaskStatus::Working
    );
    // Another credential's room is its own.
    let person = tasks_client(&hub).await;
    let own = init(&person, "the person's").await.unwrap();
    start_task(&person, &own, "mine").await;
}

#[tokio::test]
async fn a_working_task_nobody_polls_is_dropped_after_the_keep_period() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        "wait_grace_sec = 1\n[mcp]\ntask_keep_sec = 2\n",
    )
    .unwrap();
    let hub = TestHub::start(home.path()).await.unwrap();
    let client = tasks_client(&hub).await;
    let token = init(&client, "abandoned").await.unwrap();
    let abandoned = start_task(&client, &token, "anyone there").await;
    hub.wait_status(&token, "waiting").await.unwrap();
    // Its client stops polling: the wait closes, and the record outlives the keep period
    // only until the next task comes.
    hub.wait_status(&token, "holding").await.unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let other = init(&client, "next").await.unwrap();
    let next = start_task(&client, &other, "next one").await;
    let gone = client
        .get_task(rmcp::model::GetTaskParams::new(abandoned))
        .await;
    assert!(gone.expect_err("dropped").to_string().contains("no task"));
    assert_eq!(
        get_task(&client, &next).await.task.status(),
        rmcp::model::TaskStatus::Working
    );
}

#[tokio::test]
async fn a_credentials_working_tasks_keep_at_most_16_mib_of_messages() {
    let home = tempfile::tempdir().unwrap();
    let hub = TestHub::start(home.path()).await.unwrap();
    let client = tasks_client(&hub).await;
    // Sixteen messages near the 1 MiB limit fit; the seventeenth is refused.
    let big = "m".repeat(1000 * 1024);
    for i in 0..16 {
        let token = init(&client, &format!("big {i}")).await.unwrap();
        start_task(&client, &token, &big).await;
    }
    let token = init(&client, "one too many").await.unwrap();
    let refusal = client
        .call_tool_once(
            rmcp::model::CallToolRequestParams::new("wait_for_user_input")
                .with_arguments(args(json!({"token": token, "message": big}))),
        )
        .await
        .expect_err("refused")
        .to_string();
    assert!(refusal.contains("TOO_MANY_TASKS"), "{refusal}");
    // A short one still has room.
    start_task(&client, &token, "short").await;
}
