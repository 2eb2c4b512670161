//! What Telegram sends the hub, as types: `getUpdates`' updates (a message, a button's
//! callback), and the answers of the methods whose result the hub reads.
//!
//! Invariant: an update the hub cannot read is skipped by its `update_id` (or, without
//! one, ignored), never a reason to stop listening; the types hold only the fields the
//! hub reads (Telegram's others are ignored).

use serde::Deserialize;
use serde::de::IgnoredAny;

/// `getUpdates`' result: the updates, or (a result of another shape) none.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum UpdateBatch {
    Updates(Vec<Incoming>),
    Other(IgnoredAny),
}

impl UpdateBatch {
    pub fn into_updates(self) -> Vec<Incoming> {
        match self {
            UpdateBatch::Updates(u) => u,
            UpdateBatch::Other(_) => Vec::new(),
        }
    }
}

/// One update as it came: readable, or only its id (skipped), or not even that.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Incoming {
    /// Boxed: an update is a few hundred bytes, the other kinds a number.
    Readable(Box<Update>),
    Unreadable {
        update_id: i64,
    },
    Unknown(IgnoredAny),
}

impl Incoming {
    /// Its `update_id`, when it has one: the next `getUpdates` starts past it.
    pub fn id(&self) -> Option<i64> {
        match self {
            Incoming::Readable(u) => Some(u.update_id),
            Incoming::Unreadable { update_id } => Some(*update_id),
            Incoming::Unknown(_) => None,
        }
    }
}

/// An update the hub reads: a message (a reply, a photo) or a button's callback.
#[derive(Debug, Deserialize)]
pub struct Update {
    pub update_id: i64,
    #[serde(default)]
    pub message: Option<Message>,
    #[serde(default)]
    pub callback_query: Option<CallbackQuery>,
}

/// A chat message: what the person wrote, or the bot's own message a button sat on.
#[derive(Debug, Clone, Deserialize)]
pub struct Message {
    #[serde(default)]
    pub message_id: Option<i64>,
    #[serde(default)]
    pub chat: Option<Chat>,
    #[serde(default)]
    pub from: Option<User>,
    /// The message this one replies to (a notification, when it answers one).
    #[serde(default)]
    pub reply_to_message: Option<Box<Message>>,
    #[serde(default)]
    pub text: Option<String>,
    /// A photo's or a file's words.
    #[serde(default)]
    pub caption: Option<String>,
    /// A photo, in the sizes Telegram keeps of it.
    #[serde(default)]
    pub photo: Option<Vec<PhotoSize>>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Chat {
    pub id: i64,
}

#[derive(Debug, Clone, Deserialize)]
pub struct User {
    pub id: i64,
}

/// A tap on one of the bot's inline buttons.
#[derive(Debug, Clone, Deserialize)]
pub struct CallbackQuery {
    /// What `answerCallbackQuery` names to stop the button's spinner.
    pub id: String,
    #[serde(default)]
    pub from: Option<User>,
    /// The bot's message the button is on.
    #[serde(default)]
    pub message: Option<Message>,
    /// The button's `callback_data` (a [`super::sent::Tap`]).
    #[serde(default)]
    pub data: Option<String>,
}

/// One size of a photo.
#[derive(Debug, Clone, Deserialize)]
pub struct PhotoSize {
    pub file_id: String,
    #[serde(default)]
    pub file_size: Option<u64>,
    #[serde(default)]
    pub width: u64,
    #[serde(default)]
    pub height: u64,
}

/// `sendMessage`'s result: the message sent (its id is what an answer replies to).
#[derive(Debug, Deserialize)]
pub struct SentMessage {
    #[serde(default)]
    pub message_id: Option<i64>,
}

/// `getFile`'s result: where the file's bytes are fetched.
#[derive(Debug, Deserialize)]
pub struct FileInfo {
    #[serde(default)]
    pub file_path: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_update_of_an_unreadable_shape_is_skipped_by_its_id() {
        let batch: UpdateBatch = serde_json::from_str(
            r#"[{"update_id":1,"message":{"message_id":5,"chat":{"id":7},"text":"hi"}},
                {"update_id":2,"message":{"chat":{"id":"not a number"}}},
                {"no_id":true}]"#,
        )
        .unwrap();
        let updates = batch.into_updates();
        let ids: Vec<Option<i64>> = updates.iter().map(Incoming::id).collect();
        assert_eq!(ids, [Some(1), Some(2), None]);
        let Incoming::Readable(u) = &updates[0] else {
            panic!("the first is readable: {updates:?}")
        };
        let m = u.message.as_ref().unwrap();
        assert_eq!(
            (m.chat.as_ref().unwrap().id, m.text.as_deref()),
            (7, Some("hi"))
        );
        assert!(matches!(updates[1], Incoming::Unreadable { update_id: 2 }));
        let other: UpdateBatch = serde_json::from_str("true").unwrap();
        assert!(other.into_updates().is_empty());
    }
}
