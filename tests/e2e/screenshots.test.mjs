// screenshots.test.mjs — takes the docs' screenshots (into target/screenshots/, or
// docs/screenshots/ with scripts/test-e2e.sh --update-screenshots): the panel with a
// few realistic sessions on three machines at desktop size (light and dark: the list
// with its machine filter, a question with options, the files it changed and a
// screenshot it attached) and on a phone (the conversation
// with its "N waiting ›" pill), checking each view for sideways scrolling on the way.

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
