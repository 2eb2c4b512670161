//! Crash test: several clients drive hundreds of sessions against the real hub
//! while it is killed with SIGKILL at random moments and restarted. Agents
//! speak three ways: the agent routes (as the stdio bridge does), plain
//! `wait_for_user_input` calls on `/mcp`, and MCP Tasks on `/mcp`. Afterwards
//! every reply answered 200 has reached its agent exactly once and is acked,
//! every agent message answered 200 on the agent routes is in the history once
//! and in order (every fifth with its attached file, bytes equal), and sessions
//! and bindings are intact.
//!
//! `HOLDLINE_CRASH_KILLS` (default 25) sets the number of kills for a long
//! run; `HOLDLINE_CRASH_SEED` replays a run's schedule.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::mcpclient::McpClient;
use crate::realhub::{Api, RealHub, free_addr};
use base64::Engine as _;
use serde_json::{Value, json};

const AGENTS: usize = 8;
const SESSIONS_PER_AGENT: usize = 30;
const PERSONS: usize = 2;
/// Agents on `/mcp` with plain calls, and with MCP Tasks; each drives this many sessions.
const MCP_AGENTS: usize = 2;
const MCP_SESSIONS_PER_AGENT: usize = 10;

/// How an agent reaches the hub.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Transport {
    /// The agent routes, as the stdio bridge calls them.
    Rest,
    /// `wait_for_user_input` on `/mcp`, each call answered with its result.
    McpCall,
    /// `wait_for_user_input` on `/mcp` as an MCP task, polled with `tasks/get`.
    McpTask,
}

/// xorshift64*: enough randomness for a schedule, and replayable from a seed.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, pct: u64) -> bool {
        self.below(100) < pct
    }
}

/// The file agent message `n` of session `i` carries (every fifth), as (name, bytes).
fn attachment_of(i: usize, n: u64) -> Option<(String, Vec<u8>)> {
    n.is_multiple_of(5).then(|| {
        let line = format!("log of session {i} step {n}\n");
        (format!("step-{n}.log"), line.repeat(200).into_bytes())
    })
}

/// Every agent message in the history that was sent with a file still has it, bytes
/// equal (a question with attachments survives kill -9 whole). The promises checked.
async fn verify_attachments(run: &Run, token: &str, i: usize, messages: &[Value]) -> u64 {
    let mut checked = 0;
    for m in messages.iter().filter(|m| m["role"] == "assistant") {
        let content = m["content"].as_str().unwrap_or("");
        let Some(n) = content
            .strip_prefix("agent message ")
            .and_then(|r| r.split(' ').next())
            .and_then(|n| n.parse::<u64>().ok())
        else {
            continue;
        };
        let Some((name, bytes)) = attachment_of(i, n) else {
            continue;
        };
        checked += 1;
        let file = &m["attachments"][0];
        if file["name"] != json!(name) {
            run.problem(format!("{token}: message {n} lost its attachment: {m}"));
            continue;
        }
        match run.api.get_bytes(file["url"].as_str().unwrap_or("")).await {
            Ok((200, got)) if got == bytes => {}
            other => run.problem(format!(
                "{token}: message {n}'s attachment answered {:?}",
                other.map(|(s, b)| (s, b.len()))
            )),
        }
    }
    checked
}

/// What the clients know the hub promised about one session.
struct Track {
    transport: Transport,
    token: Option<String>,
    title: String,
    workspace: String,
    host: String,
    thread: Option<String>,
    /// Agent messages whose register answered 200, in the order sent.
    messages: Vec<String>,
    /// Replies `/api/reply` answered 200 for.
    replies: Vec<String>,
    /// Replies whose ack answered 200 (on `/mcp`: that reached the agent).
    acked: HashSet<String>,
    next_step: u64,
    /// On `/mcp`: the `resume` value of the last result.
    resume: String,
    /// On `/mcp` with tasks: the task the agent polls.
    task: Option<String>,
}

#[derive(Default)]
struct Figures {
    inits: AtomicU64,
    registers: AtomicU64,
    replies: AtomicU64,
    deliveries: AtomicU64,
    redeliveries: AtomicU64,
    acks: AtomicU64,
    cancels: AtomicU64,
    renewals: AtomicU64,
    failed_in_flight: AtomicU64,
    duplicated: AtomicU64,
    lost: AtomicU64,
    /// Replies that reached an agent on `/mcp`, by plain calls and by tasks.
    mcp_call_replies: AtomicU64,
    mcp_task_replies: AtomicU64,
}

fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

fn get(c: &AtomicU64) -> u64 {
    c.load(Ordering::Relaxed)
}

struct Run {
    api: Api,
    tracks: Vec<Mutex<Track>>,
    stop: AtomicBool,
    figures: Figures,
    problems: Mutex<Vec<String>>,
}

impl Run {
    fn track(&self, i: usize) -> std::sync::MutexGuard<'_, Track> {
        self.tracks[i].lock().unwrap()
    }

    fn problem(&self, p: String) {
        eprintln!("PROBLEM: {p}");
        self.problems.lock().unwrap().push(p);
    }

    /// POSTs until the hub answers; it may be down or restarting. Only used
    /// for requests a repeat cannot double: init (by binding), register (by
    /// requestId), poll, ack (by reply id) and cancel.
    async fn until_answered(&self, path: &str, body: &Value) -> (u16, Value) {
        // A restart takes well under a second; two minutes without an answer
        // is a hung hub, not a slow one.
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            match self.api.post(path, body).await {
                Ok(a) => return a,
                Err(e) => {
                    bump(&self.figures.failed_in_flight);
                    assert!(
                        Instant::now() < deadline,
                        "the hub stopped answering: {path} {body}: {e}"
                    );
                    tokio::time::sleep(Duration::from_millis(25)).await;
                }
            }
        }
    }

    async fn until_ok(&self, path: &str, body: &Value) -> Option<Value> {
        let (status, v) = self.until_answered(path, body).await;
        if status == 200 {
            Some(v)
        } else {
            self.problem(format!("{path} {body} answered {status} {v}"));
            None
        }
    }

    /// `init` with the session's fingerprint until it answers; the binding
    /// makes a repeat find the session a lost answer created.
    async fn ensure_session(&self, i: usize) -> Option<String> {
        let body = {
            let t = self.track(i);
            if let Some(token) = &t.token {
                return Some(token.clone());
            }
            fingerprint(&t)
        };
        let v = self.until_ok("/api/init", &body).await?;
        let token = v["token"].as_str()?.to_owned();
        bump(&self.figures.inits);
        self.track(i).token = Some(token.clone());
        Some(token)
    }

    /// Registers the next agent message (retrying with the same requestId),
    /// returning `(token, waitId)`.
    async fn register(&self, i: usize) -> Option<(String, String)> {
        let token = self.ensure_session(i).await?;
        let (body, message) = {
            let mut t = self.track(i);
            let n = t.next_step;
            t.next_step += 1;
            let message = format!("agent message {n} of session {i}");
            let mut body = fingerprint(&t);
            body["token"] = json!(token);
            body["message"] = json!(message);
            body["requestId"] = json!(format!("q-{i}-{n}"));
            body["completionPct"] = json!(n % 100);
            body["nextStep"] = json!(format!("step {}", n + 1));
            if let Some((name, bytes)) = attachment_of(i, n) {
                body["attachments"] = json!([{"name": name, "mimeType": "text/plain",
                    "data": base64::engine::general_purpose::STANDARD.encode(bytes)}]);
            }
            (body, message)
        };
        let v = self.until_ok("/api/wait/register", &body).await?;
        bump(&self.figures.registers);
        self.track(i).messages.push(message);
        Some((token, v["waitId"].as_str()?.to_owned()))
    }

    /// The person's reply: sent once, never retried (a repeat would be a
    /// second reply). Failed in flight, it may or may not be recorded; only a
    /// 200 makes a promise.
    async fn reply(&self, i: usize, text: String) {
        let Some(token) = self.track(i).token.clone() else {
            return;
        };
        match self
            .api
            .post("/api/reply", &json!({"token": token, "text": text}))
            .await
        {
            Ok((200, v)) => {
                bump(&self.figures.replies);
                let id = v["replyId"].as_str().unwrap_or_default().to_owned();
                self.track(i).replies.push(id);
            }
            Ok((status, v)) => self.problem(format!("reply to {token} answered {status} {v}")),
            Err(_) => bump(&self.figures.failed_in_flight),
        }
    }

    /// Polls the wait once through to an answer. Returns whether a reply came
    /// (and was acked).
    async fn poll_and_ack(
        &self,
        i: usize,
        token: &str,
        wait_id: &str,
        timeout_ms: u64,
        rng: &mut Rng,
    ) -> bool {
        let poll = json!({"token": token, "waitId": wait_id, "timeoutMs": timeout_ms});
        let Some(v) = self.until_ok("/api/wait/poll", &poll).await else {
            return false;
        };
        match v["status"].as_str() {
            Some("replied") => {
                let id = v["reply"]["id"].as_str().unwrap_or_default().to_owned();
                bump(&self.figures.deliveries);
                if self.track(i).acked.contains(&id) {
                    bump(&self.figures.duplicated);
                    self.problem(format!("{token}: reply {id} delivered again after its ack"));
                }
                if rng.chance(20) {
                    // Until it is acked, a poll answers the same reply again.
                    let again = json!({"token": token, "waitId": wait_id, "timeoutMs": 0});
                    if let Some(v2) = self.until_ok("/api/wait/poll", &again).await {
                        bump(&self.figures.redeliveries);
                        if v2["reply"]["id"].as_str() != Some(id.as_str()) {
                            self.problem(format!(
                                "{token}: a poll before the ack of {id} answered {v2}"
                            ));
                        }
                    }
                }
                let ack = json!({"token": token, "waitId": wait_id, "replyId": id});
                if self.until_ok("/api/wait/ack", &ack).await.is_some() {
                    bump(&self.figures.acks);
                    self.track(i).acked.insert(id);
                }
                true
            }
            Some("renewal") => {
                bump(&self.figures.renewals);
                false
            }
            // Only this client touches the session's waits: nothing may end one.
            _ => {
                self.problem(format!("{token}: poll of open wait {wait_id} answered {v}"));
                false
            }
        }
    }

    /// One turn of an agent on session `i`: message, maybe a reply typed at
    /// once, then a short poll; on no reply, sometimes cancel, else leave the
    /// session waiting (through the next kill).
    async fn agent_turn(&self, i: usize, rng: &mut Rng) {
        let Some((token, wait_id)) = self.register(i).await else {
            return;
        };
        if rng.chance(50) {
            let n = rng.next();
            self.reply(i, format!("quick reply {n:x} to session {i}"))
                .await;
        }
        let replied = self
            .poll_and_ack(i, &token, &wait_id, 50 + rng.below(250), rng)
            .await;
        if !replied && rng.chance(40) {
            let cancel = json!({"token": token, "waitId": wait_id});
            if self.until_ok("/api/wait/cancel", &cancel).await.is_some() {
                bump(&self.figures.cancels);
            }
        }
    }

    /// After the kills: takes every queued reply of session `i` until a
    /// poll finds none.
    async fn drain(&self, i: usize, rng: &mut Rng) {
        for _ in 0..1000 {
            let Some((token, wait_id)) = self.register(i).await else {
                return;
            };
            if !self.poll_and_ack(i, &token, &wait_id, 0, rng).await {
                return;
            }
        }
        self.problem(format!("session {i} kept delivering replies"));
    }

    /// How many replies session `i` has queued at the hub.
    async fn queued(&self, i: usize) -> u64 {
        let Some(token) = self.track(i).token.clone() else {
            return 0;
        };
        self.api.session(&token).await["queuedReplies"]
            .as_u64()
            .unwrap_or(0)
    }

    /// Calls a tool on `/mcp` until it answers (the hub may be down or restarting);
    /// the same arguments each time, as an agent that never saw a result repeats its call.
    async fn mcp_until_answered(&self, mcp: &McpClient, method: &str, params: &Value) -> Value {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            match mcp.request(method, params.clone()).await {
                Ok(v) => return v,
                Err(e) => {
                    bump(&self.figures.failed_in_flight);
                    assert!(
                        Instant::now() < deadline,
                        "/mcp stopped answering: {method} {params}: {e}"
                    );
                    tokio::time::sleep(Duration::from_millis(25)).await;
                }
            }
        }
    }

    async fn mcp_tool(&self, mcp: &McpClient, name: &str, arguments: Value) -> Value {
        let params = json!({"name": name, "arguments": arguments});
        self.mcp_until_answered(mcp, "tools/call", &params).await
    }

    /// `init_conversation` on `/mcp` until it answers; the binding makes a repeat find
    /// the session a lost answer created.
    async fn mcp_session(&self, i: usize, mcp: &McpClient) -> Option<String> {
        let (title, workspace) = {
            let t = self.track(i);
            if let Some(token) = &t.token {
                return Some(token.clone());
            }
            (t.title.clone(), t.workspace.clone())
        };
        let r = self
            .mcp_tool(
                mcp,
                "init_conversation",
                json!({"cursorTitle": title, "workspace": workspace}),
            )
            .await;
        let Some(token) = r["structuredContent"]["token"].as_str() else {
            self.problem(format!("init_conversation on /mcp answered {r}"));
            return None;
        };
        bump(&self.figures.inits);
        let mut t = self.track(i);
        t.token = Some(token.to_owned());
        t.resume = r["structuredContent"]["resume"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        Some(token.to_owned())
    }

    /// The next wait's arguments on `/mcp`: a new message, the last result's `resume`.
    fn mcp_wait_arguments(&self, i: usize, token: &str) -> Value {
        let mut t = self.track(i);
        let n = t.next_step;
        t.next_step += 1;
        json!({"token": token, "message": format!("mcp message {n} of session {i}"),
               "resume": t.resume})
    }

    /// Takes a `wait_for_user_input` result: returns whether it was a reply.
    fn mcp_result(&self, i: usize, result: &Value) -> bool {
        let s = &result["structuredContent"];
        let token = s["token"].as_str().unwrap_or_default();
        let mut t = self.track(i);
        if let Some(resume) = s["resume"].as_str() {
            t.resume = resume.to_owned();
        }
        match s["status"].as_str() {
            Some("replied") => {
                let id = s["reply"]["id"].as_str().unwrap_or_default().to_owned();
                bump(&self.figures.deliveries);
                if !t.acked.insert(id.clone()) {
                    drop(t);
                    bump(&self.figures.duplicated);
                    self.problem(format!(
                        "{token}: reply {id} reached the /mcp agent twice ({:?})",
                        self.track(i).transport
                    ));
                    return true;
                }
                bump(&self.figures.acks);
                bump(match t.transport {
                    Transport::McpTask => &self.figures.mcp_task_replies,
                    _ => &self.figures.mcp_call_replies,
                });
                true
            }
            Some("no_reply_yet") => {
                bump(&self.figures.renewals);
                false
            }
            _ => {
                drop(t);
                self.problem(format!("session {i}: a /mcp wait answered {result}"));
                false
            }
        }
    }

    /// One turn of a plain `/mcp` agent on session `i`: a wait of a second, maybe with a
    /// reply typed at once.
    async fn mcp_call_turn(&self, i: usize, mcp: &McpClient, rng: &mut Rng) {
        let Some(token) = self.mcp_session(i, mcp).await else {
            return;
        };
        let mut arguments = self.mcp_wait_arguments(i, &token);
        arguments["timeoutSec"] = json!(1);
        if rng.chance(50) {
            let n = rng.next();
            self.reply(i, format!("quick reply {n:x} to session {i}"))
                .await;
        }
        let r = self.mcp_tool(mcp, "wait_for_user_input", arguments).await;
        self.mcp_result(i, &r);
    }

    /// One turn of a tasks agent on session `i`: a new task if it has none, then polls
    /// it for a moment. Returns whether the task ended with a reply.
    async fn mcp_task_turn(&self, i: usize, mcp: &McpClient, rng: &mut Rng) -> bool {
        let Some(token) = self.mcp_session(i, mcp).await else {
            return false;
        };
        let task = self.track(i).task.clone();
        let task = match task {
            Some(task) => task,
            None => {
                let arguments = self.mcp_wait_arguments(i, &token);
                if rng.chance(50) {
                    let n = rng.next();
                    self.reply(i, format!("quick reply {n:x} to session {i}"))
                        .await;
                }
                let r = self.mcp_tool(mcp, "wait_for_user_input", arguments).await;
                let Some(id) = r["taskId"].as_str() else {
                    self.problem(format!("{token}: a tasks client got no task: {r}"));
                    return false;
                };
                bump(&self.figures.registers);
                self.track(i).task = Some(id.to_owned());
                id.to_owned()
            }
        };
        let until = Instant::now() + Duration::from_millis(300 + rng.below(1200));
        while Instant::now() < until {
            let t = self
                .mcp_until_answered(mcp, "tasks/get", &json!({"taskId": task}))
                .await;
            match t["status"].as_str() {
                Some("working") => tokio::time::sleep(Duration::from_millis(100)).await,
                Some("completed") => {
                    self.track(i).task = None;
                    return self.mcp_result(i, &t["result"]);
                }
                _ => {
                    self.track(i).task = None;
                    self.problem(format!("{token}: task {task} ended as {t}"));
                    return false;
                }
            }
        }
        false
    }

    /// After the kills: takes every queued reply of `/mcp` session `i`; a task still
    /// working when none is queued is cancelled.
    async fn mcp_drain(&self, i: usize, mcp: &McpClient, rng: &mut Rng) {
        for _ in 0..1000 {
            let transport = self.track(i).transport;
            if transport == Transport::McpCall {
                let Some(token) = self.mcp_session(i, mcp).await else {
                    return;
                };
                let mut arguments = self.mcp_wait_arguments(i, &token);
                arguments["timeoutSec"] = json!(1);
                let r = self.mcp_tool(mcp, "wait_for_user_input", arguments).await;
                if !self.mcp_result(i, &r) {
                    return;
                }
                continue;
            }
            if self.mcp_task_turn(i, mcp, rng).await || self.queued(i).await > 0 {
                continue;
            }
            let working = self.track(i).task.take();
            if let Some(task) = working {
                self.mcp_until_answered(mcp, "tasks/cancel", &json!({"taskId": task}))
                    .await;
            }
            // A reply that came as the task was cancelled waits for the next task.
            if self.queued(i).await == 0 {
                return;
            }
        }
        self.problem(format!("session {i} kept delivering replies"));
    }
}

/// The caller fields of a session's agent (what the bridge sends).
fn fingerprint(t: &Track) -> Value {
    let mut body = json!({
        "cursorTitle": t.title,
        "workspace": t.workspace,
        "hostIp": t.host,
    });
    if let Some(th) = &t.thread {
        body["threadId"] = json!(th);
    }
    body
}

/// Reads a session from the (restarted) hub and compares it with what the
/// clients were promised. Returns the number of promises checked.
async fn verify(run: &Run, i: usize) -> u64 {
    let (transport, token, track_messages, replies, acked, title, body) = {
        let t = run.track(i);
        let Some(token) = t.token.clone() else {
            run.problem(format!("session {i} never got a token"));
            return 0;
        };
        (
            t.transport,
            token,
            t.messages.clone(),
            t.replies.clone(),
            t.acked.clone(),
            t.title.clone(),
            fingerprint(&t),
        )
    };
    let mut checked = 0;
    for r in &replies {
        checked += 1;
        if !acked.contains(r) {
            bump(&run.figures.lost);
            run.problem(format!(
                "{token} ({transport:?}): reply {r} answered 200 but never delivered"
            ));
        }
    }

    let s = run.api.session(&token).await;
    let messages = s["messages"].as_array().cloned().unwrap_or_default();
    if s["msgCount"].as_u64() != Some(messages.len() as u64) {
        run.problem(format!(
            "{token}: msgCount {} but {} messages in the history",
            s["msgCount"],
            messages.len()
        ));
    }
    for (n, m) in messages.iter().enumerate() {
        if m["seq"].as_u64() != Some(n as u64) {
            run.problem(format!("{token}: message {n} has seq {}", m["seq"]));
            break;
        }
    }
    if s["queuedReplies"].as_u64() != Some(0) {
        run.problem(format!(
            "{token}: {} replies still queued after the drain",
            s["queuedReplies"]
        ));
    }
    let from_agent: Vec<&str> = messages
        .iter()
        .filter(|m| m["role"] == "assistant")
        .filter_map(|m| m["content"].as_str())
        .collect();
    checked += track_messages.len() as u64;
    // On `/mcp` the message's hub request is made by the tools, which a restart resets:
    // only replies are this test's promise there.
    if transport == Transport::Rest && from_agent != track_messages {
        let first_diff = from_agent
            .iter()
            .zip(&track_messages)
            .position(|(a, b)| a != b)
            .unwrap_or(from_agent.len().min(track_messages.len()));
        run.problem(format!(
            "{token}: agent messages differ from those answered 200 at #{first_diff}: history has {} ({:?}), clients sent {} ({:?})",
            from_agent.len(),
            from_agent.get(first_diff),
            track_messages.len(),
            track_messages.get(first_diff)
        ));
    }
    if transport == Transport::Rest {
        checked += verify_attachments(run, &token, i, &messages).await;
    }
    let mut in_history: HashMap<&str, usize> = HashMap::new();
    for m in messages.iter().filter(|m| m["role"] == "user") {
        if let Some(id) = m["replyId"].as_str() {
            *in_history.entry(id).or_default() += 1;
        }
    }
    for (id, n) in &in_history {
        if *n > 1 {
            run.problem(format!("{token}: reply {id} is {n} times in the history"));
        }
    }
    for r in &replies {
        if !in_history.contains_key(r.as_str()) {
            run.problem(format!(
                "{token}: reply {r} answered 200 is not in the history"
            ));
        }
    }

    // Bindings: the same chat selects and re-inits to the same session.
    let mut select = body.clone();
    select["token"] = json!(token);
    checked += 2;
    match run.api.post("/api/select", &select).await {
        Ok((200, v)) if v["token"] == json!(token) => {}
        other => run.problem(format!("{token} ({title}): select answered {other:?}")),
    }
    match run.api.post("/api/init", &body).await {
        Ok((200, v)) if v["token"] == json!(token) && v["created"] == json!(false) => {}
        other => run.problem(format!("{token} ({title}): init again answered {other:?}")),
    }
    checked
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a minute of both cores: scripts/test-crash.sh runs it (--ignored --nocapture)"]
async fn acknowledged_work_survives_sigkill() {
    let kills: usize = std::env::var("HOLDLINE_CRASH_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(25);
    let seed: u64 = std::env::var("HOLDLINE_CRASH_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    eprintln!("crash test: {kills} kills, seed {seed} (HOLDLINE_CRASH_SEED={seed} replays it)");
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let mut hub = RealHub::start(&home, free_addr()).await;

    let rest_total = AGENTS * SESSIONS_PER_AGENT;
    let mcp_total = MCP_AGENTS * MCP_SESSIONS_PER_AGENT;
    let total = rest_total + 2 * mcp_total;
    let transport_of = |i: usize| match i {
        i if i < rest_total => Transport::Rest,
        i if i < rest_total + mcp_total => Transport::McpCall,
        _ => Transport::McpTask,
    };
    let tracks = (0..total)
        .map(|i| {
            let rest = transport_of(i) == Transport::Rest;
            Mutex::new(Track {
                transport: transport_of(i),
                token: None,
                title: format!("crash chat {i}"),
                workspace: format!("/work/crash/agent{}", i % AGENTS),
                // On `/mcp` the binding's host is the address the hub saw.
                host: if rest {
                    format!("10.0.{}.{}", i % AGENTS, 1 + i % 200)
                } else {
                    "127.0.0.1".to_owned()
                },
                thread: (rest && i % 5 == 0).then(|| format!("thread-{i}")),
                messages: Vec::new(),
                replies: Vec::new(),
                acked: HashSet::new(),
                next_step: 0,
                resume: String::new(),
                task: None,
            })
        })
        .collect();
    // Each `/mcp` agent's sessions, with its transport.
    let mcp_agents: Vec<(Transport, Vec<usize>)> = (0..2 * MCP_AGENTS)
        .map(|a| {
            let first = rest_total + a * MCP_SESSIONS_PER_AGENT;
            let sessions: Vec<usize> = (first..first + MCP_SESSIONS_PER_AGENT).collect();
            (transport_of(first), sessions)
        })
        .collect();
    let run = Arc::new(Run {
        api: hub.api.clone(),
        tracks,
        stop: AtomicBool::new(false),
        figures: Figures::default(),
        problems: Mutex::default(),
    });

    let mut agents = Vec::new();
    for a in 0..AGENTS {
        let run = run.clone();
        let mut rng = Rng::new(seed ^ (0x9e37_79b9 * (a as u64 + 1)));
        agents.push(tokio::spawn(async move {
            let mine: Vec<usize> = (0..rest_total).filter(|i| i % AGENTS == a).collect();
            while !run.stop.load(Ordering::Relaxed) {
                let i = mine[rng.below(mine.len() as u64) as usize];
                run.agent_turn(i, &mut rng).await;
            }
        }));
    }
    for (a, (transport, mine)) in mcp_agents.iter().cloned().enumerate() {
        let run = run.clone();
        let mcp = McpClient::new(hub.addr, &hub.api.secret, transport == Transport::McpTask);
        let mut rng = Rng::new(seed ^ (0x27d4_eb2f * (a as u64 + 201)));
        agents.push(tokio::spawn(async move {
            while !run.stop.load(Ordering::Relaxed) {
                let i = mine[rng.below(mine.len() as u64) as usize];
                if transport == Transport::McpTask {
                    run.mcp_task_turn(i, &mcp, &mut rng).await;
                } else {
                    run.mcp_call_turn(i, &mcp, &mut rng).await;
                }
            }
        }));
    }
    let mut persons = Vec::new();
    for p in 0..PERSONS {
        let run = run.clone();
        let mut rng = Rng::new(seed ^ (0x85eb_ca6b * (p as u64 + 101)));
        persons.push(tokio::spawn(async move {
            while !run.stop.load(Ordering::Relaxed) {
                let i = rng.below(total as u64) as usize;
                let n = rng.next();
                run.reply(i, format!("person {p} reply {n:x}")).await;
                tokio::time::sleep(Duration::from_millis(20 + rng.below(60))).await;
            }
        }));
    }

    let mut rng = Rng::new(seed);
    let mut survived = 0;
    for _ in 0..kills {
        tokio::time::sleep(Duration::from_millis(300 + rng.below(1500))).await;
        let known = run
            .tracks
            .iter()
            .filter(|t| t.lock().unwrap().token.is_some())
            .count();
        hub.kill();
        tokio::time::sleep(Duration::from_millis(rng.below(150))).await;
        hub.restart().await;
        survived += 1;
        let health = hub.api.health().await.expect("the restarted hub answers");
        let sessions = health["sessions"].as_u64().unwrap_or(0) as usize;
        if sessions < known {
            run.problem(format!(
                "after kill {survived}: the hub has {sessions} sessions, clients knew {known}"
            ));
        }
    }

    run.stop.store(true, Ordering::Relaxed);
    for h in persons.into_iter().chain(agents) {
        h.await.unwrap();
    }
    let mut drains = Vec::new();
    for a in 0..AGENTS {
        let run = run.clone();
        let mut rng = Rng::new(seed ^ a as u64);
        drains.push(tokio::spawn(async move {
            for i in (0..rest_total).filter(|i| i % AGENTS == a) {
                run.drain(i, &mut rng).await;
            }
        }));
    }
    for (a, (transport, mine)) in mcp_agents.iter().cloned().enumerate() {
        let run = run.clone();
        let mcp = McpClient::new(hub.addr, &hub.api.secret, transport == Transport::McpTask);
        let mut rng = Rng::new(seed ^ (a as u64 + 301));
        drains.push(tokio::spawn(async move {
            for i in mine {
                run.mcp_drain(i, &mcp, &mut rng).await;
            }
        }));
    }
    for h in drains {
        h.await.unwrap();
    }

    // One more crash, then check everything against what is on disk.
    hub.kill();
    hub.restart().await;
    survived += 1;
    let mut checked = 0;
    for i in 0..total {
        checked += verify(&run, i).await;
    }
    let health = hub.api.health().await.unwrap();
    if health["sessions"].as_u64() != Some(total as u64) {
        run.problem(format!(
            "the hub has {} sessions, expected {total}",
            health["sessions"]
        ));
    }
    let stderr = hub.stderr();
    if stderr.contains("panicked") {
        run.problem(format!("the hub panicked:\n{stderr}"));
    }
    hub.stop();

    let f = &run.figures;
    println!(
        "crash test: {survived} SIGKILLs survived, {total} sessions ({rest_total} on the agent routes, \
         {mcp_total} with plain /mcp calls, {mcp_total} with MCP Tasks), {checked} promises checked \
         ({} inits, {} agent messages, {} replies answered 200, {} deliveries, {} repeated polls before ack, \
         {} acks ({} on /mcp by plain calls, {} by tasks), {} cancels, {} renewals, {} requests failed in flight); lost: {}, duplicated: {}; {:.1} s",
        get(&f.inits),
        get(&f.registers),
        get(&f.replies),
        get(&f.deliveries),
        get(&f.redeliveries),
        get(&f.acks),
        get(&f.mcp_call_replies),
        get(&f.mcp_task_replies),
        get(&f.cancels),
        get(&f.renewals),
        get(&f.failed_in_flight),
        get(&f.lost),
        get(&f.duplicated),
        started.elapsed().as_secs_f64()
    );
    let problems = run.problems.lock().unwrap();
    assert!(
        problems.is_empty(),
        "{} problems, first: {}",
        problems.len(),
        problems[0]
    );
}
