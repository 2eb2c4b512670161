// screenshots.test.mjs — takes the docs' screenshots (into target/screenshots/, or
// docs/screenshots/ with scripts/test-e2e.sh --update-screenshots): the panel with a
// few realistic sessions on three machines at desktop size (light and dark: the list
// with its machine filter, a question with options, the files it changed and a
// screenshot it attached) and on a phone (the conversation
// with its "N waiting ›" pill), checking each view for sideways scrolling on the way.
// Issue 43's set: the phone header with machine · folder (390×844, dark), and at
// 1440×900 a question the agent superseded, a text attachment previewed as text, and
// the changed files with their status in words.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  startHub, newAgent, launchBrowser, openPanel, item, selectSession, hasHorizontalScroll, screenshot, makePng,
} from './harness.mjs';

let hub;
let main;

/** A small bar chart of CI run times with one red (failed) run. */
function failureChart() {
  const bars = [30, 34, 31, 58, 33, 29, 35, 32];
  return makePng(240, 120, (x, y) => {
    const i = Math.floor(x / 30);
    const inBar = x % 30 > 5 && x % 30 < 25 && 120 - y < bars[i] * 1.8;
    if (!inBar) return [246, 247, 249];
    return i === 3 ? [220, 60, 50] : [70, 130, 220];
  });
}

/** The CI job times after the fix, all green: the agent's screenshot beside its question. */
function ciTimesChart() {
  const bars = [33, 31, 32, 30, 31, 29, 30, 31];
  return makePng(240, 120, (x, y) => {
    const i = Math.floor(x / 30);
    const inBar = x % 30 > 5 && x % 30 < 25 && 120 - y < bars[i] * 1.8;
    return inBar ? [60, 160, 90] : [246, 247, 249];
  });
}

/** The workspace's changes the agent's bridge sent with its question (`--share-changes`). */
const CI_CHANGES = {
  files: [
    { path: '.github/workflows/ci.yml', status: 'modified', added: 6, removed: 1 },
    { path: 'tests/db_pool.rs', status: 'modified', added: 2, removed: 2 },
  ],
  diff: [
    'diff --git a/.github/workflows/ci.yml b/.github/workflows/ci.yml',
    '--- a/.github/workflows/ci.yml',
    '+++ b/.github/workflows/ci.yml',
    '@@ -18,3 +18,8 @@ jobs:',
    '-      - run: sleep 10',
    '+      - name: wait for postgres',
    '+        run: |',
    '+          for i in $(seq 1 30); do',
    '+            pg_isready -h localhost && exit 0',
    '+            sleep 1',
    '+          done',
    '       - run: cargo test',
    'diff --git a/tests/db_pool.rs b/tests/db_pool.rs',
    '--- a/tests/db_pool.rs',
    '+++ b/tests/db_pool.rs',
    '@@ -40,4 +40,4 @@',
    '-    thread::sleep(Duration::from_secs(2));',
    '-    let pool = Pool::connect(URL)?;',
    '+    let pool = Pool::connect_retrying(URL, 30)?;',
    '+    assert!(pool.is_ready());',
    '',
  ].join('\n'),
};

before(async () => {
  // The questions stay open throughout (a wait no agent polls ends after 30 s, and its options close).
  hub = await startHub({ config: 'wait_grace_sec = 3600\n' });
  const quiet = await newAgent(hub, 'Docs: README quick start', { workspace: '/home/dev/holdline', hostName: 'laptop' });
  await quiet.wait('README updated with the quick start. Anything else?');
  await hub.api('POST', '/api/reply', { token: quiet.token, text: 'No, thanks. Commit it.' });
  await quiet.reply();

  const zh = await newAgent(hub, '重构登录模块', { workspace: '/home/dev/webapp', hostIp: '192.168.1.20', hostName: 'ana-mac' });
  await zh.wait('我已经把 `auth.ts` 拆成了三个文件：\n\n1. `session.ts` — 会话与 cookie\n2. `password.ts` — 哈希与校验\n3. `oauth.ts` — 第三方登录\n\n单元测试 **12 个全部通过**。下一步要提交吗？',
    { completionPct: 60, nextStep: '提交并更新 CHANGELOG' });

  main = await newAgent(hub, 'Fix flaky CI', { workspace: '/home/dev/service', hostIp: '192.168.1.31', hostName: 'buildbox' });
  await main.wait('The flaky test was `db::pool::reconnects`: it raced the container start.');
  await hub.api('POST', '/api/reply', {
    token: main.token,
    text: 'Good find. Make the test wait for the DB port instead of sleeping. Screenshot of the failure attached.',
    images: [{ mimeType: 'image/png', data: failureChart() }],
  });
  await main.reply();
  await main.wait([
    '## Done',
    'The retry loop in `ci.yml` now waits for the database:',
    '```yaml',
    '- name: wait for postgres',
    '  run: |',
    '    for i in $(seq 1 30); do',
    '      pg_isready -h localhost && exit 0  # ready',
    '      sleep 1',
    '    done',
    '    exit 1',
    '```',
    '- 50 CI runs in a row: **all green**',
    '- p95 job time: 4m12s → 3m58s',
    '',
    '> Next I would drop the `sleep 10` from `Makefile` too. How should I go on?',
  ].join('\n'), {
    completionPct: 80,
    nextStep: 'remove the sleep from Makefile',
    attachments: [{ name: 'ci-times.png', mimeType: 'image/png', data: ciTimesChart() }],
    changes: CI_CHANGES,
    options: [
      { label: 'Drop the sleep too', description: 'same fix in Makefile, then 50 more runs' },
      { label: 'Commit as it is', description: 'leave the Makefile for later' },
      { label: 'Stop and explain' },
    ],
  });
});

after(async () => { if (hub) await hub.stop(); });

async function shoot(name, options, phone = false) {
  const b = await launchBrowser(options);
  try {
    const { page } = b;
    await openPanel(page, hub);
    await item(page, main.token).waitFor();
    assert.equal(await hasHorizontalScroll(page), false, `${name}: list`);
    if (!phone) await page.getByTestId('machine-filter').waitFor();
    await selectSession(page, main.token);
    await page.getByTestId('choices').waitFor();
    if (phone) await page.getByTestId('waiting-pill').waitFor();
    await page.getByTestId('reply-input').fill(phone ? 'Also bump the cache key.' : 'Also bump the cache key while you are there.');
    await page.evaluate(() => document.activeElement?.blur());
    await page.waitForTimeout(200);
    assert.equal(await hasHorizontalScroll(page), false, `${name}: conversation`);
    await screenshot(page, name);
    if (b.errors.length) assert.fail(`page errors: ${b.errors.join(' | ')}`);
  } finally {
    await b.close();
  }
}

test('desktop screenshot (1280×800, light)', async () => {
  await shoot('desktop.png', { viewport: { width: 1280, height: 800 }, colorScheme: 'light' });
});

test('dark screenshot (1280×800, dark)', async () => {
  await shoot('dark.png', { viewport: { width: 1280, height: 800 }, colorScheme: 'dark' });
});

test('phone screenshot (390×844)', async () => {
  await shoot('phone.png', { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2, colorScheme: 'light' }, true);
});

test('phone list screenshot (390×844, Chinese)', async () => {
  const b = await launchBrowser({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2, locale: 'zh-CN' });
  try {
    await openPanel(b.page, hub);
    await item(b.page, main.token).waitFor();
    assert.equal(await hasHorizontalScroll(b.page), false);
    await screenshot(b.page, 'phone-list-zh.png');
  } finally {
    await b.close();
  }
});

test('changed files screenshot (1280×800): the files the agent changed, one diff open', async () => {
  const b = await launchBrowser({ viewport: { width: 1280, height: 800 }, colorScheme: 'light' });
  try {
    const { page } = b;
    await openPanel(page, hub);
    await selectSession(page, main.token);
    const block = page.getByTestId('workspace-changes');
    await block.getByTestId('changed-file').first().locator('summary').click();
    await block.scrollIntoViewIfNeeded();
    await page.evaluate(() => document.querySelector('[data-testid="workspace-changes"]').scrollIntoView({ block: 'start' }));
    assert.equal(await hasHorizontalScroll(page), false);
    await screenshot(page, 'changes.png');
    if (b.errors.length) assert.fail(`page errors: ${b.errors.join(' | ')}`);
  } finally {
    await b.close();
  }
});

/** Opens `agent`'s conversation in a fresh browser, brings `testid` (in the message holding `text`) to the top, checks and shoots it. */
async function shootPart(name, agent, text, testid, options = { viewport: { width: 1440, height: 900 }, colorScheme: 'light' }) {
  const b = await launchBrowser(options);
  try {
    const { page } = b;
    await openPanel(page, hub);
    await selectSession(page, agent.token);
    const part = page.getByTestId('message').filter({ hasText: text }).getByTestId(testid);
    await part.waitFor();
    await part.evaluate((el) => el.closest('[data-testid="message"]').scrollIntoView({ block: 'start' }));
    await page.evaluate(() => document.activeElement?.blur());
    await page.waitForTimeout(200);
    assert.equal(await hasHorizontalScroll(page), false, name);
    await screenshot(page, name);
    if (b.errors.length) assert.fail(`page errors: ${b.errors.join(' | ')}`);
  } finally {
    await b.close();
  }
}

test('phone header screenshot (390×844, dark): machine · folder and the title in full', async () => {
  const agent = await newAgent(hub, 'Migrate the reporting pipeline to the warehouse',
    { workspace: '/Users/dev/code/analytics-dashboard', hostName: 'studio-mac' });
  await agent.wait('The nightly export now writes to the warehouse. Which table should the dashboard read?', {
    completionPct: 70, nextStep: 'switch the dashboard queries to the new warehouse tables',
    options: [{ label: 'events_v2', description: 'the new partitioned table' }, { label: 'events_legacy' }],
  });
  const b = await launchBrowser({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2, colorScheme: 'dark' });
  try {
    const { page } = b;
    await openPanel(page, hub);
    await selectSession(page, agent.token);
    await page.getByTestId('choices').waitFor();
    assert.equal(await page.getByTestId('header-where').textContent(), 'studio-mac · analytics-dashboard');
    await page.evaluate(() => document.activeElement?.blur());
    await page.waitForTimeout(200);
    assert.equal(await hasHorizontalScroll(page), false);
    await screenshot(page, 'phone-header-dark.png');
    if (b.errors.length) assert.fail(`page errors: ${b.errors.join(' | ')}`);
  } finally {
    await b.close();
  }
});

test('superseded question screenshot (1440×900): the agent asked again, the old options inert', async () => {
  const agent = await newAgent(hub, 'Pick the release database', { workspace: '/home/dev/service', hostName: 'buildbox' });
  await agent.wait('The integration tests pass on both. Which database should the release ship with?', {
    options: [{ label: 'Postgres', description: 'what production runs' }, { label: 'SQLite', description: 'no server to run' }, { label: 'Keep both' }],
  });
  await agent.wait('No answer yet, so I kept both for now. Which port should Postgres listen on?', {
    options: [{ label: '5432' }, { label: '6543' }],
  });
  await shootPart('superseded.png', agent, 'Which database should the release ship with?', 'question-state');
});

test('text attachment screenshot (1440×900): a log previewed as text beside the question', async () => {
  const agent = await newAgent(hub, 'Flaky login test', { workspace: '/home/dev/webapp', hostName: 'laptop' });
  const log = [
    '12:04:01 login.spec  step 1 open /login ............ ok',
    '12:04:01 login.spec  step 2 fill user ............. ok',
    '12:04:02 login.spec  step 3 fill password ......... ok',
    '12:04:02 login.spec  step 4 submit ................ ok',
    '12:04:07 login.spec  step 5 wait for /home ........ FAILED (timeout 5000 ms)',
    '12:04:07   last response: 302 /login?error=csrf',
  ].join('\n') + '\n';
  const b64 = (text) => Buffer.from(text).toString('base64');
  await agent.wait('The login test fails at step 5: the CSRF cookie is missing after the redirect. Log attached. Shall I pin the cookie\'s SameSite to Lax and retry?', {
    attachments: [{ name: 'login.log', mimeType: 'text/plain', data: b64(log) },
      { name: 'cookies.json', mimeType: 'application/json', data: b64('{"csrf": null, "session": "set", "sameSite": "Strict"}') }],
  });
  await shootPart('attachment-text.png', agent, 'The login test fails at step 5', 'attachments');
});

test('changes legend screenshot (1440×900): each changed file\'s status in a word', async () => {
  const agent = await newAgent(hub, 'Split the docs', { workspace: '/home/dev/app', hostName: 'laptop' });
  await agent.wait('I split the guide and moved the old page. Keep the rename?', {
    changes: {
      files: [
        { path: 'src/app.rs', status: 'modified', added: 2, removed: 1 },
        { path: 'docs/guide.md', status: 'renamed', added: 0, removed: 0, oldPath: 'docs/old-guide.md' },
        { path: 'docs/notes.md', status: 'untracked', added: 12, removed: 0 },
        { path: 'docs/legacy.md', status: 'deleted', added: 0, removed: 40 },
        { path: 'src/lib.rs', status: 'added', added: 9, removed: 0 },
      ],
      diff: 'diff --git a/src/app.rs b/src/app.rs\n--- a/src/app.rs\n+++ b/src/app.rs\n@@ -1 +1,2 @@\n-old();\n+new();\n+more();\n',
    },
  });
  await shootPart('changes-words.png', agent, 'Keep the rename?', 'workspace-changes');
});
