// choices.js — a question's options as buttons under the agent's newest
// message, and what a person picked on their reply ("Chose: Postgres").
// Invariant: buttons show only while that question is open (it is the newest
// message, an agent waits on it, the session is not another hub's, and its
// agent key is not revoked); every other question's options are an inert list
// of what was offered; a pick always names that question
// (`inReplyTo` its seq), so a newer question turns it into 409, never a wrong answer.
// Digit keys 1–9 pick outside text fields and from the reply box while it is
// empty (opening a conversation puts the focus there): a digit after any text is text.

import { h } from './ui.js';
import { t } from './i18n.js';

/**
 * Statuses in which the agent's newest question still waits for the person:
 * only while an agent waits on it (once the wait ended, a pick would be queued
 * for whatever the agent asks next).
 */
const OPEN = new Set(['waiting']);
/** A touch held this long puts the label in the box instead of sending it. */
const LONG_PRESS_MS = 500;

/** `send(indexes, seq)` → a promise of the hub's answer (null when not sent); `edit(text)` puts text in the reply box. */
let actions = { send: async () => null, edit: () => {} };
/** The open question on screen: `{token, seq, multi, count}` (null: none). */
let open = null;
/** The options toggled on in a multi-select question, for `open` only. */
const picked = new Set();
/** A pick is on its way to the hub, or the hub took it: the buttons wait (until the answer shows, for good). */
let sending = false;

/** Sets what a pick does (`send`) and where a label goes to be edited (`edit`); listens for the digit keys. */
export function initChoices({ send, edit }) {
  actions = { send, edit };
  document.addEventListener('keydown', pickByDigit);
}

/** The newest agent message of `messages` when it is an open question with options, else null. */
export function openQuestion(session, messages) {
  if (!OPEN.has(session.status) || session.mirror || session.owner?.revoked) return null;
  const last = messages[messages.length - 1];
  if (!last || last.role !== 'assistant' || !Array.isArray(last.options) || !last.options.length) return null;
  return last;
}

/**
 * Draws the option buttons under the open question of `session` in `list`
 * (the rendered messages) and removes them from anywhere else.
 */
export function drawChoices(list, session, messages) {
  const question = openQuestion(session, messages);
  const article = question ? list.querySelector(`article.msg[data-seq="${question.seq}"]`) : null;
  for (const old of list.querySelectorAll('.choices')) if (old.parentElement !== article) old.remove();
  drawPast(list, messages, question);
  if (!question || !article) {
    open = null;
    picked.clear();
    return;
  }
  const same = open && open.token === session.token && open.seq === question.seq;
  if (!same) {
    picked.clear();
    sending = false;
    article.querySelector('.choices')?.remove();
  }
  open = { token: session.token, seq: question.seq, multi: !!question.multiSelect, count: question.options.length };
  if (!article.querySelector('.choices')) article.append(choiceBar(question));
  drawPicked(article);
}

/** Every question but the open one shows what it offered as a list, inert (no buttons, no keys). */
function drawPast(list, messages, question) {
  for (const m of messages) {
    if (m.role !== 'assistant' || !Array.isArray(m.options) || !m.options.length) continue;
    const el = list.querySelector(`article.msg[data-seq="${m.seq}"]`);
    const past = el?.querySelector('.choices-past');
    if (m === question) past?.remove();
    else if (el && !past) el.append(pastList(m));
  }
}

function pastList(question) {
  return h('ol', { class: 'choices-past', testid: 'choices-past', 'aria-label': t('choicesPastLabel') },
    question.options.map((opt, i) => h('li', { class: 'choice-past' },
      h('span', { class: 'choice-num', 'aria-hidden': 'true' }, i < 9 ? String(i + 1) : ''),
      h('span', { class: 'choice-label' }, opt.label))));
}

function choiceBar(question) {
  const multi = !!question.multiSelect;
  const buttons = question.options.map((opt, i) => optionButton(opt, i, multi));
  return h('div', {
    class: `choices${multi ? ' multi' : ''}`, testid: 'choices', role: 'group',
    'aria-label': multi ? t('choicesMultiLabel') : t('choicesLabel'),
  },
  h('p', { class: 'choices-hint muted small', testid: 'choices-hint' }, hint(multi)),
  h('div', { class: 'choice-list' }, buttons),
  multi ? h('button', { type: 'button', class: 'primary choices-send', testid: 'choices-send', onclick: () => sendPicks() }, t('choicesSend')) : null);
}

/** How to use the buttons: with keys and Alt-click on a computer, with taps and a long press on a touch screen. */
function hint(multi) {
  const touch = matchMedia('(pointer: coarse)').matches;
  if (multi) return touch ? t('choicesMultiHintTouch') : t('choicesMultiHint');
  return touch ? t('choicesHintTouch') : t('choicesHint');
}

function optionButton(opt, i, multi) {
  let held = null;
  let longPressed = false;
  const button = h('button', {
    type: 'button', class: 'choice', testid: 'choice', dataset: { index: String(i) },
    'aria-pressed': multi ? 'false' : null,
    title: t('choiceEditHint'),
    onclick: (e) => {
      if (longPressed) { longPressed = false; return; }
      if (e.altKey) edit(opt.label);
      else choose(i);
    },
    onpointerdown: (e) => {
      if (e.pointerType !== 'touch') return;
      longPressed = false;
      held = setTimeout(() => { longPressed = true; edit(opt.label); }, LONG_PRESS_MS);
    },
    onpointerup: () => clearTimeout(held),
    onpointercancel: () => clearTimeout(held),
    onpointerleave: () => clearTimeout(held),
    oncontextmenu: (e) => { if (longPressed) e.preventDefault(); },
  },
  h('span', { class: 'choice-num', 'aria-hidden': 'true' }, i < 9 ? String(i + 1) : ''),
  h('span', { class: 'choice-text' },
    h('span', { class: 'choice-label' }, opt.label),
    opt.description ? h('span', { class: 'choice-desc' }, opt.description) : null));
  return button;
}

/** Single choice: sends option `i`. Multi-select: toggles it. */
function choose(i) {
  if (!open || sending || i < 0 || i >= open.count) return;
  if (!open.multi) {
    sendIndexes([i]);
    return;
  }
  if (picked.has(i)) picked.delete(i);
  else picked.add(i);
  const article = document.querySelector(`#message-list article.msg[data-seq="${open.seq}"]`);
  if (article) drawPicked(article);
}

function sendPicks() {
  if (!open || !picked.size) return;
  sendIndexes([...picked].sort((a, b) => a - b));
}

/** Sends the options toggled on in the open multi-select question (Enter in the reply box); false when there are none. */
export function sendPicked() {
  if (!open || !open.multi || !picked.size || sending) return false;
  sendPicks();
  return true;
}

async function sendIndexes(indexes) {
  const { token, seq } = open;
  sending = true;
  drawBusy(true);
  let taken = false;
  try {
    taken = !!(await actions.send(indexes, seq));
  } finally {
    // Taken: the question is answered and its buttons leave with the next redraw; no second pick meanwhile.
    const same = open && open.token === token && open.seq === seq;
    if (!taken || !same) {
      sending = false;
      if (same) drawBusy(false);
    }
  }
}

function edit(label) {
  if (!open) return;
  actions.edit(label);
}

function drawPicked(article) {
  for (const b of article.querySelectorAll('.choice')) {
    if (open.multi) b.setAttribute('aria-pressed', String(picked.has(Number(b.dataset.index))));
  }
  const send = article.querySelector('.choices-send');
  if (send) send.disabled = sending || picked.size === 0;
}

function drawBusy(busy) {
  for (const b of document.querySelectorAll('#message-list .choices button')) b.disabled = busy;
  if (!busy && open) {
    const article = document.querySelector(`#message-list article.msg[data-seq="${open.seq}"]`);
    if (article) drawPicked(article);
  }
}

/**
 * Digit keys 1–9 pick (or toggle) an option, unless the person is typing: in
 * the reply box only while it is empty; in any other text field, or with a dialog open, never.
 */
function pickByDigit(e) {
  if (!open || e.altKey || e.ctrlKey || e.metaKey || e.isComposing || e.keyCode === 229) return;
  if (!/^[1-9]$/.test(e.key)) return;
  const el = e.target;
  const emptyBox = el instanceof HTMLTextAreaElement && el.id === 'reply-input' && el.value === '';
  if (!emptyBox && el instanceof HTMLElement && (el.isContentEditable || el.closest('input, textarea, select, dialog[open]'))) return;
  const bar = document.querySelector('#message-list .choices');
  // Not on screen (a phone showing the list) or behind a dialog: the digit is not a pick.
  if (!bar || bar.offsetParent === null || document.querySelector('dialog[open]')) return;
  const i = Number(e.key) - 1;
  if (i >= open.count) return;
  e.preventDefault();
  choose(i);
}

/** The line on a person's reply saying which options it picked (null when it picked none). */
export function pickedNote(choices) {
  if (!Array.isArray(choices) || !choices.length) return null;
  return h('p', { class: 'picked', testid: 'picked' }, t('chose', { labels: choices.map((c) => c.label).join(', ') }));
}
