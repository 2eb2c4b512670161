// daily2.test.mjs — issue 28's daily-use items in Chromium: keep-alive modes
// named for what they do, a long message that opens on its question (body
// folded, changed files listed, code blocks focusable with copy and wrap),
// quick replies in the conversation's language and per session, search that
// keeps waiting agents in view with several plain snippets per session, a
// failing channel's hint, the header after a merge and merged-in messages
// marked, and the panel opening on the longest-waiting session.

import { test, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import {
  startHub, newAgent, openPanel, item, selectSession, sleep, browsersPerTest,
} from './harness.mjs';

let hub;
before(async () => { hub = await startHub(); });
after(async () => { if (hub) await hub.stop(); });
const browser = browsersPerTest(afterEach);

const LONG_LINE = `let summary = ${JSON.stringify('x'.repeat(400))};`;
const LONG_MESSAGE = [
  '# Parser rewrite: report',
  '',
  'What I changed:',
  '',
  '| file | change |',
  '|---|---|',
  ...Array.from({ length: 14 }, (_, i) => `| src/part${i}.rs | rewrote step ${i} |`),
  '',
  '```diff',
  'diff --git a/src/parser.rs b/src/parser.rs',
  '--- a/src/parser.rs',
  '+++ b/src/parser.rs',
  '@@ -1 +1 @@',
  '-old',
  '+new',
  '--- a/docs/old.md',
  '+++ /dev/null',
  '@@ -1 +0,0 @@',
  '-gone',
  '```',
  '',
  '```rust',
  LONG_LINE,
  '```',
  '',
  'Shall I merge the parser rewrite into main now?',
].join('\n');

/** Whether `locator`'s element is fully inside the message pane and the window. */
async function inView(locator) {
  return locator.evaluate((el) => {
    const r = el.getBoundingClientRect();
    const pane = document.querySelector('[data-testid="messages"]').getBoundingClientRect();
    return r.height > 0 && r.top >= pane.top - 1 && r.bottom <= pane.bottom + 1 && r.bottom <= innerHeight;
  });
}

test('keep-alive modes say what they do, in the settings, the header and the list (en and zh)', async () => {
  const { page } = await browser();
  await openPanel(page, hub);
  const a = await newAgent(hub, 'Keep-alive names');
  await a.wait('working on it');
  await item(page, a.token).waitFor();
  await selectSession(page, a.token);
  await page.getByTestId('settings-open').click();
  const dialog = page.getByTestId('settings-dialog');
  await dialog.waitFor();
  const labels = await dialog.locator('label.radio').allInnerTexts();
  assert.match(labels[1], /Timed reply: send the continue prompt every interval while no one answers/);
  assert.match(labels[2], /whenever the agent names a next step/);
  assert.ok(!labels.some((l) => /when idle/i.test(l)), labels.join(' | '));
  await page.getByTestId('mode-auto').check();
  await page.getByTestId('settings-save').click();
  await page.waitForFunction(() => /names a next step \(up to 20 in a row\)/.test(document.querySelector('[data-testid="conv-keepalive"]')?.textContent || ''));
  assert.match(await item(page, a.token).getByTestId('session-keepalive').textContent(), /next step/);

  await page.getByTestId('lang-toggle').click();
  await page.waitForFunction(() => /下一步/.test(document.querySelector('[data-testid="conv-keepalive"]')?.textContent || ''));
  await page.getByTestId('settings-open').click();
  const zh = await dialog.locator('label.radio').allInnerTexts();
  assert.match(zh[1], /无人回复时/);
  assert.match(zh[2], /说出下一步时/);
  await page.keyboard.press('Escape');
  await page.getByTestId('lang-toggle').click();
});

test('a long message opens on its question: body folded, changed files listed, code focusable with copy and wrap', async () => {
  const { page, context } = await browser();
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: hub.base });
  await openPanel(page, hub);
  const a = await newAgent(hub, 'Long report');
  await a.wait(LONG_MESSAGE);
  await item(page, a.token).waitFor();
  await selectSession(page, a.token);

  const msg = page.getByTestId('message').filter({ hasText: 'Shall I merge' });
  const question = msg.getByTestId('fold-question');
  await question.waitFor();
  assert.match(await question.textContent(), /Shall I merge the parser rewrite into main now\?/);
  assert.equal(await inView(question), true, 'the question is in view on open');
  assert.equal(await msg.getByTestId('fold-body').isHidden(), true, 'the body is folded');
  assert.equal(await msg.locator('h1').textContent(), 'Parser rewrite: report', 'the title stays');
  const toggle = msg.getByTestId('fold-toggle');
  assert.equal(await toggle.getAttribute('aria-expanded'), 'false');
  assert.match(await toggle.textContent(), /Show the whole message \(\d+ lines\)/);

  // The files the diff changes, at the top.
  const files = await msg.getByTestId('changed-files').locator('li').allInnerTexts();
  assert.deepEqual(files, ['src/parser.rs', 'docs/old.md']);

  // Unfold, fold again.
  await toggle.click();
  assert.equal(await toggle.getAttribute('aria-expanded'), 'true');
  assert.equal(await msg.getByTestId('fold-body').isVisible(), true);
  assert.match(await msg.getByTestId('fold-body').textContent(), /src\/part13\.rs/);
  assert.match(await toggle.textContent(), /Collapse/);
  await toggle.click();
  assert.equal(await msg.getByTestId('fold-body').isHidden(), true);
  await toggle.click();

  // The Rust block: named, reached with Tab, copied, wrapped.
  const block = msg.getByTestId('codeblock').filter({ hasText: 'let summary' });
  const pre = block.locator('pre');
  assert.equal(await pre.getAttribute('tabindex'), '0');
  assert.equal(await pre.getAttribute('aria-label'), 'Code (rust)');
  await block.getByTestId('code-copy').focus();
  await page.keyboard.press('Tab');
  assert.equal(await pre.evaluate((el) => el === document.activeElement), true, 'Tab reaches the code');
  const scrolls = () => pre.evaluate((el) => el.scrollWidth > el.clientWidth + 1);
  assert.equal(await scrolls(), true, 'the long line scrolls sideways');
  await page.keyboard.press('End'); // the focused block scrolls with the keyboard
  await block.getByTestId('code-copy').click();
  await page.waitForFunction(() => document.querySelector('#toast, .toast')?.textContent?.includes('Copied'));
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), LONG_LINE);
  const wrap = block.getByTestId('code-wrap');
  assert.equal(await wrap.getAttribute('aria-pressed'), 'false');
  await wrap.click();
  assert.equal(await wrap.getAttribute('aria-pressed'), 'true');
  assert.equal(await scrolls(), false, 'wrapped: no sideways scroll');
  await wrap.click();
  assert.equal(await scrolls(), true);
});

test('on a phone the long message opens on its question too, its buttons 44 px', async () => {
  const { page } = await browser({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
  await openPanel(page, hub);
  const a = await newAgent(hub, 'Long report on a phone');
  await a.wait(LONG_MESSAGE);
  await item(page, a.token).waitFor();
  await selectSession(page, a.token);
  const msg = page.getByTestId('message').filter({ hasText: 'Shall I merge' });
  await msg.getByTestId('fold-question').waitFor();
  assert.equal(await inView(msg.getByTestId('fold-question')), true, 'the question is in view on open');
  await msg.getByTestId('fold-toggle').click();
  const small = await msg.evaluate((el) => [...el.querySelectorAll('button')]
    .map((b) => ({ id: b.dataset.testid, r: b.getBoundingClientRect() }))
    .filter(({ r }) => r.width > 0 && (r.height < 44 || r.width < 44))
    .map(({ id, r }) => `${id} ${Math.round(r.width)}×${Math.round(r.height)}`));
  assert.deepEqual(small, []);
  assert.equal(await page.evaluate(() => document.documentElement.scrollWidth <= innerWidth), true, 'no sideways scroll of the page');
});

test('quick replies follow the conversation\'s language, and a session can have its own', async () => {
  const { page } = await browser();
  await openPanel(page, hub);
  const zh = await newAgent(hub, 'Chinese conversation');
  await zh.wait('我已经修好了解析器的测试，全部通过。要提交吗？');
  const en = await newAgent(hub, 'English conversation');
  await en.wait('All parser tests pass now. Shall I commit?');
  await item(page, en.token).waitFor();
  const chips = () => page.getByTestId('quick-reply').allInnerTexts();

  await selectSession(page, zh.token);
  await page.waitForFunction(() => [...document.querySelectorAll('[data-testid="quick-reply"]')].some((b) => b.textContent === '继续'));
  assert.ok(!(await chips()).includes('Continue'), 'an English panel shows a Chinese conversation the zh templates');
  await selectSession(page, en.token);
  await page.waitForFunction(() => [...document.querySelectorAll('[data-testid="quick-reply"]')].some((b) => b.textContent === 'Continue'));
  assert.ok(!(await chips()).includes('继续'));

  // In a Chinese panel, the English conversation still gets the English templates.
  await page.getByTestId('lang-toggle').click();
  await selectSession(page, zh.token);
  await selectSession(page, en.token);
  await page.waitForFunction(() => [...document.querySelectorAll('[data-testid="quick-reply"]')].some((b) => b.textContent === 'Continue'));
  assert.ok(!(await chips()).includes('继续'));
  await page.getByTestId('lang-toggle').click();

  // The English session gets its own quick reply; the other does not see it.
  await page.getByTestId('templates-edit').click();
  await page.getByTestId('templates-dialog').waitFor();
  await page.getByTestId('template-scope').selectOption('session');
  assert.equal(await page.getByTestId('template-row').count(), 0, 'no own quick replies yet');
  await page.getByTestId('template-add').click();
  await page.getByTestId('template-label').last().fill('Staging');
  await page.getByTestId('template-text').last().fill('Deploy it to staging first.');
  await page.getByTestId('templates-save').click();
  const own = page.getByTestId('own-quick-reply');
  await own.waitFor();
  assert.equal(await own.textContent(), 'Staging');
  assert.ok((await chips()).includes('Continue'), 'the shared ones stay');
  await own.click();
  assert.equal(await page.getByTestId('reply-input').inputValue(), 'Deploy it to staging first.');
  await page.getByTestId('reply-input').fill('');
  await selectSession(page, zh.token);
  assert.equal(await page.getByTestId('own-quick-reply').count(), 0);
  // Kept across a reload; the shared templates were not changed.
  await page.reload();
  await item(page, en.token).waitFor();
  await selectSession(page, en.token);
  await page.getByTestId('own-quick-reply').waitFor();
  const shared = (await hub.api('GET', '/api/templates')).templates || [];
  assert.ok(!shared.some((tpl) => tpl.text === 'Deploy it to staging first.'));
  // The hub keeps them with the session: another browser (the phone) sees them too.
  const session = await hub.api('GET', `/api/sessions/${en.token}`);
  assert.deepEqual(session.quickReplies, [{ label: 'Staging', text: 'Deploy it to staging first.' }]);
  const { page: phone } = await browser({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
  await openPanel(phone, hub);
  await selectSession(phone, en.token);
  await phone.getByTestId('own-quick-reply').waitFor();
});

test('search: waiting agents stay in view, up to three plain snippets per session and how many more', async () => {
  const own = await startHub();
  try {
    const { page } = await browser();
    await openPanel(page, own);
    const found = await newAgent(own, 'Has the words');
    for (let i = 1; i <= 5; i++) {
      await found.wait(`Round ${i}: the **zebra-quartz** check in \`lib.rs\` passes.`);
      await own.api('POST', '/api/reply', { token: found.token, text: `ok ${i}` });
      await found.reply();
    }
    const waiting = await newAgent(own, 'Waiting elsewhere');
    await waiting.wait('Which database should I use?');
    await item(page, waiting.token).waitFor();

    await page.getByTestId('search').fill('zebra-quartz');
    await page.getByTestId('search-waiting-group').waitFor();
    const order = await page.evaluate(() => [...document.querySelectorAll('#session-list > li')].map((li) => li.dataset.testid === 'session-item' ? li.dataset.token : li.dataset.testid));
    assert.deepEqual(order, ['search-waiting-group', waiting.token, 'search-results-group', found.token]);
    const result = item(page, found.token);
    await page.waitForFunction((tok) => document.querySelectorAll(`[data-token="${tok}"] [data-testid="session-snippet"]`).length === 3, found.token);
    const snippets = await result.getByTestId('session-snippet').allInnerTexts();
    for (const s of snippets) {
      assert.match(s, /the zebra-quartz check in lib\.rs passes/);
      assert.ok(!s.includes('**') && !s.includes('`'), s);
    }
    assert.match(snippets[0], /Round 5/, 'newest first');
    assert.equal(await result.getByTestId('session-more-hits').textContent(), '+2 more matches in this session');
    assert.equal(await result.locator('mark').first().textContent(), 'zebra-quartz');

    // A click on the third snippet opens the conversation at that match, not the newest.
    await result.getByTestId('session-snippet').nth(2).click();
    await page.waitForFunction(() => document.querySelector('#message-list .msg.hit')?.textContent.includes('Round 3'));
    assert.equal(await page.locator('#message-list .msg.hit').count(), 1);

    await page.getByTestId('search').fill('');
    await page.getByTestId('search-waiting-group').waitFor({ state: 'detached' });
  } finally {
    await own.stop();
  }
});

test('a channel nothing listens at shows what to fix under the bell', async () => {
  const closed = await new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
  const own = await startHub({ config: `[notify]\nafter_sec = 0\n[[notify.webhook]]\nurl = "http://127.0.0.1:${closed}/hook"\nformat = "json"\n` });
  try {
    const a = await newAgent(own, 'Told nowhere');
    await a.wait('anyone?');
    for (let i = 0; i < 100; i++) {
      if ((await own.api('GET', '/healthz')).notify?.[0]?.lastError) break;
      await sleep(100);
    }
    const { page } = await browser();
    await openPanel(page, own);
    await page.getByTestId('notify-toggle').click();
    const hint = page.getByTestId('channel-hint');
    await hint.waitFor();
    assert.match(await hint.textContent(), /what to fix: nothing listens at the channel’s URL\. Is the service running/);
    assert.match(await page.getByTestId('notify-channel').textContent(), /Connection refused/i);
  } finally {
    await own.stop();
  }
});

test('after a merge the header shows the merged progress and merged-in messages say where they came from', async () => {
  const { page } = await browser();
  await openPanel(page, hub);
  const target = await newAgent(hub, 'Merge target', { workspace: '/srv/merge' });
  await target.wait('old question', { completionPct: 30, nextStep: 'write the parser' });
  await sleep(20);
  const source = await newAgent(hub, 'Merge source', { workspace: '/srv/merge' });
  await source.wait('parser done, tag it?', { completionPct: 85, nextStep: 'tag the release' });
  await item(page, target.token).waitFor();
  await selectSession(page, target.token);
  await page.waitForFunction(() => /30%/.test(document.querySelector('#conv-progress')?.textContent || ''));

  await hub.api('POST', `/api/sessions/${source.token}/merge`, { toToken: target.token });
  await page.waitForFunction(() => /85%.*tag the release/.test(document.querySelector('#conv-progress')?.textContent || ''));
  const merged = page.getByTestId('message').filter({ hasText: 'parser done, tag it?' });
  await merged.waitFor();
  assert.equal(await merged.getByTestId('merged-in').textContent(), 'from “Merge source”');
  assert.match(await merged.getByTestId('merged-in').getAttribute('title'), /before the merge/);
  const old = page.getByTestId('message').filter({ hasText: 'old question' });
  assert.equal(await old.getByTestId('merged-in').isHidden(), true, 'the target\'s own messages are not marked');
  const note = page.getByTestId('message').filter({ hasText: 'Merged from' });
  assert.equal(await note.getByTestId('merged-in').isHidden(), true);
});

test('the panel opens on the longest-waiting session on a desktop, and on the list on a phone', async () => {
  const own = await startHub();
  try {
    const first = await newAgent(own, 'Waited longest');
    await first.wait('first question');
    await sleep(20);
    const second = await newAgent(own, 'Waited less');
    await second.wait('second question');
    const idle = await newAgent(own, 'Not waiting');
    void idle;

    const { page } = await browser();
    await openPanel(page, own);
    await page.waitForFunction((tok) => document.querySelector('[data-testid="conv-title"]')?.title.includes(tok), first.token);
    assert.equal(await page.locator('#conv-empty').isHidden(), true, 'no "Pick a session…"');
    assert.equal(await item(page, first.token).evaluate((el) => el.classList.contains('selected')), true);

    const phone = await browser({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    await openPanel(phone.page, own);
    await item(phone.page, first.token).waitFor();
    await sleep(500);
    assert.equal(await phone.page.evaluate(() => document.body.classList.contains('conv-open')), false, 'a phone keeps the list');
    assert.equal(await item(phone.page, first.token).isVisible(), true);
  } finally {
    await own.stop();
  }
});
