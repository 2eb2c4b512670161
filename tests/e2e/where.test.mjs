// where.test.mjs — where each agent lives and what a person must know on the
// move: cards and the header name the machine (the agent key's name, else the
// host's name) and the workspace folder, with a filter by machine once there
// are two; on a phone the conversation shows "N waiting ›" and its header
// wraps rather than cutting the next step; a revoked key's session says a
// reply waits for the key's return (never "delivered") and offers no buttons.

import { test, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { startHub, newAgent, openPanel, item, selectSession, browsersPerTest, hasHorizontalScroll, agentCall } from './harness.mjs';

let hub;
before(async () => { hub = await startHub(); });
after(async () => { if (hub) await hub.stop(); });
const browser = browsersPerTest(afterEach);

const PHONE = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true };


/** A session made by the agent holding `key`, waiting on `message`; answers its token. */
async function keyedAgentWaits(key, fp, message, extra = {}) {
  const init = await agentCall(hub, key, '/api/init', fp);
  assert.equal(init.status, 200, JSON.stringify(init.body));
  const reg = await agentCall(hub, key, '/api/wait/register', { ...fp, token: init.body.token, message, requestId: `r-${init.body.token}`, ...extra });
  assert.equal(reg.status, 200, JSON.stringify(reg.body));
  return init.body.token;
}

test('where: cards and the header name the machine and folder; the filter by machine appears with a second machine', async () => {
  const { page } = await browser();
  // The hub's own agent, whose bridge reports its host's name.
  const desk = await keyedAgentWaits(hub.secret, { cursorTitle: 'Desk work', workspace: '/Users/ana/code/webapp/', hostIp: '10.0.0.5', hostName: 'ana-mac' }, 'Ready on the desk?');
  await openPanel(page, hub);
  const deskCard = item(page, desk);
  await deskCard.getByTestId('session-where').waitFor();
  assert.equal(await deskCard.getByTestId('session-where-machine').textContent(), 'ana-mac');
  assert.equal(await deskCard.getByTestId('session-where-folder').textContent(), 'webapp');
  assert.match(await deskCard.getByTestId('session-where').getAttribute('title'), /Workspace: \/Users\/ana\/code\/webapp\//);
  assert.equal(await page.getByTestId('machine-filter').isVisible(), false, 'one machine: no filter');

  // Two agent keys: their sessions are named by the key, whatever host they run on.
  const buildbox = (await hub.api('POST', '/api/keys', { name: 'buildbox' })).key;
  const laptop = (await hub.api('POST', '/api/keys', { name: 'laptop' })).key;
  const ci = await keyedAgentWaits(buildbox, { cursorTitle: 'Nightly build', workspace: '/srv/ci/holdline', hostIp: '192.168.1.50', hostName: 'rack-7' }, 'Build is green. Tag it?');
  const lap = await keyedAgentWaits(laptop, { cursorTitle: 'Docs pass', workspace: 'C:\\Users\\ana\\docs-site', hostIp: '192.168.1.60' }, 'Docs done?');
  await item(page, ci).waitFor();
  await item(page, lap).waitFor();
  assert.equal(await item(page, ci).getByTestId('session-where-machine').textContent(), 'buildbox');
  assert.equal(await item(page, ci).getByTestId('session-where-folder').textContent(), 'holdline');
  assert.equal(await item(page, lap).getByTestId('session-where-machine').textContent(), 'laptop');
  assert.equal(await item(page, lap).getByTestId('session-where-folder').textContent(), 'docs-site');

  // The filter: every machine, or one.
  const filter = page.getByTestId('machine-filter');
  await filter.waitFor();
  assert.deepEqual(await filter.locator('option').allTextContents(), ['All machines', 'ana-mac', 'buildbox', 'laptop']);
  await filter.selectOption('buildbox');
  await item(page, desk).waitFor({ state: 'detached' });
  assert.deepEqual(await page.getByTestId('session-item').evaluateAll((els) => els.map((e) => e.dataset.token)), [ci]);
  await filter.selectOption('');
  await item(page, desk).waitFor();
  assert.equal(await page.getByTestId('session-item').count(), 3);

  // The header too, the full path in its title.
  await selectSession(page, ci);
  const where = page.getByTestId('header-where');
  assert.equal(await where.getByTestId('header-where-machine').textContent(), 'buildbox');
  assert.equal(await where.getByTestId('header-where-folder').textContent(), 'holdline');
  const title = await where.getAttribute('title');
  assert.match(title, /Machine: buildbox/);
  assert.match(title, /Host name: rack-7/);
  assert.match(title, /Workspace: \/srv\/ci\/holdline/);
});

test('where: on a phone the conversation shows "N waiting ›" (the count the title shows) and opens the next; the next step unfolds with a tap', async () => {
  const step = 'rewrite the migration so it runs in one transaction and then re-run the whole integration suite';
  const a = await newAgent(hub, 'Phone A', { workspace: '/home/dev/alpha' });
  await a.wait('Alpha: done?', { completionPct: 92, nextStep: step });
  const b = await newAgent(hub, 'Phone B', { workspace: '/home/dev/beta' });
  await b.wait('Beta: done?');
  const { page } = await browser(PHONE);
  await openPanel(page, hub);
  const waiting = (await hub.api('GET', '/api/sessions')).sessions.filter((s) => s.status === 'waiting').length;
  await selectSession(page, a.token);
  const pill = page.getByTestId('waiting-pill');
  await pill.waitFor();
  // One count rule everywhere: the sessions an agent waits on, the one on screen among them.
  assert.equal(await pill.textContent(), `${waiting} waiting ›`, 'the same count as the title');
  assert.equal(await page.title(), `(${waiting}) holdline`);
  assert.match(await pill.getAttribute('aria-label'), new RegExp(`^${waiting} waiting\\b.*${waiting - 1} besides this one`), 'its name contains what it shows');
  const box = await pill.boundingBox();
  assert.ok(box.height >= 44 && box.x + box.width <= 390, `a 44 px target on screen: ${JSON.stringify(box)}`);

  // The next step keeps to one line (issue 43: the text gets the room); a tap shows it in full,
  // over as many lines as it needs.
  const progress = page.getByTestId('conv-progress');
  assert.match(await progress.textContent(), /92%/);
  assert.ok((await progress.textContent()).includes(step));
  const lineHeight = await progress.evaluate((el) => el.getBoundingClientRect().height);
  await progress.tap();
  assert.ok(await progress.evaluate((el, h) => el.getBoundingClientRect().height > h, lineHeight), 'the tap unfolds it');
  const fits = await progress.evaluate((el) => {
    const r = el.getBoundingClientRect();
    const cut = [el, el.parentElement].some((e) => e.scrollWidth > e.clientWidth + 1 || getComputedStyle(e).textOverflow === 'ellipsis');
    return { cut, right: r.right };
  });
  assert.equal(fits.cut, false, 'not clipped');
  assert.ok(fits.right <= 390, `inside the screen: ${fits.right}`);
  assert.equal(await hasHorizontalScroll(page), false);

  // A tap opens the one that has waited longest of the others.
  const before = await page.getByTestId('conv-title').textContent();
  await pill.click();
  await page.waitForFunction((t) => document.querySelector('[data-testid="conv-title"]').textContent !== t, before);
  assert.notEqual(await page.getByTestId('conv-title').textContent(), 'Phone A');

  // Nobody else waiting: no pill.
  await hub.api('POST', '/api/reply', { token: b.token, text: 'ok' });
  for (const s of (await hub.api('GET', '/api/sessions')).sessions) {
    if (s.status === 'waiting' && s.token !== a.token) await hub.api('POST', '/api/reply', { token: s.token, text: 'ok' });
  }
  await page.getByTestId('back').click();
  await selectSession(page, a.token);
  await pill.waitFor({ state: 'hidden' });
});

test('where: a revoked key\'s session says a reply waits for the key, never "delivered", and offers no buttons', async () => {
  const key = (await hub.api('POST', '/api/keys', { name: 'gpu-box' })).key;
  const fp = { cursorTitle: 'Training run', workspace: '/data/train', hostIp: '192.168.1.70' };
  const token = await keyedAgentWaits(key, fp, 'Stop at epoch 40 or go on?', { options: [{ label: 'Stop' }, { label: 'Go on' }] });
  const { page } = await browser();
  await openPanel(page, hub);
  await selectSession(page, token);
  await page.getByTestId('choices').waitFor();

  // Revoked while the person looks: the page follows at once.
  await hub.api('DELETE', '/api/keys/gpu-box');
  await page.getByTestId('owner-notice').waitFor();
  await page.getByTestId('choices').waitFor({ state: 'detached' });
  const note = page.getByTestId('stranded-note');
  await note.waitFor();
  assert.match(await note.textContent(), /A reply waits here until an agent reconnects with a key named “gpu-box”/);
  // The card keeps its machine: the key's name.
  assert.equal(await item(page, token).getByTestId('session-where-machine').textContent(), 'gpu-box');

  await page.getByTestId('reply-input').fill('go on');
  await page.getByTestId('reply-input').press('Enter');
  const status = page.getByTestId('reply-status');
  await page.waitForFunction(() => /Held/.test(document.querySelector('[data-testid="reply-status"]').textContent));
  const said = await status.textContent();
  assert.match(said, /reconnects with a key named “gpu-box”/);
  assert.doesNotMatch(said, /Delivered/);
  assert.equal((await hub.api('GET', `/api/sessions/${token}`)).queuedReplies, 1, 'the reply is held');
  await page.waitForTimeout(300);
  assert.doesNotMatch(await status.textContent(), /Delivered/);
  assert.equal(await page.getByTestId('choice').count(), 0);

  // The note leads to Settings → Belongs to.
  await page.getByTestId('stranded-hand-over').click();
  await page.getByTestId('settings-dialog').waitFor();
  assert.equal(await page.evaluate(() => document.activeElement?.id), 'set-owner');
});
