// pill.js — on a phone (where the top bar with the waiting count is hidden),
// a conversation's header offers the other sessions that wait for the person:
// "N waiting ›" opens the next in line (as Alt+N does), and "newest ›" — when
// that is another agent — the one that asked last (as Alt+Shift+N does).
// Invariant: neither counts nor opens the session on screen or other hubs'
// copies, so a pill never points back at what the person is reading.

import { $, h } from './ui.js';
import { t } from './i18n.js';

/**
 * Draws the pills: `others` (the sessions waiting besides the one on screen),
 * `next` (the next in line) and `newest` (the one that asked last), with what
 * a tap does (`openNext()`, `openNewest()`).
 */
export function drawWaitingPill({ others, next, newest }, { openNext, openNewest }) {
  const pill = $('#waiting-pill');
  const fresh = $('#newest-pill');
  if (!pill.dataset.wired) {
    pill.addEventListener('click', () => openNext());
    fresh.addEventListener('click', () => openNewest());
    pill.dataset.wired = '1';
  }
  pill.hidden = others === 0;
  const text = t('othersWaiting', { n: others });
  if (pill.textContent !== text) pill.textContent = text;
  pill.setAttribute('aria-label', t('othersWaitingLabel', { n: others }));
  const apart = !!(newest && next && newest.token !== next.token);
  fresh.hidden = !apart;
  const title = apart ? (newest.displayTitle?.trim() || newest.title || newest.token) : '';
  if (fresh.dataset.token !== (apart ? newest.token : '') || fresh.dataset.lang !== t('newestPill')) {
    fresh.dataset.token = apart ? newest.token : '';
    fresh.dataset.lang = t('newestPill');
    // The visible words first, then (for screen readers) whose question it opens.
    fresh.replaceChildren(t('newestPill'), h('span', { class: 'sr-only' }, t('newestPillWho', { title })));
    fresh.title = t('newestPillTitle', { title });
  }
}
