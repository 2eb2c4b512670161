//! MCP Tasks (SEP-2663, `io.modelcontextprotocol/tasks`) on `/mcp`: a
//! `wait_for_user_input` from a client that declares the extension becomes a durable task.
//! Its record survives a hub restart; it is `working` while the wait is open, completes
//! once with the tool's result, and `tasks/cancel` ends the wait (the session leaves
//! `waiting`, later replies queue).
//!
//! Invariants: a task's result is stored and flushed before its reply is acked at the hub,
//! so a reply is never consumed without a task holding it; a task ends once (its result
//! or a cancel), and a result that lost to a cancel leaves its reply for the next wait; a
//! reply a completed task holds is acked before `/mcp` serves again, so no later wait
//! returns it twice; only the credentials that made a task see or cancel it (any other
//! gets "not found"); a task's wait is held only while its client polls (`tasks/get`), so
//! a client that went away leaves no ghost wait — its next `tasks/get` (after a hub
//! restart too) opens the wait again. A credential has at most `tasks_per_credential`
//! records (its oldest finished one makes room, else a new task is refused); a finished
//! record, or a working one nobody polled, is dropped after `task_keep`; a record keeps
//! only the wait's own arguments, and none once finished.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use holdline_tools::{Tools, delivery::ClaimedReply, limits::MaxWait};
use rmcp::{
    ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CreateTaskResult, DetailedTask, ErrorData,
        GetTaskResult, JsonObject, NumberOrString, Task, TaskPayload,
    },
    service::{RequestContext, RoleServer},
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use crate::crash_point::CrashPoint;
use holdline_core::config::McpLimits;
use holdline_core::hub::Hub;
use holdline_store::lock::Unpoisoned as _;
use holdline_store::session::{Token, now_ms};
use holdline_store::store::{Store, StoreError};

/// Where task records live in the store's meta tree: `mcp-task/<id>`.
const PREFIX: &str = "mcp-task/";
/// How often a client is asked to poll at most.
const POLL_INTERVAL: Duration = Duration::from_secs(5);
/// The `wait_for_user_input` arguments a task keeps to open its wait again; any other is
/// dropped (the message is kept whole: the register request's id is a digest of it, so a
/// shortened one would be recorded again as a new message).
const WAIT_ARGUMENTS: [&str; 8] = [
    "token",
    "message",
    "resume",
    "cursorTitle",
    "completionPct",
    "nextStep",
    "workspace",
    "timeoutSec",
];

/// What a task record holds; stored as JSON, so fields are only ever added.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Record {
    id: String,
    /// SHA-256 of the credentials that made it (never the credentials).
    owner: String,
    created_ms: i64,
    updated_ms: i64,
    /// The `wait_for_user_input` arguments, to open the same wait again.
    arguments: JsonObject,
    /// The session's last reply id when the task began: the same message is then the same
    /// hub request after a restart, so it is never stored twice.
    last_reply: String,
    state: State,
    /// The reply a completed task returns and the wait it came from: acked at the next
    /// start if the hub stopped between storing the result and acking the reply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    delivered: Option<ClaimedReply>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
enum State {
    Working,
    Completed { result: JsonObject },
    Failed { error: JsonObject },
    Cancelled,
}

/// A task whose wait runs in this process.
struct Running {
    stop: CancellationToken,
    last_polled: Instant,
}

/// What one credential's working tasks may keep of their arguments in all: sixteen
/// messages at the register limit (1 MiB), thousands of usual ones.
const ARGUMENTS_PER_CREDENTIAL: usize = 16 * 1024 * 1024;

/// What the hub keeps in memory of each stored task: enough to count, order and drop them
/// without reading them.
struct Summary {
    owner: String,
    finished: bool,
    updated_ms: i64,
    /// The size of its stored arguments (none once finished).
    bytes: usize,
    /// When its client last polled it (or the hub started): a working task nobody polls
    /// for `task_keep` is dropped.
    seen: Instant,
}

/// Every task of this hub.
#[derive(Clone)]
pub struct Tasks {
    store: Store,
    /// Every stored record by id; a std mutex, map operations only.
    index: Arc<Mutex<HashMap<String, Summary>>>,
    per_credential: usize,
    keep: Duration,
    /// A std mutex: map operations only, never across `.await`.
    running: Arc<Mutex<HashMap<String, Running>>>,
    /// Held while a task leaves `working` (its result, or a cancel): exactly one wins, and
    /// a reply is acked only when its result is the one stored.
    endings: Arc<tokio::sync::Mutex<()>>,
    /// Ids unique in this hub for the runs' delivery bookkeeping (see `super`).
    next_id: Arc<std::sync::atomic::AtomicI64>,
    /// A task's wait is closed when its client has not polled for this long: the hub's
    /// `wait_grace_sec`, the rule for every unpolled wait (`None`: never).
    unpolled: Option<Duration>,
    /// How often clients are asked to poll: often enough for the grace.
    poll_interval: Duration,
}

/// Who asked: the SHA-256 of the request's credentials.
pub fn owner_of(ctx: &RequestContext<RoleServer>) -> String {
    match super::McpCaller::in_request(&ctx.extensions) {
        Some(caller) => caller.owner(),
        None => hex::encode(Sha256::digest([])),
    }
}

/// Whether the request declared the tasks extension (at `initialize` or in its `_meta`).
pub fn client_does_tasks(ctx: &RequestContext<RoleServer>) -> bool {
    holdline_tools::client::client_capabilities(ctx).is_some_and(|c| c.supports_tasks())
}

impl Tasks {
    /// The tasks in `store` (finished ones past their time are dropped); a task's wait
    /// closes when its client has not polled for `grace` (zero: never).
    pub fn open(
        store: Store,
        next_id: Arc<std::sync::atomic::AtomicI64>,
        grace: Duration,
        limits: &McpLimits,
    ) -> Tasks {
        let unpolled = (!grace.is_zero()).then_some(grace);
        let poll_interval = unpolled.map_or(POLL_INTERVAL, |g| {
            (g / 3).clamp(Duration::from_secs(1), POLL_INTERVAL)
        });
        let tasks = Tasks {
            store,
            index: Arc::default(),
            per_credential: limits.tasks_per_credential,
            keep: limits.task_keep,
            running: Arc::default(),
            endings: Arc::default(),
            next_id,
            unpolled,
            poll_interval,
        };
        tasks.load_index();
        tasks
    }

    /// Starts a task for a `wait_for_user_input` call and answers with it.
    pub async fn start(
        &self,
        tools: Tools,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let mut arguments = request.arguments.clone().unwrap_or_default();
        arguments.retain(|name, _| WAIT_ARGUMENTS.contains(&name.as_str()));
        let token = arguments
            .get("token")
            .and_then(|t| t.as_str())
            .unwrap_or_default();
        let owner = owner_of(&ctx);
        let bytes = serde_json::to_vec(&arguments).map_or(0, |v| v.len());
        self.make_room(&owner, bytes)?;
        let now = now_ms();
        let record = Record {
            id: format!("task_{}", uuid::Uuid::new_v4().simple()),
            owner,
            created_ms: now,
            updated_ms: now,
            last_reply: tools.last_reply(token),
            arguments,
            state: State::Working,
            delivered: None,
        };
        self.save(&record).await.map_err(store_failed)?;
        self.run(tools, &record, ctx);
        Ok(CallToolResponse::Task(CreateTaskResult::new(
            self.view(&record),
        )))
    }

    /// `tasks/get`: the task's state; a working task whose wait is not running (its
    /// client paused polling, or the hub restarted) opens its wait again.
    pub fn get(
        &self,
        id: &str,
        tools: Tools,
        ctx: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let record = self.owned(id, &owner_of(&ctx))?;
        if matches!(record.state, State::Working) {
            if let Some(summary) = lock(&self.index).get_mut(id) {
                summary.seen = Instant::now();
            }
            let resumed = {
                let mut running = self.lock();
                match running.get_mut(id) {
                    Some(r) => {
                        r.last_polled = Instant::now();
                        false
                    }
                    None => true,
                }
            };
            if resumed {
                tracing::info!(task = id, "task's wait opened again");
                self.run(tools, &record, ctx);
            }
        }
        Ok(GetTaskResult::new(self.detailed(&record)))
    }

    /// `tasks/cancel`: the agent stopped waiting; the wait is cancelled at the hub.
    pub async fn cancel(
        &self,
        id: &str,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let ending = self.endings.lock().await;
        let mut record = self.owned(id, &owner_of(ctx))?;
        if !matches!(record.state, State::Working) {
            return Ok(());
        }
        record.state = State::Cancelled;
        record.updated_ms = now_ms();
        record.arguments.clear();
        self.save(&record).await.map_err(store_failed)?;
        drop(ending);
        if let Some(r) = self.lock().get(id) {
            r.stop.cancel();
        }
        Ok(())
    }

    /// Marks the task's wait running, with the token that stops it; `None` when it runs
    /// already.
    fn start_running(&self, record: &Record) -> Option<CancellationToken> {
        let mut running = self.lock();
        if running.contains_key(&record.id) {
            return None;
        }
        let stop = CancellationToken::new();
        running.insert(
            record.id.clone(),
            Running {
                stop: stop.clone(),
                last_polled: Instant::now(),
            },
        );
        Some(stop)
    }

    /// Runs the task's wait in the background until a result, a cancel, or its client
    /// stops polling.
    fn run(&self, tools: Tools, record: &Record, ctx: RequestContext<RoleServer>) {
        let Some(stop) = self.start_running(record) else {
            return;
        };
        let token = record
            .arguments
            .get("token")
            .and_then(|t| t.as_str())
            .unwrap_or_default();
        tools.restore_last_reply(token, &record.last_reply);
        let call_id = NumberOrString::Number(
            self.next_id
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        );
        let mut call_ctx = ctx;
        call_ctx.id = call_id.clone();
        call_ctx.ct = stop.clone();
        // The request that made the task has its answer; progress would name a request
        // the client no longer waits on.
        call_ctx.meta.0.remove("progressToken");
        let request = CallToolRequestParams::new(holdline_contract::WAIT_TOOL)
            .with_arguments(record.arguments.clone());
        let tasks = self.clone();
        let id = record.id.clone();
        let watch = self
            .unpolled
            .map(|limit| self.watch_polls(id.clone(), stop.clone(), limit));
        tokio::spawn(async move {
            let answer = tools
                .with_max_wait(MaxWait::Unlimited)
                .call_tool(request, call_ctx)
                .await;
            if let Some(watch) = watch {
                watch.abort();
            }
            tasks.lock().remove(&id);
            let delivered = tools.claimed_reply(&call_id);
            let state = match answer {
                Ok(CallToolResponse::Complete(result)) if is_final(&result) => State::Completed {
                    result: to_object(&result),
                },
                // Cancelled (`tasks/cancel` stored that), its client stopped polling, or the
                // hub is stopping: the task stays working and its next poll opens the wait.
                Ok(_) => {
                    tracing::info!(task = %id, "task's wait closed until its client polls again");
                    if let Some(summary) = lock(&tasks.index).get_mut(&id) {
                        summary.seen = Instant::now();
                    }
                    return;
                }
                Err(e) => State::Failed {
                    error: to_object(&e),
                },
            };
            CrashPoint::TaskResultReady.slowed().await;
            match tasks.finish(&id, state, delivered).await {
                Ok(true) => {
                    CrashPoint::TaskResultStored.reached();
                    tools.result_written(&call_id);
                }
                // Cancelled meanwhile: nobody reads this result, so its reply is not
                // acked and goes to the next wait.
                Ok(false) => tools.result_dropped(&call_id),
                Err(e) => {
                    tracing::error!(task = %id, error = %e, "could not store the task's result");
                    tools.result_dropped(&call_id);
                }
            }
        });
    }

    /// Closes the task's wait when its client stops polling.
    fn watch_polls(
        &self,
        id: String,
        stop: CancellationToken,
        limit: Duration,
    ) -> tokio::task::JoinHandle<()> {
        let running = self.running.clone();
        let every = self.poll_interval;
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let idle = running
                    .lock_unpoisoned()
                    .get(&id)
                    .is_none_or(|r| r.last_polled.elapsed() > limit);
                if idle {
                    stop.cancel();
                    return;
                }
            }
        })
    }

    /// Stores the task's end; false when it had ended already (a cancel came first).
    async fn finish(
        &self,
        id: &str,
        state: State,
        delivered: Option<ClaimedReply>,
    ) -> Result<bool, StoreError> {
        let _ending = self.endings.lock().await;
        let Some(mut record) = self.load(id)? else {
            return Ok(false);
        };
        if !matches!(record.state, State::Working) {
            return Ok(false);
        }
        record.state = state;
        record.delivered = delivered;
        record.updated_ms = now_ms();
        // A finished task is only read: its arguments are no longer needed.
        record.arguments.clear();
        self.save(&record).await.map(|()| true)
    }

    fn owned(&self, id: &str, owner: &str) -> Result<Record, ErrorData> {
        match self.load(id) {
            Ok(Some(r)) if r.owner == owner => Ok(r),
            Ok(_) => Err(ErrorData::invalid_params(
                format!("no task {id:?}: it does not exist, is not yours, or has expired"),
                None,
            )),
            Err(e) => Err(store_failed(e)),
        }
    }

    fn load(&self, id: &str) -> Result<Option<Record>, StoreError> {
        if id.len() > 64 {
            return Ok(None);
        }
        self.store.meta_get(&format!("{PREFIX}{id}"))
    }

    async fn save(&self, record: &Record) -> Result<(), StoreError> {
        self.store
            .meta_put(&format!("{PREFIX}{}", record.id), record)?;
        lock(&self.index).insert(record.id.clone(), Summary::of(record));
        self.store.flush().await
    }

    /// Acks every reply a completed task returns that is still queued at `hub`: the hub
    /// stopped between storing the task's result and acking its reply. Run before `/mcp`
    /// serves, so no wait polls such a reply first and returns it a second time.
    pub async fn ack_delivered(&self, hub: &Hub) {
        let names = self.store.meta_names(PREFIX).unwrap_or_else(|e| {
            tracing::warn!(error = %e, "could not list MCP tasks");
            Vec::new()
        });
        for name in names {
            let Ok(Some(Record {
                id,
                state: State::Completed { .. },
                delivered: Some(reply),
                ..
            })) = self.store.meta_get::<Record>(&name)
            else {
                continue;
            };
            let Some(token) = Token::parse(&reply.token) else {
                continue;
            };
            let queued = self
                .store
                .queued_replies(&token)
                .is_ok_and(|q| q.iter().any(|r| r.id == reply.reply_id));
            if !queued {
                continue;
            }
            // The hub acks on the task's behalf, as the session's owner.
            let owner = hub.info(&token).ok().and_then(|i| i.session.owner);
            let acked = async {
                hub.ack(&token, &reply.wait_id, &reply.reply_id, owner.as_ref())?
                    .flushed(hub)
                    .await
            };
            match acked.await {
                Ok(()) => {
                    tracing::info!(task = %id, reply = %reply.reply_id, "acked a task's reply after a restart")
                }
                Err(e) => tracing::warn!(task = %id, error = %e, "could not ack a task's reply"),
            }
        }
    }

    /// Reads every stored task into the index, dropping those past their time.
    fn load_index(&self) {
        let names = match self.store.meta_names(PREFIX) {
            Ok(n) => n,
            Err(e) => {
                tracing::warn!(error = %e, "could not list MCP tasks");
                return;
            }
        };
        let mut index = lock(&self.index);
        for name in names {
            match self.store.meta_get::<Record>(&name).ok().flatten() {
                Some(record) => {
                    index.insert(record.id.clone(), Summary::of(&record));
                }
                None => self.remove_stored(&name),
            }
        }
        drop(index);
        self.prune();
    }

    /// Drops finished tasks older than the keep period, and working ones whose wait is
    /// closed and that nobody polled for as long.
    fn prune(&self) {
        let cutoff = now_ms() - self.keep.as_millis() as i64;
        let old: Vec<String> = {
            let running = self.lock();
            let mut index = lock(&self.index);
            let old: Vec<String> = index
                .iter()
                .filter(|(id, s)| match s.finished {
                    true => s.updated_ms < cutoff,
                    false => !running.contains_key(*id) && s.seen.elapsed() > self.keep,
                })
                .map(|(id, _)| id.clone())
                .collect();
            for id in &old {
                index.remove(id);
            }
            old
        };
        for id in old {
            tracing::info!(task = %id, "MCP task dropped: past its keep period");
            self.remove_stored(&format!("{PREFIX}{id}"));
        }
    }

    /// Room for one more task of `owner` keeping `bytes` of arguments: past the keep
    /// period first, then its oldest finished task; refused when every one of its tasks is
    /// working, or its working tasks' arguments would pass [`ARGUMENTS_PER_CREDENTIAL`].
    fn make_room(&self, owner: &str, bytes: usize) -> Result<(), ErrorData> {
        self.prune();
        let oldest_finished = {
            let mut index = lock(&self.index);
            let kept: usize = index
                .values()
                .filter(|s| s.owner == owner)
                .map(|s| s.bytes)
                .sum();
            if kept + bytes > ARGUMENTS_PER_CREDENTIAL {
                return Err(too_many_tasks(format!(
                    "these credentials' working tasks already keep {} KiB of messages (at most {} MiB)",
                    kept / 1024,
                    ARGUMENTS_PER_CREDENTIAL / (1024 * 1024)
                )));
            }
            let held = index.values().filter(|s| s.owner == owner).count();
            if held < self.per_credential {
                return Ok(());
            }
            let oldest = index
                .iter()
                .filter(|(_, s)| s.owner == owner && s.finished)
                .min_by_key(|(_, s)| s.updated_ms)
                .map(|(id, _)| id.clone());
            let Some(id) = oldest else {
                return Err(too_many_tasks(format!(
                    "these credentials already have {} working tasks",
                    self.per_credential
                )));
            };
            index.remove(&id);
            id
        };
        self.remove_stored(&format!("{PREFIX}{oldest_finished}"));
        Ok(())
    }

    fn remove_stored(&self, name: &str) {
        if let Err(e) = self.store.meta_remove(name) {
            tracing::warn!(error = %e, "could not drop an MCP task");
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Running>> {
        self.running.lock_unpoisoned()
    }
}

impl Summary {
    fn of(record: &Record) -> Summary {
        Summary {
            owner: record.owner.clone(),
            finished: !matches!(record.state, State::Working),
            updated_ms: record.updated_ms,
            bytes: serde_json::to_vec(&record.arguments).map_or(0, |v| v.len()),
            seen: Instant::now(),
        }
    }
}

fn too_many_tasks(why: String) -> ErrorData {
    ErrorData::invalid_request(
        format!("TOO_MANY_TASKS: {why}; cancel one (tasks/cancel) or wait for one to finish"),
        None,
    )
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock_unpoisoned()
}

/// Whether a wait's result ends the task: the reply, or why there will be none (merged,
/// closed, refused) — not "no reply yet" and not a cancel.
fn is_final(result: &rmcp::model::CallToolResult) -> bool {
    let Some(s) = result.structured_content.as_ref() else {
        return true;
    };
    s["status"] != "no_reply_yet" && s["error"]["code"] != "CANCELLED"
}

fn to_object(value: &impl Serialize) -> JsonObject {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::Object(o)) => o,
        _ => JsonObject::new(),
    }
}

fn store_failed(e: StoreError) -> ErrorData {
    ErrorData::internal_error(format!("the hub could not store the task: {e}"), None)
}

fn rfc3339(ms: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_default()
}

impl Tasks {
    fn view(&self, record: &Record) -> Task {
        let mut task = Task::new(
            record.id.clone(),
            rmcp::model::TaskStatus::Working,
            rfc3339(record.created_ms),
            rfc3339(record.updated_ms),
        )
        .with_poll_interval_ms(self.poll_interval.as_millis() as u64);
        if matches!(record.state, State::Working) {
            let waited = Duration::from_millis((now_ms() - record.created_ms).max(0) as u64);
            task = task.with_status_message(format!(
                "waiting for the person's reply for {}",
                holdline_tools::server::sentences::human_duration(waited)
            ));
        }
        task
    }

    fn detailed(&self, record: &Record) -> DetailedTask {
        let payload = match &record.state {
            State::Working => TaskPayload::Working,
            State::Completed { result } => TaskPayload::Completed {
                result: result.clone(),
            },
            State::Failed { error } => TaskPayload::Failed {
                error: error.clone(),
            },
            State::Cancelled => TaskPayload::Cancelled,
        };
        DetailedTask::new(self.view(record), payload)
    }
}
