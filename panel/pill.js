// pill.js — the "N waiting ›" pill in a conversation's header on a phone
// (where the top bar with the waiting count is hidden): how many OTHER
// sessions wait for the person; a tap opens the one that has waited longest.
// Invariant: the count leaves out the session on screen and other hubs' copies,
// so the pill never points back at what the person is reading.

import { $ } from './ui.js';
import { t } from './i18n.js';

/** Draws the pill from `sessions` (every one known) with `current` on screen; `openNext()` on a tap. */
export function drawWaitingPill(sessions, current, openNext) {
  const pill = $('#waiting-pill');
  if (!pill.dataset.wired) {
    pill.addEventListener('click', () => openNext());
    pill.dataset.wired = '1';
  }
  const n = sessions.filter((s) => s.status === 'waiting' && !s.mirror && s.token !== current).length;
  pill.hidden = n === 0;
  const text = t('othersWaiting', { n });
  if (pill.textContent !== text) pill.textContent = text;
  pill.setAttribute('aria-label', t('othersWaitingLabel', { n }));
}
