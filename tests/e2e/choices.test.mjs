// choices.test.mjs — a question with options in the panel: its options are
// buttons under it; one click (or a digit key: outside text fields, or in the
// reply box while it is empty, where opening a question puts the focus) sends
// the pick and the agent's poll gets `choices`; multi-select toggles and sends
// with Send or Enter; Alt-click puts a label in the box instead (a long press
// on a phone); the buttons are gone once answered and the person's message
// says what was picked; a 400 from the hub is shown as its message.

import { test, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { startHub, newAgent, openPanel, selectSession, browsersPerTest, axeViolations } from './harness.mjs';

let hub;
before(async () => { hub = await startHub(); });
after(async () => { if (hub) await hub.stop(); });
const browser = browsersPerTest(afterEach);

const DATABASES = [
  { label: 'Postgres', description: 'A server; what production runs' },
  { label: 'SQLite', description: 'One file, no server' },
  { label: 'Keep both' },
];

/** An agent waiting on `question` with `options`, and the panel open on it. */
async function askInPanel(title, question, extra) {
  const agent = await newAgent(hub, title);
  await agent.wait(question, extra);
  const b = await browser({ bypassCSP: true }); // bypassCSP: axe is added by a test
  await openPanel(b.page, hub);
  await selectSession(b.page, agent.token);
  await b.page.getByTestId('choices').waitFor();
  return { agent, page: b.page };
}

test('choices: the options show as buttons; one click sends the pick (with the box text) and they are gone', async () => {
  const { agent, page } = await askInPanel('Pick a database', 'Postgres or SQLite?', { options: DATABASES });
  const buttons = page.getByTestId('choice');
  assert.equal(await buttons.count(), 3);
  assert.equal(await buttons.nth(0).locator('.choice-label').textContent(), 'Postgres');
  assert.equal(await buttons.nth(0).locator('.choice-desc').textContent(), 'A server; what production runs');
  assert.equal(await buttons.nth(2).locator('.choice-desc').count(), 0, 'no description, no second line');
  // Under the question itself.
  const question = page.getByTestId('message').filter({ hasText: 'Postgres or SQLite?' });
  assert.equal(await question.getByTestId('choices').count(), 1);

  const sent = [];
  page.on('request', (r) => { if (r.url().endsWith('/api/reply')) sent.push(JSON.parse(r.postData())); });
  await page.getByTestId('reply-input').fill('it is a small tool');
  // The conversation's refresh after the pick is held back a moment: until it shows the
  // answer, the buttons stay disabled (a double click, an impatient second tap send nothing more).
  let slow = false;
  await page.route(/\/api\/sessions\/ct_[0-9a-f]{32}\?/, async (route) => {
    if (slow) await new Promise((r) => setTimeout(r, 1500));
    await route.continue();
  });
  slow = true;
  const answered = page.waitForResponse((r) => r.url().endsWith('/api/reply'));
  await buttons.nth(1).dblclick();
  assert.equal((await answered).status(), 200);
  assert.equal(await buttons.nth(0).isDisabled(), true, 'no second pick while the answer is on its way to the screen');
  const reply = await agent.reply(10_000);
  assert.deepEqual(reply.choices, [{ index: 1, label: 'SQLite' }]);
  assert.match(reply.text, /it is a small tool/);
  assert.deepEqual(sent.map((b) => [b.choices, b.inReplyTo]), [[[1], 0]], 'one request naming the question');

  await page.getByTestId('choices').waitFor({ state: 'detached' });
  const picked = page.getByTestId('message').filter({ has: page.getByTestId('picked') });
  assert.equal(await picked.getByTestId('picked').textContent(), 'Chose: SQLite');
  assert.equal(await picked.getAttribute('data-role'), 'user');
  assert.equal(await page.getByTestId('reply-input').inputValue(), '', 'the box text went with the pick');
});

test('choices: right after opening a question, a digit picks that option (the box has focus and is empty); text stays text', async () => {
  const { agent, page } = await askInPanel('Digit pick', 'Which branch?', { options: [{ label: 'main' }, { label: 'dev' }, { label: 'release' }] });
  const box = page.getByTestId('reply-input');
  // The usual case: opening the conversation put the focus in the empty reply box.
  assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'reply-input');
  assert.match(await page.getByTestId('choices-hint').textContent(), /1–9.*reply box is empty/);
  // A reply being typed: its digits are text.
  await box.pressSequentially('v2');
  assert.equal(await box.inputValue(), 'v2');
  await box.fill('');
  // A number no option has is text too.
  await page.keyboard.press('7');
  assert.equal(await box.inputValue(), '7');
  assert.equal((await hub.api('GET', `/api/sessions/${agent.token}`)).queuedReplies, 0);
  await box.fill('');
  await page.keyboard.press('3');
  const reply = await agent.reply(10_000);
  assert.deepEqual(reply.choices, [{ index: 2, label: 'release' }]);
  assert.equal(await box.inputValue(), '', 'the digit was a pick, not text');
  await page.getByTestId('choices').waitFor({ state: 'detached' });
  await page.getByTestId('picked').filter({ hasText: 'Chose: release' }).waitFor();
});

test('choices: from the keyboard alone: the next question opens with Alt+N, its number sends the pick', async () => {
  const agent = await newAgent(hub, 'Keyboard only');
  const { page } = await browser();
  await openPanel(page, hub);
  await agent.wait('Ship it?', { options: [{ label: 'Ship' }, { label: 'Hold' }] });
  await page.keyboard.press('Alt+KeyN');
  await page.getByTestId('choices').waitFor();
  await page.keyboard.press('1');
  assert.deepEqual((await agent.reply(10_000)).choices, [{ index: 0, label: 'Ship' }]);
});

test('choices: multi-select toggles (click and digit) and sends the picks in option order with Send', async () => {
  const options = [{ label: 'lint' }, { label: 'unit tests' }, { label: 'e2e tests' }, { label: 'benchmarks' }];
  const { agent, page } = await askInPanel('Multi pick', 'What should CI run?', { options, multiSelect: true });
  const button = (i) => page.getByTestId('choice').nth(i);
  const pressed = async () => Promise.all([0, 1, 2, 3].map(async (i) => (await button(i).getAttribute('aria-pressed')) === 'true'));
  const send = page.getByTestId('choices-send');
  assert.equal(await send.isDisabled(), true, 'nothing picked yet');
  await button(3).click();
  await button(0).click();
  await button(0).click();
  await page.getByTestId('messages').focus();
  await page.keyboard.press('2');
  assert.deepEqual(await pressed(), [false, true, false, true]);
  assert.equal((await hub.api('GET', `/api/sessions/${agent.token}`)).queuedReplies, 0, 'toggling sends nothing');
  await send.click();
  const reply = await agent.reply(10_000);
  assert.deepEqual(reply.choices, [{ index: 1, label: 'unit tests' }, { index: 3, label: 'benchmarks' }]);
  await page.getByTestId('picked').filter({ hasText: 'Chose: unit tests, benchmarks' }).waitFor();
  assert.equal(await page.getByTestId('choices').count(), 0);
});

test('choices: multi-select from the reply box: digits toggle while it is empty, Enter sends the picks with what was typed', async () => {
  const options = [{ label: 'lint' }, { label: 'unit tests' }, { label: 'e2e tests' }];
  const { agent, page } = await askInPanel('Multi keys', 'What should CI run?', { options, multiSelect: true });
  const box = page.getByTestId('reply-input');
  assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'reply-input');
  await page.keyboard.press('3');
  await page.keyboard.press('1');
  assert.equal(await box.inputValue(), '');
  assert.equal(await page.getByTestId('choice').nth(2).getAttribute('aria-pressed'), 'true');
  await box.pressSequentially('and only on main');
  await box.press('Enter');
  const reply = await agent.reply(10_000);
  assert.deepEqual(reply.choices, [{ index: 0, label: 'lint' }, { index: 2, label: 'e2e tests' }]);
  assert.match(reply.text, /and only on main/);
});

test('choices: Alt-click puts the label in the box to edit instead of sending', async () => {
  const { agent, page } = await askInPanel('Edit a pick', 'Postgres or SQLite?', { options: DATABASES });
  const box = page.getByTestId('reply-input');
  await page.getByTestId('choice').nth(0).click({ modifiers: ['Alt'] });
  assert.equal(await box.inputValue(), 'Postgres');
  const s = await hub.api('GET', `/api/sessions/${agent.token}`);
  assert.equal(s.queuedReplies, 0);
  assert.equal(s.messages.filter((m) => m.role === 'user').length, 0, 'nothing sent');
  assert.equal(await page.getByTestId('choices').count(), 1, 'the options stay');
  await box.fill('Postgres, but version 16');
  await box.press('Enter');
  const reply = await agent.reply(10_000);
  assert.equal(reply.text, 'Postgres, but version 16');
  assert.equal(reply.choices, undefined, 'typed text picks nothing');
  await page.getByTestId('choices').waitFor({ state: 'detached' });
});

test('choices: on a phone a long press puts the label in the box; a tap sends', async () => {
  const agent = await newAgent(hub, 'Phone pick');
  await agent.wait('Postgres or SQLite?', { options: DATABASES });
  const { page, context } = await browser({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
  await openPanel(page, hub);
  await selectSession(page, agent.token);
  const option = page.getByTestId('choice').nth(1);
  await option.waitFor();
  const r = await option.boundingBox();
  assert.ok(r.height >= 44, `a 44 px target: ${r.height}`);
  // A finger held on the option for 700 ms.
  const cdp = await context.newCDPSession(page);
  await cdp.send('Input.dispatchTouchEvent', { type: 'touchStart', touchPoints: [{ x: r.x + r.width / 2, y: r.y + r.height / 2 }] });
  await page.waitForTimeout(700);
  await cdp.send('Input.dispatchTouchEvent', { type: 'touchEnd', touchPoints: [] });
  await page.waitForFunction(() => document.querySelector('[data-testid="reply-input"]').value === 'SQLite');
  await page.waitForTimeout(300);
  assert.equal((await hub.api('GET', `/api/sessions/${agent.token}`)).queuedReplies, 0, 'a long press sends nothing');
  await page.getByTestId('reply-input').fill('');
  await page.getByTestId('choice').nth(0).tap();
  const reply = await agent.reply(10_000);
  assert.deepEqual(reply.choices, [{ index: 0, label: 'Postgres' }]);
});

test('choices: a pick for a question the agent has moved on from is refused (409) and the new question shows', async () => {
  const { agent, page } = await askInPanel('Moved on', 'Postgres or SQLite?', { options: DATABASES });
  // The agent asks its next question while the pick is on its way.
  let asked = false;
  await page.route('**/api/reply', async (route) => {
    if (!asked) { asked = true; await agent.wait('Which port?', { options: [{ label: '5432' }, { label: '6543' }] }); }
    await route.continue();
  });
  await page.getByTestId('choice').nth(0).click();
  await page.getByTestId('stale-question').waitFor();
  assert.equal(await page.getByTestId('stale-preview').textContent(), 'Which port?');
  assert.equal(await page.getByTestId('send-anyway').count(), 0, 'a pick of the old options is not sent to the new question');
  const s = await hub.api('GET', `/api/sessions/${agent.token}`);
  assert.equal(s.queuedReplies, 0);
  assert.equal(s.messages.filter((m) => m.role === 'user').length, 0, 'nothing recorded');
  // The new question's options replace the old ones.
  await page.getByTestId('message').filter({ hasText: 'Which port?' }).getByTestId('choices').waitFor();
  assert.equal(await page.getByTestId('choices').count(), 1);
  await page.getByTestId('choice').nth(1).click();
  const reply = await agent.reply(10_000);
  assert.deepEqual(reply.choices, [{ index: 1, label: '6543' }]);
});

test('choices: a pick the hub refuses (400) shows the hub\'s message and nothing is queued', async () => {
  const { agent, page } = await askInPanel('Refused pick', 'Postgres or SQLite?', { options: DATABASES });
  // The hub sees an index outside the options (as a panel out of step with the question would send).
  await page.route('**/api/reply', async (route) => {
    const body = JSON.parse(route.request().postData());
    await route.continue({ postData: JSON.stringify({ ...body, choices: [7] }) });
  });
  await page.getByTestId('choice').nth(0).click();
  const status = page.getByTestId('reply-status');
  await page.waitForFunction(() => document.querySelector('[data-testid="reply-status"]').dataset.state === 'error');
  const text = await status.textContent();
  assert.match(text, /^Could not send: /);
  assert.match(text, /7|range|option/i, `the hub's reason is shown: ${text}`);
  const s = await hub.api('GET', `/api/sessions/${agent.token}`);
  assert.equal(s.queuedReplies, 0);
  assert.equal(await page.getByTestId('choice').nth(0).isEnabled(), true, 'the person can pick again');
});

test('choices: questions the agent moved on from read as answered or not, their options inert', async () => {
  const { agent, page } = await askInPanel('Abandoned', 'Postgres or SQLite?', { options: DATABASES });
  const question = (text) => page.getByTestId('message').filter({ hasText: text });
  const stateOf = async (text) => {
    const tag = question(text).getByTestId('question-state');
    await tag.waitFor();
    return [await tag.getAttribute('data-state'), await tag.textContent()];
  };
  // Asked again with no answer: the first question is superseded, its options a list of what was offered.
  await agent.wait('Which port?', { options: [{ label: '5432' }, { label: '6543' }] });
  await question('Which port?').getByTestId('choices').waitFor();
  assert.deepEqual(await stateOf('Postgres or SQLite?'), ['superseded', 'not answered: the agent asked again']);
  const past = question('Postgres or SQLite?').getByTestId('choices-past');
  assert.deepEqual(await past.locator('li').allTextContents(), ['1Postgres', '2SQLite', '3Keep both']);
  assert.equal(await question('Postgres or SQLite?').locator('button.choice').count(), 0, 'no button on an old question');
  assert.equal(await question('Which port?').getByTestId('question-state').count(), 0, 'the open question has no mark');
  await page.keyboard.press('2');
  assert.deepEqual((await agent.reply(10_000)).choices, [{ index: 1, label: '6543' }]);
  assert.deepEqual(await stateOf('Which port?'), ['answered', 'answered']);
  await question('Which port?').getByTestId('choices-past').waitFor();

  // The wait ended with no answer (the agent stopped waiting): its options read as closed and a digit picks nothing.
  await agent.wait('Deploy now?', { options: [{ label: 'Deploy' }, { label: 'Wait' }] });
  await question('Deploy now?').getByTestId('choices').waitFor();
  await hub.api('POST', '/api/wait/cancel', { token: agent.token, waitId: agent.waitId });
  assert.deepEqual(await stateOf('Deploy now?'), ['ended', 'not answered: the agent stopped waiting']);
  assert.equal(await page.getByTestId('choice').count(), 0, 'no option can be picked');
  await page.getByTestId('messages').focus();
  await page.keyboard.press('1');
  await page.waitForTimeout(300);
  assert.equal((await hub.api('GET', `/api/sessions/${agent.token}`)).queuedReplies, 0, 'nothing picked');
  assert.deepEqual(await axeViolations(page), [], 'the marks and closed options pass axe');
});

test('choices: a hook\'s permission question is labelled, its Allow is one tap, and a stop is labelled too', async () => {
  const { agent, page } = await askInPanel('Permission', '**Claude Code asks to run a command**\n\n```sh\nnpm test\n```', {
    options: [{ label: 'Allow' }, { label: 'Deny' }], origin: 'permission',
  });
  const question = page.getByTestId('message').filter({ hasText: 'npm test' });
  const tag = question.getByTestId('origin-tag');
  assert.equal(await tag.textContent(), 'the agent asks permission');
  assert.equal(await tag.getAttribute('data-origin'), 'permission');
  await question.getByTestId('choice').nth(0).click();
  const reply = await agent.reply();
  assert.deepEqual(reply.choices, [{ index: 0, label: 'Allow' }]);

  await agent.wait('I stopped here.', { origin: 'stopped', options: [{ label: 'Let it finish' }] });
  const stopped = page.getByTestId('message').filter({ hasText: 'I stopped here.' });
  assert.equal(await stopped.getByTestId('origin-tag').textContent(), 'the agent stopped');
  // An ordinary question carries no label.
  await agent.wait('Anything else?');
  const asked = page.getByTestId('message').filter({ hasText: 'Anything else?' });
  await asked.waitFor();
  assert.equal(await asked.getByTestId('origin-tag').count(), 0);
});
