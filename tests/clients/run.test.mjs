// run.test.mjs — every real client × every numbered check below, against a real hub and the
// fake model. Clients run in parallel (each its own HOME, hub and fake-model port); a
// client's two scenarios run one after the other. Drivers are the modules in clients/;
// HOLDLINE_CLIENTS=claude-code,codex picks some.
//
// The scenarios and the run machinery are in scenarios.mjs (shared with remote.test.mjs).

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { ATTACH, GUIDANCE, OFFERS, ROUNDS, drivers, holdlineResults, judgeLeaving, judgePicks, knownOpts, needs, scenarios } from './scenarios.mjs';
import { pngBase64 } from './harness.mjs';

describe('real clients', { concurrency: true }, () => {
  for (const driver of drivers) {
    describe(`${driver.name} ${driver.version}`, { concurrency: true }, () => {
      const s = scenarios(driver);

      it('1. delivers the reply once: stored once, given to the model once', knownOpts(driver, '1'), async () => {
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

      it(`2. waits across ≥ ${ROUNDS} re-calls, none identical, no error to the model, no loop stop`, knownOpts(driver, '2'), async (t) => {
        const r = await s.reply;
        const brain = r.brain;
        const waits = holdlineResults(brain, 'wait_for_user_input');
        const errors = brain.results.filter((x) => x.kind === 'error');
        assert.deepEqual(errors.map((x) => x.text), [], 'no tool error reached the model');
        // Gemini, Qwen Code ("Loop detection halted the run"), Cline CLI ("… consecutive identical calls …"),
        // Kimi Code ("… ended by the repeat breaker …").
        const LOOP = /loop detected|Potential loop|Loop detection halted|consecutive identical calls|repeat breaker/i;
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

      it('3. Ctrl-C mid-wait: the session leaves waiting within the grace period after the signal or the client exits; a later reply is queued and reaches the next turn', knownOpts(driver, '3'), async (t) => {
        const c = needs(await s.ctrlC, 'Ctrl-C');
        t.diagnostic(`${judgeLeaving(c)}; bridges before ${c.bridgesBefore?.length}, after ${c.bridgesAfter?.length}`);
        assert.ok(c.bridgesBefore.length >= 1, 'the bridge of this run was found while it waited');
        assert.deepEqual(c.bridgesAfter, [], 'no holdline-mcp of this run is left 3 s after Ctrl-C');
        assert.equal(c.restartToken, c.token, 'the restarted agent found the same session');
        const got = c.brain.results.filter((x) => x.text?.includes(c.marker));
        assert.equal(got.length, 1, `the queued reply reached the model once (got ${got.length})`);
        assert.equal(c.later.queued, true, `a reply after Ctrl-C answers queued:true (got ${JSON.stringify(c.later)})`);
      });

      it('4. an image in the reply reaches the model', knownOpts(driver, '4'), async (t) => {
        const r = needs(await s.reply, 'the image reply');
        const brain = r.brain;
        const got = brain.results.find((x) => x.text?.includes(r.marker));
        assert.ok(got, 'the reply reached the model');
        if (driver.expects?.images === 'file') {
          t.diagnostic(`${driver.name} cannot pass images to the model: ${driver.expects.why}`);
          assert.equal(got.images, 0, 'no image part');
          assert.doesNotMatch(got.text, /iVBORw0KGgo/, 'no base64 image data in what the model read');
          const saved = got.text.match(/The person attached 1 image: \.holdline\/images\/\S+\.png \(absolute path ([^)]+\.png)\)/);
          assert.ok(saved, `the model read where the image was saved: ${got.text.slice(0, 400)}`);
          assert.deepEqual(readFileSync(saved[1]), Buffer.from(pngBase64(), 'base64'), `${saved[1]} holds the image the person sent`);
          return;
        }
        assert.ok(got.images >= 1, `the tool result with the reply carries an image part (got ${got.images}; text: ${got.text.slice(0, 300)})`);
      });

      it('5. the guidance sentence reaches the model', knownOpts(driver, '5'), async () => {
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

      it('6. a pick among the agent\'s options reaches the model (one, then several)', knownOpts(driver, '6'), async (t) => {
        const r = needs(await s.reply, 'the picks');
        t.diagnostic(judgePicks(r));
      });

      it('7. a file the agent attaches from its workspace reaches the person, once, bytes intact', knownOpts(driver, '7'), async () => {
        const r = needs(await s.reply, 'the attachment');
        // Wherever the client puts the tool's arguments (Qwen's `tool_call {arguments}`, Vibe's program).
        const asked = r.brain.waitCalls().filter((t) => JSON.stringify(t.action.args ?? {}).includes('attachments'));
        assert.ok(asked.length >= 1, 'the client passed `attachments` to wait_for_user_input');
        const errors = r.brain.results.filter((x) => x.kind === 'error').map((x) => x.text);
        assert.deepEqual(errors, [], 'no tool error reached the model');
        assert.equal(r.attached.length, 1, `one file on the agent's messages (got ${JSON.stringify(r.attached.map((a) => [a.name, a.message.slice(0, 40)]))})`);
        const [file] = r.attached;
        assert.ok(file.message.includes(OFFERS[2].question), `on the question that attached it: ${file.message}`);
        assert.equal(file.name, ATTACH[2][0]);
        assert.equal(file.mimeType, 'image/png');
        assert.equal(file.status, 200);
        assert.deepEqual(file.bytes, Buffer.from(pngBase64(), 'base64'), 'the person gets the bytes of the file in the workspace');
      });
    });
  }
});
