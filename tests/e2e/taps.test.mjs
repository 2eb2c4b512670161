// taps.test.mjs — counts the person's actions (clicks, taps, key presses) from
// "an agent waits" to "the agent has the reply" for the rows of docs/panel.md's
// keys-and-taps table: one option (desktop pointer, keyboard only, phone), a new
// agent asking while the person reads another, and the keyboard from load to the
// list. Each count is asserted, so the table cannot drift from the panel; the
// counts before issue 43 are the issue's own (one option 2 clicks or taps; the
// new agent 4 taps on a phone and out of Alt+N's reach; digits typed into the box).

import { test, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import {
  startHub, newAgent, openPanel, browsersPerTest, item,
  onScreen, cardInView, cardComesIntoView, waitingAgents, PHONE, KEEP_WAITS,
} from './harness.mjs';

let hub;
// Each test its own hub: what waits, and for how long, is the test's alone.
beforeEach(async () => { hub = await startHub({ config: KEEP_WAITS }); });
afterEach(async () => { if (hub) await hub.stop(); hub = null; });
const browser = browsersPerTest(afterEach);

const OPTIONS = { options: [{ label: 'Merge' }, { label: 'Wait for CI' }] };

/** The person's actions, each named, so a failing count says which ones it took. */
function actions() {
  const done = [];
  return {
    done,
    async take(name, act) {
      done.push(name);
      await act();
    },
  };
}

/** Checks the count, logs the row, and that the agent got the first option. */
async function delivered(agent, person, want, row) {
  const reply = await agent.reply(10_000);
  assert.deepEqual(reply.choices, [{ index: 0, label: 'Merge' }]);
  console.log(`${row}: ${person.done.length} (${person.done.join(', ')})`);
  assert.equal(person.done.length, want, `${row}: ${person.done.join(', ')}`);
}

test('one option, the panel loaded before the agent asked: 2 clicks, 2 keys, 2 taps', async () => {
  for (const form of ['pointer', 'keyboard', 'phone']) {
    const { page } = await browser(form === 'phone' ? PHONE : {});
    await openPanel(page, hub);
    const agent = await newAgent(hub, `One option (${form})`);
    await agent.wait('CI is green. Merge?', OPTIONS);
    await item(page, agent.token).waitFor();
    const person = actions();
    if (form === 'keyboard') {
      await person.take('Alt+N', () => page.keyboard.press('Alt+KeyN'));
      await page.getByTestId('choices').waitFor();
      await person.take('1', () => page.keyboard.press('1'));
    } else {
      const card = item(page, agent.token).locator('button').first();
      const option = page.getByTestId('choice').first();
      await person.take('its card', () => (form === 'phone' ? card.tap() : card.click()));
      await option.waitFor();
      await person.take('the option', () => (form === 'phone' ? option.tap() : option.click()));
    }
    await delivered(agent, person, 2, `one option, ${form}`);
  }
});

test('one option, the panel loaded after the agent asked, keyboard only: 1 key (the digit)', async () => {
  const agent = await newAgent(hub, 'Asked before load');
  await agent.wait('CI is green. Merge?', OPTIONS);
  const { page } = await browser();
  await openPanel(page, hub);
  // The panel opens the longest-waiting agent and puts the focus in its empty reply box.
  await onScreen(page, agent.token);
  await page.getByTestId('choices').waitFor();
  await page.waitForFunction(() => document.activeElement?.dataset.testid === 'reply-input');
  const person = actions();
  await person.take('1', () => page.keyboard.press('1'));
  await delivered(agent, person, 1, 'one option after load, keyboard');
});

/** Two agents wait, the person reads the first; then a third asks with options (the newest, last in line). */
async function readingWhenANewOneAsks(page) {
  const reading = await newAgent(hub, 'Reading this one');
  await reading.wait('A long report. Anything to change?');
  await waitingAgents(hub, 'Also waiting', 8);
  await openPanel(page, hub);
  await item(page, reading.token).locator('button').first().click();
  await onScreen(page, reading.token);
  await page.mouse.move(900, 400); // reading: the pointer rests on the conversation, not the list
  const newest = await newAgent(hub, 'Just asked');
  await newest.wait('CI is green. Merge?', OPTIONS);
  await item(page, newest.token).waitFor({ state: 'attached' }); // the panel knows (a phone shows the conversation, not the list)
  return newest;
}

test('a new agent asks while the person reads another: 2 clicks, 2 keys, 2 taps', async () => {
  for (const form of ['pointer', 'keyboard', 'phone']) {
    const { page } = await browser(form === 'phone' ? PHONE : {});
    const newest = await readingWhenANewOneAsks(page);
    const person = actions();
    if (form === 'keyboard') {
      await person.take('Alt+Shift+N', () => page.keyboard.press('Alt+Shift+KeyN'));
      await onScreen(page, newest.token);
      await page.getByTestId('choices').waitFor();
      await person.take('1', () => page.keyboard.press('1'));
    } else if (form === 'phone') {
      await page.getByTestId('newest-pill').waitFor();
      await person.take('"newest ›"', () => page.getByTestId('newest-pill').tap());
      await onScreen(page, newest.token);
      await person.take('the option', () => page.getByTestId('choice').first().tap());
    } else {
      // Its card comes into the list's view by itself: no scrolling to find it.
      await cardComesIntoView(page, newest.token);
      assert.ok(await cardInView(page, newest.token));
      await person.take('its card', () => item(page, newest.token).locator('button').first().click());
      await onScreen(page, newest.token);
      await person.take('the option', () => page.getByTestId('choice').first().click());
    }
    await delivered(newest, person, 2, `new agent while reading another, ${form}`);
    await hub.stop();
    hub = await startHub({ config: KEEP_WAITS });
  }
});

test('keyboard only, from load to the session list: 3 keys (Tab, Tab, Enter on "Skip to the sessions")', async () => {
  const agent = await newAgent(hub, 'Release train');
  await agent.wait('Is the changelog right?');
  const { page } = await browser();
  await openPanel(page, hub);
  await page.waitForFunction(() => document.activeElement?.dataset.testid === 'reply-input');
  const person = actions();
  await person.take('Tab', () => page.keyboard.press('Tab'));
  await person.take('Tab', () => page.keyboard.press('Tab'));
  assert.equal(await page.evaluate(() => document.activeElement.dataset.testid), 'skip-list-after');
  await person.take('Enter', () => page.keyboard.press('Enter'));
  assert.ok(await page.evaluate(() => !!document.activeElement?.closest('[data-testid="session-item"]')), 'focus on a session card');
  console.log(`load to the list, keyboard: ${person.done.length} (${person.done.join(', ')})`);
  assert.equal(person.done.length, 3);
});
