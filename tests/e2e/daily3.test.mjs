// daily3.test.mjs — issue 43's items on reading and reaching in Chromium: the phone's
// conversation header (machine · folder and title in full, the generic quick replies
// gone while the question offers its own options, the room left to read), text
// attachments previewed inline as text, skip links and focus after a send, and the
// changes block said in words, once per change set.

import { test, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import {
  startHub, newAgent, openPanel, selectSession, browsersPerTest, axeViolations,
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
  if (process.env.DEBUG_LAYOUT) { console.log(await page.evaluate(() => ['.conv-head', '.conv-meta', '#conv-title', '.quick', '.reply-row', '#composer', '#newer-question', '#reply-status', '.composer > *'].map((q) => [...document.querySelectorAll(q)].map((el) => `${q}${el.id ? '#' + el.id : ''}.${el.className}=${Math.round(el.getBoundingClientRect().height)}`).join(' ')).join('\n'))); await page.screenshot({ path: '/tmp/p2/phone.png' }); }
  assert.equal(await where.textContent(), 'studio-mac · analytics-dashboard');
  assert.ok(await shownWhole(where), 'machine · folder shows in full');
  assert.ok(await shownWhole(page.getByTestId('header-where-folder')), 'the folder is not cut');
  assert.ok(await page.getByTestId('conv-title').evaluate((el) => el.scrollWidth <= el.clientWidth + 1
    && el.scrollHeight <= el.clientHeight + 1), 'the title is not cut');
  assert.equal(await page.getByTestId('quick-reply').filter({ visible: true }).count(), 0,
    'the generic quick replies give way to the question\'s options');
  assert.ok(left >= 660, `${left} px left to read (583 before issue 43; at least 660 wanted)`);
  const progress = page.getByTestId('conv-progress');
  assert.equal(await shownWhole(progress), false, 'progress and next step keep to one line');
  await progress.tap();
  assert.ok(await shownWhole(progress), 'a tap shows the next step whole');
  await page.getByTestId('templates-edit').click();
  await page.getByTestId('templates-dialog').waitFor();
  await page.keyboard.press('Escape');
  assert.deepEqual(await axeViolations(page), []);
});
