// push.test.mjs — Web Push in the panel: the bell's settings say whether this
// browser is subscribed (and, on plain http, the HTTPS advice once); with
// nobody subscribed the hub's webpush channel is idle, not failing; subscribing
// where the push service cannot be reached shows a clear error; the service
// worker shows a push (delivered through CDP, as a push service would) as one
// notification per session, whose link opens that session.

import { test, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { startHub, newAgent, openPanel, browsersPerTest, screenshot } from './harness.mjs';

const axePath = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

const LAN = 'holdline-push.test';
let hub;
before(async () => {
  hub = await startHub({ config: `allowed_hosts = ["${LAN}"]\n\n[notify.webpush]\nenabled = true\n` });
});
after(async () => { if (hub) await hub.stop(); });
const browser = browsersPerTest(afterEach);

async function openSettings(page) {
  await page.locator('#notify-toggle').click();
  await page.getByTestId('push-section').waitFor();
  await page.waitForFunction(() => document.querySelector('[data-testid="push-state"]')?.dataset.state);
}

test('the settings say this browser is not subscribed, and a push service out of reach is a clear error', async () => {
  // bypassCSP: the page allows only its own scripts; axe is added by the test.
  const { page, context } = await browser({ bypassCSP: true });
  await context.grantPermissions(['notifications'], { origin: hub.base });
  await openPanel(page, hub);
  await openSettings(page);
  const state = page.getByTestId('push-state');
  assert.equal(await state.getAttribute('data-state'), 'off');
  assert.match(await state.textContent(), /not subscribed/);
  assert.equal(await page.getByTestId('push-enabled').isChecked(), false);
  await page.addScriptTag({ path: axePath });
  const violations = await page.evaluate(async () => (await window.axe.run('#push-section')).violations
    .flatMap((v) => v.nodes.map((n) => `${v.id}: ${n.target.join(' ')}`)));
  assert.deepEqual(violations, [], 'axe finds nothing in the push settings');

  // This machine has no way to the browser's push service: subscribing fails, and says so.
  await page.getByTestId('push-enabled').check();
  const error = page.getByTestId('push-error');
  await error.waitFor({ timeout: 30_000 });
  assert.match(await error.textContent(), /could not subscribe at its push service \((no answer within 15 s|.+)\)/);
  await screenshot(page, 'push-settings-error.png');
  assert.equal(await page.getByTestId('push-enabled').isChecked(), false);
  const key = await hub.api('GET', '/api/push/key');
  assert.equal(key.subscriptions, 0);
});

/** A hub that pushes at once, allows the LAN test name, and has an agent waiting (nobody subscribed). */
async function pushingHubWithAWait() {
  const own = await startHub({ config: `allowed_hosts = ["${LAN}"]\n\n[notify]\nafter_sec = 0\n\n[notify.webpush]\nenabled = true\n` });
  const agent = await newAgent(own, 'Nobody subscribed');
  await agent.wait('Anyone there?');
  // The hub's watcher had this question to push at once; give it a moment to try.
  await new Promise((r) => setTimeout(r, 1500));
  return own;
}

/** The webpush channel's line in the bell's settings. */
async function webpushLine(page) {
  const line = page.getByTestId('notify-channel').filter({ hasText: 'webpush' });
  await line.waitFor();
  return line;
}

test('with nobody subscribed, the webpush channel is idle, not failing, and localhost hears no HTTPS advice', async () => {
  const own = await pushingHubWithAWait();
  try {
    const { page } = await browser();
    await openPanel(page, own);
    assert.equal(await page.getByTestId('notify-toggle').evaluate((b) => b.classList.contains('blocked')), false, 'no "!" on the bell');
    await openSettings(page);
    const line = await webpushLine(page);
    assert.equal(await line.getAttribute('data-state'), 'idle');
    assert.match(await line.textContent(), /^webpush: nothing sent yet · 0 sent, 0 failed$/);
    assert.equal(await page.getByTestId('channel-hint').count(), 0);
    assert.doesNotMatch(await page.getByTestId('notify-dialog').innerText(), /HTTPS/, 'localhost is a secure context');
  } finally {
    await own.stop();
  }
});

test('on plain http the HTTPS advice appears once, and the bell\'s "!" goes once it was read', async () => {
  const own = await pushingHubWithAWait();
  try {
    const { page } = await browser({ extraArgs: [`--host-resolver-rules=MAP ${LAN} 127.0.0.1`] });
    const port = new URL(own.base).port;
    await openPanel(page, { ...own, base: `http://${LAN}:${port}` });
    const bell = page.getByTestId('notify-toggle');
    const marked = () => bell.evaluate((b) => b.classList.contains('blocked'));
    assert.equal(await marked(), true, 'the bell says something stands in the way');
    await openSettings(page);
    await webpushLine(page);
    const state = page.getByTestId('push-state');
    assert.equal(await state.getAttribute('data-state'), 'insecure');
    assert.equal(await page.getByTestId('push-enabled').isDisabled(), true);
    const said = (await page.getByTestId('notify-dialog').innerText()).match(/HTTPS/g) || [];
    assert.equal(said.length, 1, `the HTTPS advice once: ${await page.getByTestId('notify-dialog').innerText()}`);
    assert.match(await page.getByTestId('notify-note').textContent(), /HTTPS/, 'where the advice is');
    await screenshot(page, 'push-settings-insecure.png');
    await page.getByTestId('notify-close').click();
    assert.equal(await marked(), false, 'read once: the "!" goes');
    await page.reload();
    await page.locator('#app:not([hidden])').waitFor();
    assert.equal(await marked(), false, 'and stays gone');
    assert.match(await bell.getAttribute('title'), /plain http/, 'the bell\'s title still says why');
  } finally {
    await own.stop();
  }
});

test('the service worker shows a push as one notification per session, and its link opens that session', async () => {
  const { page, context } = await browser();
  await context.grantPermissions(['notifications'], { origin: hub.base });
  const agent = await newAgent(hub, 'Pushed agent');
  await agent.wait('Shall I deploy?');
  await openPanel(page, hub);
  const scope = await page.evaluate(async () => (await navigator.serviceWorker.ready).scope);
  assert.equal(scope, `${hub.base}/`);

  const cdp = await context.newCDPSession(page);
  const registrations = [];
  cdp.on('ServiceWorker.workerRegistrationUpdated', (e) => registrations.push(...e.registrations));
  await cdp.send('ServiceWorker.enable');
  for (let i = 0; i < 100 && !registrations.some((r) => r.scopeURL === scope && !r.isDeleted); i++) {
    await new Promise((r) => setTimeout(r, 50));
  }
  const reg = registrations.find((r) => r.scopeURL === scope && !r.isDeleted);
  assert.ok(reg, 'the service worker is registered at /');

  const push = (body) => cdp.send('ServiceWorker.deliverPushMessage', {
    origin: `${hub.base}/`,
    registrationId: reg.registrationId,
    data: JSON.stringify({ title: 'holdline · Pushed agent is waiting', body, token: agent.token, url: `/#session=${agent.token}` }),
  });
  const notifications = () => page.evaluate(async () => (await (await navigator.serviceWorker.ready).getNotifications())
    .map((n) => ({ title: n.title, body: n.body, tag: n.tag, data: n.data })));
  /** Delivers `body` until the notification shows it (a push delivered while the worker still starts may be lost). */
  async function pushUntilShown(body) {
    for (let attempt = 0; attempt < 5; attempt++) {
      await push(body);
      for (let i = 0; i < 40; i++) {
        const shown = await notifications();
        if (shown.some((n) => n.body === body)) return shown;
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    return notifications();
  }
  await pushUntilShown('Shall I deploy?');
  const shown = await pushUntilShown('Shall I deploy now?');
  assert.equal(shown.length, 1, `one notification per session: ${JSON.stringify(shown)}`);
  assert.equal(shown[0].title, 'holdline · Pushed agent is waiting');
  assert.equal(shown[0].body, 'Shall I deploy now?');
  assert.equal(shown[0].tag, `holdline-${agent.token}`);

  // A tap opens the panel at the notification's link: that link shows the session.
  await page.goto(new URL(shown[0].data.url, hub.base).href);
  await page.waitForFunction((tok) => document.querySelector('[data-testid="conv-title"]')?.title.includes(tok), agent.token);
});
