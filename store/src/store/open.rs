//! Opening the store: sled's configuration, the checks that refuse a damaged
//! database (sled's panics on some damage included), replaying a journal
//! record a crash left, upgrading older schema versions (summaries written,
//! messages regrouped into chunks, files moved out of sled; a backup first),
//! the completeness check of [`super::manifest`] and the attachments' files
//! (every one a record names is there; the others are swept).
//!
//! Invariant: a store that opens is at the current schema version with every
//! journal record applied and holds what its last write recorded; one that
//! cannot be read, or only in part, is refused, never emptied or opened in part.

use super::*;

impl Store {
    /// Opens (or creates) the store in `dir`, checking the schema version
    /// and that nothing is missing.
    pub fn open(dir: &Path, cache_bytes: u64) -> Result<Store, StoreError> {
        let (trees, manifest) = open_trees(dir, cache_bytes)?;
        let manifest = manifest.expect("a store opened to serve is at this schema version");
        let files = files::Files::load(dir, &trees)?;
        // What a crash left between writing a file and its record, or after a release.
        let swept = files.sweep();
        if swept > 0 {
            tracing::info!(bytes = swept, "removed attachment files no message names");
        }
        Ok(Store {
            dir: Arc::new(dir.to_owned()),
            cache_bytes,
            open: Arc::new(std::sync::RwLock::new(Some(Arc::new(trees)))),
            journal_seq: Default::default(),
            flushing: Default::default(),
            begun: Default::default(),
            applied: Default::default(),
            durable: Default::default(),
            writing: Arc::new(std::sync::Mutex::new(manifest)),
            witness: Arc::new(manifest::Witness::new(dir)),
            witnessed: Default::default(),
            health: Default::default(),
            dropping: Default::default(),
            files: Arc::new(files),
        })
    }
}

/// Opens sled in `dir` and checks it (see the module doc), upgrading an
/// older schema version. sled panics on some damage: that is caught,
/// silently, and reported as damage.
pub(super) fn open_trees(
    dir: &Path,
    cache_bytes: u64,
) -> Result<(Trees, Option<Manifest>), StoreError> {
    open_trees_for(dir, cache_bytes, Purpose::Serve)
}

/// What a store is opened for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Purpose {
    /// Upgraded if older, then checked: the manifest is always there.
    Serve,
    /// Checked only: one of an older schema version (a backup taken before
    /// an upgrade) is left as it is and answered without a manifest.
    Verify,
}

pub(super) fn open_trees_for(
    dir: &Path,
    cache_bytes: u64,
    purpose: Purpose,
) -> Result<(Trees, Option<Manifest>), StoreError> {
    quiet_panics(|| open_checked(dir, cache_bytes, purpose))
        .unwrap_or_else(|panic| Err(StoreError::Decode(format!("sled cannot read it: {panic}"))))
        .map_err(|e| damaged_at(dir, e))
}

/// A record read back wrong, while opening `dir`, is damage to the store.
pub(super) fn damaged_at(dir: &Path, e: StoreError) -> StoreError {
    match e {
        StoreError::Decode(detail) => StoreError::Corrupt {
            path: dir.to_owned(),
            detail,
        },
        other => other,
    }
}

fn open_checked(
    dir: &Path,
    cache_bytes: u64,
    purpose: Purpose,
) -> Result<(Trees, Option<Manifest>), StoreError> {
    // sled reads an unreadable log as the torn tail of a crash and starts
    // from what it could read, possibly nothing. A store that had data but
    // comes up without even its schema version (the first thing written)
    // has lost it: refuse, rather than serve and overwrite an empty hub.
    let had_data = std::fs::metadata(dir.join("db")).is_ok_and(|m| m.len() > 0);
    let db = sled::Config::new()
        .path(dir)
        .cache_capacity(cache_bytes)
        .flush_every_ms(Some(500))
        .open()
        .map_err(|e| open_error(dir, e))?;
    let t = |name: &str| db.open_tree(name).map_err(|e| open_error(dir, e));
    let trees = Trees {
        sessions: t("sessions")?,
        summaries: t("summaries")?,
        history: t("history")?,
        bindings: t("bindings")?,
        plans: t("plans")?,
        threads: t("threads")?,
        replies: t("replies")?,
        meta: t("meta")?,
        files: t("files")?,
        synced: t("synced")?,
        journal: t("journal")?,
        dir: dir.to_owned(),
        db,
    };
    let upgrade_from = trees.schema_version(dir, had_data)?;
    if upgrade_from.is_some() && purpose == Purpose::Verify {
        return Ok((trees, None));
    }
    let replayed = trees.replay_journal()?;
    if replayed > 0 {
        tracing::info!(writes = replayed, "finished writes a crash interrupted");
    }
    if let Some(from) = upgrade_from {
        if let Some(home) = super::backup::home_of(dir) {
            let copy = super::backup::snapshot(
                &trees,
                &Manifest::default(),
                &super::backups_dir(home),
                super::backup::Kind::Upgrade,
            )?;
            tracing::info!(backup = %copy.path.display(), "backed up the store before upgrading it");
        }
        let started = std::time::Instant::now();
        let (sessions, messages) = trees.upgrade(from)?;
        tracing::info!(
            from,
            sessions,
            messages,
            secs = started.elapsed().as_secs(),
            "upgraded the store to schema version {SCHEMA_VERSION}"
        );
    }
    // An upgrade stopped after writing the version leaves the old messages and files.
    trees.db.drop_tree(LEGACY_MESSAGES)?;
    trees.db.drop_tree(files::LEGACY_TREE)?;
    let manifest = trees.check_complete(dir)?;
    Ok((trees, Some(manifest)))
}

/// A panic caught by [`quiet_panics`]: the first line of its message.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(super) struct Panicked(pub String);

/// Runs `f`, answering a panic inside it as its message, with the panic hook
/// silent for this thread meanwhile (no message, no backtrace on stderr).
pub(super) fn quiet_panics<R>(f: impl FnOnce() -> R) -> Result<R, Panicked> {
    thread_local! {
        static QUIET: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let loud = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(std::cell::Cell::get) {
                loud(info);
            }
        }));
    });
    QUIET.with(|q| q.set(true));
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    QUIET.with(|q| q.set(false));
    outcome.map_err(|panic| {
        let first_line = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".into())
            .lines()
            .next()
            .unwrap_or_default()
            .to_owned();
        Panicked(first_line)
    })
}

impl Trees {
    /// Checks the schema version (writing it into a new store) and answers
    /// the version to upgrade from, if any.
    fn schema_version(&self, dir: &Path, had_data: bool) -> Result<Option<u32>, StoreError> {
        match self.meta.get("schema_version")? {
            None if had_data => Err(StoreError::Corrupt {
                path: dir.to_owned(),
                detail: "its data cannot be read, not even the schema version".into(),
            }),
            None => {
                self.meta
                    .insert("schema_version", &SCHEMA_VERSION.to_be_bytes())?;
                self.db.flush()?;
                Ok(None)
            }
            Some(v) => {
                let found = <[u8; 4]>::try_from(v.as_ref())
                    .map(u32::from_be_bytes)
                    .map_err(|_| StoreError::Corrupt {
                        path: dir.to_owned(),
                        detail: "unreadable schema version".into(),
                    })?;
                if (1..SCHEMA_VERSION).contains(&found) {
                    Ok(Some(found))
                } else if found != SCHEMA_VERSION {
                    Err(StoreError::Schema {
                        path: dir.to_owned(),
                        found,
                        expected: SCHEMA_VERSION,
                    })
                } else {
                    Ok(None)
                }
            }
        }
    }

    /// Brings a version-1, -2 or -3 store to this version: summaries for every
    /// session (version 1 had none), messages regrouped into chunks (version 2
    /// kept one per key), files moved out of sled into `attachments/` (version 3
    /// kept their bytes in a tree), then the version, then the old trees dropped. A
    /// crash before the version is written leaves the old version and the old
    /// data, and the next open starts over. Returns (sessions, messages) done.
    fn upgrade(&self, from: u32) -> Result<(usize, usize), StoreError> {
        let mut sessions = 0;
        if from < 2 {
            self.summaries.clear()?;
            for record in self.sessions.iter().values() {
                let session: Session = decode(&record?)?;
                self.summaries.insert(
                    session.token.to_raw(),
                    &summary_bytes(&Summary::of(&session))[..],
                )?;
                sessions += 1;
            }
        }
        let mut messages = 0;
        // A store whose version was set back by hand has no old messages: keep its history.
        let legacy = self
            .db
            .tree_names()
            .iter()
            .any(|n| n.as_ref() == LEGACY_MESSAGES.as_bytes());
        if legacy {
            self.history.clear()?;
            let old = self.db.open_tree(LEGACY_MESSAGES)?;
            let mut open: Option<(Vec<u8>, history::Chunk)> = None;
            for kv in old.iter() {
                let (k, v) = kv?;
                let token = k
                    .get(..k.len().saturating_sub(8))
                    .filter(|t| !t.is_empty())
                    .ok_or_else(|| {
                        StoreError::Decode("a stored message's key is malformed".into())
                    })?;
                let seq = seq_of(&k);
                let continues = open
                    .as_ref()
                    .is_some_and(|(t, c)| t == token && c.takes(v.len()) && c.follows(seq));
                if !continues && let Some((t, c)) = open.take() {
                    self.history.insert(prefixed(&t, c.first), c.value)?;
                }
                open.get_or_insert_with(|| (token.to_vec(), history::Chunk::starting_at(seq)))
                    .1
                    .push(seq, &v);
                messages += 1;
            }
            if let Some((t, c)) = open {
                self.history.insert(prefixed(&t, c.first), c.value)?;
            }
        }
        let moved = files::upgrade_from_v3(&self.dir, self, crate::session::now_ms())?;
        if moved > 0 {
            self.recount(TreeId::Files)?;
            tracing::info!(files = moved, "moved attachments out of sled");
        }
        self.meta
            .insert("schema_version", &SCHEMA_VERSION.to_be_bytes())?;
        self.db.flush()?;
        if legacy {
            self.db.drop_tree(LEGACY_MESSAGES)?;
        }
        self.db.drop_tree(files::LEGACY_TREE)?;
        self.db.flush()?;
        Ok((sessions, messages))
    }
}
