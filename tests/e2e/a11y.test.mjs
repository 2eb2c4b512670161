// a11y.test.mjs — axe-core (from npm, run offline in the page) finds no violation
// of any impact on any of the panel's views, in each of four combinations:
// desktop 1440×900 and phone 390×844, light and dark. One test per view and
// combination, so a failure names both. The views: the login screen; the session
// list (and with its machine filter); a conversation with options (a long report
// folded and unfolded, a table and code wider than the pane; on a phone with the
// "N waiting ›" and "newest ›" pills), with attachments (an image, text previewed,
// a binary to download), with the workspace's changes (a diff open), with a
// superseded question; the stale box ("the agent asked something newer"); a
// multi-select question; a revoked key's session; the conversation's actions (⋯,
// phone); settings, quick-reply templates, info; notifications (the bell's dialog
// with Web Push and a failing messenger channel); agent keys (desktop: a phone has
// no room for them).

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startHub, newAgent, launchBrowser, openPanel, item, selectSession, makePng, axeViolations } from './harness.mjs';

let hub;
/** The agents behind the views, by what they show. */
const agents = {};
let stranded;

/** A long report (folded to its question) with a diff, a table and a code line wider than the pane. */
function longReport() {
  const rows = Array.from({ length: 12 }, (_, i) => `| step ${i} | done |`).join('\n');
  return `## Done\nThe retry loop in \`ci.yml\` now waits.\n\n| step | state |\n|---|---|\n${rows}\n\n`
    + '```diff\n--- a/ci.yml\n+++ b/ci.yml\n@@ -1 +1 @@\n-run: sleep 5\n+run: pg_isready\n```\n\n'
    + `\`\`\`yaml\nrun: pg_isready ${'--timeout 30 '.repeat(30)}\n\`\`\`\n\n> Go ahead?`;
}

const CHANGES = {
  files: [
    { path: '.github/workflows/ci.yml', status: 'modified', added: 2, removed: 1 },
    { path: 'docs/new.md', status: 'renamed', added: 0, removed: 0, oldPath: 'docs/old.md' },
    { path: 'notes.txt', status: 'untracked', added: 1, removed: 0 },
    { path: 'gone.txt', status: 'deleted', added: 0, removed: 4 },
    { path: 'src/lib.rs', status: 'added', added: 3, removed: 0 },
  ],
  diff: 'diff --git a/.github/workflows/ci.yml b/.github/workflows/ci.yml\n--- a/.github/workflows/ci.yml\n+++ b/.github/workflows/ci.yml\n'
    + '@@ -18,2 +18,3 @@ jobs:\n-      - run: sleep 10\n+      - run: pg_isready\n+      - run: cargo test\n',
};

before(async () => {
  // The questions stay open throughout (a wait no agent polls ends after 30 s, and its options close).
  // A webhook nobody answers (port 9) gives the bell's dialog a failing channel with its error.
  hub = await startHub({
    config: 'wait_grace_sec = 3600\n\n[notify]\nafter_sec = 0\n\n[notify.webpush]\nenabled = true\n\n'
      + '[[notify.webhook]]\nurl = "http://127.0.0.1:9/hook"\nformat = "json"\n',
  });
  const b64 = (text) => Buffer.from(text).toString('base64');
  const quiet = await newAgent(hub, 'Docs: README quick start', { hostIp: '192.168.1.20', hostName: 'laptop' });
  await quiet.wait('README updated. Anything else?');
  await hub.api('POST', '/api/reply', { token: quiet.token, text: 'No, commit it.' });
  await quiet.reply();
  agents.options = await newAgent(hub, 'Fix flaky CI', { hostIp: '192.168.1.31', hostName: 'buildbox', workspace: '/home/dev/ci-runner' });
  await agents.options.wait(longReport(), {
    completionPct: 80, nextStep: 'remove the sleep from Makefile',
    options: [{ label: 'Go ahead', description: 'and drop the sleep' }, { label: 'Stop' }],
  });
  agents.multi = await newAgent(hub, 'CI matrix', { hostIp: '192.168.1.20', hostName: 'laptop', workspace: '/home/dev/ci' });
  await agents.multi.wait('Which jobs should run on every push?', { multiSelect: true, options: [{ label: 'lint' }, { label: 'unit' }, { label: 'e2e' }] });
  agents.attachments = await newAgent(hub, 'Flaky login test', { hostIp: '192.168.1.20', hostName: 'laptop', workspace: '/home/dev/webapp' });
  await agents.attachments.wait('The login test fails at step 5; the screen and the logs are attached. Retry?', {
    attachments: [{ name: 'screen.png', mimeType: 'image/png', data: makePng(24, 16, () => [40, 120, 200]) },
      { name: 'login.log', mimeType: 'text/plain', data: b64('step 4 submit ok\nstep 5 wait for /home FAILED\n') },
      { name: 'cookies.json', mimeType: 'application/json', data: b64('{"csrf": null}') },
      { name: 'core.bin', mimeType: 'application/octet-stream', data: b64('\u0000\u0001binary') }],
  });
  agents.changes = await newAgent(hub, 'Split the docs', { hostIp: '192.168.1.31', hostName: 'buildbox', workspace: '/home/dev/app' });
  await agents.changes.wait('I split the guide and moved the old page. Keep the rename?', { changes: CHANGES });
  agents.superseded = await newAgent(hub, 'Pick the release database', { hostIp: '192.168.1.31', hostName: 'buildbox', workspace: '/home/dev/service' });
  await agents.superseded.wait('Which database should the release ship with?', { options: [{ label: 'Postgres' }, { label: 'SQLite' }] });
  await agents.superseded.wait('No answer yet, so I kept both. Which port should Postgres listen on?', { options: [{ label: '5432' }, { label: '6543' }] });
  const gpu = (await hub.api('POST', '/api/keys', { name: 'gpu-box' })).key;
  const fp = { cursorTitle: 'Training run', workspace: '/data/train', hostIp: '192.168.1.70' };
  const call = (path, body) => fetch(hub.base + path, { method: 'POST', headers: { authorization: `Bearer ${gpu}`, 'content-type': 'application/json' }, body: JSON.stringify(body) }).then((r) => r.json());
  stranded = (await call('/api/init', fp)).token;
  await call('/api/wait/register', { ...fp, token: stranded, message: 'Go on to epoch 50?', requestId: 'gpu-1' });
  await hub.api('DELETE', '/api/keys/gpu-box');
  await hub.api('POST', '/api/session/config', { token: agents.options.token, timedReplyEnabled: true, timedReplyIntervalMs: 3_600_000 });
  await hub.api('POST', '/api/keys', { name: 'laptop' });
});

after(async () => { if (hub) await hub.stop(); });

const COMBINATIONS = [
  ['desktop', 'light', { viewport: { width: 1440, height: 900 } }],
  ['desktop', 'dark', { viewport: { width: 1440, height: 900 } }],
  ['phone', 'light', { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true }],
  ['phone', 'dark', { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true }],
];

/** Opens one of the conversation's actions (behind ⋯ on a phone). */
async function action(page, layout, testid) {
  if (layout === 'phone' && !(await page.getByTestId(testid).isVisible())) await page.getByTestId('conv-menu').click();
  await page.getByTestId(testid).click();
}

/** Opens `agent`'s conversation and waits for the message holding `text`. */
async function conversation(page, token, text) {
  await selectSession(page, token);
  await page.getByTestId('message').filter({ hasText: text }).first().waitFor();
}

/**
 * Each view: how to bring it up on a signed-in panel (`page`, `layout`, `scheme`); `only`
 * limits it to one layout. The `signedOut` view comes first: the profile is still fresh.
 */
const VIEWS = [
  { name: 'login', signedOut: true, open: async (page) => { await page.getByTestId('login-screen').waitFor(); } },
  { name: 'list', open: async (page) => { await item(page, agents.options.token).waitFor(); } },
  {
    name: 'conversation with options',
    open: async (page, layout) => {
      await conversation(page, agents.options.token, 'Go ahead?');
      await page.getByTestId('choices').waitFor();
      if (layout === 'phone') {
        await page.getByTestId('waiting-pill').waitFor();
        await page.getByTestId('newest-pill').waitFor();
      }
    },
  },
  {
    name: 'conversation with options, long report unfolded',
    open: async (page) => {
      await conversation(page, agents.options.token, 'Go ahead?');
      await page.getByTestId('fold-toggle').click();
      await page.getByTestId('fold-body').waitFor();
    },
  },
  {
    name: 'conversation with attachments',
    open: async (page) => {
      await conversation(page, agents.attachments.token, 'Retry?');
      await page.waitForFunction(() => document.querySelectorAll('[data-testid="attachment-preview"]').length === 2
        && [...document.querySelectorAll('[data-testid="attachment-preview"]')].every((p) => p.textContent));
      await page.locator('[data-testid="attachments"] img').first().waitFor();
    },
  },
  {
    name: 'conversation with changes',
    open: async (page) => {
      await conversation(page, agents.changes.token, 'Keep the rename?');
      const block = page.getByTestId('workspace-changes');
      if (!(await block.evaluate((d) => d.open))) await block.locator('summary').first().click();
      await block.getByTestId('changed-file').first().locator('summary').click();
    },
  },
  {
    name: 'conversation with a superseded question',
    open: async (page) => {
      await conversation(page, agents.superseded.token, 'Which port should Postgres listen on?');
      await page.getByTestId('question-state').first().waitFor();
    },
  },
  {
    name: 'stale box',
    open: async (page, layout, scheme) => {
      // The agent asks anew while the person's reply is on its way: the panel offers "Send anyway".
      const agent = await newAgent(hub, `Release train (${layout}, ${scheme})`, { hostName: 'laptop', workspace: '/home/dev/release' });
      await agent.wait('Is the changelog right?');
      await conversation(page, agent.token, 'Is the changelog right?');
      let first = true;
      await page.route('**/api/reply', async (route) => {
        if (first) { first = false; await agent.wait('Deploy to prod now?'); }
        await route.continue();
      });
      await page.getByTestId('reply-input').fill('yes go ahead');
      await page.getByTestId('reply-input').press('Enter');
      await page.getByTestId('stale-question').waitFor();
    },
  },
  {
    name: 'multi-select question',
    open: async (page) => {
      await conversation(page, agents.multi.token, 'Which jobs');
      await page.getByTestId('choice').first().click();
      await page.getByTestId('choices-send').waitFor();
    },
  },
  {
    name: 'revoked key\'s session',
    open: async (page) => {
      await selectSession(page, stranded);
      await page.getByTestId('stranded-note').waitFor();
    },
  },
  {
    name: 'list with machines',
    only: 'desktop', // the filter shows beside the list; a phone's list is the next view
    open: async (page) => { await page.getByTestId('machine-filter').waitFor(); },
  },
  {
    name: 'conversation actions',
    only: 'phone',
    open: async (page) => {
      await conversation(page, agents.options.token, 'Go ahead?');
      await page.getByTestId('conv-menu').click();
      await page.getByTestId('info-open').waitFor();
    },
  },
  {
    name: 'settings',
    open: async (page, layout) => {
      await conversation(page, agents.options.token, 'Go ahead?');
      await action(page, layout, 'settings-open');
      await page.getByTestId('settings-dialog').waitFor();
    },
  },
  {
    name: 'quick-reply templates',
    open: async (page) => {
      await conversation(page, agents.options.token, 'Go ahead?');
      await page.getByTestId('templates-edit').click();
      await page.getByTestId('templates-dialog').waitFor();
    },
  },
  {
    name: 'info',
    open: async (page, layout) => {
      await conversation(page, agents.options.token, 'Go ahead?');
      await action(page, layout, 'info-open');
      await page.getByTestId('session-stats').waitFor();
    },
  },
  {
    name: 'notifications',
    open: async (page) => {
      await page.getByTestId('notify-toggle').click();
      await page.getByTestId('push-section').waitFor();
      await page.waitForFunction(() => document.querySelector('[data-testid="push-state"]')?.dataset.state);
      await page.getByTestId('notify-channel').filter({ hasText: 'webhook' }).waitFor();
    },
  },
  {
    name: 'agent keys',
    only: 'desktop',
    open: async (page) => {
      await page.getByTestId('keys-open').click();
      await page.getByTestId('key-row').first().waitFor();
    },
  },
];

for (const [layout, scheme, options] of COMBINATIONS) {
  const size = `${options.viewport.width}×${options.viewport.height}`;
  describe(`axe on every view (${layout} ${size}, ${scheme})`, () => {
    let b;
    // bypassCSP: the page allows only its own scripts; axe is added by the test.
    before(async () => { b = await launchBrowser({ ...options, colorScheme: scheme, bypassCSP: true }); });
    after(async () => { if (b) await b.close(); });

    for (const view of VIEWS.filter((v) => !v.only || v.only === layout)) {
      test(`axe: no violations, ${view.name} (${layout} ${size}, ${scheme})`, async () => {
        const { page } = b;
        await page.unrouteAll();
        // A fresh load each time (a goto that changes only the #fragment would not reload).
        await page.goto('about:blank');
        if (view.signedOut) {
          await page.goto(hub.base); // the first view of a fresh profile: nobody signed in yet
        } else {
          await openPanel(page, hub);
          await page.locator('[data-testid="session-item"]').first().waitFor({ state: 'attached' });
          // A phone reopens the conversation it showed last; each view starts from the list.
          if (layout === 'phone' && await page.evaluate(() => document.body.classList.contains('conv-open'))) await page.getByTestId('back').click();
          await page.locator('[data-testid="session-item"]').first().waitFor();
        }
        await view.open(page, layout, scheme);
        await page.waitForTimeout(150); // transitions settle
        const found = await axeViolations(page);
        assert.deepEqual(found, [], `axe on ${view.name} (${layout} ${size}, ${scheme}): ${found.length} violating nodes`);
      });
    }
  });
}
