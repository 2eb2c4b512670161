// keys.test.mjs — the panel's agent keys dialog: it lists each key with when
// it was made and last used, and revokes one after a confirm; the revoked key
// is refused by the hub at once and its agent's wait ends.

import { test, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { startHub, openPanel, browsersPerTest, agentCall } from './harness.mjs';

let hub;
before(async () => { hub = await startHub(); });
after(async () => { if (hub) await hub.stop(); });
const browser = browsersPerTest(afterEach);


test('keys: the panel lists agent keys with their last use and revokes one after a confirm', async () => {
  const laptop = (await hub.api('POST', '/api/keys', { name: 'laptop' })).key;
  await hub.api('POST', '/api/keys', { name: 'desk' });
  // The laptop's agent waits with its key.
  const fp = { cursorTitle: 'Remote chat', workspace: '/home/dev/app', hostIp: '192.168.1.40' };
  const init = await agentCall(hub, laptop, '/api/init', fp);
  assert.equal(init.status, 200);
  const reg = await agentCall(hub, laptop, '/api/wait/register', { ...fp, token: init.body.token, message: 'Next?', requestId: 'q1' });
  assert.equal(reg.status, 200);

  const { page } = await browser();
  await openPanel(page, hub);
  await page.getByTestId('keys-open').click();
  const dialog = page.getByTestId('keys-dialog');
  await dialog.waitFor();
  const row = (name) => dialog.locator(`[data-testid="key-row"][data-name="${name}"]`);
  await row('laptop').waitFor();
  assert.equal(await dialog.getByTestId('key-row').count(), 2);
  assert.equal(await row('desk').getByTestId('key-last-used').textContent(), 'never');
  assert.notEqual(await row('laptop').getByTestId('key-last-used').textContent(), 'never');

  // Cancel keeps it; confirm revokes it.
  await row('laptop').getByRole('button', { name: 'Revoke laptop' }).click();
  await page.getByTestId('confirm-dialog').waitFor();
  assert.match(await page.locator('#confirm-text').textContent(), /Revoke the agent key “laptop”/);
  await page.getByTestId('confirm-cancel').click();
  assert.equal(await dialog.getByTestId('key-row').count(), 2);
  await row('laptop').getByTestId('key-revoke').click();
  await page.getByTestId('confirm-ok').click();
  await row('laptop').waitFor({ state: 'detached' });
  assert.equal(await dialog.getByTestId('key-row').count(), 1);
  assert.match(await page.getByTestId('toast').textContent(), /Revoked “laptop”/);

  // The hub refuses the key at once; its wait ended and a reply now queues.
  const poll = await agentCall(hub, laptop, '/api/wait/poll', { token: init.body.token, waitId: reg.body.waitId, timeoutMs: 0 });
  assert.equal(poll.status, 401);
  const s = await hub.api('GET', `/api/sessions/${init.body.token}`);
  assert.equal(s.status, 'holding');
  const reply = await hub.api('POST', '/api/reply', { token: init.body.token, text: 'later' });
  assert.equal(reply.queued, true);
  const keys = await hub.api('GET', '/api/keys');
  assert.deepEqual(keys.keys.map((k) => k.name), ['desk']);

  // In Chinese too.
  await page.getByTestId('keys-close').click();
  await page.getByTestId('lang-toggle').click();
  await page.getByTestId('keys-open').click();
  await dialog.locator('h3', { hasText: 'Agent 密钥' }).waitFor();
  assert.equal(await row('desk').getByTestId('key-last-used').textContent(), '从未');
});

test('keys: a revoked key\'s session says so, and the person hands it to another key from Settings', async () => {
  const old = (await hub.api('POST', '/api/keys', { name: 'buildbox' })).key;
  const next = (await hub.api('POST', '/api/keys', { name: 'buildbox-2' })).key;
  const fp = { cursorTitle: 'Nightly', workspace: '/srv/app', hostIp: '192.168.1.41' };
  const init = await agentCall(hub, old, '/api/init', fp);
  const token = init.body.token;
  assert.equal((await agentCall(hub, old, '/api/wait/register', { ...fp, token, message: 'Ship it?', requestId: 'n1' })).status, 200);
  await hub.api('DELETE', '/api/keys/buildbox');

  const { page } = await browser();
  await openPanel(page, hub);
  const card = page.locator(`[data-token="${token}"]`);
  await card.getByTestId('session-key-revoked').waitFor();
  assert.equal(await card.getByTestId('session-key-revoked').textContent(), 'key buildbox revoked');
  await card.click();
  const notice = page.getByTestId('owner-notice');
  await notice.waitFor();
  assert.match(await notice.textContent(), /agent key “buildbox” this session belongs to was revoked/);

  // The new key does not see the session until the person hands it over.
  const fresh = await agentCall(hub, next, '/api/init', fp);
  assert.equal(fresh.body.created, true);
  // A key that has its own session for the chat is not handed another
  // (409 BINDING_TAKEN): the person archives the new, empty one first.
  await hub.api('POST', `/api/sessions/${fresh.body.token}/archive`, {});
  await page.getByTestId('settings-open').click();
  const owner = page.getByTestId('set-owner');
  assert.equal(await owner.inputValue(), 'buildbox');
  await owner.selectOption('buildbox-2');
  await page.getByTestId('settings-save').click();
  await notice.waitFor({ state: 'hidden' });
  assert.match(await page.getByTestId('toast').last().textContent(), /Handed over to Agent key “buildbox-2”/);
  const again = await agentCall(hub, next, '/api/init', fp);
  assert.deepEqual([again.status, again.body.token, again.body.created], [200, token, false]);
  // The queued question is answerable by the new key's next wait.
  await hub.api('POST', '/api/reply', { token, text: 'yes, ship it' });
  const reg = await agentCall(hub, next, '/api/wait/register', { ...fp, token, message: 'Back, ship it?', requestId: 'n2' });
  const poll = await agentCall(hub, next, '/api/wait/poll', { token, waitId: reg.body.waitId, timeoutMs: 0 });
  assert.equal(poll.body.reply?.text, 'yes, ship it');
});
