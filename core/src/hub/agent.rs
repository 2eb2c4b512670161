//! The agent's operations (the agent routes of docs/api.md): init, select, register,
//! poll, ack, cancel, merge, and the automatic replies a wait can trigger.
//!
//! Invariant: a session has at most one open wait; a register with the same
//! `requestId` records the agent's message once.

use super::*;
use holdline_store::session::AttachmentRef;
use holdline_store::store::{FileRecord, Staged};

impl Hub {
    /// `init_conversation`: lenient — reuses the caller's own session bound
    /// to the chat, plan label or thread id, else makes one. Another owner's
    /// session is never found: the caller gets one of its own.
    pub fn init(&self, req: InitRequest) -> Result<Unflushed<InitOutcome>> {
        check_caller(&req.cursor_title, &req.workspace, &req.host_ip)?;
        check_opt_name("planLabel", req.plan_label.as_deref())?;
        check_opt_name("threadId", req.thread_id.as_deref())?;
        let caller = Fingerprint {
            cursor_title: &req.cursor_title,
            workspace: &req.workspace,
            host_ip: &req.host_ip,
            agent_key: req.agent_key.as_ref(),
        };
        let found = if req.new_plan {
            None
        } else {
            self.find_own_session(&caller, &req)?
        };
        match found {
            Some(token) => self.rebind(&token, &caller, &req),
            None => self.create_session(&caller, &req),
        }
    }

    /// The caller's own open session bound to its thread id, else its plan
    /// label, else its chat.
    fn find_own_session(
        &self,
        caller: &Fingerprint<'_>,
        req: &InitRequest,
    ) -> Result<Option<Token>> {
        let owner = caller.agent_key;
        let lookups = [
            (BindingKind::Thread, req.thread_id.clone()),
            (BindingKind::Plan, req.plan_label.clone()),
            (BindingKind::Chat, Some(caller.key().into_string())),
        ];
        for (kind, name) in lookups {
            let Some(name) = name else { continue };
            // A key's bindings made before owners are under the plain name.
            let legacy = owner.is_some().then(|| name.clone());
            for stored in std::iter::once(owned_name(owner, &name)).chain(legacy) {
                let Some(token) = self.inner.store.binding(kind, &stored)? else {
                    continue;
                };
                let usable = self
                    .lock()
                    .get(&token)?
                    .is_some_and(|s| !s.status.is_closed() && caller.may_use(s));
                if usable {
                    return Ok(Some(token));
                }
            }
        }
        Ok(None)
    }

    /// Binds the caller's chat (and plan, thread) to its own session `token`;
    /// lenient: the same plan or thread under a new title (or window) takes
    /// the session along.
    fn rebind(
        &self,
        token: &Token,
        caller: &Fingerprint<'_>,
        req: &InitRequest,
    ) -> Result<Unflushed<InitOutcome>> {
        let key = caller.key();
        let owner = caller.agent_key;
        let store = &self.inner.store;
        self.commit(token, |_, s, w| {
            if !caller.may_use(s) {
                return Err(HubError::NotFound(s.token.clone()));
            }
            s.binding_check_count += 1;
            if s.binding_key != key.as_str() {
                let old = owned_name(owner, &s.binding_key);
                if store.binding(BindingKind::Chat, &old)?.as_ref() == Some(&s.token) {
                    w.bind(BindingKind::Chat, &old, None);
                }
                s.workspace = req.workspace.clone();
                s.host_ip = req.host_ip.clone();
                binding::migrate(s, &req.cursor_title, key.clone());
            }
            s.note_host_name(req.host_name.as_deref());
            w.bind(
                BindingKind::Chat,
                &owned_name(owner, key.as_str()),
                Some(&s.token),
            );
            bind_plan_thread(s, w, req);
            s.last_active_at = now_ms();
            Ok(InitOutcome {
                token: s.token.clone(),
                status: s.status,
                created: false,
                binding_key: s.binding_key.clone(),
            })
        })
    }

    /// A new session owned by the caller and bound to its chat, plan and thread.
    fn create_session(
        &self,
        caller: &Fingerprint<'_>,
        req: &InitRequest,
    ) -> Result<Unflushed<InitOutcome>> {
        let mut s = Session::new(
            Token::generate(),
            &req.cursor_title,
            &req.workspace,
            &req.host_ip,
            &self.inner.name,
        );
        s.keep_alive.continue_prompt = self.inner.config.continue_prompt.clone();
        s.keep_alive.max_auto_streak = self.inner.config.max_auto_streak;
        s.owner = req.agent_key.clone();
        s.note_host_name(req.host_name.as_deref());
        let mut w = Write::new();
        w.bind(
            BindingKind::Chat,
            &owned_name(caller.agent_key, caller.key().as_str()),
            Some(&s.token),
        );
        bind_plan_thread(&mut s, &mut w, req);
        let out = InitOutcome {
            token: s.token.clone(),
            status: s.status,
            created: true,
            binding_key: s.binding_key.clone(),
        };
        self.write(|_| {
            Ok(Change::Write {
                write: w,
                sessions: Swapped::Own(vec![s]),
                answer: out,
            })
        })
    }

    /// `select_conversation`: strict — the caller must own the session.
    /// `host_name` is the machine name the bridge reported.
    pub fn select(
        &self,
        token: &Token,
        caller: &Fingerprint<'_>,
        host_name: Option<&str>,
    ) -> Result<Unflushed<Status>> {
        check_caller(caller.cursor_title, caller.workspace, caller.host_ip)?;
        self.commit(token, |_, s, _| {
            own(s, caller.agent_key)?;
            ensure_open(s)?;
            if !caller.owns(s) {
                return Err(rejected(s, caller));
            }
            s.binding_check_count += 1;
            s.note_host_name(host_name);
            Ok(s.status)
        })
    }

    /// Opens the session's wait (superseding an open one) and records the
    /// agent's message, once per `requestId`.
    pub fn register(&self, mut req: RegisterRequest) -> Result<Unflushed<String>> {
        // Checked and decoded before anything is written: a bad file stores nothing.
        let decoded = check_register(&req)?;
        // Only one request's files in memory, and only until they are on disk.
        req.attachments = Vec::new();
        let files = self.stage_files(req.agent_key.as_ref(), decoded)?;
        let caller = Fingerprint {
            cursor_title: &req.cursor_title,
            workspace: &req.workspace,
            host_ip: &req.host_ip,
            agent_key: req.agent_key.as_ref(),
        };
        let owner = req.agent_key.as_ref();
        let committed = self.commit(&req.token, |hub, s, w| {
            own(s, owner)?;
            ensure_open(s)?;
            hub.bind_wait(s, w, &caller, &req.cursor_title)?;
            s.binding_check_count += 1;
            s.note_host_name(req.host_name.as_deref());
            let repeated = s.last_request_id.as_deref() == Some(req.request_id.as_str());
            if repeated && let Some(open) = &s.wait {
                return Ok(open.wait_id.clone());
            }
            if !repeated {
                // A repeated request id (a re-call) stores its files no second time.
                hub.record_question(s, w, &req, &files);
            }
            let wait_id = format!("w_{}", uuid::Uuid::new_v4().simple());
            s.wait = Some(OpenWait {
                wait_id: wait_id.clone(),
                request_id: req.request_id.clone(),
                since: now_ms(),
                key: req.agent_key.clone(),
                origin: req.origin,
            });
            // Answers to an earlier permission question reach no other wait.
            let own = s.wait.as_ref().and_then(OpenWait::permission_request);
            hub.drop_permission_replies(&s.token, w, |asked| Some(asked) != own)?;
            let queued = hub.reply_ready(s, w)?;
            s.status = Session::waiting_status(queued);
            s.last_active_at = now_ms();
            Ok(wait_id)
        });
        let refused = committed.is_err() && !files.is_empty();
        // Unpinned first, so the sweep may take what a refused write had staged.
        drop(files);
        if refused {
            self.sweep_files_soon();
        }
        let wait_id = committed?;
        self.inner.waiters.opened(&req.token);
        self.arm_timed_reply(req.token.clone(), wait_id.peek().clone());
        Ok(wait_id)
    }

    /// The queued reply the session's open wait takes next: for a permission question
    /// only an answer to it, for any other only a reply that answers no permission
    /// question; oldest first.
    pub(super) fn reply_for(&self, s: &Session) -> Result<Option<QueuedReply>> {
        let wanted = s.wait.as_ref().and_then(OpenWait::permission_request);
        if wanted.is_none() {
            // The common case reads one record: permission answers are rare and short-lived.
            let first = self.inner.store.first_reply(&s.token)?;
            if first.as_ref().is_none_or(|r| r.for_permission.is_none()) {
                return Ok(first);
            }
        }
        Ok(self
            .inner
            .store
            .queued_replies(&s.token)?
            .into_iter()
            .find(|r| r.for_permission.as_deref() == wanted))
    }

    /// Dequeues (in `w`) the answers to permission questions whose request id `stale`
    /// says: a permission answer reaches only the wait that asked it.
    pub(super) fn drop_permission_replies(
        &self,
        token: &Token,
        w: &mut Write,
        stale: impl Fn(&str) -> bool,
    ) -> Result<()> {
        for r in self.inner.store.queued_replies(token)? {
            if r.for_permission.as_deref().is_some_and(&stale) {
                w.dequeue(token, &r.id);
            }
        }
        Ok(())
    }

    /// Whether a reply waits for the wait just opened: one queued, else an idle
    /// auto-continue queued now (the agent named a next step; go on with it). A
    /// permission question takes no automatic reply.
    fn reply_ready(&self, s: &mut Session, w: &mut Write) -> Result<bool> {
        if self.reply_for(s)?.is_some() {
            return Ok(true);
        }
        if s.wait
            .as_ref()
            .is_some_and(|o| o.permission_request().is_some())
        {
            return Ok(false);
        }
        let go_on = s.keep_alive.session_auto_continue
            && !s.last_review.is_idle_next
            && s.last_review.completion_pct.is_none_or(|p| p < 100)
            && s.may_auto_reply();
        if go_on {
            let text = format!(
                "{}\n{}",
                s.keep_alive.continue_prompt, s.last_review.next_step
            );
            self.queue_auto_reply(s, w, text);
        }
        Ok(go_on)
    }

    /// The wait's caller against the session's binding: the same chat goes on,
    /// a chat whose key moved takes the binding along, another is rejected.
    fn bind_wait(
        &self,
        s: &mut Session,
        w: &mut Write,
        caller: &Fingerprint,
        cursor_title: &str,
    ) -> Result<()> {
        let owner = caller.agent_key;
        match binding::check_wait(caller, s) {
            WaitBinding::Same => {}
            WaitBinding::Migrate { old_key, new_key } => {
                let old = owned_name(owner, &old_key);
                if self.inner.store.binding(BindingKind::Chat, &old)?.as_ref() == Some(&s.token) {
                    w.bind(BindingKind::Chat, &old, None);
                }
                w.bind(
                    BindingKind::Chat,
                    &owned_name(owner, new_key.as_str()),
                    Some(&s.token),
                );
                binding::migrate(s, cursor_title, new_key);
            }
            WaitBinding::Rejected => return Err(rejected(s, caller)),
        }
        Ok(())
    }

    /// A new question: the open wait is superseded, the agent's message is
    /// appended with its options, changes and files (their bytes written in the
    /// same write), and its progress becomes the session's.
    fn record_question(
        &self,
        s: &mut Session,
        w: &mut Write,
        req: &RegisterRequest,
        files: &[(AttachmentRef, Staged)],
    ) {
        s.close_wait(WaitEnd::Superseded);
        let mut attachments = Vec::with_capacity(files.len());
        for (record, staged) in files {
            w.attachment(
                &record.id,
                FileRecord {
                    sha: staged.sha.clone(),
                    size: staged.size,
                    owner: req.agent_key.as_ref().map(|k| k.to_string()),
                    token: s.token.to_string(),
                    request: req.request_id.clone(),
                    at: now_ms(),
                },
            );
            attachments.push(record.clone());
        }
        if !files.is_empty() {
            w.within_quota();
        }
        let message = Message {
            options: req.options.clone(),
            multi_select: req.multi_select,
            changes: req.changes.clone(),
            attachments,
            origin: req.origin,
            ..Message::new(Role::Assistant, req.message.clone(), now_ms())
        };
        self.append(s, w, message);
        s.last_review = Review::from_wait(req.completion_pct, req.next_step.clone());
        s.last_request_id = Some(req.request_id.clone());
    }

    fn queue_auto_reply(&self, s: &mut Session, w: &mut Write, text: String) {
        let reply = QueuedReply::new(text, vec![], true);
        self.append(s, w, Message::of_reply(&reply, None));
        w.enqueue(&s.token, reply);
        self.inner
            .counters
            .auto_replies
            .fetch_add(1, Ordering::Relaxed);
    }

    /// Timed reply: after the session's interval with no reply, deliver its
    /// continue prompt to this wait (once).
    pub(super) fn arm_timed_reply(&self, token: Token, wait_id: String) {
        let interval = match self.lock().get(&token) {
            Ok(Some(s))
                if s.keep_alive.timed_reply_enabled && s.keep_alive.timed_reply_interval_ms > 0 =>
            {
                Duration::from_millis(s.keep_alive.timed_reply_interval_ms)
            }
            _ => return,
        };
        let hub = self.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = tokio::time::sleep(interval) => {}
                _ = hub.inner.shutdown.cancelled() => return,
            }
            let fired = hub.commit(&token, |hub, s, w| {
                let due = s.has_open_wait(&wait_id)
                    && s.wait
                        .as_ref()
                        .is_some_and(|o| o.permission_request().is_none())
                    && s.keep_alive.timed_reply_enabled
                    && s.may_auto_reply()
                    && hub.inner.store.first_reply(&s.token)?.is_none();
                if due {
                    let text = s.keep_alive.continue_prompt.clone();
                    hub.queue_auto_reply(s, w, text);
                    s.status = Status::Replied;
                }
                Ok(due)
            });
            match fired {
                Ok(queued) if *queued.peek() => {
                    if let Err(e) = queued.flushed(&hub).await {
                        tracing::error!(error = %e, "flushing a timed reply failed");
                    }
                    tracing::info!(token = %token, "timed reply queued");
                }
                // Nothing queued: the rev the commit wrote needs no flush of its own.
                Ok(_) | Err(HubError::NotFound(_)) => {}
                Err(e) => tracing::warn!(token = %token, error = %e, "timed reply failed"),
            }
        });
    }

    /// Until the hub stops; then answers every held poll at once (a `Renewal`),
    /// however long its time limit. Started with the hub's other tasks.
    pub async fn answer_polls_at_shutdown(self) {
        self.inner.shutdown.cancelled().await;
        self.inner.waiters.wake_all();
    }

    /// Holds until a reply is pending for the wait, the timeout passes
    /// (`Renewal`), the hub stops (see [`Hub::answer_polls_at_shutdown`]) or the
    /// wait is gone; only for the session's `owner`.
    ///
    /// Its future is one `async` block owning the arguments: an `async fn` would
    /// keep each of them twice, and a held poll's future is memory × every waiting
    /// session.
    #[expect(
        clippy::manual_async_fn,
        reason = "an async fn keeps its arguments twice"
    )]
    pub fn poll(
        &self,
        token: Token,
        wait_id: String,
        timeout: Duration,
        owner: Option<KeyName>,
    ) -> impl Future<Output = Result<PollOutcome>> + Send + '_ {
        async move {
            let (token, wait_id, owner) = (&token, wait_id.as_str(), owner.as_ref());
            // Another owner's token is refused before it counts as a sign of life, and
            // so is the old owner's poll of a wait a hand-over ended: it is told, and
            // keeps nothing of the new owner's alive.
            if let Some(
                handed @ PollOutcome::Gone {
                    reason: WaitEnd::HandedOver,
                    ..
                },
            ) = self.poll_now(token, wait_id, owner)?
            {
                return Ok(handed);
            }
            self.inner.counters.polls.fetch_add(1, Ordering::Relaxed);
            self.inner.waiters.saw(token);
            let deadline = tokio::time::Instant::now() + timeout;
            let bell = self.inner.waiters.bell(token);
            let held = loop {
                // Armed before looking, so a change in between still wakes us.
                let woken = bell.notified();
                tokio::pin!(woken);
                woken.as_mut().enable();
                match self.poll_now(token, wait_id, owner) {
                    Ok(None) => {}
                    Ok(Some(outcome)) => break Ok(outcome),
                    Err(e) => break Err(e),
                }
                // A stopping hub rings every bell (`answer_polls_at_shutdown`): no
                // cancellation future of its own beside the bell and the deadline.
                if self.inner.shutdown.is_cancelled() {
                    break Ok(PollOutcome::Renewal);
                }
                tokio::select! {
                    _ = woken => {}
                    _ = tokio::time::sleep_until(deadline) => break Ok(PollOutcome::Renewal),
                }
            };
            let answer = match held {
                // Boxed: a held poll's future would otherwise keep room for the
                // flush and the reply all the while it waits (~200 bytes × every
                // waiting session).
                Ok(PollOutcome::Replied(reply)) => Box::pin(self.deliverable(reply)).await,
                other => other,
            };
            // The poll held the bell while it waited; its end is the agent's latest sign.
            self.inner.waiters.saw(token);
            answer
        }
    }

    /// A reply found for a poll, once a crash can no longer take it back: the
    /// delivery rule (the person's request may not have flushed it yet).
    async fn deliverable(&self, reply: QueuedReply) -> Result<PollOutcome> {
        let mark = self.inner.store.read_mark();
        self.inner.store.flush_through(mark).await?;
        Ok(PollOutcome::Replied(reply))
    }

    pub(super) fn poll_now(
        &self,
        token: &Token,
        wait_id: &str,
        owner: Option<&KeyName>,
    ) -> Result<Option<PollOutcome>> {
        let mut map = self.lock();
        let s = map
            .get(token)?
            .ok_or_else(|| HubError::NotFound(token.clone()))?;
        if let Err(not_yours) = own(s, owner) {
            // The agent whose wait a hand-over ended is told so: only it knows
            // that wait's id, and it learns nothing else of the session.
            return match s.closed_reason(wait_id) {
                Some(WaitEnd::HandedOver) => Ok(Some(PollOutcome::Gone {
                    reason: WaitEnd::HandedOver,
                    merged_into: None,
                })),
                _ => Err(not_yours),
            };
        }
        if s.has_open_wait(wait_id) {
            return Ok(self.reply_for(s)?.map(PollOutcome::Replied));
        }
        if let Some(reason) = s.closed_reason(wait_id) {
            return Ok(Some(PollOutcome::Gone {
                reason,
                merged_into: s.merged_into.clone(),
            }));
        }
        if map
            .waiting()
            .any(|o| o.token != *token && o.owner.as_ref() == owner && o.has_open_wait(wait_id))
        {
            return Err(HubError::Forbidden(
                "that waitId belongs to another session".into(),
            ));
        }
        Ok(Some(PollOutcome::Gone {
            reason: WaitEnd::Unknown,
            merged_into: None,
        }))
    }

    /// Consumes a delivered reply and finishes the wait (the owner's call).
    pub fn ack(
        &self,
        token: &Token,
        wait_id: &str,
        reply_id: &str,
        owner: Option<&KeyName>,
    ) -> Result<Unflushed<()>> {
        self.commit(token, |hub, s, w| {
            own(s, owner)?;
            if s.acked_replies.iter().any(|r| r == reply_id) {
                return Ok(());
            }
            let reply = hub
                .inner
                .store
                .queued_replies(token)?
                .into_iter()
                .find(|r| r.id == reply_id)
                .ok_or_else(|| HubError::BadRequest(format!("unknown replyId {reply_id:?}")))?;
            w.dequeue(token, reply_id);
            if s.has_open_wait(wait_id) {
                s.reply_delivered(&reply);
            } else {
                s.count_delivery(&reply);
                if s.wait.is_none() {
                    s.status = if reply.auto {
                        Status::Running
                    } else {
                        Status::Holding
                    };
                } else {
                    let more = hub.inner.store.queued_replies(token)?.len() > 1;
                    s.status = Session::waiting_status(more);
                }
            }
            Ok(())
        })
    }

    /// Ends the wait without a reply (the owner's call); queued replies stay queued.
    pub fn cancel(
        &self,
        token: &Token,
        wait_id: &str,
        owner: Option<&KeyName>,
    ) -> Result<Unflushed<()>> {
        let other = self
            .lock()
            .waiting()
            .any(|o| o.token != *token && o.owner.as_ref() == owner && o.has_open_wait(wait_id));
        if other {
            return Err(HubError::Forbidden(
                "that waitId belongs to another session".into(),
            ));
        }
        self.commit(token, |hub, s, w| {
            own(s, owner)?;
            if s.has_open_wait(wait_id)
                && let Some(closed) = s.close_wait(WaitEnd::Cancelled)
            {
                // The hook that asked stopped waiting: its answers reach no one else.
                if let Some(asked) = closed.permission_request() {
                    hub.drop_permission_replies(&s.token, w, |r| r == asked)?;
                }
                s.status = Status::Holding;
            }
            Ok(())
        })
    }

    /// Appends the source's history to the target, closes the source and
    /// re-points its bindings and queued replies.
    /// With a `caller` (the agent's `merge_conversation`) the target must be
    /// the caller's and the source on its machine and workspace; without one
    /// (the person, from the panel) there is no binding check.
    pub fn merge(
        &self,
        from: &Token,
        to: &Token,
        caller: Option<&Fingerprint<'_>>,
    ) -> Result<Unflushed<()>> {
        if let Some(c) = caller {
            check_caller(c.cursor_title, c.workspace, c.host_ip)?;
        }
        if from == to {
            return Err(HubError::BadRequest(
                "cannot merge a session into itself".into(),
            ));
        }
        self.write(|table| {
            let (src, dst) = merge_pair(table, from, to, caller)?;
            let mut write = Write::new();
            let merged = self.merged(src, dst, &mut write)?;
            Ok(Change::Write {
                write,
                sessions: Swapped::Own(Vec::from(merged)),
                answer: (),
            })
        })
    }

    /// The merge itself: the source's history (after a trace naming where it came
    /// from), queued replies and bindings go to the target in `w`; the source is
    /// closed. Returns both, source first, their `rev`s one up.
    fn merged(&self, mut src: Session, mut dst: Session, w: &mut Write) -> Result<[Session; 2]> {
        let store = &self.inner.store;
        let (from, to) = (src.token.clone(), dst.token.clone());
        // The progress the target shows is the newer of the two: merging a fresh
        // session into an old one must not bring the old one's "next step" back.
        if src.last_review.has_review && src.last_active_at >= dst.last_active_at {
            dst.last_review = src.last_review.clone();
        }
        let history = store.messages(&from, None, usize::MAX)?;
        self.append(&mut dst, w, merge_trace(&src, history.len()));
        for (_, m) in history {
            self.append(&mut dst, w, m);
        }
        for r in store.queued_replies(&from)? {
            w.dequeue(&from, &r.id);
            w.enqueue(&to, r);
        }
        for kind in [BindingKind::Chat, BindingKind::Plan, BindingKind::Thread] {
            for name in store.bindings_of(kind, &from)? {
                w.bind(kind, &name, Some(&to));
            }
        }
        src.close_wait(WaitEnd::Merged);
        src.status = Status::Merged;
        src.merged_into = Some(to);
        src.last_active_at = now_ms();
        dst.binding_check_count += 1;
        src.rev += 1;
        dst.rev += 1;
        Ok([src, dst])
    }
}

/// The two sessions of a merge, as the table has them, once every rule allows it:
/// with a `caller`, both its own, the target bound to its chat and the source on
/// its machine and workspace; neither a copy; both open.
fn merge_pair(
    table: &mut SessionTable,
    from: &Token,
    to: &Token,
    caller: Option<&Fingerprint<'_>>,
) -> Result<(Session, Session)> {
    let mut found = |t: &Token| -> Result<Session> {
        Ok(table
            .get(t)?
            .ok_or_else(|| HubError::NotFound(t.clone()))?
            .clone())
    };
    let (src, dst) = (found(from)?, found(to)?);
    // Owner first: another owner's token answers like an unknown one
    // whatever its state, so no status tells that it exists.
    if let Some(caller) = caller {
        for s in [&src, &dst] {
            own(s, caller.agent_key)?;
        }
    }
    for s in [&src, &dst] {
        if s.mirror {
            return Err(mirror_error(s));
        }
    }
    ensure_open(&dst)?;
    ensure_open(&src)?;
    if let Some(caller) = caller {
        if !caller.owns(&dst) {
            return Err(rejected(&dst, caller));
        }
        if !caller.shares_machine_and_workspace(&src) {
            return Err(HubError::BindingRejected(
                "the source session belongs to another workspace or machine".into(),
            ));
        }
    }
    Ok((src, dst))
}

/// A trace in a merge's target: where the messages that follow came from.
fn merge_trace(src: &Session, messages: usize) -> Message {
    let source = if src.display_title.is_empty() {
        &src.title
    } else {
        &src.display_title
    };
    Message::new(
        Role::System,
        format!(
            "Merged from “{source}” ({}, {} @ {}): {messages} messages follow.",
            src.token, src.workspace, src.host_ip,
        ),
        now_ms(),
    )
}

fn bind_plan_thread(s: &mut Session, w: &mut Write, req: &InitRequest) {
    let owner = req.agent_key.as_ref();
    if let Some(p) = &req.plan_label {
        s.plan_name = Some(p.clone());
        w.bind(BindingKind::Plan, &owned_name(owner, p), Some(&s.token));
    }
    if let Some(t) = &req.thread_id {
        s.thread_id = Some(t.clone());
        w.bind(BindingKind::Thread, &owned_name(owner, t), Some(&s.token));
    }
}

/// Every rule on a register's fields, checked before anything is written; its
/// files decoded, ready to store.
fn check_register(req: &RegisterRequest) -> Result<Vec<(AttachmentRef, Vec<u8>)>> {
    check_caller(&req.cursor_title, &req.workspace, &req.host_ip)?;
    if req.request_id.is_empty() || req.request_id.len() > MAX_NAME {
        return Err(HubError::BadRequest(format!(
            "requestId must be 1 to {MAX_NAME} characters"
        )));
    }
    if req.completion_pct.is_some_and(|p| p > 100) {
        return Err(HubError::BadRequest(
            "completionPct must be 0 to 100".into(),
        ));
    }
    holdline_contract::choices::check_options(&req.options, req.multi_select)
        .map_err(|e| HubError::BadRequest(e.to_string()))?;
    if let Some(changes) = &req.changes {
        holdline_contract::changes::check_changes(changes)
            .map_err(|e| HubError::BadRequest(e.to_string()))?;
    }
    holdline_store::session::decode_uploads(&req.attachments).map_err(HubError::BadRequest)
}

/// The owner check every agent call makes first: another owner's session
/// answers exactly like an unknown token.
fn own(s: &Session, owner: Option<&KeyName>) -> Result<()> {
    if s.owner.as_ref() == owner {
        Ok(())
    } else {
        Err(HubError::NotFound(s.token.clone()))
    }
}
