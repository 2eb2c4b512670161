// panel.test.mjs — the reply panel end to end: a real hub, Debian's chromium,
// a person in the browser and agents driving the hub's HTTP API.

import { test, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import {
  startHub, newAgent, openPanel, item, selectSession,
  hasHorizontalScroll, screenshot, PNG_4x4, sleep, browsersPerTest, recordNotifications,
} from './harness.mjs';

let hub;
before(async () => { hub = await startHub(); });
after(async () => { if (hub) await hub.stop(); });
const browser = browsersPerTest(afterEach);

test('login: the #key is traded for a cookie and dropped; a wrong key says so; logout', async () => {
  const { page, context } = await browser();

  await page.goto(`${hub.base}/#key=not-the-secret`);
  const error = page.getByTestId('login-error');
  await error.waitFor();
  assert.match(await error.textContent(), /wrong key/i);
  assert.equal(new URL(page.url()).hash, '', 'a wrong key is dropped from the address bar too');
  // The login screen has its own language switch.
  await page.getByTestId('login-lang').click();
  assert.equal(await page.locator('#login h1').textContent(), '登录 holdline');
  await page.getByTestId('login-lang').click();
  assert.equal(await page.locator('#login h1').textContent(), 'Sign in to holdline');

  await page.getByTestId('login-key').fill(hub.secret);
  await page.getByTestId('login-submit').click();
  await page.getByTestId('session-list').waitFor();
  assert.equal(await page.getByTestId('login-screen').isHidden(), true);

  await page.goto(`${hub.base}/#key=${hub.secret}`);
  await page.locator('#app:not([hidden])').waitFor();
  assert.equal(new URL(page.url()).hash, '', 'the key leaves the address bar');
  assert.ok(!page.url().includes(hub.secret));
  const cookies = await context.cookies(hub.base);
  const session = cookies.find((c) => c.name === 'holdline_session');
  assert.ok(session, 'login sets the session cookie');
  assert.equal(session.httpOnly, true);
  assert.equal(session.sameSite, 'Strict');

  // A reload keeps the person signed in (the cookie, not the key).
  await page.reload();
  await page.locator('#app:not([hidden])').waitFor();

  // Each login is its own id; logout revokes it at the hub, not just in the browser.
  const current = (await context.cookies(hub.base)).find((c) => c.name === 'holdline_session').value;
  assert.ok(!current.includes(hub.secret));
  const whoami = (value) => fetch(`${hub.base}/api/whoami`, { headers: { cookie: `holdline_session=${value}` } });
  assert.equal((await whoami(current)).status, 200);
  await page.getByTestId('logout').click();
  await page.getByTestId('login-screen').waitFor();
  assert.equal((await whoami(current)).status, 401, 'a logged-out cookie is dead at the hub');
  if (current !== session.value) {
    assert.equal((await whoami(session.value)).status, 401, 'a replaced login is dead too');
  }
  await page.reload();
  await page.getByTestId('login-screen').waitFor();
  assert.equal(await page.locator('#app').isHidden(), true);
});

test('log out everywhere: every browser is logged out', async () => {
  const first = await browser();
  const second = await browser();
  await openPanel(first.page, hub);
  await openPanel(second.page, hub);
  const cookie = async (ctx) => (await ctx.cookies(hub.base)).find((c) => c.name === 'holdline_session').value;
  const [a, b] = [await cookie(first.context), await cookie(second.context)];
  assert.notEqual(a, b, 'two logins, two ids');
  await first.page.getByTestId('logout-everywhere').click();
  await first.page.getByTestId('login-screen').waitFor();
  const whoami = (value) => fetch(`${hub.base}/api/whoami`, { headers: { cookie: `holdline_session=${value}` } });
  assert.equal((await whoami(b)).status, 401, 'the other browser is logged out too');
  await second.page.reload();
  await second.page.getByTestId('login-screen').waitFor();
});

test('too many wrong keys: the page says to wait, and the right key still gets in', async () => {
  const own = await startHub();
  try {
    for (let i = 0; i < 11; i++) {
      await fetch(`${own.base}/api/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"key":"nope"}' });
    }
    const { page } = await browser();
    await page.goto(`${own.base}/#key=still-not-the-secret`);
    const error = page.getByTestId('login-error');
    await error.waitFor();
    assert.match(await error.textContent(), /too many/i);
    // The right key still gets in: failures from a shared address cannot lock the person out.
    await page.getByTestId('login-key').fill(own.secret);
    await page.getByTestId('login-submit').click();
    await page.getByTestId('session-list').waitFor();
  } finally {
    await own.stop();
  }
});

test('a wait registered through the API appears live, waiting first, with progress', async () => {
  const { page } = await browser();
  await openPanel(page, hub);
  const idle = await newAgent(hub, 'Idle agent');
  const agent = await newAgent(hub, 'Live wait');
  await item(page, idle.token).waitFor();

  await agent.wait('Tests pass. **Next?**', { completionPct: 80, nextStep: 'commit the fix' });
  const li = item(page, agent.token);
  await li.waitFor();
  await page.waitForFunction((tok) => document.querySelector(`[data-token="${tok}"]`)?.dataset.status === 'waiting', agent.token);
  const order = await page.locator('[data-testid="session-item"]').evaluateAll((els) => els.map((e) => e.dataset.token));
  assert.ok(order.indexOf(agent.token) < order.indexOf(idle.token), 'waiting sessions come first');
  assert.match(await li.getByTestId('session-waited').textContent(), /waiting \d+s/);
  assert.match(await li.getByTestId('session-progress').textContent(), /80%.*commit the fix/);
  await page.waitForFunction(() => /^\(\d+\) holdline$/.test(document.title));

  await selectSession(page, agent.token);
  const msg = page.getByTestId('message').last();
  assert.equal(await msg.locator('strong').textContent(), 'Next?', 'Markdown is rendered');
});

test('a list answer that arrives late does not hide a session shown since', async () => {
  const { page } = await browser();
  // Hold back the first list answer (taken before the new session exists)
  // until the event stream has shown the new session.
  let release;
  const held = new Promise((r) => { release = r; });
  let lists = 0;
  await page.route((url) => url.pathname === '/api/sessions', async (route) => {
    if (++lists > 1) return route.continue();
    const stale = await route.fetch();
    await held;
    await route.fulfill({ response: stale });
  });
  await openPanel(page, hub);
  await page.waitForFunction(() => document.querySelector('#live')?.dataset.state === 'on');
  const late = await newAgent(hub, 'Arrived during the first fetch');
  await item(page, late.token).waitFor();
  release();
  await sleep(500);
  assert.ok(lists >= 2, 'the stream opening fetched the list again');
  assert.equal(await item(page, late.token).count(), 1, 'the session is still listed after the stale answer');
});

test('typing a reply and pressing Enter ends the wait with that text; Shift+Enter breaks a line', async () => {
  const { page } = await browser();
  await openPanel(page, hub);
  const agent = await newAgent(hub, 'Reply with Enter');
  await agent.wait('Which database?');
  await item(page, agent.token).waitFor();
  await selectSession(page, agent.token);

  const box = page.getByTestId('reply-input');
  await box.click();
  await box.pressSequentially('Use Postgres');
  await box.press('Shift+Enter');
  await box.pressSequentially('and add an index');
  await box.press('Enter');

  const reply = await agent.reply();
  assert.equal(reply.text, 'Use Postgres\nand add an index');
  assert.equal(reply.auto, false);
  // The agent may have the reply before the page has the hub's answer; the box
  // empties on that answer.
  await page.waitForFunction(() => document.querySelector('[data-testid="reply-input"]').value === '');
  await page.getByTestId('message').filter({ hasText: 'and add an index' }).waitFor();
  await page.waitForFunction(() => document.querySelector('[data-testid="reply-status"]')?.dataset.state === 'delivered');
});

test('a reply sent while no agent waits is shown as queued, then delivered', async () => {
  const { page } = await browser();
  await openPanel(page, hub);
  const agent = await newAgent(hub, 'Queued reply');
  await agent.wait('first question');
  const first = agent.reply(15_000);
  await item(page, agent.token).waitFor();
  await selectSession(page, agent.token);
  await page.getByTestId('reply-input').fill('answer one');
  await page.getByTestId('reply-input').press('Enter');
  assert.equal((await first).text, 'answer one');
  // The page empties the box when the hub answers it, which may come after the
  // agent has the reply: wait for that before typing the next one.
  await page.waitForFunction(() => document.querySelector('[data-testid="reply-input"]').value === '');

  await page.getByTestId('reply-input').fill('answer two, sent early');
  await page.getByTestId('reply-input').press('Enter');
  await page.waitForFunction(() => document.querySelector('[data-testid="reply-status"]')?.dataset.state === 'queued');
  const mark = page.getByTestId('message').filter({ hasText: 'answer two' }).getByTestId('delivery');
  await page.waitForFunction((el) => el.dataset.state === 'queued', await mark.elementHandle());

  await agent.wait('second question');
  assert.equal((await agent.reply()).text, 'answer two, sent early');
  await page.waitForFunction((el) => el.dataset.state === 'delivered', await mark.elementHandle());
});

test('an image pasted into the reply box reaches the waiting agent as an image', async () => {
  const { page } = await browser();
  await openPanel(page, hub);
  const agent = await newAgent(hub, 'Paste an image');
  await agent.wait('Send me a screenshot');
  await item(page, agent.token).waitFor();
  await selectSession(page, agent.token);

  await page.getByTestId('reply-input').click();
  await page.evaluate((b64) => {
    const bin = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    const dt = new DataTransfer();
    dt.items.add(new File([bin], 'shot.png', { type: 'image/png' }));
    const ev = new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true });
    document.querySelector('[data-testid="reply-input"]').dispatchEvent(ev);
  }, PNG_4x4);
  await page.getByTestId('attachment').waitFor();
  await page.getByTestId('reply-input').fill('here it is');
  await page.getByTestId('reply-send').click();

  const reply = await agent.reply();
  assert.equal(reply.text, 'here it is');
  assert.equal(reply.images.length, 1);
  assert.equal(reply.images[0].mimeType, 'image/png');
  assert.equal(reply.images[0].data, PNG_4x4);
  await page.getByTestId('message-image').first().waitFor();
  assert.equal(await page.getByTestId('attachment').count(), 0);

  // Dropping a file works too; a non-image is refused with a message.
  await agent.wait('Another one, please');
  // A reply names the question on screen: send once the new one is shown.
  await page.getByTestId('message').filter({ hasText: 'Another one, please' }).waitFor();
  await page.evaluate((b64) => {
    const bin = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    const dt = new DataTransfer();
    dt.items.add(new File([bin], 'drop.png', { type: 'image/png' }));
    dt.items.add(new File(['hello'], 'notes.txt', { type: 'text/plain' }));
    const zone = document.querySelector('[data-testid="conversation"]');
    zone.dispatchEvent(new DragEvent('dragover', { dataTransfer: dt, bubbles: true, cancelable: true }));
    zone.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
  }, PNG_4x4);
  await page.getByTestId('toast').filter({ hasText: 'PNG, JPEG' }).waitFor();
  await page.getByTestId('attachment').waitFor();
  assert.equal(await page.getByTestId('attachment').count(), 1);
  await page.getByTestId('reply-send').click();
  const dropped = await agent.reply();
  assert.equal(dropped.text, '');
  assert.equal(dropped.images[0].data, PNG_4x4);
});

test('quick replies fill the box to send; templates are editable and shared', async () => {
  const { page } = await browser();
  await openPanel(page, hub);
  const agent = await newAgent(hub, 'Quick reply');
  await agent.wait('Shall I go on?');
  await item(page, agent.token).waitFor();
  await selectSession(page, agent.token);

  const chips = page.getByTestId('quick-reply');
  await chips.first().waitFor();
  const expected = (await hub.api('GET', '/api/templates')).templates.find((tpl) => tpl.lang === 'en').text;
  await chips.first().click();
  assert.equal(await page.getByTestId('reply-input').inputValue(), expected);
  await page.getByTestId('reply-send').click();
  assert.equal((await agent.reply()).text, expected);

  await page.getByTestId('templates-edit').click();
  await page.getByTestId('template-add').click();
  await page.getByTestId('template-label').last().fill('Ship');
  await page.getByTestId('template-text').last().fill('Ship it to staging.');
  await page.getByTestId('templates-save').click();
  await page.getByTestId('quick-reply').filter({ hasText: 'Ship' }).waitFor();
  const saved = (await hub.api('GET', '/api/templates')).templates;
  assert.deepEqual(saved.at(-1), { label: 'Ship', text: 'Ship it to staging.' });
  assert.ok(saved.some((tpl) => tpl.lang === 'zh'), 'the other language\'s defaults are kept');

  await agent.wait('And now?');
  await page.getByTestId('message').filter({ hasText: 'And now?' }).waitFor();
  await page.getByTestId('quick-reply').filter({ hasText: 'Ship' }).click();
  await page.getByTestId('reply-input').press('Enter');
  assert.equal((await agent.reply()).text, 'Ship it to staging.');
});

test('a draft survives a reload and never leaks into another session', async () => {
  const { page } = await browser();
  await openPanel(page, hub);
  const a = await newAgent(hub, 'Draft A');
  const b = await newAgent(hub, 'Draft B');
  await a.wait('A asks');
  await b.wait('B asks');
  await item(page, b.token).waitFor();

  await selectSession(page, a.token);
  await page.getByTestId('reply-input').fill('half-written answer for A');
  await selectSession(page, b.token);
  assert.equal(await page.getByTestId('reply-input').inputValue(), '', 'B starts empty');
  await page.getByTestId('reply-input').fill('B draft');

  await page.reload();
  await page.locator('#app:not([hidden])').waitFor();
  await item(page, a.token).waitFor();
  await selectSession(page, a.token);
  assert.equal(await page.getByTestId('reply-input').inputValue(), 'half-written answer for A');
  await selectSession(page, b.token);
  assert.equal(await page.getByTestId('reply-input').inputValue(), 'B draft');

  // Sending clears only that session's draft.
  await page.getByTestId('reply-input').press('Enter');
  assert.equal((await b.reply()).text, 'B draft');
  await page.waitForFunction(() => document.querySelector('[data-testid="reply-input"]').value === '');
  await page.reload();
  await page.locator('#app:not([hidden])').waitFor();
  await item(page, b.token).waitFor();
  await selectSession(page, b.token);
  assert.equal(await page.getByTestId('reply-input').inputValue(), '');
  await selectSession(page, a.token);
  assert.equal(await page.getByTestId('reply-input').inputValue(), 'half-written answer for A');
});

test('language: browser language by default, switchable, remembered', async () => {
  const zh = await browser({ locale: 'zh-CN' });
  await openPanel(zh.page, hub);
  assert.equal(await zh.page.getByTestId('view-open').textContent(), '进行中');

  const { page } = await browser({ locale: 'en-US' });
  await openPanel(page, hub);
  assert.equal(await page.getByTestId('view-open').textContent(), 'Open');
  assert.equal(await page.getByTestId('logout').textContent(), 'Log out');
  await page.getByTestId('lang-toggle').click();
  assert.equal(await page.getByTestId('view-open').textContent(), '进行中');
  assert.equal(await page.getByTestId('logout').textContent(), '退出登录');
  assert.equal(await page.evaluate(() => document.documentElement.lang), 'zh-CN');
  await page.reload();
  await page.locator('#app:not([hidden])').waitFor();
  assert.equal(await page.getByTestId('view-open').textContent(), '进行中', 'the choice is remembered');
  await page.getByTestId('lang-toggle').click();
  assert.equal(await page.getByTestId('view-open').textContent(), 'Open');
});

test('merge one session into another, then archive and restore, each confirmed', async () => {
  const { page } = await browser();
  await openPanel(page, hub);
  // A person may merge across workspaces and machines (no binding check on the person's route).
  const from = await newAgent(hub, 'Merge source', { workspace: '/home/dev/merge-a' });
  const to = await newAgent(hub, 'Merge target', { workspace: '/home/dev/merge-b', hostIp: '127.0.0.2' });
  await to.wait('target history');
  await from.wait('source history: unique-merge-marker');
  await item(page, from.token).waitFor();
  await item(page, to.token).waitFor();

  await selectSession(page, from.token);
  await page.getByTestId('merge-open').click();
  await page.getByTestId('merge-target').selectOption(to.token);
  await page.getByTestId('merge-confirm').click();
  // The confirm box: cancelling first changes nothing.
  await page.getByTestId('confirm-cancel').click();
  assert.equal((await hub.api('GET', `/api/sessions/${from.token}`)).status, 'waiting');

  await page.getByTestId('merge-open').click();
  await page.getByTestId('merge-target').selectOption(to.token);
  await page.getByTestId('merge-confirm').click();
  await page.getByTestId('confirm-ok').click();
  await item(page, from.token).waitFor({ state: 'detached' });
  const src = await hub.api('GET', `/api/sessions/${from.token}`);
  assert.equal(src.status, 'merged');
  assert.equal(src.mergedInto, to.token);
  const gone = await from.reply(5000);
  assert.equal(gone.gone?.reason, 'merged');
  const dst = await hub.api('GET', `/api/sessions/${to.token}?limit=200`);
  assert.ok(dst.messages.some((m) => m.content.includes('unique-merge-marker')));
  // The panel shows the target now, with the merged history.
  await page.waitForFunction((tok) => document.querySelector('[data-testid="conv-title"]')?.title.includes(tok), to.token);
  await page.getByTestId('message').filter({ hasText: 'unique-merge-marker' }).waitFor();

  // Archive: asks first; the session leaves the open list for the archived one.
  await page.getByTestId('archive').click();
  await page.getByTestId('confirm-ok').click();
  await item(page, to.token).waitFor({ state: 'detached' });
  assert.equal((await hub.api('GET', `/api/sessions/${to.token}`)).status, 'archived');
  assert.equal(await page.getByTestId('reply-input').isDisabled(), true);
  await page.getByTestId('view-archived').click();
  await item(page, to.token).waitFor();
  await page.getByTestId('restore').click();
  await page.getByTestId('confirm-ok').click();
  await item(page, to.token).waitFor({ state: 'detached' });
  await page.getByTestId('view-open').click();
  await item(page, to.token).waitFor();
  assert.equal((await hub.api('GET', `/api/sessions/${to.token}`)).status, 'holding');
});

test('rename and keep-alive settings reach the hub', async () => {
  const { page } = await browser();
  await openPanel(page, hub);
  const agent = await newAgent(hub, 'Settings');
  await agent.wait('configure me');
  await item(page, agent.token).waitFor();
  await selectSession(page, agent.token);

  await page.getByTestId('rename').click();
  await page.getByTestId('rename-input').fill('Renamed by the person');
  await page.getByTestId('rename-save').click();
  await item(page, agent.token).getByTestId('session-title').filter({ hasText: 'Renamed by the person' }).waitFor();

  await page.getByTestId('settings-open').click();
  await page.getByTestId('mode-timed').check();
  await page.getByTestId('set-interval').fill('120');
  await page.getByTestId('set-prompt').fill('Keep going with the plan.');
  await page.getByTestId('set-streak').fill('5');
  await page.getByTestId('settings-save').click();
  await page.getByTestId('toast').filter({ hasText: 'Saved' }).waitFor();
  // The rename's own "Saved" may still be showing: wait for the hub to have the settings.
  let s;
  for (const deadline = Date.now() + 10_000; ; await sleep(50)) {
    s = await hub.api('GET', `/api/sessions/${agent.token}`);
    if (s.timedReplyEnabled || Date.now() > deadline) break;
  }
  assert.equal(s.displayTitle, 'Renamed by the person');
  assert.equal(s.timedReplyEnabled, true);
  assert.equal(s.sessionAutoContinue, false);
  assert.equal(s.timedReplyIntervalMs, 120_000);
  assert.equal(s.continuePrompt, 'Keep going with the plan.');
  assert.equal(s.maxAutoStreak, 5);
});

test('agent messages with <script>, onerror, javascript: links and raw HTML render inert', async () => {
  const { page } = await browser();
  const dialogs = [];
  page.on('dialog', (d) => { dialogs.push(d.message()); d.dismiss(); });
  await openPanel(page, hub);
  const agent = await newAgent(hub, 'XSS');
  const payload = [
    '<script>window.__xss = "script"; alert(1)</script>',
    '<img src=x onerror="window.__xss = \'img\'; alert(2)">',
    '[click me](javascript:window.__xss=\'link\')',
    '<a href="javascript:alert(3)">raw link</a>',
    '<iframe src="javascript:alert(4)"></iframe>',
    '<svg onload="alert(5)"></svg>',
    '<b onmouseover="alert(6)">raw bold</b>',
    '<div style="position:fixed;inset:0">overlay</div>',
    '`<script>in code</script>`',
  ].join('\n\n');
  await agent.wait(payload);
  await item(page, agent.token).waitFor();
  await selectSession(page, agent.token);
  const content = page.getByTestId('message-content').last();
  await content.waitFor();
  await page.mouse.move(400, 300);
  await content.getByText('click me').click().catch(() => {});
  await sleep(300);

  assert.equal(await page.evaluate(() => window.__xss), undefined);
  assert.deepEqual(dialogs, []);
  const found = await content.evaluate((root) => {
    const bad = [];
    for (const el of root.querySelectorAll('*')) {
      if (['SCRIPT', 'IMG', 'IFRAME', 'SVG', 'OBJECT', 'EMBED', 'STYLE', 'DIV', 'FORM'].includes(el.tagName.toUpperCase())) bad.push(el.tagName);
      for (const a of el.attributes) {
        if (/^on/i.test(a.name) || a.name === 'style' || a.name === 'src') bad.push(`${el.tagName}[${a.name}]`);
      }
      if (el.tagName === 'A' && !/^(https?:|mailto:)/i.test(el.getAttribute('href') || '')) bad.push(`a[href=${el.getAttribute('href')}]`);
    }
    return bad;
  });
  assert.deepEqual(found, [], 'no active element or attribute in the rendered message');
  const text = await content.textContent();
  assert.ok(text.includes('<script>window.__xss'), 'raw HTML shows as the text the agent wrote');
  assert.ok(text.includes('<img src=x onerror='));
  assert.equal(await content.locator('a[href^="javascript"]').count(), 0);
  assert.equal(await page.locator('script:not([type="module"])').count(), 0);
});

test('a 1 MB message renders without freezing the page', async () => {
  const { page } = await browser();
  await openPanel(page, hub);
  const agent = await newAgent(hub, 'Huge message');
  const line = 'All work and no play makes the agent a dull boy. 0123456789 abcdefghij\n';
  const big = line.repeat(Math.ceil(1_000_000 / line.length)).slice(0, 1_000_000);
  await agent.wait(big);
  await item(page, agent.token).waitFor();

  const started = Date.now();
  await selectSession(page, agent.token);
  await page.getByTestId('show-all').waitFor();
  const rendered = Date.now() - started;
  assert.ok(rendered < 5000, `rendered in ${rendered} ms`);
  // The page answers at once.
  const ping = Date.now();
  await page.evaluate(() => 1 + 1);
  assert.ok(Date.now() - ping < 1000);

  await page.getByTestId('show-all').click();
  await page.waitForFunction(() => {
    const el = [...document.querySelectorAll('[data-testid="message-content"]')].at(-1);
    return el && el.textContent.length >= 1_000_000;
  });
  assert.equal(await hasHorizontalScroll(page), false);
  const box = page.getByTestId('reply-input');
  await box.fill('still typing fine');
  assert.equal(await box.inputValue(), 'still typing fine');
});

test('a reply over the size cap gets a clear message in the page', async () => {
  const { page } = await browser();
  await openPanel(page, hub);
  const agent = await newAgent(hub, 'Too large');
  await agent.wait('send me everything');
  await item(page, agent.token).waitFor();
  await selectSession(page, agent.token);
  await page.evaluate(() => {
    const bytes = new Uint8Array(8 * 1024 * 1024);
    const dt = new DataTransfer();
    dt.items.add(new File([bytes], 'huge.png', { type: 'image/png' }));
    const ev = new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true });
    document.querySelector('[data-testid="reply-input"]').dispatchEvent(ev);
  });
  await page.getByTestId('attachment').waitFor();
  await page.getByTestId('reply-send').click();
  await page.waitForFunction(() => document.querySelector('[data-testid="reply-status"]')?.dataset.state === 'error');
  assert.match(await page.getByTestId('reply-status').textContent(), /too large/i);
});

test('live updates come back by themselves after a hub restart', async () => {
  const own = await startHub();
  try {
    const { page } = await browser();
    await openPanel(page, own);
    await page.waitForFunction(() => document.querySelector('[data-testid="live"]')?.dataset.state === 'on');
    await own.restart();
    const agent = await newAgent(own, 'After restart');
    await agent.wait('did you see me?');
    await item(page, agent.token).waitFor({ timeout: 30_000 });
    await page.waitForFunction(() => document.querySelector('[data-testid="live"]')?.dataset.state === 'on');
    // And events flow again on the new stream.
    const later = await newAgent(own, 'Later still');
    await later.wait('and me?');
    await item(page, later.token).waitFor({ timeout: 10_000 });
  } finally {
    await own.stop();
  }
});

test('search finds sessions by title and message text', async () => {
  const { page } = await browser();
  await openPanel(page, hub);
  const a = await newAgent(hub, 'Search alpha');
  const b = await newAgent(hub, 'Search beta');
  await a.wait('the needle is zebra-quartz-17');
  await b.wait('nothing to see');
  await item(page, b.token).waitFor();
  // The results follow the group of waiting sessions that do not match (they stay in view).
  const results = () => page.evaluate(() => {
    const items = [...document.querySelectorAll('#session-list > li')];
    return items.slice(items.findIndex((li) => li.dataset.testid === 'search-results-group') + 1).map((li) => li.dataset.token);
  });
  const waitingAbove = (tok) => page.evaluate((t) => {
    const items = [...document.querySelectorAll('#session-list > li')];
    const at = items.findIndex((li) => li.dataset.token === t);
    return at > 0 && at < items.findIndex((li) => li.dataset.testid === 'search-results-group');
  }, tok);
  await page.getByTestId('search').fill('zebra-quartz');
  await page.waitForFunction((tok) => document.querySelector('[data-testid="search-results-group"] ~ [data-token]')?.dataset.token === tok, a.token);
  assert.deepEqual(await results(), [a.token]);
  assert.equal(await waitingAbove(b.token), true, 'b waits: shown above the results');
  await page.getByTestId('search').fill('search beta');
  await page.waitForFunction((tok) => document.querySelector('[data-testid="search-results-group"] ~ [data-token]')?.dataset.token === tok, b.token);
  assert.deepEqual(await results(), [b.token]);
  assert.equal(await waitingAbove(a.token), true);
  await page.getByTestId('search').fill('');
  await page.getByTestId('search-results-group').waitFor({ state: 'detached' });
  await item(page, a.token).waitFor();
  await item(page, b.token).waitFor();
});

test('long histories page back with "load older"', async () => {
  const { page } = await browser();
  await openPanel(page, hub);
  const agent = await newAgent(hub, 'Long history');
  for (let i = 1; i <= 65; i++) await agent.wait(`message number ${i}`);
  await item(page, agent.token).waitFor();
  await selectSession(page, agent.token);
  await page.getByTestId('message').filter({ hasText: 'message number 65' }).waitFor();
  const texts = async () => (await page.getByTestId('message-content').allTextContents()).map((x) => x.trim());
  const first = await texts();
  assert.ok(first.length < 65, `the first page is short (${first.length})`);
  assert.ok(!first.includes('message number 1'));
  await page.getByTestId('load-older').click();
  await page.waitForFunction(() => [...document.querySelectorAll('[data-testid="message-content"]')].some((e) => e.textContent.trim() === 'message number 1'));
  const all = await texts();
  assert.equal(all.length, 65);
  assert.deepEqual(all, Array.from({ length: 65 }, (_, i) => `message number ${i + 1}`), 'oldest first, none twice');
  assert.equal(await page.getByTestId('load-older').isHidden(), true);
});

test('automatic replies are marked as such', async () => {
  const { page } = await browser();
  await openPanel(page, hub);
  const agent = await newAgent(hub, 'Auto reply');
  await hub.api('POST', '/api/session/config', {
    token: agent.token, timedReplyEnabled: true, timedReplyIntervalMs: 200, continuePrompt: 'Keep going (automatic).',
  });
  await agent.wait('working on it');
  const reply = await agent.reply();
  assert.equal(reply.auto, true);
  await item(page, agent.token).waitFor();
  await selectSession(page, agent.token);
  const auto = page.getByTestId('message').filter({ hasText: 'Keep going (automatic).' });
  await auto.getByTestId('auto-tag').waitFor();
});

test('a new wait notifies with a desktop notification and a sound, unless turned off', async () => {
  const { page, context } = await browser();
  await recordNotifications(context);
  await openPanel(page, hub);
  const agent = await newAgent(hub, 'Notify me');
  await agent.wait('ping');
  await page.waitForFunction(() => window.__notes.length === 1);
  assert.match(await page.evaluate(() => window.__notes[0].title), /Notify me/);
  assert.ok(await page.evaluate(() => window.__tones) > 0, 'a chime played');

  await page.getByTestId('notify-toggle').click();
  await page.getByTestId('notify-enabled').uncheck();
  await page.getByTestId('notify-close').click();
  assert.equal(await page.getByTestId('notify-toggle').getAttribute('data-state'), 'off');
  const other = await newAgent(hub, 'Quiet please');
  await other.wait('pong');
  await item(page, other.token).waitFor();
  await sleep(300);
  assert.equal(await page.evaluate(() => window.__notes.length), 1);
  await page.reload();
  await page.locator('#app:not([hidden])').waitFor();
  assert.equal(await page.getByTestId('notify-toggle').getAttribute('data-state'), 'off', 'the switch is remembered');
});

test('light/dark follows the system and the toggle, remembered', async () => {
  const { page } = await browser({ colorScheme: 'dark' });
  await openPanel(page, hub);
  const bg = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  const dark = await bg();
  await page.getByTestId('theme-toggle').click();
  assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), 'light');
  const light = await bg();
  assert.notEqual(light, dark);
  await page.reload();
  await page.locator('#app:not([hidden])').waitFor();
  assert.equal(await bg(), light, 'the choice is remembered');
});

test('the hub refuses requests from another origin', async () => {
  const res = await fetch(`${hub.base}/api/sessions`, {
    headers: { authorization: `Bearer ${hub.secret}`, origin: 'http://evil.example' },
  });
  assert.equal(res.status, 403);
});

test('three agents at once, all answered from a phone without reloading', async () => {
  const { page } = await browser({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
  await openPanel(page, hub);
  const agents = await Promise.all(['Phone one', 'Phone two', 'Phone three'].map((n, i) => newAgent(hub, n, { workspace: `/srv/app-${i}`, hostIp: `127.0.0.${i + 1}` })));
  await Promise.all(agents.map((a, i) => a.wait(`question ${i + 1}?`)));
  const replies = agents.map((a) => a.reply(60_000));
  let navigations = 0;
  page.on('framenavigated', (f) => { if (f === page.mainFrame()) navigations++; });
  for (const [i, a] of agents.entries()) {
    await item(page, a.token).waitFor();
    await selectSession(page, a.token);
    await page.getByTestId('reply-input').fill(`answer ${i + 1}`);
    await page.getByTestId('reply-send').tap();
    await page.waitForFunction(() => ['sent', 'delivered'].includes(document.querySelector('[data-testid="reply-status"]')?.dataset.state));
    await page.getByTestId('back').tap();
  }
  const got = await Promise.all(replies);
  assert.deepEqual(got.map((r) => r.text), ['answer 1', 'answer 2', 'answer 3']);
  for (const a of agents) {
    await page.waitForFunction((tok) => document.querySelector(`[data-token="${tok}"]`)?.dataset.status !== 'waiting', a.token);
  }
  assert.equal(navigations, 0, 'no reload');
  assert.equal(await hasHorizontalScroll(page), false);
});

test('no horizontal scroll at 1280×800 and 390×844; screenshots', async () => {
  const desk = await browser({ viewport: { width: 1280, height: 800 } });
  await openPanel(desk.page, hub);
  const agent = await newAgent(hub, 'Layout check with a rather long title that must not push the page sideways');
  await agent.wait('A long unbroken line: ' + 'x'.repeat(600) + '\n\n```\n' + 'code '.repeat(200) + '\n```', { completionPct: 40, nextStep: 'wrap long lines' });
  await item(desk.page, agent.token).waitFor();
  assert.equal(await hasHorizontalScroll(desk.page), false, 'list at 1280×800');
  await selectSession(desk.page, agent.token);
  assert.equal(await hasHorizontalScroll(desk.page), false, 'conversation at 1280×800');

  const phone = await browser({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 });
  await openPanel(phone.page, hub);
  await item(phone.page, agent.token).waitFor();
  assert.equal(await hasHorizontalScroll(phone.page), false, 'list at 390×844');
  await selectSession(phone.page, agent.token);
  assert.equal(await hasHorizontalScroll(phone.page), false, 'conversation at 390×844');
  await phone.page.getByTestId('conv-menu').click();
  await phone.page.getByTestId('settings-open').click();
  assert.equal(await hasHorizontalScroll(phone.page), false, 'settings dialog at 390×844');
  await phone.page.keyboard.press('Escape');
  await phone.page.getByTestId('back').click();
  await phone.page.getByTestId('session-list').waitFor();
});
