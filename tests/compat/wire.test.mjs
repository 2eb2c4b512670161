// wire.test.mjs — the wire between bridge and hub across releases: the bridge of the
// previous release with this tree's hub, this tree's bridge with the previous hub, and the
// previous pair as the control. Each pair: a real `holdline-hub serve` on a temp home and
// a kernel-chosen port, the real `holdline-mcp` spoken to over stdio in JSON-RPC lines as an
// MCP client does, the person's reply through `POST /api/reply` with the hub's secret.
//
// scripts/test-compat.sh builds the previous release and sets the four binaries:
// HOLDLINE_{OLD,NEW}_{HUB,MCP}_BIN.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startHub as startAnyHub } from '../clients/harness.mjs';

const bin = (name) => {
  const path = process.env[name];
  assert.ok(path && existsSync(path), `${name} must name a built binary (scripts/test-compat.sh sets it): ${path}`);
  return path;
};
const OLD = { hub: bin('HOLDLINE_OLD_HUB_BIN'), mcp: bin('HOLDLINE_OLD_MCP_BIN') };
const NEW = { hub: bin('HOLDLINE_NEW_HUB_BIN'), mcp: bin('HOLDLINE_NEW_MCP_BIN') };
const PAIRS = [
  { name: 'old bridge → new hub', hub: NEW.hub, mcp: OLD.mcp },
  { name: 'new bridge → old hub', hub: OLD.hub, mcp: NEW.mcp },
  { name: 'old bridge → old hub (control)', hub: OLD.hub, mcp: OLD.mcp },
];
/** A one-pixel PNG, for a reply with an image. */
const PNG_1PX = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
/** How long the bridge holds one long poll: short, so renewals happen inside a test. */
const POLL_MS = 400;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitFor(what, fn, ms = 15_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms / 1000} s waiting for ${what}`);
    await sleep(50);
  }
}

const cleanups = new WeakMap();
/** Runs `fn` when `t` ends, last registered first: a bridge stops before its hub. */
function atEnd(t, fn) {
  if (!cleanups.has(t)) {
    const stack = [];
    cleanups.set(t, stack);
    t.after(async () => { while (stack.length) await stack.pop()(); });
  }
  cleanups.get(t).push(fn);
}

/** A temp folder removed when `t` ends. */
function tempDir(t, prefix) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  atEnd(t, () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** The environment of a child with no holdline setting inherited from the caller's. */
function cleanEnv(extra) {
  const env = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith('HOLDLINE_') || k === 'MCP_TOOL_TIMEOUT') delete env[k];
  return { ...env, ...extra };
}

/** `holdline-hub serve` (`hubBin`) on 127.0.0.1:0 with its home in a temp folder; stopped when `t` ends. */
async function startHub(t, hubBin) {
  const home = tempDir(t, 'holdline-compat-hub-');
  const hub = await startAnyHub(home, { RUST_LOG: 'warn' }, { bin: hubBin, baseEnv: cleanEnv({}) });
  atEnd(t, () => hub.stop());
  return {
    base: hub.base,
    secret: hub.secret,
    log: hub.log,
    reply: (token, text, images = []) => hub.api('POST', '/api/reply', { token, text, images }),
    session: hub.session,
    merge: (from, to) => hub.api('POST', `/api/sessions/${from}/merge`, { toToken: to }),
    archive: (token) => hub.api('POST', `/api/sessions/${token}/archive`),
    makeKey: async (name) => (await hub.api('POST', '/api/keys', { name })).key,
    revokeKey: (name) => hub.api('DELETE', `/api/keys/${name}`),
    async waitStatus(token, status) {
      return waitFor(`session ${token} to be ${status}`, async () => {
        const s = await this.session(token);
        return s.status === status && s;
      });
    },
  };
}

/**
 * `holdline-mcp` over stdio, as an MCP client runs it: one JSON-RPC message per line.
 * `credential` is `{ secret }` or `{ key }`; `pollMs` how long it holds each long poll.
 * Stopped (stdin closed) when `t` ends.
 */
async function startBridge(t, mcpBin, hub, credential, pollMs = POLL_MS) {
  const home = tempDir(t, 'holdline-compat-bridge-');
  const child = spawn(mcpBin, [], {
    cwd: home,
    stdio: ['pipe', 'pipe', 'pipe'],
    env: cleanEnv({
      HOME: home,
      HOLDLINE_HOME: home,
      HOLDLINE_HUB: hub.base,
      HOLDLINE_HOST_ID: 'compat-host',
      HOLDLINE_NO_AUTOSTART: '1',
      HOLDLINE_POLL_MS: String(pollMs),
      ...(credential.key ? { HOLDLINE_KEY: credential.key } : { HOLDLINE_SECRET: credential.secret }),
    }),
  });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  const exited = new Promise((r) => child.once('exit', r));
  atEnd(t, async () => {
    child.stdin.end();
    const kill = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(kill);
  });

  let nextId = 1;
  const pending = new Map();
  /** Every response, by request id, including any to a request the client cancelled. */
  const responses = new Map();
  const send = (msg) => child.stdin.write(`${JSON.stringify(msg)}\n`);
  // A write after the bridge died fails the call waiting on it (`exited`), not the process.
  child.stdin.on('error', () => {});
  createInterface({ input: child.stdout }).on('line', (line) => {
    let msg;
    try {
      msg = JSON.parse(line);
    } catch {
      throw new Error(`the bridge wrote a line that is not JSON-RPC on stdout: ${line.slice(0, 200)}`);
    }
    if (msg.method && msg.id !== undefined) {
      // A request of the server's (ping, roots/list): an empty result is a valid answer.
      send({ jsonrpc: '2.0', id: msg.id, result: msg.method === 'roots/list' ? { roots: [] } : {} });
    } else if (msg.id !== undefined) {
      responses.set(msg.id, msg);
      pending.get(msg.id)?.(msg);
      pending.delete(msg.id);
    }
  });
  const request = (method, params) => {
    const id = nextId++;
    const answered = new Promise((resolve, reject) => {
      pending.set(id, resolve);
      exited.then((code) => pending.has(id) && reject(new Error(`the bridge exited (${code}):\n${stderr}`)));
    });
    // A call the test cancelled is never awaited: its end at the bridge's exit is no failure.
    answered.catch(() => {});
    send({ jsonrpc: '2.0', id, method, params });
    return { id, answered };
  };
  /** A tools/call: `answered` is its `result`, or throws with a JSON-RPC error. */
  const callTool = (name, args) => {
    const r = request('tools/call', { name, arguments: args, _meta: { progressToken: `p-${nextId}` } });
    const result = r.answered.then((msg) => {
      if (msg.error) throw new Error(`${name}: JSON-RPC error ${JSON.stringify(msg.error)}`);
      return msg.result;
    });
    result.catch(() => {});
    return { id: r.id, result };
  };

  const init = await request('initialize', {
    protocolVersion: '2025-06-18',
    capabilities: {},
    clientInfo: { name: 'holdline-compat', version: '1.0' },
  }).answered;
  assert.ok(init.result?.serverInfo, `initialize: ${JSON.stringify(init)}`);
  send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  return {
    callTool,
    responses,
    stderr: () => stderr,
    cancel: (id) => send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'user pressed stop' } }),
    listTools: async () => (await request('tools/list', {}).answered).result.tools,
  };
}

/** The text blocks of a tool result, joined. */
const textOf = (result) => (result.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
const occurrences = (haystack, needle) => haystack.split(needle).length - 1;

/** `init_conversation`: the new session's token. */
async function initConversation(bridge, title) {
  const r = await bridge.callTool('init_conversation', { cursorTitle: title }).result;
  assert.notEqual(r.isError, true, `init_conversation: ${textOf(r)}`);
  const token = r.structuredContent?.token ?? textOf(r).match(/\bct_[A-Za-z0-9_-]+/)?.[0];
  assert.ok(token, `init_conversation gave no token: ${JSON.stringify(r)}`);
  return token;
}

/** The bridge told the agent its key was refused (not a generic 401 about the secret). */
function assertKeyRefused(result, what) {
  const text = textOf(result);
  assert.equal(result.isError, true, `${what}: not an error: ${text}`);
  assert.ok(
    result.structuredContent?.error?.code === 'KEY_REFUSED' || text.startsWith('The hub refused this agent key'),
    `${what}: the refusal was not recognised as a refused key: ${text} ${JSON.stringify(result.structuredContent)}`,
  );
  assert.doesNotMatch(text, /rejected the secret/, `${what}: read as a wrong secret`);
}

for (const pair of PAIRS) {
  test(`${pair.name}: init, wait, reply arrives once; a cancel leaves the session not waiting`, { timeout: 60_000 }, async (t) => {
    const hub = await startHub(t, pair.hub);
    const bridge = await startBridge(t, pair.mcp, hub, { secret: hub.secret });
    const tools = (await bridge.listTools()).map((tool) => tool.name);
    for (const name of ['init_conversation', 'wait_for_user_input']) assert.ok(tools.includes(name), `tools/list: ${tools}`);

    const token = await initConversation(bridge, 'Compat check');
    const first = bridge.callTool('wait_for_user_input', { token, message: 'Tests pass. Ship?' });
    await hub.waitStatus(token, 'waiting');
    const reply = 'Ship it, compat-reply-7f3a';
    await hub.reply(token, reply);
    const r = await first.result;
    assert.notEqual(r.isError, true, textOf(r));
    assert.equal(occurrences(textOf(r), reply), 1, `the reply once in the text: ${textOf(r)}`);
    assert.ok(textOf(r).startsWith(reply), textOf(r));
    if (r.structuredContent) assert.equal(r.structuredContent.reply?.text, reply, JSON.stringify(r.structuredContent));
    const s = await hub.waitStatus(token, 'holding');
    assert.equal(s.messages.filter((m) => m.content === reply).length, 1, 'the reply recorded once at the hub');

    // A new wait does not hand the same reply back: it waits; the client's cancel ends it.
    const second = bridge.callTool('wait_for_user_input', { token, message: 'Anything else?' });
    await hub.waitStatus(token, 'waiting');
    await sleep(3 * POLL_MS);
    assert.equal(bridge.responses.has(second.id), false, `the second wait answered: ${JSON.stringify(bridge.responses.get(second.id))}`);
    bridge.cancel(second.id);
    await hub.waitStatus(token, 'holding');

    // A reply sent while nothing waits is queued, and the next wait returns it once,
    // its image as an image block.
    const later = 'compat-later-2c91';
    const queued = await hub.reply(token, later, [{ mimeType: 'image/png', data: PNG_1PX }]);
    assert.equal(queued.queued, true, JSON.stringify(queued));
    const third = await bridge.callTool('wait_for_user_input', { token, message: 'Back' }).result;
    assert.notEqual(third.isError, true, textOf(third));
    assert.equal(occurrences(textOf(third), later), 1, textOf(third));
    const images = third.content.filter((c) => c.type === 'image');
    assert.deepEqual(images.map((c) => [c.mimeType, c.data]), [['image/png', PNG_1PX]], JSON.stringify(third.content));
    assert.ok(!JSON.stringify(bridge.responses.get(second.id) ?? {}).includes(later), 'the cancelled call carried the later reply');
  });

  test(`${pair.name}: a wrong or revoked agent key reaches the agent as a refused key`, { timeout: 60_000 }, async (t) => {
    const hub = await startHub(t, pair.hub);

    const wrong = await startBridge(t, pair.mcp, hub, { key: 'hlk_compat-not-a-key' });
    assertKeyRefused(await wrong.callTool('init_conversation', { cursorTitle: 'Wrong key' }).result, 'init with a wrong key');

    const key = await hub.makeKey('laptop');
    assert.match(key, /^hlk_/);
    // Polls held 60 s: a second after the wait opened, the bridge's first poll is held at
    // the hub, so the revocation reaches it as the poll's answer (`gone`, `key_revoked`), not
    // as the next poll's 401 (the call after it checks that one). On a machine too slow for
    // that, the poll meets the 401 instead: the check still holds, it only proves less.
    const bridge = await startBridge(t, pair.mcp, hub, { key }, 60_000);
    const token = await initConversation(bridge, 'Remote chat');
    const waiting = bridge.callTool('wait_for_user_input', { token, message: 'Step one done. Next?' });
    await hub.waitStatus(token, 'waiting');
    await sleep(1000);
    await hub.revokeKey('laptop');
    assertKeyRefused(await waiting.result, 'a wait whose key was revoked');
    await hub.waitStatus(token, 'holding');
    // Any later call: the hub's 401, read the same way.
    assertKeyRefused(await bridge.callTool('wait_for_user_input', { token, message: 'Anyone there?' }).result, 'a call after the revocation');
  });

  test(`${pair.name}: a wait the person closes ends as merged (with the new token) or archived`, { timeout: 60_000 }, async (t) => {
    const hub = await startHub(t, pair.hub);
    const bridge = await startBridge(t, pair.mcp, hub, { secret: hub.secret });
    const from = await initConversation(bridge, 'Compat merge from');
    const into = await initConversation(bridge, 'Compat merge into');
    assert.notEqual(from, into);

    const waiting = bridge.callTool('wait_for_user_input', { token: from, message: 'Which one?' });
    await hub.waitStatus(from, 'waiting');
    await hub.merge(from, into);
    const merged = await waiting.result;
    assert.notEqual(merged.isError, true, textOf(merged));
    assert.match(textOf(merged), new RegExp(`merged into ${into}`), textOf(merged));
    if (merged.structuredContent) assert.equal(merged.structuredContent.mergedInto, into, JSON.stringify(merged.structuredContent));

    const again = bridge.callTool('wait_for_user_input', { token: into, message: 'Still there?' });
    await hub.waitStatus(into, 'waiting');
    await hub.archive(into);
    const archived = await again.result;
    assert.equal(archived.isError, true, textOf(archived));
    assert.match(textOf(archived), /archived/, textOf(archived));
  });
}

for (const pair of PAIRS) {
  test(`${pair.name}: a wait offering options still waits and takes a typed reply`, { timeout: 60_000 }, async (t) => {
    // An older side knows no options: the older hub ignores them, the older bridge's tool
    // takes no such argument. Either way the question waits and a typed answer arrives.
    const hub = await startHub(t, pair.hub);
    const bridge = await startBridge(t, pair.mcp, hub, { secret: hub.secret });
    const token = await initConversation(bridge, 'Compat options');
    const waiting = bridge.callTool('wait_for_user_input', {
      token, message: 'Postgres or SQLite?', options: [{ label: 'Postgres' }, { label: 'SQLite' }],
    });
    await hub.waitStatus(token, 'waiting');
    await hub.reply(token, 'SQLite, compat-typed-51d0');
    const r = await waiting.result;
    assert.notEqual(r.isError, true, textOf(r));
    assert.ok(textOf(r).startsWith('SQLite, compat-typed-51d0'), textOf(r));
  });
}

// The hook's questions carry `origin` ("stopped", "permission"), a field the previous hub does
// not know: it must take the question as an ordinary one (the field ignored), and the
// person's reply must still continue the turn. The previous bridge has no `hook` command.
test('new hook → old hub: a stop question with an origin the hub does not know is asked and answered', { timeout: 60_000 }, async (t) => {
  const hub = await startHub(t, OLD.hub);
  const home = tempDir(t, 'holdline-compat-hook-');
  const hook = spawn(NEW.mcp, ['hook', '--client', 'claude-code'], {
    env: cleanEnv({
      HOLDLINE_HUB: hub.base, HOLDLINE_SECRET: hub.secret, HOLDLINE_HOME: home, HOME: home,
      HOLDLINE_NO_AUTOSTART: '1', HOLDLINE_POLL_MS: String(POLL_MS),
    }),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  atEnd(t, () => hook.kill('SIGKILL'));
  let out = '';
  let err = '';
  hook.stdout.on('data', (d) => { out += d; });
  hook.stderr.on('data', (d) => { err += d; });
  const exited = new Promise((resolve) => hook.on('exit', resolve));
  hook.stdin.end(JSON.stringify({
    session_id: 'compat-stop', transcript_path: null, cwd: '/home/dev/app', permission_mode: 'default',
    hook_event_name: 'Stop', stop_hook_active: false, last_assistant_message: 'Refactored; over to you.',
  }));
  const token = await waitFor('the hook\'s question to wait', async () => {
    const res = await fetch(`${hub.base}/api/sessions?limit=200`, { headers: { authorization: `Bearer ${hub.secret}` } });
    const list = await res.json();
    return list.sessions.find((s) => s.threadId === 'claude-code:compat-stop' && s.status === 'waiting')?.token;
  });
  const s = await hub.session(token);
  assert.equal(s.messages.at(-1).content, 'Refactored; over to you.');
  await hub.reply(token, 'compat-hook-go-on-5d1e');
  assert.equal(await exited, 0, err);
  const answer = JSON.parse(out.trim());
  assert.equal(answer.decision, 'block', out);
  assert.equal(occurrences(answer.reason, 'compat-hook-go-on-5d1e'), 1, answer.reason);
});
