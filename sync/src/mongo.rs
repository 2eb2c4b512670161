//! MongoDB sync itself (built with the `sync` cargo feature): the client, the background
//! push task, copies of other hubs' sessions and adoption; the module's face is `super`.
//!
//! Invariant: the only code in the workspace that names the `mongodb` crate.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::TryStreamExt;
use mongodb::bson::{self, Document, doc};
use mongodb::options::{ClientOptions, IndexOptions};
use mongodb::{Client, Collection, IndexModel};
use serde::Serialize;

use super::{SyncError, SyncState};
use holdline_core::config::mask_uri;
use holdline_core::hub::{Hub, SyncSnapshot};
use holdline_store::lock::Unpoisoned as _;
use holdline_store::session::{AttachmentRef, Message, QueuedReply, Session, Token, now_ms};

/// Attachment id → bytes, as MongoDB has them.
type Files = Vec<(String, Vec<u8>)>;
/// A session, its history, its queue and its files, as MongoDB has them.
type Fetched = (Session, Vec<(u64, Message)>, Vec<QueuedReply>, Files);

/// The MongoDB database every hub of a multi-hub setup shares (docs/operations.md).
const DATABASE: &str = "holdline";
/// Sessions pushed per round.
const BATCH: usize = 100;

/// Whether `uri` parses as a MongoDB connection string: the driver's reason when not.
pub fn check_uri(uri: &str) -> Result<(), String> {
    mongodb::options::ConnectionString::parse(uri)
        .map(|_| ())
        .map_err(|e| match *e.kind {
            mongodb::error::ErrorKind::InvalidArgument { message, .. } => message,
            other => other.to_string(),
        })
}

impl From<mongodb::error::Error> for SyncError {
    fn from(e: mongodb::error::Error) -> Self {
        SyncError::Mongo(e.to_string())
    }
}

/// Handle to the sync task. Cheap to clone.
#[derive(Clone)]
pub struct Sync {
    inner: Arc<SyncInner>,
}

struct SyncInner {
    hub: Hub,
    client: Client,
    uri_masked: String,
    /// Connection state and last error. A std mutex: set and read, never across `.await`.
    status: Mutex<(&'static str, Option<String>)>,
}

impl Sync {
    /// Prepares the client (no connection is made yet) and starts the
    /// background task. A malformed URI is an error at start.
    pub async fn start(hub: Hub, uri: &str) -> Result<Sync, SyncError> {
        let mut options = ClientOptions::parse(uri)
            .await
            .map_err(|e| SyncError::Mongo(format!("bad MongoDB URI {}: {e}", mask_uri(uri))))?;
        options.app_name = Some("holdline-hub".into());
        options.connect_timeout = Some(Duration::from_secs(3));
        options.server_selection_timeout = Some(Duration::from_secs(3));
        let client = Client::with_options(options)?;
        let sync = Sync {
            inner: Arc::new(SyncInner {
                hub,
                client,
                uri_masked: mask_uri(uri),
                status: Mutex::new(("connecting", None)),
            }),
        };
        let task = sync.clone();
        tokio::spawn(async move { task.run().await });
        Ok(sync)
    }

    pub fn state(&self) -> SyncState {
        let (state, last_error) = self.inner.status.lock_unpoisoned().clone();
        let (pending, lag) = self.inner.hub.sync_backlog();
        SyncState {
            state: state.into(),
            pending,
            lag_ms: lag.as_millis() as u64,
            last_error,
        }
    }

    fn set_status(&self, state: &'static str, error: Option<String>) {
        let mut s = self.inner.status.lock_unpoisoned();
        if s.0 != state {
            match &error {
                Some(e) => {
                    tracing::warn!(uri = %self.inner.uri_masked, state, error = %e, "MongoDB sync")
                }
                None => tracing::info!(uri = %self.inner.uri_masked, state, "MongoDB sync"),
            }
        }
        *s = (
            state,
            error.or_else(|| s.1.take()).filter(|_| state != "ok"),
        );
    }

    fn db(&self) -> mongodb::Database {
        self.inner.client.database(DATABASE)
    }
    fn sessions(&self) -> Collection<Document> {
        self.db().collection("sessions")
    }
    fn messages(&self) -> Collection<Document> {
        self.db().collection("messages")
    }
    fn attachments(&self) -> Collection<Document> {
        self.db().collection("attachments")
    }
    fn replies(&self) -> Collection<Document> {
        self.db().collection("replies")
    }

    /// The background loop: connect, create indexes, then push changes and
    /// pull other hubs' sessions, backing off while MongoDB is away.
    async fn run(self) {
        let shutdown = self.inner.hub.shutdown_token().clone();
        let mut ready = false;
        let mut last_pull: i64 = 0;
        let mut backoff = Duration::from_millis(500);
        loop {
            let round = async {
                if !ready {
                    self.prepare().await?;
                    ready = true;
                }
                self.push_round().await?;
                last_pull = self.pull_round(last_pull).await?;
                Ok::<(), SyncError>(())
            };
            let pause = match tokio::time::timeout(Duration::from_secs(30), round).await {
                Ok(Ok(())) => {
                    self.set_status("ok", None);
                    backoff = Duration::from_millis(500);
                    Duration::from_millis(500)
                }
                Ok(Err(e)) => {
                    self.set_status(
                        if ready { "down" } else { "connecting" },
                        Some(self.clean(e.to_string())),
                    );
                    backoff = (backoff * 2).min(Duration::from_secs(10));
                    backoff
                }
                Err(_) => {
                    self.set_status("down", Some("MongoDB did not answer within 30 s".into()));
                    backoff = (backoff * 2).min(Duration::from_secs(10));
                    backoff
                }
            };
            tokio::select! {
                _ = tokio::time::sleep(pause) => {}
                _ = shutdown.cancelled() => break,
            }
        }
        // One last push so a clean stop leaves MongoDB current.
        let _ = tokio::time::timeout(Duration::from_secs(3), self.push_round()).await;
    }

    /// Error text with any credentials of the URI removed.
    fn clean(&self, text: String) -> String {
        let mut out = text;
        for word in out.clone().split_whitespace() {
            if word.contains("://") && word.contains('@') {
                out = out.replace(word, &mask_uri(word));
            }
        }
        out
    }

    async fn prepare(&self) -> Result<(), SyncError> {
        self.db().run_command(doc! {"ping": 1}).await?;
        let idx = |keys: Document| IndexModel::builder().keys(keys).build();
        self.sessions().create_index(idx(doc! {"owner": 1})).await?;
        self.sessions()
            .create_index(idx(doc! {"updatedAt": 1}))
            .await?;
        self.messages()
            .create_index(
                IndexModel::builder()
                    .keys(doc! {"token": 1, "seq": 1})
                    .options(IndexOptions::builder().unique(true).build())
                    .build(),
            )
            .await?;
        self.replies().create_index(idx(doc! {"token": 1})).await?;
        Ok(())
    }

    /// Pushes changed sessions; whatever fails goes back on the set.
    async fn push_round(&self) -> Result<(), SyncError> {
        let hub = &self.inner.hub;
        loop {
            let batch = hub.take_unsynced(BATCH);
            if batch.is_empty() {
                return Ok(());
            }
            let mut rest = batch.clone().into_iter();
            for (token, _) in batch.iter() {
                rest.next();
                if let Err(e) = self.push_one(token, false).await {
                    let mut back: Vec<(Token, Instant)> =
                        batch.iter().filter(|(t, _)| t == token).cloned().collect();
                    back.extend(rest);
                    hub.return_unsynced(back);
                    return Err(e);
                }
            }
        }
    }

    /// Writes one session. Unless `claim`, a session MongoDB says another
    /// hub owns is not written: that hub adopted it, and this one keeps a copy.
    async fn push_one(&self, token: &Token, claim: bool) -> Result<(), SyncError> {
        let hub = &self.inner.hub;
        let snapshot = hub
            .sync_snapshot(token)
            .map_err(|e| SyncError::Decode(e.to_string()))?;
        let Some(SyncSnapshot {
            session,
            messages,
            replies,
        }) = snapshot
        else {
            return Ok(());
        };
        if !claim
            && let Some(remote) = self
                .sessions()
                .find_one(doc! {"_id": token.as_str()})
                .projection(doc! {"owner": 1})
                .await?
            && remote
                .get_str("owner")
                .is_ok_and(|owner| owner != hub.name())
        {
            return self.pull_session(token).await;
        }
        self.push_history(token, &messages, &replies).await?;
        let state =
            serde_json::to_string(&session).map_err(|e| SyncError::Decode(e.to_string()))?;
        self.sessions()
            .replace_one(
                doc! {"_id": token.as_str()},
                doc! {
                    "_id": token.as_str(),
                    "owner": hub.name(),
                    "rev": session.rev as i64,
                    "updatedAt": now_ms(),
                    "title": session.shown_title(),
                    "status": session.status.as_str(),
                    "workspace": &session.workspace,
                    "lastActiveAt": session.last_active_at,
                    "msgCount": session.msg_count as i64,
                    "state": state,
                },
            )
            .upsert(true)
            .await?;
        // Not flushed: a mark a crash takes back only pushes the session again
        // at the next start, and every push is idempotent (upserts by id).
        let _mark_not_flushed = hub
            .mark_synced(token, session.rev, session.msg_count)
            .map_err(|e| SyncError::Decode(e.to_string()))?;
        Ok(())
    }

    /// Writes the messages MongoDB lacks (their files first) and the session's
    /// reply queue as this hub has it.
    async fn push_history(
        &self,
        token: &Token,
        messages: &[(u64, Message)],
        replies: &[QueuedReply],
    ) -> Result<(), SyncError> {
        // Files first: a message in MongoDB always finds its files there.
        for a in messages.iter().flat_map(|(_, m)| &m.attachments) {
            self.push_file(token, a).await?;
        }
        for (seq, m) in messages {
            let mut d = to_doc(m)?;
            d.insert("_id", format!("{token}:{seq}"));
            d.insert("token", token.as_str());
            d.insert("seq", *seq as i64);
            self.messages()
                .replace_one(doc! {"_id": format!("{token}:{seq}")}, d)
                .upsert(true)
                .await?;
        }
        let ids: Vec<&str> = replies.iter().map(|r| r.id.as_str()).collect();
        self.replies()
            .delete_many(doc! {"token": token.as_str(), "_id": {"$nin": ids}})
            .await?;
        for r in replies {
            let state = serde_json::to_string(r).map_err(|e| SyncError::Decode(e.to_string()))?;
            self.replies()
                .replace_one(
                    doc! {"_id": r.id.as_str()},
                    doc! {"_id": r.id.as_str(), "token": token.as_str(), "at": r.at, "state": state},
                )
                .upsert(true)
                .await?;
        }
        Ok(())
    }

    /// Writes one attachment's bytes, unless MongoDB has them (they never change).
    async fn push_file(&self, token: &Token, a: &AttachmentRef) -> Result<(), SyncError> {
        let there = self
            .attachments()
            .find_one(doc! {"_id": a.id.as_str()})
            .projection(doc! {"_id": 1})
            .await?;
        if there.is_some() {
            return Ok(());
        }
        let Some(bytes) = self
            .inner
            .hub
            .attachment_bytes(&a.id)
            .map_err(|e| SyncError::Decode(e.to_string()))?
        else {
            tracing::warn!(token = %token, attachment = %a.id, "an attachment's bytes are missing; not synced");
            return Ok(());
        };
        let data = bson::Binary {
            subtype: bson::spec::BinarySubtype::Generic,
            bytes,
        };
        self.attachments()
            .replace_one(
                doc! {"_id": a.id.as_str()},
                doc! {"_id": a.id.as_str(), "token": token.as_str(), "name": a.name.as_str(),
                "mimeType": a.mime_type.as_str(), "size": a.size as i64, "data": data},
            )
            .upsert(true)
            .await?;
        Ok(())
    }

    /// The bytes of the files `messages` name, as MongoDB has them (one it lacks is
    /// left out: its message then serves 404 for it).
    async fn fetch_files(&self, messages: &[(u64, Message)]) -> Result<Files, SyncError> {
        let mut files = Vec::new();
        for a in messages.iter().flat_map(|(_, m)| &m.attachments) {
            let found = self
                .attachments()
                .find_one(doc! {"_id": a.id.as_str()})
                .await?;
            match found
                .as_ref()
                .and_then(|d| d.get_binary_generic("data").ok())
            {
                Some(bytes) => files.push((a.id.clone(), bytes.clone())),
                None => tracing::warn!(attachment = %a.id, "an attachment is not in MongoDB"),
            }
        }
        Ok(files)
    }

    /// Copies in sessions other hubs changed since `since`; returns the new mark.
    async fn pull_round(&self, since: i64) -> Result<i64, SyncError> {
        let hub = &self.inner.hub;
        let started = now_ms();
        // A generous overlap: a write stamped before our last pull may become
        // visible after it (a slow MongoDB); revisions already held are skipped.
        let changed: Vec<Document> = self
            .sessions()
            .find(doc! {"owner": {"$ne": hub.name()}, "updatedAt": {"$gte": since - 30_000}})
            .projection(doc! {"_id": 1, "rev": 1})
            .await?
            .try_collect()
            .await?;
        for d in changed {
            let Some(token) = d.get_str("_id").ok().and_then(Token::parse) else {
                continue;
            };
            if hub
                .mirror_rev(&token)
                .is_some_and(|have| have >= remote_rev(&d))
            {
                continue;
            }
            self.pull_session(&token).await?;
        }
        Ok(started)
    }

    /// The session, its history and its queue as MongoDB has them.
    async fn fetch(&self, token: &Token) -> Result<Option<Fetched>, SyncError> {
        let Some(d) = self
            .sessions()
            .find_one(doc! {"_id": token.as_str()})
            .await?
        else {
            return Ok(None);
        };
        let mut session: Session = serde_json::from_str(d.get_str("state").unwrap_or("null"))
            .map_err(|e| SyncError::Decode(e.to_string()))?;
        if let Ok(owner) = d.get_str("owner") {
            session.hub = owner.to_owned();
        }
        session.rev = session.rev.max(remote_rev(&d));
        let mut messages = Vec::new();
        let mut cursor = self
            .messages()
            .find(doc! {"token": token.as_str()})
            .sort(doc! {"seq": 1})
            .await?;
        while let Some(m) = cursor.try_next().await? {
            let seq = m.get_i64("seq").unwrap_or(0) as u64;
            let msg: Message =
                bson::from_document(m).map_err(|e| SyncError::Decode(e.to_string()))?;
            messages.push((seq, msg));
        }
        let mut replies = Vec::new();
        let mut cursor = self
            .replies()
            .find(doc! {"token": token.as_str()})
            .sort(doc! {"at": 1})
            .await?;
        while let Some(r) = cursor.try_next().await? {
            let reply: QueuedReply = serde_json::from_str(r.get_str("state").unwrap_or("null"))
                .map_err(|e| SyncError::Decode(e.to_string()))?;
            replies.push(reply);
        }
        let files = self.fetch_files(&messages).await?;
        Ok(Some((session, messages, replies, files)))
    }

    async fn pull_session(&self, token: &Token) -> Result<(), SyncError> {
        if let Some((session, messages, _, files)) = self.fetch(token).await? {
            // Not flushed: MongoDB keeps the original, and the first pull after a
            // start copies in every session newer than the copy the disk kept.
            let _copy_not_flushed = self
                .inner
                .hub
                .put_mirror(session, messages, files)
                .map_err(|e| SyncError::Decode(e.to_string()))?;
        }
        Ok(())
    }

    /// Makes this hub the owner of `token` when only MongoDB (or a copy from
    /// it) knows the session: the agent failed over to this hub.
    pub async fn adopt(&self, token: &Token) -> Result<bool, SyncError> {
        if self.inner.hub.owns(token) == Some(true) {
            return Ok(false);
        }
        let Some((session, messages, replies, files)) =
            tokio::time::timeout(Duration::from_secs(5), self.fetch(token))
                .await
                .map_err(|_| SyncError::Mongo("MongoDB did not answer within 5 s".into()))??
        else {
            return Ok(false);
        };
        // On disk before MongoDB says this hub owns it, and before the agent's
        // call that asked goes on here.
        self.inner
            .hub
            .adopt(session, messages, replies, files)
            .map_err(|e| SyncError::Decode(e.to_string()))?
            .flushed(&self.inner.hub)
            .await
            .map_err(|e| SyncError::Decode(e.to_string()))?;
        // Claim it in MongoDB at once, so the old owner stops writing.
        if let Err(e) = self.push_one(token, true).await {
            tracing::warn!(token = %token, error = %self.clean(e.to_string()), "recording the adoption failed; sync will retry");
            self.inner
                .hub
                .return_unsynced(vec![(token.clone(), Instant::now())]);
        }
        Ok(true)
    }
}

fn remote_rev(d: &Document) -> u64 {
    d.get_i64("rev")
        .map(|r| r as u64)
        .or_else(|_| d.get_i32("rev").map(|r| r as u64))
        .unwrap_or(0)
}

fn to_doc<T: Serialize>(v: &T) -> Result<Document, SyncError> {
    bson::to_document(v).map_err(|e| SyncError::Decode(e.to_string()))
}
