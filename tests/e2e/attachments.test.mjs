// attachments.test.mjs — a question's files in the panel: an image shows inline and opens
// the image viewer (by click and by keyboard), a log is a download link with its name and
// size whose bytes are the file's, an HTML file is only offered to download (it never runs
// on the panel's origin); axe finds nothing wrong in the view. The question is registered
// through the hub's HTTP agent route, as the bridge sends it.

import { test, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { startHub, newAgent, openPanel, selectSession, browsersPerTest, makePng } from './harness.mjs';

const axePath = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

let hub;
before(async () => { hub = await startHub(); });
after(async () => { if (hub) await hub.stop(); });
const browser = browsersPerTest(afterEach);

const PNG = makePng(40, 30, (x) => (x < 20 ? [200, 30, 30] : [30, 30, 200]));
const LOG = 'test result: ok. 12 passed; 0 failed\n'.repeat(50);
const b64 = (text) => Buffer.from(text).toString('base64');

test('attachments: the image shows inline and opens in the viewer; other files are downloads', async () => {
  const agent = await newAgent(hub, 'Built the page');
  await agent.wait('The page is built: screenshot and test log attached.', {
    attachments: [
      { name: 'page.png', mimeType: 'image/png', data: PNG },
      { name: 'test.log', mimeType: 'text/plain', data: b64(LOG) },
      { name: 'evil.html', mimeType: 'text/html', data: b64('<script>window.parent.__pwned = 1</script>') },
    ],
  });
  const b = await browser({ bypassCSP: true });
  const { page } = b;
  await openPanel(page, hub);
  await selectSession(page, agent.token);

  const question = page.getByTestId('message').filter({ hasText: 'The page is built' });
  const image = question.getByTestId('attachment-image');
  await image.locator('img').waitFor();
  // The browser decoded the hub's bytes as the picture.
  await page.waitForFunction(() => document.querySelector('[data-testid="attachment-image"] img')?.naturalWidth === 40);
  assert.equal(await image.getAttribute('aria-label'), 'Open page.png');

  // Keyboard: focus the image's button and press Enter → the viewer shows it; Escape closes.
  await image.focus();
  await page.keyboard.press('Enter');
  const dialog = page.locator('#image-dialog');
  await dialog.waitFor({ state: 'visible' });
  assert.match(await page.locator('#image-full').getAttribute('src'), /\/attachments\/at_[0-9a-f]{32}$/);
  assert.equal(await page.locator('#image-full').getAttribute('alt'), 'page.png');
  await page.keyboard.press('Escape');
  await dialog.waitFor({ state: 'hidden' });

  const files = question.getByTestId('attachment-file');
  assert.equal(await files.count(), 2);
  assert.match(await files.nth(0).textContent(), /test\.log\s+1\.8 KB/);
  assert.equal(await files.nth(0).getAttribute('download'), 'test.log');
  assert.equal(await files.nth(1).getAttribute('download'), 'evil.html');
  // Its accessible name holds what it shows (WCAG 2.5.3: a person who says what they see reaches it by voice).
  const shown = (await files.nth(0).innerText()).replace(/\s+/g, ' ').trim();
  const named = await files.nth(0).ariaSnapshot();
  assert.ok(named.includes(`link "${shown}`), `the name starts with "${shown}": ${named}`);

  // A download, with the file's own bytes.
  const [download] = await Promise.all([page.waitForEvent('download'), files.nth(0).click()]);
  assert.equal(download.suggestedFilename(), 'test.log');
  const { readFile } = await import('node:fs/promises');
  assert.equal(await readFile(await download.path(), 'utf8'), LOG);

  // The HTML file is downloaded too, never shown: nothing of it ran.
  const [html] = await Promise.all([page.waitForEvent('download'), files.nth(1).click()]);
  assert.equal(html.suggestedFilename(), 'evil.html');
  assert.equal(await page.evaluate(() => window.__pwned), undefined);

  // Opened directly (a new tab), it is a download with a sandbox, not a page of this origin.
  const url = await files.nth(1).getAttribute('href');
  const res = await page.request.get(new URL(url, page.url()).href);
  assert.equal(res.status(), 200);
  assert.match(res.headers()['content-disposition'], /^attachment;/);
  assert.match(res.headers()['content-security-policy'], /sandbox/);
  assert.equal(res.headers()['x-content-type-options'], 'nosniff');

  await page.addScriptTag({ path: axePath });
  const found = await page.evaluate(async () => {
    const r = await window.axe.run(document.querySelector('[data-testid="attachments"]'), { resultTypes: ['violations'] });
    return r.violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  });
  assert.deepEqual(found, []);
});

test('attachments: a file the hub released is named and marked removed, never fetched', async () => {
  const agent = await newAgent(hub, 'Released files');
  await agent.wait('Here is the log.', {
    attachments: [{ name: 'old.log', mimeType: 'text/plain', data: b64(LOG) }],
  });
  const freed = await hub.api('POST', '/api/attachments/free', { scope: 'all' });
  assert.equal(freed.attachments >= 1, true);
  const b = await browser();
  const { page } = b;
  await openPanel(page, hub);
  await selectSession(page, agent.token);
  const question = page.getByTestId('message').filter({ hasText: 'Here is the log.' });
  const removed = question.getByTestId('attachment-removed');
  await removed.waitFor();
  assert.match(await removed.textContent(), /old\.log\s+removed/);
  assert.equal(await question.getByTestId('attachment-file').count(), 0);
});
