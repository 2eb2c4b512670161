// app.js — the panel's entry point: login, the session list (held still
// under the pointer, new-since-you-looked marks, a card that starts waiting
// brought into view; Alt+N walks the waiting line, Alt+Shift+N opens the agent
// that asked last; on a desktop the longest-waiting one opens first), the open
// conversation and its actions (settings, rename, merge, archive, restore),
// search (the waiting sessions kept above the results), live updates from
// SSE with a banner while the hub is away, notifications, language and theme switches.

import { api, followEvents } from './api.js';
import { t, lang, setLang, applyStatic, duration, ago } from './i18n.js';
import { $, h, icon, toast, applyTheme, toggleTheme, markMatches, clearMarks } from './ui.js';
import { renderMessages, resetMessages } from './conversation.js';
import { plainText } from './markdown.js';
import { showSessionInfo } from './export.js';
import { startSyncBadge, stopSyncBadge, drawSync } from './syncbadge.js';
import { keepAliveText, tickKeepAlive } from './keepalive.js';
import { sessionItem } from './listitem.js';
import { markSeen, seenCount } from './seen.js';
import { initActions } from './actions.js';
import * as composer from './composer.js';
import * as notify from './notify.js';
import { initPush } from './push.js';
import { initKeys } from './keys.js';
import { initChoices, drawChoices, openQuestion } from './choices.js';
import { initSkipLinks } from './skiplinks.js';
import { whereTag, onChosenMachine, drawMachineFilter } from './machine.js';
import { drawWaitingPill } from './pill.js';
import { drawStrandedNote } from './stranded.js';
import { searchHit as hitOf, searchGroups, HIT_LIMIT } from './search.js';
import { unfold } from './longmessage.js';

const CLOSED = new Set(['merged', 'archived']);
const PAGE = 50;
/** Messages fetched when a live event says the open session changed. */
const REFRESH = 10;
/** Phone layout: one pane at a time (matches style.css). */
const PHONE = '(max-width: 720px)';

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
  /** token → `{q, seq, snippets, more}` where the search `q` matched (seq null: in the title only). */
  hits: new Map(),
  /** The panel was opened with no session to reopen: the first list opens the longest-waiting one. */
  openFirst: false,
  /** The pointer is over the list: it holds still (a card that starts waiting is not scrolled to). */
  pointerOnList: false,
};

function isNew(s) {
  const seen = seenCount(s.token);
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
  window.addEventListener('hashchange', async () => {
    if (await takeKeyFromHash()) return;
    const linked = $('#app').hidden ? null : takeSessionFromHash();
    if (linked) select(linked);
  });
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

/** The session a link names (`#session=ct_…`, as in the hub's notifications), taken out of the address. */
function takeSessionFromHash() {
  const m = location.hash.match(/[#&]session=(ct_[0-9a-f]{32})\b/);
  if (!m) return null;
  history.replaceState(null, '', location.pathname + location.search);
  return m[1];
}

async function login(key) {
  try {
    await api.login(key);
    start();
  } catch (e) {
    showLogin(e.status === 401 ? t('loginWrong') : e.status === 429 ? t('loginRateLimited') : t('loginFailed', { msg: e.message }));
  }
}

/** Takes the start-up placeholder away once the page shows the login or the app. */
function booted() {
  document.getElementById('booting')?.remove();
}

function showLogin(error) {
  if (state.stopEvents) { state.stopEvents(); state.stopEvents = null; }
  booted();
  $('#app').hidden = true;
  $('#login').hidden = false;
  const err = $('#login-error');
  err.textContent = error || '';
  err.hidden = !error;
  $('#login-key').focus();
  document.title = 'holdline';
}

async function logout(everywhere = false) {
  try {
    await (everywhere ? api.logoutEverywhere() : api.logout());
  } catch { /* the cookie may already be gone */ }
  state.current = null;
  state.detail = null;
  stopSyncBadge();
  showLogin('');
}

// ---------------------------------------------------------------- app

function start() {
  booted();
  $('#login').hidden = true;
  $('#app').hidden = false;
  drawToolbar();
  const linked = takeSessionFromHash();
  const saved = linked || sessionStorage.getItem('holdline.current');
  // Nothing to reopen: the first list that arrives opens the longest-waiting session.
  state.openFirst = !saved;
  refreshList().then(() => {
    if (saved && (linked || !state.current)) select(saved, { quiet: !linked });
  });
  composer.loadTemplates();
  composer.loadLimits();
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
  startSyncBadge();
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

function wireStatic() {
  $('#login-form').addEventListener('submit', (e) => {
    e.preventDefault();
    login($('#login-key').value.trim());
  });
  $('#logout').addEventListener('click', () => logout());
  $('#logout-everywhere').addEventListener('click', () => logout(true));
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
  notify.initNotifySettings(drawToolbar);
  initPush();
  initKeys();
  notify.registerWorker((token) => select(token));
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
  initSkipLinks();
  // On a phone the title and the progress line are cut to fit; a tap shows each whole (style.css).
  $('#conv-progress').addEventListener('click', (e) => e.currentTarget.classList.toggle('whole'));
  $('#conv-title').addEventListener('click', (e) => e.currentTarget.classList.toggle('whole'));
  $('#session-list').addEventListener('pointerenter', () => { state.pointerOnList = true; });
  $('#session-list').addEventListener('pointerleave', () => { state.pointerOnList = false; });
  document.addEventListener('keydown', (e) => {
    // Alt+N (by key position, so it works whatever Alt+N types on the keyboard layout).
    if (e.altKey && !e.ctrlKey && !e.metaKey && e.code === 'KeyN' && !$('#app').hidden) {
      e.preventDefault();
      if (e.shiftKey) newestWaiting();
      else nextWaiting();
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
  initActions({ detail: () => state.detail, applySession, select, refreshList, title });
  // The person's own reply is followed to the bottom, even when they had scrolled up.
  composer.initComposer({ sent: (tok) => { if (tok === state.current) loadDetail(tok, { follow: true }); } });
  initChoices({ send: composer.sendChoices, edit: composer.putInBox });
}

function drawToolbar() {
  const on = notify.enabled();
  const bell = $('#notify-toggle');
  bell.replaceChildren(icon(on ? 'bell' : 'bellOff'));
  $('#keys-open').replaceChildren(icon('key'));
  // Notifications on but the page cannot show them (plain http on the LAN): the bell's title
  // says so, and its "!" until the person has opened the settings that explain it.
  const blocked = on && notify.blocker();
  bell.title = `${on ? t('notifyOn') : t('notifyOff')}${blocked ? ` — ${t(`blocked.${blocked}`, { host: location.host })}` : ''} (${t('notifySettings')})`;
  bell.setAttribute('aria-label', on ? t('notifyOn') : t('notifyOff'));
  bell.dataset.state = on ? 'on' : 'off';
  bell.classList.toggle('blocked', !!(on && notify.unreadBlocker()));
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
    if (state.openFirst) {
      state.openFirst = false;
      if (!state.current) openLongestWaiting();
    }
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
  if (watching || seenCount(s.token) === undefined) markSeen(s.token, s.msgCount);
  if (s.status === 'waiting' && !s.mirror) {
    const since = s.waitingSince || s.lastActiveAt;
    // The conversation the person is looking at needs no chime: they see it.
    if (live && !watching && state.announced.get(s.token) !== since) {
      notify.announce(t('notifyTitle', { title: title(s) }), plainText(s.lastReview?.nextStep || s.preview || ''), () => select(s.token), { token: s.token });
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
  const listed = listOrder();
  drawMachineFilter($('#machine-filter'), listed, drawList);
  const sessions = onChosenMachine(listed);
  const draw = (s) => sessionItem(s, {
    selected: s.token === state.current, isNew: isNew(s), q: state.q, hit: searchHit(s.token), title: title(s), onSelect: select,
  });
  // While searching, the agents that wait stay in view above the results.
  const waiting = state.q
    ? onChosenMachine(sortSessions([...state.known.values()].filter((s) => s.status === 'waiting' && !s.mirror && belongsInView(s) && !state.listed.has(s.token))))
    : [];
  ul.replaceChildren(...searchGroups(waiting, sessions, draw));
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
      state.hits.set(tok, hitOf(q, (await api.find(tok, q, HIT_LIMIT)).hits));
    } catch { /* the result stays listed without a snippet */ }
  }));
  if (state.q === q) drawList();
}

function searchHit(token) {
  const hit = state.hits.get(token);
  return hit && state.q && hit.q === state.q ? hit : null;
}

/**
 * Opens the conversation at a message the search matched (`seq`, else the
 * newest match), loading older pages as needed, with the words marked.
 */
async function jumpToHit(token, seq = null) {
  const hit = searchHit(token);
  const at = seq ?? hit?.seq ?? null;
  if (!hit || at === null) return;
  const q = hit.q;
  for (let i = 0; i < 40; i++) {
    const d = state.detail;
    if (state.current !== token || !d || !d.messages.length || d.messages[0].seq <= at || d.nextBefore == null) break;
    await loadOlder();
  }
  const list = $('#message-list');
  const el = list.querySelector(`[data-seq="${at}"]`);
  if (state.current !== token || !el) return;
  clearMarks(list);
  for (const old of list.querySelectorAll('.msg.hit')) old.classList.remove('hit');
  el.classList.add('hit');
  unfold(el);
  markMatches(el.querySelector('.content'), q);
  el.scrollIntoView({ block: 'center' });
  state.stick = false;
}

/** The waiting line: every session an agent waits on (not other hubs' copies), longest-waiting first, whichever list is shown. */
function waitingLine() {
  return sortSessions([...state.known.values()].filter((s) => s.status === 'waiting' && !s.mirror));
}

/** The next in `line` after the session on screen (its start when that is not in line); null when nobody else waits. */
function nextInLine(line) {
  const at = line.findIndex((s) => s.token === state.current);
  const next = line.length ? line[(at + 1) % line.length] : null;
  return next && next.token !== state.current ? next : null;
}

/** The agent in `line` that asked last, other than the one on screen. */
function newestInLine(line) {
  const others = line.filter((s) => s.token !== state.current);
  return others.length ? others[others.length - 1] : null;
}

function openWaiting(s) {
  if (!s) {
    toast(t('noneWaiting'));
    return;
  }
  if (!state.listed.has(s.token) && !state.q && belongsInView(s)) state.listed.set(s.token, s);
  select(s.token);
}

/** Alt+N: the next waiting session in line, walking the whole line and round again (type, Enter, Alt+N …). */
function nextWaiting() {
  openWaiting(nextInLine(waitingLine()));
}

/** Alt+Shift+N (and the phone's "newest ›"): the agent that asked last. */
function newestWaiting() {
  openWaiting(newestInLine(waitingLine()));
}

/** Session `token`'s card comes into the list's view — unless the pointer is on the list, which holds still. */
function bringIntoView(token) {
  if (state.pointerOnList) return;
  document.querySelector(`#session-list [data-token="${token}"]`)?.scrollIntoView({ block: 'nearest' });
}

/** On a desktop with nothing open yet, the conversation of the agent that has waited longest (a phone keeps the list). */
function openLongestWaiting() {
  if (matchMedia(PHONE).matches) return;
  const first = sortSessions([...state.known.values()]).find((s) => s.status === 'waiting' && !s.mirror && belongsInView(s));
  if (first) select(first.token, { quiet: true });
}

/**
 * The panel's one waiting count — every session an agent waits on (not other
 * hubs' copies), the one on screen among them — said the same way in the tab
 * title, the top bar and the phone's pill.
 */
function drawWaitingCount() {
  const line = waitingLine();
  const n = line.length;
  document.title = n > 0 ? `(${n}) holdline` : 'holdline';
  const el = $('#waiting-count');
  el.hidden = n === 0;
  el.textContent = String(n);
  el.title = t('nextWaiting');
  el.setAttribute('aria-label', `${n} ${t('status.waiting')} — ${t('nextWaiting')}`);
  drawWaitingPill(
    { waiting: n, others: line.filter((s) => s.token !== state.current).length, next: nextInLine(line), newest: newestInLine(line) },
    { openNext: nextWaiting, openNewest: newestWaiting },
  );
}

function tick() {
  const now = Date.now();
  for (const el of document.querySelectorAll('[data-testid="session-waited"]')) {
    el.textContent = t('waitingFor', { d: duration(now - Number(el.dataset.since)) });
  }
  tickKeepAlive(now);
  if (state.detail) drawKeepAlive(state.detail, now);
  if (now % 15000 < 1000) {
    for (const el of document.querySelectorAll('#session-list .ago')) el.textContent = ago(Number(el.dataset.at), now);
  }
}

// ---------------------------------------------------------------- live

let detailTimer = null;

function sessionEvent(s) {
  const was = state.known.get(s.token);
  const started = s.status === 'waiting' && !s.mirror && (was?.status !== 'waiting' || was?.waitingSince !== s.waitingSince);
  remember(s, true);
  state.heardDuringFetch?.set(s.token, s);
  if (belongsInView(s) && (!state.q || state.listed.has(s.token))) state.listed.set(s.token, s);
  else state.listed.delete(s.token);
  drawList();
  if (started && s.token !== state.current) bringIntoView(s.token);
  if (state.q && !state.listed.has(s.token)) {
    // A change may make a session match the search; ask the hub.
    clearTimeout(state.searchTimer);
    state.searchTimer = setTimeout(refreshList, 500);
  }
  if (s.token === state.current) {
    const wasMirror = !!state.detail.mirror;
    const wasClosed = CLOSED.has(state.detail.status);
    Object.assign(state.detail, s);
    drawHeader();
    // Closed or reopened (archive, merge, restore from anywhere): the reply box follows at once.
    if (wasMirror !== !!s.mirror || wasClosed !== CLOSED.has(s.status)) composer.showSession(s.token, CLOSED.has(s.status), !!s.mirror);
    // The reply's delivery is judged on the refreshed detail (its messages and queue in one answer).
    clearTimeout(detailTimer);
    detailTimer = setTimeout(() => loadDetail(s.token), 80);
  }
}

// ---------------------------------------------------------------- conversation

async function select(token, { quiet = false, seq = null } = {}) {
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
    // Opened by a key or a notification: the list shows where it is.
    bringIntoView(token);
    if (!matchMedia(PHONE).matches) $('#reply-input').focus();
    await jumpToHit(token, seq);
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
  // Another session: its title and progress start cut to fit again (a tap shows them whole).
  if ($('#conv-title').dataset.token !== d.token) {
    $('#conv-title').dataset.token = d.token;
    for (const el of [$('#conv-title'), $('#conv-progress')]) el.classList.remove('whole');
  }
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
  $('#conv-where').replaceChildren(whereTag(d, 'header-where') ?? '');
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
  drawOwnerNotice(d);
  drawStrandedNote(d);
}

function drawKeepAlive(d, now = Date.now()) {
  const el = $('#conv-keepalive');
  const text = CLOSED.has(d.status) ? null : keepAliveText(d, now);
  el.hidden = !text;
  if (text && el.textContent !== text) el.textContent = text;
}

/** The notice over a session whose agent key was revoked: a reply waits for the agent's return. */
function drawOwnerNotice(d) {
  const el = $('#owner-notice');
  const revoked = !!d.owner?.revoked && !CLOSED.has(d.status);
  el.hidden = !revoked;
  el.textContent = revoked ? t('keyRevokedNotice', { key: d.owner.key }) : '';
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
  drawChoices($('#message-list'), d, d.messages);
  // A question with its own options needs no generic quick replies (the session's own stay).
  $('#composer').classList.toggle('question-options', !!openQuestion(d, d.messages));
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

boot();
