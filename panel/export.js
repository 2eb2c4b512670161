// export.js — taking a session out of the panel: its whole history fetched
// page by page, as Markdown or JSON (copied or downloaded), every session
// through the hub's /api/export, one message copied; and the figures a
// person cares about (rounds, how long the agent worked, how long it waited).

import { api } from './api.js';
import { t, duration } from './i18n.js';
import { h, toast } from './ui.js';

/** The hub's largest history page. */
const MAX_PAGE = 500;

/** Every message of `token`, oldest first. */
export async function wholeHistory(token) {
  let before = null;
  let pages = [];
  for (;;) {
    const res = await api.session(token, { before, limit: MAX_PAGE });
    pages = [res.messages || [], ...pages];
    if (res.nextBefore === null || res.nextBefore === undefined) return { session: res, messages: pages.flat() };
    before = res.nextBefore;
  }
}

/**
 * Rounds (the agent's messages), how long the agent worked (from a reply to
 * its next message) and how long it waited for a reply (from its message to
 * the next reply; a wait still open counts up to `now`).
 */
export function sessionStats(session, messages, now = Date.now()) {
  let rounds = 0;
  let worked = 0;
  let waited = 0;
  let yours = 0;
  let auto = 0;
  let lastAgent = null;
  let lastReply = null;
  for (const m of messages) {
    if (m.role === 'assistant') {
      rounds++;
      if (lastReply !== null) worked += Math.max(0, m.at - lastReply);
      lastReply = null;
      lastAgent = m.at;
    } else if (m.role === 'user') {
      if (m.auto) auto++;
      else yours++;
      if (lastAgent !== null) waited += Math.max(0, m.at - lastAgent);
      lastAgent = null;
      lastReply = lastReply ?? m.at;
    }
  }
  if (lastAgent !== null && session.status === 'waiting') waited += Math.max(0, now - lastAgent);
  return { rounds, worked, waited, yours, auto, messages: messages.length };
}

function title(s) {
  return (s.displayTitle && s.displayTitle.trim()) || s.title || s.token;
}

function when(at) {
  return at ? new Date(at).toISOString().replace('T', ' ').slice(0, 16) + ' UTC' : '';
}

/** The session as Markdown: a header with its facts, then each message under its author and time. */
export function sessionMarkdown(session, messages) {
  const lines = [
    `# ${title(session)}`,
    '',
    `- ${t('token')}: \`${session.token}\``,
    `- ${t('workspace')}: ${session.workspace || ''}`,
    `- ${t('host')}: ${session.hostIp || ''}`,
    `- ${t('statusLabel')}: ${session.status}`,
    `- ${t('createdLabel')}: ${when(session.createdAt)}`,
    '',
  ];
  for (const m of messages) {
    const who = t(`role.${['user', 'assistant', 'system'].includes(m.role) ? m.role : 'system'}`);
    lines.push('---', '', `### ${who}${m.auto ? ` (${t('auto')})` : ''} · ${when(m.at)}`, '', m.content || '');
    const images = (m.images || []).length;
    if (images) lines.push('', `_${t('imagesN', { n: images })}_`);
    lines.push('');
  }
  return lines.join('\n');
}

/** The session as JSON: its fields and its whole history. */
export function sessionJson(session, messages) {
  const { messages: _m, nextBefore: _n, ...fields } = session;
  void _m; void _n;
  return JSON.stringify({ session: fields, messages }, null, 2);
}

/** Puts `text` on the clipboard (with a fallback where the Clipboard API is not offered, e.g. plain http on the LAN). */
export async function copyText(text) {
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
    } else {
      const area = h('textarea', { style: 'position:fixed;opacity:0;top:0;left:0', 'aria-hidden': 'true' });
      area.value = text;
      document.body.append(area);
      area.select();
      const ok = document.execCommand('copy');
      area.remove();
      if (!ok) throw new Error('copy refused');
    }
    toast(t('copied'));
    return true;
  } catch (e) {
    toast(t('copyFailed', { msg: e.message }), 'error');
    return false;
  }
}

/** Offers `text` as a file called `name`. */
export function download(name, text, type) {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = h('a', { href: url, download: name, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

function fileStem(session) {
  const safe = title(session).replace(/[^\p{L}\p{N}._-]+/gu, '-').replace(/^-+|-+$/g, '').slice(0, 60);
  return `holdline-${safe || 'session'}-${session.token.slice(-8)}`;
}

/** Fills and opens the session's info dialog: its figures, copy and export. */
export async function showSessionInfo(token) {
  const dialog = document.getElementById('info-dialog');
  const body = document.getElementById('info-body');
  body.replaceChildren(h('p', { class: 'muted' }, t('loading')));
  dialog.showModal();
  let whole;
  try {
    whole = await wholeHistory(token);
  } catch (e) {
    body.replaceChildren(h('p', { class: 'error' }, t('errorGeneric', { msg: e.message })));
    return;
  }
  const { session, messages } = whole;
  const st = sessionStats(session, messages);
  const row = (label, value, testid) => [h('dt', {}, label), h('dd', { testid }, value)];
  body.replaceChildren(
    h('h4', { class: 'info-title' }, title(session)),
    h('dl', { class: 'stats', testid: 'session-stats' },
      row(t('statRounds'), String(st.rounds), 'stat-rounds'),
      row(t('statWorked'), duration(st.worked), 'stat-worked'),
      row(t('statWaited'), duration(st.waited), 'stat-waited'),
      row(t('statReplies'), t('statRepliesValue', { yours: st.yours, auto: st.auto }), 'stat-replies'),
      row(t('statMessages'), String(st.messages), 'stat-messages'),
      row(t('createdLabel'), when(session.createdAt), 'stat-created')),
    h('div', { class: 'info-actions' },
      h('button', { type: 'button', testid: 'copy-session', onclick: () => copyText(sessionMarkdown(session, messages)) }, t('copySession')),
      h('button', { type: 'button', testid: 'export-md', onclick: () => download(`${fileStem(session)}.md`, sessionMarkdown(session, messages), 'text/markdown') }, t('exportMarkdown')),
      h('button', { type: 'button', testid: 'export-json', onclick: () => download(`${fileStem(session)}.json`, sessionJson(session, messages), 'application/json') }, t('exportJson')),
      h('button', { type: 'button', testid: 'export-all', onclick: exportAll }, t('exportAll'))),
  );
}

/** Every session and its history, as the hub exports them (`holdline-hub import` takes the file back). */
export async function exportAll() {
  try {
    const res = await fetch('/api/export', { credentials: 'same-origin' });
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    const day = new Date().toISOString().slice(0, 10);
    download(`holdline-export-${day}.json`, await res.text(), 'application/json');
  } catch (e) {
    toast(t('errorGeneric', { msg: e.message }), 'error');
  }
}
