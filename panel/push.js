// push.js — Web Push for this browser, in the bell's settings: "Notify this
// device when an agent waits" subscribes it (the service worker's
// pushManager with the hub's VAPID key, the subscription sent to the hub) or
// unsubscribes it, and says whether this browser is subscribed, whether the
// hub pushes at all (`[notify.webpush]`), and — outside a secure context, or
// without PushManager — why it cannot. The service worker (sw.js) shows the pushes.

import { api } from './api.js';
import { t } from './i18n.js';
import { $, h } from './ui.js';

/** How long subscribing may take before the panel says it failed. */
const SUBSCRIBE_LIMIT_S = 15;

/** Why this browser cannot subscribe, or null: `insecure`, `unsupported`, `denied`. */
export function pushBlocker() {
  if (!window.isSecureContext) return 'insecure';
  if (!('serviceWorker' in navigator) || !('PushManager' in window) || !('Notification' in window)) return 'unsupported';
  if (Notification.permission === 'denied') return 'denied';
  return null;
}

/** base64url → bytes (the VAPID key as `applicationServerKey`). */
function bytesOf(b64) {
  const s = b64.replace(/-/g, '+').replace(/_/g, '/');
  const bin = atob(s + '='.repeat((4 - (s.length % 4)) % 4));
  return Uint8Array.from(bin, (c) => c.charCodeAt(0));
}

function sameKey(buffer, b64) {
  if (!buffer) return false;
  const a = new Uint8Array(buffer);
  const b = bytesOf(b64);
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** The service worker's registration (registering it when needed), within 10 s. */
async function registration() {
  await navigator.serviceWorker.register('sw.js');
  const timeout = new Promise((_, reject) => setTimeout(() => reject(new Error(t('push.noWorker'))), 10000));
  return Promise.race([navigator.serviceWorker.ready, timeout]);
}

/** Subscribes this browser and hands the subscription to the hub. */
export async function subscribe() {
  if (Notification.permission === 'default') await Notification.requestPermission();
  if (Notification.permission !== 'granted') throw new Error(t('push.blocked.denied'));
  const { publicKey } = await api.pushKey();
  const reg = await registration();
  let sub = await reg.pushManager.getSubscription();
  if (sub && !sameKey(sub.options?.applicationServerKey, publicKey)) {
    await sub.unsubscribe();
    sub = null;
  }
  if (!sub) {
    // A browser that cannot reach its push service may never answer (Chromium offline): give up.
    const silent = new Promise((_, reject) => setTimeout(() => reject(new Error(t('push.noAnswer', { s: SUBSCRIBE_LIMIT_S }))), SUBSCRIBE_LIMIT_S * 1000));
    try {
      sub = await Promise.race([
        reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: bytesOf(publicKey) }),
        silent,
      ]);
    } catch (e) {
      throw new Error(t('push.subscribeFailed', { msg: e.message || String(e) }));
    }
  }
  await api.pushSubscribe(sub.toJSON());
}

/** Unsubscribes this browser, at the hub and at the push service. */
export async function unsubscribe() {
  const reg = await registration();
  const sub = await reg.pushManager.getSubscription();
  if (!sub) return;
  await api.pushUnsubscribe(sub.endpoint);
  await sub.unsubscribe().catch(() => {});
}

/** This browser's subscription as the hub knows it: `{hub, subscribed}`. */
async function state() {
  const reg = await registration();
  const sub = await reg.pushManager.getSubscription();
  const hub = await api.pushKey(sub ? sub.endpoint : '');
  return { hub, subscribed: !!(sub && hub.subscribed) };
}

/** The section in the bell's dialog, made once, drawn on every opening. */
function section() {
  let box = $('#push-section');
  if (box) return box;
  box = h('section', { id: 'push-section', testid: 'push-section' },
    h('h4', { text: t('push.title') }),
    h('label', { class: 'radio' },
      h('input', { id: 'push-enabled', type: 'checkbox', testid: 'push-enabled', onchange: toggled }),
      ' ', h('span', { text: t('push.toggle') })),
    h('p', { id: 'push-state', class: 'muted small', testid: 'push-state', role: 'status' }),
    h('p', { id: 'push-error', class: 'notice', testid: 'push-error', role: 'alert', hidden: true }),
    h('button', { id: 'push-test', type: 'button', testid: 'push-test', text: t('push.test'), onclick: tested, hidden: true }));
  const buttons = $('#notify-dialog .buttons');
  buttons.parentNode.insertBefore(box, buttons);
  return box;
}

function showError(msg) {
  const el = $('#push-error');
  el.hidden = !msg;
  el.textContent = msg || '';
}

/** Draws whether this browser is subscribed (or why it cannot be). */
export async function drawPush() {
  section();
  const input = $('#push-enabled');
  const say = $('#push-state');
  const why = pushBlocker();
  showError('');
  input.disabled = !!why;
  $('#push-test').hidden = true;
  if (why) {
    input.checked = false;
    say.dataset.state = why;
    say.textContent = t(`push.blocked.${why}`, { host: location.host });
    return;
  }
  try {
    const { hub, subscribed } = await state();
    input.checked = subscribed;
    say.dataset.state = subscribed ? 'subscribed' : 'off';
    say.textContent = [subscribed ? t('push.on') : t('push.off'), hub.enabled ? '' : t('push.hubOff')].filter(Boolean).join(' ');
    $('#push-test').hidden = !subscribed;
  } catch (e) {
    say.dataset.state = 'error';
    say.textContent = '';
    showError(e.message || String(e));
  }
}

async function toggled(e) {
  const on = e.target.checked;
  e.target.disabled = true;
  try {
    if (on) await subscribe(); else await unsubscribe();
    await drawPush();
  } catch (err) {
    await drawPush();
    showError(err.message || String(err));
  } finally {
    e.target.disabled = !!pushBlocker();
  }
}

async function tested() {
  try {
    const r = await api.pushTest();
    showError(r.sent ? '' : t('push.testFailed', { msg: r.error || '' }));
  } catch (e) {
    showError(e.message || String(e));
  }
}

/** Draws the section whenever the bell's dialog opens. */
export function initPush() {
  $('#notify-toggle').addEventListener('click', () => { drawPush(); });
}
