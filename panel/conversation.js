// conversation.js — draws a session's messages: roles, Markdown, images,
// automatic replies, queued/delivered marks, a copy button each, long messages folded to their
// question, code blocks with copy/wrap, merged-in messages marked with where they came from,
// the agent's questions it moved on from marked as such (answered, asked again, stopped waiting);
// a hook's question labelled with where it came from (the agent stopped / asks permission);
// keeps one element per message (keyed by seq) so live updates do not re-render the whole history.

import { h, icon } from './ui.js';
import { t, clock, bytes } from './i18n.js';
import { renderInto } from './markdown.js';
import { copyText } from './export.js';
import { pickedNote } from './choices.js';
import { enhanceCodeBlocks } from './codeblock.js';
import { foldLongMessage, changedFilesList, resetFolds } from './longmessage.js';
import { markMergedIn } from './mergedin.js';
import { workspaceChanges, changeSetKey } from './changes.js';
import { attachmentList } from './attachments.js';

/** One rendered message element per `seq`, for the session on screen. */
const cache = new Map();
let cacheToken = null;
/** Sequence numbers of huge messages the person asked to see in full. */
const expanded = new Set();

function imageSrc(img) {
  return `data:${img.mimeType};base64,${img.data}`;
}

function openImage(src, alt = '') {
  const dialog = document.getElementById('image-dialog');
  const full = document.getElementById('image-full');
  full.src = src;
  full.alt = alt;
  if (!dialog.dataset.wired) {
    // A click anywhere (the image or around it) closes the viewer, as does Escape.
    dialog.addEventListener('click', () => dialog.close());
    dialog.dataset.wired = '1';
  }
  dialog.showModal();
}

/** Where an agent's question came from, when a client's hook asked it (absent: the agent asked). */
const ORIGINS = new Set(['stopped', 'permission']);
function originTag(origin) {
  if (!ORIGINS.has(origin)) return null;
  return h('span', { class: `tag origin origin-${origin}`, testid: 'origin-tag', dataset: { origin } }, t(`origin.${origin}`));
}

/** `changes`: how its workspace changes show (`{sameAsBefore, newest}`, changes.js). */
function buildMessage(m, changes) {
  const role = ['user', 'assistant', 'system'].includes(m.role) ? m.role : 'system';
  const content = h('div', { class: 'content md', testid: 'message-content' });
  const note = h('div', { class: 'truncated', hidden: true });
  const draw = (full) => {
    renderInto(content, m.content, {
      full,
      onTruncated: (shown) => {
        const size = bytes(new Blob([m.content]).size);
        note.hidden = false;
        note.replaceChildren(
          h('span', { class: 'muted' }, t('truncated', { shown: bytes(shown), size })),
          h('button', {
            type: 'button', testid: 'show-all',
            onclick: () => { expanded.add(m.seq); note.hidden = true; draw(true); },
          }, t('showAll', { size })),
        );
      },
    });
    enhanceCodeBlocks(content);
    if (role === 'assistant') foldLongMessage(content, m);
  };
  draw(expanded.has(m.seq));

  const images = (m.images || []).filter((i) => i && i.mimeType && i.data);
  const gallery = images.length
    ? h('div', { class: 'images' }, images.map((img) => {
      const src = imageSrc(img);
      return h('img', {
        src, alt: '', loading: 'lazy', testid: 'message-image',
        onclick: () => openImage(src),
      });
    }))
    : null;

  const meta = h('div', { class: 'meta' },
    h('span', { class: 'who' }, t(`role.${role}`)),
    m.auto ? h('span', { class: 'tag auto', testid: 'auto-tag' }, t('auto')) : null,
    role === 'assistant' ? originTag(m.origin) : null,
    m.via ? h('span', { class: 'tag via', testid: 'via-tag' }, t('via', { via: viaName(m.via) })) : null,
    h('span', { class: 'delivery', testid: 'delivery' }),
    h('span', { class: 'tag merged-in', testid: 'merged-in', hidden: true }),
    h('time', { class: 'when', datetime: new Date(m.at || 0).toISOString() }, m.at ? clock(m.at) : ''),
    h('button', {
      type: 'button', class: 'icon copy', testid: 'copy-message', title: t('copyMessage'), 'aria-label': t('copyMessage'),
      onclick: () => copyText(m.content || ''),
    }, icon('copy')),
  );

  return h('article', {
    class: `msg ${role}${m.auto ? ' auto' : ''}`,
    testid: 'message',
    dataset: { role, seq: String(m.seq ?? '') },
  }, meta, pickedNote(m.choices), role === 'assistant' ? (workspaceChanges(m.changes, changes) ?? changedFilesList(m.content)) : null, content, note, gallery,
  attachmentList(m.attachments, openImage));
}

/**
 * The ids of the replies the hub still holds for the agent. The hub queues
 * replies (the person's and automatic ones) in the order it records them in
 * the history, and the agent takes them oldest first, so they are the newest
 * `session.queuedReplies` messages that carry a reply id.
 */
export function queuedReplyIds(session, messages) {
  const ids = new Set();
  let n = Math.max(0, Number(session.queuedReplies) || 0);
  for (let i = messages.length - 1; i >= 0 && n > 0; i--) {
    if (messages[i].replyId) { ids.add(messages[i].replyId); n--; }
  }
  return ids;
}

/**
 * One reply's state: `queued` (held until the agent next waits), `sent`
 * (an agent waits and is taking it), `delivered` (the agent has it).
 */
export function deliveryState(session, queued, replyId) {
  if (!replyId || !queued.has(replyId)) return 'delivered';
  return session.status === 'replied' ? 'sent' : 'queued';
}

/** Shows `messages` (oldest first) of `session` in `list`, with delivery marks on the person's replies. */
export function renderMessages(list, session, messages) {
  if (cacheToken !== session.token) {
    cache.clear();
    expanded.clear();
    resetFolds();
    cacheToken = session.token;
  }
  const els = [];
  const seen = new Set();
  // The change set the agent's previous question carried: the same again is said, not shown twice.
  let lastChanges = null;
  for (const [i, m] of messages.entries()) {
    const key = m.seq ?? `${m.at}-${m.role}`;
    seen.add(key);
    const changeKey = m.role === 'assistant' ? changeSetKey(m.changes) : null;
    const sameAsBefore = changeKey !== null && changeKey === lastChanges;
    if (changeKey !== null) lastChanges = changeKey;
    let el = cache.get(key);
    if (!el) {
      el = buildMessage(m, { sameAsBefore, newest: i === messages.length - 1 });
      cache.set(key, el);
    }
    els.push(el);
  }
  for (const key of cache.keys()) if (!seen.has(key)) cache.delete(key);

  // Delivery marks on the person's own (non-automatic) replies, each from its own state.
  const waiting = queuedReplyIds(session, messages);
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i];
    if (m.role !== 'user' || m.auto) continue;
    const mark = els[i].querySelector('.delivery');
    const state = deliveryState(session, waiting, m.replyId);
    if (mark.dataset.state !== state) {
      mark.dataset.state = state;
      mark.textContent = t(state);
    }
  }

  markMergedIn(messages, els);
  const states = questionStates(session, messages);
  for (let i = 0; i < messages.length; i++) {
    if (messages[i].role === 'assistant') markQuestion(els[i], states.get(i));
  }

  // Append only what moved or is new, so the scroll position and images stay put.
  let prev = null;
  for (const el of els) {
    const want = prev ? prev.nextSibling : list.firstChild;
    if (want !== el) list.insertBefore(el, want);
    prev = el;
  }
  while (prev && prev.nextSibling) prev.nextSibling.remove();
  if (!prev) list.replaceChildren();
}

/**
 * Where each agent question of `messages` (oldest first, up to the newest)
 * stands, by index: `answered` (a reply came next; said only of questions
 * with options, whose options it closed), `superseded` (the agent asked again
 * with no reply between), `ended` (the newest, and the agent no longer waits
 * on it). The open question — the newest, while the session waits — has none.
 */
export function questionStates(session, messages) {
  const states = new Map();
  let next = null;
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m.role === 'assistant') {
      const state = next === 'user' ? 'answered' : next === 'assistant' ? 'superseded' : session.status === 'waiting' ? null : 'ended';
      if (state && (state !== 'answered' || (Array.isArray(m.options) && m.options.length))) states.set(i, state);
    }
    if (m.role === 'user' || m.role === 'assistant') next = m.role;
  }
  return states;
}

/** Puts (or takes away) the question's state tag in the message element `el`. */
function markQuestion(el, state) {
  let tag = el.querySelector('.meta .question-state');
  if (!state) {
    tag?.remove();
    return;
  }
  if (!tag) {
    tag = h('span', { class: 'tag question-state', testid: 'question-state' });
    el.querySelector('.meta .delivery').after(tag);
  }
  if (tag.dataset.state !== state) {
    tag.dataset.state = state;
    tag.textContent = t(`question.${state}`);
  }
}

/**
 * The `seq` of the newest agent message shown in `list`: the question a
 * reply typed now answers (`null` when the agent has asked nothing yet).
 */
export function questionOnScreen(list) {
  const asked = list.querySelectorAll('article.msg.assistant');
  const seq = asked.length ? Number(asked[asked.length - 1].dataset.seq) : NaN;
  return Number.isInteger(seq) ? seq : null;
}

/** Drops cached elements (e.g. after a language switch, so labels redraw). */
export function resetMessages() {
  cache.clear();
  cacheToken = null;
}

/** A messenger's name as people write it (`telegram` → Telegram). */
function viaName(via) {
  return via.charAt(0).toUpperCase() + via.slice(1);
}
