//! The hub's state handle: every operation of docs/api.md over the session table,
//! the store and the waiters. No HTTP here; `api` translates.
//!
//! Invariant: every change goes through [`Hub::write`] (module `write`) — decided
//! under the table's lock, applied to sled as one atomic write, then swapped into
//! memory — so memory never holds a state the store lacks. Its result is
//! [`Unflushed`]: callers flush before answering.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::binding::{self, Fingerprint, WaitBinding, owned_name};
use crate::config::{Config, Template};
use crate::table::SessionTable;
use crate::waits::Waiters;
use holdline_store::interchange;
use holdline_store::lock::Unpoisoned as _;
use holdline_store::names::KeyName;
use holdline_store::session::{
    Choice, ChoiceOption, Image, Message, OpenWait, QuestionOrigin, QueuedReply, Review, Role,
    Session, Status, Summary, Token, WaitEnd, WorkspaceChanges, now_ms, preview_of,
};
use holdline_store::store::{BindingKind, Store, StoreError, Write};

mod agent;
mod files;
mod liveness;
mod person;
mod store_care;
mod sync;
#[cfg(test)]
mod tests;
mod unflushed;
mod write;

pub use files::{FileUsage, FreeScope, Freed};
pub use sync::SyncSnapshot;
pub use unflushed::Unflushed;
use write::{Change, Swapped};

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
    /// A hand-over would take a binding from another open session of the new owner.
    #[error("{0}")]
    BindingTaken(String),
    /// A reply written for an older question than the one the agent asks now.
    #[error(
        "the agent has asked something newer since (message {}): {:?}; nothing was sent",
        .0.seq,
        .0.preview
    )]
    StaleQuestion(CurrentQuestion),
    /// A reply to a permission question whose hook no longer waits: it would otherwise
    /// reach the agent's next question as words.
    #[error(
        "that permission request is over (answered at the terminal, or its hook stopped waiting); nothing was sent"
    )]
    PermissionOver,
    /// A question's files would pass the attachment quota; nothing of it was stored.
    #[error("{0}")]
    Quota(holdline_store::store::QuotaExceeded),
    /// A file a message names whose bytes were released (retention, or freed by the person).
    #[error("{0}")]
    Released(String),
    #[error(transparent)]
    Store(StoreError),
}

impl From<StoreError> for HubError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Quota(q) => HubError::Quota(q),
            other => HubError::Store(other),
        }
    }
}

type Result<T, E = HubError> = std::result::Result<T, E>;

/// The question an agent asks now: its newest message in the history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CurrentQuestion {
    /// The message's place in the history.
    pub seq: u64,
    /// Its first characters, on one line.
    pub preview: String,
}

/// Limits on text fields, so a bad client cannot bloat the store.
pub const MAX_TITLE: usize = 256;
pub const MAX_PATH: usize = 4096;
pub const MAX_HOST: usize = 255;
pub const MAX_NAME: usize = 256;
pub use holdline_contract::routes::MAX_POLL_MS;
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
    /// The machine name the bridge reported, kept as the session's `host_name`.
    pub host_name: Option<String>,
    /// The agent key the call came with (`None`: the secret).
    pub agent_key: Option<KeyName>,
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
    /// The answers the question offers, checked by [`holdline_contract::choices::check_options`].
    pub options: Vec<ChoiceOption>,
    pub multi_select: bool,
    /// The machine name the bridge reported, kept as the session's `host_name`.
    pub host_name: Option<String>,
    /// The workspace's uncommitted changes, checked by [`holdline_contract::changes::check_changes`].
    pub changes: Option<WorkspaceChanges>,
    /// The files the question shows, checked by [`holdline_store::session::decode_uploads`].
    pub attachments: Vec<holdline_contract::attachments::AttachmentUpload>,
    /// The agent key the call came with (`None`: the secret); the wait keeps it.
    pub agent_key: Option<KeyName>,
    /// Where the question came from; a permission question's wait takes only its own
    /// replies ([`OpenWait::permission_request`]).
    pub origin: QuestionOrigin,
}

/// What a poll answers.
#[derive(Debug, Clone, PartialEq)]
pub enum PollOutcome {
    Replied(QueuedReply),
    Renewal,
    Gone {
        reason: WaitEnd,
        merged_into: Option<Token>,
    },
}

/// What the agent's poll answers, as the wire says it.
impl From<PollOutcome> for holdline_contract::PollAnswer {
    fn from(outcome: PollOutcome) -> Self {
        match outcome {
            PollOutcome::Replied(r) => holdline_contract::PollAnswer::Replied { reply: r.into() },
            PollOutcome::Renewal => holdline_contract::PollAnswer::Renewal,
            PollOutcome::Gone {
                reason,
                merged_into,
            } => holdline_contract::PollAnswer::Gone {
                reason,
                merged_into: merged_into.map(|t| t.to_string()),
            },
        }
    }
}

/// A reply the person wrote, with what it answers.
#[derive(Debug, Clone, Default)]
pub struct PersonReply {
    pub text: String,
    pub images: Vec<Image>,
    /// Indexes of the options picked in the question answered (empty: no pick).
    pub choices: Vec<u32>,
    /// The `seq` of the agent's message it answers; `None`: whatever the
    /// agent asks when it arrives.
    pub in_reply_to: Option<u64>,
    /// Where it was written when not in the panel or CLI (`"telegram"`), kept
    /// on the message for the panel to show.
    pub via: Option<&'static str>,
}

/// A partial update of a session's settings (the person's, from panel or CLI;
/// the API's body carries it as it is).
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSettings {
    pub session_auto_continue: Option<bool>,
    pub timed_reply_enabled: Option<bool>,
    pub timed_reply_interval_ms: Option<u64>,
    pub continue_prompt: Option<String>,
    pub max_auto_streak: Option<u32>,
    pub display_title: Option<String>,
    /// The session's own quick replies (replaces them; `[]` removes them).
    pub quick_replies: Option<Vec<Template>>,
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
        store.set_file_quota(config.attachments.quota);
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
        self.inner.sessions.lock_unpoisoned()
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

    fn queued_count(&self, token: &Token) -> usize {
        self.inner.store.queued_count(token)
    }

    fn append(&self, s: &mut Session, w: &mut Write, message: Message) {
        let seq = s.note_message(&message);
        w.message(&s.token, seq, message);
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

fn rejected(s: &Session, caller: &Fingerprint<'_>) -> HubError {
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
    if images.len() > 10 {
        return Err(HubError::BadRequest("at most 10 images per reply".into()));
    }
    for img in images {
        holdline_store::session::check_image(img)
            .map_err(|e| HubError::BadRequest(e.to_string()))?;
    }
    Ok(())
}
