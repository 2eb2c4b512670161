// syncbadge.js — the MongoDB sync badge beside the live dot: asks /healthz
// every few seconds and shows ok, behind (with how far), connecting or down;
// hidden when the hub has no sync.

import { api } from './api.js';
import { t } from './i18n.js';
import { $ } from './ui.js';

const state = { mongo: null, timer: null };

/** Starts (or restarts) asking the hub for its sync state. */
export function startSyncBadge() {
  stopSyncBadge();
  pollHealth();
  state.timer = setInterval(pollHealth, 5000);
}

export function stopSyncBadge() {
  clearInterval(state.timer);
}

/** Asks `/healthz` for the MongoDB sync state (null when sync is off). */
async function pollHealth() {
  if ($('#app').hidden) return;
  try {
    const res = await api.healthz();
    state.mongo = res && res.mongo ? res.mongo : null;
  } catch {
    // The hub is unreachable: the live indicator already says so; keep the last state.
  }
  drawSync();
}

export function drawSync() {
  const el = $('#sync');
  const m = state.mongo;
  if (!m) {
    el.hidden = true;
    el.textContent = '';
    el.removeAttribute('title');
    return;
  }
  const pending = Math.max(0, Number(m.pending) || 0);
  const secs = Math.max(0, Math.round((Number(m.lagMs) || 0) / 1000));
  let view;
  if (pending > 0) view = 'behind';
  else if (m.state === 'ok') view = 'ok';
  else view = m.state === 'connecting' ? 'connecting' : 'down';
  el.hidden = false;
  el.dataset.state = view;
  el.dataset.mongo = String(m.state || '');
  el.textContent = view === 'ok' ? t('syncOk')
    : view === 'behind' ? t('syncBehind', { n: pending, s: secs })
      : view === 'connecting' ? t('syncConnecting') : t('syncDown');
  const tip = [t('syncTitle', { state: m.state || '?', n: pending })];
  if (m.lastError) tip.push(String(m.lastError));
  el.title = tip.join('\n');
}
