// changes.test.mjs — a question that carries the workspace's changes (registered through
// the hub's agent route, as a bridge sends it): "Changed files (N)" under the question with
// each file's status, path (renamed: old → new), +added −removed or "binary"; each file's
// diff opens from its line (keyboard too) with added, removed and hunk lines coloured; the
// block is open on a desktop and, on a phone, while it is the newest; a cut list says so; axe
// finds nothing in light and dark.

import { test, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { startHub, newAgent, openPanel, selectSession, browsersPerTest, hasHorizontalScroll, screenshot } from './harness.mjs';

const axePath = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

let hub;
before(async () => { hub = await startHub(); });
after(async () => { if (hub) await hub.stop(); });
const browser = browsersPerTest(afterEach);

const DIFF = [
  'diff --git a/src/app.rs b/src/app.rs',
  'index 1111111..2222222 100644',
  '--- a/src/app.rs',
  '+++ b/src/app.rs',
  '@@ -1,3 +1,4 @@',
  ' fn main() {',
  '-    old();',
  '+    new();',
  '+    more();',
  ' }',
  'diff --git a/logo.png b/logo.png',
  'index 3333333..4444444 100644',
  'Binary files a/logo.png and b/logo.png differ',
  'diff --git a/docs/old name.md b/docs/new name.md',
  'similarity index 100%',
  'rename from docs/old name.md',
  'rename to docs/new name.md',
  'diff --git a/notes.txt b/notes.txt',
  'new file mode 100644',
  'index 0000000..5555555',
  '--- /dev/null',
  '+++ b/notes.txt',
  '@@ -0,0 +1 @@',
  '+<script>alert(1)</script>',
  '',
].join('\n');

const CHANGES = {
  files: [
    { path: 'src/app.rs', status: 'modified', added: 2, removed: 1 },
    { path: 'logo.png', status: 'modified', binary: true },
    { path: 'docs/new name.md', status: 'renamed', added: 0, removed: 0, oldPath: 'docs/old name.md' },
    { path: 'notes.txt', status: 'untracked', added: 1, removed: 0 },
    { path: 'gone.txt', status: 'deleted', added: 0, removed: 4 },
  ],
  diff: DIFF,
};

/** An agent asking `question` with `changes`, and the panel open on it in `options`' browser. */
async function askInPanel(title, question, changes, options) {
  const agent = await newAgent(hub, title);
  await agent.wait(question, { changes });
  const b = await browser(options);
  await openPanel(b.page, hub);
  await selectSession(b.page, agent.token);
  const block = b.page.getByTestId('message').filter({ hasText: question }).getByTestId('workspace-changes');
  await block.waitFor({ state: 'attached' });
  return { page: b.page, block };
}

const PHONE = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true };

test('changes: every file with its status, counts and diff, open on a desktop', async () => {
  const { page, block } = await askInPanel('Refactor', 'Refactored; look at the diff?', CHANGES);
  assert.equal(await block.evaluate((d) => d.open), true, 'open on a desktop');
  assert.equal(await block.locator('summary').first().textContent(), 'Changed files (5)');
  const files = block.getByTestId('changed-file');
  assert.equal(await files.count(), 5);
  assert.deepEqual(await block.getByTestId('changed-path').allTextContents(),
    ['src/app.rs', 'logo.png', 'docs/old name.md → docs/new name.md', 'notes.txt', 'gone.txt']);
  assert.deepEqual(await files.locator('.ws-status').allTextContents(), ['modified', 'modified', 'renamed', 'new', 'deleted']);
  assert.equal(await files.nth(0).getByTestId('changed-counts').textContent(), '+2 −1');
  assert.equal(await files.nth(1).getByTestId('changed-binary').textContent(), 'binary');
  assert.equal(await files.nth(1).getByTestId('changed-counts').count(), 0);
  assert.equal(await files.nth(4).textContent().then((s) => s.includes('not in the diff')), true, 'a file the diff lacks says so');
  assert.equal(await block.getByTestId('changes-truncated').count(), 0);

  // A file's diff is closed until asked; the keyboard opens it.
  const app = files.nth(0);
  assert.equal(await app.getByTestId('file-diff').isVisible(), false);
  await app.locator('summary').focus();
  await page.keyboard.press('Enter');
  const diff = app.getByTestId('file-diff');
  await diff.waitFor();
  assert.equal(await diff.locator('.ws-add').count(), 2);
  assert.deepEqual(await diff.locator('.ws-del').allTextContents(), ['-    old();\n']);
  assert.equal(await diff.locator('.ws-hunk').textContent(), '@@ -1,3 +1,4 @@\n');
  assert.notEqual(
    await diff.locator('.ws-add').first().evaluate((e) => getComputedStyle(e).backgroundColor),
    await diff.locator('.ws-del').first().evaluate((e) => getComputedStyle(e).backgroundColor),
  );
  // The diff is text: markup in it is shown, never run.
  await files.nth(3).locator('summary').click();
  assert.match(await files.nth(3).getByTestId('file-diff').textContent(), /\+<script>alert\(1\)<\/script>/);
  assert.equal(await page.locator('#message-list script').count(), 0);
  // The renamed file's part holds its rename lines.
  await files.nth(2).locator('summary').click();
  assert.match(await files.nth(2).getByTestId('file-diff').textContent(), /rename from docs\/old name\.md/);
  await screenshot(page, 'changes-desktop.png');
});

test('changes: open on a phone while newest, a tap folds it; no sideways scroll; a cut list says so', async () => {
  const changes = { ...CHANGES, truncated: true };
  const { page, block } = await askInPanel('Phone review', 'Big change; ok?', changes, PHONE);
  assert.equal(await block.evaluate((d) => d.open), true, 'the newest question\'s changes are open on a phone');
  await block.locator('summary').first().tap();
  assert.equal(await block.getByTestId('changed-file').first().isVisible(), false);
  await block.locator('summary').first().tap();
  await block.getByTestId('changed-file').first().waitFor();
  assert.match(await block.getByTestId('changes-truncated').textContent(), /Cut: there was more/);
  const first = block.getByTestId('changed-file').first();
  await first.locator('summary').tap();
  await first.getByTestId('file-diff').waitFor();
  const height = await first.locator('summary').evaluate((s) => s.getBoundingClientRect().height);
  assert.ok(height >= 44, `a 44 px touch target (${height})`);
  assert.equal(await hasHorizontalScroll(page), false, 'long diff lines scroll inside their box');
  await screenshot(page, 'changes-phone.png');
});

test('changes: a question without changes shows no block', async () => {
  const agent = await newAgent(hub, 'Plain');
  await agent.wait('Nothing changed?');
  const { page } = await browser();
  await openPanel(page, hub);
  await selectSession(page, agent.token);
  const question = page.getByTestId('message').filter({ hasText: 'Nothing changed?' });
  await question.waitFor();
  assert.equal(await question.getByTestId('workspace-changes').count(), 0);
});

for (const scheme of ['light', 'dark']) {
  for (const [layout, options] of Object.entries({ desktop: {}, phone: PHONE })) {
    test(`changes: axe finds no violations with every file open (${scheme}, ${layout})`, async () => {
      const { page, block } = await askInPanel(`A11y ${scheme} ${layout}`, 'Accessible?', CHANGES,
        { ...options, colorScheme: scheme, bypassCSP: true });
      await block.evaluate((d) => { d.open = true; for (const f of d.querySelectorAll('details')) f.open = true; });
      await page.waitForTimeout(150);
      await page.addScriptTag({ path: axePath });
      const found = await page.evaluate(async () => {
        const r = await window.axe.run(document.querySelector('[data-testid="workspace-changes"]'), { resultTypes: ['violations'] });
        return r.violations.flatMap((v) => v.nodes.map((n) => `${v.id}: ${n.target.join(' ')}`));
      });
      assert.deepEqual(found, []);
    });
  }
}
