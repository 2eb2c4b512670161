//! The hub's state handle: every operation of SPEC §5 over the session table,
//! the store and the waiters. No HTTP here; `api` translates.
//!
//! Invariant: every change goes through [`Hub::commit`] — validated on a copy,
//! applied to sled as one atomic write, then swapped into memory — so memory
//! never holds a state the store lacks. Callers flush before answering.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::binding::{self, Caller, WaitBinding};
use crate::config::{Config, Template};
use crate::interchange;
use crate::session::{
    Image, Message, OpenWait, QueuedReply, Review, Role, Session, Status, Summary, Token, WaitEnd,
    now_ms,
};
use crate::store::{BindingKind, Store, StoreError, Write};
use crate::table::SessionTable;
use crate::waits::Waiters;

/// Why an operation was refused; `api::error` maps each to a status and code.
#[derive(Debug, thiserror::Error)]
pub enum HubError {
    #[error("{0}")]
    BadRequest(String),
    #[error("no session {0}")]
    NotFound(Token),
    #[error("{0}")]
    BindingRejected(String),
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    Closed(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

type Result<T, E = HubError> = std::result::Result<T, E>;

/// Limits on text fields, so a bad client cannot bloat the store.
pub const MAX_TITLE: usize = 256;
pub const MAX_PATH: usize = 4096;
pub const MAX_HOST: usize = 255;
pub const MAX_NAME: usize = 256;
pub const MAX_POLL_MS: u64 = 60_000;
pub const MAX_PAGE: usize = 500;

/// What `init_conversation` asks for.
#[derive(Debug, Clone)]
pub struct InitRequest {
    pub cursor_title: String,
    pub workspace: String,
    pub host_ip: String,
    pub new_plan: bool,
    pub plan_label: Option<String>,
    pub thread_id: Option<String>,
}

#[derive(Debug, Clone)]
pub struct InitOutcome {
    pub token: Token,
    pub status: Status,
    pub created: bool,
    pub binding_key: String,
}

/// What `wait_for_user_input` registers.
#[derive(Debug, Clone)]
pub struct RegisterRequest {
    pub token: Token,
    pub message: String,
    pub cursor_title: String,
    pub workspace: String,
    pub host_ip: String,
    pub request_id: String,
    pub completion_pct: Option<u8>,
    pub next_step: Option<String>,
}

/// What a poll answers.
#[derive(Debug, Clone, PartialEq)]
pub enum PollOutcome {
    Replied(QueuedReply),
    Renewal,
    Gone {
        reason: &'static str,
        merged_into: Option<Token>,
    },
}

/// A partial update of a session's settings (the person's, from panel or CLI).
#[derive(Debug, Clone, Default)]
pub struct SessionSettings {
    pub session_auto_continue: Option<bool>,
    pub timed_reply_enabled: Option<bool>,
    pub timed_reply_interval_ms: Option<u64>,
    pub continue_mode: Option<String>,
    pub continue_prompt: Option<String>,
    pub max_auto_streak: Option<u32>,
    pub display_title: Option<String>,
}

/// A session with what only the hub's memory knows.
#[derive(Debug, Clone)]
pub struct SessionInfo {
    pub session: Session,
    pub queued_replies: usize,
}

/// Counters for `/metrics`.
#[derive(Debug, Default)]
pub struct Counters {
    pub replies: AtomicU64,
    pub auto_replies: AtomicU64,
    pub polls: AtomicU64,
    pub http_requests: AtomicU64,
}

/// The hub. Cheap to clone; all clones share one state.
#[derive(Clone)]
pub struct Hub {
    inner: Arc<Inner>,
}

struct Inner {
    /// Every session (summaries; whole sessions once read). A std mutex: each
    /// critical section is map work plus store reads and one atomic store
    /// write (no disk sync), never an `.await`.
    sessions: Mutex<SessionTable>,
    store: Store,
    waiters: Waiters,
    /// Changed sessions, for the panel's SSE stream (and sync).
    events: broadcast::Sender<SessionInfo>,
    config: Config,
    /// `host:port` this hub answers on, stamped on sessions it creates.
    name: String,
    started: Instant,
    shutdown: CancellationToken,
    counters: Counters,
    /// Sessions changed since MongoDB last had them, with when they first
    /// changed; `None` when sync is off. A std mutex: inserts and drains only.
    unsynced: Option<Mutex<HashMap<Token, Instant>>>,
}

impl Hub {
    /// Opens the store and reads every session's summary (whole sessions and
    /// messages stay on disk until needed).
    pub fn open(
        config: Config,
        name: String,
        shutdown: CancellationToken,
    ) -> Result<Hub, StoreError> {
        let home = crate::home::Home::new(config.home.clone());
        let opening = Instant::now();
        let store = Store::open(&home.db_dir(), config.cache_bytes)?;
        let loading = Instant::now();
        let sessions = SessionTable::load(&store)?;
        tracing::info!(
            open_ms = (loading - opening).as_millis() as u64,
            load_ms = loading.elapsed().as_millis() as u64,
            sessions = sessions.len(),
            "store opened"
        );
        let (events, _) = broadcast::channel(1024);
        let unsynced = match config.mongo_uri {
            None => None,
            Some(_) => {
                // What changed while MongoDB was away (or before a crash) goes out first.
                // This reads every owned session whole: a start with MongoDB
                // configured is slower than one without.
                let mut behind = HashMap::new();
                for (token, _) in sessions.entries().filter(|(_, s)| !s.mirror) {
                    let Some(s) = sessions.peek(&token)? else {
                        continue;
                    };
                    let (rev, msgs) = store.synced(&token)?;
                    if rev < s.rev || msgs < s.msg_count {
                        behind.insert(token, Instant::now());
                    }
                }
                Some(Mutex::new(behind))
            }
        };
        let hub = Hub {
            inner: Arc::new(Inner {
                sessions: Mutex::new(sessions),
                store,
                waiters: Waiters::default(),
                events,
                config,
                name,
                started: Instant::now(),
                shutdown,
                counters: Counters::default(),
                unsynced,
            }),
        };
        Ok(hub)
    }

    /// Re-arms keep-alive timers of sessions that were waiting before a restart.
    pub fn resume_waits(&self) {
        let open: Vec<(Token, String)> = self
            .lock()
            .waiting()
            .filter(|s| !s.mirror)
            .filter_map(|s| {
                s.wait
                    .as_ref()
                    .map(|w| (s.token.clone(), w.wait_id.clone()))
            })
            .collect();
        for (token, wait_id) in open {
            self.arm_timed_reply(token, wait_id);
        }
    }

    pub fn config(&self) -> &Config {
        &self.inner.config
    }
    pub fn name(&self) -> &str {
        &self.inner.name
    }
    pub fn uptime(&self) -> Duration {
        self.inner.started.elapsed()
    }
    pub fn counters(&self) -> &Counters {
        &self.inner.counters
    }
    pub fn store(&self) -> &Store {
        &self.inner.store
    }
    pub fn shutdown_token(&self) -> &CancellationToken {
        &self.inner.shutdown
    }
    pub fn subscribe(&self) -> broadcast::Receiver<SessionInfo> {
        self.inner.events.subscribe()
    }

    fn lock(&self) -> MutexGuard<'_, SessionTable> {
        // A panic while holding the lock leaves consistent data (we swap
        // whole sessions in), so a poisoned lock is safe to keep using.
        self.inner
            .sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// Makes every applied change durable.
    pub async fn flush(&self) -> Result<()> {
        self.inner.store.flush().await?;
        Ok(())
    }

    /// `(sessions, waiting)` counts.
    pub fn counts(&self) -> (usize, usize) {
        let map = self.lock();
        let waiting = map.waiting().filter(|s| !s.mirror).count();
        (map.len(), waiting)
    }

    // ---- the commit path ------------------------------------------------

    /// Runs `f` on a copy of the session; if it succeeds, stores the copy and
    /// `f`'s extra writes as one atomic write and swaps the copy in.
    fn commit<R>(
        &self,
        token: &Token,
        f: impl FnOnce(&Hub, &mut Session, &mut Write) -> Result<R>,
    ) -> Result<R> {
        let (r, after) = {
            let mut map = self.lock();
            let current = map
                .get(token)?
                .ok_or_else(|| HubError::NotFound(token.clone()))?;
            if current.mirror {
                return Err(mirror_error(current));
            }
            let mut next = current.clone();
            let mut w = Write::new();
            let r = f(self, &mut next, &mut w)?;
            next.rev += 1;
            w.session(&next);
            self.inner.store.apply(&w)?;
            map.insert(next.clone());
            (r, next)
        };
        self.changed(after);
        Ok(r)
    }

    /// Tells waiters, listeners and sync that a session changed.
    fn changed(&self, session: Session) {
        self.inner.waiters.wake(&session.token);
        if !session.mirror {
            self.mark_unsynced(&session.token);
        }
        // Counting the queue reads the store: only when a panel listens.
        if self.inner.events.receiver_count() == 0 {
            return;
        }
        let queued = self.queued_count(&session.token);
        let _ = self.inner.events.send(SessionInfo {
            session,
            queued_replies: queued,
        });
    }

    fn queued_count(&self, token: &Token) -> usize {
        self.inner.store.queued_count(token)
    }

    fn append(&self, s: &mut Session, w: &mut Write, message: Message) {
        let seq = s.note_message(&message);
        w.message(&s.token, seq, message);
    }

    // ---- agent side -----------------------------------------------------

    /// `init_conversation`: lenient — reuses the session bound to the chat,
    /// plan label or thread id, else makes one.
    pub fn init(&self, req: InitRequest) -> Result<InitOutcome> {
        check_caller(&req.cursor_title, &req.workspace, &req.host_ip)?;
        check_opt_name("planLabel", req.plan_label.as_deref())?;
        check_opt_name("threadId", req.thread_id.as_deref())?;
        let caller = Caller {
            cursor_title: &req.cursor_title,
            workspace: &req.workspace,
            host_ip: &req.host_ip,
        };
        let key = caller.key();
        let store = &self.inner.store;
        let open = |t: Option<Token>| -> Option<Token> {
            let t = t?;
            self.lock()
                .summary(&t)
                .is_some_and(|s| !s.status.is_closed())
                .then_some(t)
        };
        let found = if req.new_plan {
            None
        } else {
            let by_thread = match &req.thread_id {
                Some(t) => open(store.binding(BindingKind::Thread, t)?),
                None => None,
            };
            let by_plan = match &req.plan_label {
                Some(p) if by_thread.is_none() => open(store.binding(BindingKind::Plan, p)?),
                _ => None,
            };
            match by_thread.or(by_plan) {
                Some(t) => Some(t),
                None => open(store.binding(BindingKind::Chat, key.as_str())?),
            }
        };

        if let Some(token) = found {
            let out = self.commit(&token, |_, s, w| {
                s.binding_check_count += 1;
                if s.binding_key != key.as_str() {
                    // Lenient: the same plan or thread under a new title (or
                    // window) takes the session along.
                    if store.binding(BindingKind::Chat, &s.binding_key)?.as_ref() == Some(&s.token)
                    {
                        w.bind(BindingKind::Chat, &s.binding_key, None);
                    }
                    s.workspace = req.workspace.clone();
                    s.host_ip = req.host_ip.clone();
                    binding::migrate(s, &req.cursor_title, key.clone());
                }
                w.bind(BindingKind::Chat, key.as_str(), Some(&s.token));
                bind_plan_thread(s, w, &req);
                s.last_active_at = now_ms();
                Ok(InitOutcome {
                    token: s.token.clone(),
                    status: s.status,
                    created: false,
                    binding_key: s.binding_key.clone(),
                })
            })?;
            return Ok(out);
        }

        let mut s = Session::new(
            Token::generate(),
            &req.cursor_title,
            &req.workspace,
            &req.host_ip,
            &self.inner.name,
        );
        s.keep_alive.continue_prompt = self.inner.config.continue_prompt.clone();
        s.keep_alive.max_auto_streak = self.inner.config.max_auto_streak;
        let mut w = Write::new();
        w.bind(BindingKind::Chat, key.as_str(), Some(&s.token));
        bind_plan_thread(&mut s, &mut w, &req);
        w.session(&s);
        {
            let mut map = self.lock();
            self.inner.store.apply(&w)?;
            map.insert(s.clone());
        }
        let out = InitOutcome {
            token: s.token.clone(),
            status: s.status,
            created: true,
            binding_key: s.binding_key.clone(),
        };
        self.changed(s);
        Ok(out)
    }

    /// `select_conversation`: strict — the caller must own the session.
    pub fn select(&self, token: &Token, caller: &Caller<'_>) -> Result<Status> {
        check_caller(caller.cursor_title, caller.workspace, caller.host_ip)?;
        self.commit(token, |_, s, _| {
            ensure_open(s)?;
            if !caller.owns(s) {
                return Err(rejected(s, caller));
            }
            s.binding_check_count += 1;
            Ok(s.status)
        })
    }

    /// Opens the session's wait (superseding an open one) and records the
    /// agent's message, once per `requestId`.
    pub fn register(&self, req: RegisterRequest) -> Result<String> {
        check_caller(&req.cursor_title, &req.workspace, &req.host_ip)?;
        if req.request_id.is_empty() || req.request_id.len() > MAX_NAME {
            return Err(HubError::BadRequest(format!(
                "requestId must be 1 to {MAX_NAME} characters"
            )));
        }
        if req.completion_pct.is_some_and(|p| p > 100) {
            return Err(HubError::BadRequest(
                "completionPct must be 0 to 100".into(),
            ));
        }
        let caller = Caller {
            cursor_title: &req.cursor_title,
            workspace: &req.workspace,
            host_ip: &req.host_ip,
        };
        let wait_id = self.commit(&req.token, |hub, s, w| {
            ensure_open(s)?;
            match binding::check_wait(&caller, s) {
                WaitBinding::Same => {}
                WaitBinding::Migrate { old_key, new_key } => {
                    let store = &hub.inner.store;
                    if store.binding(BindingKind::Chat, &old_key)?.as_ref() == Some(&s.token) {
                        w.bind(BindingKind::Chat, &old_key, None);
                    }
                    w.bind(BindingKind::Chat, new_key.as_str(), Some(&s.token));
                    binding::migrate(s, &req.cursor_title, new_key);
                }
                WaitBinding::Rejected => return Err(rejected(s, &caller)),
            }
            s.binding_check_count += 1;
            let repeated = s.last_request_id.as_deref() == Some(req.request_id.as_str());
            if repeated && let Some(open) = &s.wait {
                return Ok(open.wait_id.clone());
            }
            if !repeated {
                s.close_wait(WaitEnd::Superseded);
                let message = Message {
                    role: Role::Assistant,
                    content: req.message.clone(),
                    at: now_ms(),
                    auto: false,
                    images: vec![],
                    reply_id: None,
                };
                hub.append(s, w, message);
                s.last_review = Review::from_wait(req.completion_pct, req.next_step.clone());
                s.last_request_id = Some(req.request_id.clone());
            }
            let wait_id = format!("w_{}", uuid::Uuid::new_v4().simple());
            s.wait = Some(OpenWait {
                wait_id: wait_id.clone(),
                request_id: req.request_id.clone(),
                since: now_ms(),
            });
            let mut queued = hub.inner.store.first_reply(&s.token)?.is_some();
            if !queued
                && s.keep_alive.session_auto_continue
                && !s.last_review.is_idle_next
                && s.last_review.completion_pct.is_none_or(|p| p < 100)
                && s.may_auto_reply()
            {
                // Idle auto-continue: the agent named a next step; go on with it.
                let text = format!(
                    "{}\n{}",
                    s.keep_alive.continue_prompt, s.last_review.next_step
                );
                hub.queue_auto_reply(s, w, text);
                queued = true;
            }
            s.status = Session::waiting_status(queued);
            s.last_active_at = now_ms();
            Ok(wait_id)
        })?;
        self.arm_timed_reply(req.token.clone(), wait_id.clone());
        Ok(wait_id)
    }

    fn queue_auto_reply(&self, s: &mut Session, w: &mut Write, text: String) {
        let reply = QueuedReply::new(text, vec![], true);
        let message = Message {
            role: Role::User,
            content: reply.text.clone(),
            at: reply.at,
            auto: true,
            images: vec![],
            reply_id: Some(reply.id.clone()),
        };
        self.append(s, w, message);
        w.enqueue(&s.token, reply);
        self.inner
            .counters
            .auto_replies
            .fetch_add(1, Ordering::Relaxed);
    }

    /// Timed reply: after the session's interval with no reply, deliver its
    /// continue prompt to this wait (once).
    fn arm_timed_reply(&self, token: Token, wait_id: String) {
        let interval = match self.lock().get(&token) {
            Ok(Some(s))
                if s.keep_alive.timed_reply_enabled && s.keep_alive.timed_reply_interval_ms > 0 =>
            {
                Duration::from_millis(s.keep_alive.timed_reply_interval_ms)
            }
            _ => return,
        };
        let hub = self.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = tokio::time::sleep(interval) => {}
                _ = hub.inner.shutdown.cancelled() => return,
            }
            let fired = hub.commit(&token, |hub, s, w| {
                let due = s.has_open_wait(&wait_id)
                    && s.keep_alive.timed_reply_enabled
                    && s.may_auto_reply()
                    && hub.inner.store.first_reply(&s.token)?.is_none();
                if due {
                    let text = s.keep_alive.continue_prompt.clone();
                    hub.queue_auto_reply(s, w, text);
                    s.status = Status::Replied;
                }
                Ok(due)
            });
            match fired {
                Ok(true) => {
                    if let Err(e) = hub.flush().await {
                        tracing::error!(error = %e, "flushing a timed reply failed");
                    }
                    tracing::info!(token = %token, "timed reply queued");
                }
                Ok(false) | Err(HubError::NotFound(_)) => {}
                Err(e) => tracing::warn!(token = %token, error = %e, "timed reply failed"),
            }
        });
    }

    /// Holds until a reply is pending for the wait, the timeout passes
    /// (`Renewal`) or the wait is gone.
    pub async fn poll(
        &self,
        token: &Token,
        wait_id: &str,
        timeout: Duration,
    ) -> Result<PollOutcome> {
        self.inner.counters.polls.fetch_add(1, Ordering::Relaxed);
        let deadline = tokio::time::Instant::now() + timeout;
        let bell = self.inner.waiters.bell(token);
        loop {
            // Armed before looking, so a change in between still wakes us.
            let woken = bell.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            if let Some(outcome) = self.poll_now(token, wait_id)? {
                return Ok(outcome);
            }
            tokio::select! {
                _ = woken => {}
                _ = tokio::time::sleep_until(deadline) => return Ok(PollOutcome::Renewal),
                _ = self.inner.shutdown.cancelled() => return Ok(PollOutcome::Renewal),
            }
        }
    }

    fn poll_now(&self, token: &Token, wait_id: &str) -> Result<Option<PollOutcome>> {
        let mut map = self.lock();
        let s = map
            .get(token)?
            .ok_or_else(|| HubError::NotFound(token.clone()))?;
        if s.has_open_wait(wait_id) {
            return Ok(self
                .inner
                .store
                .first_reply(token)?
                .map(PollOutcome::Replied));
        }
        if let Some(reason) = s.closed_reason(wait_id) {
            return Ok(Some(PollOutcome::Gone {
                reason: reason.as_str(),
                merged_into: s.merged_into.clone(),
            }));
        }
        if map
            .waiting()
            .any(|o| o.token != *token && o.has_open_wait(wait_id))
        {
            return Err(HubError::Forbidden(
                "that waitId belongs to another session".into(),
            ));
        }
        Ok(Some(PollOutcome::Gone {
            reason: "unknown",
            merged_into: None,
        }))
    }

    /// Consumes a delivered reply and finishes the wait.
    pub fn ack(&self, token: &Token, wait_id: &str, reply_id: &str) -> Result<()> {
        self.commit(token, |hub, s, w| {
            if s.acked_replies.iter().any(|r| r == reply_id) {
                return Ok(());
            }
            let reply = hub
                .inner
                .store
                .queued_replies(token)?
                .into_iter()
                .find(|r| r.id == reply_id)
                .ok_or_else(|| HubError::BadRequest(format!("unknown replyId {reply_id:?}")))?;
            w.dequeue(token, reply_id);
            if s.has_open_wait(wait_id) {
                s.reply_delivered(&reply);
            } else {
                s.count_delivery(&reply);
                if s.wait.is_none() {
                    s.status = if reply.auto {
                        Status::Running
                    } else {
                        Status::Holding
                    };
                } else {
                    let more = hub.inner.store.queued_replies(token)?.len() > 1;
                    s.status = Session::waiting_status(more);
                }
            }
            Ok(())
        })
    }

    /// Ends the wait without a reply; queued replies stay queued.
    pub fn cancel(&self, token: &Token, wait_id: &str) -> Result<()> {
        let other = self
            .lock()
            .waiting()
            .any(|o| o.token != *token && o.has_open_wait(wait_id));
        if other {
            return Err(HubError::Forbidden(
                "that waitId belongs to another session".into(),
            ));
        }
        self.commit(token, |_, s, _| {
            if s.has_open_wait(wait_id) {
                s.close_wait(WaitEnd::Cancelled);
                s.status = Status::Holding;
            }
            Ok(())
        })
    }

    /// Appends the source's history to the target, closes the source and
    /// re-points its bindings and queued replies.
    /// With a `caller` (the agent's `merge_conversation`) the target must be
    /// the caller's and the source on its machine and workspace; without one
    /// (the person, from the panel) there is no binding check.
    pub fn merge(&self, from: &Token, to: &Token, caller: Option<&Caller<'_>>) -> Result<()> {
        if let Some(c) = caller {
            check_caller(c.cursor_title, c.workspace, c.host_ip)?;
        }
        if from == to {
            return Err(HubError::BadRequest(
                "cannot merge a session into itself".into(),
            ));
        }
        let store = &self.inner.store;
        let (src_after, dst_after) = {
            let mut map = self.lock();
            let mut src = map
                .get(from)?
                .ok_or_else(|| HubError::NotFound(from.clone()))?
                .clone();
            let mut dst = map
                .get(to)?
                .ok_or_else(|| HubError::NotFound(to.clone()))?
                .clone();
            for s in [&src, &dst] {
                if s.mirror {
                    return Err(mirror_error(s));
                }
            }
            ensure_open(&dst)?;
            ensure_open(&src)?;
            if let Some(caller) = caller {
                if !caller.owns(&dst) {
                    return Err(rejected(&dst, caller));
                }
                if !caller.shares_machine_and_workspace(&src) {
                    return Err(HubError::BindingRejected(
                        "the source session belongs to another workspace or machine".into(),
                    ));
                }
            }
            let mut w = Write::new();
            let history = store.messages(from, None, usize::MAX)?;
            // A trace in the target: where the messages that follow came from.
            let source = if src.display_title.is_empty() {
                &src.title
            } else {
                &src.display_title
            };
            let trace = Message {
                role: Role::System,
                content: format!(
                    "Merged from “{source}” ({from}, {} @ {}): {} messages follow.",
                    src.workspace,
                    src.host_ip,
                    history.len()
                ),
                at: now_ms(),
                auto: false,
                images: vec![],
                reply_id: None,
            };
            self.append(&mut dst, &mut w, trace);
            for (_, m) in history {
                self.append(&mut dst, &mut w, m);
            }
            for r in store.queued_replies(from)? {
                w.dequeue(from, &r.id);
                w.enqueue(to, r);
            }
            for kind in [BindingKind::Chat, BindingKind::Plan, BindingKind::Thread] {
                for name in store.bindings_of(kind, from)? {
                    w.bind(kind, &name, Some(to));
                }
            }
            src.close_wait(WaitEnd::Merged);
            src.status = Status::Merged;
            src.merged_into = Some(to.clone());
            src.last_active_at = now_ms();
            dst.binding_check_count += 1;
            src.rev += 1;
            dst.rev += 1;
            w.session(&src).session(&dst);
            store.apply(&w)?;
            map.insert(src.clone());
            map.insert(dst.clone());
            (src, dst)
        };
        self.changed(src_after);
        self.changed(dst_after);
        Ok(())
    }

    // ---- person side ----------------------------------------------------

    /// Records the person's reply and queues it for the (next) wait.
    /// Returns `(reply id, queued)`: queued is true when no agent waits now.
    pub fn reply(&self, token: &Token, text: String, images: Vec<Image>) -> Result<(String, bool)> {
        if text.trim().is_empty() && images.is_empty() {
            return Err(HubError::BadRequest(
                "a reply needs text or an image".into(),
            ));
        }
        check_images(&images)?;
        let out = self.commit(token, |hub, s, w| {
            ensure_open(s)?;
            let reply = QueuedReply::new(text, images, false);
            let message = Message {
                role: Role::User,
                content: reply.text.clone(),
                at: reply.at,
                auto: false,
                images: reply.images.clone(),
                reply_id: Some(reply.id.clone()),
            };
            hub.append(s, w, message);
            let id = reply.id.clone();
            w.enqueue(&s.token, reply);
            let queued = s.wait.is_none();
            if !queued {
                s.status = Status::Replied;
            }
            Ok((id, queued))
        })?;
        self.inner.counters.replies.fetch_add(1, Ordering::Relaxed);
        Ok(out)
    }

    /// Changes keep-alive settings or the display title.
    pub fn configure(&self, token: &Token, c: SessionSettings) -> Result<SessionInfo> {
        if let Some(ms) = c.timed_reply_interval_ms
            && ms != 0
            && !(100..=86_400_000).contains(&ms)
        {
            return Err(HubError::BadRequest(
                "timedReplyIntervalMs must be 0 or 100 to 86400000".into(),
            ));
        }
        if c.max_auto_streak.is_some_and(|m| m > 10_000) {
            return Err(HubError::BadRequest(
                "maxAutoStreak must be at most 10000".into(),
            ));
        }
        for (name, v, max) in [
            ("continueMode", &c.continue_mode, MAX_NAME),
            ("continuePrompt", &c.continue_prompt, 8192),
            ("displayTitle", &c.display_title, MAX_TITLE),
        ] {
            if v.as_ref().is_some_and(|v| v.chars().count() > max) {
                return Err(HubError::BadRequest(format!(
                    "{name} is longer than {max} characters"
                )));
            }
        }
        if c.continue_prompt
            .as_ref()
            .is_some_and(|p| p.trim().is_empty())
        {
            return Err(HubError::BadRequest(
                "continuePrompt cannot be empty".into(),
            ));
        }
        let wait = self.commit(token, |_, s, _| {
            let k = &mut s.keep_alive;
            if let Some(v) = c.session_auto_continue {
                k.session_auto_continue = v;
            }
            if let Some(v) = c.timed_reply_enabled {
                k.timed_reply_enabled = v;
            }
            if let Some(v) = c.timed_reply_interval_ms {
                k.timed_reply_interval_ms = v;
            }
            if let Some(v) = c.continue_mode {
                k.continue_mode = v;
            }
            if let Some(v) = c.continue_prompt {
                k.continue_prompt = v;
            }
            if let Some(v) = c.max_auto_streak {
                k.max_auto_streak = v;
            }
            if let Some(v) = c.display_title {
                s.display_title = v.trim().to_owned();
            }
            Ok(s.wait.as_ref().map(|w| w.wait_id.clone()))
        })?;
        if let Some(wait_id) = wait {
            self.arm_timed_reply(token.clone(), wait_id);
        }
        self.info(token)
    }

    /// Archives a session: ends its wait and writes `archive/YYYY-MM/ct_….json`.
    pub fn archive(&self, token: &Token) -> Result<SessionInfo> {
        self.commit(token, |_, s, _| {
            match s.status {
                Status::Merged => return Err(HubError::Closed(closed_message(s))),
                Status::Archived => return Ok(()),
                _ => {}
            }
            s.close_wait(WaitEnd::Archived);
            s.status = Status::Archived;
            s.last_active_at = now_ms();
            Ok(())
        })?;
        if let Err(e) = self.write_archive_file(token) {
            tracing::warn!(token = %token, error = %e, "writing the archive file failed");
        }
        self.info(token)
    }

    /// Puts an archived session back to `holding`.
    pub fn restore(&self, token: &Token) -> Result<SessionInfo> {
        self.commit(token, |_, s, _| match s.status {
            Status::Merged => Err(HubError::Closed(closed_message(s))),
            Status::Archived => {
                s.status = Status::Holding;
                s.last_active_at = now_ms();
                Ok(())
            }
            _ => Ok(()),
        })?;
        self.info(token)
    }

    fn write_archive_file(&self, token: &Token) -> std::io::Result<()> {
        let export = self
            .export_one(token)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        let month = time::OffsetDateTime::now_utc()
            .format(time::macros::format_description!("[year]-[month]"))
            .map_err(std::io::Error::other)?;
        let dir = crate::home::Home::new(self.inner.config.home.clone())
            .archive_dir()
            .join(month);
        std::fs::create_dir_all(&dir)?;
        let body = serde_json::to_vec_pretty(&export).map_err(std::io::Error::other)?;
        crate::home::write_private(&dir.join(format!("{token}.json")), &body)
    }

    // ---- reading --------------------------------------------------------

    pub fn info(&self, token: &Token) -> Result<SessionInfo> {
        let session = self
            .lock()
            .get(token)?
            .cloned()
            .ok_or_else(|| HubError::NotFound(token.clone()))?;
        Ok(SessionInfo {
            queued_replies: self.queued_count(token),
            session,
        })
    }

    /// Sessions matching `status` (`None`: every open one; `all`), and `q`
    /// (title or message text), waiting first (longest first), then the most
    /// recently active.
    /// Returns the page `offset..offset + limit` and whether more follow.
    pub fn list(
        &self,
        status: Option<&str>,
        q: Option<&str>,
        offset: usize,
        limit: usize,
    ) -> Result<(Vec<SessionInfo>, bool)> {
        let filter = match status {
            None | Some("") => None,
            Some("all") => Some(None),
            Some(s) => {
                Some(Some(Status::parse(s).ok_or_else(|| {
                    HubError::BadRequest(format!("unknown status {s:?}"))
                })?))
            }
        };
        // Raw tokens until the page is cut: a list of 100,000 sessions then
        // makes 100,000 small copies, not 300,000 allocations.
        let mut picked: Vec<([u8; 16], Summary)> = self
            .lock()
            .raw_entries()
            .filter(|(_, s)| match filter {
                None => !s.status.is_closed(),
                Some(None) => true,
                Some(Some(st)) => s.status == st,
            })
            .map(|(t, s)| (t, *s))
            .collect();
        if let Some(q) = q.map(str::trim).filter(|q| !q.is_empty()) {
            let needle = q.to_lowercase();
            let mut kept = Vec::new();
            for (raw, summary) in picked {
                let token = Token::from_raw(raw);
                // One session at a time, not kept: a search must not fill memory.
                let titled = self.lock().peek(&token)?.is_some_and(|s| {
                    s.title.to_lowercase().contains(&needle)
                        || s.display_title.to_lowercase().contains(&needle)
                });
                if titled
                    || token.as_str() == q
                    || self.inner.store.messages_contain(&token, &needle)?
                {
                    kept.push((raw, summary));
                }
            }
            picked = kept;
        }
        // Raw bytes sort as their fixed-width lowercase hex does.
        picked.sort_unstable_by(|(ta, a), (tb, b)| {
            match (a.wait_since(), b.wait_since()) {
                (Some(x), Some(y)) => x.cmp(&y),
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (None, None) => b.last_active_at.cmp(&a.last_active_at),
            }
            .then_with(|| ta.cmp(tb))
        });
        let more = picked.len() > offset.saturating_add(limit);
        let mut page = Vec::with_capacity(limit.min(picked.len()));
        for (raw, _) in picked.into_iter().skip(offset).take(limit) {
            let token = Token::from_raw(raw);
            let Some(session) = self.lock().get(&token)?.cloned() else {
                continue;
            };
            page.push(SessionInfo {
                queued_replies: self.queued_count(&token),
                session,
            });
        }
        Ok((page, more))
    }

    /// A page of a session's history: the newest `limit` before `before`.
    pub fn messages(
        &self,
        token: &Token,
        before: Option<u64>,
        limit: usize,
    ) -> Result<Vec<(u64, Message)>> {
        if !self.lock().contains_key(token) {
            return Err(HubError::NotFound(token.clone()));
        }
        Ok(self
            .inner
            .store
            .messages(token, before, limit.min(MAX_PAGE))?)
    }

    // ---- templates, export, import --------------------------------------

    pub fn templates(&self) -> Result<Vec<Template>> {
        Ok(self
            .inner
            .store
            .meta_get("templates")?
            .unwrap_or_else(|| self.inner.config.templates.clone()))
    }

    pub fn set_templates(&self, templates: Vec<Template>) -> Result<()> {
        if templates.len() > 100 {
            return Err(HubError::BadRequest("at most 100 templates".into()));
        }
        for t in &templates {
            if t.label.trim().is_empty()
                || t.label.chars().count() > 64
                || t.text.chars().count() > 8192
            {
                return Err(HubError::BadRequest(
                    "each template needs a label of 1 to 64 characters and a text of at most 8192"
                        .into(),
                ));
            }
        }
        self.inner.store.meta_put("templates", &templates)?;
        Ok(())
    }

    fn export_one(&self, token: &Token) -> Result<interchange::ExportFile> {
        // Not kept in memory: an export passes over every session.
        let session = self
            .lock()
            .peek(token)?
            .ok_or_else(|| HubError::NotFound(token.clone()))?
            .into_owned();
        let messages = self.inner.store.messages(token, None, usize::MAX)?;
        let mut file = interchange::ExportFile::new();
        file.insert(
            token.to_string(),
            interchange::ExportSession::from_session(&session, messages.into_iter().map(|m| m.1)),
        );
        Ok(file)
    }

    /// Every session with its messages, in the `sessions.json` format.
    pub fn export(&self) -> Result<interchange::ExportFile> {
        let tokens: Vec<Token> = {
            let mut t: Vec<Token> = self.lock().entries().map(|(t, _)| t).collect();
            t.sort();
            t
        };
        let mut file = interchange::ExportFile::new();
        for token in tokens {
            file.extend(self.export_one(&token)?);
        }
        Ok(file)
    }

    /// Adds the sessions of a `sessions.json` this hub does not have yet.
    /// Returns `(imported, skipped)`.
    pub fn import(&self, file: interchange::ExportFile) -> Result<(usize, usize)> {
        // Every entry is checked before anything is written: a bad file changes nothing.
        let converted = file
            .into_iter()
            .map(|(key, entry)| entry.into_session(&key, &self.inner.name))
            .collect::<std::result::Result<Vec<_>, String>>()
            .map_err(HubError::BadRequest)?;
        let (mut imported, mut skipped) = (0, 0);
        for (mut session, messages) in converted {
            let mut map = self.lock();
            if map.contains_key(&session.token) {
                skipped += 1;
                continue;
            }
            let mut w = Write::new();
            session.msg_count = 0;
            for m in messages {
                let seq = session.note_message(&m);
                w.message(&session.token, seq, m);
            }
            // An open session owns its names; a merged one hands them to its
            // target, as the merge did, unless something else holds them now.
            let (owner, always) = match (&session.status, &session.merged_into) {
                (Status::Merged, Some(target)) => (Some(target.clone()), false),
                (status, _) if !status.is_closed() => (Some(session.token.clone()), true),
                _ => (None, false),
            };
            if let Some(owner) = owner {
                let names = [
                    (BindingKind::Chat, Some(session.binding_key.as_str())),
                    (BindingKind::Plan, session.plan_name.as_deref()),
                    (BindingKind::Thread, session.thread_id.as_deref()),
                ];
                for (kind, name) in names {
                    if let Some(name) = name
                        && (always || self.inner.store.binding(kind, name)?.is_none())
                    {
                        w.bind(kind, name, Some(&owner));
                    }
                }
            }
            w.session(&session);
            self.inner.store.apply(&w)?;
            let token = session.token.clone();
            map.insert(session);
            drop(map);
            self.mark_unsynced(&token);
            imported += 1;
        }
        Ok((imported, skipped))
    }
}

fn bind_plan_thread(s: &mut Session, w: &mut Write, req: &InitRequest) {
    if let Some(p) = &req.plan_label {
        s.plan_name = Some(p.clone());
        w.bind(BindingKind::Plan, p, Some(&s.token));
    }
    if let Some(t) = &req.thread_id {
        s.thread_id = Some(t.clone());
        w.bind(BindingKind::Thread, t, Some(&s.token));
    }
}

fn mirror_error(s: &Session) -> HubError {
    HubError::Forbidden(format!(
        "session {} belongs to the hub at {}; answer it there (this hub shows a copy from MongoDB)",
        s.token, s.hub
    ))
}

fn ensure_open(s: &Session) -> Result<()> {
    if s.status.is_closed() {
        Err(HubError::Closed(closed_message(s)))
    } else {
        Ok(())
    }
}

fn closed_message(s: &Session) -> String {
    match (&s.status, &s.merged_into) {
        (Status::Merged, Some(to)) => format!("session {} was merged into {to}", s.token),
        (Status::Archived, _) => format!("session {} is archived; restore it first", s.token),
        _ => format!("session {} is closed", s.token),
    }
}

fn rejected(s: &Session, caller: &Caller<'_>) -> HubError {
    HubError::BindingRejected(format!(
        "session {} is bound to another IDE chat ({}), not {}",
        s.token,
        s.binding_key,
        caller.key().as_str()
    ))
}

/// Validates the fingerprint every agent call carries.
pub fn check_caller(cursor_title: &str, workspace: &str, host_ip: &str) -> Result<()> {
    for (name, v, max) in [
        ("cursorTitle", cursor_title, MAX_TITLE),
        ("workspace", workspace, MAX_PATH),
        ("hostIp", host_ip, MAX_HOST),
    ] {
        if v.trim().is_empty() {
            return Err(HubError::BadRequest(format!("{name} must not be empty")));
        }
        if v.chars().count() > max {
            return Err(HubError::BadRequest(format!(
                "{name} is longer than {max} characters"
            )));
        }
        if v.chars().any(char::is_control) {
            return Err(HubError::BadRequest(format!(
                "{name} contains control characters"
            )));
        }
    }
    Ok(())
}

fn check_opt_name(name: &str, v: Option<&str>) -> Result<()> {
    match v {
        Some(v) if v.trim().is_empty() || v.chars().count() > MAX_NAME => Err(
            HubError::BadRequest(format!("{name} must be 1 to {MAX_NAME} characters")),
        ),
        _ => Ok(()),
    }
}

fn check_images(images: &[Image]) -> Result<()> {
    use base64::Engine as _;
    if images.len() > 10 {
        return Err(HubError::BadRequest("at most 10 images per reply".into()));
    }
    for img in images {
        if !crate::session::IMAGE_TYPES.contains(&img.mime_type.as_str()) {
            return Err(HubError::BadRequest(format!(
                "image type {:?} is not supported (png, jpeg, gif, webp)",
                img.mime_type
            )));
        }
        if base64::engine::general_purpose::STANDARD
            .decode(&img.data)
            .is_err()
        {
            return Err(HubError::BadRequest(
                "image data is not valid base64".into(),
            ));
        }
    }
    Ok(())
}

/// What MongoDB sync reads and writes through the hub; see `sync`.
impl Hub {
    fn mark_unsynced(&self, token: &Token) {
        if let Some(set) = &self.inner.unsynced {
            set.lock()
                .unwrap_or_else(|p| p.into_inner())
                .entry(token.clone())
                .or_insert_with(Instant::now);
        }
    }

    /// Up to `max` changed sessions, oldest change first, taken off the set.
    pub fn take_unsynced(&self, max: usize) -> Vec<(Token, Instant)> {
        let Some(set) = &self.inner.unsynced else {
            return Vec::new();
        };
        let mut set = set.lock().unwrap_or_else(|p| p.into_inner());
        let mut all: Vec<(Token, Instant)> = set.iter().map(|(t, i)| (t.clone(), *i)).collect();
        all.sort_by_key(|(_, i)| *i);
        all.truncate(max);
        for (t, _) in &all {
            set.remove(t);
        }
        all
    }

    /// Puts sessions back after a failed push, keeping when they first changed.
    pub fn return_unsynced(&self, tokens: Vec<(Token, Instant)>) {
        if let Some(set) = &self.inner.unsynced {
            let mut set = set.lock().unwrap_or_else(|p| p.into_inner());
            for (t, at) in tokens {
                let e = set.entry(t).or_insert(at);
                *e = (*e).min(at);
            }
        }
    }

    /// `(pending sessions, age of the oldest unsynced change)`.
    pub fn sync_backlog(&self) -> (usize, Duration) {
        match &self.inner.unsynced {
            None => (0, Duration::ZERO),
            Some(set) => {
                let set = set.lock().unwrap_or_else(|p| p.into_inner());
                let oldest = set.values().min().map(|i| i.elapsed()).unwrap_or_default();
                (set.len(), oldest)
            }
        }
    }

    /// The session, the messages MongoDB lacks and the reply queue, if this
    /// hub owns the session.
    pub fn sync_snapshot(&self, token: &Token) -> Result<Option<SyncSnapshot>> {
        let Some(session) = self.lock().peek(token)?.map(Cow::into_owned) else {
            return Ok(None);
        };
        if session.mirror {
            return Ok(None);
        }
        let (_, synced_msgs) = self.inner.store.synced(token)?;
        let messages = self.inner.store.messages_from(token, synced_msgs)?;
        let replies = self.inner.store.queued_replies(token)?;
        Ok(Some(SyncSnapshot {
            session,
            messages,
            replies,
        }))
    }

    pub fn mark_synced(&self, token: &Token, rev: u64, messages: u64) -> Result<()> {
        Ok(self.inner.store.set_synced(token, rev, messages)?)
    }

    /// Stores a copy of another hub's session (read-only here). A session this
    /// hub owned becomes a copy: another hub adopted it.
    pub fn put_mirror(&self, mut session: Session, messages: Vec<(u64, Message)>) -> Result<()> {
        if session.hub == self.inner.name {
            return Ok(());
        }
        session.mirror = true;
        let token = session.token.clone();
        let mut w = Write::new();
        {
            let mut map = self.lock();
            let local = map.get(&token)?;
            if local.is_some_and(|l| l.mirror && l.rev >= session.rev) {
                return Ok(());
            }
            if let Some(l) = local
                && !l.mirror
            {
                tracing::info!(token = %token, owner = %session.hub, "session adopted by another hub; keeping a copy");
                for r in self.inner.store.queued_replies(&token)? {
                    w.dequeue(&token, &r.id);
                }
            }
            let have = local.map_or(0, |l| l.msg_count);
            for (seq, m) in messages.into_iter().filter(|(seq, _)| *seq >= have) {
                w.message(&token, seq, m);
            }
            w.session(&session);
            self.inner.store.apply(&w)?;
            map.insert(session.clone());
        }
        if let Some(set) = &self.inner.unsynced {
            set.lock().unwrap_or_else(|p| p.into_inner()).remove(&token);
        }
        self.changed(session);
        Ok(())
    }

    /// The revision of this hub's read-only copy of a session, if it has one.
    pub fn mirror_rev(&self, token: &Token) -> Option<u64> {
        let mut map = self.lock();
        if !map.summary(token).is_some_and(|s| s.mirror) {
            return None;
        }
        map.get(token).ok().flatten().map(|s| s.rev)
    }

    /// Whether this hub owns the session (`None`: does not know it).
    pub fn owns(&self, token: &Token) -> Option<bool> {
        self.lock().summary(token).map(|s| !s.mirror)
    }

    /// Takes over a session from MongoDB: its history, its open wait and its
    /// queued replies, so an agent that failed over here waits on.
    pub fn adopt(
        &self,
        mut session: Session,
        messages: Vec<(u64, Message)>,
        replies: Vec<QueuedReply>,
    ) -> Result<()> {
        let token = session.token.clone();
        let previous = session.hub.clone();
        session.adoptions.push(crate::session::Adoption {
            from: previous.clone(),
            to: self.inner.name.clone(),
            at: now_ms(),
        });
        session.hub = self.inner.name.clone();
        session.mirror = false;
        session.rev += 1;
        let mut w = Write::new();
        {
            let mut map = self.lock();
            if map.summary(&token).is_some_and(|l| !l.mirror) {
                return Ok(());
            }
            let have = map.get(&token)?.map_or(0, |l| l.msg_count);
            for (seq, m) in messages.into_iter().filter(|(seq, _)| *seq >= have) {
                w.message(&token, seq, m);
            }
            for r in self.inner.store.queued_replies(&token)? {
                w.dequeue(&token, &r.id);
            }
            for r in replies {
                w.enqueue(&token, r);
            }
            if !session.status.is_closed() {
                w.bind(BindingKind::Chat, &session.binding_key, Some(&token));
            }
            w.session(&session);
            self.inner.store.apply(&w)?;
            map.insert(session.clone());
        }
        tracing::info!(token = %token, from = %previous, "adopted a session from MongoDB");
        let wait = session.wait.as_ref().map(|w| w.wait_id.clone());
        self.changed(session);
        if let Some(wait_id) = wait {
            self.arm_timed_reply(token, wait_id);
        }
        Ok(())
    }
}

/// What one sync push writes for a session.
#[derive(Debug, Clone)]
pub struct SyncSnapshot {
    pub session: Session,
    pub messages: Vec<(u64, Message)>,
    pub replies: Vec<QueuedReply>,
}
