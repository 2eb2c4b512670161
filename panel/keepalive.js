// keepalive.js — a session's keep-alive mode in words that say what happens, for the header and
// the list: timed reply while no one answers (with the countdown to the next one), the
// continue prompt sent whenever the agent names a next step, paused at the streak limit;
// nothing for a true hold.

import { t, duration, countdown } from './i18n.js';
import { h } from './ui.js';

/** token → when this page turned timed replies on (the hub arms a timer then too). */
const timedSince = new Map();

/** Notes that this page just turned timed replies on (or changed their interval) for `token`. */
export function timedTurnedOn(token) {
  timedSince.set(token, Date.now());
}

/**
 * When the hub sends the next timed reply, as far as the page can tell: the
 * interval after the wait began, or after this page turned timed replies on
 * (the hub arms one timer at each), whichever comes first and is still ahead.
 */
export function timedDue(s, now = Date.now()) {
  if (s.status !== 'waiting' || !s.timedReplyEnabled || !(s.timedReplyIntervalMs > 0)) return null;
  const starts = [s.waitingSince, timedSince.get(s.token)].filter((x) => x && x >= (s.waitingSince || 0));
  const ahead = starts.map((x) => x + s.timedReplyIntervalMs).filter((x) => x > now);
  return ahead.length ? Math.min(...ahead) : 0;
}

function autoPaused(s) {
  return (s.timedReplyEnabled || s.sessionAutoContinue) && s.maxAutoStreak > 0 && s.autoStreak >= s.maxAutoStreak;
}

/** The keep-alive mode in words for the header (null for a true hold). */
export function keepAliveText(s, now = Date.now()) {
  if (autoPaused(s)) return t('keepPaused', { n: s.maxAutoStreak });
  if (s.timedReplyEnabled) {
    const due = timedDue(s, now);
    if (due === null) return t('keepTimedEvery', { every: duration(s.timedReplyIntervalMs) });
    return due ? t('keepTimedIn', { left: countdown(due - now) }) : t('keepTimedDue');
  }
  return s.sessionAutoContinue ? t('keepAuto', { n: s.maxAutoStreak ?? 20 }) : null;
}

/** The short keep-alive tag of a list item (null for a true hold). */
export function keepAliveTag(s) {
  if (!s.timedReplyEnabled && !s.sessionAutoContinue) return null;
  const due = s.timedReplyEnabled ? timedDue(s) : null;
  const text = s.timedReplyEnabled
    ? (due ? t('keepTimedShort', { left: countdown(due - Date.now()) }) : t('keepTimedTag'))
    : t('keepAutoTag');
  return h('span', {
    class: 'tag keepalive', testid: 'session-keepalive', title: keepAliveText(s),
    dataset: due ? { due: String(due) } : {},
  }, text);
}


/** Moves the list's countdowns on (called every second). */
export function tickKeepAlive(now = Date.now()) {
  for (const el of document.querySelectorAll('[data-testid="session-keepalive"][data-due]')) {
    const left = Number(el.dataset.due) - now;
    el.textContent = left > 0 ? t('keepTimedShort', { left: countdown(left) }) : t('keepTimedTag');
  }
}
