// harness.mjs — what every real-client check stands on: the pinned client installed once
// into a cache outside the repository, a real `holdline-hub serve` per client run (own
// fake HOME, own port), the fake model, the client spawned headless in its own process
// group, and Ctrl-C as a terminal sends it (SIGINT to the whole group).

import { spawn, execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync, createWriteStream } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { deflateSync } from 'node:zlib';

const here = dirname(fileURLToPath(import.meta.url));
export const repoRoot = resolve(here, '..', '..');
export const HUB_BIN = process.env.HOLDLINE_HUB_BIN || join(repoRoot, 'target', 'debug', 'holdline-hub');
export const MCP_BIN = process.env.HOLDLINE_MCP_BIN || join(repoRoot, 'target', 'debug', 'holdline-mcp');
export const CACHE = process.env.HOLDLINE_CLIENTS_CACHE || join(homedir(), '.cache', 'holdline-test-clients');
/** Where each run keeps its fake HOME, logs and model requests (ignored by git). */
export const RUNS = process.env.HOLDLINE_CLIENTS_RUNS || join(repoRoot, 'target', 'test-clients');

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * `promise`'s value, or null once `ms` have passed. The timer is cleared when the promise
 * settles: a pending one would keep the test file's process alive until it fires.
 */
export function within(promise, ms) {
  let timer;
  const late = new Promise((r) => { timer = setTimeout(() => r(null), ms); });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}
const run = promisify(execFile);

/** Polls `fn` until it returns a truthy value; throws `what` with the last value after `ms`. */
export async function waitFor(what, fn, ms, every = 250) {
  const deadline = Date.now() + ms;
  let last;
  for (;;) {
    last = await fn();
    if (last) return last;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms / 1000} s waiting for ${what}`);
    await sleep(every);
  }
}

/**
 * Installs `pkg@version` from npm into CACHE/<pkg with / as +>@<version> once (into a
 * temporary folder first, so a half-finished install is never reused) and returns the folder.
 */
export async function installPackage(pkg, version) {
  const dir = join(CACHE, `${pkg.replace('/', '+')}@${version}`);
  if (existsSync(join(dir, 'node_modules', ...pkg.split('/'), 'package.json'))) return dir;
  const tmp = `${dir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  writeFileSync(join(tmp, 'package.json'), '{"private":true}\n');
  await run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', `${pkg}@${version}`], { cwd: tmp, maxBuffer: 1 << 24 });
  if (!existsSync(join(dir, 'node_modules', ...pkg.split('/'), 'package.json'))) {
    rmSync(dir, { recursive: true, force: true });
    renameSync(tmp, dir);
  } else rmSync(tmp, { recursive: true, force: true });
  return dir;
}

/**
 * A driver's client installed once: its own `install()` where it has one (a client not on
 * npm, e.g. from PyPI), else `pkg@version` from npm. Returns the folder it is in.
 */
export function installDriver(driver) {
  return driver.install ? driver.install() : installPackage(driver.pkg, driver.version);
}

/**
 * `holdline-hub serve` on 127.0.0.1:0 with `home`; `env` is added to `baseEnv` (the
 * process's own by default), `bin` is the hub binary (this tree's by default).
 */
export async function startHub(home, env = {}, { bin = HUB_BIN, baseEnv = process.env } = {}) {
  mkdirSync(home, { recursive: true });
  rmSync(join(home, 'hub.addr'), { force: true });
  const out = createWriteStream(join(home, 'hub.log')).on('error', () => { /* a full disk loses the copy, not the run */ });
  const child = spawn(bin, ['serve', '--listen', '127.0.0.1:0', '--home', home], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...baseEnv, RUST_LOG: process.env.RUST_LOG || 'info', HOLDLINE_HOME: home, ...env },
  });
  let log = '';
  // Output can still arrive after 'exit' (before 'close'): the log file may be ended by then.
  const onData = (d) => { log += d; if (!out.writableEnded) out.write(d); };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  const exited = new Promise((r) => child.once('exit', (code, signal) => r({ code, signal })));
  const addr = await waitFor('the hub to listen', () => {
    if (child.exitCode !== null) throw new Error(`hub exited early (${child.exitCode}):\n${log}`);
    // The whole line: output comes in chunks, and half an address is another address.
    const m = log.match(/listening on http:\/\/(\S+)\r?\n/);
    if (m) return m[1];
    try { return readFileSync(join(home, 'hub.addr'), 'utf8').trim() || null; } catch { return null; }
  }, 20_000, 50);
  const secret = await waitFor('the hub secret', () => {
    try { return readFileSync(join(home, 'secret'), 'utf8').trim() || null; } catch { return null; }
  }, 10_000, 50);
  const base = `http://${addr.replace(/^http:\/\//, '').replace(/\/$/, '')}`;
  async function api(method, path, body) {
    const r = await fetch(base + path, {
      method,
      headers: { authorization: `Bearer ${secret}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await r.text();
    let json = null;
    try { json = JSON.parse(text); } catch { /* not JSON */ }
    if (!r.ok) throw new Error(`${method} ${path} → ${r.status} ${text}`);
    return json;
  }
  return {
    base,
    home,
    secret,
    log: () => log,
    api,
    sessions: async () => (await api('GET', '/api/sessions?status=all&limit=200')).sessions,
    session: (token) => api('GET', `/api/sessions/${token}?limit=200`),
    reply: (token, text, images) => api('POST', '/api/reply', { token, text, ...(images ? { images } : {}) }),
    /** The person's pick among the options of the agent's newest message (0-based, as the panel sends it). */
    pick: (token, choices, text = '') => api('POST', '/api/reply', { token, text, choices }),
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const t = setTimeout(() => child.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(t);
      }
      out.end();
    },
  };
}

/**
 * Spawns a client headless in its own process group (as a terminal's foreground job),
 * stdout/stderr to <dir>/client.log. `ctrlC()` signals the whole group as a terminal's
 * Ctrl-C does; `stop()` makes sure nothing of it is left.
 */
export function spawnClient({ cmd, args, env, cwd, dir, log: logName = 'client.log' }) {
  const out = createWriteStream(join(dir, logName)).on('error', () => { /* a full disk loses the copy, not the run */ });
  const child = spawn(cmd, args, { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  // Output can still arrive after 'exit' (before 'close'): the log file may be ended by then.
  const onData = (d) => { log += d; if (!out.writableEnded) out.write(d); };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  const exited = new Promise((r) => child.once('exit', (code, signal) => { out.end(); r({ code, signal }); }));
  const group = (sig) => { try { process.kill(-child.pid, sig); } catch { /* gone */ } };
  return {
    child,
    exited,
    log: () => log,
    running: () => child.exitCode === null && child.signalCode === null,
    ctrlC: () => group('SIGINT'),
    async stop() {
      group('SIGTERM');
      const t = setTimeout(() => group('SIGKILL'), 5000);
      await exited;
      clearTimeout(t);
      group('SIGKILL');
    },
  };
}

/**
 * Runs `holdline-mcp install --client X` with HOME = `home`; `bridgeEnv` goes into the
 * entry's environment (`--env K=V`), `args` are further install flags (e.g. `--trust`).
 */
export async function holdlineInstall(client, { home, hubUrl, project, bridgeEnv = {}, args = [], env = {} }) {
  const envArgs = Object.entries(bridgeEnv).flatMap(([k, v]) => ['--env', `${k}=${v}`]);
  const { stdout, stderr } = await run(MCP_BIN, ['install', '--client', client, '--hub', hubUrl, '--project', project, ...envArgs, ...args], {
    env: { ...process.env, HOME: home, XDG_CONFIG_HOME: join(home, '.config'), ...env },
  });
  return stdout + stderr;
}

/**
 * Runs `holdline-mcp install --client X --url URL --key KEY` with HOME = `home`: holdline's
 * remote entry (the hub's /mcp and an `Authorization: Bearer KEY` header) in the client's
 * config. `env` adds to the installer's environment (e.g. CODEX_HOME), `args` are further
 * install flags (e.g. `--trust`).
 */
export async function holdlineInstallRemote(client, { home, project, url, key, env = {}, args = [] }) {
  const { stdout, stderr } = await run(MCP_BIN, ['install', '--client', client, '--url', url, '--key', key, '--project', project, ...args], {
    env: { ...process.env, HOME: home, XDG_CONFIG_HOME: join(home, '.config'), ...env },
  });
  return stdout + stderr;
}

/** A small solid-colour PNG as base64, for image replies (a valid file: clients may decode it). */
export function pngBase64(width = 8, height = 8, rgb = [220, 30, 30]) {
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (buf) => {
    let c = 0xffffffff;
    for (const b of buf) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type, data) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const td = Buffer.concat([Buffer.from(type, 'ascii'), data]);
    const c = Buffer.alloc(4);
    c.writeUInt32BE(crc(td));
    return Buffer.concat([len, td, c]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // truecolour
  const row = Buffer.concat([Buffer.from([0]), Buffer.from(Array.from({ length: width }, () => rgb).flat())]);
  const raw = Buffer.concat(Array.from({ length: height }, () => row));
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(raw)),
    chunk('IEND', Buffer.alloc(0)),
  ]).toString('base64');
}

/** Reads a JSON file, lets `edit` change it, writes it back. */
export function patchJson(path, edit) {
  const value = existsSync(path) ? JSON.parse(readFileSync(path, 'utf8')) : {};
  const out = edit(value) ?? value;
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, JSON.stringify(out, null, 2) + '\n');
  return out;
}

/**
 * The environment a client run starts from: nothing of the developer's own setup leaks in
 * (own HOME, no proxy, no real API keys), only what finding programs needs.
 */
export function baseEnv(home, extra = {}) {
  const keep = ['PATH', 'LANG', 'TERM', 'TMPDIR', 'USER', 'LOGNAME', 'SHELL'];
  const env = {};
  for (const k of keep) if (process.env[k]) env[k] = process.env[k];
  return {
    ...env,
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    XDG_DATA_HOME: join(home, '.local', 'share'),
    XDG_CACHE_HOME: join(home, '.cache'),
    XDG_STATE_HOME: join(home, '.local', 'state'),
    NO_COLOR: '1',
    CI: '1',
    ...extra,
  };
}

/** Pids of live `holdline-mcp` processes whose environment has HOLDLINE_HOME=`home` (Linux /proc). */
export function bridgesOf(home) {
  const out = [];
  let pids = [];
  try { pids = readdirSync('/proc').filter((p) => /^\d+$/.test(p)); } catch { return out; }
  for (const pid of pids) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (!cmd.split('\0')[0].endsWith('holdline-mcp')) continue;
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      if (/\) Z /.test(stat)) continue; // a zombie has exited
      if (readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(`HOLDLINE_HOME=${home}`)) out.push(Number(pid));
    } catch { /* gone, or not ours to read */ }
  }
  return out;
}

/** A new agent key for the hub `hub`: `holdline-hub key create --name NAME` → `{ key, name }`. */
export async function agentKey(hub, name) {
  const { stdout } = await run(HUB_BIN, ['--home', hub.home, 'key', 'create', '--name', name], {
    env: { ...process.env, HOLDLINE_HOME: hub.home },
  });
  const key = stdout.split('\n')[0].trim();
  if (!/^hlk_[A-Za-z0-9_-]{43}$/.test(key)) throw new Error(`key create printed no key on its first line: ${stdout}`);
  return { key, name };
}

/** `holdline-hub key revoke NAME` against the running hub; returns what it printed. */
export async function revokeKey(hub, name) {
  const { stdout, stderr } = await run(HUB_BIN, ['--home', hub.home, 'key', 'revoke', name], {
    env: { ...process.env, HOLDLINE_HOME: hub.home },
  });
  return stdout + stderr;
}
