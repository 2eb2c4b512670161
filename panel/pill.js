// pill.js — on a phone (where the top bar with the waiting count is hidden),
// a conversation's header offers the other sessions that wait for the person:
// "N waiting ›" opens the next in line (as Alt+N does), and "newest ›" — when
// that is another agent — the one that asked last (as Alt+Shift+N does).
// Invariant: N is the panel's one waiting count (the tab title's, the top
// bar's: every session an agent waits on, the one on screen among them; its
// name says how many besides it), shown only while another session waits; a
// pill never opens the session on screen or other hubs' copies.

import { $, h } from './ui.js';
import { t } from './i18n.js';

/**
 * Draws the pills: `waiting` (the panel's waiting count), `others` (those
 * besides the session on screen), `next` (the next in line) and `newest` (the
 * one that asked last), with what a tap does (`openNext()`, `openNewest()`).
 */
export function drawWaitingPill({ waiting, others, next, newest }, { openNext, openNewest }) {
  const pill = $('#waiting-pill');
  const fresh = $('#newest-pill');
  if (!pill.dataset.wired) {
    pill.addEventListener('click', () => openNext());
    fresh.addEventListener('click', () => openNewest());
    pill.dataset.wired = '1';
  }
  pill.hidden = others === 0;
  const text = t('othersWaiting', { n: waiting });
  if (pill.textContent !== text) pill.textContent = text;
  // The name begins with the words shown, then says how many besides this one.
  pill.setAttribute('aria-label', others === waiting
    ? t('othersWaitingLabel', { n: waiting })
    : t('othersWaitingLabelBesides', { n: waiting, others }));
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
