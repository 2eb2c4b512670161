// scenarios.mjs — what the real-client checks drive, shared by the stdio suite
// (run.test.mjs) and the remote one (remote.test.mjs): the drivers picked by
// HOLDLINE_CLIENTS, one client run (hub, fake model, config, the client) and the two
// scenarios, "reply" and "ctrl-c", each run once per client and transport and read by
// that file's checks.
//
// Scenario "reply": the agent starts a session and waits; each wait ends "no reply yet"
// after WAIT_SEC (the bridge's HOLDLINE_MAX_WAIT_SEC; over /mcp the call's timeoutSec), the
// agent re-calls; after ROUNDS wait calls the person replies with text and an image; the
// agent reports and asks a question with options (OFFERS); the person picks one, as the
// panel's button does (`POST /api/reply {choices}`); the agent asks again with several to
// pick (multiSelect); the person picks two and adds "FINISH", which ends its turn.
// Scenario "ctrl-c": the agent waits; Ctrl-C goes to the client's process group; the hub
// must show the session not waiting within its grace period and queue a later reply.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { startFakeModel } from './fake-model/server.mjs';
import { MCP_BIN, RUNS, agentKey, bridgesOf, revokeKey, installDriver, pngBase64, sleep, spawnClient, startHub, waitFor, within } from './harness.mjs';

const here = dirname(fileURLToPath(import.meta.url));
/** Wait calls before the person answers: Gemini's and Qwen's detectors stop the 5th identical one. */
export const ROUNDS = Number(process.env.HOLDLINE_CLIENTS_ROUNDS || 6);
/** The bridge ends each wait after this long (HOLDLINE_MAX_WAIT_SEC). */
export const WAIT_SEC = Number(process.env.HOLDLINE_CLIENTS_WAIT_SEC || 4);
/** The client's own per-call limit where it has one: above the bridge's, as install sets it. */
export const CLIENT_TIMEOUT_SEC = 30;
/**
 * Over /mcp the client's own per-call limit is set this short where its remote entry has
 * one (Claude Code, Codex, Gemini, Qwen, Cline), so a wait of ROUNDS calls spans several of
 * them; the hub must end each call first.
 */
export const REMOTE_CLIENT_TIMEOUT_SEC = 10;
/** The hub's MCP path; HOLDLINE_CLIENTS_MCP_PATH points the clients elsewhere (to see the checks fail). */
export const MCP_PATH = process.env.HOLDLINE_CLIENTS_MCP_PATH || '/mcp';
/**
 * Headers a remote entry adds that claim another address: the binding's host must be the
 * address the hub saw (127.0.0.1), never one the caller reports.
 */
export const CLAIMED_ADDRESS = '10.9.9.9';
/** The hub's grace for a wait nobody polls (HOLDLINE_WAIT_GRACE_SEC). */
export const GRACE_SEC = 3;
/** How long after the grace the hub may take to notice (one sweep, a loaded machine). */
export const GRACE_SLACK_MS = 3000;
/** How long after its agent is gone a wait may still show: the grace and the slack. */
const LEAVE_WITHIN_MS = GRACE_SEC * 1000 + GRACE_SLACK_MS;
export const GUIDANCE = /call wait_for_user_input/;
/**
 * The questions with options the agent asks in the reply scenario, by step (the step after
 * the first reply, then the one after the first pick), and what the person picks (indexes,
 * as the panel sends them) and adds.
 */
export const OFFERS = {
  2: {
    question: 'Which database should I use?',
    options: [{ label: 'Postgres', description: 'the server the team already runs' }, { label: 'SQLite' }],
    pick: [1],
    text: '',
  },
  3: {
    question: 'What should I do next?',
    options: [{ label: 'Tests' }, { label: 'Docs' }, { label: 'Benchmarks', description: 'before and after' }],
    multiSelect: true,
    pick: [0, 2],
    text: 'FINISH: that is all, thank you.',
  },
};
/**
 * Over stdio, the agent's question of step 2 shows a screenshot from its workspace (written
 * there before the client starts): the person must get its bytes (`attachments`).
 */
export const ATTACH = { 2: ['screenshot.png'] };

/**
 * Failures known and not fixed yet, per client and check ('6', 'R7'…; '*': every check):
 * the check still runs and reports, as a `todo` that does not fail the run. Take an entry
 * out with the fix.
 */
const KNOWN = {};
const known = (driver, check) => KNOWN[driver.name]?.[check] ?? KNOWN[driver.name]?.['*'];
/** The test options of `driver`'s `check`: a `todo` when its failure is known. */
export const knownOpts = (driver, check) => (known(driver, check) ? { todo: `known: ${known(driver, check)}` } : {});
const PROMPT = 'Work on this repository with the person through holdline: call init_conversation, then report with wait_for_user_input and follow the replies.';

const selected = (process.env.HOLDLINE_CLIENTS || '').split(',').map((s) => s.trim()).filter(Boolean);
const driverFiles = readdirSync(join(here, 'clients')).filter((f) => f.endsWith('.mjs')).sort();
export const drivers = [];
for (const f of driverFiles) {
  const d = await import(pathToFileURL(join(here, 'clients', f)).href);
  if (!selected.length || selected.includes(d.name)) drivers.push(d);
}
const unknown = selected.filter((n) => !drivers.some((d) => d.name === n));
if (unknown.length) throw new Error(`HOLDLINE_CLIENTS names no driver: ${unknown.join(', ')} (drivers: ${driverFiles.join(', ')})`);
const runId = new Date().toISOString().replace(/[:.]/g, '-');
/** Run folders kept in RUNS (each ~10 MB): this one and the newest before it. */
const KEEP_RUNS = 5;
try {
  for (const old of readdirSync(RUNS).sort().reverse().slice(KEEP_RUNS - 1)) rmSync(join(RUNS, old), { recursive: true, force: true });
} catch { /* no runs yet */ }

/**
 * One client run: hub, fake model, config, the client; `fn(run, out)` drives it and fills
 * `out`; everything is stopped after. A failure is returned as `out.error` (with the run
 * folder and the client's last words), so checks that need only part of the run still judge.
 */
export async function withClient(driver, scenario, fn, transport = 'stdio', brainKnobs = {}) {
  const first = await withClientOnce(driver, scenario, fn, transport, brainKnobs, '');
  if (!first.error || !startedWithoutHoldline(first.brain)) return first;
  // The client asked its model before it had connected to holdline (seen with Copilot CLI
  // over /mcp on a loaded host): nothing under test ran. Once more, in a folder of its own.
  console.log(`# ${driver.name} ${transport} ${scenario}: its client had no holdline tools at its first model call (${first.dir}); run again`);
  return withClientOnce(driver, scenario, fn, transport, brainKnobs, '-again');
}

/** Whether the model's first answer was that holdline's tools were missing. */
function startedWithoutHoldline(brain) {
  const first = brain.turns.find((t) => !t.side);
  return first?.action?.kind === 'text' && first.action.text.startsWith('I cannot find the tool init_conversation');
}

async function withClientOnce(driver, scenario, fn, transport, knobs, attempt) {
  // `installArgs`: further `holdline-mcp install` flags (e.g. --no-hooks); `clientArgs`:
  // further flags of the client's own command line (a driver that reads them); the rest is
  // the brain's.
  const { installArgs = [], clientArgs = [], ...brainKnobs } = knobs;
  // 'remote-header': over /mcp, each wait bounded by the entry's Holdline-Max-Wait-Sec.
  const remote = transport.startsWith('remote');
  const byHeader = transport === 'remote-header';
  const dir = join(RUNS, runId, `${driver.name}-${remote ? `${transport}-` : ''}${scenario}${attempt}`);
  rmSync(dir, { recursive: true, force: true });
  const home = join(dir, 'home');
  const project = join(dir, 'project');
  mkdirSync(project, { recursive: true });
  // The project is a repository of its own: the run's folder lies inside holdline's, and a
  // client that reads the project's git state (Claude Code puts the newest commits into its
  // prompt) would hand holdline's own history to the fake model.
  execFileSync('git', ['init', '-q', project]);
  for (const path of Object.values(brainKnobs.attach ?? {}).flat()) writeFileSync(join(project, path), Buffer.from(pngBase64(), 'base64'));
  const started = Date.now();
  // HOLDLINE_HOST_ID: a host the hub's own environment claims; /mcp bindings must not use it.
  const hub = await startHub(join(home, '.holdline'), { HOLDLINE_WAIT_GRACE_SEC: String(GRACE_SEC), ...(remote ? { HOLDLINE_HOST_ID: 'hub-environment-host' } : {}) });
  // Over /mcp there is no bridge environment: the agent asks for the short wait itself,
  // or the entry's Holdline-Max-Wait-Sec header sets it.
  const waitArgs = remote && !byHeader ? { timeoutSec: WAIT_SEC } : undefined;
  const model = await startFakeModel({ dir, brain: { title: `${driver.name} ${scenario}`, hooks: driver.brainHooks, waitArgs, ...brainKnobs } });
  const out = { dir, brain: model.brain, requests: model.requests };
  let client;
  let earlier = [];
  try {
    const installDir = await installDriver(driver);
    const key = remote ? out.key = await agentKey(hub, `${driver.name}-${scenario}`) : null;
    const spec = await driver.prepare({
      home, project, dir, installDir,
      hubUrl: hub.base, modelUrl: model.url, mcpBin: MCP_BIN, prompt: PROMPT,
      waitSec: WAIT_SEC, clientTimeoutSec: remote ? REMOTE_CLIENT_TIMEOUT_SEC : CLIENT_TIMEOUT_SEC, installArgs, clientArgs,
      remote: remote ? {
        url: hub.base + MCP_PATH,
        key: process.env.HOLDLINE_CLIENTS_KEY || key.key,
        headers: {
          'X-Forwarded-For': CLAIMED_ADDRESS, 'X-Real-IP': CLAIMED_ADDRESS, Forwarded: `for=${CLAIMED_ADDRESS}`,
          ...(byHeader ? { 'Holdline-Max-Wait-Sec': String(WAIT_SEC) } : {}),
        },
      } : undefined,
      bridgeEnv: {
        HOLDLINE_HUB: hub.base,
        HOLDLINE_HOME: hub.home,
        HOLDLINE_NO_AUTOSTART: '1',
        HOLDLINE_MAX_WAIT_SEC: String(WAIT_SEC),
        HOLDLINE_LOG: 'holdline_mcp=debug',
      },
    });
    client = spawnClient({ ...spec, dir });
    // The same client started again in the same HOME and folder (a new agent turn).
    const restart = async () => {
      earlier.push(client);
      client = spawnClient({ ...spec, dir, log: `client-${earlier.length + 1}.log` });
      return client;
    };
    await fn({ dir, hub, model, client, brain: model.brain, restart, key }, out);
  } catch (e) {
    e.message += `\n  (run folder: ${dir})\n  client log tail:\n${logTail(client?.log() ?? '')}`;
    out.error = e;
  } finally {
    for (const c of earlier) await c.stop();
    if (client) {
      out.log = client.log();
      await client.stop();
    }
    await model.close();
    await hub.stop();
    out.seconds = Math.round((Date.now() - started) / 1000);
  }
  return out;
}

/** The end of a client's log, each repeated line once (Gemini repeats schema warnings). */
function logTail(log) {
  const seen = new Set();
  const lines = log.split('\n').filter((l) => !seen.has(l) && seen.add(l));
  return lines.join('\n').slice(-3000);
}

/** The scenario's result, or its failure when a check needs what did not happen. */
export function needs(r, what) {
  if (r.error) throw new Error(`${what}: the run failed: ${r.error.message}`);
  return r;
}

/** The token the agent is using, read from the calls it made. */
function agentToken(brain) {
  for (const t of [...brain.turns].reverse()) {
    // Qwen's deferred tools: `tool_call {name, arguments: {token…}}`.
    // Vibe's code mode: `run_typescript {code}` with the arguments inside the program.
    const token = t.action?.args?.token ?? t.action?.args?.arguments?.token ??
      (typeof t.action?.args?.code === 'string' ? t.action.args.code.match(/ct_[0-9a-f]{32}/)?.[0] : undefined);
    if (token) return token;
  }
  return null;
}

async function waitingNow(hub, token) {
  const s = await hub.session(token);
  return s.status === 'waiting' ? s : null;
}

/** False while the client runs (so a wait goes on); throws once it has exited. */
function stillRunning(client, what) {
  if (!client.running()) throw new Error(`the client exited (${client.child.exitCode ?? client.child.signalCode}) while waiting for ${what}`);
  return false;
}

async function replyScenario(driver, transport) {
  return withClient(driver, 'reply', async ({ hub, client, brain }, out) => {
    out.transport = transport;
    const limit = (ROUNDS + 2) * (WAIT_SEC + 10) * 1000;
    await waitFor(`${ROUNDS} wait calls`, () => brain.waitCalls().length >= ROUNDS || stillRunning(client, `${ROUNDS} wait calls`), limit);
    const token = out.token = agentToken(brain);
    out.waiting = await waitFor('the session to be waiting', async () => { stillRunning(client, 'the wait'); return waitingNow(hub, token); }, 30_000);
    out.callsBeforeReply = brain.waitCalls().map((t) => t.action.args);
    const marker = out.marker = `PINEAPPLE-${Math.random().toString(36).slice(2, 8)}`;
    out.first = await hub.reply(token, `${marker}: looks good, please go on.`, [{ mimeType: 'image/png', data: pngBase64() }]);
    await waitFor('the reply to reach the model', () => brain.results.some((r) => r.text?.includes(marker)) || stillRunning(client, 'the reply to reach the model'), 60_000);
    // The agent reports and asks with options; the person picks, as the panel's buttons do.
    // The second pick adds "FINISH", which ends the agent's turn. A pick that does not reach
    // the model fails the choices check alone: the person then ends the turn in words.
    out.picks = [];
    try {
      for (const step of [2, 3]) out.picks.push(await pickOffered(hub, client, brain, token, step));
    } catch (e) {
      out.pickError = e;
      out.finish = await hub.reply(token, 'FINISH: that is all, thank you.');
    }
    out.exit = await within(client.exited, 60_000);
    out.history = await hub.session(token);
    out.attached = await attachedFiles(hub, out.history);
  }, transport, { offers: OFFERS, ...(transport === 'stdio' ? { attach: ATTACH } : {}) });
}

/** The files the agent's messages show, each with the bytes the person's route serves. */
async function attachedFiles(hub, history) {
  const files = [];
  for (const m of history.messages.filter((x) => x.role === 'assistant')) {
    for (const a of m.attachments ?? []) {
      const r = await fetch(hub.base + a.url, { headers: { authorization: `Bearer ${hub.secret}` } });
      files.push({ ...a, status: r.status, bytes: Buffer.from(await r.arrayBuffer()), message: m.content });
    }
  }
  return files;
}

/**
 * Waits for the agent's question of `step` (OFFERS) with the session waiting, picks as the
 * panel does and waits until a tool result the model was given names the pick. Returns
 * `{ step, offered, queued, seen }`: the agent's message as the hub stored it, the hub's
 * answer to the pick, and the tool results that showed the pick to the model.
 */
async function pickOffered(hub, client, brain, token, step) {
  const offer = OFFERS[step];
  const offered = await waitFor(`the agent's question of step ${step} with options`, async () => {
    stillRunning(client, `the question of step ${step}`);
    const s = await waitingNow(hub, token);
    const asked = s?.messages.findLast((m) => m.role === 'assistant');
    return asked?.content.includes(offer.question) ? asked : null;
  }, 60_000);
  const before = brain.results.length;
  const queued = await hub.pick(token, offer.pick, offer.text);
  const labels = offer.pick.map((i) => offer.options[i].label);
  await waitFor(`the pick ${labels.join(', ')} to reach the model`, () => brain.results.slice(before).some((r) => pickForms(r.text, offer).length) || stillRunning(client, 'the pick to reach the model'), 60_000);
  return { step, offered, queued, seen: brain.results.slice(before).filter((r) => pickForms(r.text, offer).length) };
}

/**
 * How a tool result's text, as the model got it, names the person's pick of `offer`:
 * 'text' — the result's sentence `The person chose: "SQLite".` (JSON escapes undone: Cline
 * and Continue hand results over JSON-encoded); 'json' — `structuredContent.reply.choices`
 * `[{"index":1,"label":"SQLite"}]` (clients that pass the structured content).
 */
export function pickForms(text, offer) {
  const t = String(text ?? '').replace(/\\+"/g, '"');
  const chosen = offer.pick.map((i) => ({ index: i, label: offer.options[i].label }));
  const forms = [];
  if (t.includes(`The person chose: ${chosen.map((c) => `"${c.label}"`).join(', ')}.`)) forms.push('text');
  // The JSON with any spacing a client's re-serialisation adds.
  const json = JSON.stringify({ choices: chosen }).slice(1, -1)
    .replace(/[\[\]{}]/g, (c) => `\\${c}`)
    .replace(/(\\?[\[\]{}:,])/g, '\\s*$1\\s*');
  if (new RegExp(json).test(t)) forms.push('json');
  return forms;
}

/**
 * The choices check of the reply scenario (run.test.mjs 6, remote.test.mjs R7): each
 * question reached the hub with the options as the agent sent them (the client accepted
 * the tool's schema and passed `options` / `multiSelect` intact), the pick is stored once
 * on the person's message, and the model was given it in exactly one tool result. Returns
 * where the model was shown the options' schema and how it saw each pick ('text', 'json'
 * or both), for the test's diagnostic.
 */
export function judgePicks(r) {
  if (r.pickError) throw new Error(`${r.pickError.message} (run folder: ${r.dir})`);
  const shown = schemaShown(r.requests);
  assert.ok(shown, 'some request showed the model the wait tool\'s schema with `options` (items with `label`) and `multiSelect`');
  assert.equal(r.picks?.length, 2, `both questions were asked and answered (${r.picks?.length ?? 0})`);
  const said = [];
  for (const p of r.picks) {
    const offer = OFFERS[p.step];
    const chosen = offer.pick.map((i) => ({ index: i, label: offer.options[i].label }));
    assert.deepEqual(p.offered.options, offer.options, `the options of step ${p.step} reached the hub as the agent sent them`);
    assert.equal(p.offered.multiSelect ?? false, offer.multiSelect ?? false, `multiSelect of step ${p.step} reached the hub`);
    const stored = r.history.messages.filter((m) => m.role === 'user' && JSON.stringify(m.choices) === JSON.stringify(chosen));
    assert.equal(stored.length, 1, `the pick of step ${p.step} is stored once with its choices`);
    assert.equal(p.seen.length, 1, `the model got the pick of step ${p.step} in exactly one tool result (got ${p.seen.length})`);
    assert.equal(p.seen[0].kind, 'replied', `the pick came as the person's reply: ${p.seen[0].text.slice(0, 300)}`);
    said.push(`${chosen.map((c) => c.label).join('+')}: ${pickForms(p.seen[0].text, offer).join('+')}`);
  }
  return `the options' schema shown ${shown}; the picks seen as ${said.join('; ')}`;
}

/**
 * Where the model was shown `wait_for_user_input`'s `options` (items with a `label`) and
 * `multiSelect`: 'in its tools' (a schema object in a request), 'in a tool result' (a
 * deferred tool's schema handed over as text: Qwen's tool_search, or as a TypeScript
 * declaration: Vibe's search_tool_functions), 'in its tools (items flattened…)' (the
 * description names `label` where a client rebuilt the items without it), or null — a client
 * whose sanitiser dropped them would leave a real model unaware it can offer choices.
 */
function schemaShown(requests) {
  let found = null;
  const visit = (v) => {
    if (found || v == null) return;
    if (typeof v === 'string') {
      if (/"options"\s*:\s*\{[^]*"label"/.test(v) && /"multiSelect"\s*:\s*\{/.test(v)) found = 'in a tool result';
      // A TypeScript declaration (Vibe's search_tool_functions details).
      if (/\boptions\?:\s*Array<\{[^]*\blabel: string/.test(v) && /\bmultiSelect\?: boolean/.test(v)) found = 'in a tool result';
      return;
    }
    if (typeof v !== 'object') return;
    const p = v.properties;
    if (p?.options?.items?.properties?.label && p.multiSelect && p.token) { found = 'in its tools'; return; }
    // A client that flattens `items` to {"type":"object"} (OpenHands) still shows the
    // property's description, which spells an option's shape out.
    if (p?.options?.items && /"label"/.test(p.options.description ?? '') && p.multiSelect && p.token) {
      found = "in its tools (items flattened; the options' description gives their shape)";
      return;
    }
    for (const k of Object.keys(v)) visit(v[k]);
  };
  for (const q of requests) visit(q.body);
  return found;
}

/**
 * When the session left `waiting` after Ctrl-C, judged from the later of the signal and the
 * client's exit: until its process is gone a client may still hold its call (Factory Droid
 * takes 5.3 s to exit and closes its /mcp stream only then), and the hub must not end a
 * live client's wait; a client not gone within 10 s is judged from the signal. `late`: what
 * was measured when the session showed waiting past LEAVE_WITHIN_MS (null: in time).
 */
function leaving(signalled, exitedAt, leftAt) {
  const gone = Math.max(signalled, exitedAt ?? signalled);
  const afterMs = (at) => (at === null ? null : at - signalled);
  return {
    leftAfterMs: afterMs(leftAt),
    exitedAfterMs: afterMs(exitedAt),
    late: leftAt !== null && leftAt - gone <= LEAVE_WITHIN_MS ? null : `it ${leftAt === null ? 'still waited' : 'left'} ${afterMs(leftAt ?? Date.now())} ms after Ctrl-C, the client exited ${exitedAt === null ? 'not within 10 s' : `after ${afterMs(exitedAt)} ms`}; allowed: ${LEAVE_WITHIN_MS} ms after the later`,
  };
}

/** The check of `leaving`: the session left waiting in time, and what was measured. */
export function judgeLeaving(c) {
  const l = c.leaving;
  assert.equal(l.late, null, `the session still showed waiting past the grace (${GRACE_SEC} s +${GRACE_SLACK_MS} ms) after Ctrl-C or the client's exit: ${l.late}`);
  return `session left waiting ${l.leftAfterMs} ms after Ctrl-C, the client exited after ${l.exitedAfterMs} ms (status ${c.status})`;
}

async function ctrlCScenario(driver, transport) {
  return withClient(driver, 'ctrl-c', async ({ hub, client, brain, restart }, out) => {
    await waitFor('a wait call', () => brain.waitCalls().length >= 1 || stillRunning(client, 'a wait call'), 90_000);
    const token = out.token = agentToken(brain);
    await waitFor('the session to be waiting', async () => { stillRunning(client, 'the wait'); return waitingNow(hub, token); }, 30_000);
    await sleep(500);
    out.bridgesBefore = bridgesOf(hub.home);
    // Mid-wait, as a terminal's Ctrl-C: SIGINT to the whole foreground process group.
    client.ctrlC();
    const signalled = Date.now();
    const exited = client.exited.then(() => Date.now());
    const leftAt = await waitFor('the session to leave waiting', async () => (await hub.session(token)).status !== 'waiting' && Date.now(), LEAVE_WITHIN_MS + 15_000, 200).catch(() => null);
    const exitedAt = await within(exited, 10_000);
    out.leaving = leaving(signalled, exitedAt, leftAt);
    out.status = (await hub.session(token)).status;
    // The bridge cancels its waits and exits on the signal (its wait may also end by the
    // hub's grace; this is the part only the bridge can do).
    out.bridgesAfter = await waitFor('the bridge to exit', () => { const b = bridgesOf(hub.home); return b.length ? null : b; }, 3000).catch(() => bridgesOf(hub.home));
    out.marker = `QUEUED-${Math.random().toString(36).slice(2, 8)}`;
    out.later = await hub.reply(token, `${out.marker}: I was away. FINISH`);
    // The person's reply waits for the agent: the next turn (the client started again in
    // the same chat) gets it at its first wait.
    const again = await restart();
    await waitFor('the queued reply to reach the model', () => brain.results.some((r) => r.text?.includes(out.marker)) || stillRunning(again, 'the queued reply'), 90_000);
    out.restartToken = agentToken(brain);
    out.exit = await within(again.exited, 60_000);
  }, transport);
}

/**
 * Over /mcp with an agent key: the agent waits, the person revokes its key. The hub must
 * close that wait at once (the session leaves `waiting`), the model must be told of a
 * failure, and the client's further calls must make no wait.
 */
async function revokeScenario(driver) {
  return withClient(driver, 'revoke', async ({ hub, client, brain, key }, out) => {
    await waitFor('a wait call', () => brain.waitCalls().length >= 2 || stillRunning(client, 'a wait call'), 90_000);
    const token = out.token = agentToken(brain);
    await waitFor('the session to be waiting', async () => { stillRunning(client, 'the wait'); return waitingNow(hub, token); }, 30_000);
    out.resultsBefore = brain.results.length;
    out.revoke = await revokeKey(hub, key.name);
    const revoked = Date.now();
    out.leftAfterMs = null;
    try {
      await waitFor('the session to leave waiting', async () => (await hub.session(token)).status !== 'waiting', GRACE_SEC * 1000 + GRACE_SLACK_MS, 200);
      out.leftAfterMs = Date.now() - revoked;
    } catch { /* judged by the check */ }
    // The client goes on (the agent re-calls, or gives up): its calls make no new wait.
    out.exit = await within(client.exited, 45_000);
    out.statusAfter = (await hub.session(token)).status;
    out.resultsAfter = brain.results.slice(out.resultsBefore);
    out.later = await hub.reply(token, 'Are you still there?');
  }, 'remote');
}

/**
 * Each client's scenarios over `transport` ('stdio': the bridge as the client's server;
 * 'remote': the hub's /mcp), started at once and shared by its checks. Remote only, each
 * its own client run beside them when asked for: `revoke`, and `header` (the reply
 * scenario with each wait bounded by the entry's Holdline-Max-Wait-Sec instead of the
 * call's timeoutSec).
 */
const runs = new Map();
export function scenarios(driver, transport = 'stdio', { revoke = false, header = false } = {}) {
  const id = `${transport}:${driver.name}`;
  if (!runs.has(id)) {
    const reply = replyScenario(driver, transport);
    const ctrlC = reply.catch(() => {}).then(() => ctrlCScenario(driver, transport));
    const revoked = revoke ? revokeScenario(driver) : null;
    const byHeader = header ? replyScenario(driver, 'remote-header') : null;
    runs.set(id, { reply, ctrlC, revoke: revoked, header: byHeader });
  }
  return runs.get(id);
}

export const holdlineResults = (brain, bare) => brain.results.filter((r) => r.bare === bare);

