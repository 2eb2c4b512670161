// abandoned.test.mjs — "exactly once to the model" when the client drops a call without a
// cancel: Cline CLI times a call out (its `timeout`) and sends no notifications/cancelled,
// so the bridge still holds that wait and writes the person's reply to a request nobody
// reads. The agent's next call passes the `resume` it last saw; the bridge must see that it
// never got the reply and hand it over again, once. Real Cline CLI, real hub, fake model.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { bareName, findResume } from './fake-model/brain.mjs';
import { startFakeModel } from './fake-model/server.mjs';
import { MCP_BIN, RUNS, installPackage, sleep, spawnClient, startHub, waitFor } from './harness.mjs';
import * as cline from './clients/cline.mjs';

/** Cline's own per-call limit here: the second wait outlives it and is dropped. */
const CLINE_TIMEOUT_SEC = 5;
const selected = (process.env.HOLDLINE_CLIENTS || '').split(',').map((s) => s.trim()).filter(Boolean);

/**
 * How the agent calls: the first wait asks the bridge for 2 s (it ends "no reply yet" and
 * hands over a resume), the later ones for 60 s (Cline drops them at 5 s). After a tool
 * error, whose text carries no resume, the agent passes the newest resume it was given.
 */
const brainHooks = {
  wrap(conv, exposed, args) {
    if (bareName(exposed) !== 'wait_for_user_input') return { name: exposed, args };
    const waits = conv.messages.flatMap((m) => m.toolCalls ?? []).filter((c) => c.name === exposed).length;
    const out = { ...args, timeoutSec: waits === 0 ? 2 : 60 };
    if (!out.resume) {
      for (const m of [...conv.messages].reverse()) {
        const r = m.role === 'tool' && m.bare ? findResume(m.text) : null;
        if (r) { out.resume = r; break; }
      }
    }
    return { name: exposed, args: out };
  },
};

test(`cline ${cline.version}: a reply written to a call Cline dropped reaches the model once`, { skip: selected.length > 0 && !selected.includes('cline') }, async (t) => {
  const dir = join(RUNS, new Date().toISOString().replace(/[:.]/g, '-'), 'cline-abandoned');
  rmSync(dir, { recursive: true, force: true });
  const home = join(dir, 'home');
  const project = join(dir, 'project');
  mkdirSync(project, { recursive: true });
  const hub = await startHub(join(home, '.holdline'), { HOLDLINE_WAIT_GRACE_SEC: '3' });
  const model = await startFakeModel({ dir, brain: { title: 'cline abandoned call', hooks: brainHooks } });
  const brain = model.brain;
  // The model's answer to the timed-out call is held until the reply has gone to the bridge.
  let held = false;
  let release;
  const released = new Promise((r) => { release = r; });
  brain.hold = async (conv) => {
    const last = conv.messages.at(-1);
    if (last?.role === 'tool' && /timed out after/i.test(last.text) && !held) {
      held = true;
      await released;
    }
  };
  let client;
  try {
    const installDir = await installPackage(cline.pkg, cline.version);
    const spec = await cline.prepare({
      home, project, dir, installDir, hubUrl: hub.base, modelUrl: model.url, mcpBin: MCP_BIN,
      prompt: 'Work with the person through holdline: call init_conversation, then wait_for_user_input.',
      waitSec: 60, clientTimeoutSec: CLINE_TIMEOUT_SEC,
      bridgeEnv: { HOLDLINE_HUB: hub.base, HOLDLINE_HOME: hub.home, HOLDLINE_NO_AUTOSTART: '1', HOLDLINE_LOG: 'holdline_mcp=debug' },
    });
    client = spawnClient({ ...spec, dir });
    const running = (what) => { if (!client.running()) throw new Error(`cline exited (${client.child.exitCode}) while waiting for ${what}`); return false; };
    await waitFor('Cline to drop a wait (its timeout) and the model to be asked again', () => held || running('a dropped wait'), 90_000);
    const token = brain.turns.map((x) => x.action?.args?.token).filter(Boolean).at(-1);
    assert.ok(token, 'the agent has a token');
    // No cancel came: the bridge still holds the dropped call's wait at the hub.
    assert.equal((await hub.session(token)).status, 'waiting', 'the dropped call still holds the wait (Cline sent no cancel)');
    const marker = `MANGO-${Math.random().toString(36).slice(2, 8)}`;
    const sent = await hub.reply(token, `${marker}: please go on.`);
    assert.equal(sent.queued, false, 'the reply went to the waiting (dropped) call');
    await waitFor('the bridge to take the reply', async () => (await hub.session(token)).status !== 'waiting', 15_000);
    release();
    await waitFor('the reply to reach the model', () => brain.results.some((r) => r.text?.includes(marker)) || running('the reply to reach the model'), 30_000);
    await sleep(1000);
    const seen = brain.results.filter((r) => r.text?.includes(marker));
    t.diagnostic(`wait calls ${brain.waitCalls().length}; the reply reached the model in ${seen.length} result(s)`);
    assert.equal(seen.length, 1, 'the model got the reply exactly once');
    const history = await hub.session(token);
    assert.equal(history.messages.filter((m) => m.role === 'user' && m.content.includes(marker)).length, 1, 'the reply is stored once');
  } catch (e) {
    e.message += `\n  (run folder: ${dir})\n  client log tail:\n${(client?.log() ?? '').slice(-2000)}`;
    throw e;
  } finally {
    release?.();
    if (client) await client.stop();
    await model.close();
    await hub.stop();
  }
});
