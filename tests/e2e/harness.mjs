// harness.mjs — what the panel's end-to-end tests stand on: a real
// `holdline-hub serve` on an ephemeral port with a temp home, an agent that
// speaks the hub's HTTP API (init, wait/register, wait/poll, ack), and
// Debian's chromium driven by playwright-core with a fresh profile.

import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, mkdir, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomUUID } from 'node:crypto';
import { deflateSync } from 'node:zlib';
import { createRequire } from 'node:module';
import { chromium } from 'playwright-core';

const here = dirname(fileURLToPath(import.meta.url));
export const repoRoot = resolve(here, '..', '..');
// Fresh screenshots go to target/screenshots/; the tracked docs/screenshots/ only on
// purpose (scripts/test-e2e.sh --update-screenshots sets this).
export const screenshotDir = process.env.HOLDLINE_SCREENSHOTS_DIR || join(repoRoot, 'target', 'screenshots');

const HUB_BIN = process.env.HOLDLINE_HUB_BIN || join(repoRoot, 'target', 'debug', 'holdline-hub');
const CHROMIUM = process.env.HOLDLINE_CHROMIUM || '/usr/bin/chromium';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function spawnHub(home, listen) {
  const child = spawn(HUB_BIN, ['serve', '--listen', listen, '--home', home], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, RUST_LOG: process.env.RUST_LOG || 'warn', HOLDLINE_HOME: home },
  });
  const proc = { child, log: '' };
  child.stdout.on('data', (d) => { proc.log += d; });
  child.stderr.on('data', (d) => { proc.log += d; });
  proc.exited = new Promise((r) => child.once('exit', (code, signal) => r({ code, signal })));
  await rm(join(home, 'hub.addr'), { force: true });
  const deadline = Date.now() + 20_000;
  for (;;) {
    // The whole line: output comes in chunks, and half an address is another address.
    const m = proc.log.match(/listening on http:\/\/(\S+)\r?\n/);
    if (m) { proc.addr = m[1]; break; }
    if (existsSync(join(home, 'hub.addr'))) {
      proc.addr = (await readFile(join(home, 'hub.addr'), 'utf8')).trim() || null;
      if (proc.addr) break;
    }
    if (child.exitCode !== null) throw new Error(`hub exited early (${child.exitCode}):\n${proc.log}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`hub did not start within 20 s:\n${proc.log}`);
    }
    await sleep(50);
  }
  proc.addr = proc.addr.replace(/^http:\/\//, '').replace(/\/$/, '');
  return proc;
}

async function stopProc(proc) {
  if (proc.child.exitCode === null && proc.child.signalCode === null) {
    proc.child.kill('SIGTERM');
    const t = setTimeout(() => proc.child.kill('SIGKILL'), 5000);
    await proc.exited;
    clearTimeout(t);
  }
}

/** A running hub. `restart()` stops it and starts it again on the same address and home; `stop()` ends it and removes its home. */
export async function startHub({ config = '' } = {}) {
  if (!existsSync(HUB_BIN)) throw new Error(`hub binary not found at ${HUB_BIN}; run \`cargo build -p holdline-hub\` or set HOLDLINE_HUB_BIN`);
  const home = await mkdtemp(join(tmpdir(), 'holdline-e2e-home-'));
  // `config`: the text of the hub's config.toml, e.g. allowed_hosts for a test host name.
  if (config) await writeFile(join(home, 'config.toml'), config);
  let proc = await spawnHub(home, '127.0.0.1:0');
  const addr = proc.addr;
  let secret = '';
  for (let i = 0; i < 100 && !secret; i++) {
    try { secret = (await readFile(join(home, 'secret'), 'utf8')).trim(); } catch { await sleep(50); }
  }
  if (!secret) throw new Error('hub wrote no secret');
  const base = `http://${addr}`;

  const hub = {
    base,
    secret,
    home,
    log: () => proc.log,
    /** Calls the hub with the Bearer secret; returns `{status, body}`. */
    async call(method, path, body) {
      const res = await fetch(base + path, {
        method,
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      let json = null;
      try { json = text ? JSON.parse(text) : null; } catch { json = text; }
      return { status: res.status, body: json };
    },
    /** Like `call`, but throws unless 2xx, and answers the body. */
    async api(method, path, body) {
      const r = await hub.call(method, path, body);
      if (r.status < 200 || r.status > 299) throw new Error(`${method} ${path} → ${r.status} ${JSON.stringify(r.body)}`);
      return r.body;
    },
    async restart() {
      await stopProc(proc);
      proc = await spawnHub(home, addr);
    },
    /** Stops the hub and keeps its home, so `up()` brings it back as it was (a restart with a pause). */
    async down() {
      await stopProc(proc);
    },
    async up() {
      proc = await spawnHub(home, addr);
    },
    async stop() {
      await stopProc(proc);
      await rm(home, { recursive: true, force: true });
    },
  };
  return hub;
}

/**
 * An IDE agent bound to `{workspace}::{title}@{hostIp}` that talks to `hub` as the bridge would
 * (`hostName`: the host's name its bridge reports, sent only when given).
 */
/** Calls the hub's agent route `path` with an agent key as the Bearer: `{status, body}`. */
export async function agentCall(hub, key, path, body) {
  const res = await fetch(hub.base + path, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

export async function newAgent(hub, title, { workspace = '/home/dev/project', hostIp = '127.0.0.1', hostName } = {}) {
  const host = hostName ? { hostName } : {};
  const init = await hub.api('POST', '/api/init', { cursorTitle: title, workspace, hostIp, ...host, newPlan: true });
  const agent = {
    token: init.token,
    title,
    workspace,
    hostIp,
    waitId: null,
    /** Records `message` and opens a wait. */
    async wait(message, extra = {}) {
      const r = await hub.api('POST', '/api/wait/register', {
        token: agent.token, message, cursorTitle: title, workspace, hostIp, ...host, requestId: randomUUID(), ...extra,
      });
      agent.waitId = r.waitId;
      return r;
    },
    /** Polls until a reply comes (or `ms` passes); acks it; returns the reply. */
    async reply(ms = 15_000) {
      const deadline = Date.now() + ms;
      while (Date.now() < deadline) {
        const r = await hub.api('POST', '/api/wait/poll', {
          token: agent.token, waitId: agent.waitId, timeoutMs: Math.min(5000, Math.max(0, deadline - Date.now())),
        });
        if (r.status === 'replied') {
          await hub.api('POST', '/api/wait/ack', { token: agent.token, waitId: agent.waitId, replyId: r.reply.id });
          return r.reply;
        }
        if (r.status === 'gone') return { gone: r };
      }
      throw new Error(`no reply for ${title} within ${ms} ms`);
    },
  };
  return agent;
}

/** Debian's chromium with a fresh profile (`extraArgs`: more command-line flags); `close()` removes the profile. */
export async function launchBrowser(options = {}) {
  if (!existsSync(CHROMIUM)) throw new Error(`chromium not found at ${CHROMIUM}; run scripts/test-e2e.sh (it installs it)`);
  const profile = await mkdtemp(join(tmpdir(), 'holdline-e2e-profile-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--no-first-run',
      ...(options.extraArgs || []),
    ],
    viewport: { width: 1280, height: 800 },
    locale: 'en-US',
    ...Object.fromEntries(Object.entries(options).filter(([k]) => k !== 'extraArgs')),
  });
  const page = context.pages()[0] || await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  return {
    context,
    page,
    errors,
    async close() {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}

/** Opens the panel at `hub` and signs in with the secret via `#key=`. */
export async function openPanel(page, hub) {
  await page.goto(`${hub.base}/#key=${encodeURIComponent(hub.secret)}`);
  await page.getByTestId('session-list').waitFor({ state: 'attached' });
  await page.locator('#app:not([hidden])').waitFor();
}

/** The list item of session `token`. */
export function item(page, token) {
  return page.locator(`[data-testid="session-item"][data-token="${token}"]`);
}

/** Opens the conversation of `token` from the list. */
export async function selectSession(page, token) {
  await item(page, token).locator('button').first().click();
  await page.locator('#conv-body:not([hidden])').waitFor();
  await onScreen(page, token);
}

/** Waits until the conversation on screen is session `token`'s. */
export function onScreen(page, token) {
  return page.waitForFunction((tok) => document.querySelector('[data-testid="conv-title"]')?.title.includes(tok), token);
}

/** In the page: whether session `tok`'s card is wholly inside the list's visible part. */
function cardInListView(tok) {
  const card = document.querySelector(`[data-testid="session-item"][data-token="${tok}"]`);
  const list = document.getElementById('session-list');
  if (!card) return false;
  const a = card.getBoundingClientRect();
  const b = list.getBoundingClientRect();
  return a.top >= b.top - 1 && a.bottom <= b.bottom + 1;
}

/** Whether session `token`'s card is wholly inside the list's visible part (clickable without scrolling). */
export function cardInView(page, token) {
  return page.evaluate(cardInListView, token);
}

/** Waits until session `token`'s card has come wholly into the list's visible part by itself. */
export function cardComesIntoView(page, token, timeout = 5000) {
  return page.waitForFunction(cardInListView, token, { timeout });
}

/** A phone's browser: 390×844, touch. */
export const PHONE = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true };

/** Hub config for tests whose agents wait without polling: their waits stay open however long the run takes. */
export const KEEP_WAITS = 'wait_grace_sec = 3600\n';

/** `n` agents titled `${prefix} 01`… waiting in that order (the first has waited longest). */
export async function waitingAgents(hub, prefix, n) {
  const agents = [];
  for (let i = 1; i <= n; i++) {
    const a = await newAgent(hub, `${prefix} ${String(i).padStart(2, '0')}`);
    await a.wait(`Question from ${prefix} ${i}?`);
    agents.push(a);
    await sleep(5);
  }
  return agents;
}

const axePath = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

/**
 * Runs axe-core (from npm, offline) on the page as it is; answers "rule: target" lines, one per
 * failing node. The browser needs `bypassCSP: true` (the page allows only its own scripts).
 * Beside axe's default rules, `label-content-name-mismatch` (experimental in axe, off by
 * default): a control's accessible name contains its visible text (WCAG 2.5.3), so a
 * person who says what they see reaches it by voice.
 */
export async function axeViolations(page) {
  if (!(await page.evaluate(() => 'axe' in window))) await page.addScriptTag({ path: axePath });
  const res = await page.evaluate(async () => {
    const r = await window.axe.run(document, {
      resultTypes: ['violations'],
      rules: { 'label-content-name-mismatch': { enabled: true } },
    });
    return r.violations.map((v) => ({ id: v.id, nodes: v.nodes.map((n) => n.target.join(' ')) }));
  });
  return res.flatMap((v) => v.nodes.map((n) => `${v.id}: ${n}`));
}

/** Whether the page scrolls sideways. */
export async function hasHorizontalScroll(page) {
  return page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth
    || document.body.scrollWidth > window.innerWidth);
}

export async function screenshot(page, name) {
  await mkdir(screenshotDir, { recursive: true });
  await page.screenshot({ path: join(screenshotDir, name) });
}

/** A 4×4 PNG (red), base64. */
export const PNG_4x4 = 'iVBORw0KGgoAAAANSUhEUgAAAAQAAAAECAIAAAAmkwkpAAAAEElEQVR4nGP4z8AARwzEcQCukw/x0F8jngAAAABJRU5ErkJggg==';

export { sleep };

function crc32(buf) {
  let c = ~0;
  for (const b of buf) {
    c ^= b;
    for (let k = 0; k < 8; k++) c = (c >>> 1) ^ (0xedb88320 & -(c & 1));
  }
  return ~c >>> 0;
}

/** A `w`×`h` RGB PNG, base64, coloured by `pixel(x, y) → [r, g, b]`. */
export function makePng(w, h, pixel) {
  const chunk = (type, data) => {
    const len = Buffer.alloc(4); len.writeUInt32BE(data.length);
    const td = Buffer.concat([Buffer.from(type), data]);
    const crc = Buffer.alloc(4); crc.writeUInt32BE(crc32(td));
    return Buffer.concat([len, td, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0); ihdr.writeUInt32BE(h, 4);
  ihdr[8] = 8; ihdr[9] = 2;
  const raw = Buffer.alloc((w * 3 + 1) * h);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) raw.set(pixel(x, y), y * (w * 3 + 1) + 1 + x * 3);
  }
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr), chunk('IDAT', deflateSync(raw)), chunk('IEND', Buffer.alloc(0)),
  ]).toString('base64');
}

/**
 * `browser(options)` for a test file: each browser a test opens is closed after that test
 * (`afterEach` from node:test), its page errors reported as diagnostics.
 */
export function browsersPerTest(afterEach) {
  const open = [];
  afterEach(async (t) => {
    while (open.length) {
      const b = open.pop();
      if (b.errors.length) t.diagnostic(`page errors: ${b.errors.join(' | ')}`);
      await b.close();
    }
  });
  return async function browser(options) {
    const b = await launchBrowser(options);
    open.push(b);
    return b;
  };
}

/** Replaces Notification and counts chime oscillators in `context`, before its pages load. */
export async function recordNotifications(context) {
  await context.addInitScript(() => {
    window.__notes = [];
    window.__tones = 0;
    window.Notification = class {
      constructor(title, opts) { window.__notes.push({ title, body: opts && opts.body }); }
      close() {}
      static get permission() { return 'granted'; }
      static requestPermission() { return Promise.resolve('granted'); }
    };
    const create = AudioContext.prototype.createOscillator;
    AudioContext.prototype.createOscillator = function (...a) { window.__tones++; return create.apply(this, a); };
  });
}
