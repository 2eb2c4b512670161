//! The questions' files as the hub keeps them: staged on disk before a
//! register's write (refused early when over quota), released by the
//! retention rule or by the person, and what each owner holds.
//!
//! Invariant (the retention rule): a file stays while its question is open (the
//! session's open wait is that question's); once the question was answered or
//! superseded, or its session closed, it is released after `[attachments]
//! keep_sec` from when it came. The person may free any owner's files at once.

use super::*;
use holdline_store::session::AttachmentRef;
use holdline_store::store::{FileRecord, Staged, Usage, sha_of};

/// Whose files the person frees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FreeScope {
    /// Those the retention rule releases now.
    Expired,
    /// Every file of one owner: an agent key's name, or `None` for the hub secret.
    Owner(Option<String>),
    /// Every file.
    All,
}

/// What a release freed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Freed {
    /// Attachment records released (messages whose file is gone).
    pub attachments: u64,
    /// Bytes of files deleted from disk.
    pub bytes: u64,
}

/// What the files take: per owner, in all, and the quota.
#[derive(Debug, Clone)]
pub struct FileUsage {
    /// By owner: an agent key's name, `None` for the hub secret.
    pub owners: Vec<(Option<String>, Usage)>,
    pub total: Usage,
    pub quota: holdline_store::store::Quota,
    pub keep: Duration,
}

impl Hub {
    /// Writes a question's files to disk before the write that names them, after
    /// checking they fit the quota (the write checks again, under its lock).
    pub(super) fn stage_files(
        &self,
        owner: Option<&KeyName>,
        decoded: Vec<(AttachmentRef, Vec<u8>)>,
    ) -> Result<Vec<(AttachmentRef, Staged)>> {
        if decoded.is_empty() {
            return Ok(Vec::new());
        }
        let store = &self.inner.store;
        let owner = owner.map(|k| k.to_string());
        let sizes: Vec<(String, u64)> = decoded
            .iter()
            .map(|(_, b)| (sha_of(b), b.len() as u64))
            .collect();
        store.files_fit(owner.as_deref(), &sizes)?;
        decoded
            .into_iter()
            .map(|(record, bytes)| Ok((record, store.stage_file(&bytes)?)))
            .collect()
    }

    /// Deletes, in the background, files a refused write had staged.
    pub(super) fn sweep_files_soon(&self) {
        let store = self.inner.store.clone();
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                if let Err(e) = store.sweep_files().await {
                    tracing::warn!(error = %e, "removing the files of a refused question failed");
                }
            });
        }
    }

    /// What the files take, per owner and in all.
    pub fn file_usage(&self) -> FileUsage {
        let (owners, total) = self.inner.store.file_usage();
        FileUsage {
            owners,
            total,
            quota: self.inner.store.file_quota(),
            keep: self.inner.config.attachments.keep,
        }
    }

    /// Releases the files `scope` names, makes that durable, and deletes the
    /// files no message names any more.
    pub async fn free_files(&self, scope: FreeScope) -> Result<Freed> {
        let keep_ms = self.inner.config.attachments.keep.as_millis() as i64;
        let now = now_ms();
        let mut w = Write::new();
        let mut attachments = 0;
        for (id, r) in self.inner.store.file_records()? {
            let release = match &scope {
                FreeScope::Expired => r.at + keep_ms <= now && !self.question_open(&r)?,
                FreeScope::Owner(owner) => r.owner == *owner,
                FreeScope::All => true,
            };
            if release {
                w.release(&id);
                attachments += 1;
            }
        }
        if attachments > 0 {
            // Flushed by the sweep below, before it deletes anything.
            let _released = self.write(|_| {
                Ok(Change::Write {
                    write: w,
                    sessions: Swapped::None,
                    answer: (),
                })
            })?;
        }
        let bytes = self.inner.store.sweep_files().await?;
        if attachments > 0 {
            tracing::info!(attachments, bytes, "attachment files released");
        }
        Ok(Freed { attachments, bytes })
    }

    /// Whether the record's question is the one its session's open wait asks.
    fn question_open(&self, r: &FileRecord) -> Result<bool> {
        let Some(token) = Token::parse(&r.token) else {
            return Ok(false);
        };
        if r.request.is_empty() {
            return Ok(false);
        }
        Ok(self
            .lock()
            .peek(&token)?
            .and_then(|s| s.wait.as_ref().map(|w| w.request_id == r.request))
            .unwrap_or(false))
    }

    /// The retention rule, applied every half `keep_sec` (at least every second,
    /// at most every ten minutes) until the hub stops. Started with the hub's tasks.
    pub async fn release_files_by_rule(self) {
        let every = (self.inner.config.attachments.keep / 2)
            .clamp(Duration::from_secs(1), Duration::from_secs(600));
        loop {
            tokio::select! {
                _ = tokio::time::sleep(every) => {}
                _ = self.inner.shutdown.cancelled() => return,
            }
            if let Err(e) = self.free_files(FreeScope::Expired).await {
                tracing::warn!(error = %e, "releasing expired attachment files failed");
            }
        }
    }
}

impl Hub {
    /// Stages files an import or an adoption carries in (no quota check: they come
    /// from the person or from another hub) and names each in `w` for session `s`.
    pub(super) fn stage_carried(
        &self,
        s: &Session,
        files: Vec<(String, Vec<u8>)>,
        w: &mut Write,
    ) -> Result<Vec<Staged>> {
        files
            .into_iter()
            .map(|(id, bytes)| {
                let staged = self.inner.store.stage_file(&bytes)?;
                w.attachment(
                    &id,
                    FileRecord {
                        sha: staged.sha.clone(),
                        size: staged.size,
                        owner: s.owner.as_ref().map(|k| k.to_string()),
                        token: s.token.to_string(),
                        request: String::new(),
                        at: now_ms(),
                    },
                );
                Ok(staged)
            })
            .collect()
    }
}
