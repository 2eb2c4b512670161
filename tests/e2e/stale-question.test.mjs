// stale-question.test.mjs — a reply answers the question on screen: when the
// agent has asked something newer by the time the reply reaches the hub, the
// hub refuses it (409 STALE_QUESTION), the panel shows the new question with
// the reply still in the box, and "send anyway" sends it to the new question.

import { test, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { startHub, newAgent, openPanel, selectSession, browsersPerTest } from './harness.mjs';

let hub;
before(async () => { hub = await startHub(); });
after(async () => { if (hub) await hub.stop(); });
const browser = browsersPerTest(afterEach);

test('a reply typed while the agent moved on shows the new question and sends anyway', async () => {
  const { page } = await browser();
  await openPanel(page, hub);
  const agent = await newAgent(hub, 'Release train');
  await agent.wait('Is the changelog right?');
  await selectSession(page, agent.token);
  await page.getByTestId('message').filter({ hasText: 'Is the changelog right?' }).waitFor();

  // The agent asks its next question while the person's reply is on its way:
  // the reply reaches the hub only after the new question is recorded.
  const sent = [];
  await page.route('**/api/reply', async (route) => {
    sent.push(JSON.parse(route.request().postData()));
    if (sent.length === 1) await agent.wait('Deploy to prod now?');
    await route.continue();
  });
  await page.getByTestId('reply-input').fill('yes go ahead');
  await page.getByTestId('reply-input').press('Enter');

  const stale = page.getByTestId('stale-question');
  await stale.waitFor();
  assert.equal(await page.getByTestId('stale-preview').textContent(), 'Deploy to prod now?');
  assert.equal(sent[0].inReplyTo, 0, 'the reply named the question on screen');
  assert.equal(await page.getByTestId('reply-input').inputValue(), 'yes go ahead', 'the reply stays in the box');
  // The new question is drawn in the conversation, and nothing was queued for it.
  await page.getByTestId('message').filter({ hasText: 'Deploy to prod now?' }).waitFor();
  const detail = await hub.api('GET', `/api/sessions/${agent.token}`);
  assert.equal(detail.queuedReplies, 0);
  assert.equal(detail.messages.filter((m) => m.role === 'user').length, 0, 'nothing recorded');

  await page.getByTestId('send-anyway').click();
  const reply = await agent.reply(10_000);
  assert.equal(reply.text, 'yes go ahead');
  assert.equal(sent.length, 2);
  assert.equal(sent[1].inReplyTo, undefined, 'send anyway names no question');
  await stale.waitFor({ state: 'hidden' });
  await page.waitForFunction(() => document.querySelector('[data-testid="reply-input"]').value === '');
});

test('a reply to the question on screen goes straight through', async () => {
  const { page } = await browser();
  await openPanel(page, hub);
  const agent = await newAgent(hub, 'Plain answer');
  await agent.wait('First question?');
  await agent.wait('Second question?');
  await selectSession(page, agent.token);
  await page.getByTestId('message').filter({ hasText: 'Second question?' }).waitFor();
  const sent = [];
  await page.route('**/api/reply', async (route) => {
    sent.push(JSON.parse(route.request().postData()));
    await route.continue();
  });
  await page.getByTestId('reply-input').fill('answer two');
  await page.getByTestId('reply-input').press('Enter');
  assert.equal((await agent.reply(10_000)).text, 'answer two');
  assert.equal(sent[0].inReplyTo, 1);
  assert.equal(await page.getByTestId('stale-question').isHidden(), true);
});
