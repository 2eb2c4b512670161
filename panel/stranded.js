// stranded.js — a session whose agent key was revoked, under the reply box:
// a reply is held until an agent reconnects with a key of that name, or the
// person hands the session to another key (Settings → Belongs to).
// Invariant: shown exactly when the hub says the owner key is revoked and
// the session is still open; the one rule is `strandedKey`.

import { $, h } from './ui.js';
import { t } from './i18n.js';

const CLOSED = new Set(['merged', 'archived']);

/** The revoked key's name when `session` is stranded by it, else null. */
export function strandedKey(session) {
  if (!session || !session.owner?.revoked || CLOSED.has(session.status) || session.mirror) return null;
  return String(session.owner.key || '');
}

/** Draws the note under the box for `session` (the one on screen). */
export function drawStrandedNote(session) {
  const el = $('#stranded-note');
  const key = strandedKey(session);
  el.hidden = key === null;
  if (key === null) {
    el.replaceChildren();
    return;
  }
  el.replaceChildren(
    h('span', {}, t('strandedNote', { key })),
    ' ',
    h('button', {
      type: 'button', class: 'link', testid: 'stranded-hand-over',
      onclick: () => {
        $('#settings-open').click();
        $('#set-owner').focus();
      },
    }, t('strandedHandOver')),
  );
}
