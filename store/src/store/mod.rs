//! The only code that knows sled: sessions, messages, bindings, queued replies
//! and the schema version, each change applied atomically across trees
//! (through `journal`, never sled's transactions).
//!
//! Layout (one tree each):
//! - `sessions`: token → session metadata (JSON)
//! - `summaries`: token as 16 raw bytes → what the session table keeps in
//!   memory of every session (18 bytes, see `summary_bytes`); written with
//!   every session record, so a start reads these and no session record
//! - `history`: token ‖ seq of the chunk's first message (u64 BE) → up to 16
//!   consecutive messages (JSON each, see [`history`]); a session's history is a
//!   prefix scan, and appending rewrites at most one small chunk
//! - `bindings`, `plans`, `threads`: binding key / plan name / thread id → token
//! - `replies`: token ‖ id (u64 BE: sled's monotonic id, kept above the
//!   queue's last) → queued reply
//! - `meta`: `schema_version` (4; versions 1 to 3 are upgraded at open), `templates`,
//!   `manifest` (what the store holds, written with every write; see [`manifest`])
//! - `files`: attachment id → what names its file (see [`files`]): the file's
//!   SHA-256 and size, its owner, session and question; the bytes are in
//!   `attachments/<sha-256>` beside sled's files, stored once however many
//!   messages carry them, and written before the record naming them
//! - `synced`: token → (rev, messages) already written to MongoDB
//! - `journal`: sequence number → a write in progress (see [`journal`])
//!
//! Beside sled's files, `holdline-generation` notes the last write a flush
//! confirmed (see [`manifest`]); after a failed write the store is reopened
//! (see [`recover`]); backups are taken in [`backup`], checked and put back in
//! `verify.rs` (`verify`, `restore`).

mod backup;
mod files;
mod history;
mod journal;
mod manifest;
mod open;
mod recover;
mod verify;

pub use backup::{BackupReport, backups_dir};
pub use files::{FileRecord, Quota, QuotaExceeded, Staged, Usage, sha_of};
use manifest::Manifest;
pub use recover::StoreState;
pub use verify::{Credentials, Restored, Verified, restore, verify};

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use sled::{IVec, Tree};

use journal::{Op, TreeId};

use crate::lock::Unpoisoned as _;
use crate::session::{Message, QueuedReply, Session, Status, Summary, Token};

/// How long a flush may take before the write counts as failed.
const FLUSH_LIMIT: std::time::Duration = std::time::Duration::from_secs(30);

/// The on-disk layout version this build reads and writes. Versions 1 (no
/// `summaries`), 2 (one key per message, in `messages`) and 3 (a file's bytes
/// in the `attachments` tree, by id) are upgraded at open.
pub const SCHEMA_VERSION: u32 = 4;

/// Where schema versions 1 and 2 kept messages, one key each.
const LEGACY_MESSAGES: &str = "messages";

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(
        "the store at {path} is locked by another holdline-hub process; stop that hub first (or pass another --home)"
    )]
    Locked { path: PathBuf },
    #[error(
        "the store at {path} has schema version {found}, this holdline-hub reads version {expected}; run a matching holdline-hub, or export with it and import here"
    )]
    Schema {
        path: PathBuf,
        found: u32,
        expected: u32,
    },
    #[error(
        "the store at {path} is damaged ({detail}); restore it from a backup with `holdline-hub restore <home>/backups/store-…` (the newest that `holdline-hub verify` passes), or move it aside and import an export or let MongoDB bring the sessions back (see docs/operations.md)"
    )]
    Corrupt { path: PathBuf, detail: String },
    #[error(
        "cannot open the store at {path}: {source}; check that the folder exists, is writable and the disk is not full"
    )]
    Open {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "storage write failed: {0}; check free disk space and permissions of the holdline home"
    )]
    Io(String),
    #[error("a stored record is unreadable: {0}")]
    Decode(String),
    /// A restore that could not put the backup in place (nothing to do with
    /// free space: the message says what failed).
    #[error("the restore did not finish: {0}")]
    Restore(String),
    /// A write that asked for the attachment quota would pass it; nothing of it was written.
    #[error(transparent)]
    Quota(QuotaExceeded),
}

impl From<sled::Error> for StoreError {
    fn from(e: sled::Error) -> Self {
        match e {
            // Read back wrong: the store is damaged, not the disk full.
            sled::Error::Corruption { .. } => StoreError::Decode(e.to_string()),
            other => StoreError::Io(other.to_string()),
        }
    }
}

/// Which name-to-token table a binding lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BindingKind {
    /// `workspace::title@host` → token
    Chat,
    /// plan name → token
    Plan,
    /// thread id → token
    Thread,
}

/// A set of changes applied atomically.
#[derive(Debug, Default)]
pub struct Write {
    sessions: Vec<Session>,
    messages: Vec<(Token, u64, Message)>,
    bind: Vec<(BindingKind, String, Option<Token>)>,
    enqueue: Vec<(Token, QueuedReply)>,
    dequeue: Vec<(Token, String)>,
    files: Vec<(String, FileRecord)>,
    release: Vec<String>,
    within_quota: bool,
}

impl Write {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn session(&mut self, s: &Session) -> &mut Self {
        self.sessions.push(s.clone());
        self
    }
    pub fn message(&mut self, token: &Token, seq: u64, m: Message) -> &mut Self {
        self.messages.push((token.clone(), seq, m));
        self
    }
    /// Points `name` at `token`, or removes it with `None`.
    pub fn bind(&mut self, kind: BindingKind, name: &str, token: Option<&Token>) -> &mut Self {
        self.bind.push((kind, name.to_owned(), token.cloned()));
        self
    }
    pub fn enqueue(&mut self, token: &Token, reply: QueuedReply) -> &mut Self {
        self.enqueue.push((token.clone(), reply));
        self
    }
    pub fn dequeue(&mut self, token: &Token, reply_id: &str) -> &mut Self {
        self.dequeue.push((token.clone(), reply_id.to_owned()));
        self
    }
    /// Names a staged file (see [`Store::stage_file`]) as attachment `id` (the
    /// message naming it goes in the same write).
    pub fn attachment(&mut self, id: &str, record: FileRecord) -> &mut Self {
        self.files.push((id.to_owned(), record));
        self
    }
    /// Drops attachment `id`'s record; its file goes once no record names it.
    pub fn release(&mut self, id: &str) -> &mut Self {
        self.release.push(id.to_owned());
        self
    }
    /// Refuses the whole write (`StoreError::Quota`) if its files would pass the
    /// attachment quota of their owner or in all.
    pub fn within_quota(&mut self) -> &mut Self {
        self.within_quota = true;
        self
    }
}

/// sled's handles: the database and its trees. Replaced whole when the store
/// is reopened after a failed write (sled refuses every write after one IO
/// error until it is opened again).
pub(crate) struct Trees {
    db: sled::Db,
    sessions: Tree,
    summaries: Tree,
    history: Tree,
    bindings: Tree,
    plans: Tree,
    threads: Tree,
    replies: Tree,
    meta: Tree,
    files: Tree,
    synced: Tree,
    journal: Tree,
    /// The store's folder (sled's files and `attachments/`).
    dir: PathBuf,
}

/// The embedded database. Cheap to clone; clones share one sled database.
#[derive(Clone)]
pub struct Store {
    /// The sled folder and cache size, for reopening.
    dir: Arc<PathBuf>,
    cache_bytes: u64,
    /// The open database; `None` while it is being reopened.
    open: Arc<std::sync::RwLock<Option<Arc<Trees>>>>,
    /// Key of the next journal record; the journal is empty after open.
    journal_seq: Arc<AtomicU64>,
    /// One flush at a time (see [`Store::flush`]).
    flushing: std::sync::Arc<tokio::sync::Mutex<()>>,
    /// How many [`Store::apply`] calls have begun, have ended, and have been
    /// made durable by a flush: a reader can tell whether what it read may
    /// still be lost to a crash (see [`Store::read_mark`]).
    begun: Arc<AtomicU64>,
    applied: Arc<AtomicU64>,
    durable: Arc<AtomicU64>,
    /// One write at a time: appending a message reads and rewrites its
    /// chunk, and the manifest counts what each write adds. Holds the
    /// manifest as the last write left it.
    writing: Arc<std::sync::Mutex<Manifest>>,
    /// The last write the disk confirmed, noted beside the store, and the
    /// generation last noted (see [`manifest`]).
    witness: Arc<manifest::Witness>,
    witnessed: Arc<AtomicU64>,
    /// Whether writes are failing (see [`recover`]).
    health: Arc<recover::Health>,
    /// The thread dropping a failed database (sled's drop may wait forever
    /// on a failed disk, so never on a request's or a lock's path).
    dropping: Arc<std::sync::Mutex<Option<std::thread::JoinHandle<()>>>>,
    /// The attachments' files and what each owner holds (see [`files`]).
    files: Arc<files::Files>,
}

/// Counts one [`Store::apply`] as ended when it returns, however it returns.
struct Ended<'a>(&'a AtomicU64);

impl Drop for Ended<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::AcqRel);
    }
}

fn key(token: &Token, n: u64) -> Vec<u8> {
    prefixed(token.as_str().as_bytes(), n)
}

fn prefixed(prefix: &[u8], n: u64) -> Vec<u8> {
    let mut k = Vec::with_capacity(prefix.len() + 8);
    k.extend_from_slice(prefix);
    k.extend_from_slice(&n.to_be_bytes());
    k
}

fn decode<T: serde::de::DeserializeOwned>(v: &[u8]) -> Result<T, StoreError> {
    serde_json::from_slice(v).map_err(|e| StoreError::Decode(e.to_string()))
}

fn encode<T: serde::Serialize>(v: &T) -> Vec<u8> {
    serde_json::to_vec(v).expect("store records always serialize")
}

impl Store {
    /// Every session's summary, by the token's raw bytes.
    pub fn load_summaries(&self) -> Result<HashMap<[u8; 16], Summary>, StoreError> {
        let t = self.t()?;
        let mut all = HashMap::new();
        for record in t.summaries.iter() {
            let (key, value) = record?;
            let raw = <[u8; 16]>::try_from(key.as_ref())
                .map_err(|_| StoreError::Decode("a session summary's key is not a token".into()))?;
            all.insert(raw, summary_from(&value)?);
        }
        Ok(all)
    }

    /// One session's whole record.
    pub fn session(&self, token: &Token) -> Result<Option<Session>, StoreError> {
        self.t()?
            .sessions
            .get(token.as_str())?
            .map(|v| decode(&v))
            .transpose()
    }

    /// Applies every change of `w` atomically. Not yet durable: call [`Store::flush`].
    ///
    /// Atomic across crashes: never half of a write. If a key fails mid-way (the
    /// disk failed), its journal record stays and the next open finishes the
    /// write, so a write reported as failed may still take effect after a restart.
    pub fn apply(&self, w: &Write) -> Result<(), StoreError> {
        // Before the write lock: a reopen holds it while sled lets go.
        self.refuse_while_failing()?;
        let mut manifest = self.writing.lock_unpoisoned();
        self.begun.fetch_add(1, Ordering::AcqRel);
        // Ended, also when it failed half-way: a flush then makes that half durable.
        let _ended = Ended(&self.applied);
        let t = self.t()?;
        let mut ops = self.ops(&t, w)?;
        if ops.is_empty() {
            return Ok(());
        }
        // Checked before anything is written: over quota, nothing of `w` is.
        let files = self.files.after(&t, &ops, w.within_quota)?;
        // The manifest goes with every write, in the same journal record.
        let next = manifest.after(&t, &ops);
        ops.push(next.op());
        let record = self
            .journal_seq
            .fetch_add(1, Ordering::Relaxed)
            .to_be_bytes();
        let written = (|| {
            t.journal.insert(record, journal::encode(&ops))?;
            for op in &ops {
                t.apply_op(op)?;
            }
            t.journal.remove(record)?;
            Ok::<_, sled::Error>(())
        })();
        match written {
            Ok(()) => {
                *manifest = next;
                if let Some(index) = files {
                    self.files.set_index(index);
                }
                Ok(())
            }
            Err(e) => Err(self.write_failed(e)),
        }
    }

    /// A mark covering every write a read made before this call could have
    /// seen, also one still being applied: pass it to [`Store::flush_through`].
    pub fn read_mark(&self) -> u64 {
        self.begun.load(Ordering::Acquire)
    }

    /// `w` as puts and deletes of concrete keys, values encoded.
    fn ops(&self, t: &Trees, w: &Write) -> Result<Vec<Op>, StoreError> {
        let put = |tree, key: Vec<u8>, value: Vec<u8>| Op {
            tree,
            key,
            value: Some(value),
        };
        let mut ops = Vec::with_capacity(
            2 * w.sessions.len()
                + w.messages.len()
                + w.bind.len()
                + w.enqueue.len()
                + w.dequeue.len()
                + w.files.len()
                + w.release.len(),
        );
        for (id, record) in &w.files {
            ops.push(put(TreeId::Files, id.as_bytes().to_vec(), encode(record)));
        }
        for id in &w.release {
            if t.files.contains_key(id.as_bytes())? {
                ops.push(Op {
                    tree: TreeId::Files,
                    key: id.as_bytes().to_vec(),
                    value: None,
                });
            }
        }
        for s in &w.sessions {
            ops.push(put(
                TreeId::Sessions,
                s.token.as_str().as_bytes().to_vec(),
                encode(s),
            ));
            ops.push(put(
                TreeId::Summaries,
                s.token.to_raw().to_vec(),
                summary_bytes(&Summary::of(s)).to_vec(),
            ));
        }
        append_messages(t, &w.messages, &mut ops)?;
        for (kind, name, token) in &w.bind {
            let tree = match kind {
                BindingKind::Chat => TreeId::Bindings,
                BindingKind::Plan => TreeId::Plans,
                BindingKind::Thread => TreeId::Threads,
            };
            ops.push(Op {
                tree,
                key: name.as_bytes().to_vec(),
                value: token.as_ref().map(|t| t.as_str().as_bytes().to_vec()),
            });
        }
        // Queued replies are keyed by an id above the queue's last, so the
        // queue keeps its order (also in a restored store, whose id counter
        // starts again).
        let mut last_ids: Vec<(&Token, u64)> = Vec::new();
        for (token, r) in &w.enqueue {
            let last = match last_ids.iter().position(|(t, _)| *t == token) {
                Some(i) => last_ids[i].1,
                None => last_reply_id(t, token)?,
            };
            let id = t.db.generate_id()?.max(last + 1);
            match last_ids.iter_mut().find(|(t, _)| *t == token) {
                Some(e) => e.1 = id,
                None => last_ids.push((token, id)),
            }
            ops.push(put(TreeId::Replies, key(token, id), encode(r)));
        }
        for (token, id) in &w.dequeue {
            if let Some(k) = reply_key(t, token, id)? {
                ops.push(Op {
                    tree: TreeId::Replies,
                    key: k,
                    value: None,
                });
            }
        }
        Ok(ops)
    }

    /// Makes every applied write durable. Called before answering anything a person typed.
    ///
    /// sled 0.34's `flush_async` deadlocks under concurrent callers
    /// (spacejam/sled#1308), so the blocking `flush` runs off the runtime, one
    /// at a time: callers that queue behind a flush find their writes already
    /// stable and return at once (a group commit).
    pub async fn flush(&self) -> Result<(), StoreError> {
        self.refuse_while_failing()?;
        let turn = self.flushing.lock().await;
        self.flush_in_turn(turn).await
    }

    /// Makes the writes up to `mark` (a [`Store::read_mark`]) durable,
    /// flushing only if no flush has covered them yet.
    pub async fn flush_through(&self, mark: u64) -> Result<(), StoreError> {
        if self.durable.load(Ordering::Acquire) >= mark {
            return Ok(());
        }
        let turn = self.flushing.lock().await;
        // The flush this one queued behind may have covered `mark`.
        if self.durable.load(Ordering::Acquire) >= mark {
            return Ok(());
        }
        self.flush_in_turn(turn).await
    }

    async fn flush_in_turn(
        &self,
        _turn: tokio::sync::MutexGuard<'_, ()>,
    ) -> Result<(), StoreError> {
        // A flush the failing disk may never answer is not even begun.
        self.refuse_while_failing()?;
        let t = self.t()?;
        let mark = self.applied.load(Ordering::Acquire);
        let store = self.clone();
        // After a failed write (a full disk) sled's flush can wait forever;
        // answer with the error instead of hanging the request or shutdown.
        let flushed = tokio::time::timeout(
            FLUSH_LIMIT,
            tokio::task::spawn_blocking(move || store.flush_trees(&t)),
        )
        .await
        .map_err(|_| {
            self.write_failed(std::io::Error::other(format!(
                "the disk did not confirm a write within {} s",
                FLUSH_LIMIT.as_secs()
            )))
        })?
        .map_err(|e| StoreError::Io(e.to_string()))?;
        flushed?;
        self.durable.fetch_max(mark, Ordering::AcqRel);
        Ok(())
    }

    pub fn flush_blocking(&self) -> Result<(), StoreError> {
        self.refuse_while_failing()?;
        let t = self.t()?;
        let mark = self.applied.load(Ordering::Acquire);
        self.flush_trees(&t)?;
        self.durable.fetch_max(mark, Ordering::AcqRel);
        Ok(())
    }

    /// sled's flush, then the generation it made durable written down beside
    /// the store (see [`manifest`]).
    fn flush_trees(&self, t: &Trees) -> Result<(), StoreError> {
        let generation = self.generation();
        t.db.flush().map_err(|e| self.write_failed(e))?;
        if self.witnessed.fetch_max(generation, Ordering::AcqRel) < generation {
            self.witness.note(generation);
        }
        Ok(())
    }

    /// The token bound to `name`, if any.
    pub fn binding(&self, kind: BindingKind, name: &str) -> Result<Option<Token>, StoreError> {
        let t = self.t()?;
        let tree = match kind {
            BindingKind::Chat => &t.bindings,
            BindingKind::Plan => &t.plans,
            BindingKind::Thread => &t.threads,
        };
        Ok(tree
            .get(name.as_bytes())?
            .and_then(|v| Token::parse(std::str::from_utf8(&v).ok()?)))
    }

    /// Every binding of one kind that points at `token`.
    pub fn bindings_of(&self, kind: BindingKind, token: &Token) -> Result<Vec<String>, StoreError> {
        let t = self.t()?;
        let tree = match kind {
            BindingKind::Chat => &t.bindings,
            BindingKind::Plan => &t.plans,
            BindingKind::Thread => &t.threads,
        };
        let mut out = Vec::new();
        for kv in tree.iter() {
            let (k, v) = kv?;
            if v.as_ref() == token.as_str().as_bytes() {
                out.push(String::from_utf8_lossy(&k).into_owned());
            }
        }
        Ok(out)
    }

    /// Messages of a session with `seq < before`, the newest `limit` of them, oldest first.
    pub fn messages(
        &self,
        token: &Token,
        before: Option<u64>,
        limit: usize,
    ) -> Result<Vec<(u64, Message)>, StoreError> {
        let t = self.t()?;
        let before = before.unwrap_or(u64::MAX);
        let mut out = Vec::with_capacity(limit.min(256));
        // Chunks that begin before `before`, newest first; the first may run past it.
        'chunks: for kv in t.history.range(key(token, 0)..key(token, before)).rev() {
            let (_, v) = kv?;
            for (seq, m) in history::entries(&v)?.into_iter().rev() {
                if out.len() == limit {
                    break 'chunks;
                }
                if seq < before {
                    out.push((seq, decode(m)?));
                }
            }
        }
        out.reverse();
        Ok(out)
    }

    /// Messages with `seq >= from`, oldest first.
    pub fn messages_from(
        &self,
        token: &Token,
        from: u64,
    ) -> Result<Vec<(u64, Message)>, StoreError> {
        let t = self.t()?;
        // From the chunk holding `from`: the last one that begins at or before it.
        let start = match t
            .history
            .range(key(token, 0)..=key(token, from))
            .next_back()
        {
            Some(kv) => kv?.0.to_vec(),
            None => key(token, from),
        };
        let mut out = Vec::new();
        for kv in t.history.range(start..key(token, u64::MAX)) {
            let (_, v) = kv?;
            for (seq, m) in history::entries(&v)? {
                if seq >= from {
                    out.push((seq, decode(m)?));
                }
            }
        }
        Ok(out)
    }

    /// Whether any message of the session contains `needle` (already lowercased).
    pub fn messages_contain(&self, token: &Token, needle: &str) -> Result<bool, StoreError> {
        let t = self.t()?;
        for kv in t.history.scan_prefix(token.as_str().as_bytes()) {
            let (_, v) = kv?;
            for (_, m) in history::entries(&v)? {
                let m: Message = decode(m)?;
                if m.content.to_lowercase().contains(needle) {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }

    /// The newest `limit` messages of the session that contain `needle`
    /// (already lowercased), newest first, with their sequence numbers.
    pub fn find_messages(
        &self,
        token: &Token,
        needle: &str,
        limit: usize,
    ) -> Result<Vec<(u64, Message)>, StoreError> {
        let t = self.t()?;
        let mut hits = std::collections::VecDeque::with_capacity(limit.min(64));
        for kv in t.history.scan_prefix(token.as_str().as_bytes()) {
            let (_, v) = kv?;
            for (seq, m) in history::entries(&v)? {
                let m: Message = decode(m)?;
                if limit > 0 && m.content.to_lowercase().contains(needle) {
                    if hits.len() == limit {
                        hits.pop_front();
                    }
                    hits.push_back((seq, m));
                }
            }
        }
        Ok(hits.into_iter().rev().collect())
    }

    /// The replies queued for a session, oldest first.
    pub fn queued_replies(&self, token: &Token) -> Result<Vec<QueuedReply>, StoreError> {
        let t = self.t()?;
        t.replies
            .scan_prefix(token.as_str().as_bytes())
            .values()
            .map(|v| decode(&v?))
            .collect()
    }

    /// How many replies are queued for a session (without decoding them).
    pub fn queued_count(&self, token: &Token) -> usize {
        let Ok(t) = self.t() else { return 0 };
        t.replies
            .scan_prefix(token.as_str().as_bytes())
            .keys()
            .count()
    }

    /// The oldest queued reply, the one a poll answers with.
    pub fn first_reply(&self, token: &Token) -> Result<Option<QueuedReply>, StoreError> {
        let t = self.t()?;
        match t.replies.scan_prefix(token.as_str().as_bytes()).next() {
            Some(kv) => Ok(Some(decode(&kv?.1)?)),
            None => Ok(None),
        }
    }

    /// A meta value (JSON), such as the quick-reply templates.
    pub fn meta_get<T: serde::de::DeserializeOwned>(
        &self,
        name: &str,
    ) -> Result<Option<T>, StoreError> {
        let t = self.t()?;
        t.meta.get(name)?.map(|v| decode(&v)).transpose()
    }

    pub fn meta_put<T: serde::Serialize>(&self, name: &str, value: &T) -> Result<(), StoreError> {
        self.refuse_while_failing()?;
        let t = self.t()?;
        t.meta
            .insert(name, encode(value))
            .map_err(|e| self.write_failed(e))?;
        Ok(())
    }

    pub fn meta_remove(&self, name: &str) -> Result<(), StoreError> {
        self.refuse_while_failing()?;
        let t = self.t()?;
        t.meta.remove(name).map_err(|e| self.write_failed(e))?;
        Ok(())
    }

    /// The names of the meta values that start with `prefix`.
    pub fn meta_names(&self, prefix: &str) -> Result<Vec<String>, StoreError> {
        let t = self.t()?;
        t.meta
            .scan_prefix(prefix)
            .keys()
            .map(|k| Ok(String::from_utf8_lossy(&k?).into_owned()))
            .collect()
    }

    /// The record of attachment `id` as a message of `token`'s history names it, if one
    /// does. Only messages whose stored text holds the id are decoded.
    pub fn named_attachment(
        &self,
        token: &Token,
        id: &str,
    ) -> Result<Option<crate::session::AttachmentRef>, StoreError> {
        let t = self.t()?;
        let needle = id.as_bytes();
        for kv in t.history.scan_prefix(token.as_str().as_bytes()) {
            let (_, v) = kv?;
            for (_, m) in history::entries(&v)? {
                if !m.windows(needle.len()).any(|w| w == needle) {
                    continue;
                }
                let m: Message = decode(m)?;
                if let Some(a) = m.attachments.into_iter().find(|a| a.id == id) {
                    return Ok(Some(a));
                }
            }
        }
        Ok(None)
    }

    /// The record of attachment `id`'s file, if it is still kept.
    pub fn file_record(&self, id: &str) -> Result<Option<FileRecord>, StoreError> {
        self.t()?
            .files
            .get(id.as_bytes())?
            .map(|v| decode(&v))
            .transpose()
    }

    /// Where the file of attachment `id` is, if it is still kept.
    pub fn attachment_path(&self, id: &str) -> Result<Option<PathBuf>, StoreError> {
        Ok(self.file_record(id)?.map(|r| self.files.path(&r.sha)))
    }

    /// The bytes of attachment `id`, if it is still kept.
    pub fn attachment(&self, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let Some(path) = self.attachment_path(id)? else {
            return Ok(None);
        };
        std::fs::read(&path)
            .map(Some)
            .map_err(|e| StoreError::Io(format!("cannot read {}: {e}", path.display())))
    }

    /// Writes `bytes` as a file (once per content) for a write to name; pinned
    /// against sweeps while the answer lives.
    pub fn stage_file(&self, bytes: &[u8]) -> Result<Staged, StoreError> {
        self.files
            .stage(bytes)
            .map_err(|e| StoreError::Io(format!("cannot write an attachment's file: {e}")))
    }

    /// Whether `files` (SHA-256, size) would fit the owner's and the total quota now
    /// (the write's own check is the one that counts).
    pub fn files_fit(
        &self,
        owner: Option<&str>,
        files: &[(String, u64)],
    ) -> Result<(), StoreError> {
        self.files
            .fits(&owner.map(str::to_owned), files)
            .map_err(StoreError::Quota)
    }

    /// The attachment quota writes are checked against.
    pub fn set_file_quota(&self, q: Quota) {
        self.files.set_quota(q);
    }

    pub fn file_quota(&self) -> Quota {
        self.files.quota()
    }

    /// What each owner holds (by key name; `None` the hub secret), and everyone.
    pub fn file_usage(&self) -> (Vec<(Option<String>, Usage)>, Usage) {
        self.files.usage()
    }

    /// Every attachment id with its record.
    pub fn file_records(&self) -> Result<Vec<(String, FileRecord)>, StoreError> {
        let t = self.t()?;
        t.files
            .iter()
            .map(|kv| {
                let (k, v) = kv?;
                Ok((String::from_utf8_lossy(&k).into_owned(), decode(&v)?))
            })
            .collect()
    }

    /// Makes every release durable, then deletes the files no record names:
    /// answers the bytes freed on disk.
    pub async fn sweep_files(&self) -> Result<u64, StoreError> {
        self.flush().await?;
        let _writing = self.writing.lock_unpoisoned();
        Ok(self.files.sweep())
    }

    /// How far MongoDB has the session: `(rev, message count)`.
    pub fn synced(&self, token: &Token) -> Result<(u64, u64), StoreError> {
        let t = self.t()?;
        Ok(match t.synced.get(token.as_str().as_bytes())? {
            Some(v) if v.len() == 16 => {
                let (a, b) = v.split_at(8);
                (
                    u64::from_be_bytes(a.try_into().expect("8 bytes")),
                    u64::from_be_bytes(b.try_into().expect("8 bytes")),
                )
            }
            _ => (0, 0),
        })
    }

    pub fn set_synced(&self, token: &Token, rev: u64, messages: u64) -> Result<(), StoreError> {
        self.refuse_while_failing()?;
        let t = self.t()?;
        let mut v = [0u8; 16];
        v[..8].copy_from_slice(&rev.to_be_bytes());
        v[8..].copy_from_slice(&messages.to_be_bytes());
        t.synced
            .insert(token.as_str().as_bytes(), &v)
            .map_err(|e| self.write_failed(e))?;
        Ok(())
    }

    /// Size of the database on disk, for `/metrics`.
    pub fn size_on_disk(&self) -> u64 {
        self.t().map_or(0, |t| t.db.size_on_disk().unwrap_or(0))
    }
}

impl Trees {
    /// The tree a journal operation writes; `None` for the legacy messages
    /// tree, opened by name when a record needs it.
    pub(super) fn tree(&self, id: TreeId) -> Option<&Tree> {
        Some(match id {
            TreeId::Sessions => &self.sessions,
            TreeId::History => &self.history,
            TreeId::Bindings => &self.bindings,
            TreeId::Plans => &self.plans,
            TreeId::Threads => &self.threads,
            TreeId::Replies => &self.replies,
            TreeId::Summaries => &self.summaries,
            TreeId::Meta => &self.meta,
            TreeId::Files => &self.files,
            TreeId::Messages | TreeId::Attachments => return None,
        })
    }

    fn apply_op(&self, op: &Op) -> sled::Result<()> {
        let legacy;
        let tree = match self.tree(op.tree) {
            Some(tree) => tree,
            // Only in a record a crash left before an upgrade, which follows:
            // the messages of a version-1 store, the files of a version-3 one.
            None => {
                let name = match op.tree {
                    TreeId::Attachments => files::LEGACY_TREE,
                    _ => LEGACY_MESSAGES,
                };
                legacy = self.db.open_tree(name)?;
                &legacy
            }
        };
        match &op.value {
            Some(v) => tree.insert(op.key.as_slice(), v.as_slice())?,
            None => tree.remove(op.key.as_slice())?,
        };
        Ok(())
    }

    /// Finishes the writes a crash interrupted (their journal records), oldest first.
    pub(crate) fn replay_journal(&self) -> Result<usize, StoreError> {
        let mut replayed = 0;
        for kv in self.journal.iter() {
            let (record, ops) = kv?;
            for op in journal::decode(&ops)? {
                self.apply_op(&op)?;
            }
            self.journal.remove(record)?;
            replayed += 1;
        }
        if replayed > 0 {
            self.db.flush()?;
        }
        Ok(replayed)
    }
}

/// The chunk writes that append `messages` (in order, per session) to their histories.
fn append_messages(
    t: &Trees,
    messages: &[(Token, u64, Message)],
    ops: &mut Vec<Op>,
) -> Result<(), StoreError> {
    // The chunk each session's messages are going into, as this write leaves it.
    let mut open: Vec<(&Token, history::Chunk)> = Vec::new();
    let write = |token: &Token, c: history::Chunk, ops: &mut Vec<Op>| {
        if c.changed {
            ops.push(Op {
                tree: TreeId::History,
                key: key(token, c.first),
                value: Some(c.value),
            });
        }
    };
    for (token, seq, m) in messages {
        let message = encode(m);
        let i = match open.iter().position(|(t, _)| *t == token) {
            Some(i) => i,
            None => {
                let last = match t.history.scan_prefix(token.as_str()).next_back() {
                    Some(kv) => {
                        let (k, v) = kv?;
                        history::Chunk::stored(seq_of(&k), v.to_vec())?
                    }
                    None => history::Chunk::starting_at(*seq),
                };
                open.push((token, last));
                open.len() - 1
            }
        };
        let chunk = &mut open[i].1;
        if !chunk.follows(*seq) {
            return Err(StoreError::Io(format!(
                "message {seq} of {} is already stored",
                token.as_str()
            )));
        }
        if !chunk.takes(message.len()) {
            let full = std::mem::replace(chunk, history::Chunk::starting_at(*seq));
            write(token, full, ops);
        }
        open[i].1.push(*seq, &message);
    }
    for (token, c) in open {
        write(token, c, ops);
    }
    Ok(())
}

fn reply_key(t: &Trees, token: &Token, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
    for kv in t.replies.scan_prefix(token.as_str().as_bytes()) {
        let (k, v) = kv?;
        let r: QueuedReply = decode(&v)?;
        if r.id == id {
            return Ok(Some(k.to_vec()));
        }
    }
    Ok(None)
}

/// The id of the session's newest queued reply (0 when none is queued).
fn last_reply_id(t: &Trees, token: &Token) -> Result<u64, StoreError> {
    Ok(
        match t.replies.scan_prefix(token.as_str().as_bytes()).next_back() {
            Some(kv) => seq_of(&kv?.0),
            None => 0,
        },
    )
}

/// A summary as stored: status, flags (1: a mirror, 2: a wait is open), last
/// activity and the open wait's start (i64 BE each). 18 bytes, so sled keeps
/// it inline in its nodes. The numbers are stored: never renumber.
fn summary_bytes(s: &Summary) -> [u8; 18] {
    let status = match s.status {
        Status::Init => 0,
        Status::Holding => 1,
        Status::Waiting => 2,
        Status::Replied => 3,
        Status::Running => 4,
        Status::Merged => 5,
        Status::Archived => 6,
    };
    let flags = u8::from(s.mirror) | (u8::from(s.wait_since().is_some()) << 1);
    let mut out = [0; 18];
    out[0] = status;
    out[1] = flags;
    out[2..10].copy_from_slice(&s.last_active_at.to_be_bytes());
    out[10..].copy_from_slice(&s.wait_since().unwrap_or(0).to_be_bytes());
    out
}

fn summary_from(v: &[u8]) -> Result<Summary, StoreError> {
    let bad = || StoreError::Decode("a session summary is malformed".into());
    let v = <&[u8; 18]>::try_from(v).map_err(|_| bad())?;
    let status = match v[0] {
        0 => Status::Init,
        1 => Status::Holding,
        2 => Status::Waiting,
        3 => Status::Replied,
        4 => Status::Running,
        5 => Status::Merged,
        6 => Status::Archived,
        _ => return Err(bad()),
    };
    let at = |i: usize| i64::from_be_bytes(v[i..i + 8].try_into().expect("8 bytes"));
    let flags = v[1];
    if flags > 3 {
        return Err(bad());
    }
    Ok(Summary::new(
        status,
        flags & 1 == 1,
        (flags & 2 == 2).then(|| at(10)),
        at(2),
    ))
}

fn seq_of(k: &IVec) -> u64 {
    let n = k.len();
    let mut b = [0u8; 8];
    b.copy_from_slice(&k[n - 8..]);
    u64::from_be_bytes(b)
}

fn open_error(dir: &Path, e: sled::Error) -> StoreError {
    match e {
        sled::Error::Io(io) if io.to_string().contains("could not acquire lock") => {
            StoreError::Locked {
                path: dir.to_owned(),
            }
        }
        sled::Error::Io(io) => StoreError::Open {
            path: dir.to_owned(),
            source: io,
        },
        sled::Error::Corruption { .. } => StoreError::Corrupt {
            path: dir.to_owned(),
            detail: "sled found corrupt data".into(),
        },
        other => StoreError::Corrupt {
            path: dir.to_owned(),
            detail: other.to_string(),
        },
    }
}

#[cfg(any(test, feature = "testing"))]
pub mod testing;
#[cfg(test)]
pub(crate) mod tests;
