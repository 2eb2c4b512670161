// changes.js — the workspace's uncommitted git changes an agent's question carried
// ("Changed files (N)"): each file with its status, path (renamed: old → new), +added −removed
// or "binary", and its part of the unified diff coloured line by line; open on a desktop,
// collapsed on a phone; "cut" said when the bridge sent less than there was.
// Invariant: the diff is shown as text only (never as HTML), each line in the file whose
// `diff --git` header names it; a file the diff does not hold says why instead.

import { h } from './ui.js';
import { t } from './i18n.js';

/** The panel's phone layout (as style.css). */
const PHONE = '(max-width: 720px)';

/** The letter of each status, as `git status --short` shows it. */
const LETTER = { added: 'A', modified: 'M', deleted: 'D', renamed: 'R', copied: 'C', untracked: 'U' };

/** The block showing `changes` under an agent's question (null when it carried none). */
export function workspaceChanges(changes) {
  const files = Array.isArray(changes?.files) ? changes.files.filter((f) => f && typeof f.path === 'string') : [];
  if (!files.length && !changes?.truncated) return null;
  const parts = splitDiff(String(changes.diff || ''));
  const box = h('details', { class: 'ws-changes', testid: 'workspace-changes' },
    h('summary', { class: 'ws-changes-title' }, t('wsChangedFiles', { n: files.length })),
    changes.truncated ? h('p', { class: 'muted small', testid: 'changes-truncated' }, t('wsChangesTruncated')) : null,
    h('ul', { class: 'ws-files' }, files.map((f) => h('li', {}, fileView(f, partOf(parts, f))))));
  box.open = !matchMedia(PHONE).matches;
  return box;
}

/** One file: its line, and (when the diff holds it) its diff behind it. */
function fileView(f, diff) {
  const status = LETTER[f.status] ? f.status : 'other';
  const line = [
    h('span', { class: `ws-status ws-${status}`, title: t(`wsStatus.${status}`) },
      h('span', { 'aria-hidden': 'true' }, LETTER[status] || '?'),
      h('span', { class: 'ws-sr' }, t(`wsStatus.${status}`))),
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
