// machine.js — where each agent lives: its machine (the hub's `machine`: the
// agent key's name, else the host's name, else its IP) and workspace folder on
// cards and the conversation header, and the list's filter by machine.
// Invariant: the filter is offered only when the listed sessions span two
// machines or more, and a machine that leaves the list stops filtering it.

import { h } from './ui.js';
import { t } from './i18n.js';

/** The machine picked in the filter ('' = every machine). */
let chosen = '';

/** The machine a session runs on, as the person knows it: the hub decides (`machine`: key name, host name, else address). */
export function machineOf(s) {
  return String(s.machine || '');
}

/** The workspace's last path component (`/home/dev/webapp/` → `webapp`, `C:\src\app` → `app`). */
export function folderOf(workspace) {
  const parts = String(workspace || '').split(/[\\/]+/).filter(Boolean);
  return parts.length ? parts[parts.length - 1] : '';
}

/** "buildbox · webapp", the full path and host in its title (null when the hub said nothing of either). */
export function whereTag(s, testid = 'session-where') {
  const machine = machineOf(s);
  const folder = folderOf(s.workspace);
  if (!machine && !folder) return null;
  const title = [
    machine ? `${t('machine')}: ${machine}` : '',
    s.hostName && s.hostName !== machine ? `${t('hostName')}: ${s.hostName}` : '',
    s.hostIp && s.hostIp !== machine ? `${t('host')}: ${s.hostIp}` : '',
    s.workspace ? `${t('workspace')}: ${s.workspace}` : '',
  ].filter(Boolean).join('\n');
  return h('span', { class: 'where', testid, title },
    machine ? h('span', { class: 'machine', testid: `${testid}-machine` }, machine) : null,
    machine && folder ? h('span', { class: 'sep', 'aria-hidden': 'true' }, ' · ') : null,
    folder ? h('span', { class: 'folder', testid: `${testid}-folder` }, folder) : null);
}

/** The sessions on the machine picked in the filter (all of them when none is). */
export function onChosenMachine(sessions) {
  return chosen ? sessions.filter((s) => machineOf(s) === chosen) : sessions;
}

/**
 * Draws the filter into `select` from `sessions` (the listed ones): hidden
 * under two machines; `onChange()` redraws the list after a pick.
 */
export function drawMachineFilter(select, sessions, onChange) {
  const machines = [...new Set(sessions.map(machineOf).filter(Boolean))].sort((a, b) => a.localeCompare(b));
  if (chosen && !machines.includes(chosen)) chosen = '';
  select.hidden = machines.length < 2 && !chosen;
  if (!select.dataset.wired) {
    select.addEventListener('change', () => { chosen = select.value; onChange(); });
    select.dataset.wired = '1';
  }
  const want = ['', ...machines];
  const have = [...select.options].map((o) => o.value);
  if (have.join('\n') !== want.join('\n') || select.options[0]?.textContent !== t('allMachines')) {
    select.replaceChildren(...want.map((m) => h('option', { value: m }, m || t('allMachines'))));
  }
  select.value = chosen;
  select.setAttribute('aria-label', t('machineFilter'));
}
