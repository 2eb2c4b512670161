//! holdline-notify: telling the person, away from the desk, that an agent waits — over
//! webhooks, ntfy, Telegram and Web Push — and (Telegram) taking their answer
//! back. The only code that knows a channel's wire format (`channels`,
//! `telegram`, `webpush`).
//!
//! Invariant: nothing here is on a request's path. One watcher follows the
//! hub's session events (`Hub::subscribe`) and tells each channel once per
//! agent question (`requestId`) after `after_sec` without a reply — not per
//! renewal, not per re-call — and again when that wait ends. Each channel
//! sends from its own task with retries and backoff (5xx, 429, timeouts;
//! never a 4xx), so a channel down or slow changes no reply latency.

#![forbid(unsafe_code)]

pub mod channels;
pub mod hint;
pub mod notice;
pub mod push;
pub mod telegram;
pub mod webpush;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use tokio::sync::{broadcast, mpsc};

use crate::push::WebPush;
use holdline_core::config::notify::{self as settings, NotifyConfig};
use holdline_core::hub::{Hub, SessionInfo};
use holdline_store::lock::Unpoisoned as _;
use holdline_store::session::{Session, Status, Token, now_ms};
use notice::{Notice, Outcome};
use telegram::TelegramChannel;
use webpush::WebPushChannel;

/// Attempts per notification before a channel gives it up.
const MAX_ATTEMPTS: u32 = 6;
/// Notifications a channel may have queued; more are dropped (and reported).
const QUEUE: usize = 256;

/// What a channel is told.
#[derive(Debug, Clone)]
pub enum Event {
    /// A wait has lasted `after_sec` without a reply.
    Waiting(Arc<Notice>),
    /// A notified wait ended.
    Ended {
        notice: Arc<Notice>,
        outcome: Outcome,
    },
}

/// Why a send failed.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    /// Worth another try: a transport error, a timeout, 429 or 5xx.
    #[error("{0}")]
    Retry(String),
    /// The channel refused (4xx or an error code): trying again will not help.
    #[error("{0}")]
    Refused(String),
    /// The answer was larger than allowed; what was read.
    #[error("the answer was too large to read")]
    TooLarge(Vec<u8>),
    /// Nobody to tell (no browser subscribed to Web Push): not a failure, the
    /// channel's state and counts stay as they were.
    #[error("{0}")]
    Nobody(String),
}

/// One configured channel.
enum Channel {
    Webhook(settings::Webhook),
    Ntfy(settings::Ntfy),
    Telegram(Arc<TelegramChannel>),
    WebPush(Arc<WebPushChannel>),
}

impl Channel {
    async fn deliver(&self, http: &reqwest::Client, ev: &Event) -> Result<(), SendError> {
        match self {
            Channel::Webhook(w) => channels::send_webhook(http, w, ev).await,
            Channel::Ntfy(n) => channels::send_ntfy(http, n, ev).await,
            Channel::Telegram(t) => t.deliver(http, ev).await,
            Channel::WebPush(w) => w.deliver(http, ev).await,
        }
    }

    /// Whether the channel tells of `ev` (a push is not sent when a wait ends).
    fn takes(&self, ev: &Event) -> bool {
        !matches!((self, ev), (Channel::WebPush(_), Event::Ended { .. }))
    }
}

/// Every channel of a config, with names that carry no URL or token
/// (`push`: the hub's Web Push key and subscriptions, for `[notify.webpush]`).
fn channels_of(c: &NotifyConfig, push: Option<&WebPush>) -> Vec<(String, Channel)> {
    let mut out = Vec::new();
    for (i, w) in c.webhooks.iter().enumerate() {
        out.push((
            format!("webhook {} ({})", i + 1, w.format.as_str()),
            Channel::Webhook(w.clone()),
        ));
    }
    for (i, n) in c.ntfy.iter().enumerate() {
        out.push((format!("ntfy {}", i + 1), Channel::Ntfy(n.clone())));
    }
    if let Some(t) = &c.telegram {
        out.push((
            "telegram".into(),
            Channel::Telegram(Arc::new(TelegramChannel::new(t.clone()))),
        ));
    }
    if let (Some(_), Some(push)) = (&c.webpush, push) {
        out.push((
            "webpush".into(),
            Channel::WebPush(Arc::new(WebPushChannel::new(
                push.clone(),
                c.push_subject(),
            ))),
        ));
    }
    out
}

/// The one client every channel sends with. It follows no redirect: a push
/// endpoint comes from a browser, and a redirect would aim the hub's request
/// (with its VAPID credential) at whatever address the answer names.
fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(Duration::from_secs(10))
        .timeout(Duration::from_secs(20))
        .user_agent(concat!("holdline-hub/", env!("CARGO_PKG_VERSION")))
        .build()
        .expect("a reqwest client with rustls and webpki roots builds")
}

/// A channel's state, for `/healthz` (with the secret) and the panel.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChannelState {
    pub name: String,
    /// `idle` (nothing sent yet), `ok`, `retrying` or `failing`.
    pub state: &'static str,
    pub sent: u64,
    pub failed: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error_at: Option<i64>,
    /// What to fix, when the last error is of a kind people can fix.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error_hint: Option<hint::ErrorHint>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_sent_at: Option<i64>,
}

impl ChannelState {
    fn new(name: String) -> Self {
        ChannelState {
            name,
            state: "idle",
            sent: 0,
            failed: 0,
            last_error: None,
            last_error_at: None,
            last_error_hint: None,
            last_sent_at: None,
        }
    }

    fn error(&mut self, state: &'static str, e: String) {
        self.state = state;
        self.last_error_hint = hint::error_hint(&e);
        self.last_error = Some(e);
        self.last_error_at = Some(now_ms());
    }
}

/// Handle to the running notifier. Cheap to clone.
#[derive(Clone)]
pub struct Notifier {
    slots: Arc<Vec<Slot>>,
}

struct Slot {
    /// Set by the channel's task, read by `/healthz`. A std mutex: never across `.await`.
    state: Arc<Mutex<ChannelState>>,
    tx: mpsc::Sender<Event>,
}

impl Notifier {
    /// Starts the watcher and one task per channel; `None` when no channel
    /// is configured. Call before the hub takes requests, so no wait is missed.
    pub fn start(hub: &Hub, push: Option<&WebPush>) -> Option<Notifier> {
        let cfg = hub.config().notify.clone();
        if !cfg.is_on() {
            return None;
        }
        let http = http_client();
        let mut slots = Vec::new();
        for (name, channel) in channels_of(&cfg, push) {
            let state = Arc::new(Mutex::new(ChannelState::new(name.clone())));
            let (tx, rx) = mpsc::channel(QUEUE);
            if let Channel::Telegram(t) = &channel {
                let state = state.clone();
                let report = move |e: SendError| {
                    tracing::warn!(channel = "telegram", error = %e, "getUpdates failed");
                    lock(&state).error("failing", e.to_string());
                };
                tokio::spawn(t.clone().listen(hub.clone(), http.clone(), report));
            }
            tokio::spawn(run_channel(
                name,
                channel,
                rx,
                state.clone(),
                http.clone(),
                hub.shutdown_token().clone(),
            ));
            slots.push(Slot { state, tx });
        }
        let notifier = Notifier {
            slots: Arc::new(slots),
        };
        let link = match &cfg.panel_url {
            Some(u) => u.clone(),
            None => format!("http://{}/", hub.name()),
        };
        let watch = Watch {
            hub: hub.clone(),
            notifier: notifier.clone(),
            after: cfg.after,
            include_text: cfg.include_text,
            link,
            pending: HashMap::new(),
            told: HashMap::new(),
            live: HashMap::new(),
        };
        tokio::spawn(watch.run(hub.subscribe()));
        tracing::info!(
            channels = notifier.slots.len(),
            after_sec = cfg.after.as_secs(),
            "notifications on"
        );
        Some(notifier)
    }

    /// Every channel's state.
    pub fn states(&self) -> Vec<ChannelState> {
        self.slots.iter().map(|s| lock(&s.state).clone()).collect()
    }

    fn dispatch(&self, ev: Event) {
        for slot in self.slots.iter() {
            if let Err(e) = slot.tx.try_send(ev.clone()) {
                let mut st = lock(&slot.state);
                tracing::warn!(channel = %st.name, "a notification was dropped: the channel's queue is full");
                st.failed += 1;
                st.error("failing", format!("queue full: {e}"));
            }
        }
    }
}

fn lock(m: &Mutex<ChannelState>) -> std::sync::MutexGuard<'_, ChannelState> {
    m.lock_unpoisoned()
}

/// One channel's sender: each event in order, retried with backoff.
async fn run_channel(
    name: String,
    channel: Channel,
    mut rx: mpsc::Receiver<Event>,
    state: Arc<Mutex<ChannelState>>,
    http: reqwest::Client,
    shutdown: tokio_util::sync::CancellationToken,
) {
    loop {
        let ev = tokio::select! {
            _ = shutdown.cancelled() => return,
            ev = rx.recv() => match ev { Some(ev) => ev, None => return },
        };
        if !channel.takes(&ev) {
            continue;
        }
        let mut delay = Duration::from_secs(1);
        for attempt in 1..=MAX_ATTEMPTS {
            match channel.deliver(&http, &ev).await {
                Ok(()) => {
                    let mut st = lock(&state);
                    st.state = "ok";
                    st.sent += 1;
                    st.last_sent_at = Some(now_ms());
                    break;
                }
                Err(SendError::Nobody(_)) => break,
                Err(SendError::Retry(e)) if attempt < MAX_ATTEMPTS => {
                    tracing::warn!(channel = %name, attempt, error = %e, "notification failed; retrying");
                    lock(&state).error("retrying", e);
                    tokio::select! {
                        _ = shutdown.cancelled() => return,
                        _ = tokio::time::sleep(delay) => {}
                    }
                    delay = (delay * 2).min(Duration::from_secs(60));
                }
                Err(e) => {
                    tracing::warn!(channel = %name, attempt, error = %e, "notification given up");
                    let mut st = lock(&state);
                    st.failed += 1;
                    st.error("failing", e.to_string());
                    break;
                }
            }
        }
    }
}

/// A wait that will be notified when it is due.
struct Pending {
    request_id: String,
    due: tokio::time::Instant,
}

/// Follows session events and decides what to tell.
struct Watch {
    hub: Hub,
    notifier: Notifier,
    after: Duration,
    include_text: bool,
    link: String,
    pending: HashMap<Token, Pending>,
    /// The last question notified per session: never told twice.
    told: HashMap<Token, String>,
    /// Notified waits that have not ended yet.
    live: HashMap<Token, Arc<Notice>>,
}

impl Watch {
    async fn run(mut self, mut events: broadcast::Receiver<SessionInfo>) {
        let shutdown = self.hub.shutdown_token().clone();
        self.rescan();
        loop {
            let next = self.pending.values().map(|p| p.due).min();
            let far = tokio::time::Instant::now() + Duration::from_secs(3600);
            tokio::select! {
                _ = shutdown.cancelled() => return,
                ev = events.recv() => match ev {
                    Ok(info) => self.saw(&info.session),
                    Err(broadcast::error::RecvError::Lagged(_)) => self.rescan(),
                    Err(broadcast::error::RecvError::Closed) => return,
                },
                _ = tokio::time::sleep_until(next.unwrap_or(far)), if next.is_some() => {
                    let now = tokio::time::Instant::now();
                    let due: Vec<Token> = self
                        .pending
                        .iter()
                        .filter(|(_, p)| p.due <= now)
                        .map(|(t, _)| t.clone())
                        .collect();
                    for token in due {
                        if let Some(p) = self.pending.remove(&token) {
                            self.fire(&token, &p.request_id);
                        }
                    }
                }
            }
        }
    }

    /// Looks at every waiting session and every notified one (at start and
    /// after missed events).
    fn rescan(&mut self) {
        let mut tokens: Vec<Token> = self.live.keys().cloned().collect();
        if let Ok((waiting, _)) = self.hub.list(Some("waiting"), None, 0, usize::MAX) {
            tokens.extend(waiting.into_iter().map(|i| i.session.token));
        }
        for token in tokens {
            if let Ok(info) = self.hub.info(&token) {
                self.saw(&info.session);
            }
        }
    }

    /// The question a session waits on without a reply, if any.
    fn open_question(s: &Session) -> Option<&str> {
        match (&s.wait, s.status) {
            (Some(w), Status::Waiting) if !s.mirror => Some(&w.request_id),
            _ => None,
        }
    }

    fn saw(&mut self, s: &Session) {
        let open = Self::open_question(s);
        if let Some(n) = self.live.get(&s.token)
            && open != Some(n.request_id.as_str())
        {
            let outcome = match (&s.wait, s.status) {
                (Some(_), Status::Replied) => Outcome::Answered,
                (Some(_), _) => Outcome::AskedAgain,
                (None, _) => Outcome::of(s.closed_waits.last().map(|c| c.reason)),
            };
            let notice = n.clone();
            self.live.remove(&s.token);
            self.notifier.dispatch(Event::Ended { notice, outcome });
        }
        match open {
            Some(rid) if self.told.get(&s.token).map(String::as_str) != Some(rid) => {
                if self
                    .pending
                    .get(&s.token)
                    .is_some_and(|p| p.request_id == rid)
                {
                    return;
                }
                let since = s.wait.as_ref().map_or(now_ms(), |w| w.since);
                let waited = Duration::from_millis(now_ms().saturating_sub(since).max(0) as u64);
                let due = tokio::time::Instant::now() + self.after.saturating_sub(waited);
                self.pending.insert(
                    s.token.clone(),
                    Pending {
                        request_id: rid.to_owned(),
                        due,
                    },
                );
            }
            _ => {
                self.pending.remove(&s.token);
            }
        }
    }

    /// The files a question shows, with their bytes (one the store cannot give is left
    /// out, with a warning).
    fn files_of(
        &self,
        token: &Token,
        attachments: &[holdline_store::session::AttachmentRef],
    ) -> Vec<notice::NoticeFile> {
        attachments
            .iter()
            .filter_map(|a| match self.hub.attachment(token, &a.id) {
                Ok(Some((record, bytes))) => Some(notice::NoticeFile {
                    name: record.name,
                    mime_type: record.mime_type,
                    bytes: bytes.into(),
                }),
                other => {
                    tracing::warn!(token = %token, attachment = %a.id, error = ?other.err(), "an attachment could not be read for the notification");
                    None
                }
            })
            .collect()
    }

    /// Tells the channels of a wait that is due, if it still waits for that question.
    fn fire(&mut self, token: &Token, request_id: &str) {
        let Ok(info) = self.hub.info(token) else {
            return;
        };
        let s = &info.session;
        if Self::open_question(s) != Some(request_id) || info.queued_replies > 0 {
            return;
        }
        let since = s.wait.as_ref().map_or(now_ms(), |w| w.since);
        let asked = self.hub.current_question(token).ok().flatten();
        let question = asked.as_ref().map(|(seq, _)| *seq);
        let origin = asked.as_ref().map(|(_, m)| m.origin).unwrap_or_default();
        let shown = asked.filter(|_| self.include_text).map(|(_, m)| m);
        let files = shown
            .as_ref()
            .map(|m| self.files_of(token, &m.attachments))
            .unwrap_or_default();
        let text = shown
            .as_ref()
            .map(|m| notice::plain(&m.content))
            .filter(|t| !t.is_empty());
        let (options, multi_select) = shown
            .map(|m| (notice::offered(&m.options), m.multi_select))
            .unwrap_or_default();
        let next_step = (self.include_text && !s.last_review.next_step.trim().is_empty())
            .then(|| notice::plain(&s.last_review.next_step));
        let notice = Arc::new(Notice {
            token: token.clone(),
            request_id: request_id.to_owned(),
            question,
            title: s.shown_title().to_owned(),
            waited: Duration::from_millis(now_ms().saturating_sub(since).max(0) as u64),
            text,
            options,
            multi_select,
            completion_pct: s.last_review.completion_pct,
            next_step,
            link: format!("{}#session={}", self.link, token),
            quick_replies: self.hub.templates().unwrap_or_default(),
            test: false,
            files,
            origin,
        });
        tracing::info!(token = %token, "notifying: a wait has lasted after_sec without a reply");
        self.told.insert(token.clone(), request_id.to_owned());
        self.live.insert(token.clone(), notice.clone());
        self.notifier.dispatch(Event::Waiting(notice));
    }
}

/// The test notice `notify test` sends.
fn test_notice(link: &str) -> Arc<Notice> {
    Arc::new(Notice {
        token: Token::generate(),
        request_id: "test".into(),
        question: None,
        title: "holdline".into(),
        waited: Duration::ZERO,
        text: None,
        options: Vec::new(),
        multi_select: false,
        completion_pct: None,
        next_step: None,
        link: link.to_owned(),
        quick_replies: Vec::new(),
        test: true,
        files: Vec::new(),
        origin: Default::default(),
    })
}

/// A test push to every subscribed browser, one attempt (`POST /api/push/test`).
pub async fn test_push(push: &WebPush, subject: String) -> Result<(), SendError> {
    let channel = WebPushChannel::new(push.clone(), subject);
    channel
        .deliver(&http_client(), &Event::Waiting(test_notice("/")))
        .await
}

/// `holdline-hub notify test`: one test notification to every channel, one
/// attempt each; each channel's name and result.
pub async fn test(
    cfg: &NotifyConfig,
    link: &str,
    push: Option<&WebPush>,
) -> Vec<(String, Result<(), SendError>)> {
    let http = http_client();
    let notice = test_notice(link);
    let ev = Event::Waiting(notice);
    let mut out = Vec::new();
    for (name, channel) in channels_of(cfg, push) {
        let r = channel.deliver(&http, &ev).await;
        out.push((name, r));
    }
    out
}
