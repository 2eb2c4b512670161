// daily3.test.mjs — issue 43's items on reading and reaching in Chromium: the phone's
// conversation header (machine · folder and title in full, the generic quick replies
// gone while the question offers its own options, the room left to read), text
// attachments previewed inline as text, skip links and focus after a send, and the
// changes block said in words, once per change set.

import { test, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import {
  startHub, newAgent, openPanel, selectSession, browsersPerTest, axeViolations, hasHorizontalScroll,
} from './harness.mjs';

let hub;
// The questions stay open throughout (a wait no agent polls ends after 30 s, and its options close).
before(async () => { hub = await startHub({ config: 'wait_grace_sec = 3600\n' }); });
after(async () => { if (hub) await hub.stop(); });
const browser = browsersPerTest(afterEach);

const PHONE = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true };

/** Whether `locator`'s text shows whole (no ellipsis, nothing clipped sideways). */
function shownWhole(locator) {
  return locator.evaluate((el) => el.scrollWidth <= el.clientWidth + 1 && el.getBoundingClientRect().height > 0);
}

test('phone header: machine · folder and the title in full, no generic chips beside options, room to read (dark)', async () => {
  const agent = await newAgent(hub, 'Migrate the reporting pipeline to the warehouse',
    { workspace: '/Users/dev/code/analytics-dashboard', hostName: 'studio-mac' });
  await agent.wait('The nightly export now writes to the warehouse. Which table should the dashboard read?', {
    completionPct: 70, nextStep: 'switch the dashboard queries to the new warehouse tables',
    options: [{ label: 'events_v2' }, { label: 'events_legacy' }],
  });
  const { page } = await browser({ ...PHONE, colorScheme: 'dark', bypassCSP: true });
  await openPanel(page, hub);
  await selectSession(page, agent.token);
  await page.getByTestId('choices').waitFor();
  await page.waitForTimeout(150); // transitions settle
  const where = page.getByTestId('header-where');
  const left = await page.getByTestId('messages').evaluate((el) => Math.round(el.getBoundingClientRect().height));
  console.log(`phone 390×844: ${left} px left to read`);
  assert.equal(await where.textContent(), 'studio-mac · analytics-dashboard');
  assert.ok(await shownWhole(where), 'machine · folder shows in full');
  assert.ok(await shownWhole(page.getByTestId('header-where-folder')), 'the folder is not cut');
  assert.ok(await page.getByTestId('conv-title').evaluate((el) => el.scrollWidth <= el.clientWidth + 1
    && el.scrollHeight <= el.clientHeight + 1), 'the title is not cut');
  assert.equal(await page.getByTestId('quick-reply').filter({ visible: true }).count(), 0,
    'the generic quick replies give way to the question\'s options');
  assert.ok(left >= 680, `${left} px left to read (583 before issue 43; at least 680 wanted)`);
  const progress = page.getByTestId('conv-progress');
  assert.equal(await shownWhole(progress), false, 'progress and next step keep to one line');
  await progress.tap();
  assert.ok(await shownWhole(progress), 'a tap shows the next step whole');
  await page.getByTestId('templates-edit').click();
  await page.getByTestId('templates-dialog').waitFor();
  await page.keyboard.press('Escape');
  assert.deepEqual(await axeViolations(page), []);
});

test('phone header with both pills ("N waiting ›" and "newest ›"): the title still shows in full, machine · folder too (dark)', async () => {
  // One agent waits longer than the one on screen; after it, one asks next (the pill's next in
  // line) and one last (the newest): "newest ›" shows only when it is not also the next in line.
  const longest = await newAgent(hub, 'Nightly backup check', { workspace: '/srv/backup', hostName: 'nas' });
  await longest.wait('The backup finished with 2 warnings. Archive the logs?');
  const agent = await newAgent(hub, 'Migrate the reporting pipeline to the warehouse',
    { workspace: '/Users/dev/code/analytics-dashboard', hostName: 'studio-mac' });
  await agent.wait('The nightly export now writes to the warehouse. Which table should the dashboard read?', {
    completionPct: 70, nextStep: 'switch the dashboard queries to the new warehouse tables',
    options: [{ label: 'events_v2' }, { label: 'events_legacy' }],
  });
  const next = await newAgent(hub, 'Rotate the staging certificates', { workspace: '/srv/infra', hostName: 'buildbox' });
  await next.wait('The new certificates are in place. Reload nginx?');
  const newest = await newAgent(hub, 'Bump the API client', { workspace: '/home/dev/sdk', hostName: 'laptop' });
  await newest.wait('Release 2.4.0 of the client?');
  const { page } = await browser({ ...PHONE, colorScheme: 'dark', bypassCSP: true });
  await openPanel(page, hub);
  await selectSession(page, agent.token);
  await page.getByTestId('choices').waitFor();
  await page.getByTestId('waiting-pill').waitFor();
  await page.getByTestId('newest-pill').waitFor();
  await page.waitForTimeout(150); // transitions settle
  const title = page.getByTestId('conv-title');
  assert.ok(await title.evaluate((el) => el.scrollWidth <= el.clientWidth + 1 && el.scrollHeight <= el.clientHeight + 1
    && el.getBoundingClientRect().width > 0), 'the title is not cut beside the two pills');
  assert.ok(await title.evaluate((el) => el.getBoundingClientRect().width >= 300), 'the title has the width of the screen to wrap in');
  assert.equal(await page.getByTestId('header-where').textContent(), 'studio-mac · analytics-dashboard');
  assert.ok(await shownWhole(page.getByTestId('header-where')), 'machine · folder shows in full');
  for (const pill of ['waiting-pill', 'newest-pill']) {
    const box = await page.getByTestId(pill).boundingBox();
    assert.ok(box && box.height >= 44 && box.x >= 0 && box.x + box.width <= 390, `${pill} is a whole 44 px tap target on screen`);
  }
  const left = await page.getByTestId('messages').evaluate((el) => Math.round(el.getBoundingClientRect().height));
  console.log(`phone 390×844 with both pills: ${left} px left to read`);
  assert.ok(left >= 640, `${left} px left to read with both pills (at least 640 wanted)`);
  assert.equal(await hasHorizontalScroll(page), false);
  assert.deepEqual(await axeViolations(page), []);
  for (const a of [longest, next, newest]) await hub.api('POST', '/api/reply', { token: a.token, text: 'later' });
});

test('text attachments preview inline as text (cut at 64 KiB, said), download kept; markup in a log stays text', async () => {
  const agent = await newAgent(hub, 'Flaky login test', { workspace: '/home/dev/webapp', hostName: 'laptop' });
  const log = 'step 1 ok\nstep 2 ok\n<script>window.pwned = 1</script>\n<img src=x onerror="window.pwned = 2">\nstep 5 FAILED\n';
  const big = Array.from({ length: 3000 }, (_, i) => `line ${String(i).padStart(5, '0')} ${'x'.repeat(40)}`).join('\n');
  const b64 = (text) => Buffer.from(text).toString('base64');
  await agent.wait('The login test fails at step 5; logs attached. Retry?', {
    attachments: [{ name: 'test.log', mimeType: 'text/plain', data: b64(log) },
      { name: 'trace.json', mimeType: 'application/json', data: b64('{"step": 5, "ok": false}') },
      { name: 'full.log', mimeType: 'text/plain', data: b64(big) },
      { name: 'core.bin', mimeType: 'application/octet-stream', data: b64('\u0000\u0001binary') }],
  });
  const { page } = await browser({ bypassCSP: true });
  await openPanel(page, hub);
  await selectSession(page, agent.token);
  const previews = page.getByTestId('attachment-preview');
  await previews.first().waitFor();
  const text = (name) => page.locator(`[data-testid="attachment-preview"][data-name="${name}"]`);
  await page.waitForFunction(() => [...document.querySelectorAll('[data-testid="attachment-preview"]')].every((p) => p.textContent));
  assert.equal(await previews.count(), 3, 'the log, the JSON and the big log preview; the binary does not');
  assert.equal(await text('test.log').textContent(), log);
  assert.equal(await text('trace.json').textContent(), '{"step": 5, "ok": false}');
  assert.equal(await page.locator('[data-testid="attachments"] img').count(), 0, 'no element from the log\'s markup');
  assert.equal(await page.locator('[data-testid="attachments"] script').count(), 0);
  assert.equal(await page.evaluate(() => window.pwned), undefined, 'nothing in the log ran');
  const shown = await text('full.log').textContent();
  assert.ok(shown.length <= 64 * 1024 && big.startsWith(shown.slice(0, 1000)), `the big log is cut at 64 KiB (${shown.length} chars shown)`);
  assert.match(await page.getByTestId('attachment-preview-cut').innerText(), /64(\.0)? KB/);
  assert.equal(await page.getByTestId('attachment-file').count(), 4, 'every file keeps its download link');
  assert.deepEqual(await axeViolations(page), []);
});

/** Presses Tab until focus is on a session card (Enter on the skip link to the list, when it comes); answers the key presses. */
async function keysToFirstCard(page) {
  for (let presses = 1; presses <= 40; presses++) {
    await page.keyboard.press('Tab');
    const at = await page.evaluate(() => document.activeElement?.dataset?.testid || document.activeElement?.tagName);
    if (at === 'skip-list' || at === 'skip-list-after') {
      await page.keyboard.press('Enter');
      presses += 1;
    }
    if (await page.evaluate(() => !!document.activeElement?.closest('[data-testid="session-item"]'))) return presses;
  }
  return Infinity;
}

test('skip links reach the list, the conversation and the reply; after "Send anyway" focus is in the reply box', async () => {
  const agent = await newAgent(hub, 'Release train', { workspace: '/home/dev/release', hostName: 'laptop' });
  await agent.wait('Is the changelog right?');
  const { page } = await browser({ bypassCSP: true });
  await openPanel(page, hub);
  await page.locator('[data-testid="session-item"]').first().waitFor();
  await page.waitForTimeout(300); // the panel settles (it may open the longest-waiting session)
  // The panel opened the longest-waiting session and waits in its reply box.
  assert.equal(await page.evaluate(() => document.activeElement.dataset.testid), 'reply-input');
  const presses = await keysToFirstCard(page);
  console.log(`desktop: ${presses} key presses from load to the first card`);
  assert.ok(presses <= 3, `${presses} key presses from load to the first card (13 Tabs before issue 43)`);

  await selectSession(page, agent.token);
  assert.equal(await page.evaluate(() => document.querySelector('#app a, #app button, #app input').dataset.testid), 'skip-list',
    'the skip links come first in the page');
  await page.getByTestId('skip-list').focus();
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement.dataset.testid), 'skip-conversation');
  assert.ok(await page.getByTestId('skip-conversation').isVisible(), 'a skip link shows when focused');
  await page.keyboard.press('Enter');
  assert.equal(await page.evaluate(() => document.activeElement.dataset.testid), 'messages');
  await page.getByTestId('skip-list').focus();
  for (let i = 0; i < 2; i++) await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement.dataset.testid), 'skip-reply');
  await page.keyboard.press('Enter');
  assert.equal(await page.evaluate(() => document.activeElement.dataset.testid), 'reply-input');
  assert.deepEqual(await axeViolations(page), []);

  // The agent asks anew while the reply is on its way: "Send anyway" from the keyboard.
  let first = true;
  await page.route('**/api/reply', async (route) => {
    if (first) { first = false; await agent.wait('Deploy to prod now?'); }
    await route.continue();
  });
  await page.getByTestId('reply-input').fill('yes go ahead');
  await page.getByTestId('reply-input').press('Enter');
  await page.getByTestId('send-anyway').waitFor();
  assert.equal(await page.evaluate(() => document.activeElement.dataset.testid), 'send-anyway');
  await page.keyboard.press('Enter');
  assert.equal((await agent.reply(10_000)).text, 'yes go ahead');
  await page.getByTestId('stale-question').waitFor({ state: 'hidden' });
  assert.equal(await page.evaluate(() => document.activeElement.dataset.testid), 'reply-input',
    'focus waits in the reply box, not on a quick reply');
});

const CHANGES = {
  files: [
    { path: 'src/app.rs', status: 'modified', added: 2, removed: 1 },
    { path: 'docs/new.md', status: 'renamed', added: 0, removed: 0, oldPath: 'docs/old.md' },
    { path: 'notes.txt', status: 'untracked', added: 1, removed: 0 },
    { path: 'gone.txt', status: 'deleted', added: 0, removed: 4 },
    { path: 'src/lib.rs', status: 'added', added: 9, removed: 0 },
  ],
  diff: 'diff --git a/src/app.rs b/src/app.rs\n--- a/src/app.rs\n+++ b/src/app.rs\n@@ -1 +1,2 @@\n-old();\n+new();\n+more();\n',
};

/** An agent that asks three questions in one turn: two on the same changes, the third after one more edit. */
async function threeQuestions(title) {
  const agent = await newAgent(hub, title, { workspace: '/home/dev/app', hostName: 'laptop' });
  const more = { ...CHANGES, files: [...CHANGES.files, { path: 'README.md', status: 'modified', added: 1, removed: 1 }] };
  for (const [question, changes] of [['First: keep the rename?', CHANGES], ['Second: and the deleted file?', CHANGES], ['Third: README too?', more]]) {
    await agent.wait(question, { changes });
    if (question.startsWith('Third')) break;
    await hub.api('POST', '/api/reply', { token: agent.token, text: 'yes' });
    await agent.reply();
  }
  return agent;
}

for (const [layout, options] of [['desktop', {}], ['phone', PHONE]]) {
  test(`changes in words, shown once per change set, the newest open (${layout}, dark)`, async () => {
    const agent = await threeQuestions(`Changes ${layout}`);
    const { page } = await browser({ ...options, colorScheme: 'dark', bypassCSP: true });
    await openPanel(page, hub);
    await selectSession(page, agent.token);
    const question = (text) => page.getByTestId('message').filter({ hasText: text });
    await question('Third: README too?').getByTestId('workspace-changes').waitFor();
    const first = question('First: keep the rename?').getByTestId('workspace-changes');
    assert.deepEqual(await first.locator('.ws-status').allTextContents(), ['modified', 'renamed', 'new', 'deleted', 'added'],
      'each status said in a word ("new" for untracked, never "U")');
    assert.equal(await question('Second: and the deleted file?').getByTestId('workspace-changes').count(), 0, 'the same changes are not shown again');
    assert.match(await question('Second: and the deleted file?').getByTestId('changes-unchanged').textContent(), /unchanged since the last question/);
    const newest = question('Third: README too?').getByTestId('workspace-changes');
    assert.equal(await newest.evaluate((d) => d.open), true, 'the newest change set is open');
    assert.equal(await first.evaluate((d) => d.open), layout === 'desktop', 'an older one is open only on a desktop');
    assert.deepEqual(await axeViolations(page), []);
  });
}
