//! The Telegram Bot API as the hub calls it: one typed body per method it uses, the
//! answer's `result` decoded to the type the caller reads, files fetched to a bound.
//!
//! Invariant: the bot token is in URLs only, never in a log or error text; an answer's
//! `description` (the Bot API's body) is never read back (`channels::refusal`); every
//! body is read to a bound.

use std::time::Duration;

use base64::Engine as _;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::super::SendError;
use super::super::channels::{MAX_ANSWER, read_bounded, refusal, transport};
use super::sent::Keyboard;
use super::updates::{FileInfo, PhotoSize, SentMessage, UpdateBatch};
use holdline_core::config::notify::Telegram;
use holdline_store::session::Image;

/// How long one `getUpdates` holds at the Bot API.
pub const LONG_POLL_SEC: u64 = 25;
/// The most of a `getUpdates` answer read (20 updates of text are far less).
const MAX_UPDATES_BYTES: usize = 4 * 1024 * 1024;
/// The largest photo fetched (a reply's image).
const MAX_PHOTO_BYTES: u64 = 5 * 1024 * 1024;
/// How long a plain method call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(15);

/// `sendMessage`.
#[derive(Debug, Serialize)]
pub struct SendMessage<'a> {
    pub chat_id: i64,
    pub text: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disable_web_page_preview: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply_to_message_id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply_markup: Option<Keyboard>,
}

impl<'a> SendMessage<'a> {
    /// `text` to `chat`, nothing else set.
    pub fn new(chat_id: i64, text: &'a str) -> Self {
        SendMessage {
            chat_id,
            text,
            disable_web_page_preview: None,
            reply_to_message_id: None,
            reply_markup: None,
        }
    }
}

/// `editMessageText`.
#[derive(Debug, Serialize)]
struct EditMessageText<'a> {
    chat_id: i64,
    message_id: i64,
    text: &'a str,
    disable_web_page_preview: bool,
}

/// `editMessageReplyMarkup`.
#[derive(Debug, Serialize)]
struct EditMessageReplyMarkup {
    chat_id: i64,
    message_id: i64,
    reply_markup: Keyboard,
}

/// `answerCallbackQuery`.
#[derive(Debug, Serialize)]
struct AnswerCallbackQuery<'a> {
    callback_query_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<&'a str>,
}

/// `getUpdates`.
#[derive(Debug, Serialize)]
struct GetUpdates {
    offset: i64,
    timeout: u64,
    limit: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    allowed_updates: Option<[&'static str; 2]>,
}

/// `getFile`.
#[derive(Debug, Serialize)]
struct GetFile<'a> {
    file_id: &'a str,
}

/// Every Bot API answer: `ok` and, when it is, the method's `result`.
#[derive(Debug, serde::Deserialize)]
struct Envelope {
    #[serde(default)]
    ok: bool,
    #[serde(default)]
    result: serde_json::Value,
}

/// The Bot API of one bot.
pub struct BotApi {
    cfg: Telegram,
}

impl BotApi {
    pub fn new(cfg: Telegram) -> BotApi {
        BotApi { cfg }
    }

    pub fn cfg(&self) -> &Telegram {
        &self.cfg
    }

    /// Calls a Bot API method; `Ok` is its `result` as `T`.
    async fn call<T: DeserializeOwned>(
        &self,
        http: &reqwest::Client,
        method: &str,
        body: &impl Serialize,
        timeout: Duration,
    ) -> Result<T, SendError> {
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

    /// Sends a Bot API request; `Ok` is its `result` as `T`.
    async fn answer<T: DeserializeOwned>(
        &self,
        method: &str,
        request: reqwest::RequestBuilder,
    ) -> Result<T, SendError> {
        let resp = request.send().await.map_err(transport)?;
        let status = resp.status();
        let cap = if method == "getUpdates" {
            MAX_UPDATES_BYTES
        } else {
            MAX_ANSWER
        };
        let bytes = read_bounded(resp, cap).await?;
        // Any JSON is an answer; only its envelope's `ok` and `result` are read.
        let answer: serde_json::Value =
            serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null);
        let unreadable = answer.is_null();
        if status.is_success()
            && let Ok(Envelope { ok: true, result }) = serde_json::from_value(answer)
        {
            return serde_json::from_value(result).map_err(|_| {
                SendError::Refused(format!("{method}: an answer of an unexpected shape"))
            });
        }
        // The status alone: the answer's `description` is the Bot API's body,
        // which the hub never reads back (`channels::refusal`).
        match refusal(status, &format!("{method}: ")) {
            SendError::Refused(what) if unreadable => Err(SendError::Retry(what)),
            e => Err(e),
        }
    }

    /// `sendMessage`: the message sent.
    pub async fn send_message(
        &self,
        http: &reqwest::Client,
        message: &SendMessage<'_>,
    ) -> Result<SentMessage, SendError> {
        self.call(http, "sendMessage", message, CALL_TIMEOUT).await
    }

    /// `editMessageText`: the message's text replaced.
    pub async fn edit_text(
        &self,
        http: &reqwest::Client,
        chat_id: i64,
        message_id: i64,
        text: &str,
    ) -> Result<(), SendError> {
        let body = EditMessageText {
            chat_id,
            message_id,
            text,
            disable_web_page_preview: true,
        };
        let _: serde::de::IgnoredAny = self
            .call(http, "editMessageText", &body, CALL_TIMEOUT)
            .await?;
        Ok(())
    }

    /// `editMessageReplyMarkup`: the message's buttons redrawn.
    pub async fn edit_keyboard(
        &self,
        http: &reqwest::Client,
        chat_id: i64,
        message_id: i64,
        reply_markup: Keyboard,
    ) -> Result<(), SendError> {
        let body = EditMessageReplyMarkup {
            chat_id,
            message_id,
            reply_markup,
        };
        let _: serde::de::IgnoredAny = self
            .call(
                http,
                "editMessageReplyMarkup",
                &body,
                Duration::from_secs(10),
            )
            .await?;
        Ok(())
    }

    /// `answerCallbackQuery`: stops a button's spinner, with `text` as a toast.
    pub async fn answer_callback(
        &self,
        http: &reqwest::Client,
        callback_query_id: &str,
        text: Option<&str>,
    ) -> Result<(), SendError> {
        let body = AnswerCallbackQuery {
            callback_query_id,
            text,
        };
        let _: serde::de::IgnoredAny = self
            .call(http, "answerCallbackQuery", &body, Duration::from_secs(10))
            .await?;
        Ok(())
    }

    /// `getUpdates` from `offset`: held [`LONG_POLL_SEC`], or (`one_at_a_time`, after
    /// an answer too large to read) one update at once.
    pub async fn updates(
        &self,
        http: &reqwest::Client,
        offset: i64,
        one_at_a_time: bool,
    ) -> Result<UpdateBatch, SendError> {
        let body = GetUpdates {
            offset,
            timeout: if one_at_a_time { 0 } else { LONG_POLL_SEC },
            limit: if one_at_a_time { 1 } else { 20 },
            allowed_updates: Some(["message", "callback_query"]),
        };
        let hold = Duration::from_secs(LONG_POLL_SEC + 10);
        self.call(http, "getUpdates", &body, hold).await
    }

    /// Sends one file as a reply to `message`: raster images with `sendPhoto`, the rest
    /// with `sendDocument`.
    pub async fn send_file(
        &self,
        http: &reqwest::Client,
        chat: i64,
        message: i64,
        file: &super::super::notice::NoticeFile,
    ) -> Result<(), SendError> {
        let (method, field) = if file.is_image() {
            ("sendPhoto", "photo")
        } else {
            ("sendDocument", "document")
        };
        let part = reqwest::multipart::Part::stream(file.bytes.clone())
            .file_name(file.name.clone())
            .mime_str(&file.mime_type)
            .unwrap_or_else(|_| {
                reqwest::multipart::Part::stream(file.bytes.clone()).file_name(file.name.clone())
            });
        let form = reqwest::multipart::Form::new()
            .text("chat_id", chat.to_string())
            .text("reply_to_message_id", message.to_string())
            .part(field, part);
        let request = self
            .request(http, method, Duration::from_secs(60))
            .multipart(form);
        let _: serde::de::IgnoredAny = self.answer(method, request).await?;
        Ok(())
    }

    /// Fetches the single update at `offset` without keeping it, to learn
    /// its id: the body is scanned as it streams (up to 64 MiB), never held.
    pub async fn skip_one(&self, http: &reqwest::Client, offset: i64) -> Option<i64> {
        const SCAN_LIMIT: usize = 64 * 1024 * 1024;
        let body = GetUpdates {
            offset,
            timeout: 0,
            limit: 1,
            allowed_updates: None,
        };
        let mut resp = self
            .request(http, "getUpdates", Duration::from_secs(120))
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

    /// The largest size of a photo that fits, as an image.
    pub async fn photo(
        &self,
        http: &reqwest::Client,
        sizes: &[PhotoSize],
    ) -> Result<Image, SendError> {
        let best = sizes
            .iter()
            .filter(|p| p.file_size.is_none_or(|s| s <= MAX_PHOTO_BYTES))
            .max_by_key(|p| p.width * p.height)
            .map(|p| p.file_id.as_str())
            .ok_or_else(|| SendError::Refused("no photo size small enough".into()))?;
        let file: FileInfo = self
            .call(http, "getFile", &GetFile { file_id: best }, CALL_TIMEOUT)
            .await?;
        let path = file
            .file_path
            .filter(|p| !p.contains(".."))
            .ok_or_else(|| SendError::Refused("getFile answered without a file_path".into()))?;
        let bytes = self.download(http, &path).await?;
        let mime_type = sniff(&bytes)
            .ok_or_else(|| SendError::Refused("the photo is not png, jpeg, gif or webp".into()))?;
        Ok(Image {
            mime_type: mime_type.into(),
            data: base64::engine::general_purpose::STANDARD.encode(&bytes),
        })
    }

    /// A file's bytes by its `file_path`, at most [`MAX_PHOTO_BYTES`].
    async fn download(&self, http: &reqwest::Client, path: &str) -> Result<Vec<u8>, SendError> {
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
        read_bounded(resp, MAX_PHOTO_BYTES as usize).await
    }
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

    #[test]
    fn images_are_known_by_their_bytes() {
        assert_eq!(sniff(&[0xFF, 0xD8, 0xFF, 0xE0]), Some("image/jpeg"));
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\n...."), Some("image/png"));
        assert_eq!(sniff(b"%PDF-1.4"), None);
    }
}
