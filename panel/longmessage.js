// longmessage.js — a long agent message opens with its question in view: the
// body above the question folds away behind "Show the whole message", and the
// files its ```diff blocks change are listed at the top. Invariant: nothing
// of the message is dropped — folding hides the body, it never removes it.

import { h } from './ui.js';
import { t } from './i18n.js';

/** A message longer than this many source lines opens folded. */
export const LONG_LINES = 25;
/** …as does one with a table of more rows than this. */
export const BIG_TABLE_ROWS = 10;
/** The question is looked for in this many blocks from the end. */
const QUESTION_BLOCKS = 3;

/** Messages (by `seq`) the person unfolded, for the session on screen. */
const unfolded = new Set();

/** Forgets what was unfolded (another session is on screen). */
export function resetFolds() {
  unfolded.clear();
}

/** Whether `text` is long enough to open folded: many lines, or a big table. */
export function isLong(text) {
  const lines = String(text ?? '').split('\n');
  if (lines.length > LONG_LINES) return true;
  const tableRows = lines.filter((l) => /^\s*\|.*\|\s*$/.test(l)).length;
  return tableRows > BIG_TABLE_ROWS + 1; // the header's separator row is no row
}

/**
 * The files the ```diff (or ```patch) blocks of `text` change, in order, each
 * once: from `diff --git a/X b/Y` and `+++ b/Y` lines (`--- a/X` when the file
 * was deleted).
 */
export function changedFiles(text) {
  const files = [];
  const add = (name) => { if (name && name !== '/dev/null' && !files.includes(name)) files.push(name); };
  const fences = String(text ?? '').matchAll(/^ {0,3}(`{3,}|~{3,})\s*(?:diff|patch)\b[^\n]*\n([\s\S]*?)^ {0,3}\1/gim);
  for (const [, , body] of fences) {
    let removed = null;
    for (const line of body.split('\n')) {
      const git = line.match(/^diff --git a\/(\S+) b\/(\S+)/);
      if (git) { add(git[2]); continue; }
      const from = line.match(/^--- (?:a\/)?(\S+)/);
      if (from) { removed = from[1]; continue; }
      const to = line.match(/^\+\+\+ (?:b\/)?(\S+)/);
      if (to) add(to[1] === '/dev/null' ? removed : to[1]);
    }
  }
  return files;
}

/** The compact list of the files `text`'s diffs change (null when it has none). */
export function changedFilesList(text) {
  const files = changedFiles(text);
  if (!files.length) return null;
  return h('div', { class: 'changed-files small', testid: 'changed-files' },
    h('span', { class: 'muted' }, t('changedFiles', { n: files.length })),
    h('ul', {}, files.map((f) => h('li', {}, h('code', {}, f)))));
}

/**
 * Folds the rendered agent message `m` in `content` when it is long: a title
 * heading stays, then a "Show the whole message" button, the body (hidden
 * until asked) and the closing blocks — the question — always shown.
 */
export function foldLongMessage(content, m) {
  if (!isLong(m.content)) return;
  const blocks = [...content.children];
  const question = questionBlocks(blocks);
  const title = /^H[1-3]$/.test(blocks[0]?.tagName) && !question.includes(blocks[0]) ? blocks[0] : null;
  const body = blocks.filter((b) => b !== title && !question.includes(b));
  if (!body.length) return;
  const id = `fold-${m.seq}`;
  const holder = h('div', { class: 'fold-body', id, testid: 'fold-body' }, body);
  const lines = String(m.content).split('\n').length;
  const toggle = h('button', { type: 'button', class: 'fold-toggle', testid: 'fold-toggle', 'aria-controls': id });
  const show = (open) => {
    holder.hidden = !open;
    toggle.setAttribute('aria-expanded', String(open));
    toggle.textContent = open ? t('collapseMessage') : t('showWhole', { n: lines });
  };
  toggle.addEventListener('click', () => {
    const open = holder.hidden;
    if (open) unfolded.add(m.seq); else unfolded.delete(m.seq);
    show(open);
  });
  show(unfolded.has(m.seq));
  const ask = h('div', { class: 'fold-question', testid: 'fold-question' }, question);
  content.replaceChildren(...(title ? [title] : []), toggle, holder, ask);
  content.classList.add('folded');
}

/** Unfolds the message `article` (a search hit inside its body must be seen). */
export function unfold(article) {
  const toggle = article?.querySelector('[data-testid="fold-toggle"][aria-expanded="false"]');
  if (toggle) toggle.click();
}

/**
 * The blocks that ask: from the first of the final few blocks that holds a
 * question mark to the end; else the last block.
 */
function questionBlocks(blocks) {
  const tail = blocks.slice(-QUESTION_BLOCKS);
  const asks = tail.map((b) => /[?？]/.test(b.textContent) && !/^(PRE|TABLE|DIV)$/.test(b.tagName));
  const first = asks.indexOf(true);
  if (first >= 0) return tail.slice(first);
  return blocks.slice(-1);
}
