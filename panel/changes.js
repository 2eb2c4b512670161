// changes.js — the workspace's uncommitted git changes an agent's question carried
// ("Changed files (N)"): each file with its status in a word (added, modified, deleted,
// renamed, copied, new), path (renamed: old → new), +added −removed or "binary", and its part
// of the unified diff coloured line by line; open on a desktop and, on a phone, when it is the
// newest; a question carrying the same changes as the agent's previous one says so instead of
// repeating them; "cut" said when the bridge sent less than there was.
// Invariant: the diff is shown as text only (never as HTML), each line in the file whose
// `diff --git` header names it; a file the diff does not hold says why instead.

import { h } from './ui.js';
import { t } from './i18n.js';

/** The panel's phone layout (as style.css). */
const PHONE = '(max-width: 720px)';

/** The statuses the bridge names (anything else shows as "changed"). */
const STATUSES = new Set(['added', 'modified', 'deleted', 'renamed', 'copied', 'untracked']);

/** The files of `changes` a block can show (each with a path). */
function filesOf(changes) {
  return Array.isArray(changes?.files) ? changes.files.filter((f) => f && typeof f.path === 'string') : [];
}

/**
 * What tells one change set from another: each file's status, paths and counts, the
 * diff's length and the cut (null when `changes` shows nothing).
 */
export function changeSetKey(changes) {
  const files = filesOf(changes);
  if (!files.length && !changes?.truncated) return null;
  return JSON.stringify([files.map((f) => [f.path, f.oldPath, f.status, f.added, f.removed, f.binary]),
    String(changes.diff || '').length, !!changes.truncated]);
}

/**
 * The block showing `changes` under an agent's question (null when it carried none).
 * `sameAsBefore`: the agent's previous question carried the very same changes (a line says
 * so instead); `newest`: it is the conversation's newest message (open on a phone too).
 */
export function workspaceChanges(changes, { sameAsBefore = false, newest = false } = {}) {
  const files = filesOf(changes);
  if (!files.length && !changes?.truncated) return null;
  if (sameAsBefore) {
    return h('p', { class: 'ws-changes-same muted small', testid: 'changes-unchanged' },
      t('wsChangesUnchanged', { n: files.length }));
  }
  const parts = splitDiff(String(changes.diff || ''));
  const box = h('details', { class: 'ws-changes', testid: 'workspace-changes' },
    h('summary', { class: 'ws-changes-title' }, t('wsChangedFiles', { n: files.length })),
    changes.truncated ? h('p', { class: 'muted small', testid: 'changes-truncated' }, t('wsChangesTruncated')) : null,
    h('ul', { class: 'ws-files' }, files.map((f) => h('li', {}, fileView(f, partOf(parts, f))))));
  box.open = newest || !matchMedia(PHONE).matches;
  return box;
}

/** One file: its line, and (when the diff holds it) its diff behind it. */
function fileView(f, diff) {
  const status = STATUSES.has(f.status) ? f.status : 'other';
  const line = [
    // A word, not git's letter: "U" (untracked) read as "updated"; the title says it in full.
    h('span', { class: `ws-status ws-${status}`, title: t(`wsStatus.${status}`) }, t(`wsWord.${status}`)),
    h('code', { class: 'ws-path', testid: 'changed-path' }, f.oldPath ? `${f.oldPath} → ${f.path}` : f.path),
    counts(f),
  ];
  if (!diff) {
    const why = f.binary ? null : h('span', { class: 'muted small' }, t('wsNotInDiff'));
    return h('div', { class: 'ws-file', testid: 'changed-file' }, line, why);
  }
  return h('details', { class: 'ws-file', testid: 'changed-file' },
    h('summary', {}, line),
    h('pre', { class: 'ws-diff', testid: 'file-diff', tabindex: '0', 'aria-label': t('wsDiffOf', { path: f.path }) },
      diff.split('\n').map((l) => h('span', { class: lineClass(l) }, `${l}\n`))));
}

/** "+a −r", or "binary". */
function counts(f) {
  if (f.binary) return h('span', { class: 'ws-binary muted small', testid: 'changed-binary' }, t('wsBinary'));
  if (f.added == null && f.removed == null) return null;
  return h('span', { class: 'ws-counts small', testid: 'changed-counts' },
    h('span', { class: 'ws-added' }, `+${f.added ?? 0}`), ' ',
    h('span', { class: 'ws-removed' }, `−${f.removed ?? 0}`));
}

/** The colour of one diff line. */
function lineClass(l) {
  if (l.startsWith('@@')) return 'ws-hunk';
  if (/^(diff --git |index |--- |\+\+\+ |new file|deleted file|similarity|rename |old mode|new mode|Binary files)/.test(l)) return 'ws-meta';
  if (l.startsWith('+')) return 'ws-add';
  if (l.startsWith('-')) return 'ws-del';
  return 'ws-ctx';
}

/** The diff's parts, one per file: `{header, text}` (its `diff --git` line, and all of it). */
export function splitDiff(diff) {
  const parts = [];
  for (const chunk of diff.split(/^(?=diff --git )/m)) {
    if (!chunk.startsWith('diff --git ')) continue;
    const end = chunk.indexOf('\n');
    parts.push({ header: end < 0 ? chunk : chunk.slice(0, end), text: chunk.replace(/\n$/, '') });
  }
  return parts;
}

/** The part of `parts` whose header names file `f` (its new path), else null. */
function partOf(parts, f) {
  return parts.find((p) => p.header.endsWith(` b/${f.path}`))?.text ?? null;
}
