// notify.js — telling the person a session started waiting: a desktop
// notification and a short sound made with WebAudio (no sound file), behind
// one remembered on/off switch and a remembered choice of sound, set in the
// bell's dialog (with a test); what stands in the way (a page that is not a
// secure context, a blocked permission); and the hub's messenger channels, each
// failing one with the hub's hint of what to fix.

import { api } from './api.js';
import { t } from './i18n.js';
import { $, h, runDialog } from './ui.js';

const KEY = 'holdline.notify';
const SOUND_KEY = 'holdline.sound';
/** The sounds on offer: [frequency, start offset in s] notes, or none. */
export const SOUNDS = {
  chime: [[880, 0], [1318.5, 0.14]],
  bell: [[660, 0], [660, 0.35]],
  soft: [[523.25, 0]],
  none: [],
};
let audio = null;

/** Whether notifications and sound are on (default on). */
export function enabled() {
  try { return localStorage.getItem(KEY) !== 'off'; } catch { return true; }
}

/** Turns them on or off; turning on asks for notification permission. */
export function setEnabled(on) {
  try { localStorage.setItem(KEY, on ? 'on' : 'off'); } catch { /* storage disabled */ }
  if (on) {
    unlockAudio();
    if ('Notification' in window && Notification.permission === 'default') {
      Notification.requestPermission().catch(() => {});
    }
  }
}

/** Browsers only start audio after a user gesture; call this from one. */
export function unlockAudio() {
  try {
    if (!audio) {
      const Ctx = window.AudioContext || window.webkitAudioContext;
      if (!Ctx) return;
      audio = new Ctx();
    }
    if (audio.state === 'suspended') audio.resume().catch(() => {});
  } catch { /* no audio */ }
}

/** The remembered sound (default: chime). */
export function sound() {
  let v = null;
  try { v = localStorage.getItem(SOUND_KEY); } catch { /* storage disabled */ }
  return v && v in SOUNDS ? v : 'chime';
}

export function setSound(name) {
  try { localStorage.setItem(SOUND_KEY, name in SOUNDS ? name : 'chime'); } catch { /* storage disabled */ }
}

/**
 * Why desktop notifications cannot show here, or null: `insecure` (browsers
 * give them only to https pages and localhost), `unsupported`, `denied`.
 */
export function blocker() {
  if (!window.isSecureContext) return 'insecure';
  if (!('Notification' in window)) return 'unsupported';
  if (Notification.permission === 'denied') return 'denied';
  return null;
}

const NOTED_KEY = 'holdline.notify.noted';

/**
 * Why notifications cannot show here, while the person has not yet opened the
 * bell's settings that explain it (the bell's "!"): null once they have, for that reason.
 */
export function unreadBlocker() {
  const why = blocker();
  let noted = null;
  try { noted = localStorage.getItem(NOTED_KEY); } catch { /* storage disabled: the "!" stays */ }
  return why && why !== noted ? why : null;
}

/** The settings were opened: what stands in the way has been read there. */
function noteBlockerRead() {
  const why = blocker();
  try {
    if (why) localStorage.setItem(NOTED_KEY, why);
    else localStorage.removeItem(NOTED_KEY);
  } catch { /* storage disabled */ }
}

/** Plays the chosen sound (or `name`). */
export function chime(name = sound()) {
  const notes = SOUNDS[name] || [];
  if (!notes.length) return;
  if (!audio) unlockAudio();
  if (!audio) return;
  const now = audio.currentTime;
  for (const [freq, offset] of notes) {
    const osc = audio.createOscillator();
    const gain = audio.createGain();
    osc.type = 'sine';
    osc.frequency.value = freq;
    const start = now + offset;
    gain.gain.setValueAtTime(0.0001, start);
    gain.gain.exponentialRampToValueAtTime(0.2, start + 0.02);
    gain.gain.exponentialRampToValueAtTime(0.0001, start + 0.3);
    osc.connect(gain).connect(audio.destination);
    osc.start(start);
    osc.stop(start + 0.32);
  }
}

/**
 * Registers the service worker (secure contexts only): it makes the panel
 * installable and shows notifications where a page may not. `onOpen(token)`
 * when the person clicks one of its notifications.
 */
export function registerWorker(onOpen) {
  if (!window.isSecureContext || !('serviceWorker' in navigator)) return;
  navigator.serviceWorker.register('sw.js').catch(() => { /* the page notifies by itself then */ });
  navigator.serviceWorker.addEventListener('message', (e) => {
    if (e.data && e.data.type === 'open-session' && e.data.token) onOpen(e.data.token);
  });
}

/**
 * Tells the person `title` waits: sound plus a desktop notification. `token`:
 * the session a click opens (`onClick` for the page's own notification).
 * `force`: even when off (the test button).
 */
export function announce(title, body, onClick, { force = false, token = null } = {}) {
  if (!enabled() && !force) return;
  chime();
  if (!('Notification' in window) || Notification.permission !== 'granted') return;
  const options = { body, tag: `holdline-${token || title}`, renotify: true, data: { token } };
  try {
    const n = new Notification(title, options);
    n.onclick = () => { window.focus(); if (onClick) onClick(); n.close(); };
  } catch {
    // Android's Chrome allows notifications only from a service worker.
    navigator.serviceWorker?.ready.then((reg) => reg.showNotification(title, { ...options, icon: 'icon-192.png' })).catch(() => {});
  }
}

let redrawBell = () => {};

/** Wires the bell's settings dialog; `onChange` redraws the bell after a switch. */
export function initNotifySettings(onChange) {
  redrawBell = onChange;
  $('#notify-toggle').addEventListener('click', openNotifySettings);
  $('#notify-enabled').addEventListener('change', (e) => {
    setEnabled(e.target.checked);
    redrawBell();
    drawNotifyNote();
  });
  $('#notify-sound').addEventListener('change', (e) => setSound(e.target.value));
  $('#notify-test').addEventListener('click', async () => {
    unlockAudio();
    if (!blocker() && Notification.permission === 'default') await Notification.requestPermission().catch(() => {});
    announce(t('notifyTestTitle'), t('notifyTestBody'), null, { force: true });
    drawNotifyNote();
  });
}

/** The notification settings: on/off, the sound, a test, and what keeps notifications from showing here. */
function openNotifySettings() {
  $('#notify-enabled').checked = enabled();
  $('#notify-sound').value = sound();
  drawNotifyNote();
  noteBlockerRead();
  redrawBell();
  drawChannels();
  runDialog($('#notify-dialog'));
}

/** The hub's messenger channels (`[notify]` in config.toml) with their state and last error. */
async function drawChannels() {
  const box = $('#notify-channels');
  let channels = [];
  try {
    channels = (await api.healthz()).notify || [];
  } catch {
    channels = [];
  }
  box.hidden = channels.length === 0;
  const list = $('#notify-channel-list');
  list.replaceChildren(...channels.map((c) => {
    const li = document.createElement('li');
    li.dataset.state = c.state;
    li.dataset.testid = 'notify-channel';
    const parts = [`${c.name}: ${t(`channel.${c.state}`)}`, t('channelCounts', { sent: c.sent, failed: c.failed })];
    if (c.lastError) parts.push(t('channelError', { error: c.lastError }));
    li.textContent = parts.join(' · ');
    const hint = channelHint(c.lastErrorHint);
    if (hint) li.append(h('div', { class: 'channel-hint small', testid: 'channel-hint' }, t('channelHint', { hint })));
    return li;
  }));
}

/** The hub's hint for a channel error (`{kind, text}`) in the panel's language (its English text for a kind the panel does not know). */
function channelHint(hint) {
  if (!hint?.kind) return '';
  const key = `hint.${hint.kind}`;
  const words = t(key);
  return words === key ? String(hint.text || '') : words;
}

function drawNotifyNote() {
  const why = blocker();
  const el = $('#notify-note');
  el.hidden = !why;
  el.dataset.reason = why || '';
  el.textContent = why ? t(`blocked.${why}`, { host: location.host }) : '';
}
