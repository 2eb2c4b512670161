// run.test.mjs — every real client × every check of issue 15, against a real hub and the
// fake model. Clients run in parallel (each its own HOME, hub and fake-model port); a
// client's two scenarios run one after the other. Drivers are the modules in clients/;
// HOLDLINE_CLIENTS=claude-code,codex picks some.
//
// Scenario "reply": the agent starts a session and waits; the bridge ends each wait after
// HOLDLINE_MAX_WAIT_SEC, the agent re-calls; after ROUNDS wait calls the person replies with
// text and an image; the agent waits again; "FINISH" ends its turn.
// Scenario "ctrl-c": the agent waits; Ctrl-C goes to the client's process group; the hub
// must show the session not waiting within its grace period and queue a later reply.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { startFakeModel } from './fake-model/server.mjs';
import { MCP_BIN, RUNS, bridgesOf, installPackage, pngBase64, sleep, spawnClient, startHub, waitFor } from './harness.mjs';

const here = dirname(fileURLToPath(import.meta.url));
/** Wait calls before the person answers: Gemini's and Qwen's detectors stop the 5th identical one. */
const ROUNDS = Number(process.env.HOLDLINE_CLIENTS_ROUNDS || 6);
/** The bridge ends each wait after this long (HOLDLINE_MAX_WAIT_SEC). */
const WAIT_SEC = Number(process.env.HOLDLINE_CLIENTS_WAIT_SEC || 4);
/** The client's own per-call limit where it has one: above the bridge's, as install sets it. */
const CLIENT_TIMEOUT_SEC = 30;
/** The hub's grace for a wait nobody polls (HOLDLINE_WAIT_GRACE_SEC). */
const GRACE_SEC = 3;
/** How long after the grace the hub may take to notice (one sweep, a loaded machine). */
const GRACE_SLACK_MS = 3000;
const GUIDANCE = /call wait_for_user_input/;
const PROMPT = 'Work on this repository with the person through holdline: call init_conversation, then report with wait_for_user_input and follow the replies.';

const selected = (process.env.HOLDLINE_CLIENTS || '').split(',').map((s) => s.trim()).filter(Boolean);
const driverFiles = readdirSync(join(here, 'clients')).filter((f) => f.endsWith('.mjs')).sort();
const drivers = [];
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
async function withClient(driver, scenario, fn) {
  const dir = join(RUNS, runId, `${driver.name}-${scenario}`);
  rmSync(dir, { recursive: true, force: true });
  const home = join(dir, 'home');
  const project = join(dir, 'project');
  mkdirSync(project, { recursive: true });
  const started = Date.now();
  const hub = await startHub(join(home, '.holdline'), { HOLDLINE_WAIT_GRACE_SEC: String(GRACE_SEC) });
  const model = await startFakeModel({ dir, brain: { title: `${driver.name} ${scenario}`, hooks: driver.brainHooks } });
  const out = { dir, brain: model.brain, requests: model.requests };
  let client;
  let earlier = [];
  try {
    const installDir = await installPackage(driver.pkg, driver.version);
    const spec = await driver.prepare({
      home, project, dir, installDir,
      hubUrl: hub.base, modelUrl: model.url, mcpBin: MCP_BIN, prompt: PROMPT,
      waitSec: WAIT_SEC, clientTimeoutSec: CLIENT_TIMEOUT_SEC,
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
    await fn({ dir, hub, model, client, brain: model.brain, restart }, out);
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
function needs(r, what) {
  if (r.error) throw new Error(`${what}: the run failed: ${r.error.message}`);
  return r;
}

/** The token the agent is using, read from the calls it made. */
function agentToken(brain) {
  for (const t of [...brain.turns].reverse()) {
    // Qwen's deferred tools: `tool_call {name, arguments: {token…}}`.
    const token = t.action?.args?.token ?? t.action?.args?.arguments?.token;
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

async function replyScenario(driver) {
  return withClient(driver, 'reply', async ({ hub, client, brain }, out) => {
    const limit = (ROUNDS + 2) * (WAIT_SEC + 10) * 1000;
    await waitFor(`${ROUNDS} wait calls`, () => brain.waitCalls().length >= ROUNDS || stillRunning(client, `${ROUNDS} wait calls`), limit);
    const token = out.token = agentToken(brain);
    await waitFor('the session to be waiting', async () => { stillRunning(client, 'the wait'); return waitingNow(hub, token); }, 30_000);
    out.callsBeforeReply = brain.waitCalls().map((t) => t.action.args);
    const marker = out.marker = `PINEAPPLE-${Math.random().toString(36).slice(2, 8)}`;
    out.first = await hub.reply(token, `${marker}: looks good, please go on.`, [{ mimeType: 'image/png', data: pngBase64() }]);
    await waitFor('the reply to reach the model', () => brain.results.some((r) => r.text?.includes(marker)) || stillRunning(client, 'the reply to reach the model'), 60_000);
    // The agent reports its next step and waits again; the person ends the conversation.
    await waitFor('the next wait', async () => { stillRunning(client, 'the next wait'); return waitingNow(hub, token); }, 60_000);
    out.finish = await hub.reply(token, 'FINISH: that is all, thank you.');
    out.exit = await Promise.race([client.exited, sleep(60_000).then(() => null)]);
    out.history = await hub.session(token);
  });
}

async function ctrlCScenario(driver) {
  return withClient(driver, 'ctrl-c', async ({ hub, client, brain, restart }, out) => {
    await waitFor('a wait call', () => brain.waitCalls().length >= 1 || stillRunning(client, 'a wait call'), 90_000);
    const token = out.token = agentToken(brain);
    await waitFor('the session to be waiting', async () => { stillRunning(client, 'the wait'); return waitingNow(hub, token); }, 30_000);
    await sleep(500);
    out.bridgesBefore = bridgesOf(hub.home);
    // Mid-wait, as a terminal's Ctrl-C: SIGINT to the whole foreground process group.
    client.ctrlC();
    const signalled = Date.now();
    out.leftAfterMs = null;
    try {
      await waitFor('the session to leave waiting', async () => (await hub.session(token)).status !== 'waiting', GRACE_SEC * 1000 + GRACE_SLACK_MS, 200);
      out.leftAfterMs = Date.now() - signalled;
    } catch { /* judged by the check */ }
    out.status = (await hub.session(token)).status;
    // The bridge cancels its waits and exits on the signal (its wait may also end by the
    // hub's grace; this is the part only the bridge can do).
    out.bridgesAfter = await waitFor('the bridge to exit', () => { const b = bridgesOf(hub.home); return b.length ? null : b; }, 3000).catch(() => bridgesOf(hub.home));
    out.marker = `QUEUED-${Math.random().toString(36).slice(2, 8)}`;
    out.later = await hub.reply(token, `${out.marker}: I was away. FINISH`);
    await Promise.race([client.exited, sleep(10_000)]);
    // The person's reply waits for the agent: the next turn (the client started again in
    // the same chat) gets it at its first wait.
    const again = await restart();
    await waitFor('the queued reply to reach the model', () => brain.results.some((r) => r.text?.includes(out.marker)) || stillRunning(again, 'the queued reply'), 90_000);
    out.restartToken = agentToken(brain);
    out.exit = await Promise.race([again.exited, sleep(60_000).then(() => null)]);
  });
}

/** Each client's scenarios, started at once and shared by its checks. */
const runs = new Map();
function scenarios(driver) {
  if (!runs.has(driver.name)) {
    const reply = replyScenario(driver);
    const ctrlC = reply.catch(() => {}).then(() => ctrlCScenario(driver));
    runs.set(driver.name, { reply, ctrlC });
  }
  return runs.get(driver.name);
}

const holdlineResults = (brain, bare) => brain.results.filter((r) => r.bare === bare);

describe('real clients', { concurrency: true }, () => {
  for (const driver of drivers) {
    describe(`${driver.name} ${driver.version}`, { concurrency: true }, () => {
      const s = scenarios(driver);

      it('1. delivers the reply once: stored once, given to the model once', async () => {
        const r = needs(await s.reply, 'the reply');
        const msgs = r.history.messages;
        const reports = msgs.filter((m) => m.role === 'assistant' && m.content.startsWith('Step 1 done'));
        assert.equal(reports.length, 1, `the agent's report is stored once (history: ${JSON.stringify(msgs.map((m) => [m.role, m.content.slice(0, 40)]))})`);
        assert.equal(msgs.filter((m) => m.role === 'user' && m.content.includes(r.marker)).length, 1, 'the reply is stored once');
        const seen = r.brain.results.filter((x) => x.text?.includes(r.marker));
        assert.equal(seen.length, 1, `the model got the reply in exactly one tool result (got ${seen.length})`);
        assert.ok(r.exit, 'the client ended its turn after FINISH');
        assert.equal(r.exit.code, 0, `the client exited 0 (got ${JSON.stringify(r.exit)})`);
      });

      it(`2. waits across ≥ ${ROUNDS} re-calls, none identical, no error to the model, no loop stop`, async (t) => {
        const r = await s.reply;
        const brain = r.brain;
        const waits = holdlineResults(brain, 'wait_for_user_input');
        const errors = brain.results.filter((x) => x.kind === 'error');
        assert.deepEqual(errors.map((x) => x.text), [], 'no tool error reached the model');
        // Gemini, Qwen Code ("Loop detection halted the run"), Cline CLI ("… consecutive identical calls …").
        const LOOP = /loop detected|Potential loop|Loop detection halted|consecutive identical calls/i;
        assert.doesNotMatch(r.log ?? '', LOOP, 'no loop detector stopped the client');
        const warned = r.requests.find((q) => LOOP.test(JSON.stringify(q.body)));
        assert.ok(!warned, `no loop detector spoke to the model: ${JSON.stringify(warned?.body ?? '').match(/.{0,80}loop detected.{0,200}/i)?.[0]}`);
        const calls = brain.waitCalls().map((t) => t.action.args);
        for (let i = 1; i < Math.min(calls.length, ROUNDS); i++) {
          assert.notDeepEqual(calls[i], calls[i - 1], `wait call ${i + 1} differs from call ${i} (resume)`);
        }
        needs(r, 're-calls');
        assert.ok(r.callsBeforeReply.length >= ROUNDS, `${r.callsBeforeReply.length} wait calls before the reply`);
        t.diagnostic(`${r.callsBeforeReply.length} wait calls before the reply, ${brain.waitCalls().length} in all; ${r.requests.length} model requests (${brain.turns.filter((x) => x.side).length} side requests)`);
        assert.ok(waits.filter((w) => w.kind === 'no_reply_yet').length >= ROUNDS - 1, 'each early wait ended with "no reply yet"');
      });

      it('3. Ctrl-C mid-wait: the session leaves waiting within the grace period; a later reply is queued and reaches the next turn', async (t) => {
        const c = needs(await s.ctrlC, 'Ctrl-C');
        assert.ok(c.leftAfterMs !== null, `the session still ${c.status} ${GRACE_SEC} s (+${GRACE_SLACK_MS} ms) after Ctrl-C`);
        t.diagnostic(`session left waiting ${c.leftAfterMs} ms after Ctrl-C (status ${c.status}); bridges before ${c.bridgesBefore?.length}, after ${c.bridgesAfter?.length}`);
        assert.ok(c.bridgesBefore.length >= 1, 'the bridge of this run was found while it waited');
        assert.deepEqual(c.bridgesAfter, [], 'no holdline-mcp of this run is left 3 s after Ctrl-C');
        assert.equal(c.restartToken, c.token, 'the restarted agent found the same session');
        const got = c.brain.results.filter((x) => x.text?.includes(c.marker));
        assert.equal(got.length, 1, `the queued reply reached the model once (got ${got.length})`);
        assert.equal(c.later.queued, true, `a reply after Ctrl-C answers queued:true (got ${JSON.stringify(c.later)})`);
      });

      it('4. an image in the reply reaches the model', async (t) => {
        const r = needs(await s.reply, 'the image reply');
        const brain = r.brain;
        const got = brain.results.find((x) => x.text?.includes(r.marker));
        assert.ok(got, 'the reply reached the model');
        if (driver.expects?.images === false) {
          t.diagnostic(`${driver.name} cannot pass images to the model: ${driver.expects.why}`);
          assert.equal(got.images, 0);
          return;
        }
        assert.ok(got.images >= 1, `the tool result with the reply carries an image part (got ${got.images}; text: ${got.text.slice(0, 300)})`);
      });

      it('5. the guidance sentence reaches the model', async () => {
        const r = await s.reply;
        const brain = r.brain;
        const waits = holdlineResults(brain, 'wait_for_user_input');
        const noReply = waits.filter((w) => w.kind === 'no_reply_yet');
        assert.ok(noReply.length >= 1, 'some wait ended with "no reply yet"');
        for (const w of noReply) assert.match(w.text, GUIDANCE, `"no reply yet" as the model got it says to call again: ${w.text.slice(0, 300)}`);
        needs(r, 'the reminder after a reply');
        const reply = brain.results.find((x) => x.text?.includes(r.marker));
        assert.match(reply.text, GUIDANCE, `the reply as the model got it carries the reminder: ${reply.text.slice(0, 300)}`);
      });
    });
  }
});
