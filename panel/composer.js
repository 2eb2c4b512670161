// composer.js — the reply box: Enter sends / Shift+Enter breaks a line,
// per-session drafts in localStorage (keyed by token, never shared), pasted
// and dropped images, quick replies (put in the box, then sent) from the
// editable templates — in the conversation's language, plus the session's own
// (quickreplies.js) — replies that wait while the hub is away and go out
// when it is back, and the queued/delivered line under the box.
// Invariant: a draft belongs to the question on screen when typing began (kept
// with the draft across reloads), and its reply names that question
// (`inReplyTo`): a question asked since is announced above the box, and the
// hub refuses the reply (409) so the box shows that question with "send
// anyway" — a draft never becomes the answer to a question it was not written for.

import { api } from './api.js';
import { $, h, toast, runDialog } from './ui.js';
import { t, lang, bytes, DEFAULT_TEMPLATES } from './i18n.js';
import { queuedReplyIds, deliveryState, questionOnScreen } from './conversation.js';
import { strandedKey } from './stranded.js';
import { plainText } from './markdown.js';
import { sendPicked } from './choices.js';
import { conversationLanguage, templatesFor } from './quickreplies.js';

/** The hub's body cap for /api/reply, as /api/whoami says it (loadLimits); null until then. */
let replyLimit = null;
const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'];
const DRAFT_PREFIX = 'holdline.draft.';

let token = null;
/**
 * The question the draft on screen answers: the `seq` of the agent message
 * shown when typing began, null when the agent had asked nothing, undefined
 * while the box is empty (or for a draft kept by an older panel: then the
 * question on screen when it is sent).
 */
let draftFor;
/** The open session's messages as the hub last reported them (for the words of a newer question). */
let messagesNow = [];
let closed = false;
/** The session is a read-only copy of another hub's (closed is then true too). */
let mirror = false;
let templates = [];
/** The language the open conversation's agent writes in (null: not known yet; the panel's is used). */
let convLang = null;
/** The open session's own quick replies, as the hub last reported them. */
let own = [];
/** Images waiting to be sent, per session token (kept in memory only: they can be large). */
const attachments = new Map();
/** The last reply sent per token: `{replyId, state}`; drives the status line. */
const lastSent = new Map();
/**
 * Sessions whose reply (their draft and images) waits for the hub to answer
 * again, each with the question it answers (`inReplyTo`, or null).
 */
const pending = new Map();
/** The options picked with a reply that waits for the hub, per token (sent with it by flushPending). */
const pendingChoices = new Map();
/** The revoked key the session on screen belongs to (null: none): a reply waits for it, never "delivered". */
let stranded = null;
let flushing = false;
let onSent = () => {};

export function draftKey(tok) { return DRAFT_PREFIX + tok; }

/**
 * Session `tok`'s draft: `{text, question}` (`question` as in `draftFor`).
 * Stored as JSON; a plain string is a draft an older panel kept, its question unknown.
 */
function loadDraft(tok) {
  let raw = '';
  try { raw = localStorage.getItem(draftKey(tok)) || ''; } catch { /* storage disabled: no draft */ }
  try {
    const d = JSON.parse(raw);
    if (d && typeof d.text === 'string') return { text: d.text, question: Number.isInteger(d.question) || d.question === null ? d.question : undefined };
  } catch { /* an older panel's plain text */ }
  return { text: raw, question: undefined };
}

function saveDraft(tok, text, question) {
  try {
    if (text) localStorage.setItem(draftKey(tok), JSON.stringify({ text, question }));
    else localStorage.removeItem(draftKey(tok));
  } catch { /* storage full or disabled: the draft lives on in the box */ }
}

/** Keeps the box's text as the draft of the session on screen, tied to the question on screen when typing began. */
function keepDraft() {
  const text = input().value;
  if (!text) draftFor = undefined;
  else if (draftFor === undefined) draftFor = questionOnScreen($('#message-list'));
  saveDraft(token, text, draftFor);
  drawNewer();
}

/** The question a reply from the box answers: its draft's, else the one on screen. */
function answeredQuestion() {
  return draftFor === undefined ? questionOnScreen($('#message-list')) : draftFor;
}

function input() { return $('#reply-input'); }

/** Sets up listeners once; `sent(token)` is called after each successful reply. */
export function initComposer({ sent }) {
  onSent = sent;
  const box = input();
  box.addEventListener('input', () => { if (token) keepDraft(); });
  box.addEventListener('keydown', (e) => {
    // isComposing / 229: Enter that ends an IME composition (Chinese input) must not send.
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing && e.keyCode !== 229) {
      e.preventDefault();
      send();
    }
  });
  box.addEventListener('paste', (e) => {
    const files = [...(e.clipboardData?.items || [])]
      .filter((it) => it.kind === 'file')
      .map((it) => it.getAsFile())
      .filter(Boolean);
    if (files.length) {
      e.preventDefault();
      addFiles(files);
    }
  });
  const zone = $('#conversation');
  zone.addEventListener('dragover', (e) => {
    if ([...(e.dataTransfer?.types || [])].includes('Files')) {
      e.preventDefault();
      zone.classList.add('dropping');
    }
  });
  zone.addEventListener('dragleave', () => zone.classList.remove('dropping'));
  zone.addEventListener('drop', (e) => {
    zone.classList.remove('dropping');
    const files = [...(e.dataTransfer?.files || [])];
    if (files.length) {
      e.preventDefault();
      addFiles(files);
    }
  });
  $('#attach').addEventListener('click', () => $('#file-input').click());
  $('#file-input').addEventListener('change', (e) => {
    addFiles([...e.target.files]);
    e.target.value = '';
  });
  $('#reply-send').addEventListener('click', () => send());
  $('#templates-edit').addEventListener('click', editTemplates);
  $('#template-add').addEventListener('click', () => $('#template-rows').append(templateRow({ label: '', text: '' })));
}

/**
 * Switches the box to session `tok` (its own draft and images); `isClosed`
 * disables it, as does `isMirror` (a read-only copy of another hub's session).
 */
export function showSession(tok, isClosed, isMirror = false) {
  mirror = !!isMirror;
  isClosed = isClosed || mirror;
  const box = input();
  if (token !== tok) {
    token = tok;
    stranded = null;
    const draft = loadDraft(tok);
    box.value = draft.text;
    draftFor = draft.text ? draft.question : undefined;
    messagesNow = [];
    hideStale();
    convLang = null;
    own = [];
    drawTemplates();
  }
  closed = isClosed;
  box.disabled = isClosed;
  $('#reply-send').disabled = isClosed;
  $('#attach').disabled = isClosed;
  for (const b of document.querySelectorAll('#quick-replies button')) b.disabled = isClosed;
  drawAttachments();
  drawStatus(null);
  drawNewer();
}

/**
 * Re-checks the status line against the session as the hub now reports it
 * (`session.messages` and `queuedReplies` from one answer): the last reply
 * is delivered once the hub no longer holds it, whatever the agent does next.
 */
export function sessionChanged(session) {
  if (session.token !== token) return;
  stranded = strandedKey(session);
  const sent = lastSent.get(token);
  const messages = session.messages || [];
  messagesNow = messages;
  drawNewer();
  const spoken = conversationLanguage(messages);
  const ownNow = session.quickReplies || [];
  if ((spoken && spoken !== convLang) || JSON.stringify(ownNow) !== JSON.stringify(own)) {
    convLang = spoken || convLang;
    own = ownNow;
    drawTemplates();
  }
  if (sent && sent.replyId && messages.some((m) => m.replyId === sent.replyId)) {
    sent.state = deliveryState(session, queuedReplyIds(session, messages), sent.replyId);
  }
  drawStatus(session);
}

function drawStatus(session) {
  const el = $('#reply-status');
  el.classList.remove('error');
  if (closed) {
    el.textContent = mirror ? t('mirrorClosed') : t('replyClosed');
    el.dataset.state = mirror ? 'mirror' : 'closed';
    return;
  }
  const sent = token && lastSent.get(token);
  if (!sent) {
    el.textContent = '';
    el.dataset.state = '';
    return;
  }
  el.dataset.state = sent.state;
  el.textContent = sent.state === 'sending' ? t('sending')
    : stranded !== null && sent.state !== 'pending' ? t('replyHeldForKey', { key: stranded })
    : sent.state === 'pending' ? t('replyPending')
      : sent.state === 'queued' ? t('replyQueued')
        : sent.state === 'delivered' ? t('replyDelivered')
          : t('replySent');
  void session;
}

function showError(message) {
  const el = $('#reply-status');
  el.textContent = message;
  el.dataset.state = 'error';
  el.classList.add('error');
}

function readImage(file) {
  return new Promise((resolve, reject) => {
    const r = new FileReader();
    r.onload = () => {
      const url = String(r.result);
      const comma = url.indexOf(',');
      resolve({ mimeType: file.type, data: url.slice(comma + 1), name: file.name || '', size: file.size });
    };
    r.onerror = () => reject(r.error);
    r.readAsDataURL(file);
  });
}

async function addFiles(files) {
  if (!token || closed) return;
  const tok = token;
  const list = attachments.get(tok) || [];
  for (const f of files) {
    if (!IMAGE_TYPES.includes(f.type)) {
      toast(t('badImage'), 'error');
      continue;
    }
    try {
      list.push(await readImage(f));
    } catch (e) {
      toast(t('errorGeneric', { msg: e.message }), 'error');
    }
  }
  attachments.set(tok, list);
  if (tok === token) drawAttachments();
}

function drawAttachments() {
  const wrap = $('#attachments');
  const list = (token && attachments.get(token)) || [];
  wrap.hidden = list.length === 0;
  wrap.replaceChildren(...list.map((img, i) => h('figure', { class: 'attachment', testid: 'attachment' },
    h('img', { src: `data:${img.mimeType};base64,${img.data}`, alt: img.name }),
    h('figcaption', {}, bytes(img.size || Math.floor(img.data.length * 0.75))),
    h('button', {
      type: 'button', class: 'icon remove', title: t('removeImage'), 'aria-label': t('removeImage'),
      testid: 'attachment-remove',
      onclick: () => { list.splice(i, 1); drawAttachments(); },
    }, '✕'),
  )));
}

/**
 * Sends one reply; `inReplyTo` is the `seq` of the question it answers (null:
 * whatever the agent asks when it arrives).
 */
async function deliver(tok, text, images, inReplyTo, choices = []) {
  const reply = { token: tok, text, images: images.map(({ mimeType, data }) => ({ mimeType, data })) };
  if (choices.length) reply.choices = choices;
  if (inReplyTo !== null && inReplyTo !== undefined) reply.inReplyTo = inReplyTo;
  const body = JSON.stringify(reply);
  if (replyLimit !== null && body.length > replyLimit) {
    showError(t('replyTooLarge', { max: bytes(replyLimit) }));
    return null;
  }
  lastSent.set(tok, { state: 'sending' });
  if (tok === token) drawStatus(null);
  try {
    const res = await api.reply(body);
    pending.delete(tok);
    pendingChoices.delete(tok);
    lastSent.set(tok, { replyId: res.replyId, state: res.queued ? 'queued' : 'sent' });
    if (tok === token) drawStatus(null);
    onSent(tok);
    return res;
  } catch (e) {
    if (hubAway(e)) {
      // Kept as the draft (and images) and sent when the hub is back: see flushPending.
      pending.set(tok, inReplyTo ?? null);
      if (choices.length) pendingChoices.set(tok, choices);
      lastSent.set(tok, { state: 'pending' });
      if (tok === token) drawStatus(null);
      return null;
    }
    lastSent.delete(tok);
    if (e.code === 'STALE_QUESTION' || e.code === 'PERMISSION_OVER') { pending.delete(tok); pendingChoices.delete(tok); }
    if (tok !== token) return null;
    drawStatus(null);
    if (e.code === 'STALE_QUESTION') showStale(tok, e.currentQuestion, choices.length > 0);
    else if (e.code === 'PERMISSION_OVER') showError(t('permissionOver'));
    else if (e.status === 413) showError(replyLimit === null ? t('replyFailed', { msg: e.message }) : t('replyTooLarge', { max: bytes(replyLimit) }));
    else if (e.status === 409) showError(t('replyClosed'));
    else showError(t('replyFailed', { msg: e.message }));
    return null;
  }
}

/** The hub did not answer (down, restarting, or a proxy in front says so): worth sending again later. */
function hubAway(e) {
  return e.status === 0 || e.status === 502 || e.status === 503 || e.status === 504;
}

/** Sends the replies that waited for the hub, each session's draft and images as they are now. */
export async function flushPending() {
  if (flushing) return;
  flushing = true;
  try {
    for (const [tok, inReplyTo] of [...pending]) {
      const text = tok === token ? input().value : loadDraft(tok).text;
      const images = attachments.get(tok) || [];
      const choices = pendingChoices.get(tok) || [];
      if (!text.trim() && images.length === 0 && choices.length === 0) {
        pending.delete(tok);
        lastSent.delete(tok);
        continue;
      }
      const res = await sendFor(tok, text, images, inReplyTo, choices);
      if (!res && pending.has(tok)) break; // still away: the next reconnect tries again
    }
  } finally {
    flushing = false;
  }
}

/** Sends the box's text and images for the session on screen (with the options toggled on in a multi-select question). */
export async function send() {
  if (!token || closed) return;
  if (sendPicked()) return;
  const tok = token;
  const box = input();
  const text = box.value;
  const images = attachments.get(tok) || [];
  if (!text.trim() && images.length === 0) return;
  $('#reply-send').disabled = true;
  hideStale();
  try {
    await sendFor(tok, text, images, answeredQuestion());
  } finally {
    $('#reply-send').disabled = closed;
    // The stale choice, when shown, holds the focus.
    if ($('#stale-question').hidden) box.focus();
  }
}

/**
 * Sends the options `choices` (indexes) picked for the question `inReplyTo`
 * with the box's text and images, if any; answers the hub's reply (null: not sent).
 */
export async function sendChoices(choices, inReplyTo) {
  if (!token || closed || !choices.length) return null;
  hideStale();
  return sendFor(token, input().value, attachments.get(token) || [], inReplyTo, choices);
}

/** Puts `text` in the reply box (after what is there) to be edited and sent. */
export function putInBox(text) {
  insertTemplate(text);
}

/** Sends `text` and `images` (and picked `choices`) for session `tok`; empties its box and draft once the hub has them. */
async function sendFor(tok, text, images, inReplyTo, choices = []) {
  // Forget the draft before the hub answers: the agent may have the reply
  // (and the person may reload) before this page hears back. Put it back on failure.
  saveDraft(tok, '');
  const res = await deliver(tok, text, images, inReplyTo, choices);
  if (res) {
    attachments.delete(tok);
    if (token === tok && input().value === text) {
      input().value = '';
      draftFor = undefined;
      drawAttachments();
      drawNewer();
    }
  } else if (!loadDraft(tok).text) {
    saveDraft(tok, text, inReplyTo ?? null);
  }
  return res;
}

/**
 * The agent asked something newer than the question the reply was written
 * for: shows that question, keeps the reply in the box, and offers to send
 * it anyway (without naming a question) — unless it `picked` options of the
 * old question, which mean nothing to the new one. Redraws the conversation too.
 */
function showStale(tok, current, picked = false) {
  const box = $('#stale-question');
  // Focus lands on the choice; its description reads the new question out with it.
  const about = current && current.preview ? 'stale-title stale-preview' : 'stale-title';
  const anyway = h('button', {
    type: 'button', class: 'primary', testid: 'send-anyway', 'aria-describedby': about,
    onclick: async () => {
      if (token !== tok || closed) return;
      const images = attachments.get(tok) || [];
      hideStale();
      // The button goes with the choice: the focus waits in the reply box, the next place to act.
      input().focus();
      anyway.disabled = true;
      await sendFor(tok, input().value, images, null);
    },
  }, t('sendAnyway'));
  const edit = h('button', {
    type: 'button', testid: 'stale-dismiss', 'aria-describedby': about,
    onclick: () => {
      hideStale();
      // The person has seen the newer question now: the draft answers it.
      if (token === tok && input().value) {
        draftFor = questionOnScreen($('#message-list'));
        saveDraft(tok, input().value, draftFor);
        drawNewer();
      }
      input().focus();
    },
  }, t('staleEdit'));
  box.replaceChildren(
    h('p', { class: 'stale-title', id: 'stale-title' }, t('staleQuestion')),
    current && current.preview
      ? h('blockquote', { class: 'stale-preview', id: 'stale-preview', testid: 'stale-preview' }, current.preview)
      : null,
    h('div', { class: 'stale-actions' }, picked ? null : anyway, edit),
  );
  box.hidden = false;
  drawNewer();
  (picked ? edit : anyway).focus();
  onSent(tok);
}

function hideStale() {
  const box = $('#stale-question');
  box.hidden = true;
  box.replaceChildren();
  drawNewer();
}

/** The newest agent message asked after the question the draft on screen answers (null: none). */
function newerThanDraft() {
  if (!Number.isInteger(draftFor)) return null;
  for (let i = messagesNow.length - 1; i >= 0; i--) {
    const m = messagesNow[i];
    if (m.role === 'assistant' && Number.isInteger(m.seq)) return m.seq > draftFor ? m : null;
  }
  return null;
}

/** What a question says, in a line (as the hub's 409 names it: the first 160 characters). */
function questionWords(content) {
  const words = plainText(String(content || '').slice(0, 2000));
  return words.length > 160 ? `${words.slice(0, 160)}…` : words;
}

/**
 * The line above the box (a live region: screen readers hear it) saying the
 * agent asked something newer than the question the draft answers — while
 * there is a draft and the stale choice is not already saying so.
 */
function drawNewer() {
  const el = $('#newer-question');
  const newer = token && !closed && input().value.trim() && $('#stale-question').hidden ? newerThanDraft() : null;
  const text = newer ? t('newerQuestion', { q: questionWords(newer.content) }) : '';
  if (el.textContent !== text) el.textContent = text;
}

/** Loads the shared templates (or the defaults when the hub has none). */
/** Reads the limits the hub holds replies to (the reply body's size) from /api/whoami. */
export async function loadLimits() {
  try {
    const me = await api.whoami();
    if (Number.isFinite(me?.replyLimit)) replyLimit = me.replyLimit;
  } catch {
    // Unknown until a later start: the hub still refuses a body too large (413).
  }
}

export async function loadTemplates() {
  try {
    const res = await api.templates();
    templates = Array.isArray(res?.templates) && res.templates.length ? res.templates : DEFAULT_TEMPLATES;
  } catch {
    templates = DEFAULT_TEMPLATES;
  }
  drawTemplates();
}

/** The session's own quick replies, then the shared ones in the conversation's language (else the panel's). */
function shownTemplates() {
  return [
    ...own.map((tpl) => ({ ...tpl, own: true })),
    ...templatesFor(templates, convLang || lang),
  ];
}

function drawTemplates() {
  $('#quick-replies').replaceChildren(...shownTemplates().map((tpl) => h('button', {
    type: 'button', class: `chip${tpl.own ? ' own' : ''}`, testid: tpl.own ? 'own-quick-reply' : 'quick-reply',
    title: tpl.own ? `${t('sessionTemplate')}: ${tpl.text}` : tpl.text, disabled: closed,
    dataset: { lang: tpl.lang || '' },
    onclick: () => insertTemplate(tpl.text),
  }, tpl.label || tpl.text)));
}

/** Puts a quick reply's text in the box (after what is there); Enter or Send sends it. */
function insertTemplate(text) {
  if (!token || closed) return;
  const box = input();
  const before = box.value.replace(/\s+$/, '');
  box.value = before ? `${before}\n${text}` : text;
  keepDraft();
  box.focus();
  box.setSelectionRange(box.value.length, box.value.length);
}

function templateRow(tpl) {
  const row = h('div', { class: 'template-row', testid: 'template-row', dataset: { lang: tpl.lang || '' } },
    h('input', { type: 'text', class: 'tpl-label', value: tpl.label, placeholder: t('templateLabel'), testid: 'template-label', 'aria-label': t('templateLabel') }),
    h('textarea', { class: 'tpl-text', rows: 2, placeholder: t('templateText'), testid: 'template-text', 'aria-label': t('templateText') }),
    h('button', { type: 'button', class: 'icon', title: t('remove'), 'aria-label': t('remove'), testid: 'template-remove', onclick: () => row.remove() }, '✕'),
  );
  row.querySelector('textarea').value = tpl.text;
  return row;
}

/**
 * The quick-reply editor: the shared templates (kept by the hub) or, chosen
 * at the top, the open session's own (kept by the hub with the session).
 */
async function editTemplates() {
  const dialog = $('#templates-dialog');
  const scope = $('#template-scope');
  const editing = token;
  scope.value = 'shared';
  scope.querySelector('option[value="session"]').disabled = !editing;
  const fill = () => $('#template-rows').replaceChildren(...(scope.value === 'session' ? own : templates).map(templateRow));
  scope.onchange = fill;
  fill();
  if ((await runDialog(dialog)) !== 'ok') return;
  const next = [...document.querySelectorAll('#template-rows .template-row')]
    .map((row) => ({ label: row.querySelector('.tpl-label').value.trim(), text: row.querySelector('.tpl-text').value, lang: row.dataset.lang }))
    .filter((tpl) => tpl.text.trim())
    .map((tpl) => ({ label: tpl.label || tpl.text.slice(0, 20), text: tpl.text, ...(tpl.lang ? { lang: tpl.lang } : {}) }));
  try {
    if (scope.value === 'session') {
      const s = await api.config(editing, { quickReplies: next });
      if (editing === token) own = s?.quickReplies || [];
    } else {
      await api.saveTemplates(next);
      templates = next.length ? next : DEFAULT_TEMPLATES;
    }
    drawTemplates();
    toast(t('saved'));
  } catch (e) {
    toast(t('saveFailed', { msg: e.message }), 'error');
  }
}

/** Redraws labels after a language switch. */
export function relabel() {
  drawTemplates();
  drawAttachments();
  drawStatus(null);
  drawNewer();
}
