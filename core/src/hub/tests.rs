//! The delivery rule at the Hub's own API, where a test can stand in the
//! window between a reply's write and the flush of the request that wrote it,
//! the size of the future every waiting session holds, and who hears of each
//! kind of change.

use super::*;

/// What a SIGKILL right now would leave: the store's files as they are on disk.
fn copy_as_after_a_crash(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_as_after_a_crash(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// A hub on a fresh home inside `dir`.
fn open_hub(dir: &std::path::Path) -> (Hub, crate::home::Home) {
    let home = crate::home::Home::new(dir.join("home"));
    home.prepare().unwrap();
    let config = Config::for_home(home.root.clone(), "127.0.0.1:13458".parse().unwrap());
    let hub = Hub::open(config, "test".into(), CancellationToken::new()).unwrap();
    (hub, home)
}

#[tokio::test]
async fn a_poll_answers_a_reply_only_once_a_crash_cannot_take_it_back() {
    let dir = tempfile::tempdir().unwrap();
    let (hub, home) = open_hub(dir.path());
    let caller = ("chat", "/ws", "10.0.0.2");
    let session = hub.init(secret_chat()).unwrap().unflushed();
    let wait_id = hub
        .register(RegisterRequest {
            token: session.token.clone(),
            message: "done; anything else?".into(),
            cursor_title: caller.0.into(),
            workspace: caller.1.into(),
            host_ip: caller.2.into(),
            request_id: "q-1".into(),
            completion_pct: None,
            next_step: None,
            options: vec![],
            multi_select: false,
            host_name: None,
            changes: None,
            attachments: Vec::new(),
            agent_key: None,
            origin: Default::default(),
        })
        .unwrap()
        .flushed(&hub)
        .await
        .unwrap();

    // The person's request has written the reply and rung the bell; its
    // flush (before its 200) has not run yet.
    let (reply_id, _) = hub
        .reply(&session.token, "go on".into(), vec![])
        .unwrap()
        .unflushed();
    let outcome = hub
        .poll(session.token.clone(), wait_id.clone(), Duration::ZERO, None)
        .await
        .unwrap();
    let PollOutcome::Replied(reply) = outcome else {
        panic!("the poll did not answer the reply: {outcome:?}");
    };
    assert_eq!(reply.id, reply_id);

    let crashed = dir.path().join("after-crash");
    copy_as_after_a_crash(&home.db_dir(), &crashed);
    let store = Store::open(&crashed, 1 << 20).unwrap();
    let queued: Vec<String> = store
        .queued_replies(&session.token)
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(
        queued,
        vec![reply_id],
        "the agent was handed a reply a crash would have lost"
    );
}

/// Every waiting session holds one poll future for ten seconds at a time, so
/// its size is memory × sessions (the 10,000-waiting RSS target). Sizes of the
/// debug build the tests run: 360 bytes; as an `async fn`, which keeps its
/// arguments twice, 440; as two, with the flush and its reply unboxed, up to 728.
#[tokio::test]
async fn a_held_poll_keeps_its_future_small() {
    let dir = tempfile::tempdir().unwrap();
    let (hub, _home) = open_hub(dir.path());
    let token = Token::generate();
    let poll = hub.poll(token, "w".into(), Duration::from_secs(1), None);
    let size = std::mem::size_of_val(&poll);
    assert!(size <= 400, "a held poll's future is {size} bytes");
}

/// A question of `origin` on `token`, registered as the secret's caller.
fn ask(hub: &Hub, token: &Token, request_id: &str, origin: QuestionOrigin) -> String {
    hub.register(RegisterRequest {
        token: token.clone(),
        message: format!("question {request_id}"),
        cursor_title: "chat".into(),
        workspace: "/ws".into(),
        host_ip: "10.0.0.2".into(),
        request_id: request_id.into(),
        completion_pct: None,
        next_step: None,
        options: vec![ChoiceOption {
            label: "Allow".into(),
            description: None,
        }],
        multi_select: false,
        host_name: None,
        changes: None,
        attachments: Vec::new(),
        agent_key: None,
        origin,
    })
    .unwrap()
    .unflushed()
}

#[tokio::test]
async fn a_permission_answer_reaches_only_the_wait_that_asked() {
    let dir = tempfile::tempdir().unwrap();
    let (hub, _home) = open_hub(dir.path());
    let token = a_session_on(&hub).await.token;
    let queued = |hub: &Hub| hub.inner.store.queued_replies(&token).unwrap();
    // A reply the person wrote for the agent while it worked.
    hub.reply(&token, "for the agent".into(), vec![])
        .unwrap()
        .unflushed();

    // The permission question's wait does not take it.
    let wait = ask(&hub, &token, "perm-1", QuestionOrigin::Permission);
    let poll = |w: &str| hub.poll_now(&token, w, None).unwrap();
    assert_eq!(poll(&wait), None);
    let answer = PersonReply {
        choices: vec![0],
        ..PersonReply::default()
    };
    hub.reply_with(&token, answer.clone()).unwrap().unflushed();
    let Some(PollOutcome::Replied(taken)) = poll(&wait) else {
        panic!("the permission answer was not given to its wait");
    };
    assert_eq!(taken.for_permission.as_deref(), Some("perm-1"));

    // Its hook stops before acking: the answer is dropped, the agent's reply stays.
    hub.cancel(&token, &wait, None).unwrap().unflushed();
    let left = queued(&hub);
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(left[0].text, "for the agent");

    // Answered while a newer question supersedes it: dropped in the same write.
    let wait = ask(&hub, &token, "perm-2", QuestionOrigin::Permission);
    hub.reply_with(&token, answer.clone()).unwrap().unflushed();
    let next = ask(&hub, &token, "stop-1", QuestionOrigin::Stopped);
    assert!(matches!(poll(&wait), Some(PollOutcome::Gone { .. })));
    let Some(PollOutcome::Replied(reply)) = poll(&next) else {
        panic!("the agent's reply did not reach its next wait");
    };
    assert_eq!(reply.text, "for the agent");
    assert_eq!(queued(&hub).len(), 1);

    // A pick for an unanswered permission question with no wait open is refused.
    hub.ack(&token, &next, &reply.id, None).unwrap().unflushed();
    let wait = ask(&hub, &token, "perm-3", QuestionOrigin::Permission);
    hub.cancel(&token, &wait, None).unwrap().unflushed();
    assert!(matches!(
        hub.reply_with(&token, answer),
        Err(HubError::PermissionOver)
    ));
}

/// A hub on a fresh home inside `dir` that keeps the set sync pushes from
/// (MongoDB configured; nothing connects to it here).
fn open_syncing_hub(dir: &std::path::Path, name: &str) -> Hub {
    let home = crate::home::Home::new(dir.join(name));
    home.prepare().unwrap();
    let mut config = Config::for_home(home.root.clone(), "127.0.0.1:13459".parse().unwrap());
    config.mongo_uri = Some("mongodb://127.0.0.1:1".into());
    Hub::open(config, name.into(), CancellationToken::new()).unwrap()
}

/// The init of the secret's bridge in chat `chat` of `/ws` on 10.0.0.2.
fn secret_chat() -> InitRequest {
    InitRequest {
        cursor_title: "chat".into(),
        workspace: "/ws".into(),
        host_ip: "10.0.0.2".into(),
        new_plan: false,
        plan_label: None,
        thread_id: None,
        host_name: None,
        agent_key: None,
    }
}

/// A new session of the secret's bridge on `hub`, on disk.
async fn a_session_on(hub: &Hub) -> InitOutcome {
    hub.init(secret_chat()).unwrap().flushed(hub).await.unwrap()
}

/// Who hears of a change is part of the change (`write::Swapped`): the hub's own
/// change tells the panel's stream and sync, an import tells sync only, and a copy
/// of another hub's session tells the panel and takes the session off sync's set.
#[tokio::test]
async fn each_kind_of_change_tells_whom_it_should() {
    let dir = tempfile::tempdir().unwrap();
    let (here, other) = (
        open_syncing_hub(dir.path(), "here"),
        open_syncing_hub(dir.path(), "other"),
    );
    let made = a_session_on(&other).await;
    let mut file = Vec::new();
    other
        .export_to(std::slice::from_ref(&made.token), &mut file)
        .unwrap();
    let mut panel = here.subscribe();

    let (imported, skipped) = here
        .import(serde_json::from_slice(&file).unwrap())
        .unwrap()
        .flushed(&here)
        .await
        .unwrap();
    assert_eq!((imported, skipped), (1, 0));
    assert!(
        panel.try_recv().is_err(),
        "an import is not on the panel's stream"
    );
    assert_eq!(here.sync_backlog().0, 1, "an import is for sync to push");
    let _ = here.take_unsynced(10);

    let archived = here
        .archive(&made.token)
        .unwrap()
        .flushed(&here)
        .await
        .unwrap();
    assert_eq!(panel.try_recv().unwrap().session.token, made.token);
    assert_eq!(here.sync_backlog().0, 1, "the hub's own change is for sync");

    // Another hub adopted it: this one keeps a copy, and has nothing to push.
    let mut adopted = archived.session;
    adopted.hub = "other".into();
    adopted.rev += 1;
    here.put_mirror(adopted, Vec::new(), Vec::new())
        .unwrap()
        .flushed(&here)
        .await
        .unwrap();
    let copy = panel.try_recv().unwrap().session;
    assert!(copy.mirror && copy.token == made.token, "{copy:?}");
    assert_eq!(here.sync_backlog().0, 0, "a copy is not pushed back");
    assert_eq!(here.owns(&made.token), Some(false));
}
