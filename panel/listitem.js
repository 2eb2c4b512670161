// listitem.js — one session in the list: title (search words marked), "new"
// mark, status, how long it has waited or when it was last active, queued
// replies, keep-alive mode, progress, and a plain-text preview or the search snippets.

import { t, duration, ago } from './i18n.js';
import { h, withMarks } from './ui.js';
import { plainText } from './markdown.js';
import { keepAliveTag } from './keepalive.js';
import { whereTag } from './machine.js';
import { snippetsView } from './search.js';

/**
 * The list item of session `s`. `view`: `selected`, `isNew`, `q` (the search),
 * `hit` (where it matched: `{snippets, more}`), `title` (the name shown),
 * `onSelect(token, {seq}?)` (`seq`: open at that match).
 */
export function sessionItem(s, view) {
  const waiting = s.status === 'waiting';
  const review = s.lastReview || {};
  const pct = Number.isFinite(review.completionPct) ? Math.max(0, Math.min(100, review.completionPct)) : null;
  const item = h('li', {
    class: `session${waiting ? ' waiting' : ''}${view.selected ? ' selected' : ''}`,
    testid: 'session-item',
    dataset: { token: s.token, status: s.status },
  },
  h('button', { type: 'button', class: 'session-button', onclick: () => view.onSelect(s.token) },
    h('div', { class: 'row' },
      h('span', { class: 'title', testid: 'session-title' }, view.q ? withMarks(view.title, view.q) : view.title),
      view.isNew ? h('span', { class: 'new-mark', testid: 'session-new', title: t('newSince') }, t('newBadge')) : null,
      h('span', { class: `badge status-${s.status}`, testid: 'session-status' }, t(`status.${s.status}`)),
    ),
    h('div', { class: 'row small muted' },
      waiting
        ? h('span', { class: 'waited', testid: 'session-waited', dataset: { since: String(s.waitingSince || s.lastActiveAt || Date.now()) } },
          t('waitingFor', { d: duration(Date.now() - (s.waitingSince || s.lastActiveAt || Date.now())) }))
        : h('span', { class: 'ago', dataset: { at: String(s.lastActiveAt || 0) } }, ago(s.lastActiveAt)),
      s.queuedReplies > 0 ? h('span', { class: 'tag queued', testid: 'session-queued' }, t('queuedN', { n: s.queuedReplies })) : null,
      keepAliveTag(s),
      s.owner?.revoked ? h('span', { class: 'tag revoked', testid: 'session-key-revoked', title: t('keyRevokedNotice', { key: s.owner.key }) }, t('keyRevokedTag', { key: s.owner.key })) : null,
      s.mirror ? h('span', { class: 'tag mirror', testid: 'session-mirror', title: t('mirrorTagTitle', { hub: s.hub || '?' }) }, t('mirrorTag', { hub: s.hub || '?' })) : null,
      whereTag(s),
    ),
    pct !== null || review.nextStep
      ? h('div', { class: 'progress-row', testid: 'session-progress' },
        pct !== null ? h('span', { class: 'progress', role: 'progressbar', 'aria-label': t('progressLabel'), 'aria-valuenow': pct, 'aria-valuemin': 0, 'aria-valuemax': 100 },
          h('span', { class: 'bar', style: `width:${pct}%` })) : null,
        pct !== null ? h('span', { class: 'pct' }, t('progress', { pct })) : null,
        review.nextStep ? h('span', { class: 'next', title: review.nextStep }, t('nextStep', { step: review.nextStep })) : null)
      : null,
    snippetsView(view.hit, view.q, (seq) => view.onSelect(s.token, { seq }))
      || (s.preview ? h('div', { class: 'preview muted small', testid: 'session-preview' }, previewText(s.preview)) : null),
  ));
  return item;
}

const previews = new Map();
/** A list preview as plain text (cached: the list redraws often and holds up to a thousand). */
function previewText(preview) {
  let plain = previews.get(preview);
  if (plain === undefined) {
    if (previews.size > 4000) previews.clear();
    plain = plainText(preview);
    previews.set(preview, plain);
  }
  return plain;
}
