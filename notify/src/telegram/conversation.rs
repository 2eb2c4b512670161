//! The person's answers from Telegram: `getUpdates` long-polled until shutdown, each
//! allowed update turned into a reply to the question its message showed (a reply's
//! text and photo, a quick-reply button, an option picked or ticked then Done), and the
//! chat told what became of it.
//!
//! Invariant: only chats in `chat_ids` (and, with `user_ids`, only those people) are
//! heard; an answer reaches a session only through a message in `sent::Sent`, and goes
//! through `Hub::reply_with`, which judges it (stale question, pick) as it judges the
//! panel's.

use std::sync::Arc;
use std::time::Duration;

use holdline_contract::choices;

use super::super::SendError;
use super::super::notice;
use super::TelegramChannel;
use super::bot_api::SendMessage;
use super::sent::{Asked, Offer, Tap, keyboard, sent_note};
use super::updates::{CallbackQuery, Chat, Incoming, Message, Update, User};
use holdline_core::hub::{Hub, HubError, PersonReply};
use holdline_store::session::{Image, Token};

/// The longest reply text taken from a message.
const MAX_REPLY_CHARS: usize = 16_384;
/// The longest text a callback's answer (the toast) shows.
const MAX_TOAST_CHARS: usize = 200;
/// The line a tap that gave no answer shows: the chat gets the newer question.
const MOVED_ON: &str = "Not sent: the agent has moved on.";

/// What the hub made of an answer from Telegram.
enum ReplyOutcome {
    Recorded {
        queued: bool,
    },
    /// The agent asks something newer (its `seq`): nothing was sent.
    Stale(u64),
    /// Refused, with the sentence to show the person.
    Refused(String),
}

/// Where the next `getUpdates` starts, and how many it asks for.
struct UpdatePoll {
    offset: i64,
    /// After an answer too large to read: one update at a time, to find the culprit.
    one_at_a_time: bool,
}

impl TelegramChannel {
    /// Long-polls `getUpdates` until shutdown and hands each allowed
    /// answer to the hub. Errors are recorded by `report` and retried with backoff.
    pub async fn listen(
        self: Arc<Self>,
        hub: Hub,
        http: reqwest::Client,
        report: impl Fn(SendError) + Send + 'static,
    ) {
        let shutdown = hub.shutdown_token().clone();
        let mut poll = UpdatePoll {
            offset: 0,
            one_at_a_time: false,
        };
        let mut backoff = Duration::from_secs(1);
        loop {
            let got = tokio::select! {
                _ = shutdown.cancelled() => return,
                r = self.next_updates(&http, &mut poll) => r,
            };
            let updates = match got {
                Ok(Some(updates)) => updates,
                Ok(None) => continue,
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
            poll.one_at_a_time = false;
            for u in updates {
                if let Some(id) = u.id() {
                    poll.offset = poll.offset.max(id + 1);
                }
                if let Incoming::Readable(update) = u {
                    self.handle_update(&hub, &http, *update).await;
                }
            }
        }
    }

    /// The next updates; `None`: ask again at once (the poll now asks for one update at
    /// a time, or skipped one too large to read).
    async fn next_updates(
        &self,
        http: &reqwest::Client,
        poll: &mut UpdatePoll,
    ) -> Result<Option<Vec<Incoming>>, SendError> {
        match self
            .api
            .updates(http, poll.offset, poll.one_at_a_time)
            .await
        {
            Ok(batch) => Ok(Some(batch.into_updates())),
            Err(SendError::TooLarge(_)) if !poll.one_at_a_time => {
                poll.one_at_a_time = true;
                Ok(None)
            }
            Err(SendError::TooLarge(_)) => match self.api.skip_one(http, poll.offset).await {
                Some(id) => {
                    tracing::warn!(
                        update = id,
                        "a Telegram update too large to read was skipped"
                    );
                    poll.offset = poll.offset.max(id + 1);
                    Ok(None)
                }
                None => Err(SendError::Retry(
                    "getUpdates: an update too large to read, and no update_id in it".into(),
                )),
            },
            Err(e) => Err(e),
        }
    }

    /// One update: a reply or a button from an allowed chat and person, to a
    /// message this bot sent, becomes a reply to the question it showed.
    async fn handle_update(&self, hub: &Hub, http: &reqwest::Client, u: Update) {
        match (u.callback_query, u.message) {
            (Some(cq), _) => self.handle_tap(hub, http, cq).await,
            (None, Some(msg)) => self.handle_message(hub, http, msg).await,
            (None, None) => {}
        }
    }

    /// The chat an answer came from, when the chat and the person are allowed (an
    /// answer from anywhere else is logged and ignored).
    fn allowed_chat(&self, chat: Option<&Chat>, from: Option<&User>) -> Option<i64> {
        let chat = chat?.id;
        if !self.cfg().chat_ids.contains(&chat) {
            tracing::info!(
                chat,
                "a Telegram message from a chat not in chat_ids was ignored"
            );
            return None;
        }
        let users = &self.cfg().user_ids;
        if !users.is_empty() && !from.is_some_and(|f| users.contains(&f.id)) {
            tracing::info!(
                chat,
                "a Telegram answer from a person not in user_ids was ignored"
            );
            return None;
        }
        Some(chat)
    }

    /// A message: a reply to a notification answers its question with its text and
    /// photo; any other message gets a hint of how to answer.
    async fn handle_message(&self, hub: &Hub, http: &reqwest::Client, msg: Message) {
        let Some(chat) = self.allowed_chat(msg.chat.as_ref(), msg.from.as_ref()) else {
            return;
        };
        let target = msg.reply_to_message.as_ref().and_then(|m| m.message_id);
        let Some(asked) = target.and_then(|m| self.sent().asked_by(chat, m)) else {
            tracing::info!(
                chat,
                "a Telegram message that answers no notification was ignored"
            );
            self.send_note(http, chat, None, "To answer an agent, reply to its notification (swipe it left, or long-press → Reply).").await;
            return;
        };
        if let Some((text, images)) = self.message_content(http, chat, &msg).await {
            self.answer_with(hub, http, (chat, msg.message_id), &asked, text, images)
                .await;
        }
    }

    /// A button tapped under a message this bot sent: a quick reply sends its text, an
    /// option or Done is [`Self::choose`]'s.
    async fn handle_tap(&self, hub: &Hub, http: &reqwest::Client, cq: CallbackQuery) {
        let msg = cq.message.as_ref();
        let Some(chat) = self.allowed_chat(msg.and_then(|m| m.chat.as_ref()), cq.from.as_ref())
        else {
            return;
        };
        let message = msg.and_then(|m| m.message_id);
        let Some(asked) = message.and_then(|m| self.sent().asked_by(chat, m)) else {
            return;
        };
        match Tap::of(cq.data.as_deref().unwrap_or("")) {
            Some(Tap::QuickReply(i)) => {
                self.toast(http, &cq, None).await;
                if let Some(b) = asked.buttons.get(i) {
                    let text = b.text.clone();
                    self.answer_with(hub, http, (chat, message), &asked, text, Vec::new())
                        .await;
                }
            }
            Some(tap) => {
                self.choose(hub, http, (chat, message), &cq, asked, tap)
                    .await;
            }
            None => self.toast(http, &cq, None).await,
        }
    }

    /// Sends `text` and `images` as the reply to what `asked` showed, from the message
    /// `at` (chat, id), and tells the chat what became of it.
    async fn answer_with(
        &self,
        hub: &Hub,
        http: &reqwest::Client,
        at: (i64, Option<i64>),
        asked: &Asked,
        text: String,
        images: Vec<Image>,
    ) {
        let reply = PersonReply {
            text,
            images,
            choices: Vec::new(),
            in_reply_to: asked.question,
            via: Some("telegram"),
        };
        let outcome = self.submit_reply(hub, &asked.token, reply).await;
        self.report_outcome(hub, http, at.0, at.1, &asked.token, outcome)
            .await;
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
        cq: &CallbackQuery,
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
                self.tap_to_tick(hub, http, (chat, message), cq, &asked, i)
                    .await;
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

    /// A multi-select option tapped under the message `at` (chat, id): ticked or
    /// unticked, unless the agent moved on (then the chat is shown the newer question).
    async fn tap_to_tick(
        &self,
        hub: &Hub,
        http: &reqwest::Client,
        at: (i64, i64),
        cq: &CallbackQuery,
        asked: &Asked,
        index: u32,
    ) {
        let (chat, message) = at;
        // A tick sends nothing, so the hub's stale check is asked here.
        if let Some(seq) = Self::newer_question(hub, asked) {
            self.toast(http, cq, Some(MOVED_ON)).await;
            let stale = ReplyOutcome::Stale(seq);
            self.report_outcome(hub, http, chat, Some(message), &asked.token, stale)
                .await;
            return;
        }
        let Some(offer) = &asked.offer else {
            return;
        };
        let refusal = self.tick(http, chat, message, offer, index).await;
        self.toast(http, cq, refusal.as_deref()).await;
    }

    /// Gives the hub a pick from the message `at` (chat, id) and answers the
    /// tap: "Sent: …", the agent moved on (the chat shown its newer
    /// question), or the hub's refusal (nothing sent).
    async fn send_pick(
        &self,
        hub: &Hub,
        http: &reqwest::Client,
        at: (i64, i64),
        cq: &CallbackQuery,
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
        let outcome = self.submit_reply(hub, &asked.token, reply).await;
        let note = match &outcome {
            ReplyOutcome::Recorded { .. } => {
                self.sent().pick_sent(chat, message);
                let options = asked.offer.as_ref().map_or(&[][..], |o| &o.options[..]);
                sent_note(options, &picks)
            }
            ReplyOutcome::Stale(_) => MOVED_ON.to_owned(),
            ReplyOutcome::Refused(why) => why.clone(),
        };
        self.toast(http, cq, Some(&note)).await;
        if !matches!(outcome, ReplyOutcome::Refused(_)) {
            self.report_outcome(hub, http, chat, Some(message), &asked.token, outcome)
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
        let buttons = keyboard(&now).unwrap_or_default();
        if let Err(e) = self.api.edit_keyboard(http, chat, message, buttons).await {
            tracing::warn!(chat, error = %e, "redrawing a Telegram message's options failed");
        }
        None
    }

    /// Answers a button tap (Telegram shows a spinner until then), with a
    /// short note shown over the chat when there is something to say.
    async fn toast(&self, http: &reqwest::Client, cq: &CallbackQuery, note: Option<&str>) {
        let note = note.map(|n| notice::cut(n, MAX_TOAST_CHARS));
        let _ = self
            .api
            .answer_callback(http, &cq.id, note.as_deref())
            .await;
    }

    /// A message's text (or caption) and photo; `None` (the person told)
    /// when its photo cannot be fetched.
    async fn message_content(
        &self,
        http: &reqwest::Client,
        chat: i64,
        msg: &Message,
    ) -> Option<(String, Vec<Image>)> {
        let text = msg
            .text
            .as_deref()
            .or(msg.caption.as_deref())
            .unwrap_or("")
            .chars()
            .take(MAX_REPLY_CHARS)
            .collect::<String>();
        let mut images = Vec::new();
        if let Some(sizes) = &msg.photo {
            match self.api.photo(http, sizes).await {
                Ok(img) => images.push(img),
                Err(e) => {
                    tracing::warn!(chat, error = %e, "a Telegram photo could not be fetched");
                    self.send_note(http, chat, msg.message_id, "That photo could not be fetched; nothing was sent. Try again or send it from the panel.").await;
                    return None;
                }
            }
        }
        Some((text, images))
    }

    /// Records a reply at the hub (the panel's own operation, which judges it).
    async fn submit_reply(&self, hub: &Hub, token: &Token, reply: PersonReply) -> ReplyOutcome {
        let result = async { hub.reply_with(token, reply)?.flushed(hub).await };
        match result.await {
            Ok((reply, queued)) => {
                tracing::info!(token = %token, reply = %reply, queued, via = "telegram", "reply recorded");
                ReplyOutcome::Recorded { queued }
            }
            Err(HubError::StaleQuestion(current)) => {
                tracing::info!(token = %token, "a Telegram reply to an older question was not sent");
                ReplyOutcome::Stale(current.seq)
            }
            Err(e) => {
                tracing::warn!(token = %token, error = %e, "a reply from Telegram was refused");
                ReplyOutcome::Refused(match e {
                    HubError::Closed(m) | HubError::BadRequest(m) | HubError::Forbidden(m) => m,
                    HubError::PermissionOver => HubError::PermissionOver.to_string(),
                    _ => "The hub could not take this reply; answer from the panel.".into(),
                })
            }
        }
    }

    /// Tells the chat what became of a reply, when there is something to tell.
    async fn report_outcome(
        &self,
        hub: &Hub,
        http: &reqwest::Client,
        chat: i64,
        answered_msg: Option<i64>,
        token: &Token,
        outcome: ReplyOutcome,
    ) {
        match outcome {
            ReplyOutcome::Recorded { queued: false } => {}
            ReplyOutcome::Recorded { queued: true } => {
                self.send_note(
                    http,
                    chat,
                    answered_msg,
                    "Queued: the agent is not waiting right now; it gets this at its next wait.",
                )
                .await;
            }
            ReplyOutcome::Stale(seq) => {
                self.show_newer_question(hub, http, chat, answered_msg, token, seq)
                    .await;
            }
            ReplyOutcome::Refused(why) => {
                self.send_note(http, chat, answered_msg, &why).await;
            }
        }
    }

    /// Tells the chat that the agent asks something newer than the reply
    /// answered, showing that question (its text and option buttons only with
    /// `include_text`); a reply to this message, or a tap, answers it.
    async fn show_newer_question(
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
            offer: shown
                .filter(|m| !m.options.is_empty())
                .map(|m| Offer::new(Arc::from(notice::offered(&m.options)), m.multi_select)),
        };
        let message = SendMessage {
            reply_to_message_id: answered_msg,
            reply_markup: keyboard(&asked),
            ..SendMessage::new(chat, &text)
        };
        match self.api.send_message(http, &message).await {
            Ok(sent) => {
                if let Some(id) = sent.message_id {
                    self.sent().remember_message(chat, id, asked);
                }
            }
            Err(e) => tracing::warn!(chat, error = %e, "telling a Telegram chat failed"),
        }
    }

    /// Sends the chat a line of text, best effort; the message's id when sent.
    async fn send_note(
        &self,
        http: &reqwest::Client,
        chat: i64,
        reply_to: Option<i64>,
        text: &str,
    ) -> Option<i64> {
        let message = SendMessage {
            reply_to_message_id: reply_to,
            ..SendMessage::new(chat, text)
        };
        match self.api.send_message(http, &message).await {
            Ok(sent) => sent.message_id,
            Err(e) => {
                tracing::warn!(chat, error = %e, "telling a Telegram chat failed");
                None
            }
        }
    }
}
