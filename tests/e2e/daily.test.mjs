// daily.test.mjs — the panel as a person keeps it open all day: a hub that
// goes away and comes back, notifications only for what is not on screen,
// delivery marks from the reply's own state, a list that holds still under
// the pointer, the reply box's quick replies, phone layout and keep-alive display.

import { test, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import {
  startHub, newAgent, openPanel, item, selectSession, sleep, makePng, browsersPerTest, recordNotifications,
} from './harness.mjs';

let hub;
before(async () => { hub = await startHub(); });
after(async () => { if (hub) await hub.stop(); });
const browser = browsersPerTest(afterEach);

const replyState = (page) => page.evaluate(() => document.querySelector('[data-testid="reply-status"]')?.dataset.state);
const shownToken = (page) => page.evaluate(() => document.querySelector('[data-testid="conv-title"]')?.title.match(/ct_\w+/)?.[0]);


test('hub away: a banner, the open conversation kept, a reply that waits and sends itself, then a refresh', async () => {
  const own = await startHub();
  try {
    const { page } = await browser();
    await openPanel(page, own);
    const a = await newAgent(own, 'Kept on screen');
    const b = await newAgent(own, 'Clicked while away');
    await a.wait('question A');
    await b.wait('question B');
    await item(page, b.token).waitFor();
    await selectSession(page, a.token);
    await page.waitForFunction(() => document.querySelector('[data-testid="live"]')?.dataset.state === 'on');
    assert.equal(await page.getByTestId('offline-banner').isHidden(), true, 'no banner while the hub answers');

    await own.down();
    await page.getByTestId('offline-banner').waitFor({ timeout: 10_000 });
    assert.match(await page.getByTestId('offline-banner').textContent(), /hub/i);

    // Clicking another session while the hub is away keeps the open one, in the pane and in the list.
    await item(page, b.token).locator('button').first().click();
    await sleep(700);
    assert.equal(await shownToken(page), a.token);
    assert.equal(await page.locator('#conv-body').isHidden(), false, 'the pane is not emptied');
    assert.equal(await item(page, a.token).evaluate((el) => el.classList.contains('selected')), true);
    assert.equal(await item(page, b.token).evaluate((el) => el.classList.contains('selected')), false);

    // A reply sent now waits for the hub, kept as the draft.
    await page.getByTestId('reply-input').fill('sent while the hub was away');
    await page.getByTestId('reply-input').press('Enter');
    await page.waitForFunction(() => document.querySelector('[data-testid="reply-status"]')?.dataset.state === 'pending');
    assert.match(await page.getByTestId('reply-status').textContent(), /hub/i);

    await own.up();
    await page.getByTestId('offline-banner').waitFor({ state: 'hidden', timeout: 30_000 });
    // It goes out by itself, once.
    assert.equal((await a.reply(30_000)).text, 'sent while the hub was away');
    await page.waitForFunction(() => document.querySelector('[data-testid="reply-input"]').value === '');
    await page.waitForFunction(() => ['sent', 'delivered'].includes(document.querySelector('[data-testid="reply-status"]')?.dataset.state));
    const users = (await own.api('GET', `/api/sessions/${a.token}`)).messages.filter((m) => m.role === 'user');
    assert.equal(users.length, 1, 'sent once');

    // The open conversation follows the hub again without a click.
    await a.wait('after the restart');
    await page.getByTestId('message').filter({ hasText: 'after the restart' }).waitFor({ timeout: 10_000 });
    assert.equal(await shownToken(page), a.token);
  } finally {
    await own.stop();
  }
});

test('no chime or notification for the session on screen while the tab is visible', async () => {
  const { page, context } = await browser();
  await recordNotifications(context);
  await openPanel(page, hub);
  const a = await newAgent(hub, 'Typing here');
  const b = await newAgent(hub, 'Somewhere else');
  await a.wait('first question');
  await page.waitForFunction(() => window.__notes.length === 1);
  await selectSession(page, a.token);
  const tones = await page.evaluate(() => window.__tones);

  // A fast agent: answered from the page, it waits again at once.
  await page.getByTestId('reply-input').fill('go on');
  await page.getByTestId('reply-input').press('Enter');
  await a.reply();
  await a.wait('second question');
  await page.getByTestId('message').filter({ hasText: 'second question' }).waitFor();
  await sleep(300);
  assert.equal(await page.evaluate(() => window.__notes.length), 1, 'no notification for the conversation on screen');
  assert.equal(await page.evaluate(() => window.__tones), tones, 'no chime for it either');

  // Another session still notifies.
  await b.wait('elsewhere');
  await page.waitForFunction(() => window.__notes.length === 2);
  assert.match(await page.evaluate(() => window.__notes[1].title), /Somewhere else/);

  // With the tab hidden, the session on screen notifies too.
  await page.evaluate(() => {
    Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => 'hidden' });
    Object.defineProperty(document, 'hidden', { configurable: true, get: () => true });
    document.dispatchEvent(new Event('visibilitychange'));
  });
  await hub.api('POST', '/api/reply', { token: a.token, text: 'third' });
  await a.reply();
  await a.wait('third question');
  await page.waitForFunction(() => window.__notes.length === 3);
});

test('the status line says delivered when the agent takes the reply and waits again at once', async () => {
  const { page } = await browser();
  await openPanel(page, hub);
  const a = await newAgent(hub, 'Fast agent');
  await a.wait('first');
  await item(page, a.token).waitFor();
  await selectSession(page, a.token);
  for (const text of ['one', 'two', 'three']) {
    await page.getByTestId('reply-input').fill(text);
    await page.getByTestId('reply-input').press('Enter');
    assert.equal((await a.reply()).text, text);
    await a.wait(`after ${text}`);
    await page.waitForFunction(() => document.querySelector('[data-testid="reply-status"]')?.dataset.state === 'delivered', null, { timeout: 5000 });
    // A reply names the question on screen: the next one goes once the new question is shown.
    await page.getByTestId('message').filter({ hasText: `after ${text}` }).waitFor();
  }
  // A reply queued behind this one does not make it look undelivered: the mark is per reply.
  const mark = page.locator('[data-testid="message"][data-role="user"]').filter({ hasText: 'three' }).getByTestId('delivery');
  assert.equal(await mark.getAttribute('data-state'), 'delivered');
});

test('the list holds still under the pointer, marks what is new since you looked, and Alt+N jumps to the next waiting session', async () => {
  // Its own hub: which session waits longest must not depend on the other tests.
  const hub = await startHub();
  try {
    const a = await newAgent(hub, 'Stable first');
    const b = await newAgent(hub, 'Stable second');
    const c = await newAgent(hub, 'Stable third');
    await a.wait('a asks');
    await sleep(20);
    await b.wait('b asks');
    await sleep(20);
    await c.wait('c asks');
    const { page } = await browser();
    await openPanel(page, hub);
    await item(page, c.token).waitFor();
    const order = () => page.locator('[data-testid="session-item"]').evaluateAll((els) => els.map((e) => e.dataset.token));
    const before = (await order()).filter((tok) => [a.token, b.token, c.token].includes(tok));
    assert.deepEqual(before, [a.token, b.token, c.token], 'longest waiting first');
    assert.equal(await item(page, b.token).getByTestId('session-new').count(), 0, 'nothing is new on first sight');

    await selectSession(page, a.token);
    const at = (await order()).indexOf(a.token);
    await page.getByTestId('reply-input').fill('answered');
    await page.getByTestId('reply-input').press('Enter');
    await a.reply();
    await page.waitForFunction((tok) => document.querySelector(`[data-token="${tok}"]`)?.dataset.status !== 'waiting', a.token);
    await sleep(200);
    assert.equal((await order()).indexOf(a.token), at, 'the answered session stays where it was while it is selected');

    // Something happens in b: it is marked new until opened.
    await hub.api('POST', '/api/reply', { token: b.token, text: 'from elsewhere' });
    await b.reply();
    await b.wait('b asks again');
    await item(page, b.token).getByTestId('session-new').waitFor();

    // Alt+N from the reply box: the longest-waiting other session (c: b waits anew), box focused.
    const goesTo = (tok) => page.waitForFunction((t) => document.querySelector('[data-testid="conv-title"]')?.title.includes(t), tok);
    await page.getByTestId('reply-input').focus();
    await page.keyboard.press('Alt+n');
    await goesTo(c.token);
    await page.waitForFunction(() => document.activeElement?.dataset.testid === 'reply-input');
    await page.keyboard.type('c done');
    await page.keyboard.press('Enter');
    assert.equal((await c.reply()).text, 'c done');
    await page.keyboard.press('Alt+n');
    await goesTo(b.token);
    assert.equal(await item(page, b.token).getByTestId('session-new').count(), 0, 'opened: no longer new');
    await page.waitForFunction(() => document.activeElement?.dataset.testid === 'reply-input');
    await page.keyboard.type('b done');
    await page.keyboard.press('Enter');
    assert.equal((await b.reply()).text, 'b done');
  } finally {
    await hub.stop();
  }
});

test('your own reply stays in sight when scrolled up; a new message below shows a pill', async () => {
  const { page } = await browser({ viewport: { width: 1280, height: 700 } });
  await openPanel(page, hub);
  const a = await newAgent(hub, 'Long talk');
  for (let i = 1; i <= 30; i++) await a.wait(`paragraph ${i}\n\n${'lorem ipsum dolor sit amet '.repeat(12)}`);
  await item(page, a.token).waitFor();
  await selectSession(page, a.token);
  await page.getByTestId('message').filter({ hasText: 'paragraph 30' }).waitFor();
  const scrollUp = () => page.getByTestId('messages').evaluate((el) => { el.scrollTop = 0; el.dispatchEvent(new Event('scroll')); });
  const inView = (text) => page.getByTestId('message').filter({ hasText: text }).evaluate((el) => {
    const pane = document.querySelector('[data-testid="messages"]').getBoundingClientRect();
    const r = el.getBoundingClientRect();
    return r.bottom > pane.top && r.top < pane.bottom;
  });

  await scrollUp();
  await page.getByTestId('reply-input').fill('my own words');
  await page.getByTestId('reply-input').press('Enter');
  await page.getByTestId('message').filter({ hasText: 'my own words' }).waitFor();
  await page.waitForFunction(() => {
    const el = [...document.querySelectorAll('[data-testid="message"]')].find((m) => m.textContent.includes('my own words'));
    const pane = document.querySelector('[data-testid="messages"]').getBoundingClientRect();
    const r = el.getBoundingClientRect();
    return r.bottom > pane.top && r.top < pane.bottom;
  });
  await a.reply();

  await scrollUp();
  await a.wait('a new answer below');
  await page.getByTestId('new-below').waitFor();
  assert.equal(await inView('a new answer below'), false, 'reading above is not interrupted');
  await page.getByTestId('new-below').click();
  await page.waitForFunction(() => {
    const el = document.querySelector('[data-testid="messages"]');
    return el.scrollHeight - el.scrollTop - el.clientHeight < 4;
  });
  await page.getByTestId('new-below').waitFor({ state: 'hidden' });
});

test('list previews are plain text, not Markdown', async () => {
  const { page } = await browser();
  await openPanel(page, hub);
  const a = await newAgent(hub, 'Markdown preview');
  await a.wait('## Done\nThe **retry** loop in `ci.yml`:\n```yaml\nrun: pg_isready\n```\n> [docs](https://example.com/x) next?');
  const preview = item(page, a.token).getByTestId('session-preview');
  await preview.waitFor();
  const text = await preview.textContent();
  assert.doesNotMatch(text, /##|`|\*\*|\]\(|^>/, `plain: ${text}`);
  assert.match(text, /^Done The retry loop in ci\.yml: run: pg_isready docs next\?$/);
});

test('quick replies insert their text to send, and the defaults follow the conversation\'s language', async () => {
  const { page } = await browser({ locale: 'en-US' });
  await openPanel(page, hub);
  const a = await newAgent(hub, 'Quick insert');
  await a.wait('Shall I go on?');
  await item(page, a.token).waitFor();
  await selectSession(page, a.token);
  const chips = page.getByTestId('quick-reply');
  await chips.first().waitFor();
  for (const label of await chips.allTextContents()) assert.match(label, /^[\x20-\x7e]+$/, `English UI, English default: ${label}`);

  const last = chips.last();
  const text = await last.getAttribute('title');
  await last.click();
  assert.equal(await page.getByTestId('reply-input').inputValue(), text, 'the text is in the box');
  await sleep(500);
  const s = await hub.api('GET', `/api/sessions/${a.token}`);
  assert.equal(s.status, 'waiting', 'a click alone sends nothing');
  assert.equal(s.queuedReplies, 0);
  await page.getByTestId('reply-input').press('Enter');
  assert.equal((await a.reply()).text, text);

  // The agent writes English: a Chinese UI keeps the English quick replies (daily2 has a Chinese conversation).
  await page.getByTestId('lang-toggle').click();
  await page.waitForFunction(() => document.documentElement.lang === 'zh-CN');
  await chips.first().waitFor();
  for (const label of await chips.allTextContents()) assert.match(label, /^[\x20-\x7e]+$/, `English conversation: ${label}`);
  await page.getByTestId('lang-toggle').click();
});

test('phone: the conversation gets most of the screen, touch targets are 44 px, every quick reply is reachable', async () => {
  const { page } = await browser({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
  await openPanel(page, hub);
  const a = await newAgent(hub, 'Phone layout');
  await a.wait('A question on a phone');
  await item(page, a.token).waitFor();
  const small = () => page.evaluate(() => [...document.querySelectorAll('button, input, select, textarea, [role=tab]')]
    .filter((el) => el.offsetParent !== null && !el.closest('dialog') && el.type !== 'radio')
    .map((el) => ({ el, r: el.getBoundingClientRect() }))
    .filter(({ r }) => r.width > 0 && (r.height < 44 || r.width < 44))
    .map(({ el, r }) => `${el.dataset.testid || el.id || el.className || el.tagName} ${Math.round(r.width)}×${Math.round(r.height)}`));
  assert.deepEqual(await small(), [], 'list view');

  await selectSession(page, a.token);
  assert.deepEqual(await small(), [], 'conversation view');
  // With both "N waiting ›" and "newest ›" the title takes a row of its own below them (issue 43:
  // beside both it was cut to two words), which costs that row's height.
  const bothPills = await page.getByTestId('newest-pill').isVisible();
  const pane = await page.getByTestId('messages').boundingBox();
  console.log(`phone, ${bothPills ? 'both pills' : 'at most one pill'}: messages ${Math.round(pane.height)} px`);
  assert.ok(pane.height >= (bothPills ? 570 : 600), `messages get ${Math.round(pane.height)} of 844 px with the reply box open`);
  const head = await page.locator('.conv-head').boundingBox();
  assert.ok(head.y + head.height <= (bothPills ? 100 : 70), `the chrome above the messages ends at ${Math.round(head.y + head.height)} px`);

  // Every quick reply can be seen without sideways scrolling.
  const hidden = await page.evaluate(() => [...document.querySelectorAll('[data-testid="quick-reply"]')].filter((b) => {
    const r = b.getBoundingClientRect();
    const box = b.parentElement.getBoundingClientRect();
    return r.left < box.left - 1 || r.right > box.right + 1 || r.right > innerWidth;
  }).map((b) => b.textContent));
  assert.deepEqual(hidden, []);
  // The actions are one tap away.
  await page.getByTestId('conv-menu').tap();
  await page.getByTestId('settings-open').waitFor();
  assert.deepEqual(await small(), [], 'with the actions open');
});

test('the keep-alive mode shows in the header and the list, with the timed reply countdown', async () => {
  const { page } = await browser();
  await openPanel(page, hub);
  const a = await newAgent(hub, 'Keep-alive shown');
  await a.wait('working');
  await item(page, a.token).waitFor();
  await selectSession(page, a.token);
  assert.equal(await page.getByTestId('conv-keepalive').isHidden(), true, 'true hold shows nothing extra');

  await page.getByTestId('settings-open').click();
  await page.getByTestId('mode-timed').check();
  await page.getByTestId('set-interval').fill('600');
  await page.getByTestId('settings-save').click();
  const head = page.getByTestId('conv-keepalive');
  await head.waitFor();
  await page.waitForFunction(() => /Timed reply .*(9|10):\d\d/.test(document.querySelector('[data-testid="conv-keepalive"]').textContent));
  const first = await head.textContent();
  await sleep(2100);
  assert.notEqual(await head.textContent(), first, 'the countdown runs');
  assert.match(await item(page, a.token).getByTestId('session-keepalive').textContent(), /\d+:\d\d/);

  await page.getByTestId('settings-open').click();
  await page.getByTestId('mode-auto').check();
  await page.getByTestId('settings-save').click();
  await page.waitForFunction(() => /names a next step \(up to \d+ in a row\)/.test(document.querySelector('[data-testid="conv-keepalive"]')?.textContent || ''));
  assert.match(await item(page, a.token).getByTestId('session-keepalive').textContent(), /next step/);
});

test('small things: a dark centred image viewer, toasts clear of the reply box, coloured diffs, bubbles that use the width', async () => {
  const { page } = await browser({ viewport: { width: 1600, height: 900 } });
  await openPanel(page, hub);
  const a = await newAgent(hub, 'Small things');
  await a.wait('Here is the change:\n\n```diff\n--- a/x.rs\n+++ b/x.rs\n@@ -1,2 +1,2 @@\n-let a = 1;\n+let a = 2;\n same\n```\n\n' + 'A long paragraph that should use the width of the pane. '.repeat(20));
  await hub.api('POST', '/api/reply', {
    token: a.token, text: 'a picture', images: [{ mimeType: 'image/png', data: makePng(40, 30, () => [200, 40, 40]) }],
  });
  await item(page, a.token).waitFor();
  await selectSession(page, a.token);

  // Diff lines are coloured by + and −.
  const diff = page.getByTestId('message-content').filter({ hasText: 'let a = 2' });
  const colours = await diff.evaluate((el) => ({
    add: getComputedStyle(el.querySelector('.diff-add')).backgroundColor,
    del: getComputedStyle(el.querySelector('.diff-del')).backgroundColor,
    plain: getComputedStyle(el.querySelector('pre')).backgroundColor,
  }));
  assert.notEqual(colours.add, colours.del);
  assert.notEqual(colours.add, colours.plain);
  assert.equal(await diff.locator('.diff-add').textContent(), '+let a = 2;');

  // A long agent message uses most of the message column (no empty strip beside it).
  const widths = await page.evaluate(() => {
    const list = document.querySelector('.message-list').getBoundingClientRect();
    const long = [...document.querySelectorAll('[data-testid="message"]')].find((m) => m.textContent.includes('A long paragraph'));
    return { list: list.width, msg: long.getBoundingClientRect().width, pane: document.querySelector('[data-testid="messages"]').clientWidth };
  });
  assert.ok(widths.msg >= 0.85 * widths.list, `bubble ${widths.msg} of ${widths.list}`);
  assert.ok(widths.msg >= Math.min(900, 0.7 * widths.pane), `bubble ${widths.msg} in a pane of ${widths.pane}`);

  // The image viewer: full screen, dark, the image in the middle; a click closes it.
  await page.getByTestId('message-image').first().click();
  const dialog = page.getByTestId('image-dialog');
  await dialog.waitFor();
  const view = await page.evaluate(() => {
    const d = document.querySelector('[data-testid="image-dialog"]').getBoundingClientRect();
    const img = document.getElementById('image-full').getBoundingClientRect();
    const bg = getComputedStyle(document.querySelector('[data-testid="image-dialog"]')).backgroundColor;
    return { d, cx: img.left + img.width / 2, cy: img.top + img.height / 2, bg };
  });
  assert.ok(view.d.width >= 1590 && view.d.height >= 890, 'the viewer covers the screen');
  assert.ok(Math.abs(view.cx - 800) < 3 && Math.abs(view.cy - 450) < 3, `image centred at ${view.cx},${view.cy}`);
  const [r, g, b] = view.bg.match(/\d+/g).map(Number);
  assert.ok(r + g + b < 100, `dark background ${view.bg}`);
  await page.mouse.click(100, 100);
  await dialog.waitFor({ state: 'hidden' });

  // Pasting a non-image: the toast says so without covering the reply box.
  await page.getByTestId('reply-input').click();
  await page.evaluate(() => {
    const dt = new DataTransfer();
    dt.items.add(new File(['hello'], 'notes.txt', { type: 'text/plain' }));
    document.querySelector('[data-testid="reply-input"]').dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }));
  });
  const toast = page.getByTestId('toast');
  await toast.waitFor();
  const [tb, rb] = [await toast.boundingBox(), await page.getByTestId('reply-input').boundingBox()];
  const overlap = tb.x < rb.x + rb.width && rb.x < tb.x + tb.width && tb.y < rb.y + rb.height && rb.y < tb.y + tb.height;
  assert.equal(overlap, false, 'the toast leaves the reply box free');
});

test('search shows the place: a snippet with the hit marked, and the conversation opens at that message', async () => {
  const { page } = await browser({ viewport: { width: 1280, height: 700 } });
  await openPanel(page, hub);
  const a = await newAgent(hub, 'Search place');
  await a.wait('early on we chose the heliotrope-kestrel-41 layout for the cache');
  for (let i = 1; i <= 70; i++) await a.wait(`later message ${i}`);
  await item(page, a.token).waitFor();

  await page.getByTestId('search').fill('Heliotrope-Kestrel');
  const snippet = item(page, a.token).getByTestId('session-snippet');
  await snippet.waitFor();
  assert.match(await snippet.textContent(), /chose the heliotrope-kestrel-41 layout/);
  assert.equal(await snippet.locator('mark').textContent(), 'heliotrope-kestrel');

  await item(page, a.token).locator('button').first().click();
  const hit = page.getByTestId('message').filter({ hasText: 'heliotrope-kestrel-41' });
  await hit.locator('mark.search-hit').waitFor({ timeout: 10_000 });
  assert.equal(await hit.locator('mark.search-hit').textContent(), 'heliotrope-kestrel');
  await page.waitForFunction(() => {
    const el = document.querySelector('.msg.hit');
    const pane = document.querySelector('[data-testid="messages"]').getBoundingClientRect();
    const r = el?.getBoundingClientRect();
    return r && r.top >= pane.top - 1 && r.bottom <= pane.bottom + 1;
  });
  await page.getByTestId('search').fill('');
});

test('merge: the target is found by typing, and the merged messages say where they came from', async () => {
  const { page } = await browser();
  await openPanel(page, hub);
  const from = await newAgent(hub, 'Merge by search: source', { workspace: '/home/dev/ms-a' });
  const to = await newAgent(hub, 'Merge by search: quokka target', { workspace: '/home/dev/ms-b' });
  await to.wait('target talk');
  await from.wait('source talk: marmot-merge-9');
  await item(page, from.token).waitFor();
  await selectSession(page, from.token);
  await page.getByTestId('merge-open').click();
  await page.getByTestId('merge-filter').fill('QUOKKA');
  const visible = await page.getByTestId('merge-target').evaluate((sel) => [...sel.options].filter((o) => !o.hidden).map((o) => o.value));
  assert.deepEqual(visible, [to.token], 'only the matching session is offered');
  assert.equal(await page.getByTestId('merge-target').inputValue(), to.token, 'and it is picked');
  await page.getByTestId('merge-filter').press('Enter');
  await page.getByTestId('confirm-ok').click();
  await page.waitForFunction((tok) => document.querySelector('[data-testid="conv-title"]')?.title.includes(tok), to.token);
  const trace = page.locator('[data-testid="message"][data-role="system"]').filter({ hasText: 'Merged from' });
  await trace.waitFor();
  assert.match(await trace.textContent(), /Merged from “Merge by search: source”.*\/home\/dev\/ms-a.*messages follow/);
  // The trace sits right before the merged messages.
  const order = await page.getByTestId('message').evaluateAll((els) => els.map((e) => e.textContent));
  const at = order.findIndex((x) => x.includes('Merged from'));
  assert.match(order[at + 1], /marmot-merge-9/);
});

test('copy a message or a session, export it as Markdown and JSON, export all, and see its figures', async () => {
  const { page, context } = await browser();
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: hub.base });
  await openPanel(page, hub);
  const a = await newAgent(hub, 'Export me');
  await a.wait('first **answer** from the agent');
  await sleep(30);
  await hub.api('POST', '/api/reply', { token: a.token, text: 'go on please' });
  await a.reply();
  await sleep(30);
  await a.wait('second answer');
  await item(page, a.token).waitFor();
  await selectSession(page, a.token);

  await page.getByTestId('message').filter({ hasText: 'first answer' }).getByTestId('copy-message').click();
  await page.getByTestId('toast').filter({ hasText: 'Copied' }).waitFor();
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), 'first **answer** from the agent', 'the Markdown as written');

  await page.getByTestId('info-open').click();
  await page.getByTestId('session-stats').waitFor();
  assert.equal(await page.getByTestId('stat-rounds').textContent(), '2');
  assert.equal(await page.getByTestId('stat-messages').textContent(), '3');
  assert.match(await page.getByTestId('stat-replies').textContent(), /1 yours, 0 automatic/);
  assert.match(await page.getByTestId('stat-waited').textContent(), /^\d+s$/);

  await page.getByTestId('copy-session').click();
  const md = await page.evaluate(() => navigator.clipboard.readText());
  assert.match(md, /^# Export me\n/);
  assert.match(md, /### Agent · .*\n\nfirst \*\*answer\*\* from the agent/);
  assert.match(md, /### You · .*\n\ngo on please/);

  const save = async (testid) => {
    const [dl] = await Promise.all([page.waitForEvent('download'), page.getByTestId(testid).click()]);
    const chunks = [];
    for await (const c of await dl.createReadStream()) chunks.push(c);
    return { name: dl.suggestedFilename(), text: Buffer.concat(chunks).toString('utf8') };
  };
  const mdFile = await save('export-md');
  assert.match(mdFile.name, /^holdline-Export-me-\w{8}\.md$/);
  assert.equal(mdFile.text, md);
  const json = await save('export-json');
  const parsed = JSON.parse(json.text);
  assert.equal(parsed.session.token, a.token);
  assert.deepEqual(parsed.messages.map((m) => m.content), ['first **answer** from the agent', 'go on please', 'second answer']);
  const all = await save('export-all');
  assert.match(all.name, /^holdline-export-\d{4}-\d{2}-\d{2}\.json$/);
  assert.ok(all.text.includes(a.token), 'every session, this one included');
});

test('notification settings: on/off, a sound to choose, a test button; plain http on a LAN name says why nothing notifies', async () => {
  const { page, context } = await browser();
  await recordNotifications(context);
  await openPanel(page, hub);
  await page.getByTestId('notify-toggle').click();
  await page.getByTestId('notify-dialog').waitFor();
  assert.equal(await page.getByTestId('notify-enabled').isChecked(), true);
  assert.equal(await page.getByTestId('notify-note').isHidden(), true, 'localhost is a secure context: nothing to warn about');

  await page.getByTestId('notify-sound').selectOption('none');
  await page.getByTestId('notify-test').click();
  await page.waitForFunction(() => window.__notes.length === 1);
  assert.equal(await page.evaluate(() => window.__tones), 0, '"No sound" is silent');
  await page.getByTestId('notify-sound').selectOption('bell');
  await page.getByTestId('notify-test').click();
  await page.waitForFunction(() => window.__notes.length === 2);
  assert.ok(await page.evaluate(() => window.__tones) > 0, 'the bell rings');
  assert.equal(await page.evaluate(() => localStorage.getItem('holdline.sound')), 'bell', 'remembered');
  await page.getByTestId('notify-close').click();

  // The panel opened by a LAN name over plain http (here a test name mapped to loopback): not a secure context.
  const lan = await startHub({ config: 'allowed_hosts = ["holdline-lan.test"]\n' });
  try {
    const port = new URL(lan.base).port;
    const phone = await browser({ extraArgs: ['--host-resolver-rules=MAP holdline-lan.test 127.0.0.1'] });
    await phone.page.goto(`http://holdline-lan.test:${port}/#key=${encodeURIComponent(lan.secret)}`);
    await phone.page.locator('#app:not([hidden])').waitFor();
    assert.equal(await phone.page.evaluate(() => window.isSecureContext), false);
    assert.equal(await phone.page.getByTestId('notify-toggle').evaluate((b) => b.classList.contains('blocked')), true, 'the bell shows it');
    await phone.page.getByTestId('notify-toggle').click();
    const note = phone.page.getByTestId('notify-note');
    await note.waitFor();
    assert.match(await note.textContent(), /plain http on holdline-lan\.test:\d+.*HTTPS.*Caddy/);
  } finally {
    await lan.stop();
  }
});

test('an installable web app: a manifest and a service worker that notifies where a page may not', async () => {
  const { page, context } = await browser();
  await context.grantPermissions(['notifications'], { origin: hub.base });
  // As on Android's Chrome: the page's own Notification constructor refuses.
  await context.addInitScript(() => {
    const Real = window.Notification;
    window.Notification = class extends Real {
      constructor() { throw new TypeError('Illegal constructor. Use ServiceWorkerRegistration.showNotification() instead.'); }
    };
  });
  await openPanel(page, hub);
  const manifest = await page.evaluate(async () => {
    const href = document.querySelector('link[rel="manifest"]').href;
    const res = await fetch(href);
    return { type: res.headers.get('content-type'), body: await res.json() };
  });
  assert.match(manifest.type, /manifest\+json|application\/json/);
  assert.equal(manifest.body.display, 'standalone');
  assert.ok(manifest.body.icons.some((i) => i.sizes === '512x512'), 'a 512 px icon');
  for (const icon of manifest.body.icons) {
    assert.equal(await page.evaluate(async (src) => (await fetch(src)).headers.get('content-type'), icon.src), 'image/png');
  }
  assert.equal(await page.evaluate(async () => (await navigator.serviceWorker.ready).active.scriptURL.endsWith('/sw.js')), true);
  // The panel announces a wait it hears of live; one already waiting when its event
  // stream opens is in the list, unannounced (a loaded machine opened it late once).
  await page.locator('#live[data-state="on"]').waitFor();

  const a = await newAgent(hub, 'Worker notifies');
  await a.wait('are you there?');
  let shown = [];
  for (const deadline = Date.now() + 10_000; !shown.length && Date.now() < deadline; await sleep(100)) {
    shown = await page.evaluate(async () => (await (await navigator.serviceWorker.ready).getNotifications())
      .map((n) => ({ title: n.title, token: n.data && n.data.token })));
  }
  assert.equal(shown.length, 1, 'the worker showed the notification');
  assert.match(shown[0].title, /Worker notifies/);
  assert.equal(shown[0].token, a.token, 'a click opens that session');
});
