// https.test.mjs — the panel through the reverse proxy docs/operations.md
// describes: Debian's Caddy with its internal CA in front of a real hub, a
// host name (mapped to loopback in the browser) as a phone on the LAN would
// use. Login, the session cookie, Host/Origin checks, SSE and replies all
// work through it, and the page is a secure context, so notifications may show.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, writeFile, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startHub, newAgent, launchBrowser, item, selectSession, sleep } from './harness.mjs';

const CADDY = process.env.HOLDLINE_CADDY || '/usr/bin/caddy';
const NAME = 'holdline-https.test';

let hub;
let caddy;
let dir;
let port;

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => { const p = srv.address().port; srv.close(() => resolve(p)); });
  });
}

before(async () => {
  if (!existsSync(CADDY)) return;
  hub = await startHub({ config: `allowed_hosts = ["${NAME}"]\n` });
  dir = await mkdtemp(join(tmpdir(), 'holdline-e2e-caddy-'));
  port = await freePort();
  const httpPort = await freePort();
  const upstream = new URL(hub.base).host;
  await writeFile(join(dir, 'Caddyfile'), `{
	admin off
	storage file_system ${join(dir, 'data')}
	skip_install_trust
	http_port ${httpPort}
	https_port ${port}
	auto_https disable_redirects
}

https://${NAME}:${port} {
	bind 127.0.0.1
	tls internal
	reverse_proxy ${upstream}
}
`);
  caddy = spawn(CADDY, ['run', '--config', join(dir, 'Caddyfile'), '--adapter', 'caddyfile'], {
    stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, HOME: dir, XDG_DATA_HOME: dir, XDG_CONFIG_HOME: dir },
  });
  let log = '';
  caddy.stdout.on('data', (d) => { log += d; });
  caddy.stderr.on('data', (d) => { log += d; });
  for (const deadline = Date.now() + 20_000; ; await sleep(100)) {
    if (caddy.exitCode !== null) throw new Error(`caddy exited:\n${log}`);
    if (/serving initial configuration|server running/.test(log)) break;
    if (Date.now() > deadline) throw new Error(`caddy did not start:\n${log}`);
  }
});

after(async () => {
  if (caddy && caddy.exitCode === null) {
    caddy.kill('SIGTERM');
    await new Promise((r) => caddy.once('exit', r));
  }
  if (dir) await rm(dir, { recursive: true, force: true });
  if (hub) await hub.stop();
});

test('through Caddy with its internal CA: login, cookie, live updates and a reply; a secure context', { skip: !existsSync(CADDY) && 'no caddy (scripts/test-e2e.sh installs it)' }, async () => {
  // The internal CA is not in this fresh profile's trust store; the connection is still TLS.
  const b = await launchBrowser({
    viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, ignoreHTTPSErrors: true,
    extraArgs: [`--host-resolver-rules=MAP ${NAME} 127.0.0.1`],
  });
  try {
    const { page, context } = b;
    const base = `https://${NAME}:${port}`;
    await page.goto(`${base}/`);
    await page.getByTestId('login-screen').waitFor();
    await page.getByTestId('login-key').fill(hub.secret);
    await page.getByTestId('login-submit').click();
    await page.locator('#app:not([hidden])').waitFor();
    assert.equal(await page.evaluate(() => window.isSecureContext), true, 'https: a secure context');
    const cookie = (await context.cookies(base)).find((c) => c.name === 'holdline_session');
    assert.ok(cookie && cookie.httpOnly, 'the session cookie came through the proxy');
    await page.waitForFunction(() => document.querySelector('[data-testid="live"]')?.dataset.state === 'on');
    assert.equal(await page.getByTestId('notify-toggle').evaluate((el) => el.classList.contains('blocked')), false);

    const agent = await newAgent(hub, 'Behind Caddy');
    await agent.wait('Is the proxy fine?');
    await item(page, agent.token).waitFor({ timeout: 10_000 }); // pushed over SSE through Caddy
    await selectSession(page, agent.token);
    await page.getByTestId('reply-input').fill('Yes, through TLS.');
    await page.getByTestId('reply-send').tap();
    assert.equal((await agent.reply()).text, 'Yes, through TLS.');

    // The hub still refuses another origin through the proxy.
    const refused = await page.evaluate(async () => (await fetch('/api/sessions', { headers: { 'x-probe': '1' } })).status);
    assert.equal(refused, 200, 'same origin through the proxy is fine');
    const res = await fetch(`${hub.base}/api/sessions`, { headers: { authorization: `Bearer ${hub.secret}`, origin: 'https://evil.example' } });
    assert.equal(res.status, 403);
  } finally {
    await b.close();
  }
});
