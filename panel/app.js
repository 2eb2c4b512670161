// app.js — the panel's entry point: login, the session list (held still
// under the pointer, new-since-you-looked marks, Alt+N to the next waiting
// session), the open conversation and its actions (settings, rename, merge,
// archive, restore), live updates from SSE with a banner while the hub is
// away, notifications, language and theme switches.

import { api, followEvents } from './api.js';
import { t, lang, setLang, applyStatic, duration, ago, countdown } from './i18n.js';
import { $, h, icon, toast, runDialog, confirmBox, applyTheme, toggleTheme, withMarks, markMatches, clearMarks } from './ui.js';
import { renderMessages, resetMessages } from './conversation.js';
import { plainText } from './markdown.js';
import { showSessionInfo } from './export.js';
import * as composer from './composer.js';
import * as notify from './notify.js';

const CLOSED = new Set(['merged', 'archived']);
const PAGE = 50;
/** Messages fetched when a live event says the open session changed. */
const REFRESH = 10;
/** Phone layout: one pane at a time (matches style.css). */
const PHONE = '(max-width: 720px)';
const SEEN_KEY = 'holdline.seen';
const SEEN_MAX = 2000;

const state = {
  /** 'open' or 'archived': which list is shown. */
  view: 'open',
  q: '',
  /** token → Session as listed (current view and search). */
  listed: new Map(),
  /** token → Session, every one seen (for the waiting count and notifications). */
  known: new Map(),
  /** token of the session on screen. */
  current: null,
  /** The session on screen: Session fields plus messages (oldest first) and nextBefore. */
  detail: null,
  /** token → waitingSince already announced, so one wait chimes once. */
  announced: new Map(),
  stopEvents: null,
  /** Numbers list fetches, so an older answer that arrives late is dropped. */
  listGen: 0,
  /** token → Session from events received while a list fetch was in flight. */
  heardDuringFetch: null,
  /** The selected session keeps the list position it had when picked: `{token, index}`. */
  pin: null,
  /** token → msgCount the person has seen (or found on first sight); more is "new since you looked". */
  seen: loadSeen(),
  /** token → when this page turned timed replies on (the hub counts the interval from then too). */
  timedSince: new Map(),
  /** token → `{q, seq, snippet}` where the search `q` matched (seq null: in the title only). */
  hits: new Map(),
};

function loadSeen() {
  try { return new Map(Object.entries(JSON.parse(localStorage.getItem(SEEN_KEY) || '{}'))); } catch { return new Map(); }
}

let seenTimer = null;
function markSeen(token, msgCount) {
  if (!Number.isFinite(msgCount) || state.seen.get(token) === msgCount) return;
  state.seen.delete(token);
  state.seen.set(token, msgCount);
  while (state.seen.size > SEEN_MAX) state.seen.delete(state.seen.keys().next().value);
  clearTimeout(seenTimer);
  seenTimer = setTimeout(() => {
    try { localStorage.setItem(SEEN_KEY, JSON.stringify(Object.fromEntries(state.seen))); } catch { /* storage full or disabled */ }
  }, 500);
}

function isNew(s) {
  const seen = state.seen.get(s.token);
  return seen !== undefined && s.msgCount > seen && !(s.token === state.current && conversationOnScreen());
}

/** Whether the open conversation is what the person sees (the tab is visible; on a phone, the conversation pane). */
function conversationOnScreen() {
  return document.visibilityState === 'visible' && (!matchMedia(PHONE).matches || document.body.classList.contains('conv-open'));
}

// ---------------------------------------------------------------- login

async function boot() {
  applyTheme();
  applyStatic();
  wireStatic();
  // A panel URL pasted into a tab that already shows the panel only changes the hash.
  window.addEventListener('hashchange', () => { takeKeyFromHash(); });
  if (await takeKeyFromHash()) return;
  try {
    await api.whoami();
    start();
  } catch (e) {
    showLogin(e.status === 401 ? '' : t('loginFailed', { msg: e.message }));
  }
}

/** Signs in with `#key=…` when the address has one; true if it had. */
async function takeKeyFromHash() {
  const m = location.hash.match(/[#&]key=([^&]*)/);
  if (!m) return false;
  // Drop the key from the address bar (and history) before anything else.
  history.replaceState(null, '', location.pathname + location.search);
  let key = m[1];
  try { key = decodeURIComponent(key); } catch { /* use it as it came */ }
  await login(key);
  return true;
}

async function login(key) {
  try {
    await api.login(key);
    start();
  } catch (e) {
    showLogin(e.status === 401 ? t('loginWrong') : e.status === 429 ? t('loginRateLimited') : t('loginFailed', { msg: e.message }));
  }
}

function showLogin(error) {
  if (state.stopEvents) { state.stopEvents(); state.stopEvents = null; }
  $('#app').hidden = true;
  $('#login').hidden = false;
  const err = $('#login-error');
  err.textContent = error || '';
  err.hidden = !error;
  $('#login-key').focus();
  document.title = 'holdline';
}

async function logout() {
  try { await api.logout(); } catch { /* the cookie may already be gone */ }
  state.current = null;
  state.detail = null;
  clearInterval(state.healthTimer);
  showLogin('');
}

// ---------------------------------------------------------------- app

function start() {
  $('#login').hidden = true;
  $('#app').hidden = false;
  drawToolbar();
  const saved = sessionStorage.getItem('holdline.current');
  refreshList().then(() => {
    if (saved && !state.current) select(saved, { quiet: true });
  });
  composer.loadTemplates();
  if (!state.stopEvents) {
    state.stopEvents = followEvents({
      onSession: sessionEvent,
      onState: drawLive,
      onReconnect: () => {
        refreshList();
        if (state.current) loadDetail(state.current, { quiet: true });
        composer.flushPending();
      },
      onUnauthorized: () => showLogin(''),
    });
  }
  $('#attach').replaceChildren(icon('image'));
  clearInterval(state.ticker);
  state.ticker = setInterval(tick, 1000);
  clearInterval(state.healthTimer);
  pollHealth();
  state.healthTimer = setInterval(pollHealth, 5000);
}

let awayTimer = null;
/** The live dot, and the banner once the hub has been away for a moment (a blip shows nothing). */
function drawLive(live) {
  const el = $('#live');
  el.dataset.state = live ? 'on' : 'off';
  el.textContent = live ? t('connected') : t('disconnected');
  clearTimeout(awayTimer);
  if (live) $('#offline-banner').hidden = true;
  else awayTimer = setTimeout(() => { $('#offline-banner').hidden = false; }, 1000);
}

// ---------------------------------------------------------------- sync state

/** Asks `/healthz` for the MongoDB sync state (null when sync is off). */
async function pollHealth() {
  if ($('#app').hidden) return;
  try {
    const res = await api.healthz();
    state.mongo = res && res.mongo ? res.mongo : null;
    state.mongoSeen = true;
  } catch {
    // The hub is unreachable: the live indicator already says so; keep the last state.
  }
  drawSync();
}

function drawSync() {
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

function wireStatic() {
  $('#login-form').addEventListener('submit', (e) => {
    e.preventDefault();
    login($('#login-key').value.trim());
  });
  $('#logout').addEventListener('click', logout);
  const switchLang = () => {
    setLang(lang === 'zh' ? 'en' : 'zh');
    applyStatic();
    resetMessages();
    drawToolbar();
    drawSync();
    drawList();
    composer.relabel();
    if (state.detail) drawDetail();
    if (!$('#login-error').hidden) $('#login-error').hidden = true;
  };
  $('#lang-toggle').addEventListener('click', switchLang);
  $('#login-lang').addEventListener('click', switchLang);
  $('#theme-toggle').addEventListener('click', () => toggleTheme());
  $('#notify-toggle').addEventListener('click', openNotifySettings);
  $('#notify-enabled').addEventListener('change', (e) => {
    notify.setEnabled(e.target.checked);
    drawToolbar();
    drawNotifyNote();
  });
  $('#notify-sound').addEventListener('change', (e) => notify.setSound(e.target.value));
  $('#notify-test').addEventListener('click', async () => {
    notify.unlockAudio();
    if (!notify.blocker() && Notification.permission === 'default') await Notification.requestPermission().catch(() => {});
    notify.announce(t('notifyTestTitle'), t('notifyTestBody'), null, { force: true });
    drawNotifyNote();
  });
  document.addEventListener('pointerdown', () => { if (notify.enabled()) notify.unlockAudio(); }, { once: true });
  let searchTimer = null;
  $('#search').addEventListener('input', (e) => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => { state.q = e.target.value.trim(); refreshList(); }, 250);
  });
  $('#view-open').addEventListener('click', () => setView('open'));
  $('#view-archived').addEventListener('click', () => setView('archived'));
  $('#back').addEventListener('click', () => {
    document.body.classList.remove('conv-open', 'actions-open');
    drawList();
  });
  $('#conv-menu').addEventListener('click', () => {
    const open = document.body.classList.toggle('actions-open');
    $('#conv-menu').setAttribute('aria-expanded', String(open));
  });
  $('#waiting-count').addEventListener('click', nextWaiting);
  document.addEventListener('keydown', (e) => {
    // Alt+N (by key position, so it works whatever Alt+N types on the keyboard layout).
    if (e.altKey && !e.ctrlKey && !e.metaKey && e.code === 'KeyN' && !$('#app').hidden) {
      e.preventDefault();
      nextWaiting();
    }
  });
  document.addEventListener('visibilitychange', () => {
    if (state.current && conversationOnScreen()) markSeen(state.current, state.known.get(state.current)?.msgCount);
  });
  $('#new-below').addEventListener('click', () => {
    const list = $('#messages');
    list.scrollTop = list.scrollHeight;
    state.stick = true;
    $('#new-below').hidden = true;
  });
  $('#load-older').addEventListener('click', loadOlder);
  // Images decode after the scroll to the bottom; keep the newest message in view.
  const messages = $('#messages');
  messages.addEventListener('scroll', () => {
    state.stick = messages.scrollHeight - messages.scrollTop - messages.clientHeight < 80;
    if (state.stick) $('#new-below').hidden = true;
  }, { passive: true });
  messages.addEventListener('load', () => { if (state.stick) messages.scrollTop = messages.scrollHeight; }, true);
  $('#info-open').addEventListener('click', () => { if (state.current) showSessionInfo(state.current); });
  $('#rename').addEventListener('click', rename);
  $('#settings-open').addEventListener('click', editSettings);
  $('#merge-open').addEventListener('click', merge);
  $('#archive').addEventListener('click', archive);
  $('#restore').addEventListener('click', restore);
  // The person's own reply is followed to the bottom, even when they had scrolled up.
  composer.initComposer({ sent: (tok) => { if (tok === state.current) loadDetail(tok, { follow: true }); } });
}

/** The notification settings: on/off, the sound, a test, and what keeps notifications from showing here. */
function openNotifySettings() {
  $('#notify-enabled').checked = notify.enabled();
  $('#notify-sound').value = notify.sound();
  drawNotifyNote();
  runDialog($('#notify-dialog'));
}

function drawNotifyNote() {
  const why = notify.blocker();
  const el = $('#notify-note');
  el.hidden = !why;
  el.dataset.reason = why || '';
  el.textContent = why ? t(`blocked.${why}`, { host: location.host }) : '';
}

function drawToolbar() {
  const on = notify.enabled();
  const bell = $('#notify-toggle');
  bell.replaceChildren(icon(on ? 'bell' : 'bellOff'));
  // Notifications on but the page cannot show them (plain http on the LAN): the bell says so.
  const blocked = on && notify.blocker();
  bell.title = `${on ? t('notifyOn') : t('notifyOff')}${blocked ? ` — ${t(`blocked.${blocked}`, { host: location.host })}` : ''} (${t('notifySettings')})`;
  bell.setAttribute('aria-label', on ? t('notifyOn') : t('notifyOff'));
  bell.dataset.state = on ? 'on' : 'off';
  bell.classList.toggle('blocked', !!blocked);
  $('#lang-toggle').textContent = t('language');
  $('#view-open').setAttribute('aria-selected', String(state.view === 'open'));
  $('#view-archived').setAttribute('aria-selected', String(state.view === 'archived'));
  const live = $('#live');
  live.textContent = live.dataset.state === 'off' ? t('disconnected') : live.dataset.state === 'on' ? t('connected') : '';
}

function setView(view) {
  if (state.view === view) return;
  state.view = view;
  drawToolbar();
  refreshList();
}

function title(s) {
  return (s.displayTitle && s.displayTitle.trim()) || s.title || s.token;
}

// ---------------------------------------------------------------- list

async function refreshList() {
  const view = state.view;
  const q = state.q;
  const gen = ++state.listGen;
  const heard = new Map();
  state.heardDuringFetch = heard;
  try {
    const res = await api.sessions({ status: view === 'archived' ? 'archived' : '', q });
    // Two fetches can cross (the first load and the stream opening): only the newest counts.
    if (gen !== state.listGen || view !== state.view || q !== state.q) return;
    state.listed = new Map(res.sessions.map((s) => [s.token, s]));
    for (const s of res.sessions) remember(s, false);
    // An event heard while the fetch was in flight may be newer than the answer.
    for (const s of heard.values()) {
      remember(s, false);
      if (belongsInView(s) && (!q || state.listed.has(s.token))) state.listed.set(s.token, s);
      else state.listed.delete(s.token);
    }
    state.nextCursor = res.nextCursor || null;
    drawList();
    if (q) findHits();
  } catch (e) {
    if (e.status === 401) showLogin('');
    else if (e.status !== 0) toast(t('errorGeneric', { msg: e.message }), 'error');
  } finally {
    if (gen === state.listGen) state.heardDuringFetch = null;
  }
}

async function loadMoreSessions() {
  const { view, q, nextCursor } = state;
  try {
    const res = await api.sessions({ status: view === 'archived' ? 'archived' : '', q, cursor: nextCursor });
    if (view !== state.view || q !== state.q) return;
    for (const s of res.sessions) { state.listed.set(s.token, s); remember(s, false); }
    state.nextCursor = res.nextCursor || null;
    drawList();
  } catch (e) {
    toast(t('errorGeneric', { msg: e.message }), 'error');
  }
}

/**
 * Keeps `s` in `known`; announces a new wait when `live`. Another hub's
 * session (a mirror) is not announced: it is answered on its own hub's panel.
 */
function remember(s, live) {
  state.known.set(s.token, s);
  const watching = s.token === state.current && conversationOnScreen();
  if (watching || !state.seen.has(s.token)) markSeen(s.token, s.msgCount);
  if (s.status === 'waiting' && !s.mirror) {
    const since = s.waitingSince || s.lastActiveAt;
    // The conversation the person is looking at needs no chime: they see it.
    if (live && !watching && state.announced.get(s.token) !== since) {
      notify.announce(t('notifyTitle', { title: title(s) }), plainText(s.lastReview?.nextStep || s.preview || ''), () => select(s.token));
    }
    state.announced.set(s.token, since);
  } else {
    state.announced.delete(s.token);
  }
}

function belongsInView(s) {
  if (state.view === 'archived') return s.status === 'archived';
  return !CLOSED.has(s.status);
}

function sortSessions(list) {
  return list.sort((a, b) => {
    const aw = a.status === 'waiting';
    const bw = b.status === 'waiting';
    if (aw !== bw) return aw ? -1 : 1;
    if (aw) return (a.waitingSince || 0) - (b.waitingSince || 0);
    return (b.lastActiveAt || 0) - (a.lastActiveAt || 0);
  });
}

/** The list in order, the selected session held where it was when picked (no jump under the pointer). */
function listOrder() {
  const sessions = sortSessions([...state.listed.values()]);
  const pin = state.pin;
  if (pin && pin.token === state.current) {
    const at = sessions.findIndex((s) => s.token === pin.token);
    if (at >= 0 && at !== pin.index) {
      const [held] = sessions.splice(at, 1);
      sessions.splice(Math.min(pin.index, sessions.length), 0, held);
    }
  }
  return sessions;
}

function drawList() {
  const ul = $('#session-list');
  const sessions = listOrder();
  ul.replaceChildren(...sessions.map(sessionItem));
  if (state.nextCursor) {
    ul.append(h('li', { class: 'more' }, h('button', { type: 'button', testid: 'load-more-sessions', onclick: loadMoreSessions }, t('loadMore'))));
  }
  const empty = $('#list-empty');
  empty.hidden = sessions.length > 0;
  empty.textContent = state.q ? t('noMatch') : state.view === 'archived' ? t('noArchived') : t('noSessions');
  drawWaitingCount();
}

/** Asks the hub where the search matched in each listed session (the first few dozen), for snippets and jumps. */
async function findHits() {
  const q = state.q;
  const todo = [...state.listed.keys()].filter((tok) => state.hits.get(tok)?.q !== q).slice(0, 30);
  if (!q || !todo.length) return;
  await Promise.all(todo.map(async (tok) => {
    try {
      const hit = (await api.find(tok, q, 1)).hits[0];
      state.hits.set(tok, hit ? { q, seq: hit.seq, snippet: hit.snippet } : { q, seq: null });
    } catch { /* the result stays listed without a snippet */ }
  }));
  if (state.q === q) drawList();
}

function searchHit(token) {
  const hit = state.hits.get(token);
  return hit && state.q && hit.q === state.q ? hit : null;
}

/** Opens the conversation at the message the search matched, loading older pages as needed, with the words marked. */
async function jumpToHit(token) {
  const hit = searchHit(token);
  if (!hit || hit.seq === null) return;
  const q = hit.q;
  for (let i = 0; i < 40; i++) {
    const d = state.detail;
    if (state.current !== token || !d || !d.messages.length || d.messages[0].seq <= hit.seq || d.nextBefore == null) break;
    await loadOlder();
  }
  const list = $('#message-list');
  const el = list.querySelector(`[data-seq="${hit.seq}"]`);
  if (state.current !== token || !el) return;
  clearMarks(list);
  for (const old of list.querySelectorAll('.msg.hit')) old.classList.remove('hit');
  el.classList.add('hit');
  markMatches(el.querySelector('.content'), q);
  el.scrollIntoView({ block: 'center' });
  state.stick = false;
}

function sessionItem(s) {
  const waiting = s.status === 'waiting';
  const review = s.lastReview || {};
  const pct = Number.isFinite(review.completionPct) ? Math.max(0, Math.min(100, review.completionPct)) : null;
  const item = h('li', {
    class: `session${waiting ? ' waiting' : ''}${s.token === state.current ? ' selected' : ''}`,
    testid: 'session-item',
    dataset: { token: s.token, status: s.status },
  },
  h('button', { type: 'button', class: 'session-button', onclick: () => select(s.token) },
    h('div', { class: 'row' },
      h('span', { class: 'title', testid: 'session-title' }, state.q ? withMarks(title(s), state.q) : title(s)),
      isNew(s) ? h('span', { class: 'new-mark', testid: 'session-new', title: t('newSince') }, t('newBadge')) : null,
      h('span', { class: `badge status-${s.status}`, testid: 'session-status' }, t(`status.${s.status}`)),
    ),
    h('div', { class: 'row small muted' },
      waiting
        ? h('span', { class: 'waited', testid: 'session-waited', dataset: { since: String(s.waitingSince || s.lastActiveAt || Date.now()) } },
          t('waitingFor', { d: duration(Date.now() - (s.waitingSince || s.lastActiveAt || Date.now())) }))
        : h('span', { class: 'ago', dataset: { at: String(s.lastActiveAt || 0) } }, ago(s.lastActiveAt)),
      s.queuedReplies > 0 ? h('span', { class: 'tag queued', testid: 'session-queued' }, t('queuedN', { n: s.queuedReplies })) : null,
      keepAliveTag(s),
      s.mirror ? h('span', { class: 'tag mirror', testid: 'session-mirror', title: t('mirrorTagTitle', { hub: s.hub || '?' }) }, t('mirrorTag', { hub: s.hub || '?' })) : null,
      h('span', { class: 'host' }, s.hostIp || ''),
    ),
    pct !== null || review.nextStep
      ? h('div', { class: 'progress-row', testid: 'session-progress' },
        pct !== null ? h('span', { class: 'progress', role: 'progressbar', 'aria-label': t('progressLabel'), 'aria-valuenow': pct, 'aria-valuemin': 0, 'aria-valuemax': 100 },
          h('span', { class: 'bar', style: `width:${pct}%` })) : null,
        pct !== null ? h('span', { class: 'pct' }, t('progress', { pct })) : null,
        review.nextStep ? h('span', { class: 'next', title: review.nextStep }, t('nextStep', { step: review.nextStep })) : null)
      : null,
    searchHit(s.token)?.snippet
      ? h('div', { class: 'preview snippet small', testid: 'session-snippet' }, withMarks(searchHit(s.token).snippet, state.q))
      : s.preview ? h('div', { class: 'preview muted small', testid: 'session-preview' }, previewText(s.preview)) : null,
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

/**
 * When the hub sends the next timed reply, as far as the page can tell: the
 * interval after the wait began, or after this page turned timed replies on
 * (the hub arms one timer at each), whichever comes first and is still ahead.
 */
function timedDue(s, now = Date.now()) {
  if (s.status !== 'waiting' || !s.timedReplyEnabled || !(s.timedReplyIntervalMs > 0)) return null;
  const starts = [s.waitingSince, state.timedSince.get(s.token)].filter((x) => x && x >= (s.waitingSince || 0));
  const ahead = starts.map((x) => x + s.timedReplyIntervalMs).filter((x) => x > now);
  return ahead.length ? Math.min(...ahead) : 0;
}

function autoPaused(s) {
  return (s.timedReplyEnabled || s.sessionAutoContinue) && s.maxAutoStreak > 0 && s.autoStreak >= s.maxAutoStreak;
}

/** The keep-alive mode in words for the header (null for a true hold). */
function keepAliveText(s, now = Date.now()) {
  if (autoPaused(s)) return t('keepPaused', { n: s.maxAutoStreak });
  if (s.timedReplyEnabled) {
    const due = timedDue(s, now);
    if (due === null) return t('keepTimedEvery', { every: duration(s.timedReplyIntervalMs) });
    return due ? t('keepTimedIn', { left: countdown(due - now) }) : t('keepTimedDue');
  }
  return s.sessionAutoContinue ? t('keepAuto') : null;
}

/** The short keep-alive tag of a list item (null for a true hold). */
function keepAliveTag(s) {
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

/** Opens the longest-waiting session other than the one on screen (Alt+N; then type, Enter, Alt+N …). */
function nextWaiting() {
  const next = sortSessions([...state.known.values()])
    .find((s) => s.status === 'waiting' && !s.mirror && s.token !== state.current && belongsInView(s));
  if (!next) {
    toast(t('noneWaiting'));
    return;
  }
  if (!state.listed.has(next.token) && !state.q) state.listed.set(next.token, next);
  select(next.token);
}

function drawWaitingCount() {
  const n = [...state.known.values()].filter((s) => s.status === 'waiting' && !s.mirror).length;
  document.title = n > 0 ? `(${n}) holdline` : 'holdline';
  const el = $('#waiting-count');
  el.hidden = n === 0;
  el.textContent = String(n);
  el.title = t('nextWaiting');
  el.setAttribute('aria-label', `${n} ${t('status.waiting')} — ${t('nextWaiting')}`);
}

function tick() {
  const now = Date.now();
  for (const el of document.querySelectorAll('[data-testid="session-waited"]')) {
    el.textContent = t('waitingFor', { d: duration(now - Number(el.dataset.since)) });
  }
  for (const el of document.querySelectorAll('[data-testid="session-keepalive"][data-due]')) {
    const left = Number(el.dataset.due) - now;
    el.textContent = left > 0 ? t('keepTimedShort', { left: countdown(left) }) : t('keepTimedTag');
  }
  if (state.detail) drawKeepAlive(state.detail, now);
  if (now % 15000 < 1000) {
    for (const el of document.querySelectorAll('#session-list .ago')) el.textContent = ago(Number(el.dataset.at), now);
  }
}

// ---------------------------------------------------------------- live

let detailTimer = null;

function sessionEvent(s) {
  remember(s, true);
  state.heardDuringFetch?.set(s.token, s);
  if (belongsInView(s) && (!state.q || state.listed.has(s.token))) state.listed.set(s.token, s);
  else state.listed.delete(s.token);
  drawList();
  if (state.q && !state.listed.has(s.token)) {
    // A change may make a session match the search; ask the hub.
    clearTimeout(state.searchTimer);
    state.searchTimer = setTimeout(refreshList, 500);
  }
  if (s.token === state.current) {
    const wasMirror = !!state.detail.mirror;
    Object.assign(state.detail, s);
    drawHeader();
    if (wasMirror !== !!s.mirror) composer.showSession(s.token, CLOSED.has(s.status), !!s.mirror);
    // The reply's delivery is judged on the refreshed detail (its messages and queue in one answer).
    clearTimeout(detailTimer);
    detailTimer = setTimeout(() => loadDetail(s.token), 80);
  }
}

// ---------------------------------------------------------------- conversation

async function select(token, { quiet = false } = {}) {
  const index = [...document.querySelectorAll('#session-list .session')].findIndex((li) => li.dataset.token === token);
  state.pin = index >= 0 ? { token, index } : null;
  state.current = token;
  sessionStorage.setItem('holdline.current', token);
  document.body.classList.add('conv-open');
  document.body.classList.remove('actions-open');
  markSelected(token);
  const ok = await loadDetail(token, { fresh: true, quiet });
  if (ok && state.current === token) {
    drawList();
    if (!matchMedia(PHONE).matches) $('#reply-input').focus();
    await jumpToHit(token);
  }
}

function markSelected(token) {
  for (const li of document.querySelectorAll('#session-list .session')) li.classList.toggle('selected', li.dataset.token === token);
}

function mergeMessages(older, newer) {
  const bySeq = new Map();
  for (const m of older) bySeq.set(m.seq, m);
  for (const m of newer) bySeq.set(m.seq, m);
  return [...bySeq.values()].sort((a, b) => a.seq - b.seq);
}

async function loadDetail(token, { fresh = false, quiet = false, follow = false } = {}) {
  try {
    // A live refresh only needs the newest few messages (a 1 MB one is not sent again and again).
    const had = !fresh && state.detail && state.detail.token === token ? state.detail.messages : null;
    const res = await api.session(token, { limit: had ? REFRESH : PAGE });
    if (state.current !== token) return false;
    const got = res.messages || [];
    const lastSeq = had && had.length ? had[had.length - 1].seq : -1;
    // Keep what is on screen unless the refresh left a gap (more new messages than fetched).
    const keep = had && state.detail && state.detail.token === token && !(got.length && got[0].seq > lastSeq + 1);
    const list = $('#messages');
    const atBottom = follow || !keep || list.scrollHeight - list.scrollTop - list.clientHeight < 80;
    if (had && !keep && got.length === REFRESH) return loadDetail(token, { fresh: true, quiet, follow });
    const messages = keep ? mergeMessages(state.detail.messages, got) : got;
    const nextBefore = keep ? state.detail.nextBefore : res.nextBefore;
    const grew = keep && messages.length && had.length && messages[messages.length - 1].seq > had[had.length - 1].seq;
    state.detail = { ...res, messages, nextBefore };
    state.known.set(token, { ...(state.known.get(token) || {}), ...stripMessages(res) });
    if (conversationOnScreen()) markSeen(token, res.msgCount);
    drawDetail();
    composer.sessionChanged(state.detail);
    if (atBottom) {
      list.scrollTop = list.scrollHeight;
      state.stick = true;
      $('#new-below').hidden = true;
    } else if (grew) {
      // Reading further up: say there is more below instead of pulling the page away.
      $('#new-below').hidden = false;
    }
    if (!keep) $('#new-below').hidden = true;
    return true;
  } catch (e) {
    if (e.status === 401) { showLogin(''); return false; }
    if (e.status === 0 || e.status >= 502) {
      // The hub is away: keep what is on screen (and selected) as it was; the reconnect refreshes it.
      const shown = state.detail && !$('#conv-body').hidden ? state.detail.token : null;
      if (state.current === token && shown !== token) {
        state.current = shown;
        state.pin = null;
        if (shown) sessionStorage.setItem('holdline.current', shown);
        else document.body.classList.remove('conv-open');
        markSelected(shown);
        toast(t('hubAwayToast'));
      }
      return false;
    }
    if (state.current === token) {
      state.current = null;
      sessionStorage.removeItem('holdline.current');
      document.body.classList.remove('conv-open');
      $('#conv-body').hidden = true;
      $('#conv-empty').hidden = false;
    }
    if (!quiet) toast(t('errorGeneric', { msg: e.message }), 'error');
    return false;
  }
}

function stripMessages(res) {
  const { messages, nextBefore, ...meta } = res;
  void messages; void nextBefore;
  return meta;
}

async function loadOlder() {
  const d = state.detail;
  if (!d || d.nextBefore === null || d.nextBefore === undefined) return;
  const token = d.token;
  const btn = $('#load-older');
  btn.disabled = true;
  try {
    const res = await api.session(token, { before: d.nextBefore, limit: PAGE });
    if (state.current !== token) return;
    const list = $('#messages');
    const fromBottom = list.scrollHeight - list.scrollTop;
    d.messages = mergeMessages(res.messages || [], d.messages);
    d.nextBefore = res.nextBefore;
    drawDetail();
    list.scrollTop = list.scrollHeight - fromBottom;
  } catch (e) {
    toast(t('errorGeneric', { msg: e.message }), 'error');
  } finally {
    btn.disabled = false;
  }
}

function drawHeader() {
  const d = state.detail;
  $('#conv-title').textContent = title(d);
  $('#conv-title').title = `${t('token')}: ${d.token}\n${t('workspace')}: ${d.workspace || ''}\n${t('host')}: ${d.hostIp || ''}`;
  const badge = $('#conv-status');
  badge.className = `badge status-${d.status}`;
  badge.textContent = t(`status.${d.status}`);
  badge.dataset.status = d.status;
  const r = d.lastReview || {};
  const bits = [];
  if (Number.isFinite(r.completionPct)) bits.push(t('progress', { pct: r.completionPct }));
  if (r.nextStep) bits.push(t('nextStep', { step: r.nextStep }));
  if (d.queuedReplies > 0) bits.push(t('queuedN', { n: d.queuedReplies }));
  $('#conv-progress').textContent = bits.join(' · ');
  drawKeepAlive(d);
  const closed = CLOSED.has(d.status);
  // A mirror is another hub's session seen through MongoDB: this hub answers 403 to any change.
  const mirror = !!d.mirror;
  $('#archive').hidden = closed;
  $('#archive').disabled = mirror;
  $('#restore').hidden = d.status !== 'archived';
  $('#restore').disabled = mirror;
  $('#merge-open').hidden = closed;
  $('#merge-open').disabled = mirror;
  $('#settings-open').disabled = closed || mirror;
  $('#rename').disabled = d.status === 'merged' || mirror;
  drawMirrorNotice(d);
}

function drawKeepAlive(d, now = Date.now()) {
  const el = $('#conv-keepalive');
  const text = CLOSED.has(d.status) ? null : keepAliveText(d, now);
  el.hidden = !text;
  if (text && el.textContent !== text) el.textContent = text;
}

/** The notice over a mirror's messages, linking to the hub that owns it. */
function drawMirrorNotice(d) {
  const el = $('#mirror-notice');
  if (!d.mirror) {
    el.hidden = true;
    el.replaceChildren();
    return;
  }
  const hub = String(d.hub || '?');
  const text = t('mirrorNotice', { hub: '\u0000' });
  const [pre, post] = text.split('\u0000');
  let link = null;
  try {
    const url = new URL(`http://${hub}/`);
    if (url.host && !url.pathname.replace('/', '') && !url.search && !url.hash) link = url.href;
  } catch { /* not a host:port: show it as text */ }
  el.replaceChildren(
    pre,
    link ? h('a', { href: link, target: '_blank', rel: 'noopener noreferrer', testid: 'mirror-link' }, hub) : hub,
    post ?? '',
  );
  el.hidden = false;
}

function drawDetail() {
  const d = state.detail;
  $('#conv-empty').hidden = true;
  $('#conv-body').hidden = false;
  drawHeader();
  $('#load-older').hidden = d.nextBefore === null || d.nextBefore === undefined;
  renderMessages($('#message-list'), d, d.messages);
  composer.showSession(d.token, CLOSED.has(d.status), !!d.mirror);
}

// ---------------------------------------------------------------- actions

function applySession(s) {
  if (!s || !s.token) return;
  remember(s, false);
  if (belongsInView(s)) state.listed.set(s.token, s);
  else state.listed.delete(s.token);
  drawList();
  if (s.token === state.current) {
    Object.assign(state.detail, s);
    drawDetail();
  }
}

async function rename() {
  const d = state.detail;
  const dialog = $('#rename-dialog');
  $('#rename-input').value = d.displayTitle || '';
  if ((await runDialog(dialog)) !== 'ok') return;
  try {
    applySession(await api.config(d.token, { displayTitle: $('#rename-input').value.trim() }));
    toast(t('saved'));
  } catch (e) {
    toast(t('saveFailed', { msg: e.message }), 'error');
  }
}

async function editSettings() {
  const d = state.detail;
  const dialog = $('#settings-dialog');
  const mode = d.timedReplyEnabled ? 'timed' : d.sessionAutoContinue ? 'auto' : 'hold';
  for (const r of dialog.querySelectorAll('input[name=mode]')) r.checked = r.value === mode;
  $('#set-interval').value = d.timedReplyIntervalMs ? Math.round(d.timedReplyIntervalMs / 1000) : 300;
  $('#set-prompt').value = d.continuePrompt || '';
  $('#set-mode').value = d.continueMode || '';
  $('#set-streak').value = d.maxAutoStreak ?? 20;
  $('#settings-info').textContent = `${t('token')}: ${d.token} · ${t('workspace')}: ${d.workspace || ''} · ${t('host')}: ${d.hostIp || ''}`;
  if ((await runDialog(dialog)) !== 'ok') return;
  const chosen = dialog.querySelector('input[name=mode]:checked')?.value || 'hold';
  const fields = {
    timedReplyEnabled: chosen === 'timed',
    sessionAutoContinue: chosen === 'auto',
    timedReplyIntervalMs: Math.max(1, Math.round(Number($('#set-interval').value) || 300)) * 1000,
    continueMode: $('#set-mode').value.trim() || d.continueMode || 'optimize',
    maxAutoStreak: Math.max(0, Math.round(Number($('#set-streak').value) || 0)),
  };
  // The hub refuses an empty continue prompt: leave it as it is then.
  if ($('#set-prompt').value.trim()) fields.continuePrompt = $('#set-prompt').value;
  try {
    const armed = fields.timedReplyEnabled && (!d.timedReplyEnabled || fields.timedReplyIntervalMs !== d.timedReplyIntervalMs);
    const s = await api.config(d.token, fields);
    if (armed) state.timedSince.set(d.token, Date.now());
    applySession(s);
    toast(t('saved'));
  } catch (e) {
    toast(t('saveFailed', { msg: e.message }), 'error');
  }
}

async function merge() {
  const d = state.detail;
  let open;
  try {
    open = (await api.sessions({ limit: 200 })).sessions.filter((s) => s.token !== d.token && !CLOSED.has(s.status));
  } catch (e) {
    toast(t('errorGeneric', { msg: e.message }), 'error');
    return;
  }
  if (!open.length) {
    toast(t('mergeNoTarget'));
    return;
  }
  const picker = $('#merge-target');
  const options = open.map((s) => h('option', { value: s.token }, `${title(s)} — ${s.workspace || ''} @ ${s.hostIp || ''}`));
  picker.replaceChildren(...options);
  picker.value = open[0].token;
  // Typing narrows the list (title, workspace, host, token) and picks the first that is left.
  const filter = $('#merge-filter');
  filter.value = '';
  filter.oninput = () => {
    const q = filter.value.trim().toLowerCase();
    let first = null;
    for (const [i, s] of open.entries()) {
      const hit = !q || [title(s), s.workspace, s.hostIp, s.token].some((f) => String(f || '').toLowerCase().includes(q));
      options[i].hidden = !hit;
      options[i].disabled = !hit;
      if (hit && !first) first = s.token;
    }
    if (first && picker.selectedOptions[0]?.hidden !== false) picker.value = first;
    if (!first) picker.value = '';
  };
  filter.onkeydown = (e) => { if (e.key === 'Enter') { e.preventDefault(); $('[data-testid="merge-confirm"]').click(); } };
  $('#merge-hint').textContent = t('mergeHint', { from: title(d) });
  if ((await runDialog($('#merge-dialog'))) !== 'ok') return;
  const target = open.find((s) => s.token === picker.value);
  if (!target) return;
  if (!(await confirmBox(t('mergeConfirm', { from: title(d), to: title(target) }), t('merge')))) return;
  try {
    const merged = await api.merge(d.token, target.token);
    toast(t('merged', { to: title(target) }));
    await refreshList();
    await select(merged?.token || target.token);
  } catch (e) {
    toast(t('errorGeneric', { msg: `${e.code}: ${e.message}` }), 'error');
  }
}

async function archive() {
  const d = state.detail;
  if (!(await confirmBox(t('archiveConfirm', { title: title(d) }), t('archive')))) return;
  try {
    applySession(await api.archive(d.token));
  } catch (e) {
    toast(t('errorGeneric', { msg: e.message }), 'error');
  }
}

async function restore() {
  const d = state.detail;
  if (!(await confirmBox(t('restoreConfirm', { title: title(d) }), t('restore')))) return;
  try {
    applySession(await api.restore(d.token));
  } catch (e) {
    toast(t('errorGeneric', { msg: e.message }), 'error');
  }
}

boot();
