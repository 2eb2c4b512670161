//! Telegram, both ways: notifications out (`sendMessage` with the question's
//! options and the quick replies as buttons, then its files with `sendPhoto` /
//! `sendDocument`, `editMessageText` when the wait ends) and the person's answers in
//! (`getUpdates` long poll; a reply to a notification, a button, a photo; multi-select
//! options ticked, then Done).
//!
//! Invariant: only chats in `chat_ids` are told or heard (and, with
//! `user_ids`, only those people); an answer reaches a session only through
//! a message this hub sent (a forged or unknown reply target is ignored), and
//! answers the question that message showed — never a newer one (the hub
//! refuses it as stale); it goes through `Hub::reply_with`, the panel's own
//! operation, which also judges every pick (a button's data is an index,
//! never trusted further). The bot token is in URLs only, never in a log or
//! error text.
//!
//! Code map: `bot_api` is the Bot API client (typed bodies and answers), `updates`
//! what Telegram sends (typed), `sent` what the bot sent and what each message asked,
//! `conversation` the answers in (an update to a reply, a tap to a pick); this file
//! the notifications out.

mod bot_api;
mod conversation;
mod sent;
mod updates;

use std::sync::{Arc, Mutex};

use holdline_contract::choices::ChoiceOption;

use super::notice::{Notice, Outcome};
use super::{Event, SendError};
use bot_api::{BotApi, SendMessage};
use holdline_core::config::notify::Telegram;
use holdline_store::lock::Unpoisoned as _;
use sent::{NoticeMessage, Sent, keyboard};

pub use bot_api::LONG_POLL_SEC;

/// The Telegram channel: its bot and the notifications it sent.
pub struct TelegramChannel {
    api: BotApi,
    /// Sent notifications. A std mutex: lookups and inserts, never across `.await`.
    sent: Mutex<Sent>,
}

impl TelegramChannel {
    pub fn new(cfg: Telegram) -> TelegramChannel {
        TelegramChannel {
            api: BotApi::new(cfg),
            sent: Mutex::default(),
        }
    }

    fn cfg(&self) -> &Telegram {
        self.api.cfg()
    }

    fn sent(&self) -> std::sync::MutexGuard<'_, Sent> {
        self.sent.lock_unpoisoned()
    }

    /// Sends or closes a notification in every allowed chat. A retry skips
    /// the chats already told.
    pub async fn deliver(&self, http: &reqwest::Client, ev: &Event) -> Result<(), SendError> {
        match ev {
            Event::Waiting(n) => self.notify_waiting(http, n).await,
            Event::Ended { notice, outcome } => self.notify_ended(http, notice, *outcome).await,
        }
    }

    /// The waiting question in every allowed chat not told yet (a test in all of them),
    /// with its options as buttons and its files after it.
    async fn notify_waiting(&self, http: &reqwest::Client, n: &Notice) -> Result<(), SendError> {
        let key = (n.token.clone(), n.request_id.clone());
        let options: Arc<[ChoiceOption]> = n.options.clone().into();
        for &chat in &self.cfg().chat_ids {
            if self.sent().told(&key, chat) && !n.test {
                continue;
            }
            let text = n.full();
            let asked = (!n.test).then(|| self.sent().asked(n, &options));
            let message = SendMessage {
                disable_web_page_preview: Some(true),
                reply_markup: asked.as_ref().and_then(keyboard),
                ..SendMessage::new(chat, &text)
            };
            let sent = self.api.send_message(http, &message).await?;
            let Some(asked) = asked else {
                continue;
            };
            let Some(id) = sent.message_id else {
                return Err(SendError::Refused(
                    "sendMessage answered without a message_id".into(),
                ));
            };
            {
                let mut remembered = self.sent();
                remembered.remember_message(chat, id, asked);
                let told = NoticeMessage {
                    chat,
                    message: id,
                    text,
                };
                remembered.remember_wait(key.clone(), told);
            }
            self.send_files(http, chat, id, n).await;
        }
        Ok(())
    }

    /// Each message that told of the wait edited to say how it ended (or, too old to
    /// edit, a reply below it saying so).
    async fn notify_ended(
        &self,
        http: &reqwest::Client,
        notice: &Notice,
        outcome: Outcome,
    ) -> Result<(), SendError> {
        let key = (notice.token.clone(), notice.request_id.clone());
        let told = self.sent().notices_of(&key);
        for NoticeMessage {
            chat,
            message,
            text,
        } in told
        {
            let ended = format!("{text}\n\n{}", outcome.sentence());
            match self.api.edit_text(http, chat, message, &ended).await {
                Ok(()) => {}
                // Too old to edit, or deleted: say it below instead.
                Err(SendError::Refused(_)) => {
                    let follow_up = notice.follow_up(outcome);
                    let below = SendMessage {
                        reply_to_message_id: Some(message),
                        ..SendMessage::new(chat, &follow_up)
                    };
                    self.api.send_message(http, &below).await?;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Sends the question's files after its text, each as a reply to it. A file
    /// Telegram refuses is logged and skipped: the text went, and a retry would not send
    /// it again.
    async fn send_files(&self, http: &reqwest::Client, chat: i64, message: i64, n: &Notice) {
        for file in &n.files {
            if let Err(e) = self.api.send_file(http, chat, message, file).await {
                tracing::warn!(token = %n.token, file = %file.name, error = %e, "telegram: a question's file was not sent");
            }
        }
    }
}
