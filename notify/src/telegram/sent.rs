//! What the bot sent and what each message asked ([`Sent`]), the inline keyboard drawn
//! from it, and what a button's data names ([`Tap`]).
//!
//! Invariant: an answer reaches a session only through a message remembered here (a
//! forged or forgotten reply target answers nothing); the memory is bounded
//! ([`REMEMBERED`] waits, [`REMEMBERED_MESSAGES`] messages, oldest forgotten first); a
//! button's data is an index into what the message showed, never a label.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use holdline_contract::choices::ChoiceOption;
use serde::Serialize;

use super::super::notice::Notice;
use holdline_store::session::Token;

/// Questions remembered for the edit when their wait ends.
pub const REMEMBERED: usize = 2048;
/// Messages the bot sent that an answer may reply to.
pub const REMEMBERED_MESSAGES: usize = 8192;
/// Quick-reply buttons per notification.
const MAX_BUTTONS: usize = 6;

/// One message that told of a wait, to edit when the wait ends.
#[derive(Debug, Clone)]
pub struct NoticeMessage {
    pub chat: i64,
    pub message: i64,
    /// Its text as sent (the edit adds how the wait ended).
    pub text: String,
}

/// A wait: (token, requestId).
pub type WaitKey = (Token, String);

/// What a message the bot sent asked: an answer to it answers this.
#[derive(Debug, Clone)]
pub struct Asked {
    pub token: Token,
    /// The `seq` of the agent's message it showed; `None`: whatever the agent asks.
    pub question: Option<u64>,
    /// Its quick-reply buttons, in button order, as they were when it was sent.
    pub buttons: Arc<[QuickReply]>,
    /// The options it showed as buttons, if the question offered any.
    pub offer: Option<Offer>,
}

/// A quick-reply button: what it shows and the text it sends.
#[derive(Debug, Clone, PartialEq)]
pub struct QuickReply {
    pub label: String,
    pub text: String,
}

/// The options one message shows as buttons, and what the person did with them there.
#[derive(Debug, Clone)]
pub struct Offer {
    /// As the notice carried them; shared by the messages of one notice.
    pub options: Arc<[ChoiceOption]>,
    pub multi_select: bool,
    /// Multi-select: the options ticked so far, ascending; each an existing
    /// option, so at most `options.len()` of them.
    pub ticked: Vec<u32>,
    /// A pick from this message was recorded: a later tap sends nothing.
    pub sent: bool,
}

impl Offer {
    /// `options` as a message first shows them: nothing ticked, nothing sent.
    pub fn new(options: Arc<[ChoiceOption]>, multi_select: bool) -> Offer {
        Offer {
            options,
            multi_select,
            ticked: Vec::new(),
            sent: false,
        }
    }
}

/// What a button's `callback_data` names: a quick reply (`q{i}`), an option
/// (`o{i}`) or multi-select's Done (`done`). Only indexes: 64 bytes always do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tap {
    QuickReply(usize),
    Option(u32),
    Done,
}

impl Tap {
    pub fn of(data: &str) -> Option<Tap> {
        if data == "done" {
            return Some(Tap::Done);
        }
        if let Some(i) = data.strip_prefix('q') {
            return i.parse().ok().map(Tap::QuickReply);
        }
        data.strip_prefix('o')?.parse().ok().map(Tap::Option)
    }
}

/// The notifications sent, by message and by wait.
#[derive(Default)]
pub struct Sent {
    /// (chat, message id) → what it asked.
    by_message: HashMap<(i64, i64), Asked>,
    /// The keys of `by_message`, oldest first: past `REMEMBERED_MESSAGES` the oldest go.
    message_order: VecDeque<(i64, i64)>,
    /// (token, requestId) → the messages that told about it, with their text.
    by_wait: HashMap<WaitKey, Vec<NoticeMessage>>,
    wait_order: VecDeque<WaitKey>,
    /// The last quick replies remembered: the next notice with the same
    /// templates shares them, so the snapshots cost one copy per template set.
    last_buttons: Option<Arc<[QuickReply]>>,
}

impl Sent {
    pub fn remember_message(&mut self, chat: i64, message: i64, asked: Asked) {
        if self.by_message.insert((chat, message), asked).is_none() {
            self.message_order.push_back((chat, message));
        }
        while self.message_order.len() > REMEMBERED_MESSAGES {
            if let Some(old) = self.message_order.pop_front() {
                self.by_message.remove(&old);
            }
        }
    }

    pub fn remember_wait(&mut self, key: WaitKey, told: NoticeMessage) {
        let entry = self.by_wait.entry(key.clone()).or_default();
        if entry.is_empty() {
            self.wait_order.push_back(key);
        }
        entry.push(told);
        while self.wait_order.len() > REMEMBERED {
            if let Some(old) = self.wait_order.pop_front() {
                self.by_wait.remove(&old);
            }
        }
    }

    /// What the message `message` in `chat` asked, when it is remembered.
    pub fn asked_by(&self, chat: i64, message: i64) -> Option<Asked> {
        self.by_message.get(&(chat, message)).cloned()
    }

    /// Whether `chat` was told of the wait `key` already.
    pub fn told(&self, key: &WaitKey, chat: i64) -> bool {
        self.by_wait
            .get(key)
            .is_some_and(|m| m.iter().any(|t| t.chat == chat))
    }

    /// The messages that told of the wait `key`.
    pub fn notices_of(&self, key: &WaitKey) -> Vec<NoticeMessage> {
        self.by_wait.get(key).cloned().unwrap_or_default()
    }

    /// A notice's quick-reply buttons, shared with the last notice's when equal.
    pub fn buttons(&mut self, n: &Notice) -> Arc<[QuickReply]> {
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
    pub fn asked(&mut self, n: &Notice, options: &Arc<[ChoiceOption]>) -> Asked {
        Asked {
            token: n.token.clone(),
            question: n.question,
            buttons: self.buttons(n),
            offer: (!options.is_empty()).then(|| Offer::new(options.clone(), n.multi_select)),
        }
    }

    /// Ticks option `index` of a remembered multi-select message, or unticks
    /// it; the message as it is now (`None`: forgotten, or nothing to tick).
    pub fn tick(&mut self, chat: i64, message: i64, index: u32) -> Option<Asked> {
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
    pub fn pick_sent(&mut self, chat: i64, message: i64) {
        if let Some(offer) = self
            .by_message
            .get_mut(&(chat, message))
            .and_then(|a| a.offer.as_mut())
        {
            offer.sent = true;
        }
    }
}

/// A message's inline keyboard (`reply_markup`).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Keyboard {
    pub inline_keyboard: Vec<Vec<Button>>,
}

/// One inline button: its label and the data its tap sends back.
#[derive(Debug, Clone, Serialize)]
pub struct Button {
    pub text: String,
    pub callback_data: String,
}

/// The inline keyboard of a message, drawn from what it asks: first the
/// options, one per row (`o{i}`; multi-select: ✓ on the ticked ones, then
/// Done), then the quick replies three per row (`q{i}`, the `i`th remembered
/// with the message, [`Sent::buttons`]). `None`: no buttons.
pub fn keyboard(asked: &Asked) -> Option<Keyboard> {
    let mut rows: Vec<Vec<Button>> = Vec::new();
    if let Some(offer) = &asked.offer {
        for (i, o) in offer.options.iter().enumerate() {
            let ticked = offer.ticked.binary_search(&(i as u32)).is_ok();
            let text = if ticked {
                format!("✓ {}", o.label)
            } else {
                o.label.clone()
            };
            rows.push(vec![Button {
                text,
                callback_data: format!("o{i}"),
            }]);
        }
        if offer.multi_select {
            let text = match offer.ticked.len() {
                0 => "Done".to_owned(),
                n => format!("Done ({n})"),
            };
            let done = "done".to_owned();
            rows.push(vec![Button {
                text,
                callback_data: done,
            }]);
        }
    }
    let quick: Vec<Button> = asked
        .buttons
        .iter()
        .enumerate()
        .map(|(i, b)| Button {
            text: b.label.clone(),
            callback_data: format!("q{i}"),
        })
        .collect();
    rows.extend(quick.chunks(3).map(<[Button]>::to_vec));
    (!rows.is_empty()).then_some(Keyboard {
        inline_keyboard: rows,
    })
}

/// What a tap that sent a pick says: `Sent: Postgres, SQLite`.
pub fn sent_note(options: &[ChoiceOption], picks: &[u32]) -> String {
    let labels: Vec<&str> = picks
        .iter()
        .filter_map(|&i| options.get(i as usize))
        .map(|o| o.label.as_str())
        .collect();
    format!("Sent: {}", labels.join(", "))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

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
                .map(|t| holdline_core::config::Template {
                    label: "l".into(),
                    text: (*t).into(),
                    lang: None,
                })
                .collect(),
            test: false,
            files: Vec::new(),
            origin: Default::default(),
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
        let k = serde_json::to_value(keyboard(&now).unwrap()).unwrap();
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
}
