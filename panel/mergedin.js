// mergedin.js — the messages a merge brought in, marked "from “source”": a
// merge appends the source's history, written earlier, after the merge note,
// so their clock times go back; the mark (with the full date) says why.
// Invariant: the mark follows only from the hub's merge note — `Merged from
// “title” (ct_…, workspace @ host): N messages follow.` — and covers exactly
// the N messages after it (by seq).

import { t } from './i18n.js';

const NOTE = /^Merged from “([\s\S]*)” \((ct_[0-9a-f]{32}), [\s\S]*\): (\d+) messages follow\.$/;

/** The merge note `m` as `{source, from, to}` (the seqs it covers), or null. */
export function mergeNote(m) {
  if (m.role !== 'system') return null;
  const found = String(m.content || '').match(NOTE);
  if (!found || !Number.isInteger(m.seq)) return null;
  return { source: found[1], from: m.seq + 1, to: m.seq + Number(found[3]) };
}

/** Marks (and unmarks) the merged-in messages among `messages`, whose elements are `els`. */
export function markMergedIn(messages, els) {
  const notes = messages.map(mergeNote).filter(Boolean);
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i];
    const note = notes.find((n) => m.seq >= n.from && m.seq <= n.to);
    const mark = els[i].querySelector('[data-testid="merged-in"]');
    if (!mark) continue;
    const text = note ? t('mergedFrom', { source: note.source }) : '';
    mark.hidden = !note;
    if (mark.textContent !== text) {
      mark.textContent = text;
      mark.title = note ? t('mergedFromTitle', { source: note.source, when: new Date(m.at || 0).toLocaleString() }) : '';
    }
    els[i].classList.toggle('merged-in', !!note);
  }
}
