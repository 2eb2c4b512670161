// push.test.mjs — Web Push in the panel: the bell's settings say whether this
// browser is subscribed (and why it cannot be on plain http); subscribing
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

test('on plain http the settings say push needs HTTPS', async () => {
  const { page } = await browser({ extraArgs: [`--host-resolver-rules=MAP ${LAN} 127.0.0.1`] });
  const port = new URL(hub.base).port;
  await openPanel(page, { ...hub, base: `http://${LAN}:${port}` });
  await openSettings(page);
  const state = page.getByTestId('push-state');
  assert.equal(await state.getAttribute('data-state'), 'insecure');
  assert.match(await state.textContent(), /HTTPS/);
  assert.equal(await page.getByTestId('push-enabled').isDisabled(), true);
  await screenshot(page, 'push-settings-insecure.png');
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
