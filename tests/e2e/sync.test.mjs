// sync.test.mjs — two hubs sharing one MongoDB (secantusd, a MongoDB-wire
// server) as the panel shows it: the sync badge in the header, another hub's
// session listed read-only with the hub that owns it, and the badge turning
// to "behind"/"down" when MongoDB goes away. Needs HOLDLINE_TEST_SECANTUSD
// (the path to `secantusd-py`; scripts/test.sh exports it), else skipped.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { launchBrowser, openPanel, item, selectSession, repoRoot, sleep } from './harness.mjs';

const SECANTUSD = process.env.HOLDLINE_TEST_SECANTUSD || '';
const HUB_BIN = process.env.HOLDLINE_HUB_BIN || join(repoRoot, 'target', 'debug', 'holdline-hub');
const skip = !SECANTUSD
  ? 'HOLDLINE_TEST_SECANTUSD is not set (the path to secantusd-py, a MongoDB-wire server; scripts/test.sh exports it)'
  : !existsSync(SECANTUSD) ? `HOLDLINE_TEST_SECANTUSD=${SECANTUSD} does not exist` : false;
if (skip) console.log(`# sync.test.mjs skipped: ${skip}`);

const procs = [];
const dirs = [];
let mongo;
let a;
let b;
let browser;

function run(cmd, args, env = {}) {
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  const proc = { child, log: '' };
  child.stdout.on('data', (d) => { proc.log += d; });
  child.stderr.on('data', (d) => { proc.log += d; });
  proc.exited = new Promise((r) => child.once('exit', (code, signal) => r({ code, signal })));
  procs.push(proc);
  return proc;
}

async function stop(proc, signal = 'SIGTERM') {
  if (proc.child.exitCode === null && proc.child.signalCode === null) {
    proc.child.kill(signal);
    const t = setTimeout(() => proc.child.kill('SIGKILL'), 5000);
    await proc.exited;
    clearTimeout(t);
  }
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

function canConnect(port) {
  return new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port });
    s.once('connect', () => { s.destroy(); resolve(true); });
    s.once('error', () => resolve(false));
  });
}

async function waitFor(what, fn, ms, proc) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (proc && proc.child.exitCode !== null) throw new Error(`${what}: the process exited (${proc.child.exitCode}):\n${proc.log}`);
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms${proc ? `\n${proc.log}` : ''}`);
    await sleep(100);
  }
}

async function tempDir(prefix) {
  const d = await mkdtemp(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
}

/** A hub with `secret` syncing to MongoDB at `uri`. */
async function startSyncedHub(secret, uri) {
  const home = await tempDir('holdline-e2e-sync-home-');
  await writeFile(join(home, 'secret'), `${secret}\n`, { mode: 0o600 });
  const proc = run(HUB_BIN, ['serve', '--listen', '127.0.0.1:0', '--home', home, '--mongo-uri', uri],
    { RUST_LOG: process.env.RUST_LOG || 'warn', HOLDLINE_HOME: home });
  const addr = await waitFor('hub.addr', async () => {
    try { return (await readFile(join(home, 'hub.addr'), 'utf8')).trim().replace(/^http:\/\//, '').replace(/\/$/, ''); } catch { return ''; }
  }, 20_000, proc);
  const base = `http://${addr}`;
  const hub = {
    addr, base, secret, home, proc,
    async api(method, path, body) {
      const res = await fetch(base + path, {
        method,
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      if (!res.ok) throw new Error(`${method} ${path} → ${res.status} ${text}`);
      return text ? JSON.parse(text) : null;
    },
    async health() {
      // Without the secret /healthz says only that the hub is up.
      return (await fetch(`${base}/healthz`, { headers: { authorization: `Bearer ${secret}` } })).json();
    },
  };
  return hub;
}

before(async () => {
  if (skip) return;
  const port = await freePort();
  const storage = await tempDir('holdline-e2e-secantus-');
  mongo = run(SECANTUSD, ['--host', '127.0.0.1', '--port', String(port), '--storage-path', storage]);
  await waitFor('secantusd listening', () => canConnect(port), 30_000, mongo);
  const uri = `mongodb://127.0.0.1:${port}/?directConnection=true`;
  const secret = randomBytes(32).toString('hex');
  a = await startSyncedHub(secret, uri);
  b = await startSyncedHub(secret, uri);
  // Both hubs reach MongoDB (the server may need a moment after accepting TCP).
  for (const hub of [a, b]) {
    await waitFor(`${hub.addr} sync ok`, async () => {
      const h = await hub.health();
      assert.ok(h.mongo, 'healthz has mongo when sync is on');
      return h.mongo.state === 'ok';
    }, 30_000, hub.proc);
  }
  browser = await launchBrowser();
});

after(async () => {
  if (browser) {
    if (browser.errors.length) console.log(`# page errors: ${browser.errors.join(' | ')}`);
    await browser.close();
  }
  for (const p of procs.reverse()) await stop(p);
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

test('sync badge, another hub\'s session read-only, badge behind/down when MongoDB goes away', { skip }, async () => {
  const { page } = browser;

  const mine = await a.api('POST', '/api/init', {
    cursorTitle: 'Owned by hub A', workspace: '/home/dev/a', hostIp: '127.0.0.1', newPlan: true,
  });
  await a.api('POST', '/api/wait/register', {
    token: mine.token, message: 'Done on A. Next?', cursorTitle: 'Owned by hub A', workspace: '/home/dev/a', hostIp: '127.0.0.1', requestId: 'q-a-1',
  });

  await openPanel(page, b);
  const badge = page.getByTestId('sync');
  await page.waitForFunction(() => document.querySelector('[data-testid="sync"]')?.dataset.state === 'ok', null, { timeout: 15_000 });
  assert.equal(await badge.textContent(), 'MongoDB ✓');
  assert.equal(await badge.isVisible(), true);

  // A's session reaches B through MongoDB and B's panel hears of it live (SSE).
  const row = item(page, mine.token);
  try {
    await row.waitFor({ timeout: 15_000 });
  } catch (e) {
    const onB = await fetch(`${b.base}/api/sessions/${mine.token}?limit=1`, { headers: { authorization: `Bearer ${b.secret}` } });
    const onBText = await onB.text();
    throw new Error(`A's session never showed on B's panel: ${e.message}\nB's API for it: ${onB.status} ${onBText.slice(0, 300)}\n`
      + `A healthz ${JSON.stringify(await a.health())}, B healthz ${JSON.stringify(await b.health())}\n--- A\n${a.proc.log}\n--- B\n${b.proc.log}`);
  }
  const tag = row.getByTestId('session-mirror');
  await tag.waitFor();
  assert.equal(await tag.textContent(), `on ${a.addr}`);
  // It waits, but on A: B's tab title does not count it (nor does B chime for it).
  assert.equal(await row.getAttribute('data-status'), 'waiting');
  assert.equal(await page.title(), 'holdline');

  await selectSession(page, mine.token);
  const notice = page.getByTestId('mirror-notice');
  await notice.waitFor();
  assert.equal(await notice.textContent(), `This session belongs to the hub at ${a.addr} — answer it there`);
  assert.equal(await page.getByTestId('mirror-link').getAttribute('href'), `http://${a.addr}/`);
  assert.equal(await page.getByTestId('reply-input').isDisabled(), true);
  assert.equal(await page.getByTestId('reply-send').isDisabled(), true);
  assert.equal(await page.getByTestId('settings-open').isDisabled(), true);
  assert.equal(await page.getByTestId('rename').isDisabled(), true);
  assert.equal(await page.getByTestId('merge-open').isDisabled(), true);
  assert.equal(await page.getByTestId('archive').isDisabled(), true);
  for (const chip of await page.getByTestId('quick-reply').all()) assert.equal(await chip.isDisabled(), true);

  // Chinese strings too.
  await page.getByTestId('lang-toggle').click();
  assert.equal(await notice.textContent(), `此会话属于 ${a.addr} 上的 hub——请在那里回复`);
  assert.equal(await tag.textContent(), `在 ${a.addr}`);
  await page.getByTestId('lang-toggle').click();

  // A session B owns is not a mirror.
  const own = await b.api('POST', '/api/init', {
    cursorTitle: 'Owned by hub B', workspace: '/home/dev/b', hostIp: '127.0.0.1', newPlan: true,
  });
  await item(page, own.token).waitFor();
  assert.equal(await item(page, own.token).getByTestId('session-mirror').count(), 0);
  await selectSession(page, own.token);
  assert.equal(await notice.isHidden(), true);
  assert.equal(await page.getByTestId('reply-input').isDisabled(), false);

  // MongoDB goes away; a change on B cannot be sent: the badge says so.
  await stop(mongo, 'SIGKILL');
  await b.api('POST', '/api/reply', { token: own.token, text: 'while MongoDB is down' });
  await page.waitForFunction(() => ['behind', 'down'].includes(document.querySelector('[data-testid="sync"]')?.dataset.state),
    null, { timeout: 20_000 });
  const text = await badge.textContent();
  assert.match(text, /^MongoDB(: \d+ behind \(\d+s\)| down)$/);
});
