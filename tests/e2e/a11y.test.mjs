// a11y.test.mjs — axe-core (from npm, run offline in the page) finds no
// violation on the login screen, the session list, a conversation (with a long
// message folded and unfolded, a table and code wider than the pane), the
// keep-alive settings, the quick-reply editor, the info/export dialog and the
// agent keys (desktop; a phone has no room for them), the list's machine filter, a
// question's option buttons (single and multi-select, the latter with an image and a log
// attached, with the phone's "N waiting ›"
// pill) and a revoked key's session: light and dark, desktop and phone.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startHub, newAgent, launchBrowser, openPanel, item, selectSession, makePng, axeViolations as violations } from './harness.mjs';

let hub;
let agent;
let multi;
let stranded;

before(async () => {
  // The questions stay open throughout (a wait no agent polls ends after 30 s, and its options close).
  hub = await startHub({ config: 'wait_grace_sec = 3600\n' });
  const quiet = await newAgent(hub, 'Docs: README quick start', { hostIp: '192.168.1.20', hostName: 'laptop' });
  await quiet.wait('README updated. Anything else?');
  await hub.api('POST', '/api/reply', { token: quiet.token, text: 'No, commit it.' });
  await quiet.reply();
  agent = await newAgent(hub, 'Fix flaky CI', { hostIp: '192.168.1.31', hostName: 'buildbox' });
  // A long report (folded to its question) with a diff, a table and a code line wider than the pane; options to answer it.
  const rows = Array.from({ length: 12 }, (_, i) => `| step ${i} | done |`).join('\n');
  await agent.wait(`## Done\nThe retry loop in \`ci.yml\` now waits.\n\n| step | state |\n|---|---|\n${rows}\n\n`
    + '```diff\n--- a/ci.yml\n+++ b/ci.yml\n@@ -1 +1 @@\n-run: sleep 5\n+run: pg_isready\n```\n\n'
    + `\`\`\`yaml\nrun: pg_isready ${'--timeout 30 '.repeat(30)}\n\`\`\`\n\n> Go ahead?`,
  { completionPct: 80, nextStep: 'remove the sleep from Makefile', options: [{ label: 'Go ahead', description: 'and drop the sleep' }, { label: 'Stop' }] });
  multi = await newAgent(hub, 'CI matrix', { hostIp: '192.168.1.20', hostName: 'laptop', workspace: '/home/dev/ci' });
  // …with files beside it (attachments.js): an image and a log to download.
  await multi.wait('Which jobs should run on every push?', { multiSelect: true, options: [{ label: 'lint' }, { label: 'unit' }, { label: 'e2e' }],
    attachments: [{ name: 'matrix.png', mimeType: 'image/png', data: makePng(24, 16, () => [40, 120, 200]) },
      { name: 'ci.log', mimeType: 'text/plain', data: Buffer.from('ok\n').toString('base64') }] });
  const gpu = (await hub.api('POST', '/api/keys', { name: 'gpu-box' })).key;
  const fp = { cursorTitle: 'Training run', workspace: '/data/train', hostIp: '192.168.1.70' };
  const call = (path, body) => fetch(hub.base + path, { method: 'POST', headers: { authorization: `Bearer ${gpu}`, 'content-type': 'application/json' }, body: JSON.stringify(body) }).then((r) => r.json());
  stranded = (await call('/api/init', fp)).token;
  await call('/api/wait/register', { ...fp, token: stranded, message: 'Go on to epoch 50?', requestId: 'gpu-1' });
  await hub.api('DELETE', '/api/keys/gpu-box');
  await hub.api('POST', '/api/session/config', { token: agent.token, timedReplyEnabled: true, timedReplyIntervalMs: 3_600_000 });
  await hub.api('POST', '/api/keys', { name: 'laptop' });
});

after(async () => { if (hub) await hub.stop(); });

const LAYOUTS = {
  desktop: { viewport: { width: 1280, height: 800 } },
  phone: { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true },
};

for (const scheme of ['light', 'dark']) {
  for (const [layout, options] of Object.entries(LAYOUTS)) {
    test(`axe: no violations on login, list, conversation with options, settings, templates, info, a multi-select question, a revoked key's session (${scheme}, ${layout})`, async () => {
      // bypassCSP: the page allows only its own scripts; axe is added by the test.
      const b = await launchBrowser({ ...options, colorScheme: scheme, bypassCSP: true });
      const found = [];
      const check = async (view) => {
        await b.page.waitForTimeout(150); // transitions settle
        for (const v of await violations(b.page)) found.push(`${view}: ${v}`);
      };
      try {
        const { page } = b;
        await page.goto(hub.base);
        await page.getByTestId('login-screen').waitFor();
        await check('login');
        await openPanel(page, hub);
        await item(page, agent.token).waitFor();
        await check('list');
        await selectSession(page, agent.token);
        await page.getByTestId('message').first().waitFor();
        await page.getByTestId('choices').waitFor();
        if (layout === 'phone') await page.getByTestId('waiting-pill').waitFor();
        await check('conversation');
        await page.getByTestId('fold-toggle').click(); // the long report unfolded: its table and code blocks
        await page.getByTestId('fold-body').waitFor();
        await check('conversation, long message unfolded');
        if (layout === 'phone') {
          await page.getByTestId('conv-menu').click(); // the actions sit behind ⋯ on a phone
          await check('conversation actions');
        }
        await page.getByTestId('settings-open').click();
        await page.getByTestId('settings-dialog').waitFor();
        await check('settings');
        await page.keyboard.press('Escape');
        await page.getByTestId('templates-edit').click();
        await page.getByTestId('templates-dialog').waitFor();
        await check('templates');
        await page.keyboard.press('Escape');
        if (layout === 'phone' && !(await page.getByTestId('info-open').isVisible())) await page.getByTestId('conv-menu').click();
        await page.getByTestId('info-open').click();
        await page.getByTestId('session-stats').waitFor();
        await check('info');
        await page.keyboard.press('Escape');
        if (layout === 'desktop') {
          await page.getByTestId('keys-open').click();
          await page.getByTestId('key-row').first().waitFor();
          await check('agent keys');
          await page.keyboard.press('Escape');
        }
        if (layout === 'phone') await page.getByTestId('back').click();
        await selectSession(page, multi.token);
        await page.getByTestId('choice').first().click();
        await page.getByTestId('choices-send').waitFor();
        await check('multi-select question');
        if (layout === 'phone') await page.getByTestId('back').click();
        else await page.getByTestId('machine-filter').waitFor();
        await check('list with machines');
        await selectSession(page, stranded);
        await page.getByTestId('stranded-note').waitFor();
        await check('revoked key');
      } finally {
        await b.close();
      }
      console.log(`axe ${scheme} ${layout}: ${found.length} violating nodes`);
      assert.deepEqual(found, []);
    });
  }
}
