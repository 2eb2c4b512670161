//! The person's operations (panel and CLI): replies, settings, archive and
//! restore, reading sessions and history, templates, export and import.
//!
//! Invariant: a reply answered here is in the store before the caller flushes
//! and answers 200.

use super::*;
use holdline_store::session::{MAX_SESSION_TEMPLATES, MAX_SHARED_TEMPLATES, check_templates};

impl Hub {
    // ---- person side ----------------------------------------------------

    /// Records the person's reply and queues it for the (next) wait.
    /// Returns `(reply id, queued)`: queued is true when no agent waits now.
    pub fn reply(
        &self,
        token: &Token,
        text: String,
        images: Vec<Image>,
    ) -> Result<Unflushed<(String, bool)>> {
        self.reply_with(
            token,
            PersonReply {
                text,
                images,
                ..PersonReply::default()
            },
        )
    }

    /// [`Hub::reply`] with what the person answered and where they wrote it.
    /// A reply for a question the agent has since moved on from is refused
    /// ([`HubError::StaleQuestion`]) in the same commit that would queue it,
    /// so no question asked in between can slip past the check.
    pub fn reply_with(
        &self,
        token: &Token,
        reply: PersonReply,
    ) -> Result<Unflushed<(String, bool)>> {
        let PersonReply {
            text,
            images,
            choices,
            in_reply_to,
            via,
        } = reply;
        if text.trim().is_empty() && images.is_empty() && choices.is_empty() {
            return Err(HubError::BadRequest(
                "a reply needs text, an image or a choice".into(),
            ));
        }
        check_images(&images)?;
        let out = self.commit(token, |hub, s, w| {
            ensure_open(s)?;
            let answered = match in_reply_to {
                Some(seq) => Some(hub.check_question(s, seq)?),
                None => None,
            };
            let names_it = in_reply_to.is_some() || !choices.is_empty();
            let for_permission = hub.permission_answered(s, names_it)?;
            let mut reply = QueuedReply::new(text, images, false);
            reply.choices = hub.picked(&s.token, answered, &choices)?;
            reply.for_permission = for_permission;
            hub.append(s, w, Message::of_reply(&reply, via.map(str::to_owned)));
            let id = reply.id.clone();
            w.enqueue(&s.token, reply);
            let queued = s.wait.is_none();
            if !queued {
                s.status = Status::Replied;
            }
            Ok((id, queued))
        })?;
        self.inner.counters.replies.fetch_add(1, Ordering::Relaxed);
        Ok(out)
    }

    /// The permission question a reply answers (its `requestId`) while its hook waits.
    /// With no wait open, a reply that names (`names_it`: `inReplyTo` or a pick) an
    /// unanswered permission question is refused ([`HubError::PermissionOver`]): it would
    /// reach the agent's next question as words. Any other reply is the agent's.
    fn permission_answered(&self, s: &Session, names_it: bool) -> Result<Option<String>> {
        if let Some(open) = &s.wait {
            return Ok(open.permission_request().map(str::to_owned));
        }
        if !names_it {
            return Ok(None);
        }
        match self.newest_question(&s.token, 0)? {
            Some((seq, m)) if m.origin == QuestionOrigin::Permission && seq + 1 == s.msg_count => {
                Err(HubError::PermissionOver)
            }
            _ => Ok(None),
        }
    }

    /// The options `indexes` picks in the agent's newest question (`answered`,
    /// when the caller already read it), by the contract's one rule (none
    /// picked: none).
    fn picked(
        &self,
        token: &Token,
        answered: Option<Message>,
        indexes: &[u32],
    ) -> Result<Vec<Choice>> {
        if indexes.is_empty() {
            return Ok(Vec::new());
        }
        let question = match answered {
            Some(m) => Some(m),
            None => self.newest_question(token, 0)?.map(|(_, m)| m),
        };
        let (options, multi) = question
            .map(|m| (m.options, m.multi_select))
            .unwrap_or_default();
        holdline_contract::choices::pick(&options, multi, indexes)
            .map_err(|e| HubError::BadRequest(e.to_string()))
    }

    /// The question `in_reply_to` names, when it is the agent's newest message:
    /// a person's message or one past the end is a bad request, an older
    /// question stale.
    fn check_question(&self, s: &Session, in_reply_to: u64) -> Result<Message> {
        if in_reply_to >= s.msg_count {
            return Err(HubError::BadRequest(format!(
                "inReplyTo {in_reply_to} is past the end of the history ({} messages)",
                s.msg_count
            )));
        }
        let named = self
            .inner
            .store
            .messages(&s.token, Some(in_reply_to + 1), 1)?
            .pop()
            .filter(|(seq, m)| *seq == in_reply_to && m.role == Role::Assistant);
        let Some((_, question)) = named else {
            return Err(HubError::BadRequest(format!(
                "inReplyTo {in_reply_to} is not the agent's message: it must be the seq of the agent's question being answered"
            )));
        };
        match self.newest_question(&s.token, in_reply_to + 1)? {
            Some((seq, m)) => Err(HubError::StaleQuestion(CurrentQuestion {
                seq,
                preview: preview_of(&m.content),
            })),
            None => Ok(question),
        }
    }

    /// The agent's newest message at `floor` or after, read from the newest
    /// back, so the cost is the messages since that question, not the history.
    fn newest_question(&self, token: &Token, floor: u64) -> Result<Option<(u64, Message)>> {
        const PAGE: usize = 32;
        let mut before = None;
        loop {
            let page = self.inner.store.messages(token, before, PAGE)?;
            let Some(&(oldest, _)) = page.first() else {
                return Ok(None);
            };
            for (seq, m) in page.into_iter().rev() {
                if seq < floor {
                    return Ok(None);
                }
                if m.role == Role::Assistant {
                    return Ok(Some((seq, m)));
                }
            }
            if oldest <= floor {
                return Ok(None);
            }
            before = Some(oldest);
        }
    }

    /// The question the agent asks now (its newest message, with its `seq`),
    /// if it asked any.
    pub fn current_question(&self, token: &Token) -> Result<Option<(u64, Message)>> {
        if !self.lock().contains_key(token) {
            return Err(HubError::NotFound(token.clone()));
        }
        self.newest_question(token, 0)
    }

    /// Changes keep-alive settings or the display title.
    pub fn configure(&self, token: &Token, c: SessionSettings) -> Result<Unflushed<SessionInfo>> {
        check_settings(&c)?;
        let wait = self.commit(token, |_, s, _| {
            let k = &mut s.keep_alive;
            if let Some(v) = c.session_auto_continue {
                k.session_auto_continue = v;
            }
            if let Some(v) = c.timed_reply_enabled {
                k.timed_reply_enabled = v;
            }
            if let Some(v) = c.timed_reply_interval_ms {
                k.timed_reply_interval_ms = v;
            }
            if let Some(v) = c.continue_prompt {
                k.continue_prompt = v;
            }
            if let Some(v) = c.max_auto_streak {
                k.max_auto_streak = v;
            }
            if let Some(v) = c.display_title {
                s.display_title = v.trim().to_owned();
            }
            if let Some(v) = c.quick_replies {
                s.quick_replies = v;
            }
            Ok(s.wait.as_ref().map(|w| w.wait_id.clone()))
        })?;
        if let Some(wait_id) = wait.peek() {
            self.arm_timed_reply(token.clone(), wait_id.clone());
        }
        let info = self.info(token)?;
        Ok(wait.map(|_| info))
    }

    /// Archives a session: ends its wait and writes `archive/YYYY-MM/ct_….json`.
    pub fn archive(&self, token: &Token) -> Result<Unflushed<SessionInfo>> {
        let archived = self.commit(token, |_, s, _| {
            match s.status {
                Status::Merged => return Err(HubError::Closed(closed_message(s))),
                Status::Archived => return Ok(()),
                _ => {}
            }
            s.close_wait(WaitEnd::Archived);
            s.status = Status::Archived;
            s.last_active_at = now_ms();
            Ok(())
        })?;
        if let Err(e) = self.write_archive_file(token) {
            tracing::warn!(token = %token, error = %e, "writing the archive file failed");
        }
        let info = self.info(token)?;
        Ok(archived.map(|()| info))
    }

    /// Hands a session to another owner (`owner`: a key's name, `None` the secret's
    /// bridges), the only way an owner changes. The old owner's open wait ends
    /// (`handed_over`, which that wait's poll is still told; its agent reaches the
    /// session no more), queued replies stay for the new owner's next wait, and
    /// the session's chat, plan and thread bindings move to the new owner, so its
    /// agent finds the session by the same fingerprint. When the new owner already
    /// has an open session bound to one of those names, the hand-over is refused
    /// ([`HubError::BindingTaken`]) and nothing changes: re-pointing that binding
    /// would silently take the new owner's agent away from its own session.
    pub fn hand_over(
        &self,
        token: &Token,
        owner: Option<KeyName>,
    ) -> Result<Unflushed<SessionInfo>> {
        let store = &self.inner.store;
        let free = self.bindings_free_to_take(token, owner.as_ref())?;
        let handed = self.commit(token, |_, s, w| {
            if s.owner == owner {
                return Ok(());
            }
            for (kind, name) in bound_names(s) {
                let theirs = store.binding(kind, &owned_name(owner.as_ref(), &name))?;
                if let Some(other) = theirs.filter(|t| *t != s.token && !free.contains(t)) {
                    return Err(HubError::BindingTaken(format!(
                        "{} already has an open session bound to this {} ({other}): archive or merge it first, then hand this one over",
                        owner.as_ref().map_or("the hub secret".to_owned(), |k| format!("key {k:?}")),
                        kind_word(kind),
                    )));
                }
            }
            if s.close_wait(WaitEnd::HandedOver).is_some() {
                s.status = Status::Holding;
            }
            for (kind, name) in bound_names(s) {
                let old = owned_name(s.owner.as_ref(), &name);
                if store.binding(kind, &old)?.as_ref() == Some(&s.token) {
                    w.bind(kind, &old, None);
                }
                w.bind(kind, &owned_name(owner.as_ref(), &name), Some(&s.token));
            }
            s.owner = owner.clone();
            s.last_active_at = now_ms();
            Ok(())
        })?;
        let info = self.info(token)?;
        Ok(handed.map(|()| info))
    }

    /// The sessions the new `owner`'s bindings of `token`'s names point at that a
    /// hand-over may take the binding from: closed ones, or ones `owner` does not
    /// own (a stale name). Read before the commit, whose closure cannot read other
    /// sessions; a binding made in between is not in the set and refuses.
    fn bindings_free_to_take(
        &self,
        token: &Token,
        owner: Option<&KeyName>,
    ) -> Result<std::collections::HashSet<Token>> {
        let names = bound_names(&self.info(token)?.session);
        let mut free = std::collections::HashSet::new();
        for (kind, name) in names {
            let Some(bound) = self.inner.store.binding(kind, &owned_name(owner, &name))? else {
                continue;
            };
            let open_and_theirs = self
                .lock()
                .get(&bound)?
                .is_some_and(|o| !o.status.is_closed() && o.owner.as_ref() == owner);
            if !open_and_theirs {
                free.insert(bound);
            }
        }
        Ok(free)
    }

    /// Puts an archived session back to `holding`.
    pub fn restore(&self, token: &Token) -> Result<Unflushed<SessionInfo>> {
        let restored = self.commit(token, |_, s, _| match s.status {
            Status::Merged => Err(HubError::Closed(closed_message(s))),
            Status::Archived => {
                s.status = Status::Holding;
                s.last_active_at = now_ms();
                Ok(())
            }
            _ => Ok(()),
        })?;
        let info = self.info(token)?;
        Ok(restored.map(|()| info))
    }

    fn write_archive_file(&self, token: &Token) -> std::io::Result<()> {
        let export = self
            .export_one(token)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        let month = time::OffsetDateTime::now_utc()
            .format(time::macros::format_description!("[year]-[month]"))
            .map_err(std::io::Error::other)?;
        let dir = crate::home::Home::new(self.inner.config.home.clone())
            .archive_dir()
            .join(month);
        std::fs::create_dir_all(&dir)?;
        let body = serde_json::to_vec_pretty(&export).map_err(std::io::Error::other)?;
        crate::home::write_private(&dir.join(format!("{token}.json")), &body)
    }

    // ---- reading --------------------------------------------------------

    pub fn info(&self, token: &Token) -> Result<SessionInfo> {
        let session = self
            .lock()
            .get(token)?
            .cloned()
            .ok_or_else(|| HubError::NotFound(token.clone()))?;
        Ok(SessionInfo {
            queued_replies: self.queued_count(token),
            session,
        })
    }

    /// Sessions matching `status` (`None`: every open one; `all`), and `q`
    /// (title or message text), waiting first (longest first), then the most
    /// recently active.
    /// Returns the page `offset..offset + limit` and whether more follow.
    pub fn list(
        &self,
        status: Option<&str>,
        q: Option<&str>,
        offset: usize,
        limit: usize,
    ) -> Result<(Vec<SessionInfo>, bool)> {
        let filter = match status {
            None | Some("") => None,
            Some("all") => Some(None),
            Some(s) => {
                Some(Some(Status::parse(s).ok_or_else(|| {
                    HubError::BadRequest(format!("unknown status {s:?}"))
                })?))
            }
        };
        // Raw tokens until the page is cut: a list of 100,000 sessions then
        // makes 100,000 small copies, not 300,000 allocations.
        let mut picked: Vec<([u8; 16], Summary)> = self
            .lock()
            .raw_entries()
            .filter(|(_, s)| match filter {
                None => !s.status.is_closed(),
                Some(None) => true,
                Some(Some(st)) => s.status == st,
            })
            .map(|(t, s)| (t, *s))
            .collect();
        if let Some(q) = q.map(str::trim).filter(|q| !q.is_empty()) {
            let needle = q.to_lowercase();
            let mut kept = Vec::new();
            for (raw, summary) in picked {
                let token = Token::from_raw(raw);
                // One session at a time, not kept: a search must not fill memory.
                let titled = self.lock().peek(&token)?.is_some_and(|s| {
                    s.title.to_lowercase().contains(&needle)
                        || s.display_title.to_lowercase().contains(&needle)
                });
                if titled
                    || token.as_str() == q
                    || self.inner.store.messages_contain(&token, &needle)?
                {
                    kept.push((raw, summary));
                }
            }
            picked = kept;
        }
        // Raw bytes sort as their fixed-width lowercase hex does.
        picked.sort_unstable_by(|(ta, a), (tb, b)| {
            match (a.wait_since(), b.wait_since()) {
                (Some(x), Some(y)) => x.cmp(&y),
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (None, None) => b.last_active_at.cmp(&a.last_active_at),
            }
            .then_with(|| ta.cmp(tb))
        });
        let more = picked.len() > offset.saturating_add(limit);
        let mut page = Vec::with_capacity(limit.min(picked.len()));
        for (raw, _) in picked.into_iter().skip(offset).take(limit) {
            let token = Token::from_raw(raw);
            let Some(session) = self.lock().get(&token)?.cloned() else {
                continue;
            };
            page.push(SessionInfo {
                queued_replies: self.queued_count(&token),
                session,
            });
        }
        Ok((page, more))
    }

    /// A page of a session's history: the newest `limit` before `before`.
    pub fn messages(
        &self,
        token: &Token,
        before: Option<u64>,
        limit: usize,
    ) -> Result<Vec<(u64, Message)>> {
        if !self.lock().contains_key(token) {
            return Err(HubError::NotFound(token.clone()));
        }
        let mut page = self
            .inner
            .store
            .messages(token, before, limit.min(MAX_PAGE))?;
        for a in page.iter_mut().flat_map(|(_, m)| &mut m.attachments) {
            a.released = self.inner.store.file_record(&a.id)?.is_none();
        }
        Ok(page)
    }

    /// One file a message of `token`'s history carries, with its bytes; `None` when no
    /// message of this session names `id` (a merge moves the messages, and the files
    /// are reachable through the session that holds them); `Released` when its bytes
    /// are no longer kept.
    pub fn attachment(
        &self,
        token: &Token,
        id: &str,
    ) -> Result<Option<(holdline_store::session::AttachmentRef, Vec<u8>)>> {
        let Some((record, path)) = self.attachment_file(token, id)? else {
            return Ok(None);
        };
        match std::fs::read(&path) {
            Ok(bytes) => Ok(Some((record, bytes))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(released(&record)),
            Err(e) => Err(HubError::Store(StoreError::Io(e.to_string()))),
        }
    }

    /// Like [`Hub::attachment`], with where its bytes are instead of the bytes (the
    /// person's route streams them).
    pub fn attachment_file(
        &self,
        token: &Token,
        id: &str,
    ) -> Result<Option<(holdline_store::session::AttachmentRef, std::path::PathBuf)>> {
        if !self.lock().contains_key(token) {
            return Err(HubError::NotFound(token.clone()));
        }
        let Some(record) = self.inner.store.named_attachment(token, id)? else {
            return Ok(None);
        };
        match self.inner.store.attachment_path(id)? {
            Some(path) => Ok(Some((record, path))),
            None => Err(released(&record)),
        }
    }

    // ---- templates, export, import --------------------------------------

    pub fn templates(&self) -> Result<Vec<Template>> {
        Ok(self
            .inner
            .store
            .meta_get("templates")?
            .unwrap_or_else(|| self.inner.config.templates.clone()))
    }

    pub fn set_templates(&self, templates: Vec<Template>) -> Result<Unflushed<()>> {
        check_templates(&templates, MAX_SHARED_TEMPLATES).map_err(HubError::BadRequest)?;
        self.inner.store.meta_put("templates", &templates)?;
        Ok(Unflushed::new(()))
    }

    fn export_one(&self, token: &Token) -> Result<interchange::ExportFile> {
        // Not kept in memory: an export passes over every session.
        let session = self
            .lock()
            .peek(token)?
            .ok_or_else(|| HubError::NotFound(token.clone()))?
            .into_owned();
        let messages = self.inner.store.messages(token, None, usize::MAX)?;
        let mut file = interchange::ExportFile::new();
        file.insert(
            token.to_string(),
            interchange::ExportSession::from_session(
                &session,
                messages.into_iter().map(|m| m.1),
                |id| self.inner.store.attachment_path(id).ok().flatten(),
            ),
        );
        Ok(file)
    }

    /// The tokens an export writes, in order.
    pub fn export_tokens(&self) -> Vec<Token> {
        let mut t: Vec<Token> = self.lock().entries().map(|(t, _)| t).collect();
        t.sort();
        t
    }

    /// Writes every session with its messages to `out` in the `sessions.json`
    /// format, one session at a time and each file read only as it is written, so
    /// the hub holds one session's messages and one file, never the whole store.
    /// Answers how many sessions it wrote.
    pub fn export_to(&self, tokens: &[Token], out: &mut impl std::io::Write) -> Result<usize> {
        let io = |e: std::io::Error| HubError::Store(StoreError::Io(e.to_string()));
        out.write_all(b"{").map_err(io)?;
        for (i, token) in tokens.iter().enumerate() {
            let one = self.export_one(token)?;
            let (key, session) = one.iter().next().expect("one session");
            if i > 0 {
                out.write_all(b",").map_err(io)?;
            }
            serde_json::to_writer(&mut *out, key).map_err(|e| io(e.into()))?;
            out.write_all(b":").map_err(io)?;
            serde_json::to_writer(&mut *out, session).map_err(|e| io(e.into()))?;
        }
        out.write_all(b"}\n").map_err(io)?;
        out.flush().map_err(io)?;
        Ok(tokens.len())
    }

    /// Adds the sessions of a `sessions.json` this hub does not have yet.
    /// Returns `(imported, skipped)`.
    pub fn import(&self, file: interchange::ExportFile) -> Result<Unflushed<(usize, usize)>> {
        // Every entry is checked before anything is written: a bad file changes nothing.
        let converted = file
            .into_iter()
            .map(|(key, entry)| entry.into_session(&key, &self.inner.name))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| HubError::BadRequest(e.to_string()))?;
        let (mut imported, mut skipped) = (0, 0);
        for (session, messages, files) in converted {
            if self.lock().contains_key(&session.token) {
                skipped += 1;
                continue;
            }
            let mut w = Write::new();
            // Pinned until the write that names them is applied.
            let _staged = self.stage_carried(&session, files, &mut w)?;
            let added = self.write(|table| {
                if table.contains_key(&session.token) {
                    return Ok(Change::Unchanged(false));
                }
                self.import_one(session, messages, w)
            })?;
            // Flushed once for all, by whoever takes the answer below.
            if *added.peek() {
                imported += 1;
            } else {
                skipped += 1;
            }
        }
        Ok(Unflushed::new((imported, skipped)))
    }

    /// The write that adds one imported session (its files already staged in
    /// `w`) with its history and bindings.
    fn import_one(
        &self,
        mut session: Session,
        messages: Vec<Message>,
        mut w: Write,
    ) -> Result<Change<bool>> {
        session.msg_count = 0;
        for m in messages {
            let seq = session.note_message(&m);
            w.message(&session.token, seq, m);
        }
        // An open session owns its names; a merged one hands them to its
        // target, as the merge did, unless something else holds them now.
        let (bound_to, always) = match (&session.status, &session.merged_into) {
            (Status::Merged, Some(target)) => (Some(target.clone()), false),
            (status, _) if !status.is_closed() => (Some(session.token.clone()), true),
            _ => (None, false),
        };
        if let Some(bound_to) = bound_to {
            let names = [
                (BindingKind::Chat, Some(session.binding_key.as_str())),
                (BindingKind::Plan, session.plan_name.as_deref()),
                (BindingKind::Thread, session.thread_id.as_deref()),
            ];
            for (kind, name) in names {
                let Some(name) = name else { continue };
                let name = owned_name(session.owner.as_ref(), name);
                if always || self.inner.store.binding(kind, &name)?.is_none() {
                    w.bind(kind, &name, Some(&bound_to));
                }
            }
        }
        Ok(Change::Write {
            write: w,
            sessions: Swapped::Imported(session),
            answer: true,
        })
    }
}

/// Every rule on a settings update, checked before anything is written.
fn check_settings(c: &SessionSettings) -> Result<()> {
    if let Some(ms) = c.timed_reply_interval_ms
        && ms != 0
        && !(100..=86_400_000).contains(&ms)
    {
        return Err(HubError::BadRequest(
            "timedReplyIntervalMs must be 0 or 100 to 86400000".into(),
        ));
    }
    if c.max_auto_streak.is_some_and(|m| m > 10_000) {
        return Err(HubError::BadRequest(
            "maxAutoStreak must be at most 10000".into(),
        ));
    }
    for (name, v, max) in [
        ("continuePrompt", &c.continue_prompt, 8192),
        ("displayTitle", &c.display_title, MAX_TITLE),
    ] {
        if v.as_ref().is_some_and(|v| v.chars().count() > max) {
            return Err(HubError::BadRequest(format!(
                "{name} is longer than {max} characters"
            )));
        }
    }
    if let Some(t) = &c.display_title {
        holdline_contract::visible::check(t)
            .map_err(|e| HubError::BadRequest(format!("displayTitle {e}")))?;
    }
    if let Some(list) = &c.quick_replies {
        check_templates(list, MAX_SESSION_TEMPLATES).map_err(HubError::BadRequest)?;
    }
    if c.continue_prompt
        .as_ref()
        .is_some_and(|p| p.trim().is_empty())
    {
        return Err(HubError::BadRequest(
            "continuePrompt cannot be empty".into(),
        ));
    }
    Ok(())
}

/// The names a session is bound by: its chat, plan label and thread id.
fn bound_names(s: &Session) -> Vec<(BindingKind, String)> {
    [
        (BindingKind::Chat, Some(s.binding_key.clone())),
        (BindingKind::Plan, s.plan_name.clone()),
        (BindingKind::Thread, s.thread_id.clone()),
    ]
    .into_iter()
    .filter_map(|(kind, name)| Some((kind, name?)))
    .collect()
}

/// A binding's kind as a person names it.
fn kind_word(kind: BindingKind) -> &'static str {
    match kind {
        BindingKind::Chat => "chat",
        BindingKind::Plan => "plan label",
        BindingKind::Thread => "thread id",
    }
}

/// What a read of a file whose bytes were released answers.
pub(super) fn released(record: &holdline_store::session::AttachmentRef) -> HubError {
    HubError::Released(format!(
        "the file {:?} of this message was removed: the hub released its bytes (retention rule or freed by the person)",
        record.name
    ))
}
