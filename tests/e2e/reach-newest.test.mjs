// reach-newest.test.mjs — the agent that just asked is one key or one tap
// away: Alt+N walks the whole waiting line (longest-waiting first, then round
// again), Alt+Shift+N opens the agent that asked last, a card that starts
// waiting comes into the list's view, and on a phone the conversation's header
// offers "newest ›" beside "N waiting ›".

import { test, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import {
  startHub, newAgent, openPanel, selectSession, browsersPerTest, item, hasHorizontalScroll,
  onScreen, cardInView, cardComesIntoView, waitingAgents, PHONE, KEEP_WAITS,
} from './harness.mjs';

let hub;
// Each test its own hub (who waits longest must not depend on the other test);
// the agents' waits stay open however long the run takes (none of them polls).
beforeEach(async () => { hub = await startHub({ config: KEEP_WAITS }); });
afterEach(async () => { if (hub) await hub.stop(); hub = null; });
const browser = browsersPerTest(afterEach);

test('desktop: Alt+N walks the whole waiting line, Alt+Shift+N opens the agent that just asked, whose card comes into view', async () => {
  const line = await waitingAgents(hub, 'Desk', 12);
  const { page } = await browser();
  await openPanel(page, hub);
  // Nothing open yet: the longest-waiting agent opens first.
  await onScreen(page, line[0].token);
  await page.mouse.move(900, 400); // the pointer rests on the conversation, not the list

  // Alt+N walks on past the top two.
  for (const next of line.slice(1, 4)) {
    await page.keyboard.press('Alt+KeyN');
    await onScreen(page, next.token);
  }

  // A new agent starts waiting: the last in line, its card below the fold until the list brings it into view.
  const newest = await newAgent(hub, 'Just asked');
  await newest.wait('Can I merge now?');
  await item(page, newest.token).waitFor();
  await cardComesIntoView(page, newest.token);

  // One key to it, then the reply: Alt+Shift+N, type, Enter.
  await page.keyboard.press('Alt+Shift+KeyN');
  await onScreen(page, newest.token);
  await page.waitForFunction(() => document.activeElement?.dataset.testid === 'reply-input');
  await page.keyboard.type('yes, merge');
  await page.keyboard.press('Enter');
  assert.equal((await newest.reply()).text, 'yes, merge');

  // Answered, it leaves the line: Alt+N goes on with the longest-waiting agent.
  await page.keyboard.press('Alt+KeyN');
  await onScreen(page, line[0].token);
  assert.equal(await cardInView(page, line[0].token), true);
});

test('phone: the conversation header offers the newest beside the next in line', async () => {
  const [p1, p2] = await waitingAgents(hub, 'Phone', 2);
  const { page } = await browser(PHONE);
  await openPanel(page, hub);
  await selectSession(page, p1.token);
  const p3 = await newAgent(hub, 'Phone newest');
  await p3.wait('Ready for review?');
  const newestPill = page.getByTestId('newest-pill');
  await newestPill.waitFor();
  const box = await newestPill.boundingBox();
  assert.ok(box.height >= 44 && box.x + box.width <= 390, `a 44 px target on screen: ${JSON.stringify(box)}`);
  assert.equal(await page.getByTestId('waiting-pill').textContent(), '3 waiting ›', 'beside the next in line (the one count: p1 on screen among them)');
  assert.equal(await hasHorizontalScroll(page), false, 'both fit the header');
  await newestPill.tap();
  await onScreen(page, p3.token);
  await page.getByTestId('reply-input').fill('reviewed');
  await page.getByTestId('reply-send').tap();
  assert.equal((await p3.reply()).text, 'reviewed');
  // The pill opens the next in line: the longest-waiting, p1.
  await page.getByTestId('waiting-pill').tap();
  await onScreen(page, p1.token);
  void p2;
});
