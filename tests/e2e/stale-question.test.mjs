// stale-question.test.mjs — a reply answers the question on screen: when the
// agent has asked something newer by the time the reply reaches the hub, the
// hub refuses it (409 STALE_QUESTION), the panel shows the new question with
// the reply still in the box, and "send anyway" sends it to the new question.
// A draft belongs to the question shown when typing began: a question that
// arrives above it later is announced, and Enter shows the same choice.

import { test, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { startHub, newAgent, openPanel, selectSession, browsersPerTest, axeViolations } from './harness.mjs';

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

/** Records each body the page posts to /api/reply (the request still goes through). */
async function recordReplies(page) {
  const sent = [];
  await page.route('**/api/reply', async (route) => {
    sent.push(JSON.parse(route.request().postData()));
    await route.continue();
  });
  return sent;
}

/** Nothing of the person's reached the session: no reply recorded, none queued. */
async function nothingRecorded(agent) {
  const detail = await hub.api('GET', `/api/sessions/${agent.token}`);
  assert.equal(detail.queuedReplies, 0, 'nothing queued');
  assert.equal(detail.messages.filter((m) => m.role === 'user').length, 0, 'nothing recorded');
}

test('a draft typed for question 1 is not delivered to question 2, which arrived above it', async () => {
  // bypassCSP: axe is added to the page by the test.
  const { page } = await browser({ bypassCSP: true });
  await openPanel(page, hub);
  const agent = await newAgent(hub, 'Draft guard');
  await agent.wait('Question 1: rename the crate?');
  await selectSession(page, agent.token);
  await page.getByTestId('message').filter({ hasText: 'Question 1' }).waitFor();
  const sent = await recordReplies(page);
  const box = page.getByTestId('reply-input');
  await box.pressSequentially('yes, rename it');

  // The agent gives up waiting and asks its next question while the draft is in the box.
  await agent.wait('Question 2: delete the old branch?');
  await page.getByTestId('message').filter({ hasText: 'Question 2' }).waitFor();
  const news = page.getByTestId('newer-question');
  await news.waitFor();
  assert.equal(await news.getAttribute('role'), 'status', 'the newer question is announced to screen readers');
  assert.match(await news.textContent(), /Question 2: delete the old branch\?/);

  await box.press('Enter');
  await page.getByTestId('stale-question').waitFor();
  assert.equal(await page.getByTestId('stale-preview').textContent(), 'Question 2: delete the old branch?');
  assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'send-anyway', 'focus is on the choice');
  assert.equal(await box.inputValue(), 'yes, rename it', 'the draft stays in the box');
  assert.ok(sent.every((r) => r.inReplyTo === 0), `a reply sent named question 1: ${JSON.stringify(sent)}`);
  await nothingRecorded(agent);
  assert.deepEqual(await axeViolations(page), [], 'the stale choice passes axe');

  // The choice, taken from the keyboard: send it to question 2 anyway.
  await page.keyboard.press('Enter');
  assert.equal((await agent.reply(10_000)).text, 'yes, rename it');
  await page.getByTestId('stale-question').waitFor({ state: 'hidden' });
  await news.waitFor({ state: 'hidden' });
});

test('a draft kept across a reload still belongs to its question; "edit" ties it to the newer one', async () => {
  const { page } = await browser();
  await openPanel(page, hub);
  const agent = await newAgent(hub, 'Draft across reload');
  await agent.wait('Question A: keep the cache?');
  await selectSession(page, agent.token);
  await page.getByTestId('message').filter({ hasText: 'Question A' }).waitFor();
  await page.getByTestId('reply-input').pressSequentially('keep it');
  await agent.wait('Question B: bump the version?');

  await page.reload();
  await page.getByTestId('message').filter({ hasText: 'Question B' }).waitFor();
  const box = page.getByTestId('reply-input');
  assert.equal(await box.inputValue(), 'keep it', 'the draft came back');
  await page.getByTestId('newer-question').waitFor();
  const sent = await recordReplies(page);
  await box.press('Enter');
  await page.getByTestId('stale-question').waitFor();
  await nothingRecorded(agent);

  // "Edit the reply": the person has now seen question B; the draft answers it.
  await page.getByTestId('stale-dismiss').click();
  assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'reply-input');
  await page.getByTestId('newer-question').waitFor({ state: 'hidden' });
  await box.press('End');
  await box.pressSequentially(', and yes');
  await box.press('Enter');
  assert.equal((await agent.reply(10_000)).text, 'keep it, and yes');
  assert.equal(sent[sent.length - 1].inReplyTo, 1, 'the reply named question B');
});
