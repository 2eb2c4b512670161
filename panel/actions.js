// actions.js — what the person does to the open session from its header:
// rename, keep-alive settings, merge (the target found by typing), archive,
// restore; each confirmed where it cannot be undone, each answer applied to the page.

import { api } from './api.js';
import { t } from './i18n.js';
import { $, h, toast, runDialog, confirmBox } from './ui.js';
import { timedTurnedOn } from './keepalive.js';

const CLOSED = new Set(['merged', 'archived']);

/**
 * Wires the header's buttons. `page` gives what they need from the panel:
 * `detail()` (the session on screen), `applySession(s)`, `select(token)`,
 * `refreshList()`, `title(s)`.
 */
export function initActions(page) {
  ctx = page;
  $('#rename').addEventListener('click', rename);
  $('#settings-open').addEventListener('click', editSettings);
  $('#merge-open').addEventListener('click', merge);
  $('#archive').addEventListener('click', archive);
  $('#restore').addEventListener('click', restore);
}

let ctx = null;
const title = (s) => ctx.title(s);
const applySession = (s) => ctx.applySession(s);

async function rename() {
  const d = ctx.detail();
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
  const d = ctx.detail();
  const dialog = $('#settings-dialog');
  const mode = d.timedReplyEnabled ? 'timed' : d.sessionAutoContinue ? 'auto' : 'hold';
  for (const r of dialog.querySelectorAll('input[name=mode]')) r.checked = r.value === mode;
  $('#set-interval').value = d.timedReplyIntervalMs ? Math.round(d.timedReplyIntervalMs / 1000) : 300;
  $('#set-prompt').value = d.continuePrompt || '';
  $('#set-streak').value = d.maxAutoStreak ?? 20;
  $('#settings-info').textContent = `${t('token')}: ${d.token} · ${t('workspace')}: ${d.workspace || ''} · ${t('host')}: ${d.hostIp || ''}`;
  const owner = fillOwners(d);
  if ((await runDialog(dialog)) !== 'ok') return;
  const chosenOwner = $('#set-owner').value;
  const chosen = dialog.querySelector('input[name=mode]:checked')?.value || 'hold';
  const fields = {
    timedReplyEnabled: chosen === 'timed',
    sessionAutoContinue: chosen === 'auto',
    timedReplyIntervalMs: Math.max(1, Math.round(Number($('#set-interval').value) || 300)) * 1000,
    maxAutoStreak: Math.max(0, Math.round(Number($('#set-streak').value) || 0)),
  };
  // The hub refuses an empty continue prompt: leave it as it is then.
  if ($('#set-prompt').value.trim()) fields.continuePrompt = $('#set-prompt').value;
  try {
    const armed = fields.timedReplyEnabled && (!d.timedReplyEnabled || fields.timedReplyIntervalMs !== d.timedReplyIntervalMs);
    let s = await api.config(d.token, fields);
    if (armed) timedTurnedOn(d.token);
    if (chosenOwner !== owner) s = await api.handOver(d.token, chosenOwner || null);
    applySession(s);
    toast(chosenOwner !== owner ? t('handedOver', { owner: ownerLabel(s.owner) }) : t('saved'));
  } catch (e) {
    toast(t('saveFailed', { msg: e.message }), 'error');
  }
}

/** "Your own agents" or the key's name (marked when revoked). */
function ownerLabel(owner) {
  if (!owner?.key) return t('ownerSecret');
  return t(owner.revoked ? 'ownerKeyRevoked' : 'ownerKey', { key: owner.key });
}

/**
 * Fills the owner choice with the secret and the session's own key at once
 * (the dialog opens without waiting), then with every live key as the hub
 * lists them, keeping what the person chose meanwhile; answers the current
 * choice's value ('' = the secret).
 */
function fillOwners(d) {
  const current = d.owner?.key || '';
  const select = $('#set-owner');
  const draw = (names) => {
    const chosen = select.value;
    select.replaceChildren(
      h('option', { value: '' }, t('ownerSecret')),
      ...names.map((name) => h('option', { value: name }, ownerLabel(name === current ? d.owner : { key: name }))),
    );
    select.value = chosen;
  };
  draw(current ? [current] : []);
  select.value = current;
  api.keys().then(({ keys }) => {
    const names = keys.map((k) => k.name);
    if (current && !names.includes(current)) names.unshift(current);
    draw(names);
  }).catch(() => { /* the list is best effort: the current owner is still shown */ });
  return current;
}

async function merge() {
  const d = ctx.detail();
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
    await ctx.refreshList();
    await ctx.select(merged?.token || target.token);
  } catch (e) {
    toast(t('errorGeneric', { msg: `${e.code}: ${e.message}` }), 'error');
  }
}

async function archive() {
  const d = ctx.detail();
  if (!(await confirmBox(t('archiveConfirm', { title: title(d) }), t('archive')))) return;
  try {
    applySession(await api.archive(d.token));
  } catch (e) {
    toast(t('errorGeneric', { msg: e.message }), 'error');
  }
}

async function restore() {
  const d = ctx.detail();
  if (!(await confirmBox(t('restoreConfirm', { title: title(d) }), t('restore')))) return;
  try {
    applySession(await api.restore(d.token));
  } catch (e) {
    toast(t('errorGeneric', { msg: e.message }), 'error');
  }
}
