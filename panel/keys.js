// keys.js — the agent keys dialog: each key's name, when it was made and last
// used, and a revoke button (after a confirm). Keys are made on the hub's
// machine (`holdline-hub key create`): the page never holds a key's text.

import { api } from './api.js';
import { t, clock } from './i18n.js';
import { $, h, runDialog, confirmBox, toast } from './ui.js';

/** Wires the toolbar's key button. */
export function initKeys() {
  $('#keys-open').addEventListener('click', () => {
    drawKeys();
    runDialog($('#keys-dialog'));
  });
}

async function drawKeys() {
  let keys;
  try {
    keys = (await api.keys()).keys || [];
  } catch (e) {
    toast(t('keysFailed', { msg: e.message }), 'error');
    keys = [];
  }
  $('#keys-empty').hidden = keys.length > 0;
  $('#keys-table').hidden = keys.length === 0;
  $('#keys-rows').replaceChildren(...keys.map((k) => h('tr', { testid: 'key-row', dataset: { name: k.name } },
    h('th', { scope: 'row', class: 'key-name' }, k.name),
    h('td', {}, clock(k.createdAt)),
    h('td', { testid: 'key-last-used' }, k.lastUsedAt ? clock(k.lastUsedAt) : t('keyNeverUsed')),
    h('td', {}, h('button', {
      type: 'button',
      class: 'danger',
      testid: 'key-revoke',
      'aria-label': t('keyRevokeLabel', { name: k.name }),
      onclick: () => revoke(k.name),
    }, t('keyRevoke'))))));
}

async function revoke(name) {
  if (!(await confirmBox(t('keyRevokeConfirm', { name }), t('keyRevoke')))) return;
  try {
    await api.revokeKey(name);
    toast(t('keyRevoked', { name }));
  } catch (e) {
    toast(t('errorGeneric', { msg: e.message }), 'error');
  }
  await drawKeys();
}
