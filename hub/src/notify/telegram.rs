//! Telegram, both ways: notifications out (`sendMessage` with the question's
//! options and the quick replies as buttons, then its files with `sendPhoto` /
//! `sendDocument`, `editMessageText` when the wait ends) and the person's answers in (`getUpdates` long poll; a reply to a
//! notification, a button, a photo; multi-select options ticked, then Done).
//!
//! Invariant: only chats in `chat_ids` are told or heard (and, with
//! `user_ids`, only those people); an answer reaches a session only through
//! a message this hub sent (a forged or unknown reply target is ignored), and
//! answers the question that message showed — never a newer one (the hub
//! refuses it as stale); it goes through `Hub::reply_with`, the panel's own
//! operation, which also judges every pick (a button's data is an index,
//! never trusted further). The bot token is in URLs only, never in a log or
//! error text.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use holdline_contract::choices::{self, ChoiceOption};
use serde_json::{Value, json};

use super::channels::{read_bounded, refusal, transport};
use super::notice::{self, Notice, Outcome};
use super::{Event, SendError};
use crate::config::notify::Telegram;
use crate::hub::{Hub, HubError, PersonReply};
use crate::session::{Image, Token};

/// How long one `getUpdates` holds at the Bot API.
pub const LONG_POLL_SEC: u64 = 25;
/// The most of a `getUpdates` answer read (20 updates of text are far less).
const MAX_UPDATES_BYTES: usize = 4 * 1024 * 1024;
/// The largest photo fetched (a reply's image).
const MAX_PHOTO_BYTES: u64 = 5 * 1024 * 1024;
/// The longest reply text taken from a message.
const MAX_REPLY_CHARS: usize = 16_384;
/// Questions remembered for the edit when their wait ends.
const REMEMBERED: usize = 2048;
/// Messages the bot sent that an answer may reply to.
const REMEMBERED_MESSAGES: usize = 8192;
/// Quick-reply buttons per notification.
const MAX_BUTTONS: usize = 6;
/// The longest text a callback's answer (the toast) shows.
const MAX_TOAST_CHARS: usize = 200;

/// The Telegram channel: its settings and the notifications it sent.
pub struct TelegramChannel {
    cfg: Telegram,
    /// Sent notifications. A std mutex: lookups and inserts, never across `.await`.
    sent: Mutex<Sent>,
}

/// One notification in one chat: (chat, message id, its text).
type Told = (i64, i64, String);
/// A question: (token, requestId).
type Question = (Token, String);

/// What a message the bot sent asked: an answer to it answers this.
#[derive(Debug, Clone)]
struct Asked {
    token: Token,
    /// The `seq` of the agent's message it showed; `None`: whatever the agent asks.
    question: Option<u64>,
    /// Its quick-reply buttons, in button order, as they were when it was sent.
    buttons: Arc<[QuickReply]>,
    /// The options it showed as buttons, if the question offered any.
    offer: Option<Offer>,
}

/// A quick-reply button: what it shows and the text it sends.
#[derive(Debug, Clone, PartialEq)]
struct QuickReply {
    label: String,
    text: String,
}

/// The options one message shows as buttons, and what the person did with them there.
#[derive(Debug, Clone)]
struct Offer {
    /// As the notice carried them; shared by the messages of one notice.
    options: Arc<[ChoiceOption]>,
    multi_select: bool,
    /// Multi-select: the options ticked so far, ascending; each an existing
    /// option, so at most `options.len()` of them.
    ticked: Vec<u32>,
    /// A pick from this message was recorded: a later tap sends nothing.
    sent: bool,
}

/// What a button's `callback_data` names: a quick reply (`q{i}`), an option
/// (`o{i}`) or multi-select's Done (`done`). Only indexes: 64 bytes always do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tap {
    QuickReply(usize),
    Option(u32),
    Done,
}

impl Tap {
    fn of(data: &str) -> Option<Tap> {
        if data == "done" {
            return Some(Tap::Done);
        }
        if let Some(i) = data.strip_prefix('q') {
            return i.parse().ok().map(Tap::QuickReply);
        }
        data.strip_prefix('o')?.parse().ok().map(Tap::Option)
    }
}

/// What the hub made of an answer from Telegram.
enum Handed {
    Recorded {
        queued: bool,
    },
    /// The agent asks something newer (its `seq`): nothing was sent.
    Stale(u64),
    /// Refused, with the sentence to show the person.
    Refused(String),
}

#[derive(Default)]
struct Sent {
    /// (chat, message id) → what it asked.
    by_message: HashMap<(i64, i64), Asked>,
    /// The keys of `by_message`, oldest first: past `REMEMBERED_MESSAGES` the oldest go.
    message_order: VecDeque<(i64, i64)>,
    /// (token, requestId) → the messages that told about it, with their text.
    by_wait: HashMap<Question, Vec<Told>>,
    wait_order: VecDeque<Question>,
    /// The last quick replies remembered: the next notice with the same
    /// templates shares them, so the snapshots cost one copy per template set.
    last_buttons: Option<Arc<[QuickReply]>>,
}

impl Sent {
    fn remember_message(&mut self, chat: i64, message: i64, asked: Asked) {
        if self.by_message.insert((chat, message), asked).is_none() {
            self.message_order.push_back((chat, message));
        }
        while self.message_order.len() > REMEMBERED_MESSAGES {
            if let Some(old) = self.message_order.pop_front() {
                self.by_message.remove(&old);
            }
        }
    }

    fn remember_wait(&mut self, key: Question, chat: i64, message: i64, text: String) {
        let entry = self.by_wait.entry(key.clone()).or_default();
        if entry.is_empty() {
            self.wait_order.push_back(key);
        }
        entry.push((chat, message, text));
        while self.wait_order.len() > REMEMBERED {
            if let Some(old) = self.wait_order.pop_front() {
                self.by_wait.remove(&old);
            }
        }
    }

    /// A notice's quick-reply buttons, shared with the last notice's when equal.
    fn buttons(&mut self, n: &Notice) -> Arc<[QuickReply]> {
        let buttons: Vec<QuickReply> = n
            .quick_replies
            .iter()
            .take(MAX_BUTTONS)
            .map(|t| QuickReply {
                label: t.label.clone(),
                text: t.text.clone(),
            })
            .collect();
        match &self.last_buttons {
            Some(last) if **last == buttons[..] => last.clone(),
            _ => {
                let shared: Arc<[QuickReply]> = buttons.into();
                self.last_buttons = Some(shared.clone());
                shared
            }
        }
    }

    /// What a message telling `n` asks, before it is sent (its keyboard is drawn from it).
    fn asked(&mut self, n: &Notice, options: &Arc<[ChoiceOption]>) -> Asked {
        Asked {
            token: n.token.clone(),
            question: n.question,
            buttons: self.buttons(n),
            offer: (!options.is_empty()).then(|| Offer {
                options: options.clone(),
                multi_select: n.multi_select,
                ticked: Vec::new(),
                sent: false,
            }),
        }
    }

    /// Ticks option `index` of a remembered multi-select message, or unticks
    /// it; the message as it is now (`None`: forgotten, or nothing to tick).
    fn tick(&mut self, chat: i64, message: i64, index: u32) -> Option<Asked> {
        let asked = self.by_message.get_mut(&(chat, message))?;
        let offer = asked.offer.as_mut().filter(|o| o.multi_select)?;
        match offer.ticked.binary_search(&index) {
            Ok(at) => {
                offer.ticked.remove(at);
            }
            Err(at) => offer.ticked.insert(at, index),
        }
        Some(asked.clone())
    }

    /// Marks a message's pick as sent: its option buttons send nothing more.
    fn pick_sent(&mut self, chat: i64, message: i64) {
        if let Some(offer) = self
            .by_message
            .get_mut(&(chat, message))
            .and_then(|a| a.offer.as_mut())
        {
            offer.sent = true;
        }
    }
}

impl TelegramChannel {
    pub fn new(cfg: Telegram) -> TelegramChannel {
        TelegramChannel {
            cfg,
            sent: Mutex::default(),
        }
    }

    fn sent(&self) -> std::sync::MutexGuard<'_, Sent> {
        self.sent.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Calls a Bot API method; `Ok` is its `result`.
    async fn call(
        &self,
        http: &reqwest::Client,
        method: &str,
        body: &Value,
        timeout: Duration,
    ) -> Result<Value, SendError> {
        let request = self.request(http, method, timeout).json(body);
        self.answer(method, request).await
    }

    /// A Bot API method's request, before its body.
    fn request(
        &self,
        http: &reqwest::Client,
        method: &str,
        timeout: Duration,
    ) -> reqwest::RequestBuilder {
        let url = format!("{}/bot{}/{method}", self.cfg.api_base, self.cfg.bot_token.0);
        http.post(url).timeout(timeout)
    }

    /// Sends a Bot API request; `Ok` is its `result`.
    async fn answer(
        &self,
        method: &str,
        request: reqwest::RequestBuilder,
    ) -> Result<Value, SendError> {
        let resp = request.send().await.map_err(transport)?;
        let status = resp.status();
        let cap = if method == "getUpdates" {
            MAX_UPDATES_BYTES
        } else {
            super::channels::MAX_ANSWER
        };
        let bytes = read_bounded(resp, cap).await?;
        let answer: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        if status.is_success() && answer["ok"] == Value::Bool(true) {
            return Ok(answer["result"].clone());
        }
        // The status alone: the answer's `description` is the Bot API's body,
        // which the hub never reads back (`channels::refusal`).
        match refusal(status, &format!("{method}: ")) {
            SendError::Refused(what) if answer.is_null() => Err(SendError::Retry(what)),
            e => Err(e),
        }
    }

    /// Sends or closes a notification in every allowed chat. A retry skips
    /// the chats already told.
    pub async fn deliver(&self, http: &reqwest::Client, ev: &Event) -> Result<(), SendError> {
        match ev {
            Event::Waiting(n) => self.tell_waiting(http, n).await,
            Event::Ended { notice, outcome } => self.tell_ended(http, notice, *outcome).await,
        }
    }

    /// The waiting question in every allowed chat not told yet (a test in all of them),
    /// with its options as buttons and its files after it.
    async fn tell_waiting(&self, http: &reqwest::Client, n: &Notice) -> Result<(), SendError> {
        let key = (n.token.clone(), n.request_id.clone());
        let options: Arc<[ChoiceOption]> = n.options.clone().into();
        for &chat in &self.cfg.chat_ids {
            let done = self
                .sent()
                .by_wait
                .get(&key)
                .is_some_and(|m| m.iter().any(|(c, _, _)| *c == chat));
            if done && !n.test {
                continue;
            }
            let text = n.full();
            let mut body = json!({
                "chat_id": chat,
                "text": text,
                "disable_web_page_preview": true,
            });
            let asked = (!n.test).then(|| self.sent().asked(n, &options));
            if let Some(k) = asked.as_ref().and_then(keyboard) {
                body["reply_markup"] = k;
            }
            let sent = self
                .call(http, "sendMessage", &body, Duration::from_secs(15))
                .await?;
            let Some(asked) = asked else {
                continue;
            };
            match sent["message_id"].as_i64() {
                Some(id) => {
                    {
                        let mut sent = self.sent();
                        sent.remember_message(chat, id, asked);
                        sent.remember_wait(key.clone(), chat, id, text);
                    }
                    self.send_files(http, chat, id, n).await;
                }
                None => {
                    return Err(SendError::Refused(
                        "sendMessage answered without a message_id".into(),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Each message that told of the wait edited to say how it ended (or, too old to
    /// edit, a reply below it saying so).
    async fn tell_ended(
        &self,
        http: &reqwest::Client,
        notice: &Notice,
        outcome: Outcome,
    ) -> Result<(), SendError> {
        let key = (notice.token.clone(), notice.request_id.clone());
        let told = self.sent().by_wait.get(&key).cloned().unwrap_or_default();
        for (chat, message, text) in told {
            let body = json!({
                "chat_id": chat,
                "message_id": message,
                "text": format!("{text}\n\n{}", outcome.sentence()),
                "disable_web_page_preview": true,
            });
            match self
                .call(http, "editMessageText", &body, Duration::from_secs(15))
                .await
            {
                Ok(_) => {}
                // Too old to edit, or deleted: say it below instead.
                Err(SendError::Refused(_)) => {
                    let body = json!({
                        "chat_id": chat,
                        "text": notice.follow_up(outcome),
                        "reply_to_message_id": message,
                    });
                    self.call(http, "sendMessage", &body, Duration::from_secs(15))
                        .await?;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Sends the question's files after its text, each as a reply to it: raster images
    /// with `sendPhoto`, the rest with `sendDocument`. A file Telegram refuses is logged
    /// and skipped: the text went, and a retry would not send it again.
    async fn send_files(&self, http: &reqwest::Client, chat: i64, message: i64, n: &Notice) {
        for file in &n.files {
            let (method, field) = if file.is_image() {
                ("sendPhoto", "photo")
            } else {
                ("sendDocument", "document")
            };
            let part = reqwest::multipart::Part::stream(file.bytes.clone())
                .file_name(file.name.clone())
                .mime_str(&file.mime_type)
                .unwrap_or_else(|_| {
                    reqwest::multipart::Part::stream(file.bytes.clone())
                        .file_name(file.name.clone())
                });
            let form = reqwest::multipart::Form::new()
                .text("chat_id", chat.to_string())
                .text("reply_to_message_id", message.to_string())
                .part(field, part);
            let request = self
                .request(http, method, Duration::from_secs(60))
                .multipart(form);
            if let Err(e) = self.answer(method, request).await {
                tracing::warn!(token = %n.token, file = %file.name, error = %e, "telegram: a question's file was not sent");
            }
        }
    }

    /// Long-polls `getUpdates` until shutdown and hands each allowed
    /// answer to the hub. Errors are recorded by `report` and retried with backoff.
    pub async fn listen(
        self: Arc<Self>,
        hub: Hub,
        http: reqwest::Client,
        report: impl Fn(SendError) + Send + 'static,
    ) {
        let shutdown = hub.shutdown_token().clone();
        let mut offset: i64 = 0;
        let mut backoff = Duration::from_secs(1);
        // After an answer too large to read: one update at a time, to find the culprit.
        let mut one_at_a_time = false;
        loop {
            let body = json!({
                "offset": offset,
                "timeout": if one_at_a_time { 0 } else { LONG_POLL_SEC },
                "limit": if one_at_a_time { 1 } else { 20 },
                "allowed_updates": ["message", "callback_query"],
            });
            let got = tokio::select! {
                _ = shutdown.cancelled() => return,
                r = self.call(&http, "getUpdates", &body, Duration::from_secs(LONG_POLL_SEC + 10)) => r,
            };
            let got = match got {
                Ok(Value::Array(updates)) => Ok(updates),
                Ok(_) => Ok(Vec::new()),
                Err(SendError::TooLarge(_)) if !one_at_a_time => {
                    one_at_a_time = true;
                    continue;
                }
                Err(SendError::TooLarge(_)) => match self.skip_one(&http, offset).await {
                    Some(id) => {
                        tracing::warn!(
                            update = id,
                            "a Telegram update too large to read was skipped"
                        );
                        offset = offset.max(id + 1);
                        continue;
                    }
                    None => Err(SendError::Retry(
                        "getUpdates: an update too large to read, and no update_id in it".into(),
                    )),
                },
                Err(e) => Err(e),
            };
            let updates = match got {
                Ok(updates) => updates,
                Err(e) => {
                    report(e);
                    tokio::select! {
                        _ = shutdown.cancelled() => return,
                        _ = tokio::time::sleep(backoff) => {}
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(60));
                    continue;
                }
            };
            backoff = Duration::from_secs(1);
            one_at_a_time = false;
            for u in updates {
                if let Some(id) = u["update_id"].as_i64() {
                    offset = offset.max(id + 1);
                }
                self.take(&hub, &http, &u).await;
            }
        }
    }

    /// Fetches the single update at `offset` without keeping it, to learn
    /// its id: the body is scanned as it streams (up to 64 MiB), never held.
    async fn skip_one(&self, http: &reqwest::Client, offset: i64) -> Option<i64> {
        const SCAN_LIMIT: usize = 64 * 1024 * 1024;
        let url = format!(
            "{}/bot{}/getUpdates",
            self.cfg.api_base, self.cfg.bot_token.0
        );
        let body = json!({ "offset": offset, "limit": 1, "timeout": 0 });
        let mut resp = http
            .post(url)
            .timeout(Duration::from_secs(120))
            .json(&body)
            .send()
            .await
            .ok()?;
        // The last bytes of the previous chunk, so a key cut in two is still found.
        let mut window: Vec<u8> = Vec::new();
        let mut read = 0usize;
        while let Ok(Some(chunk)) = resp.chunk().await {
            read += chunk.len();
            window.extend_from_slice(&chunk);
            if let Some(id) = first_update_id(&window) {
                return Some(id);
            }
            if read > SCAN_LIMIT {
                return None;
            }
            let keep = window.len().min(64);
            window.drain(..window.len() - keep);
        }
        None
    }

    /// One update: a reply or a button from an allowed chat and person, to a
    /// message this bot sent, becomes a reply to the question it showed.
    async fn take(&self, hub: &Hub, http: &reqwest::Client, u: &Value) {
        let (msg, from_button) = if u["callback_query"].is_object() {
            (&u["callback_query"]["message"], true)
        } else {
            (&u["message"], false)
        };
        let Some(chat) = msg["chat"]["id"].as_i64() else {
            return;
        };
        if !self.cfg.chat_ids.contains(&chat) {
            tracing::info!(
                chat,
                "a Telegram message from a chat not in chat_ids was ignored"
            );
            return;
        }
        let from = if from_button {
            &u["callback_query"]["from"]["id"]
        } else {
            &msg["from"]["id"]
        };
        if !self.cfg.user_ids.is_empty()
            && !from
                .as_i64()
                .is_some_and(|f| self.cfg.user_ids.contains(&f))
        {
            tracing::info!(
                chat,
                "a Telegram answer from a person not in user_ids was ignored"
            );
            return;
        }
        let target = if from_button {
            msg["message_id"].as_i64()
        } else {
            msg["reply_to_message"]["message_id"].as_i64()
        };
        let asked = target.and_then(|m| self.sent().by_message.get(&(chat, m)).cloned());
        let Some(asked) = asked else {
            if !from_button {
                tracing::info!(
                    chat,
                    "a Telegram message that answers no notification was ignored"
                );
                self.say(http, chat, None, "To answer an agent, reply to its notification (swipe it left, or long-press → Reply).").await;
            }
            return;
        };
        let answered_msg = msg["message_id"].as_i64();
        let content = if from_button {
            let cq = &u["callback_query"];
            match Tap::of(cq["data"].as_str().unwrap_or("")) {
                Some(Tap::QuickReply(i)) => {
                    self.toast(http, cq, None).await;
                    asked.buttons.get(i).map(|b| (b.text.clone(), Vec::new()))
                }
                Some(tap) => {
                    self.choose(hub, http, (chat, answered_msg), cq, asked, tap)
                        .await;
                    return;
                }
                None => {
                    self.toast(http, cq, None).await;
                    None
                }
            }
        } else {
            self.message_content(http, chat, msg).await
        };
        if let Some((text, images)) = content {
            let reply = PersonReply {
                text,
                images,
                choices: Vec::new(),
                in_reply_to: asked.question,
                via: Some("telegram"),
            };
            let handed = self.give(hub, &asked.token, reply).await;
            self.tell(hub, http, chat, answered_msg, &asked.token, handed)
                .await;
        }
    }

    /// A tap on an option or on Done, under the message `at` (chat, id): a
    /// single-select option sends its pick; a multi-select option is ticked or
    /// unticked (the buttons redrawn); Done sends what is ticked. The tap is
    /// answered with what became of it ("Sent: Postgres", the hub's refusal).
    async fn choose(
        &self,
        hub: &Hub,
        http: &reqwest::Client,
        at: (i64, Option<i64>),
        cq: &Value,
        asked: Asked,
        tap: Tap,
    ) {
        let (chat, message) = at;
        let (Some(offer), Some(message)) = (&asked.offer, message) else {
            self.toast(http, cq, Some("This message offers no options."))
                .await;
            return;
        };
        if offer.sent {
            self.toast(http, cq, Some("Already sent from this message."))
                .await;
            return;
        }
        let picks = match (tap, offer.multi_select) {
            (Tap::Option(i), false) => vec![i],
            (Tap::Option(i), true) => {
                // A tick sends nothing, so the hub's stale check is asked here.
                if let Some(seq) = Self::newer_question(hub, &asked) {
                    self.toast(http, cq, Some(MOVED_ON)).await;
                    let stale = Handed::Stale(seq);
                    self.tell(hub, http, chat, Some(message), &asked.token, stale)
                        .await;
                    return;
                }
                let refusal = self.tick(http, chat, message, offer, i).await;
                self.toast(http, cq, refusal.as_deref()).await;
                return;
            }
            (Tap::Done, true) if offer.ticked.is_empty() => {
                self.toast(http, cq, Some("Pick at least one option first, then Done."))
                    .await;
                return;
            }
            (Tap::Done, true) => offer.ticked.clone(),
            (Tap::Done | Tap::QuickReply(_), _) => {
                self.toast(http, cq, None).await;
                return;
            }
        };
        self.send_pick(hub, http, (chat, message), cq, &asked, picks)
            .await;
    }

    /// Gives the hub a pick from the message `at` (chat, id) and answers the
    /// tap: "Sent: …", the agent moved on (the chat shown its newer
    /// question), or the hub's refusal (nothing sent).
    async fn send_pick(
        &self,
        hub: &Hub,
        http: &reqwest::Client,
        at: (i64, i64),
        cq: &Value,
        asked: &Asked,
        picks: Vec<u32>,
    ) {
        let (chat, message) = at;
        let reply = PersonReply {
            text: String::new(),
            images: Vec::new(),
            choices: picks.clone(),
            in_reply_to: asked.question,
            via: Some("telegram"),
        };
        let handed = self.give(hub, &asked.token, reply).await;
        let note = match &handed {
            Handed::Recorded { .. } => {
                self.sent().pick_sent(chat, message);
                let options = asked.offer.as_ref().map_or(&[][..], |o| &o.options[..]);
                sent_note(options, &picks)
            }
            Handed::Stale(_) => MOVED_ON.to_owned(),
            Handed::Refused(why) => why.clone(),
        };
        self.toast(http, cq, Some(&note)).await;
        if !matches!(handed, Handed::Refused(_)) {
            self.tell(hub, http, chat, Some(message), &asked.token, handed)
                .await;
        }
    }

    /// The `seq` of the agent's question when it is newer than the one `asked` showed.
    fn newer_question(hub: &Hub, asked: &Asked) -> Option<u64> {
        let shown = asked.question?;
        let (now, _) = hub.current_question(&asked.token).ok().flatten()?;
        (now > shown).then_some(now)
    }

    /// Ticks or unticks option `index` of a multi-select message and redraws
    /// its buttons; the contract's sentence when there is no such option.
    async fn tick(
        &self,
        http: &reqwest::Client,
        chat: i64,
        message: i64,
        offer: &Offer,
        index: u32,
    ) -> Option<String> {
        if let Err(e) = choices::pick(&offer.options, true, &[index]) {
            return Some(e.to_string());
        }
        let now = self.sent().tick(chat, message, index)?;
        let body = json!({
            "chat_id": chat,
            "message_id": message,
            "reply_markup": keyboard(&now).unwrap_or_else(|| json!({"inline_keyboard": []})),
        });
        if let Err(e) = self
            .call(
                http,
                "editMessageReplyMarkup",
                &body,
                Duration::from_secs(10),
            )
            .await
        {
            tracing::warn!(chat, error = %e, "redrawing a Telegram message's options failed");
        }
        None
    }

    /// Answers a button tap (Telegram shows a spinner until then), with a
    /// short note shown over the chat when there is something to say.
    async fn toast(&self, http: &reqwest::Client, cq: &Value, note: Option<&str>) {
        let mut body = json!({ "callback_query_id": cq["id"] });
        if let Some(n) = note {
            body["text"] = json!(notice::cut(n, MAX_TOAST_CHARS));
        }
        let _ = self
            .call(http, "answerCallbackQuery", &body, Duration::from_secs(10))
            .await;
    }

    /// A message's text (or caption) and photo; `None` (the person told)
    /// when its photo cannot be fetched.
    async fn message_content(
        &self,
        http: &reqwest::Client,
        chat: i64,
        msg: &Value,
    ) -> Option<(String, Vec<Image>)> {
        let text = msg["text"]
            .as_str()
            .or(msg["caption"].as_str())
            .unwrap_or("")
            .chars()
            .take(MAX_REPLY_CHARS)
            .collect::<String>();
        let mut images = Vec::new();
        if msg["photo"].is_array() {
            match self.photo(http, &msg["photo"]).await {
                Ok(img) => images.push(img),
                Err(e) => {
                    tracing::warn!(chat, error = %e, "a Telegram photo could not be fetched");
                    self.say(http, chat, msg["message_id"].as_i64(), "That photo could not be fetched; nothing was sent. Try again or send it from the panel.").await;
                    return None;
                }
            }
        }
        Some((text, images))
    }

    /// Gives a reply to the hub.
    async fn give(&self, hub: &Hub, token: &Token, reply: PersonReply) -> Handed {
        let result = async { hub.reply_with(token, reply)?.flushed(hub).await };
        match result.await {
            Ok((reply, queued)) => {
                tracing::info!(token = %token, reply = %reply, queued, via = "telegram", "reply recorded");
                Handed::Recorded { queued }
            }
            Err(HubError::StaleQuestion(current)) => {
                tracing::info!(token = %token, "a Telegram reply to an older question was not sent");
                Handed::Stale(current.seq)
            }
            Err(e) => {
                tracing::warn!(token = %token, error = %e, "a reply from Telegram was refused");
                Handed::Refused(match e {
                    HubError::Closed(m) | HubError::BadRequest(m) | HubError::Forbidden(m) => m,
                    _ => "The hub could not take this reply; answer from the panel.".into(),
                })
            }
        }
    }

    /// Tells the chat what became of a reply, when there is something to tell.
    async fn tell(
        &self,
        hub: &Hub,
        http: &reqwest::Client,
        chat: i64,
        answered_msg: Option<i64>,
        token: &Token,
        handed: Handed,
    ) {
        match handed {
            Handed::Recorded { queued: false } => {}
            Handed::Recorded { queued: true } => {
                self.say(
                    http,
                    chat,
                    answered_msg,
                    "Queued: the agent is not waiting right now; it gets this at its next wait.",
                )
                .await;
            }
            Handed::Stale(seq) => {
                self.moved_on(hub, http, chat, answered_msg, token, seq)
                    .await;
            }
            Handed::Refused(why) => {
                self.say(http, chat, answered_msg, &why).await;
            }
        }
    }

    /// Tells the chat that the agent asks something newer than the reply
    /// answered, showing that question (its text and option buttons only with
    /// `include_text`); a reply to this message, or a tap, answers it.
    async fn moved_on(
        &self,
        hub: &Hub,
        http: &reqwest::Client,
        chat: i64,
        answered_msg: Option<i64>,
        token: &Token,
        seq: u64,
    ) {
        let shown = hub
            .config()
            .notify
            .include_text
            .then(|| hub.messages(token, Some(seq + 1), 1).ok())
            .flatten()
            .and_then(|m| m.into_iter().next())
            .map(|(_, m)| m);
        let question = shown
            .as_ref()
            .map(|m| notice::plain(&m.content))
            .filter(|t| !t.is_empty());
        let text = match question {
            Some(q) => format!(
                "Not sent: the agent has moved on. It now asks:\n\n{q}\n{}\nReply to this message to answer that.",
                shown.as_ref().map_or(String::new(), |m| notice::numbered_options(&m.options, m.multi_select))
            ),
            None => "Not sent: the agent has moved on to a newer question. Reply to this message to answer that one, or open the panel.".to_owned(),
        };
        let asked = Asked {
            token: token.clone(),
            question: Some(seq),
            buttons: Arc::from(Vec::new()),
            offer: shown.filter(|m| !m.options.is_empty()).map(|m| Offer {
                options: Arc::from(notice::offered(&m.options)),
                multi_select: m.multi_select,
                ticked: Vec::new(),
                sent: false,
            }),
        };
        let mut body = json!({ "chat_id": chat, "text": text });
        if let Some(m) = answered_msg {
            body["reply_to_message_id"] = json!(m);
        }
        if let Some(markup) = keyboard(&asked) {
            body["reply_markup"] = markup;
        }
        match self
            .call(http, "sendMessage", &body, Duration::from_secs(15))
            .await
        {
            Ok(sent) => {
                if let Some(id) = sent["message_id"].as_i64() {
                    self.sent().remember_message(chat, id, asked);
                }
            }
            Err(e) => tracing::warn!(chat, error = %e, "telling a Telegram chat failed"),
        }
    }

    /// Tells a chat something, best effort; the message's id when sent.
    async fn say(
        &self,
        http: &reqwest::Client,
        chat: i64,
        reply_to: Option<i64>,
        text: &str,
    ) -> Option<i64> {
        let mut body = json!({ "chat_id": chat, "text": text });
        if let Some(m) = reply_to {
            body["reply_to_message_id"] = json!(m);
        }
        match self
            .call(http, "sendMessage", &body, Duration::from_secs(15))
            .await
        {
            Ok(sent) => sent["message_id"].as_i64(),
            Err(e) => {
                tracing::warn!(chat, error = %e, "telling a Telegram chat failed");
                None
            }
        }
    }

    /// The largest size of a photo that fits, as an image.
    async fn photo(&self, http: &reqwest::Client, sizes: &Value) -> Result<Image, SendError> {
        let best = sizes
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| p["file_size"].as_u64().is_none_or(|s| s <= MAX_PHOTO_BYTES))
            .max_by_key(|p| p["width"].as_u64().unwrap_or(0) * p["height"].as_u64().unwrap_or(0))
            .and_then(|p| p["file_id"].as_str())
            .ok_or_else(|| SendError::Refused("no photo size small enough".into()))?;
        let file = self
            .call(
                http,
                "getFile",
                &json!({ "file_id": best }),
                Duration::from_secs(15),
            )
            .await?;
        let path = file["file_path"]
            .as_str()
            .filter(|p| !p.contains(".."))
            .ok_or_else(|| SendError::Refused("getFile answered without a file_path".into()))?;
        let url = format!(
            "{}/file/bot{}/{path}",
            self.cfg.api_base, self.cfg.bot_token.0
        );
        let resp = http
            .get(url)
            .timeout(Duration::from_secs(60))
            .send()
            .await
            .map_err(transport)?;
        if !resp.status().is_success() {
            return Err(SendError::Refused(format!(
                "file download: {}",
                resp.status()
            )));
        }
        let bytes = read_bounded(resp, MAX_PHOTO_BYTES as usize).await?;
        let mime_type = sniff(&bytes)
            .ok_or_else(|| SendError::Refused("the photo is not png, jpeg, gif or webp".into()))?;
        Ok(Image {
            mime_type: mime_type.into(),
            data: base64::engine::general_purpose::STANDARD.encode(&bytes),
        })
    }
}

/// The line a tap that gave no answer shows: the chat gets the newer question.
const MOVED_ON: &str = "Not sent: the agent has moved on.";

/// The inline keyboard of a message, drawn from what it asks: first the
/// options, one per row (`o{i}`; multi-select: ✓ on the ticked ones, then
/// Done), then the quick replies three per row (`q{i}`, the `i`th remembered
/// with the message, [`Sent::buttons`]). `None`: no buttons.
fn keyboard(asked: &Asked) -> Option<Value> {
    let mut rows: Vec<Vec<Value>> = Vec::new();
    if let Some(offer) = &asked.offer {
        for (i, o) in offer.options.iter().enumerate() {
            let ticked = offer.ticked.binary_search(&(i as u32)).is_ok();
            let text = if ticked {
                format!("✓ {}", o.label)
            } else {
                o.label.clone()
            };
            rows.push(vec![
                json!({ "text": text, "callback_data": format!("o{i}") }),
            ]);
        }
        if offer.multi_select {
            let text = match offer.ticked.len() {
                0 => "Done".to_owned(),
                n => format!("Done ({n})"),
            };
            rows.push(vec![json!({ "text": text, "callback_data": "done" })]);
        }
    }
    let quick: Vec<Value> = asked
        .buttons
        .iter()
        .enumerate()
        .map(|(i, b)| json!({ "text": b.label, "callback_data": format!("q{i}") }))
        .collect();
    rows.extend(quick.chunks(3).map(<[Value]>::to_vec));
    (!rows.is_empty()).then(|| json!({ "inline_keyboard": rows }))
}

/// What a tap that sent a pick says: `Sent: Postgres, SQLite`.
fn sent_note(options: &[ChoiceOption], picks: &[u32]) -> String {
    let labels: Vec<&str> = picks
        .iter()
        .filter_map(|&i| options.get(i as usize))
        .map(|o| o.label.as_str())
        .collect();
    format!("Sent: {}", labels.join(", "))
}

/// The image type by its first bytes.
fn sniff(b: &[u8]) -> Option<&'static str> {
    if b.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if b.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if b.starts_with(b"GIF8") {
        Some("image/gif")
    } else if b.len() > 12 && &b[..4] == b"RIFF" && &b[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// The first `"update_id":N` in a (cut) answer.
fn first_update_id(head: &[u8]) -> Option<i64> {
    let key = b"\"update_id\"";
    let at = head.windows(key.len()).position(|w| w == key)? + key.len();
    let rest = std::str::from_utf8(&head[at..(at + 40).min(head.len())]).ok()?;
    let rest = rest.trim_start_matches([' ', ':']);
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    // Digits cut off by the end of what was read are not the whole id.
    if rest.len() == digits.len() {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_answer_still_names_its_first_update() {
        assert_eq!(
            first_update_id(
                b"{\"ok\":true,\"result\":[{\"update_id\": 981,\"message\":{\"text\":\"xxxx"
            ),
            Some(981)
        );
        assert_eq!(first_update_id(b"\xff\xfe garbage"), None);
        assert_eq!(
            first_update_id(b"{\"update_id\": 98"),
            None,
            "cut mid-number"
        );
    }

    fn notice_with(texts: &[&str]) -> Notice {
        Notice {
            token: Token::generate(),
            request_id: "r".into(),
            question: Some(0),
            title: "t".into(),
            waited: Duration::ZERO,
            text: None,
            options: Vec::new(),
            multi_select: false,
            completion_pct: None,
            next_step: None,
            link: String::new(),
            quick_replies: texts
                .iter()
                .map(|t| crate::config::Template {
                    label: "l".into(),
                    text: (*t).into(),
                    lang: None,
                })
                .collect(),
            test: false,
            files: Vec::new(),
        }
    }

    #[test]
    fn remembered_messages_are_bounded_and_equal_button_sets_share_one_copy() {
        let mut sent = Sent::default();
        let a = sent.buttons(&notice_with(&["Ship it.", "Hold on."]));
        let b = sent.buttons(&notice_with(&["Ship it.", "Hold on."]));
        let c = sent.buttons(&notice_with(&["Ship it to prod."]));
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(
            c.iter().map(|b| b.text.as_str()).collect::<Vec<_>>(),
            ["Ship it to prod."]
        );
        for m in 0..(REMEMBERED_MESSAGES as i64 + 10) {
            let asked = Asked {
                token: Token::generate(),
                question: Some(0),
                buttons: a.clone(),
                offer: None,
            };
            sent.remember_message(1, m, asked);
        }
        assert_eq!(sent.by_message.len(), REMEMBERED_MESSAGES);
        assert!(!sent.by_message.contains_key(&(1, 9)));
        assert!(sent.by_message.contains_key(&(1, 10)));
    }

    #[test]
    fn button_data_names_an_index_never_a_label() {
        assert_eq!(Tap::of("q2"), Some(Tap::QuickReply(2)));
        assert_eq!(Tap::of("o9"), Some(Tap::Option(9)));
        assert_eq!(Tap::of("done"), Some(Tap::Done));
        for forged in ["o-1", "o99999999999", "oPostgres", "x1", ""] {
            assert_eq!(Tap::of(forged), None, "{forged}");
        }
    }

    #[test]
    fn options_come_first_one_per_row_and_ticks_show() {
        let mut sent = Sent::default();
        let mut n = notice_with(&["Ship it.", "Hold on."]);
        n.multi_select = true;
        let options: Arc<[ChoiceOption]> = ["Postgres", "SQLite"]
            .map(|l| ChoiceOption {
                label: l.into(),
                description: None,
            })
            .into();
        let asked = sent.asked(&n, &options);
        sent.remember_message(1, 7, asked);
        let now = sent.tick(1, 7, 1).unwrap();
        let k = keyboard(&now).unwrap();
        let rows = k["inline_keyboard"].as_array().unwrap();
        let texts: Vec<Vec<&str>> = rows
            .iter()
            .map(|r| {
                r.as_array()
                    .unwrap()
                    .iter()
                    .map(|b| b["text"].as_str().unwrap())
                    .collect()
            })
            .collect();
        assert_eq!(
            texts,
            [
                vec!["Postgres"],
                vec!["✓ SQLite"],
                vec!["Done (1)"],
                vec!["l", "l"]
            ]
        );
        assert_eq!(rows[1][0]["callback_data"], "o1");
        assert_eq!(rows[2][0]["callback_data"], "done");
        assert_eq!(rows[3][1]["callback_data"], "q1");
        let again = sent.tick(1, 7, 1).unwrap();
        assert!(
            again.offer.unwrap().ticked.is_empty(),
            "a second tap unticks"
        );
        assert!(
            sent.tick(1, 8, 0).is_none(),
            "an unknown message ticks nothing"
        );
    }

    #[test]
    fn images_are_known_by_their_bytes() {
        assert_eq!(sniff(&[0xFF, 0xD8, 0xFF, 0xE0]), Some("image/jpeg"));
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\n...."), Some("image/png"));
        assert_eq!(sniff(b"%PDF-1.4"), None);
    }
}
